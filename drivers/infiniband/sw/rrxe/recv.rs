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
    ext::{
        bytes::Bytes,
        net::skb::{RxView, SkBuff, UDP_HDR_LEN},
        rdma::device::Device,
    },
    icrc::KernelCrc,
    proto::{
        bth::MULTICAST_QPN,
        icrc::{self, NetHeaders, IPV4_HDR_LEN, IPV6_HDR_LEN},
        opcode::{BTH_LEN, MAX_HEADER_LEN},
        packet::{Packet, ICRC_LEN, MAX_PAYLOAD},
    },
    task::Woken,
};

/// A received packet: its headers, and its payload wherever it lies in the skb (read
/// where it is copied to, once).
pub(crate) type RxPacket<'a> = Packet<Bytes<'a>>;

/// The longest RoCEv2 UDP datagram: the UDP header, the longest transport headers, the
/// largest payload (with its pad, a multiple of four) and the ICRC.
const MAX_DATAGRAM: usize = UDP_HDR_LEN + MAX_HEADER_LEN + MAX_PAYLOAD + ICRC_LEN;

/// Where a datagram comes from.
#[derive(Clone, Copy)]
pub(crate) enum Origin<'a> {
    /// The network: its ICRC is checked, its QP's work item is scheduled.
    Wire,
    /// This device's own transmit path, during a pass: it has no ICRC to check, and its QP
    /// joins the sending pass's [`Woken`].
    Loopback(&'a Woken),
}

/// The packet of a received datagram, decoded from the headers at the start of its
/// payload; its payload left where it lies. `None` if it does not decode.
pub(crate) fn parse<'a>(view: &RxView<'a>) -> Option<RxPacket<'a>> {
    let pkt = Packet::parse_head(view.head(), view.payload_len()).ok()?;
    let payload = view.bytes(pkt.payload.clone())?;
    Some(pkt.with_payload(payload))
}

/// The QPN of a valid packet and whether it is a request.
fn classify(data: &RrxeDev, skb: &SkBuff, origin: Origin<'_>) -> Option<(u32, bool)> {
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
    let (bth, _) = Packet::peek_head(view.head(), view.payload_len()).ok()?;
    if matches!(origin, Origin::Wire) {
        // After the headers, the bytes may lie in fragments: the CRC runs over them there.
        let icrc_at = view.payload_len().checked_sub(ICRC_LEN)?;
        let mut stored = [0u8; ICRC_LEN];
        view.bytes(icrc_at..view.payload_len())?
            .read(&mut stored)
            .ok()?;
        let crc32 = data.crc();
        let rest = |crc| view.crc32(crc32, crc, BTH_LEN..icrc_at);
        icrc::verify_parts(&KernelCrc(crc32), &net, view.head(), rest, &stored).ok()?;
    }
    Some((bth.dest_qpn, bth.opcode.is_request()))
}

/// Takes one received datagram for device `dev`.
pub(crate) fn process(dev: &Device<RrxeDev>, mut skb: SkBuff, origin: Origin<'_>) {
    let data = dev.data();
    // The headers must be linear (with up to `MAX_HEADER_LEN` bytes, less theirs, of the
    // payload); the payload may stay in fragments (a NIC's pages, or a sender's on this
    // host), to be copied once, to its destination, unless they hold much more memory
    // than their bytes (a datagram reassembled from tiny IP fragments). A datagram too
    // long to be RoCEv2 is dropped before any copy. A loopback packet's headers are
    // linear already: the transmit path wrote them there.
    let wire = matches!(origin, Origin::Wire);
    let head = UDP_HDR_LEN + MAX_HEADER_LEN;
    if wire && skb.pull_transport(head, MAX_DATAGRAM).is_err() {
        data.count(Counter::RcvdBadPkt);
        return;
    }
    let Some((qpn, request)) = classify(data, &skb, origin) else {
        data.count(Counter::RcvdBadPkt);
        return;
    };
    if qpn == MULTICAST_QPN {
        crate::mcast::deliver(data, skb);
        return;
    }
    let woken = match origin {
        Origin::Wire => None,
        Origin::Loopback(woken) => Some(woken),
    };
    let qp = woken.and_then(|w| w.find(qpn));
    let Some(qp) = qp.or_else(|| data.qps().get(qpn)) else {
        data.count(Counter::RcvdBadPkt);
        return;
    };
    data.count(Counter::RcvdPkts);
    if !skb.is_linear() {
        data.count(Counter::RcvdPaged);
    }
    qp.enqueue(skb, request, woken);
}
