// SPDX-License-Identifier: GPL-2.0

//! Responder decisions (IBA Vol 1 ch. 9): how an incoming request is classified, checked
//! and answered.
//!
//! A request goes through, in order: [`check_psn`] (new, duplicate or out of sequence),
//! [`check_op_seq`] (does the opcode continue the message in progress),
//! [`check_access`] (is the operation enabled on the QP), [`check_resource`] (receive WQE,
//! read/atomic resources), [`check_length`] (payload sizes against the path MTU) and, for RDMA
//! operations, the memory checks ([`check_range`], [`check_write_payload`],
//! [`check_atomic_write`], [`check_atomic_alignment`]). A failed check gives a [`RespError`];
//! [`error_action`] tells what that means for the QP type: the NAK syndrome to send, the
//! completion status, whether the QP goes to the error state, whether the message is dropped.
//! [`reply_kind`] decides the acknowledge of a request that executed; [`ReadReply`] cuts an
//! RDMA READ response into packets; [`duplicate_action`], [`find_resource`] and
//! [`read_replay`] handle retried requests.

use super::aeth::{NakCode, Syndrome, MSN_MASK};
use super::atomic::ATOMIC_ALIGN;
use super::burst::{MAX_BURST, MAX_READ_BURST_PAYLOAD};
use super::flush::{Feth, ATOMIC_WRITE_LEN, PLT_GLOBAL, PLT_PERSISTENT};
use super::grh::UD_GRH_LEN;
use super::mtu::Mtu;
use super::opcode::{Opcode, Operation, Position};
use super::packet::pad_len;
use super::psn::Psn;
use super::requester::{packets_for, MAX_MSG_SIZE};
use super::reth::Reth;
use super::verbs::{Access, QpType, WcOpcode, WcStatus};

/// Sequence state the responder keeps between packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SeqState {
    /// RC: a PSN sequence error NAK was sent and no in-sequence request has arrived since.
    pub psn_nak_sent: bool,
    /// UC/UD: the message in progress is being dropped up to the next First/Only packet.
    pub drop_msg: bool,
}

/// Outcome of the PSN check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PsnVerdict {
    /// Process the request.
    Process,
    /// RC: a request already executed (PSN before the expected one): see
    /// [`duplicate_action`].
    Duplicate,
    /// RC: the PSN is ahead of the expected one: send a PSN sequence error NAK carrying the
    /// expected PSN and drop the packet (IBA class B).
    NakSequence,
    /// Drop the packet silently.
    Drop,
}

/// Classifies the PSN of a request against the `expected` PSN, with 24-bit wrap.
///
/// RC: a PSN ahead of the expected one is NAKed once; until an in-sequence request arrives
/// further ones are dropped silently. UC: a lost packet drops the rest of the message; a
/// First or Only packet starts a new message whatever its PSN. UD: no sequence checking.
pub fn check_psn(
    qp: QpType,
    opcode: Opcode,
    psn: Psn,
    expected: Psn,
    st: &mut SeqState,
) -> PsnVerdict {
    let diff = psn.diff(expected);
    match qp {
        QpType::Rc => {
            if diff > 0 {
                if st.psn_nak_sent {
                    PsnVerdict::Drop
                } else {
                    st.psn_nak_sent = true;
                    PsnVerdict::NakSequence
                }
            } else if diff < 0 {
                PsnVerdict::Duplicate
            } else {
                st.psn_nak_sent = false;
                PsnVerdict::Process
            }
        }
        QpType::Uc => {
            if st.drop_msg || diff != 0 {
                if opcode.is_start() {
                    st.drop_msg = false;
                    PsnVerdict::Process
                } else {
                    st.drop_msg = true;
                    PsnVerdict::Drop
                }
            } else {
                PsnVerdict::Process
            }
        }
        QpType::Ud | QpType::Gsi => PsnVerdict::Process,
    }
}

/// Why the responder rejects a request (rxe's `RESPST_ERR_*` conditions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RespError {
    /// A Middle or Last packet with no message in progress.
    MissingFirst,
    /// A message in progress was not continued by a Middle or Last packet of its operation.
    MissingLast,
    /// The operation is not enabled on the QP (access flags).
    NotPermitted,
    /// An RDMA READ, atomic or ATOMIC WRITE while the QP allows none (`max_dest_rd_atomic`
    /// is 0).
    TooManyRdAtomic,
    /// No receive WQE is posted (receiver not ready).
    Rnr,
    /// The R_Key, the access rights or the address range do not check out.
    RkeyViolation,
    /// A length does not check out (payload against MTU or receive buffer, DMA length).
    Length,
    /// The target of an atomic is not 8-byte aligned.
    MisalignedAtomic,
    /// The receive WQE is malformed (too many SGEs, bad local key).
    MalformedWqe,
    /// SEND with invalidate named an R_Key that cannot be invalidated. RC answers with an
    /// Invalid Request NAK so the requester's WQE fails too (rxe only completes the receive
    /// in error and moves its QP to the error state, acknowledging the SEND normally).
    InvalidateRkey,
    /// The completion queue overflowed.
    CqOverflow,
}

/// What to do about a [`RespError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ErrorAction {
    /// RC: send an acknowledge with this (NAK) syndrome and the request's PSN.
    pub nak: Option<Syndrome>,
    /// Complete the receive WQE held for the message (if any) with this status.
    pub complete: Option<WcStatus>,
    /// Move the QP to the error state afterwards.
    pub qp_error: bool,
    /// UC/UD: forget the message in progress and drop packets up to the next First/Only
    /// packet ([`SeqState::drop_msg`]).
    pub drop_msg: bool,
    /// UC or UD without SRQ: rewind the receive WQE held for the broken message so the
    /// next message uses it again, from its start (IBA class D1).
    pub reuse_wqe: bool,
}

/// The consequences of `err` on a QP of type `qp` (`srq`: its receive WQEs come from a
/// shared receive queue), given the QP's `min_rnr_timer` code for RNR NAKs.
///
/// RC errors are IBA class B (RNR: NAK, no completion) or class C/A (NAK, complete in error,
/// QP to error). UC and UD never NAK: the message is dropped (class D), except that a WQE
/// already taken from an SRQ is completed in error (class E).
pub fn error_action(qp: QpType, srq: bool, err: RespError, min_rnr_timer: u8) -> ErrorAction {
    let rc = matches!(qp, QpType::Rc);
    let none = ErrorAction {
        nak: None,
        complete: None,
        qp_error: false,
        drop_msg: false,
        reuse_wqe: false,
    };
    let fatal = |code: NakCode, status: WcStatus| ErrorAction {
        nak: Some(Syndrome::Nak(code)),
        complete: Some(status),
        qp_error: true,
        ..none
    };
    let drop = ErrorAction {
        drop_msg: true,
        ..none
    };
    match err {
        RespError::MissingFirst
        | RespError::NotPermitted
        | RespError::TooManyRdAtomic
        | RespError::MisalignedAtomic
            if rc =>
        {
            fatal(NakCode::InvalidRequest, WcStatus::RemInvReqErr)
        }
        RespError::MissingFirst
        | RespError::NotPermitted
        | RespError::TooManyRdAtomic
        | RespError::MisalignedAtomic => drop,
        RespError::MissingLast | RespError::Length if rc => {
            fatal(NakCode::InvalidRequest, WcStatus::RemInvReqErr)
        }
        // UC and UD: the message is given up and dropped to its end (classes D1 and E): a
        // receive WQE it took from the RQ serves the next message from its start, one from
        // an SRQ completes in error.
        RespError::MissingLast | RespError::Length => ErrorAction {
            drop_msg: true,
            ..abandon_message(srq)
        },
        RespError::Rnr if rc => ErrorAction {
            nak: Some(Syndrome::RnrNak {
                timer: min_rnr_timer & 0x1f,
            }),
            ..none
        },
        RespError::Rnr => drop,
        RespError::RkeyViolation if rc => fatal(NakCode::RemoteAccessError, WcStatus::RemAccessErr),
        RespError::RkeyViolation if srq => ErrorAction {
            complete: Some(WcStatus::RemAccessErr),
            ..drop
        },
        RespError::RkeyViolation => drop,
        RespError::MalformedWqe => ErrorAction {
            nak: if rc {
                Some(Syndrome::Nak(NakCode::RemoteOperationalError))
            } else {
                None
            },
            complete: Some(WcStatus::LocQpOpErr),
            qp_error: true,
            ..none
        },
        RespError::InvalidateRkey => ErrorAction {
            nak: if rc {
                Some(Syndrome::Nak(NakCode::InvalidRequest))
            } else {
                None
            },
            complete: Some(WcStatus::RemInvReqErr),
            qp_error: true,
            ..none
        },
        RespError::CqOverflow => ErrorAction {
            qp_error: true,
            ..none
        },
    }
}

/// UC: how to give up a message in progress (IBA class D1, or E with an SRQ): a receive
/// WQE taken from the QP's receive queue is rewound for the next message; one taken from an
/// SRQ cannot go back and is completed with [`WcStatus::RemInvReqErr`].
pub const fn abandon_message(srq: bool) -> ErrorAction {
    ErrorAction {
        nak: None,
        complete: if srq {
            Some(WcStatus::RemInvReqErr)
        } else {
            None
        },
        qp_error: false,
        drop_msg: false,
        reuse_wqe: !srq,
    }
}

/// True when a message of `prev`'s operation is in progress after a packet `prev`.
const fn in_message(prev: Option<Opcode>) -> Option<Operation> {
    match prev {
        Some(op) if matches!(op.position(), Position::First | Position::Middle) => {
            Some(op.operation())
        }
        _ => None,
    }
}

/// Outcome of the opcode sequence check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpSeq {
    /// The packet continues the message in progress, or starts one when none is.
    Valid,
    /// UC: a First or Only packet arrived while another message was in progress. Give up
    /// the old message ([`abandon_message`]), then process this packet as the start of a
    /// new one. (rxe drops this packet too, and when it holds no receive WQE for the old
    /// message, as for an RDMA WRITE without immediate data, it keeps the old opcode and
    /// rejects every later First/Only packet the same way; rrxe starts over instead.)
    AbandonAndStart,
    /// The packet is out of sequence.
    Invalid(RespError),
}

/// Checks that `cur` may follow `prev`, the opcode of the last request packet processed
/// (`None` at the start, or after an RDMA READ, which resets it).
///
/// While a SEND or RDMA WRITE is in progress (last packet First or Middle) only Middle or Last
/// packets of the same operation may follow; otherwise Middle and Last packets are out of
/// place.
pub fn check_op_seq(qp: QpType, prev: Option<Opcode>, cur: Opcode) -> OpSeq {
    if qp.is_datagram() {
        return OpSeq::Valid;
    }
    let continues = matches!(cur.position(), Position::Middle | Position::Last);
    match in_message(prev) {
        Some(op) => {
            if continues && op == cur.operation() {
                OpSeq::Valid
            } else if matches!(qp, QpType::Uc) && cur.is_start() {
                OpSeq::AbandonAndStart
            } else {
                OpSeq::Invalid(RespError::MissingLast)
            }
        }
        None if continues => OpSeq::Invalid(RespError::MissingFirst),
        None => OpSeq::Valid,
    }
}

/// The access rights a FLUSH with FETH `feth` needs, of the QP and of the memory it
/// names: the flush rights of its placement type (as rxe's `check_rkey`).
pub const fn flush_access(feth: Option<Feth>) -> Access {
    let plt = match feth {
        Some(f) => f.placement,
        None => 0,
    };
    let mut a = Access(0);
    if plt & PLT_GLOBAL != 0 {
        a = a.with(Access::FLUSH_GLOBAL);
    }
    if plt & PLT_PERSISTENT != 0 {
        a = a.with(Access::FLUSH_PERSISTENT);
    }
    a
}

/// Checks that the QP's access flags allow the operation (`feth`: the FETH of a FLUSH).
///
/// RC: RDMA READ needs remote read, RDMA WRITE and ATOMIC WRITE remote write, the atomics
/// remote atomic, FLUSH the flush rights of its placement type. UC: RDMA WRITE needs remote
/// write. UD: nothing.
pub const fn check_access(
    qp: QpType,
    opcode: Opcode,
    qp_access: Access,
    feth: Option<Feth>,
) -> Result<(), RespError> {
    let needed = match (qp, opcode.operation()) {
        (QpType::Rc, Operation::ReadRequest) => Access::REMOTE_READ,
        (QpType::Rc | QpType::Uc, Operation::Write) | (QpType::Rc, Operation::AtomicWrite) => {
            Access::REMOTE_WRITE
        }
        (QpType::Rc, Operation::CompareSwap | Operation::FetchAdd) => Access::REMOTE_ATOMIC,
        (QpType::Rc, Operation::Flush) => flush_access(feth),
        _ => Access(0),
    };
    if qp_access.allows(needed) {
        Ok(())
    } else {
        Err(RespError::NotPermitted)
    }
}

/// Checks the resources a request needs: a read/atomic resource slot for RDMA READ, atomics
/// and ATOMIC WRITE (the QP must allow at least one: `max_dest_rd_atomic`), and a receive
/// WQE for packets that consume one (`recv_wqe_available`).
pub const fn check_resource(
    opcode: Opcode,
    max_dest_rd_atomic: u32,
    recv_wqe_available: bool,
) -> Result<(), RespError> {
    let rd_atomic = matches!(
        opcode.operation(),
        Operation::ReadRequest
            | Operation::CompareSwap
            | Operation::FetchAdd
            | Operation::AtomicWrite
    );
    if rd_atomic && max_dest_rd_atomic == 0 {
        Err(RespError::TooManyRdAtomic)
    } else if opcode.consumes_recv_wqe() && !recv_wqe_available {
        Err(RespError::Rnr)
    } else {
        Ok(())
    }
}

/// Checks lengths (IBA C9-92 to C9-94).
///
/// - RC/UC packets with payload: an Only packet carries at most `mtu` bytes, First and
///   Middle packets exactly `mtu`, Last packets 1 to `mtu`.
/// - UD: the payload plus the 40-byte network header must fit the receive buffer
///   (`ud_recv_len`, the sum of its SGE lengths).
/// - A RETH DMA length may not exceed 2^31.
pub const fn check_length(
    qp: QpType,
    opcode: Opcode,
    payload_len: u32,
    mtu: Mtu,
    reth: Option<Reth>,
    ud_recv_len: u64,
) -> Result<(), RespError> {
    let mtu = mtu.bytes();
    if qp.is_datagram() {
        if payload_len as u64 + UD_GRH_LEN > ud_recv_len {
            return Err(RespError::Length);
        }
    } else if opcode.has_payload() {
        let ok = match opcode.position() {
            Position::Only => payload_len <= mtu,
            Position::First | Position::Middle => payload_len == mtu,
            Position::Last => payload_len != 0 && payload_len <= mtu,
        };
        if !ok {
            return Err(RespError::Length);
        }
    }
    match reth {
        Some(r) if r.dma_len > MAX_MSG_SIZE => Err(RespError::Length),
        _ => Ok(()),
    }
}

/// Checks that `[va, va + len)` lies within a memory region covering `[start, start +
/// mr_len)`, without overflow.
pub const fn check_range(va: u64, len: u64, start: u64, mr_len: u64) -> Result<(), RespError> {
    let (end, o1) = va.overflowing_add(len);
    let (mr_end, o2) = start.overflowing_add(mr_len);
    if o1 || o2 || va < start || end > mr_end {
        Err(RespError::RkeyViolation)
    } else {
        Ok(())
    }
}

/// Checks the payload of an RDMA WRITE packet given `resid`, the bytes of the message not
/// written yet (the RETH length at the first packet): while more than one MTU remains the
/// packet carries exactly `mtu` bytes and no pad, otherwise exactly `resid` bytes and the pad
/// that rounds them to four.
pub const fn check_write_payload(
    resid: u32,
    payload_len: u32,
    pad: u8,
    mtu: Mtu,
) -> Result<(), RespError> {
    let mtu = mtu.bytes();
    let ok = if resid > mtu {
        payload_len == mtu && pad == 0
    } else {
        payload_len == resid && pad as usize == pad_len(resid as usize)
    };
    if ok {
        Ok(())
    } else {
        Err(RespError::Length)
    }
}

/// Checks an ATOMIC WRITE: the RETH length and the payload are 8 bytes, with no pad.
pub const fn check_atomic_write(dma_len: u32, payload_len: u32, pad: u8) -> Result<(), RespError> {
    if dma_len as usize == ATOMIC_WRITE_LEN && payload_len as usize == ATOMIC_WRITE_LEN && pad == 0
    {
        Ok(())
    } else {
        Err(RespError::Length)
    }
}

/// Checks that the target of an atomic operation is 8-byte aligned.
pub const fn check_atomic_alignment(va: u64) -> Result<(), RespError> {
    if va & (ATOMIC_ALIGN - 1) == 0 {
        Ok(())
    } else {
        Err(RespError::MisalignedAtomic)
    }
}

/// How an RC responder answers a request it executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reply {
    /// Nothing now: the acknowledge is coalesced into a later one.
    None,
    /// An Acknowledge (ACK syndrome) with the request's PSN, at once: a packet that does
    /// not end its message asked for it, as a requester does when about half its window
    /// of unacknowledged PSNs is out (rrxe's once in [`super::requester::MAX_PKT_PER_ACK`]
    /// packets and one more, rxe's once in 66). Held back, it stalls the requester, and a
    /// responder slower than the requester's timeout has the window sent again.
    Ack,
    /// An Acknowledge with the request's PSN, which may wait for the end of the responder's
    /// pass and cover later requests too: the last packet of a message asked for it.
    CoalescedAck,
    /// An Atomic Acknowledge with the original data.
    AtomicAck,
    /// A zero-length RDMA READ Response Only with an ACK AETH (FLUSH and ATOMIC WRITE).
    ReadResponseAck,
    /// RDMA READ responses (see [`ReadReply`]).
    ReadResponse,
}

/// The reply to an executed request of a `qp` QP whose BTH had AckReq = `ack_req`.
///
/// Only RC acknowledges. Atomics, FLUSH, ATOMIC WRITE and RDMA READ are always answered;
/// SEND and RDMA WRITE packets only when they request it, so a responder coalesces the
/// acknowledges of packets that do not (an acknowledge covers every earlier PSN), and of
/// the last packets of messages ([`Reply::CoalescedAck`]), but not of a packet that asks
/// before the end of its message ([`Reply::Ack`]).
pub const fn reply_kind(qp: QpType, opcode: Opcode, ack_req: bool) -> Reply {
    if !matches!(qp, QpType::Rc) {
        return Reply::None;
    }
    match opcode.operation() {
        Operation::ReadRequest => Reply::ReadResponse,
        Operation::CompareSwap | Operation::FetchAdd => Reply::AtomicAck,
        Operation::Flush | Operation::AtomicWrite => Reply::ReadResponseAck,
        _ if ack_req && opcode.is_end() => Reply::CoalescedAck,
        _ if ack_req => Reply::Ack,
        _ => Reply::None,
    }
}

/// The message sequence number after `msn`, which the responder advances when it completes
/// a message (the last packet of a SEND or RDMA WRITE, an RDMA READ request, an atomic, a
/// FLUSH, an ATOMIC WRITE).
pub const fn next_msn(msn: u32) -> u32 {
    msn.wrapping_add(1) & MSN_MASK
}

/// The work completion opcode of a receive completed by `opcode`.
pub const fn recv_wc_opcode(opcode: Opcode) -> WcOpcode {
    if matches!(opcode.operation(), Operation::Write) && opcode.has_immediate() {
        WcOpcode::RecvRdmaWithImm
    } else {
        WcOpcode::Recv
    }
}

/// What to do with a duplicate request (PSN before the expected one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DuplicateAction {
    /// SEND or RDMA WRITE: do not execute again; acknowledge again with this PSN, the last
    /// one acknowledged (IBA C9-105).
    Reack(Psn),
    /// RDMA READ: find the resource ([`find_resource`]), validate ([`read_replay`]) and
    /// send the responses again.
    ReplayRead,
    /// Atomic, FLUSH or ATOMIC WRITE: find the resource and send its saved reply again
    /// without executing the operation a second time.
    ReplayReply,
}

/// The handling of a duplicate `opcode` request; `expected` is the PSN after the last
/// SEND/WRITE request executed.
pub const fn duplicate_action(opcode: Opcode, expected: Psn) -> DuplicateAction {
    match opcode.operation() {
        Operation::ReadRequest => DuplicateAction::ReplayRead,
        Operation::CompareSwap
        | Operation::FetchAdd
        | Operation::Flush
        | Operation::AtomicWrite => DuplicateAction::ReplayReply,
        _ => DuplicateAction::Reack(expected.prev()),
    }
}

/// The index of the read/atomic resource whose PSN range `[first, last]` holds `psn`
/// (`None` entries are free slots). A duplicate with no resource is dropped (class D).
pub fn find_resource<I>(resources: I, psn: Psn) -> Option<usize>
where
    I: IntoIterator<Item = Option<(Psn, Psn)>>,
{
    resources
        .into_iter()
        .position(|r| matches!(r, Some((first, last)) if psn.within(first, last)))
}

/// A saved RDMA READ: what the original request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReadResource {
    /// PSN of the original request.
    pub first_psn: Psn,
    /// Original remote address.
    pub va: u64,
    /// Original length.
    pub len: u32,
    /// Original R_Key.
    pub rkey: u32,
}

/// How to replay an RDMA READ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReadReplay {
    /// PSN of the first response packet.
    pub psn: Psn,
    /// Remote address to read from.
    pub va: u64,
    /// Bytes to send.
    pub len: u32,
    /// The retry starts at the original first PSN: answer with First/Only; otherwise the
    /// responses continue the original sequence with Middle/Last packets (as rxe does).
    pub from_first: bool,
}

/// Validates a duplicate RDMA READ request (`psn`, `reth`) against the saved resource: it
/// must ask for the same R_Key and a sub-range of the original. `None`: drop it.
pub const fn read_replay(res: &ReadResource, psn: Psn, reth: &Reth) -> Option<ReadReplay> {
    let (end, o1) = reth.va.overflowing_add(reth.dma_len as u64);
    let (res_end, o2) = res.va.overflowing_add(res.len as u64);
    if o1 || o2 || reth.va < res.va || end > res_end || reth.rkey != res.rkey {
        return None;
    }
    Some(ReadReplay {
        psn,
        va: reth.va,
        len: reth.dma_len,
        from_first: psn.value() == res.first_psn.value(),
    })
}

/// A replay in progress: the responses to a duplicate RDMA READ request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Replay {
    /// First PSN of the responses the replay sends.
    pub first: Psn,
    /// Last PSN of the responses the replay sends.
    pub last: Psn,
    /// Last PSN of the read saved (its first is at or before `first`).
    pub saved_last: Psn,
}

impl Replay {
    /// Whether a later duplicate READ request for the responses `psn` to `last` supersedes
    /// the replay. A requester asks from the first PSN it misses, so an ask that starts no
    /// earlier than the replay and reaches at least its end asks for all the replay has
    /// left that the requester still needs: the rest of the replay is stale. An ask that
    /// starts earlier is older than the one replayed (reordered), and a narrower one (a
    /// missing range a selective requester asks for while responses stream in) leaves
    /// responses the requester needs to the replay; both wait their turn. Beyond the read
    /// saved, an ask is not for this replay at all.
    pub const fn superseded_by(&self, psn: Psn, last: Psn) -> bool {
        psn.within(self.first, self.saved_last) && last.within(self.last, self.saved_last)
    }
}

/// The last PSN of the responses to an RDMA READ of `len` bytes requested at `psn`.
pub const fn read_last_psn(psn: Psn, len: u32, mtu: Mtu) -> Psn {
    psn.wrapping_add(packets_for(len, mtu.bytes()) - 1)
}

/// One RDMA READ response packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReadSegment {
    /// BTH opcode.
    pub opcode: Opcode,
    /// BTH PSN.
    pub psn: Psn,
    /// Offset of the payload from the start of the replied range.
    pub offset: u32,
    /// Payload bytes.
    pub payload_len: u32,
}

/// Cuts an RDMA READ response into packets of the path MTU.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReadReply {
    psn: Psn,
    offset: u32,
    remaining: u32,
    mtu: u32,
    started: bool,
    done: bool,
}

impl ReadReply {
    /// Responses for `len` bytes from PSN `psn`. `from_first`: a new request or a replay
    /// from its first PSN (the responses start with First or Only); otherwise a replay
    /// continuing the original sequence (Middle and Last). Nothing to send is one empty
    /// Only response either way: a Last response carries at least one byte.
    pub const fn new(psn: Psn, len: u32, mtu: Mtu, from_first: bool) -> Self {
        ReadReply {
            psn,
            offset: 0,
            remaining: len,
            mtu: mtu.bytes(),
            started: !from_first && len > 0,
            done: false,
        }
    }

    /// PSN after the last response sent so far: the responder's next expected PSN once the
    /// reply is complete (if later than the current one).
    pub const fn next_psn(&self) -> Psn {
        self.psn
    }

    /// Whether more than one response is left (a burst may go).
    pub const fn several_left(&self) -> bool {
        !self.done && self.remaining > self.mtu
    }

    /// The next responses, at most `max_k` of them (and [`MAX_BURST`], and
    /// [`MAX_READ_BURST_PAYLOAD`] bytes), as one loopback burst ([`super::burst`]): the
    /// first one's PSN and offset, the opcode of the part of the reply they cover, all
    /// their payload, and how many they are; as [`Iterator::next`] (one response) when no
    /// more than one can go.
    pub fn next_burst(&mut self, max_k: u32) -> Option<(ReadSegment, u32)> {
        if self.done {
            return None;
        }
        let left = packets_for(self.remaining, self.mtu);
        let fit = (MAX_READ_BURST_PAYLOAD as u32)
            .checked_div(self.mtu)
            .unwrap_or(0);
        let k = max_k.min(left).min(MAX_BURST).min(fit);
        if k < 2 {
            return self.next().map(|seg| (seg, 1));
        }
        let last = k == left;
        let opcode = match (self.started, last) {
            (false, true) => Opcode::RcReadResponseOnly,
            (false, false) => Opcode::RcReadResponseFirst,
            (true, false) => Opcode::RcReadResponseMiddle,
            (true, true) => Opcode::RcReadResponseLast,
        };
        let payload_len = self.remaining.min(k.saturating_mul(self.mtu));
        let seg = ReadSegment {
            opcode,
            psn: self.psn,
            offset: self.offset,
            payload_len,
        };
        self.started = true;
        self.done = last;
        self.psn = self.psn.wrapping_add(k);
        self.offset = self.offset.saturating_add(payload_len);
        self.remaining = self.remaining.saturating_sub(payload_len);
        Some((seg, k))
    }
}

impl Iterator for ReadReply {
    type Item = ReadSegment;

    fn next(&mut self) -> Option<ReadSegment> {
        if self.done {
            return None;
        }
        let fits = self.remaining <= self.mtu;
        let opcode = match (self.started, fits) {
            (false, true) => Opcode::RcReadResponseOnly,
            (false, false) => Opcode::RcReadResponseFirst,
            (true, false) => Opcode::RcReadResponseMiddle,
            (true, true) => Opcode::RcReadResponseLast,
        };
        let payload_len = if fits { self.remaining } else { self.mtu };
        let seg = ReadSegment {
            opcode,
            psn: self.psn,
            offset: self.offset,
            payload_len,
        };
        self.started = true;
        self.done = fits;
        self.psn = self.psn.next();
        self.offset = self.offset.saturating_add(payload_len);
        self.remaining = self.remaining.saturating_sub(payload_len);
        Some(seg)
    }
}
