// SPDX-License-Identifier: GPL-2.0

//! Whole IBA transport packets as RoCEv2 carries them in a UDP datagram:
//!
//! ```text
//! BTH | extension headers (by opcode) | payload | pad (0..3, to 4 bytes) | ICRC (4)
//! ```
//!
//! [`Packet::parse`] decodes a received UDP payload without copying it: the headers become
//! small values, the payload a borrowed slice; [`Packet::parse_head`] decodes one of which
//! the receiver holds only the first bytes in a slice, its payload as offsets.
//! [`Headers::write`] lays out a packet to be sent and writes its headers; the caller then
//! fills the payload in place (from a memory region or inline data) and computes the ICRC
//! (see the `icrc` module). [`encode`] does both steps for a payload held in one slice.

use core::ops::Range;

use super::aeth::Aeth;
use super::atomic::{AtomicAckEth, AtomicEth};
use super::bth::Bth;
use super::deth::Deth;
use super::flush::Feth;
use super::ieth::Ieth;
use super::immdt::ImmDt;
use super::opcode::{HeaderSet, Opcode, BTH_LEN};
use super::psn::Psn;
use super::reth::Reth;
use super::{ProtoError, Result};

/// Length of the invariant CRC trailer.
pub const ICRC_LEN: usize = 4;

/// Largest payload of one packet: the largest IBA MTU.
pub const MAX_PAYLOAD: usize = 4096;

/// Pad bytes needed after `payload_len` bytes to reach a multiple of four.
pub const fn pad_len(payload_len: usize) -> usize {
    payload_len.wrapping_neg() & 3
}

/// The BTH and the extension headers of one packet.
///
/// Exactly the extension headers of the BTH opcode must be present for encoding, and parsing
/// fills exactly those.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Headers {
    /// Base transport header.
    pub bth: Bth,
    /// FLUSH extended transport header.
    pub feth: Option<Feth>,
    /// RDMA extended transport header.
    pub reth: Option<Reth>,
    /// Datagram extended transport header.
    pub deth: Option<Deth>,
    /// Atomic extended transport header.
    pub atomic_eth: Option<AtomicEth>,
    /// ACK extended transport header.
    pub aeth: Option<Aeth>,
    /// Atomic acknowledge extended transport header.
    pub atomic_ack: Option<AtomicAckEth>,
    /// Immediate data.
    pub immdt: Option<ImmDt>,
    /// Invalidate extended transport header.
    pub ieth: Option<Ieth>,
}

/// Offsets and lengths of a packet's parts, from the start of the BTH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    /// Length of BTH and extension headers; the payload starts here.
    pub header_len: usize,
    /// Payload bytes.
    pub payload_len: usize,
    /// Pad bytes after the payload.
    pub pad: usize,
    /// Whole packet length including the ICRC (the UDP payload length).
    pub total_len: usize,
}

impl Layout {
    /// The layout of an `opcode` packet with `payload_len` payload bytes. Fails when the
    /// opcode carries no payload but `payload_len` is not zero, or when the payload exceeds
    /// [`MAX_PAYLOAD`].
    pub const fn new(opcode: Opcode, payload_len: usize) -> Result<Layout> {
        Self::with_max::<MAX_PAYLOAD>(opcode, payload_len)
    }

    /// As [`Self::new`], with payloads up to `MAX` bytes (a loopback burst's,
    /// [`super::burst::MAX_BURST_PAYLOAD`]). A constant, so that each bound has its own
    /// code: a single packet's pays nothing for bursts.
    pub const fn with_max<const MAX: usize>(opcode: Opcode, payload_len: usize) -> Result<Layout> {
        if payload_len != 0 && !opcode.has_payload() {
            return Err(ProtoError::UnexpectedPayload);
        }
        if payload_len > MAX {
            return Err(ProtoError::PayloadTooLong);
        }
        let header_len = opcode.header_len();
        let pad = pad_len(payload_len);
        Ok(Layout {
            header_len,
            payload_len,
            pad,
            total_len: header_len + payload_len + pad + ICRC_LEN,
        })
    }

    /// Where the payload lies.
    pub const fn payload_range(&self) -> Range<usize> {
        self.header_len..self.header_len.saturating_add(self.payload_len)
    }

    /// Where the pad lies.
    pub const fn pad_range(&self) -> Range<usize> {
        let start = self.header_len.saturating_add(self.payload_len);
        start..start.saturating_add(self.pad)
    }

    /// Where the ICRC lies.
    pub const fn icrc_offset(&self) -> usize {
        self.total_len.saturating_sub(ICRC_LEN)
    }
}

impl Headers {
    /// Headers with the given BTH and no extension header.
    pub const fn new(bth: Bth) -> Self {
        Headers {
            bth,
            feth: None,
            reth: None,
            deth: None,
            atomic_eth: None,
            aeth: None,
            atomic_ack: None,
            immdt: None,
            ieth: None,
        }
    }

    /// The set of extension headers present.
    pub const fn present(&self) -> HeaderSet {
        let mut s = HeaderSet::NONE;
        if self.feth.is_some() {
            s = s.with(HeaderSet::FETH);
        }
        if self.reth.is_some() {
            s = s.with(HeaderSet::RETH);
        }
        if self.deth.is_some() {
            s = s.with(HeaderSet::DETH);
        }
        if self.atomic_eth.is_some() {
            s = s.with(HeaderSet::ATOMIC_ETH);
        }
        if self.aeth.is_some() {
            s = s.with(HeaderSet::AETH);
        }
        if self.atomic_ack.is_some() {
            s = s.with(HeaderSet::ATOMIC_ACK_ETH);
        }
        if self.immdt.is_some() {
            s = s.with(HeaderSet::IMMDT);
        }
        if self.ieth.is_some() {
            s = s.with(HeaderSet::IETH);
        }
        s
    }

    /// Lays out a packet of these headers with `payload_len` payload bytes in `buf` and
    /// writes the headers. The BTH pad count is set from `payload_len` (whatever
    /// `self.bth.pad` says); pad and ICRC bytes are zeroed. The payload range is left to the
    /// caller. Fails when `buf` is shorter than the packet, the extension headers do not
    /// match the opcode, or a field does not fit its width.
    pub fn write(&self, payload_len: usize, buf: &mut [u8]) -> Result<Layout> {
        let total = Layout::new(self.bth.opcode, payload_len)?.total_len;
        let buf = buf.get_mut(..total).ok_or(ProtoError::BufferTooSmall)?;
        let layout = self.write_head(payload_len, buf)?;
        let end = layout.pad_range().start;
        if let Some(trailer) = buf.get_mut(end..) {
            trailer.fill(0);
        }
        Ok(layout)
    }

    /// Writes the headers of a packet with `payload_len` payload bytes, as [`Self::write`]
    /// does, into `buf`, which needs room for the headers only (the payload, pad and ICRC
    /// go elsewhere: by reference, in a trailer).
    #[inline]
    pub fn write_head(&self, payload_len: usize, buf: &mut [u8]) -> Result<Layout> {
        self.write_head_max::<MAX_PAYLOAD>(payload_len, buf)
    }

    /// As [`Self::write_head`], with payloads up to `MAX` bytes ([`Layout::with_max`]).
    pub fn write_head_max<const MAX: usize>(
        &self,
        payload_len: usize,
        buf: &mut [u8],
    ) -> Result<Layout> {
        let opcode = self.bth.opcode;
        let layout = Layout::with_max::<MAX>(opcode, payload_len)?;
        let wanted = opcode.headers();
        if self.present().with(HeaderSet::PAYLOAD) != wanted.with(HeaderSet::PAYLOAD) {
            return Err(ProtoError::HeaderMismatch);
        }
        let buf = buf
            .get_mut(..layout.header_len)
            .ok_or(ProtoError::BufferTooSmall)?;
        let mut bth = self.bth;
        // `pad_len` is at most 3.
        bth.pad = (layout.pad & 3) as u8;
        bth.write(buf)?;
        let mut off = BTH_LEN;
        if let Some(h) = &self.feth {
            h.write(tail_mut(buf, off)?)?;
            off += Feth::LEN;
        }
        if let Some(h) = &self.reth {
            h.write(tail_mut(buf, off)?)?;
            off += Reth::LEN;
        }
        if let Some(h) = &self.deth {
            h.write(tail_mut(buf, off)?)?;
            off += Deth::LEN;
        }
        if let Some(h) = &self.atomic_eth {
            h.write(tail_mut(buf, off)?)?;
            off += AtomicEth::LEN;
        }
        if let Some(h) = &self.aeth {
            h.write(tail_mut(buf, off)?)?;
            off += Aeth::LEN;
        }
        if let Some(h) = &self.atomic_ack {
            h.write(tail_mut(buf, off)?)?;
            off += AtomicAckEth::LEN;
        }
        if let Some(h) = &self.immdt {
            h.write(tail_mut(buf, off)?)?;
            off += ImmDt::LEN;
        }
        if let Some(h) = &self.ieth {
            h.write(tail_mut(buf, off)?)?;
            off += Ieth::LEN;
        }
        if off != layout.header_len {
            return Err(ProtoError::HeaderMismatch);
        }
        Ok(layout)
    }

    /// Decodes the BTH and the extension headers its opcode calls for from the start of
    /// `buf`, checking the transport version.
    pub fn parse(buf: &[u8]) -> Result<Headers> {
        Self::parse_ext(checked_bth(buf)?, buf)
    }

    /// The headers of `buf` whose BTH is `bth`: the extension headers its opcode calls for.
    fn parse_ext(bth: Bth, buf: &[u8]) -> Result<Headers> {
        let set = bth.opcode.headers();
        let mut h = Headers::new(bth);
        let mut off = BTH_LEN;
        if set.contains(HeaderSet::FETH) {
            h.feth = Some(Feth::parse(tail(buf, off)?)?);
            off += Feth::LEN;
        }
        if set.contains(HeaderSet::RETH) {
            h.reth = Some(Reth::parse(tail(buf, off)?)?);
            off += Reth::LEN;
        }
        if set.contains(HeaderSet::DETH) {
            h.deth = Some(Deth::parse(tail(buf, off)?)?);
            off += Deth::LEN;
        }
        if set.contains(HeaderSet::ATOMIC_ETH) {
            h.atomic_eth = Some(AtomicEth::parse(tail(buf, off)?)?);
            off += AtomicEth::LEN;
        }
        if set.contains(HeaderSet::AETH) {
            h.aeth = Some(Aeth::parse(tail(buf, off)?)?);
            off += Aeth::LEN;
        }
        if set.contains(HeaderSet::ATOMIC_ACK_ETH) {
            h.atomic_ack = Some(AtomicAckEth::parse(tail(buf, off)?)?);
            off += AtomicAckEth::LEN;
        }
        if set.contains(HeaderSet::IMMDT) {
            h.immdt = Some(ImmDt::parse(tail(buf, off)?)?);
            off += ImmDt::LEN;
        }
        if set.contains(HeaderSet::IETH) {
            h.ieth = Some(Ieth::parse(tail(buf, off)?)?);
        }
        Ok(h)
    }
}

/// The BTH at the start of `buf`, of a known opcode and transport version 0.
fn checked_bth(buf: &[u8]) -> Result<Bth> {
    let bth = Bth::parse(buf)?;
    if bth.tver != 0 {
        return Err(ProtoError::BadTransportVersion(bth.tver));
    }
    Ok(bth)
}

/// `buf` from `off` on.
fn tail(buf: &[u8], off: usize) -> Result<&[u8]> {
    buf.get(off..).ok_or(ProtoError::Truncated)
}

/// `buf` from `off` on, for writing.
fn tail_mut(buf: &mut [u8], off: usize) -> Result<&mut [u8]> {
    buf.get_mut(off..).ok_or(ProtoError::BufferTooSmall)
}

/// A decoded packet: headers by value and its payload (without pad and ICRC) as `P`: a
/// slice of the receive buffer ([`Packet::parse`]), or where the payload lies in the packet
/// ([`Packet::parse_head`]), for a receiver that does not hold the packet in one buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Packet<P> {
    /// The headers.
    pub hdr: Headers,
    /// The payload, without pad and ICRC.
    pub payload: P,
}

impl<'a> Packet<&'a [u8]> {
    /// Decodes a whole packet: `buf` is the UDP payload, from the BTH through the ICRC.
    ///
    /// Checks that the opcode is known, the version is 0, the buffer holds the headers, the
    /// pad and the ICRC, that opcodes without payload have none, that payload and pad end on
    /// a 4-byte boundary (so the pad count is the one [`pad_len`] gives; rxe does not check
    /// this) and that the payload is at most [`MAX_PAYLOAD`]. The ICRC itself is checked by
    /// the `icrc` module, which needs the IP and UDP headers too; the path MTU of the QP by
    /// the responder or completer.
    pub fn parse(buf: &'a [u8]) -> Result<Self> {
        let pkt = Packet::parse_head(buf, buf.len())?;
        let payload = buf.get(pkt.payload.clone()).ok_or(ProtoError::Truncated)?;
        Ok(pkt.with_payload(payload))
    }

    /// Checks `buf` as [`Packet::parse`] does, with the same result, but decodes only the
    /// BTH: it and the payload. The receive path's first look at a packet (its QP, request
    /// or response), before the stage that takes it parses it whole.
    pub fn peek(buf: &'a [u8]) -> Result<(Bth, &'a [u8])> {
        let (bth, payload) = Packet::peek_head(buf, buf.len())?;
        Ok((bth, buf.get(payload).ok_or(ProtoError::Truncated)?))
    }
}

impl Packet<Range<usize>> {
    /// Decodes a packet of `len` bytes (the UDP payload, from the BTH through the ICRC) of
    /// which `head` holds the first ones, at least the headers: the headers, and the
    /// payload's offsets in the packet. The checks and the result of [`Packet::parse`] of
    /// the whole packet; `Truncated` also when `head` does not hold the headers.
    pub fn parse_head(head: &[u8], len: usize) -> Result<Self> {
        Self::parse_head_max(head, len, MAX_PAYLOAD)
    }

    /// As [`Packet::parse_head`], with payloads up to `max` bytes (a loopback burst's).
    pub fn parse_head_max(head: &[u8], len: usize, max: usize) -> Result<Self> {
        let (bth, payload) = Self::peek_head_max(head, len, max)?;
        let hdr = Headers::parse_ext(bth, head)?;
        Ok(Packet { hdr, payload })
    }

    /// Checks a packet as [`Packet::parse_head`] does but decodes only the BTH (as
    /// [`Packet::peek`]), so `head` need hold only the BTH: the same result when it holds
    /// the extension headers too.
    pub fn peek_head(head: &[u8], len: usize) -> Result<(Bth, Range<usize>)> {
        Self::peek_head_max(head, len, MAX_PAYLOAD)
    }

    /// As [`Packet::peek_head`], with payloads up to `max` bytes (a loopback burst's).
    pub fn peek_head_max(head: &[u8], len: usize, max: usize) -> Result<(Bth, Range<usize>)> {
        let head = head
            .get(..len.min(head.len()))
            .ok_or(ProtoError::Truncated)?;
        let bth = checked_bth(head)?;
        let opcode = bth.opcode;
        let header_len = opcode.header_len();
        // The extension headers lie in the `header_len` bytes, so this length check is
        // theirs too (they check nothing else).
        let body = len
            .checked_sub(header_len + ICRC_LEN)
            .ok_or(ProtoError::Truncated)?;
        let payload_len = body
            .checked_sub(usize::from(bth.pad))
            .ok_or(ProtoError::Truncated)?;
        if body != 0 && !opcode.has_payload() {
            return Err(ProtoError::UnexpectedPayload);
        }
        // Header lengths are multiples of four; the pad must complete the payload to one.
        if body & 3 != 0 {
            return Err(ProtoError::Misaligned);
        }
        if payload_len > max {
            return Err(ProtoError::PayloadTooLong);
        }
        Ok((bth, header_len..header_len + payload_len))
    }
}

impl<P> Packet<P> {
    /// The opcode.
    pub const fn opcode(&self) -> Opcode {
        self.hdr.bth.opcode
    }

    /// The PSN.
    pub const fn psn(&self) -> Psn {
        self.hdr.bth.psn
    }

    /// The same headers with `payload`.
    pub fn with_payload<Q>(self, payload: Q) -> Packet<Q> {
        Packet {
            hdr: self.hdr,
            payload,
        }
    }
}

/// Writes a whole packet into `buf`: headers, `payload`, zero pad and a zero ICRC
/// placeholder (to be filled by the `icrc` module). Returns the layout.
pub fn encode(hdr: &Headers, payload: &[u8], buf: &mut [u8]) -> Result<Layout> {
    let layout = hdr.write(payload.len(), buf)?;
    buf.get_mut(layout.payload_range())
        .ok_or(ProtoError::BufferTooSmall)?
        .copy_from_slice(payload);
    Ok(layout)
}
