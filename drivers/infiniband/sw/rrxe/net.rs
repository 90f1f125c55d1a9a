// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 receive sockets: UDP port 4791, IPv4 and IPv6, one pair per network namespace
//! that has an rrxe device, so devices inside namespaces work there.

use crate::ext::net::{
    namespace::{self, Net, PernetData, PernetId},
    skb::SkBuff,
    udp_tunnel::{EncapRecv, Family, UdpTunnelSocket},
};
use kernel::{new_mutex, prelude::*, sync::Mutex};

/// Without IPv4 there is no RoCEv2 device.
const EAFNOSUPPORT_V4: Error = EINVAL;

/// The IANA port of RoCEv2.
const ROCE_V2_UDP_DPORT: u16 = 4791;

/// Receives RoCEv2 datagrams (softirq).
pub(crate) struct Rx;

impl EncapRecv for Rx {
    fn recv(skb: SkBuff) {
        // No data path yet: every datagram is dropped.
        drop(skb);
    }
}

/// The sockets of one namespace.
struct Sockets {
    _v4: UdpTunnelSocket<Rx>,
    /// Absent when the namespace has no IPv6.
    _v6: Option<UdpTunnelSocket<Rx>>,
}

/// Per-namespace state: the sockets, opened with the namespace's first device and closed
/// when the namespace exits or the module unloads.
#[pin_data]
pub(crate) struct NetState {
    #[pin]
    sockets: Mutex<Option<Sockets>>,
}

static NET_ID: PernetId = PernetId::new();

impl PernetData for NetState {
    fn id() -> &'static PernetId {
        &NET_ID
    }

    fn init() -> impl PinInit<Self, Error> {
        try_pin_init!(NetState {
            sockets <- new_mutex!(None, "rrxe:net_sockets"),
        })
    }
}

impl NetState {
    /// Opens the namespace's sockets unless they are open.
    pub(crate) fn open_sockets(&self, net: &Net) -> Result {
        let mut sockets = self.sockets.lock();
        if sockets.is_none() {
            let v4 =
                UdpTunnelSocket::new(net, Family::V4, ROCE_V2_UDP_DPORT)?.ok_or(EAFNOSUPPORT_V4)?;
            let v6 = UdpTunnelSocket::new(net, Family::V6, ROCE_V2_UDP_DPORT)?;
            *sockets = Some(Sockets { _v4: v4, _v6: v6 });
        }
        Ok(())
    }
}

/// The module's per-namespace registration.
pub(crate) type Nets = namespace::Registration<NetState>;
