// SPDX-License-Identifier: GPL-2.0

//! The rrxe device's data: its object tables, counters, workqueue and port state (the
//! verbs that reach it are in [`crate::verbs`]).

use crate::{
    ah::AhTable,
    counters::{Counter, Counters},
    ext::{
        crc::Crc32,
        net::device::NetDevice,
        rdma::device::{Device, PortEvent},
        workqueue::OwnedQueue,
    },
    mcast::{Groups, RxMembers},
    mr::{KeyGen, MrTable},
    mw::MwTable,
    net::NetAttachment,
    qp::QpTable,
    srq::SrqTable,
};
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// The port number of the one port.
pub(crate) const PORT: u32 = 1;

/// Driver data of an rrxe device.
pub(crate) struct RrxeDev {
    /// EUI-64 of the netdev's MAC: node GUID and system image GUID.
    guid: [u8; 8],
    /// Whether the port was last reported active (to send each transition once).
    port_active: AtomicBool,
    counters: Counters,
    /// The QPs by number.
    qps: Arc<QpTable>,
    /// The AHs by number.
    ahs: Arc<AhTable>,
    /// The SRQs by number.
    srqs: Arc<SrqTable>,
    /// The MRs by index, and their key parts.
    mrs: Arc<MrTable>,
    /// The MWs by index.
    mws: Arc<MwTable>,
    keys: KeyGen,
    /// Multicast groups.
    mcast: Pin<KBox<Mutex<Groups>>>,
    /// Their members, as the receive path finds them.
    mcast_rx: Pin<KBox<RxMembers>>,
    /// Keeps the namespace's RoCEv2 sockets open.
    _net: NetAttachment,
    /// Runs the QPs' work.
    wq: Arc<OwnedQueue>,
    /// Computes the ICRCs (the crypto API's "crc32", as rxe does).
    crc: Crc32,
}

impl RrxeDev {
    /// Data for a new device on `ndev`, attached to its namespace's sockets.
    pub(crate) fn new(ndev: &NetDevice, net: NetAttachment, wq: Arc<OwnedQueue>) -> Result<Self> {
        Ok(Self {
            guid: ndev.eui64(),
            port_active: AtomicBool::new(ndev.is_running_with_carrier()),
            counters: Counters::new(),
            qps: QpTable::new()?,
            ahs: AhTable::new()?,
            srqs: SrqTable::new()?,
            mrs: MrTable::new()?,
            mws: MwTable::new()?,
            keys: KeyGen::new(),
            mcast: KBox::pin_init(new_mutex!(Groups::new(), "rrxe:mcast"), GFP_KERNEL)?,
            mcast_rx: KBox::pin_init(
                crate::new_spinlock_bh!(KVVec::new(), "rrxe:mcast_rx"),
                GFP_KERNEL,
            )?,
            _net: net,
            wq,
            crc: Crc32::new().inspect_err(|e| {
                pr_err!(
                    "{}: cannot use the crypto API's \"crc32\" for the ICRC ({:?})\n",
                    ndev.name(),
                    e
                );
            })?,
        })
    }

    /// The workqueue of the QPs' work items.
    pub(crate) fn wq(&self) -> &Arc<OwnedQueue> {
        &self.wq
    }

    /// The CRC-32 of the ICRCs.
    pub(crate) fn crc(&self) -> &Crc32 {
        &self.crc
    }

    /// Counts an event.
    pub(crate) fn count(&self, c: Counter) {
        self.counters.inc(c);
    }

    /// Counts `n` events (the packets of a loopback burst).
    pub(crate) fn count_n(&self, c: Counter, n: u32) {
        self.counters.add(c, u64::from(n));
    }

    /// The QPs by number.
    pub(crate) fn qps(&self) -> &Arc<QpTable> {
        &self.qps
    }

    /// The AHs by number.
    pub(crate) fn ahs(&self) -> &Arc<AhTable> {
        &self.ahs
    }

    /// The SRQs by number.
    pub(crate) fn srqs(&self) -> &Arc<SrqTable> {
        &self.srqs
    }

    /// The MRs by index.
    pub(crate) fn mrs(&self) -> &Arc<MrTable> {
        &self.mrs
    }

    /// The multicast groups.
    pub(crate) fn mcast(&self) -> &Mutex<Groups> {
        &self.mcast
    }

    /// The multicast members the receive path looks up.
    pub(crate) fn mcast_rx(&self) -> &RxMembers {
        &self.mcast_rx
    }

    /// The MWs by index.
    pub(crate) fn mws(&self) -> &Arc<MwTable> {
        &self.mws
    }

    /// The generator of MR and MW key parts.
    pub(crate) fn keys(&self) -> &KeyGen {
        &self.keys
    }

    /// The node GUID.
    pub(crate) fn guid(&self) -> [u8; 8] {
        self.guid
    }

    /// The device's counters.
    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Follows the netdev's state: reports a port transition to the device's consumers.
    pub(crate) fn update_port_state(dev: &Device<Self>, ndev: &NetDevice) {
        let active = ndev.is_running_with_carrier();
        if dev.data().port_active.swap(active, Ordering::AcqRel) == active {
            return;
        }
        if active {
            dev.dispatch_port_event(PORT, PortEvent::Active);
        } else {
            dev.data().counters.inc(Counter::LinkDowned);
            dev.dispatch_port_event(PORT, PortEvent::Error);
        }
    }
}
