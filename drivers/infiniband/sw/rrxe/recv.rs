// SPDX-License-Identifier: GPL-2.0

//! Receive: RoCEv2 datagrams from the UDP encapsulation hook (softirq) or from the loopback
//! shortcut. Each is checked (headers, ICRC), matched to its QP (or to every QP of a
//! multicast group) and queued there; the QP's engine processes it (its work item, or for
//! a loopback packet maybe the sender's caller: [`Woken`]), after `admit`'s checks of its
//! source, P_Key and Q_Key. Nothing here trusts the packet: whatever does not check out is
//! dropped and counted.

use crate::{
    counters::Counter,
    device::RrxeDev,
    ext::{net::skb::SkBuff, rdma::device::Device},
    icrc::KernelCrc,
    proto::{
        bth::MULTICAST_QPN,
        icrc::{self, NetHeaders, IPV4_HDR_LEN, IPV6_HDR_LEN},
        packet::Packet,
    },
    task::Woken,
};
/// Where a datagram comes from.
#[derive(Clone, Copy)]
pub(crate) enum Origin<'a> {
    /// The network: its ICRC is checked, its QP's work item is scheduled.
    Wire,
    /// This device's own transmit path, during a pass: it has no ICRC to check, and its QP
    /// joins the sending pass's [`Woken`].
    Loopback(&'a Woken),
}

/// The QPN of a valid packet and whether it is a request.
fn classify(skb: &SkBuff, origin: Origin<'_>) -> Option<(u32, bool)> {
    let view = skb.rx_view()?;
    let net = match view.ip.len() {
        IPV4_HDR_LEN => NetHeaders::Ipv4 {
            ip: view.ip,
            udp: view.udp,
        },
        IPV6_HDR_LEN => NetHeaders::Ipv6 {
            ip: view.ip,
            udp: view.udp,
        },
        _ => return None,
    };
    // The stage that takes it parses it whole.
    let (bth, _) = Packet::peek(view.payload).ok()?;
    if matches!(origin, Origin::Wire) {
        icrc::verify(&KernelCrc, &net, view.payload).ok()?;
    }
    Some((bth.dest_qpn, bth.opcode.is_request()))
}

/// Takes one received datagram for device `dev`.
pub(crate) fn process(dev: &Device<RrxeDev>, mut skb: SkBuff, origin: Origin<'_>) {
    if skb.linearize().is_err() {
        return;
    }
    let data = dev.data();
    let Some((qpn, request)) = classify(&skb, origin) else {
        data.count(Counter::RcvdBadPkt);
        return;
    };
    if qpn == MULTICAST_QPN {
        crate::mcast::deliver(data, skb);
        return;
    }
    let Some(qp) = data.qps().get(qpn) else {
        data.count(Counter::RcvdBadPkt);
        return;
    };
    data.count(Counter::RcvdPkts);
    let woken = match origin {
        Origin::Wire => None,
        Origin::Loopback(woken) => Some(woken),
    };
    qp.enqueue(skb, request, woken);
}
