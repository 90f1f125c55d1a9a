// SPDX-License-Identifier: GPL-2.0

//! Requester decisions (IBA Vol 1 ch. 9 and 10): whether a send WQE may start, how a message
//! is cut into packets (opcode, PSN, payload of each), which packets request an acknowledge
//! and which carry the solicited-event bit.
//!
//! Segmentation: a SEND or RDMA WRITE of `len` bytes over path MTU `m` is `max(1, ceil(len /
//! m))` packets of `m` bytes except the last, numbered by consecutive PSNs; one packet is
//! sent as *Only*, more as *First*, *Middle*..., *Last*. An RDMA READ is one request packet
//! that reserves as many PSNs as the response will have packets, so the next request's PSN
//! is `first + max(1, ceil(len / m))`. Atomics, FLUSH and ATOMIC WRITE are one packet and one
//! PSN. UD messages are one packet and must fit the MTU.

use super::burst::{Burst, MAX_BURST, MAX_BURST_PAYLOAD};
use super::flush::ATOMIC_WRITE_LEN;
use super::mtu::Mtu;
use super::opcode::{Opcode, Operation};
use super::psn::Psn;
use super::verbs::{QpType, WcStatus, WrOpcode};

/// Largest number of PSNs an RC requester keeps outstanding beyond the oldest unacknowledged
/// one (`RXE_MAX_UNACKED_PSNS`).
pub const MAX_UNACKED_PSNS: u32 = 128;

/// An RC requester sets AckReq at least once per this many packets, besides every last
/// packet of a message (`RXE_MAX_PKT_PER_ACK`).
pub const MAX_PKT_PER_ACK: u32 = 64;

/// Largest message (`RXE_PORT_MAX_MSG_SZ`, 2 GiB).
pub const MAX_MSG_SIZE: u32 = 1 << 31;

/// Why a work request cannot be segmented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReqError {
    /// The operation is not one this QP type sends (or is a local operation).
    Unsupported,
    /// The message is longer than [`MAX_MSG_SIZE`], or an ATOMIC WRITE is not 8 bytes.
    BadLength,
    /// A UD message larger than the MTU. IBA C10-93.1.1: no packet is emitted and no error
    /// raised; rxe completes the WQE successfully and still consumes one PSN.
    UdTooLong,
    /// A retry was asked to resume at a PSN outside the WQE.
    PsnOutOfRange,
}

impl ReqError {
    /// The completion status of a WQE failing this way ([`WcStatus::Success`] for
    /// [`ReqError::UdTooLong`]).
    pub const fn wc_status(self) -> WcStatus {
        match self {
            ReqError::Unsupported | ReqError::PsnOutOfRange => WcStatus::LocQpOpErr,
            ReqError::BadLength => WcStatus::LocLenErr,
            ReqError::UdTooLong => WcStatus::Success,
        }
    }
}

/// The opcode of a packet of a `wr` message on a `qp` QP: `first` and `last` say whether the
/// packet starts and ends the message (both for single-packet messages).
pub const fn packet_opcode(
    qp: QpType,
    wr: WrOpcode,
    first: bool,
    last: bool,
) -> Result<Opcode, ReqError> {
    use Opcode as O;
    let rc = matches!(qp, QpType::Rc);
    let single = first && last;
    Ok(match (qp, wr) {
        (QpType::Ud | QpType::Gsi, WrOpcode::Send) if single => O::UdSendOnly,
        (QpType::Ud | QpType::Gsi, WrOpcode::SendImm) if single => O::UdSendOnlyImm,
        (QpType::Rc | QpType::Uc, WrOpcode::Send | WrOpcode::SendImm | WrOpcode::SendInv) => {
            let imm = matches!(wr, WrOpcode::SendImm);
            let inv = matches!(wr, WrOpcode::SendInv);
            if inv && !rc {
                return Err(ReqError::Unsupported);
            }
            match (first, last) {
                (true, false) if rc => O::RcSendFirst,
                (true, false) => O::UcSendFirst,
                (false, false) if rc => O::RcSendMiddle,
                (false, false) => O::UcSendMiddle,
                (true, true) if inv => O::RcSendOnlyInv,
                (false, true) if inv => O::RcSendLastInv,
                (true, true) if imm && rc => O::RcSendOnlyImm,
                (true, true) if imm => O::UcSendOnlyImm,
                (false, true) if imm && rc => O::RcSendLastImm,
                (false, true) if imm => O::UcSendLastImm,
                (true, true) if rc => O::RcSendOnly,
                (true, true) => O::UcSendOnly,
                (false, true) if rc => O::RcSendLast,
                (false, true) => O::UcSendLast,
            }
        }
        (QpType::Rc | QpType::Uc, WrOpcode::RdmaWrite | WrOpcode::RdmaWriteImm) => {
            let imm = matches!(wr, WrOpcode::RdmaWriteImm);
            match (first, last) {
                (true, false) if rc => O::RcWriteFirst,
                (true, false) => O::UcWriteFirst,
                (false, false) if rc => O::RcWriteMiddle,
                (false, false) => O::UcWriteMiddle,
                (true, true) if imm && rc => O::RcWriteOnlyImm,
                (true, true) if imm => O::UcWriteOnlyImm,
                (false, true) if imm && rc => O::RcWriteLastImm,
                (false, true) if imm => O::UcWriteLastImm,
                (true, true) if rc => O::RcWriteOnly,
                (true, true) => O::UcWriteOnly,
                (false, true) if rc => O::RcWriteLast,
                (false, true) => O::UcWriteLast,
            }
        }
        (QpType::Rc, WrOpcode::RdmaRead) if single => O::RcReadRequest,
        (QpType::Rc, WrOpcode::AtomicCmpSwp) if single => O::RcCompareSwap,
        (QpType::Rc, WrOpcode::AtomicFetchAdd) if single => O::RcFetchAdd,
        (QpType::Rc, WrOpcode::Flush) if single => O::RcFlush,
        (QpType::Rc, WrOpcode::AtomicWrite) if single => O::RcAtomicWrite,
        _ => return Err(ReqError::Unsupported),
    })
}

/// Number of packets (and PSNs) a message of `len` bytes takes at path MTU `mtu`: at least
/// one, even for an empty message.
pub const fn packets_for(len: u32, mtu: u32) -> u32 {
    if mtu == 0 || len == 0 {
        1
    } else {
        len.div_ceil(mtu)
    }
}

/// One packet of a message, as the requester sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Segment {
    /// BTH opcode.
    pub opcode: Opcode,
    /// BTH PSN.
    pub psn: Psn,
    /// Byte offset in the message where this packet's payload starts (for an RDMA READ
    /// request: where the requested range starts, to add to the remote and local addresses).
    pub offset: u32,
    /// Payload bytes in this packet (0 for READ requests, atomics and FLUSH).
    pub payload_len: u32,
    /// Message bytes from `offset` to the end: the RETH DMA length of the packets that carry
    /// one.
    pub remaining: u32,
}

/// Cuts one send WQE into packets. Iterating yields every packet still to send; after a
/// retry, [`Segmenter::resume_at`] restarts at the PSN the responder expects.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Segmenter {
    qp: QpType,
    wr: WrOpcode,
    mtu: u32,
    len: u32,
    first_psn: Psn,
    /// Packets on the wire (1 for single-request operations).
    packets: u32,
    /// PSNs the WQE consumes.
    span: u32,
    /// Index (in PSNs from `first_psn`) of the next packet.
    next: u32,
    done: bool,
    /// The opcode of a packet that starts and ends the message.
    only: Opcode,
}

impl Segmenter {
    /// Prepares the packets of a `wr` message of `len` bytes on a `qp` QP with path MTU
    /// `mtu` (the port MTU for UD), starting at `first_psn`.
    ///
    /// `len` is the payload length for SEND, RDMA WRITE and ATOMIC WRITE (which must be 8),
    /// the requested length for RDMA READ, the range length for FLUSH, and ignored for the
    /// atomics.
    pub fn new(
        qp: QpType,
        wr: WrOpcode,
        len: u32,
        mtu: Mtu,
        first_psn: Psn,
    ) -> Result<Segmenter, ReqError> {
        // Validates the operation for the QP type.
        let only = packet_opcode(qp, wr, true, true)?;
        let mtu = mtu.bytes();
        if len > MAX_MSG_SIZE {
            return Err(ReqError::BadLength);
        }
        let (len, packets, span) = match only.operation() {
            Operation::Send | Operation::Write => {
                if qp.is_datagram() && len > mtu {
                    return Err(ReqError::UdTooLong);
                }
                let n = packets_for(len, mtu);
                (len, n, n)
            }
            Operation::ReadRequest => (len, 1, packets_for(len, mtu)),
            Operation::AtomicWrite => {
                if len != ATOMIC_WRITE_LEN as u32 {
                    return Err(ReqError::BadLength);
                }
                (len, 1, 1)
            }
            Operation::Flush => (len, 1, 1),
            _ => (0, 1, 1),
        };
        Ok(Segmenter {
            qp,
            wr,
            mtu,
            len,
            first_psn,
            packets,
            span,
            next: 0,
            done: false,
            only,
        })
    }

    /// PSN of the first packet.
    pub const fn first_psn(&self) -> Psn {
        self.first_psn
    }

    /// PSN of the last packet (for an RDMA READ, of the last response packet).
    pub const fn last_psn(&self) -> Psn {
        self.first_psn.wrapping_add(self.span.saturating_sub(1))
    }

    /// Packets still to send.
    pub const fn packets_left(&self) -> u32 {
        if self.done {
            0
        } else {
            self.packets.saturating_sub(self.next)
        }
    }

    /// The path MTU it cuts by, in bytes.
    pub const fn mtu(&self) -> u32 {
        self.mtu
    }

    /// PSNs the WQE consumes: the next WQE starts at `first_psn + psn_span`.
    pub const fn psn_span(&self) -> u32 {
        self.span
    }

    /// Restarts segmentation at `psn`, the PSN the responder expects after a NAK or a
    /// timeout. A SEND or WRITE continues with the packet of that PSN (a *Middle* or *Last*
    /// packet when it is not the first); an RDMA READ sends a new request for the data not
    /// yet received, from the corresponding offset.
    pub fn resume_at(&mut self, psn: Psn) -> Result<(), ReqError> {
        let k = psn.distance_from(self.first_psn);
        if k >= self.span {
            return Err(ReqError::PsnOutOfRange);
        }
        self.next = k;
        self.done = false;
        Ok(())
    }
}

impl Segmenter {
    /// The next packets of a SEND or RDMA WRITE, at most `max_k` of them (and
    /// [`MAX_BURST`], and [`MAX_BURST_PAYLOAD`] bytes), as one loopback burst
    /// ([`super::burst`]); as [`Iterator::next`] (a burst of one packet) when no more
    /// than one can go. The last packet of an RDMA WRITE with immediate data goes alone:
    /// it takes a receive WQE, and the packets before it land whether or not it finds one.
    pub fn next_burst(&mut self, max_k: u32) -> Option<Burst> {
        if self.done {
            return None;
        }
        let at = self.next;
        let left = self.packets.saturating_sub(at);
        let fit = (MAX_BURST_PAYLOAD as u32)
            .checked_div(self.mtu)
            .unwrap_or(0);
        let mut k = max_k.min(left).min(MAX_BURST).min(fit);
        if k == left && matches!(self.wr, WrOpcode::RdmaWriteImm) {
            k = k.saturating_sub(1);
        }
        if k < 2 {
            return self.next().map(|seg| Burst { seg, k: 1 });
        }
        let last = k == left;
        let opcode = packet_opcode(self.qp, self.wr, at == 0, last).ok()?;
        if !matches!(opcode.operation(), Operation::Send | Operation::Write) {
            return self.next().map(|seg| Burst { seg, k: 1 });
        }
        let offset = at.saturating_mul(self.mtu).min(self.len);
        let remaining = self.len.saturating_sub(offset);
        let seg = Segment {
            opcode,
            psn: self.first_psn.wrapping_add(at),
            offset,
            payload_len: remaining.min(k.saturating_mul(self.mtu)),
            remaining,
        };
        if last {
            self.done = true;
        } else {
            self.next = at.saturating_add(k);
        }
        Some(Burst { seg, k })
    }
}

impl Iterator for Segmenter {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        if self.done {
            return None;
        }
        let k = self.next;
        let offset = k.saturating_mul(self.mtu).min(self.len);
        let remaining = self.len.saturating_sub(offset);
        let psn = self.first_psn.wrapping_add(k);
        let (first, last) = if self.packets > 1 {
            (k == 0, k.saturating_add(1) >= self.packets)
        } else {
            (true, true)
        };
        let opcode = if first && last {
            self.only
        } else {
            packet_opcode(self.qp, self.wr, first, last).ok()?
        };
        let payload_len = if opcode.has_payload() {
            remaining.min(self.mtu)
        } else {
            0
        };
        if last {
            self.done = true;
        } else {
            self.next = k.saturating_add(1);
        }
        Some(Segment {
            opcode,
            psn,
            offset,
            payload_len,
            remaining,
        })
    }
}

/// Sets the BTH AckReq bit on RC packets: on the last packet of every message, and on at
/// least one packet in every [`MAX_PKT_PER_ACK`] + 1 of a long message so the responder
/// acknowledges progress. UC and UD never request acknowledges; QP1 (GSI) packets carry the
/// bit as rxe sends them (it is ignored by UD responders).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AckReqPolicy {
    unrequested: u32,
}

impl AckReqPolicy {
    /// A policy with no packet sent yet.
    pub const fn new() -> Self {
        AckReqPolicy { unrequested: 0 }
    }

    /// Whether the packet about to be sent with `opcode` on a `qp` QP requests an ACK.
    pub fn ack_req(&mut self, qp: QpType, opcode: Opcode) -> bool {
        if matches!(qp, QpType::Uc | QpType::Ud) {
            return false;
        }
        if opcode.is_end() || self.unrequested >= MAX_PKT_PER_ACK {
            self.unrequested = 0;
            true
        } else {
            self.unrequested += 1;
            false
        }
    }
}

impl AckReqPolicy {
    /// Whether a loopback burst ([`super::burst`]) requests an ACK: always on RC. The
    /// window of [`MAX_UNACKED_PSNS`] holds about two bursts, so each one's acknowledge
    /// lets the next go.
    pub const fn burst_ack_req(qp: QpType) -> bool {
        matches!(qp, QpType::Rc)
    }

    /// A burst went (and asked for an ACK): the packets without a request count again
    /// from it.
    pub fn burst_sent(&mut self) {
        self.unrequested = 0;
    }
}

/// The BTH SE bit: set when the work request asked for a solicited event, on the last packet
/// of a SEND or of an RDMA WRITE with immediate data.
pub const fn solicited(opcode: Opcode, wr_solicited: bool) -> bool {
    wr_solicited
        && opcode.is_end()
        && (matches!(opcode.operation(), Operation::Send)
            || (matches!(opcode.operation(), Operation::Write) && opcode.has_immediate()))
}

/// True while an RC requester may send `next_psn` given the oldest unacknowledged PSN: at
/// most [`MAX_UNACKED_PSNS`] PSNs ahead of it.
pub const fn psn_window_open(next_psn: Psn, oldest_unacked: Psn) -> bool {
    !next_psn.is_after(oldest_unacked.wrapping_add(MAX_UNACKED_PSNS))
}

/// How many PSNs an RC requester may still send from `next_psn` ([`psn_window_open`] for
/// each of them): 0 when the window is closed.
pub const fn window_room(next_psn: Psn, oldest_unacked: Psn) -> u32 {
    let limit = oldest_unacked.wrapping_add(MAX_UNACKED_PSNS);
    if next_psn.is_after(limit) {
        0
    } else {
        let room = limit.distance_from(next_psn).saturating_add(1);
        if room > MAX_UNACKED_PSNS + 1 {
            MAX_UNACKED_PSNS + 1
        } else {
            room
        }
    }
}

/// What the requester knows when it looks at the next send WQE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GateInput {
    /// QP type.
    pub qp: QpType,
    /// The WQE's operation.
    pub wr: WrOpcode,
    /// The WQE has `IB_SEND_FENCE`.
    pub fence: bool,
    /// Some earlier WQE of the send queue is not completed yet.
    pub earlier_outstanding: bool,
    /// RDMA READ / atomic / ATOMIC WRITE operations in flight (holding a slot).
    pub rd_atomic_in_flight: u32,
    /// The QP's `max_rd_atomic` (initiator depth).
    pub max_rd_atomic: u32,
    /// This WQE already holds a slot (a retried or partially sent WQE).
    pub holds_rd_atomic: bool,
    /// PSN the next packet would carry.
    pub next_psn: Psn,
    /// Oldest PSN not acknowledged yet.
    pub oldest_unacked: Psn,
}

/// Whether the requester may go on with a WQE, or what it waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Gate {
    /// Go on: execute the local operation or send the next packet (taking a read/atomic slot
    /// first when the operation needs one and none is held).
    Proceed,
    /// Wait until earlier operations complete (fence, or LOCAL INVALIDATE).
    WaitFence,
    /// Wait for acknowledges: the unacknowledged-PSN window is full (RC).
    WaitPsnWindow,
    /// Wait for a read/atomic slot: `max_rd_atomic` operations are in flight.
    WaitRdAtomic,
}

/// Decides whether the requester may proceed with a WQE.
///
/// - IBA 10.8.3.3: a fenced WQE waits until every earlier RDMA READ and atomic completed.
/// - IBA 10.6.5.1 (local invalidate fence): LOCAL INVALIDATE waits until every earlier WQE
///   completed (mandatory in rxe).
/// - RC sends at most [`MAX_UNACKED_PSNS`] PSNs ahead of the oldest unacknowledged one.
/// - RDMA READ, atomics and ATOMIC WRITE need one of the `max_rd_atomic` slots.
pub const fn gate(i: &GateInput) -> Gate {
    if matches!(i.wr, WrOpcode::LocalInv) && i.earlier_outstanding {
        return Gate::WaitFence;
    }
    if i.fence && i.rd_atomic_in_flight > 0 {
        return Gate::WaitFence;
    }
    if i.wr.is_local() {
        return Gate::Proceed;
    }
    if matches!(i.qp, QpType::Rc) && !psn_window_open(i.next_psn, i.oldest_unacked) {
        return Gate::WaitPsnWindow;
    }
    if i.wr.uses_rd_atomic() && !i.holds_rd_atomic && i.rd_atomic_in_flight >= i.max_rd_atomic {
        return Gate::WaitRdAtomic;
    }
    Gate::Proceed
}
