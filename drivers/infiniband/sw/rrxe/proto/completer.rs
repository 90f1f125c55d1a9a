// SPDX-License-Identifier: GPL-2.0

//! Completer decisions (IBA Vol 1 ch. 9, reliable service): what an incoming acknowledge,
//! RDMA READ response or atomic acknowledge means for the oldest outstanding send WQE of an RC
//! QP, and the retry and RNR counters.
//!
//! The completer keeps [`CompState`]: the next PSN it expects to see acknowledged and the
//! opcode of an RDMA READ response sequence in progress. For each response it calls
//! [`judge`] with the oldest WQE not completed yet; the [`Verdict`] says whether to drop
//! the response, complete the WQE (possibly implicitly, then judging the same response
//! against the next WQE), take read or atomic data, note progress, retry, wait for an RNR
//! timer, or fail the WQE.
//!
//! Implicit NAK: responses for PSNs beyond an RDMA READ or atomic whose response never
//! arrived mean the response was lost; the requester retries from that WQE. RoCE runs over
//! networks that may reorder, so one such response is not taken as proof:
//! [`AheadCount`] waits for [`IMPLICIT_NAK_AFTER`] of them, and [`early`] keeps the result
//! of a later one-packet read or atomic that arrived before an earlier one, to complete it
//! in order without a retransmission.
//! Implicit ACK: an acknowledge beyond a SEND or RDMA WRITE completes it.
//!
//! What a pass decides to retry (a rewind, parts of an RDMA READ to ask for again) it records
//! in a [`RetryPlan`], which the requester carries out later in the pass.

use super::aeth::{NakCode, Syndrome};
use super::opcode::{Opcode, Operation};
use super::psn::Psn;
use super::timers::rnr_timeout_us;
use super::verbs::{WcStatus, WrOpcode};

/// The completer's sequence state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CompState {
    /// Next PSN expected to be acknowledged: everything before it is acknowledged.
    pub psn: Psn,
    /// Opcode of the last response of an RDMA READ response sequence in progress (First or
    /// Middle), `None` otherwise.
    pub opcode: Option<Opcode>,
}

impl CompState {
    /// The state of a QP whose first request will carry `psn`.
    pub const fn new(psn: Psn) -> Self {
        CompState { psn, opcode: None }
    }

    /// Records a response `opcode` with `psn` that made progress: everything up to `psn` is
    /// acknowledged.
    pub fn update(&mut self, opcode: Opcode, psn: Psn) {
        self.opcode = if opcode.is_end() { None } else { Some(opcode) };
        if !psn.is_before(self.psn) {
            self.psn = psn.next();
        }
    }

    /// Takes `n` responses from [`CompState::psn`] on that were kept earlier
    /// ([`Verdict::ReadAhead`]), with an RDMA READ response sequence still going on unless
    /// the read is `done`. Also after a Last response that ended a range asked for again.
    pub fn read_taken(&mut self, n: u32, done: bool) {
        self.psn = self.psn.wrapping_add(n);
        self.opcode = if done {
            None
        } else {
            Some(Opcode::RcReadResponseMiddle)
        };
    }

    /// Records that a WQE ending at `last_psn` completed (implicitly acknowledged).
    pub fn wqe_done(&mut self, last_psn: Psn) {
        if !last_psn.is_before(self.psn) {
            self.psn = last_psn.next();
            self.opcode = None;
        }
    }

    /// Records a PSN sequence error NAK carrying `psn`: the responder has every request
    /// before it. Returns true when this acknowledged something new.
    pub fn nak_sequence(&mut self, psn: Psn) -> bool {
        if psn.is_after(self.psn) {
            self.psn = psn;
            true
        } else {
            false
        }
    }
}

/// The oldest send WQE not completed yet, as the completer sees it. Only WQEs the requester
/// has started sending are judged; with none, responses are dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WqeView {
    /// Its operation.
    pub wr: WrOpcode,
    /// PSN of its first packet.
    pub first_psn: Psn,
    /// PSN of its last packet (of the last response packet for an RDMA READ).
    pub last_psn: Psn,
    /// Every packet of it has been sent (rxe's "pending" state).
    pub all_sent: bool,
}

/// The parts of a response packet the completer looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Response {
    /// BTH opcode.
    pub opcode: Opcode,
    /// BTH PSN.
    pub psn: Psn,
    /// AETH syndrome, for the opcodes that carry an AETH.
    pub syndrome: Option<Syndrome>,
}

/// What a response means for the oldest outstanding WQE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Stale, duplicate or unrelated response: ignore it.
    Drop,
    /// The response acknowledges beyond this SEND/WRITE/FLUSH/ATOMIC WRITE WQE: complete it
    /// successfully, call [`CompState::wqe_done`], then judge the same response against the
    /// next WQE.
    CompleteImplicit,
    /// Complete the WQE successfully, then [`CompState::update`] if the response's PSN is not
    /// before [`CompState::psn`].
    Complete,
    /// The response acknowledges part of the WQE: [`CompState::update`].
    Progress,
    /// RDMA READ response data: copy the payload to the WQE's local buffers,
    /// then [`read_complete`] tells whether to complete ([`Verdict::Complete`]) or note
    /// progress ([`Verdict::Progress`]).
    ReadData,
    /// Atomic acknowledge: store the original value in the WQE's local buffer, then
    /// [`Verdict::Complete`].
    AtomicResult,
    /// A response of this RDMA READ beyond the missing one: keep it (store its data, note
    /// its PSN in [`super::readholes::ReadHoles`]) and ask for the missing ranges.
    ReadAhead,
    /// The response is ahead of the read or atomic response this WQE waits for: that one
    /// was lost or is late. See whether it answers a later WQE ([`early`]), and retry from
    /// [`CompState::psn`] when [`AheadCount::note`] says so.
    Ahead,
    /// Retransmit from [`CompState::psn`] (after [`retry`] allows it). `nak_psn`: the
    /// response was a PSN sequence error NAK with this PSN; pass it to
    /// [`CompState::nak_sequence`] first. A NAK that acknowledges something new is progress:
    /// a retry under way does not hold back the one it asks for.
    Retry {
        /// PSN of a sequence error NAK.
        nak_psn: Option<Psn>,
    },
    /// RNR NAK: wait (after [`rnr_retry`] allows it), then retransmit from
    /// [`CompState::psn`].
    Rnr {
        /// RNR timer code from the syndrome.
        timer: u8,
    },
    /// Complete the WQE with this error status and move the QP to the error state.
    Fail(WcStatus),
}

impl Verdict {
    /// True when the response shows forward progress, which resets the retry and RNR
    /// counters to the QP's values. Not [`Verdict::ReadData`]: read data is progress once
    /// it is taken, and a response whose length is wrong for its place is dropped (from a
    /// responder whose path MTU is not the requester's, every response of a read is, and
    /// counted as progress they kept the read retrying for ever, never failing).
    pub const fn resets_retries(self) -> bool {
        matches!(
            self,
            Verdict::CompleteImplicit
                | Verdict::Complete
                | Verdict::Progress
                | Verdict::AtomicResult
        )
    }
}

/// The completion status for a NAK code other than PSN sequence error.
pub const fn nak_status(code: NakCode) -> WcStatus {
    match code {
        NakCode::InvalidRequest => WcStatus::RemInvReqErr,
        NakCode::RemoteAccessError => WcStatus::RemAccessErr,
        NakCode::InvalidRdRequest => WcStatus::RemInvRdReqErr,
        NakCode::PsnSequenceError | NakCode::RemoteOperationalError | NakCode::Reserved(_) => {
            WcStatus::RemOpErr
        }
    }
}

/// Judges a response against the oldest outstanding WQE.
pub fn judge(st: &CompState, wqe: &WqeView, rsp: &Response) -> Verdict {
    // Beyond the WQE: it was acknowledged implicitly, unless it waits for data.
    if rsp.psn.is_after(wqe.last_psn) {
        return if !wqe.all_sent {
            Verdict::Drop
        } else if wqe.wr.needs_response_data() {
            Verdict::Ahead
        } else {
            Verdict::CompleteImplicit
        };
    }
    let diff = rsp.psn.diff(st.psn);
    if diff < 0 {
        // A retransmitted response. It completes the WQE if it is its last one; an
        // acknowledge (NAK) in the middle of a read response sequence is still looked at.
        let in_read = matches!(
            st.opcode,
            Some(Opcode::RcReadResponseFirst | Opcode::RcReadResponseMiddle)
        );
        if rsp.psn == wqe.last_psn {
            return Verdict::Complete;
        } else if !(matches!(rsp.opcode, Opcode::RcAck) && in_read) {
            return Verdict::Drop;
        }
    } else if diff > 0 && wqe.wr.needs_response_data() {
        // A gap in the responses of a read: one was lost or is late. A later response of
        // an RDMA READ is kept, and the missing ones asked for (`readholes`); anything
        // else is dropped, and the responses of later WQEs or the timer start the retry.
        let read = matches!(wqe.wr, WrOpcode::RdmaRead | WrOpcode::RdmaReadInv);
        let ack = !matches!(rsp.syndrome, Some(s) if !s.is_ack());
        return if read && rsp.opcode.operation() == Operation::ReadResponse && ack {
            Verdict::ReadAhead
        } else {
            Verdict::Drop
        };
    }
    check_ack(st, wqe, rsp)
}

/// The opcode-sequence and syndrome part of [`judge`].
fn check_ack(st: &CompState, wqe: &WqeView, rsp: &Response) -> Verdict {
    let bad = Verdict::Fail(WcStatus::BadRespErr);
    match st.opcode {
        Some(Opcode::RcReadResponseFirst | Opcode::RcReadResponseMiddle) => {
            let continues = matches!(
                rsp.opcode,
                Opcode::RcAck | Opcode::RcReadResponseMiddle | Opcode::RcReadResponseLast
            );
            // A retried read may start over with First (from the first PSN) or Only (a
            // one-packet read). A retry from the middle is answered with Middle and Last
            // (rxe and rrxe continue the original sequence), but a responder starts a new
            // sequence there, with First, or Only for one packet, where it saved the
            // range asked for as a request of its own (the first chunk asked for after the
            // read request was lost, asked for again).
            let resumed = rsp.psn == wqe.first_psn || rsp.psn == st.psn;
            let restarts = match rsp.opcode {
                Opcode::RcReadResponseFirst => resumed,
                Opcode::RcReadResponseOnly => wqe.first_psn == wqe.last_psn || resumed,
                _ => false,
            };
            if !continues && !restarts {
                return bad;
            }
        }
        _ => {
            if !rsp.opcode.is_start() {
                return bad;
            }
        }
    }
    let syndrome = rsp.syndrome.unwrap_or(Syndrome::ACK);
    match rsp.opcode.operation() {
        Operation::ReadResponse => {
            // First, Last and Only carry an AETH, which must be a positive acknowledge.
            if !syndrome.is_ack() {
                return bad;
            }
            match wqe.wr {
                // FLUSH and ATOMIC WRITE are answered by one empty response.
                WrOpcode::AtomicWrite | WrOpcode::Flush if rsp.opcode.is_end() => {
                    if rsp.psn == wqe.last_psn && wqe.all_sent {
                        Verdict::Complete
                    } else {
                        Verdict::Progress
                    }
                }
                WrOpcode::RdmaRead | WrOpcode::RdmaReadInv => Verdict::ReadData,
                _ => Verdict::Fail(WcStatus::FatalErr),
            }
        }
        Operation::AtomicAck => {
            if syndrome.is_ack()
                && matches!(wqe.wr, WrOpcode::AtomicCmpSwp | WrOpcode::AtomicFetchAdd)
            {
                Verdict::AtomicResult
            } else {
                bad
            }
        }
        Operation::Ack => match syndrome {
            // An acknowledge carries no read or atomic data: it cannot complete such a WQE.
            Syndrome::Ack { .. } if wqe.wr.needs_response_data() => Verdict::Drop,
            Syndrome::Ack { .. } => {
                if rsp.psn == wqe.last_psn && wqe.all_sent {
                    Verdict::Complete
                } else {
                    Verdict::Progress
                }
            }
            Syndrome::RnrNak { timer } => Verdict::Rnr { timer },
            Syndrome::Nak(NakCode::PsnSequenceError) => Verdict::Retry {
                nak_psn: Some(rsp.psn),
            },
            Syndrome::Nak(code) => Verdict::Fail(nak_status(code)),
            Syndrome::Reserved(_) => bad,
        },
        _ => bad,
    }
}

/// Whether `rsp`, which came [`Verdict::Ahead`] of the oldest WQE, is the whole answer of
/// `wqe`, a later one: an atomic acknowledge ([`Verdict::AtomicResult`]) or the only packet
/// of an RDMA READ response ([`Verdict::ReadData`]) for a one-packet WQE that was sent.
/// The caller stores the result now and completes the WQE when its turn comes.
pub fn early(wqe: &WqeView, rsp: &Response) -> Option<Verdict> {
    if !wqe.all_sent
        || !wqe.wr.needs_response_data()
        || wqe.first_psn != wqe.last_psn
        || rsp.psn != wqe.first_psn
    {
        return None;
    }
    match check_ack(&CompState::new(rsp.psn), wqe, rsp) {
        v @ (Verdict::AtomicResult | Verdict::ReadData) => Some(v),
        _ => None,
    }
}

/// How many responses ahead of a missing read or atomic response make it lost.
pub const IMPLICIT_NAK_AFTER: u8 = 3;

/// Counts responses [`Verdict::Ahead`] of the oldest WQE since the last progress.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AheadCount(u8);

impl AheadCount {
    /// Notes one more response ahead: true when the missing one is now taken as lost (an
    /// implicit NAK), once per run of responses without progress.
    pub fn note(&mut self) -> bool {
        self.0 = self.0.saturating_add(1);
        self.0 == IMPLICIT_NAK_AFTER
    }

    /// Progress was made: start counting again.
    pub fn reset(&mut self) {
        self.0 = 0;
    }
}

/// After copying an RDMA READ response's payload: true when the WQE is complete (no bytes
/// left to receive and the response ends the sequence).
pub const fn read_complete(remaining: u32, opcode: Opcode) -> bool {
    remaining == 0 && opcode.is_end()
}

/// A retry counter (`retry_cnt` or `rnr_retry`, three bits): 7 means retry forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RetryCounter(u8);

impl RetryCounter {
    /// The value meaning "infinite".
    pub const INFINITE: u8 = 7;

    /// A counter loaded with the QP attribute `count` (low three bits).
    pub const fn new(count: u8) -> Self {
        RetryCounter(count & 7)
    }

    /// Retries left ([`RetryCounter::INFINITE`] for infinite).
    pub const fn remaining(self) -> u8 {
        self.0
    }

    /// Uses one retry: false when none is left.
    pub fn take(&mut self) -> bool {
        match self.0 {
            0 => false,
            RetryCounter::INFINITE => true,
            _ => {
                self.0 -= 1;
                true
            }
        }
    }
}

/// Outcome of a retry request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryDecision {
    /// Retransmit from the oldest unacknowledged PSN.
    Retransmit,
    /// Nothing to do: a retry is already under way (and this is not a timeout), or every
    /// packet sent is already acknowledged.
    Ignore,
    /// The retry count is exhausted: fail the WQE with [`WcStatus::RetryExcErr`].
    Exceeded,
}

/// Decides on a retry after a sequence NAK, an implicit NAK or a timeout (`timeout`).
/// `retrying`: a retry started earlier has not yet made progress. `next_psn` is the
/// requester's next PSN, `comp_psn` the oldest unacknowledged one.
pub fn retry(
    counter: &mut RetryCounter,
    retrying: bool,
    timeout: bool,
    next_psn: Psn,
    comp_psn: Psn,
) -> RetryDecision {
    if retrying && !timeout {
        return RetryDecision::Ignore;
    }
    if !counter.take() {
        return RetryDecision::Exceeded;
    }
    if next_psn.is_after(comp_psn) {
        RetryDecision::Retransmit
    } else {
        RetryDecision::Ignore
    }
}

/// Decides on an RNR NAK with timer code `timer`: `Ok(microseconds to wait)` before
/// retransmitting, or `Err` with [`WcStatus::RnrRetryExcErr`] when the RNR retry count is
/// exhausted.
pub fn rnr_retry(counter: &mut RetryCounter, timer: u8) -> Result<u32, WcStatus> {
    if counter.take() {
        Ok(rnr_timeout_us(timer))
    } else {
        Err(WcStatus::RnrRetryExcErr)
    }
}

/// Timeouts in a row without progress after which an RDMA READ is asked for again at most
/// once per this many (a power of two).
pub const ASK_BACKOFF_MAX: u32 = 16;

/// Whether the `timeouts`-th timeout in a row without progress (from 1) retries the oldest
/// WQE, an RDMA READ, with the retry counter `counter`. A finite count retries at every
/// timeout, as the IBTA says, and bounds the asks. An infinite one (retry count 7, what
/// perftest and the RDMA CM ask for) backs off: the 1st, 2nd, 4th, 8th and 16th timeout,
/// then every [`ASK_BACKOFF_MAX`]-th, and the others wait for the next. A responder answers
/// every ask it queued, each with up to a chunk of responses (rxe does; rrxe drops an ask
/// that a later one supersedes): when it was silent for many timeouts (busy, or its host
/// stalled), an ask at each of them buried it under stale answers it could not catch up
/// with (the debug kernel's interop-rxe-rrxe: ib_read_bw of 1 MiB against rxe, silent for
/// about 2 s at the start of each read, asked 20 times for 127 responses each time).
pub const fn ask_on_timeout(counter: RetryCounter, timeouts: u32) -> bool {
    if counter.remaining() != RetryCounter::INFINITE {
        true
    } else if timeouts <= ASK_BACKOFF_MAX {
        timeouts.is_power_of_two()
    } else {
        timeouts & (ASK_BACKOFF_MAX - 1) == 0
    }
}

/// Which part of an RDMA READ to ask for again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAsk {
    /// The oldest range missing below responses kept beyond it
    /// ([`super::readholes::ReadHoles::ask`]).
    Hole,
    /// The next chunk of what was not received ([`super::readholes::ReadHoles::chunk`]).
    Chunk,
}

/// A retry decided by the completer (or the RNR timer), carried out by the requester in
/// the same pass: the completer never sends. One pass may decide several: a rewind, and
/// for the oldest RDMA READ both its next chunk and its oldest missing range (the requester
/// asks for the chunk first, as the completer decides them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetryPlan {
    /// Send again from the oldest WQE not completed.
    pub rewind: bool,
    /// Ask again for parts of the oldest WQE, the RDMA READ starting at this PSN (if it is
    /// still the oldest when the requester runs).
    pub read: Option<Psn>,
    /// ... the next chunk of its rest.
    pub chunk: bool,
    /// ... its oldest missing range (asked for after the chunk).
    pub hole: bool,
}

impl RetryPlan {
    /// Whether nothing is planned.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Asks for `ask` of the RDMA READ starting at `first_psn`, keeping what was asked for
    /// the same READ; what was asked for an earlier WQE is forgotten.
    pub fn ask_read(&mut self, first_psn: Psn, ask: ReadAsk) {
        if self.read != Some(first_psn) {
            self.read = Some(first_psn);
            self.chunk = false;
            self.hole = false;
        }
        match ask {
            ReadAsk::Chunk => self.chunk = true,
            ReadAsk::Hole => self.hole = true,
        }
    }
}
