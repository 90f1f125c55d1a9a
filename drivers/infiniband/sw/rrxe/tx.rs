// SPDX-License-Identifier: GPL-2.0

//! Transmit: a packet's headers and payload become a RoCEv2 UDP datagram with its ICRC,
//! sent on the netdev or, when it is addressed to this device, handed straight to the
//! receive path, which queues it at its QP and hands that QP to the sender's caller to
//! run, if they are connected ([`SentBy`]).
//!
//! With the module parameter `zero_copy` on (the default), a request's payload in a
//! client's registered memory goes by reference ([`send_from`]), if it is long enough, to
//! this device itself or to a device that does scatter-gather: the skb holds the headers,
//! then the pages of the payload (each with a page reference), then the pad and ICRC in a
//! trailer fragment; the device reads the payload when it sends it, or the receive path
//! when it copies it to its destination (so a packet to this host moves its data once).

use crate::{
    counters::Counter,
    device::RrxeDev,
    ext::{
        net::{
            device::NetDevice,
            page_piece::PagePiece,
            route::RouteMemo,
            udp_tunnel::Family,
            xmit::{Body, Flow, IpAddrs, TxOwner, TxSkb},
        },
        param,
        rdma::{ah::RoceAv, device::Device, roce_xmit::RoceFlow},
    },
    icrc::KernelCrc,
    proto::{
        burst::{MAX_BURST_PAYLOAD, MAX_READ_BURST_PAYLOAD},
        icrc::{self, Icrc, NetHeaders},
        mtu::Mtu,
        opcode::BTH_LEN,
        packet::{Headers, Layout, ICRC_LEN, MAX_PAYLOAD},
    },
    recv::{self, Dest, Origin},
    task::{SentBy, TxWake},
};
use kernel::prelude::*;

/// Hop limit when the address vector has none.
const DEFAULT_TTL: u8 = 64;

/// Payloads at least this long go by reference to their pages to this device itself;
/// below it a copy costs less than the page references and the trailer fragment.
const ZERO_COPY_MIN: usize = 1024;

/// The fewest payload bytes a loopback burst carries ([`send_burst`]): as zero-copy.
pub(crate) const BURST_MIN: u32 = ZERO_COPY_MIN as u32;

/// The same through a net device, where the ICRC is computed over the pages piece by piece
/// (and, over a veth pair, checked so by the receiver): with the library CRC, packets of 1
/// KiB went 3 % slower by reference than copied on a veth pair, packets of 4 KiB 4 %
/// faster. With crc32-pclmul, at 4 KiB writes by reference are 7 to 16 % faster there and
/// sends 21 to 24 % slower (the receiver's copy out of page fragments); 1 KiB not measured
/// again.
const ZERO_COPY_MIN_WIRE: usize = 2048;

/// What a pass sends through.
#[derive(Clone, Copy)]
pub(crate) struct Egress<'a> {
    /// The pass, which its loopback packets name (the peers they reach join its caller's
    /// set, [`SentBy::wake`]).
    pub(crate) by: SentBy<'a>,
    /// The route memo of the net device (the route of the pass's last packet, which its
    /// next ones to the same addresses take).
    pub(crate) memo: &'a RouteMemo<'a>,
}

impl<'a> Egress<'a> {
    /// The net device.
    pub(crate) fn ndev(&self) -> &'a NetDevice {
        self.memo.device()
    }
}

/// Where a QP's packets go: the address vector, and the datagram flow made of it and the
/// QP's UDP source port once, when the vector is set (not for every packet).
#[derive(Clone, Copy)]
pub(crate) struct Path {
    av: RoceAv,
    flow: Flow,
}

/// Whether a GID is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
fn v4_mapped(gid: &[u8; 16]) -> Option<[u8; 4]> {
    let (head, v4) = gid.split_at(12);
    if head[..10].iter().all(|b| *b == 0) && head[10] == 0xff && head[11] == 0xff {
        let mut a = [0u8; 4];
        a.copy_from_slice(v4);
        Some(a)
    } else {
        None
    }
}

/// The UDP source port of a QP: `0xc000` plus a 14-bit hash of its number, so that each
/// QP is one flow (in order on the wire) and QPs spread over receive queues.
pub(crate) fn src_port(qpn: u32) -> u16 {
    // hash_32 of the kernel: multiply by the golden ratio, keep the top bits.
    let h = qpn.wrapping_mul(0x61c8_8647) >> (32 - 14);
    0xc000 | h as u16
}

impl Path {
    /// The path to `av` from UDP source port `src_port`.
    pub(crate) fn new(av: RoceAv, src_port: u16) -> Self {
        let addrs = match (v4_mapped(&av.sgid), v4_mapped(&av.dgid)) {
            (Some(src), Some(dst)) => IpAddrs::V4 { src, dst },
            _ => IpAddrs::V6 {
                src: av.sgid,
                dst: av.dgid,
            },
        };
        let flow = RoceFlow {
            addrs,
            src_port,
            tos: av.traffic_class,
            ttl: if av.hop_limit == 0 {
                DEFAULT_TTL
            } else {
                av.hop_limit
            },
            flow_label: av.flow_label,
        }
        .flow();
        Path { av, flow }
    }

    /// The path to `av` from the same source port.
    pub(crate) fn to(&self, av: RoceAv) -> Self {
        Self::new(av, self.flow.src_port)
    }

    /// The address vector.
    pub(crate) fn av(&self) -> &RoceAv {
        &self.av
    }

    /// Whether the path leads back to net device `ndev` (its packets never leave memory).
    pub(crate) fn loops_back(&self, ndev: &NetDevice) -> bool {
        self.av.dmac == ndev.mac()
    }
}

/// Why a packet was not sent.
#[derive(Debug)]
pub(crate) enum TxError<E> {
    /// Filling the payload failed.
    Fill(E),
    /// The packet could not be built or sent (memory, route, device).
    Net,
}

/// The payload of a packet that may go by reference to its pages.
pub(crate) trait Payload {
    /// Why the payload's memory cannot be read.
    type Error;

    /// Whether the payload may lie in pinned user pages, so that [`Self::pieces`] is worth
    /// a try.
    fn paged(&self) -> bool;

    /// Copies the payload into `buf`.
    fn copy(&self, buf: &mut [u8]) -> Result<(), Self::Error>;

    /// Hands `take` a reference on each page piece of the payload, in order, until it
    /// refuses one; returns whether it took them all (`false` also if some of the payload
    /// is not in pinned user pages).
    fn pieces(&self, take: impl FnMut(PagePiece) -> bool) -> Result<bool, Self::Error>;
}

/// A packet's way out: the device that sends it, the pass's egress, the owner its skb
/// counts in (skbs in flight), and its path.
#[derive(Clone, Copy)]
pub(crate) struct Sender<'a> {
    pub(crate) dev: &'a Device<RrxeDev>,
    pub(crate) link: Egress<'a>,
    pub(crate) owner: &'a TxOwner<TxWake>,
    pub(crate) path: &'a Path,
}

/// Whether `path` out of `link` leads back to this device (its packets never leave
/// memory).
pub(crate) fn loops_back(link: &Egress<'_>, path: &Path) -> bool {
    path.loops_back(link.ndev())
}

impl Sender<'_> {
    /// Whether the path leads back to this device.
    pub(crate) fn loops_back(&self) -> bool {
        loops_back(&self.link, self.path)
    }

    /// Hands a built datagram with headers `hdr` to the receive path of this device, marked
    /// as a burst of `k` packets cut by path MTU `burst` if it is one (else `k` is 1). It
    /// carries no ICRC (the receive path is told not to check it).
    fn loop_back(&self, skb: TxSkb, hdr: &Headers, k: u32, burst: Option<Mtu>) -> Result<(), ()> {
        let mut skb = skb
            .loopback(self.link.ndev(), &self.path.flow, |_, _, _| {})
            .map_err(|_| ())?;
        // A new skb's word is 0 already: no mark.
        if burst.is_some() {
            skb.set_cb_word(recv::mark(burst));
        }
        let dest = Dest {
            qpn: hdr.bth.dest_qpn,
            request: hdr.bth.opcode.is_request(),
            packets: k,
        };
        recv::process(self.dev, skb, Origin::Loopback(self.link.by, dest));
        Ok(())
    }
}

/// The network headers of a datagram of `family` for its ICRC.
fn net_headers<'a>(family: Family, ip: &'a [u8], udp: &'a [u8]) -> NetHeaders<'a> {
    match family {
        Family::V6 => NetHeaders::Ipv6 { ip, udp },
        Family::V4 => NetHeaders::Ipv4 { ip, udp },
    }
}

/// Sends one packet with headers `hdr` and `payload_len` bytes of `payload` through `s`,
/// as [`send`] does, but by reference to the payload's pages (zero-copy) if the module
/// parameter `zero_copy` is on and the payload lies in pinned user pages and goes to this
/// device itself ([`ZERO_COPY_MIN`] bytes or more) or through a net device that does
/// scatter-gather ([`ZERO_COPY_MIN_WIRE`] or more); otherwise (or if it needs more
/// fragments than an skb has) copied.
pub(crate) fn send_from<P: Payload>(
    s: Sender<'_>,
    hdr: &Headers,
    payload_len: usize,
    payload: &P,
) -> Result<(), TxError<P::Error>> {
    if payload_len >= ZERO_COPY_MIN && param::zero_copy() && payload.paged() {
        let by_ref =
            s.loops_back() || (payload_len >= ZERO_COPY_MIN_WIRE && s.link.ndev().can_sg());
        if by_ref && send_pages(s, hdr, payload_len, payload)? {
            return Ok(());
        }
    }
    send(s, hdr, payload_len, |buf| payload.copy(buf))
}

/// A datagram with headers `hdr` and `payload_len` bytes (at most `MAX`,
/// [`Layout::with_max`]) of `payload` by reference to its pages, owned by `s`'s owner, and
/// its layout; `None` if the payload cannot go by reference (nothing sent; also if the
/// trailer cannot be allocated).
fn build_paged<P: Payload, const MAX: usize>(
    s: &Sender<'_>,
    hdr: &Headers,
    payload_len: usize,
    payload: &P,
) -> Result<Option<(TxSkb, Layout)>, TxError<P::Error>> {
    let layout = Layout::with_max::<MAX>(hdr.bth.opcode, payload_len).map_err(|_| TxError::Net)?;
    let family = s.path.flow.addrs.family();
    let mut skb =
        TxSkb::alloc(s.link.ndev(), family, layout.header_len).map_err(|_| TxError::Net)?;
    hdr.write_head_max::<MAX>(payload_len, skb.payload_mut())
        .map_err(|_| TxError::Net)?;
    if !payload
        .pieces(|piece| skb.push_page(piece).is_ok())
        .map_err(TxError::Fill)?
        || skb.paged_len() != layout.payload_len
        || skb.push_trailer(layout.pad + ICRC_LEN).is_err()
    {
        skb.discard();
        return Ok(None);
    }
    skb.set_owner(s.owner).map_err(|_| TxError::Net)?;
    Ok(Some((skb, layout)))
}

/// Sends `k` packets of a message to a QP of this device as one loopback burst
/// ([`crate::proto::burst`]): headers `hdr` (the burst's, cut by path MTU `mtu`) and
/// `payload_len` bytes of `payload` by reference to its pages. `false` if it cannot go so
/// (nothing sent: under [`BURST_MIN`] bytes, not to this device, the module parameter
/// `zero_copy` off, the payload not in pinned user pages, or its pages not fitting an
/// skb): the packets are to be sent one by one. A burst never goes through a net device.
pub(crate) fn send_burst<P: Payload>(
    s: Sender<'_>,
    hdr: &Headers,
    payload_len: usize,
    k: u32,
    mtu: Mtu,
    payload: &P,
) -> Result<bool, TxError<P::Error>> {
    if payload_len < BURST_MIN as usize
        || !s.loops_back()
        || !param::zero_copy()
        || !payload.paged()
    {
        return Ok(false);
    }
    let Some((skb, _)) = build_paged::<P, MAX_BURST_PAYLOAD>(&s, hdr, payload_len, payload)? else {
        return Ok(false);
    };
    let data = s.dev.data();
    data.count_n(Counter::SentPkts, k);
    data.count_n(Counter::SentZeroCopy, k);
    data.count(Counter::SentBursts);
    s.loop_back(skb, hdr, k, Some(mtu))
        .map_err(|()| TxError::Net)?;
    Ok(true)
}

/// The zero-copy part of [`send_from`]: `false` if the payload cannot go by reference
/// (nothing sent; also if the trailer cannot be allocated: the copy may still be).
fn send_pages<P: Payload>(
    s: Sender<'_>,
    hdr: &Headers,
    payload_len: usize,
    payload: &P,
) -> Result<bool, TxError<P::Error>> {
    let family = s.path.flow.addrs.family();
    let Some((skb, layout)) = build_paged::<P, MAX_PAYLOAD>(&s, hdr, payload_len, payload)? else {
        // Not lost: the payload is copied instead.
        return Ok(false);
    };
    let data = s.dev.data();
    data.count(Counter::SentPkts);
    data.count(Counter::SentZeroCopy);
    if s.loops_back() {
        s.loop_back(skb, hdr, 1, None).map_err(|()| TxError::Net)?;
        return Ok(true);
    }
    let pad = layout.pad;
    let crc32 = data.crc();
    let finish = |ip: &[u8], udp: &[u8], body: &mut Body<'_>| {
        // The headers are the ones just built: this cannot fail.
        let engine = KernelCrc(crc32);
        let Ok(mut crc) = Icrc::begin(&engine, &net_headers(family, ip, udp), body.head()) else {
            return;
        };
        crc.update(body.head().get(BTH_LEN..).unwrap_or_default());
        crc.extend(|c| body.crc32_pages(crc32, c));
        if let Some(trailer) = body.trailer() {
            let (zeros, value) = trailer.split_at_mut(pad.min(trailer.len()));
            crc.update(zeros);
            if let Some(v) = value.get_mut(..ICRC_LEN) {
                v.copy_from_slice(&icrc::to_wire(crc.finish()));
            }
        }
    };
    skb.send(s.link.memo, &s.path.flow, finish)
        .map_err(|_| TxError::Net)?;
    Ok(true)
}

/// Sends one packet with headers `hdr` and `payload_len` payload bytes that `fill` writes
/// through `s`.
pub(crate) fn send<E>(
    s: Sender<'_>,
    hdr: &Headers,
    payload_len: usize,
    fill: impl FnOnce(&mut [u8]) -> Result<(), E>,
) -> Result<(), TxError<E>> {
    let skb = build_copied::<E, MAX_PAYLOAD>(&s, hdr, payload_len, TxSkb::alloc, fill)?;
    s.dev.data().count(Counter::SentPkts);
    if s.loops_back() {
        return s.loop_back(skb, hdr, 1, None).map_err(|()| TxError::Net);
    }
    let flow = &s.path.flow;
    let family = flow.addrs.family();
    let engine = KernelCrc(s.dev.data().crc());
    let finish = |ip: &[u8], udp: &[u8], body: &mut Body<'_>| {
        // The headers are the ones just built: this cannot fail.
        let _ = icrc::generate(&engine, &net_headers(family, ip, udp), body.head());
    };
    skb.send(s.link.memo, flow, finish)
        .map_err(|_| TxError::Net)
}

/// Sends `k` responses of an RDMA READ to a QP of this device as one loopback burst
/// ([`crate::proto::burst`]): headers `hdr` (the burst's, cut by path MTU `mtu`) and
/// `payload_len` bytes (at most [`MAX_READ_BURST_PAYLOAD`]) that `fill` copies into it,
/// as it would into each response. `false` if it cannot go so (nothing sent: not to this
/// device, or no memory for it): the responses are to be sent one by one.
pub(crate) fn send_copied_burst<E>(
    s: Sender<'_>,
    hdr: &Headers,
    payload_len: usize,
    k: u32,
    mtu: Mtu,
    fill: impl FnOnce(&mut [u8]) -> Result<(), E>,
) -> Result<bool, TxError<E>> {
    if !s.loops_back() {
        return Ok(false);
    }
    // Up to 32 KiB in one piece, which a burst can do without: no atomic reserves.
    let alloc = TxSkb::try_alloc;
    let skb = match build_copied::<E, MAX_READ_BURST_PAYLOAD>(&s, hdr, payload_len, alloc, fill) {
        Ok(skb) => skb,
        Err(TxError::Net) => return Ok(false),
        Err(e) => return Err(e),
    };
    let data = s.dev.data();
    data.count_n(Counter::SentPkts, k);
    data.count(Counter::SentBursts);
    s.loop_back(skb, hdr, k, Some(mtu))
        .map_err(|()| TxError::Net)?;
    Ok(true)
}

/// A datagram with headers `hdr` and `payload_len` bytes (at most `MAX`,
/// [`Layout::with_max`]) that `fill` writes, allocated by `alloc` ([`TxSkb::alloc`] or
/// [`TxSkb::try_alloc`]), owned by `s`'s owner.
fn build_copied<E, const MAX: usize>(
    s: &Sender<'_>,
    hdr: &Headers,
    payload_len: usize,
    alloc: fn(&NetDevice, Family, usize) -> Result<TxSkb>,
    fill: impl FnOnce(&mut [u8]) -> Result<(), E>,
) -> Result<TxSkb, TxError<E>> {
    let layout = Layout::with_max::<MAX>(hdr.bth.opcode, payload_len).map_err(|_| TxError::Net)?;
    let family = s.path.flow.addrs.family();
    let mut skb = alloc(s.link.ndev(), family, layout.total_len).map_err(|_| TxError::Net)?;
    skb.set_owner(s.owner).map_err(|_| TxError::Net)?;
    {
        // Zeroed at allocation: the headers are written, then the payload; the pad and the
        // ICRC's place stay zero (`Headers::write` would zero them again).
        let buf = skb.payload_mut();
        hdr.write_head_max::<MAX>(payload_len, buf)
            .map_err(|_| TxError::Net)?;
        let payload = buf.get_mut(layout.payload_range()).ok_or(TxError::Net)?;
        fill(payload).map_err(TxError::Fill)?;
    }
    Ok(skb)
}
