// SPDX-License-Identifier: GPL-2.0

//! Receive: RoCEv2 datagrams from the UDP encapsulation hook (softirq) or from the loopback
//! shortcut. Each is checked (headers, ICRC), matched to its QP (or to every QP of a
//! multicast group), admitted there (`admit`'s checks of its QP's state, its transport,
//! source, P_Key and Q_Key) and queued; the QP's engine processes it (its work item, or
//! for a loopback packet maybe the sender's caller: [`SentBy`]). Nothing here trusts the
//! packet: whatever does not check out is dropped and counted, and takes no place in a
//! queue.

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
        burst::MAX_BURST_PAYLOAD,
        icrc::{self, NetHeaders, IPV4_HDR_LEN, IPV6_HDR_LEN},
        mtu::Mtu,
        opcode::{BTH_LEN, MAX_HEADER_LEN},
        packet::{Packet, ICRC_LEN, MAX_PAYLOAD},
    },
    qp::QpShared,
    task::SentBy,
};

/// A received packet: its headers, and its payload wherever it lies in the skb (read
/// where it is copied to, once).
pub(crate) type RxPacket<'a> = Packet<Bytes<'a>>;

/// The longest RoCEv2 UDP datagram: the UDP header, the longest transport headers, the
/// largest payload (with its pad, a multiple of four) and the ICRC.
const MAX_DATAGRAM: usize = UDP_HDR_LEN + MAX_HEADER_LEN + MAX_PAYLOAD + ICRC_LEN;

/// The tag of a loopback burst's mark in its skb's control buffer
/// ([`SkBuff::cb_word`]): the tag, then the IB code of the sender's path MTU.
const BURST_TAG: u32 = 0x6275_0000;

/// The word a datagram carries in its skb's control buffer while it is queued: a loopback
/// burst's mark (see [`crate::proto::burst`]) with the sender's path MTU, else 0. The
/// wire's path overwrites it with 0 ([`process`]: the IP layer used the buffer), so
/// nothing from a wire is taken for a burst; a loopback packet's skb is new, its word 0.
pub(crate) const fn mark(burst: Option<Mtu>) -> u32 {
    match burst {
        Some(mtu) => BURST_TAG | mtu.to_ib(),
        None => 0,
    }
}

/// The sender's path MTU if `word` is a burst's mark.
fn burst_mtu(word: u32) -> Option<Mtu> {
    if word & 0xffff_0000 == BURST_TAG {
        Mtu::from_ib(word & 0xffff).ok()
    } else {
        None
    }
}

/// Where a datagram comes from.
#[derive(Clone, Copy)]
pub(crate) enum Origin<'a> {
    /// The network: its ICRC is checked, its QP's work item is scheduled.
    Wire,
    /// This device's own transmit path, during a pass: it has no ICRC to check, its
    /// destination is what the sender wrote into its headers, and its QP is handed to the
    /// sender ([`SentBy::wake`]).
    Loopback(SentBy<'a>, Dest),
}

/// Where a datagram goes: its destination QPN, whether it is a request, and how many
/// packets it stands for (a loopback burst's; else 1).
#[derive(Clone, Copy)]
pub(crate) struct Dest {
    pub(crate) qpn: u32,
    pub(crate) request: bool,
    pub(crate) packets: u32,
}

/// The sender's path MTU if a received datagram is a loopback burst (its payload may then
/// be as long as [`MAX_BURST_PAYLOAD`]).
pub(crate) fn burst_of(skb: &SkBuff) -> Option<Mtu> {
    burst_mtu(skb.cb_word())
}

/// Whether datagram `skb` (a request if `request`, from the wire if `wire`) may reach `qp`
/// ([`crate::admit`]).
pub(crate) fn admitted(qp: &QpShared, skb: &SkBuff, request: bool, wire: bool) -> bool {
    let Some(view) = skb.rx_view() else {
        qp.dev.data().count(Counter::RcvdBadPkt);
        return false;
    };
    let on = if wire { skb.dev() } else { None };
    crate::admit::accept(qp, &view, request, on)
}

/// The longest payload of a datagram, a loopback burst if `burst` (its [`burst_of`]).
fn max_payload(burst: Option<Mtu>) -> usize {
    if burst.is_some() {
        MAX_BURST_PAYLOAD
    } else {
        MAX_PAYLOAD
    }
}

/// The packet of a received datagram, decoded from the headers at the start of its
/// payload (a loopback burst's too, if `burst` is its [`burst_of`]); its payload left
/// where it lies. `None` if it does not decode.
pub(crate) fn parse<'a>(view: &RxView<'a>, burst: Option<Mtu>) -> Option<RxPacket<'a>> {
    let pkt = Packet::parse_head_max(view.head(), view.payload_len(), max_payload(burst)).ok()?;
    let payload = view.bytes(pkt.payload.clone())?;
    Some(pkt.with_payload(payload))
}

/// The destination of a valid datagram from the network (its ICRC checked).
fn classify(data: &RrxeDev, skb: &SkBuff) -> Option<Dest> {
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
    // The stage that takes it parses it whole. A wire datagram is no burst (`process`
    // marked it as the wire's).
    let (bth, _) = Packet::peek_head_max(view.head(), view.payload_len(), MAX_PAYLOAD).ok()?;
    // After the headers, the bytes may lie in fragments: the CRC runs over them there.
    let icrc_at = view.payload_len().checked_sub(ICRC_LEN)?;
    let mut stored = [0u8; ICRC_LEN];
    view.bytes(icrc_at..view.payload_len())?
        .read(&mut stored)
        .ok()?;
    let crc32 = data.crc();
    let rest = |crc| view.crc32(crc32, crc, BTH_LEN..icrc_at);
    icrc::verify_parts(&KernelCrc(crc32), &net, view.head(), rest, &stored).ok()?;
    Some(Dest {
        qpn: bth.dest_qpn,
        request: bth.opcode.is_request(),
        packets: 1,
    })
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
    let (dest, by) = match origin {
        Origin::Wire => {
            // The control buffer holds what the IP layer left there: no burst's mark.
            skb.set_cb_word(mark(None));
            let head = UDP_HDR_LEN + MAX_HEADER_LEN;
            if skb.pull_transport(head, MAX_DATAGRAM).is_err() {
                data.count(Counter::RcvdBadPkt);
                return;
            }
            let Some(dest) = classify(data, &skb) else {
                data.count(Counter::RcvdBadPkt);
                return;
            };
            (dest, None)
        }
        // Its headers are the ones its sender just wrote: the stage that takes it parses
        // them whole.
        Origin::Loopback(by, dest) => (dest, Some(by)),
    };
    let Dest {
        qpn,
        request,
        packets,
    } = dest;
    if qpn == MULTICAST_QPN {
        crate::mcast::deliver(data, skb, by.is_none());
        return;
    }
    let qp = match by {
        Some(by) => by.lookup(data, qpn),
        None => data.qps().get(qpn),
    };
    let Some(qp) = qp else {
        data.count(Counter::RcvdBadPkt);
        return;
    };
    if !admitted(&qp, &skb, request, by.is_none()) {
        return;
    }
    data.count_n(Counter::RcvdPkts, packets);
    if !skb.is_linear() {
        data.count_n(Counter::RcvdPaged, packets);
    }
    qp.enqueue(skb, request, by);
}
