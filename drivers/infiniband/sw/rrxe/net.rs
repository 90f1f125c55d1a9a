// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 receive sockets: UDP port 4791, IPv4 and IPv6, in each network namespace that
//! has an rrxe device, so devices inside namespaces work there.
//!
//! A namespace's sockets open with its first device and close with its last one, or
//! when the namespace exits (kernel sockets hold no reference on their namespace, so they
//! must not outlive it), whichever comes first.

use crate::{
    device::RrxeDev,
    ext::{
        net::{
            namespace::{self, Net, PernetData, PernetId},
            skb::SkBuff,
            udp_tunnel::{EncapRecv, Family, UdpTunnelSocket},
        },
        rdma::device::Registry,
    },
    recv,
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// The IANA port of RoCEv2.
const ROCE_V2_UDP_DPORT: u16 = 4791;

/// Receives RoCEv2 datagrams (softirq) for the module's devices.
pub(crate) struct Rx {
    /// The module's devices.
    pub(crate) registry: Arc<Registry<RrxeDev>>,
}

impl EncapRecv for Rx {
    fn recv(&self, skb: SkBuff) {
        let Some(ndev) = skb.dev() else { return };
        let Some(dev) = self.registry.get_by_netdev(ndev) else {
            return;
        };
        recv::process(&dev, skb, recv::Origin::Wire);
    }
}

/// The sockets of one namespace.
struct Sockets {
    _v4: UdpTunnelSocket<Rx>,
    /// Absent when the namespace has no IPv6.
    _v6: Option<UdpTunnelSocket<Rx>>,
}

/// What the devices of one namespace share.
struct NetInner {
    /// Devices attached.
    devices: usize,
    /// Open while `devices > 0`, until the namespace exits.
    sockets: Option<Sockets>,
    /// The namespace has exited: nothing may open sockets any more.
    gone: bool,
}

/// The per-namespace state, shared between the namespace and its devices.
#[pin_data]
struct NetShared {
    #[pin]
    inner: Mutex<NetInner>,
}

/// The `net_generic` slot of a namespace.
pub(crate) struct NetState {
    shared: Arc<NetShared>,
}

static NET_ID: PernetId = PernetId::new();

impl PernetData for NetState {
    fn id() -> &'static PernetId {
        &NET_ID
    }

    fn init() -> Result<Self> {
        let shared = Arc::pin_init(
            pin_init!(NetShared {
                inner <- new_mutex!(
                    NetInner {
                        devices: 0,
                        sockets: None,
                        gone: false,
                    },
                    "rrxe:net"
                ),
            }),
            GFP_KERNEL,
        )?;
        Ok(NetState { shared })
    }
}

impl Drop for NetState {
    fn drop(&mut self) {
        // The namespace exits: close the sockets now, whoever still holds `shared`.
        let mut inner = self.shared.inner.lock();
        inner.gone = true;
        inner.sockets = None;
    }
}

impl NetState {
    /// Attaches a device of namespace `net`, opening the sockets for the first one.
    pub(crate) fn attach(&self, net: &Net, rx: &Arc<Rx>) -> Result<NetAttachment> {
        let mut inner = self.shared.inner.lock();
        if inner.gone {
            return Err(ENODEV);
        }
        if inner.sockets.is_none() {
            // Without IPv4 there is no RoCEv2 device.
            let v4 = UdpTunnelSocket::new(net, Family::V4, ROCE_V2_UDP_DPORT, rx.clone())?
                .ok_or(EINVAL)?;
            let v6 = UdpTunnelSocket::new(net, Family::V6, ROCE_V2_UDP_DPORT, rx.clone())?;
            inner.sockets = Some(Sockets { _v4: v4, _v6: v6 });
        }
        inner.devices += 1;
        Ok(NetAttachment {
            shared: self.shared.clone(),
        })
    }
}

/// A device's hold on its namespace's sockets; the last one closes them.
pub(crate) struct NetAttachment {
    shared: Arc<NetShared>,
}

impl Drop for NetAttachment {
    fn drop(&mut self) {
        let mut inner = self.shared.inner.lock();
        inner.devices = inner.devices.saturating_sub(1);
        if inner.devices == 0 {
            inner.sockets = None;
        }
    }
}

/// The module's per-namespace registration.
pub(crate) type Nets = namespace::Registration<NetState>;
