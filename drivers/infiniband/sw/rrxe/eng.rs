// SPDX-License-Identifier: GPL-2.0

//! The state of a QP's protocol engine: the requester's position in the send queue and what
//! it knows of each WQE in flight, the completer's sequence state and retry counters, and
//! the responder's sequence state, receive WQE, RDMA WRITE in progress and read/atomic
//! resources. All of it lives under the QP lock; passes run the engine ([`crate::task`]).

use crate::{
    mem::MemRef,
    proto::{
        completer::{AheadCount, CompState, RetryCounter, RetryPlan, WqeView},
        psn::Psn,
        readholes::ReadHoles,
        requester::{AckReqPolicy, Segmenter},
        responder::{ReadReply, Replay, SeqState},
        verbs::{WcStatus, WrOpcode},
    },
    tx::Path,
    wqe::{RecvWqe, SendWqe, Shape},
};
use kernel::prelude::*;

/// Most send WQEs in flight (started and not completed) per QP. An RC QP has at most
/// 128 unacknowledged PSNs, and each WQE that is not a local operation takes at least one.
pub(crate) const MAX_TRACKED: u32 = 256;

/// What the engine knows of a send WQE it started.
#[derive(Clone, Copy)]
pub(crate) struct Track {
    pub(crate) wr_id: u64,
    pub(crate) op: WrOpcode,
    pub(crate) signaled: bool,
    pub(crate) first_psn: Psn,
    pub(crate) last_psn: Psn,
    /// Every packet was sent at least once (or the local operation executed).
    pub(crate) all_sent: bool,
    /// It completes once sent: UC, UD, local operations, or a failure found locally.
    pub(crate) no_ack: bool,
    /// It holds one of the `max_rd_atomic` slots.
    pub(crate) holds_rd_atomic: bool,
    /// The status it completes with when `no_ack` (success otherwise, unless a response
    /// says differently).
    pub(crate) status: WcStatus,
    /// Its response came early (before an earlier WQE's) and its result is stored: it
    /// completes with this status when it is the oldest.
    pub(crate) early: Option<WcStatus>,
    /// What its first send took from the WQE.
    pub(crate) shape: Shape,
}

impl Track {
    const fn empty() -> Self {
        Track {
            wr_id: 0,
            op: WrOpcode::Send,
            signaled: false,
            first_psn: Psn::new(0),
            last_psn: Psn::new(0),
            all_sent: false,
            no_ack: true,
            holds_rd_atomic: false,
            status: WcStatus::Success,
            early: None,
            shape: Shape::EMPTY,
        }
    }

    /// The completion's byte count: the message length its first send took.
    pub(crate) fn byte_len(&self) -> u32 {
        self.shape.len
    }

    /// What the completer's decisions look at.
    pub(crate) fn view(&self) -> WqeView {
        WqeView {
            wr: self.op,
            first_psn: self.first_psn,
            last_psn: self.last_psn,
            all_sent: self.all_sent,
        }
    }
}

/// What [`Engine::track`] finds outside the tracks (never: the index is masked to their
/// number, a power of two).
static NO_TRACK: Track = Track::empty();

// The engine keeps a track per send queue slot (up to `MAX_TRACKED`): 64 bytes each keeps
// a deep queue's tracks in half the memory of a larger track (kmalloc sizes are powers of
// two).
const _: () = assert!(core::mem::size_of::<Track>() <= 64);

/// The WQE the requester is sending (its decoded copy is [`Engine::wqe`]).
pub(crate) struct Cur {
    /// Its position in the send queue.
    pub(crate) index: u32,
    pub(crate) seg: Segmenter,
    /// PSN of its next packet.
    pub(crate) next_psn: Psn,
    /// Where a datagram goes (its address handle's path); `None` for a connected QP,
    /// whose packets take the QP's path (not copied for each WQE).
    pub(crate) path: Option<Path>,
    pub(crate) dest_qpn: u32,
    pub(crate) qkey: u32,
    /// Whether its packets may go in loopback bursts ([`crate::proto::burst`]): not once
    /// it was sent again (a retry resends packet by packet) or a burst could not go.
    pub(crate) bursts: bool,
}

/// A read/atomic resource of the responder: what a retried request needs to be answered
/// again without executing twice.
#[derive(Clone, Copy)]
pub(crate) enum ResKind {
    /// An RDMA READ of `len` bytes at `va` with `rkey`.
    Read { va: u64, len: u32, rkey: u32 },
    /// An atomic that returned `orig`.
    Atomic { orig: u64 },
    /// FLUSH or ATOMIC WRITE (answered with an empty read response).
    Ack,
}

/// One responder resource.
#[derive(Clone, Copy)]
pub(crate) struct Resource {
    pub(crate) kind: ResKind,
    pub(crate) first_psn: Psn,
    pub(crate) last_psn: Psn,
}

/// An RDMA READ reply being sent.
pub(crate) struct Reading {
    pub(crate) reply: ReadReply,
    /// The memory read (none for an empty read).
    pub(crate) mem: Option<MemRef>,
    /// Remote address of the reply's first byte.
    pub(crate) va: u64,
    /// For a replay (the answer to a duplicate request, an ask for a read or part of it),
    /// its PSNs and the read's: a later ask may supersede it.
    pub(crate) replay: Option<Replay>,
}

/// An RDMA WRITE being received.
pub(crate) struct Writing {
    /// The memory written (none for an empty write).
    pub(crate) mem: Option<MemRef>,
    /// Where the next payload goes.
    pub(crate) va: u64,
    /// Bytes not written yet.
    pub(crate) resid: u32,
    /// The message length (the RETH DMA length).
    pub(crate) total: u32,
}

/// The receive WQE held for the message being received (its decoded copy is
/// [`Resp::wqe`]).
pub(crate) struct Receiving {
    /// It came from the SRQ (already consumed there).
    pub(crate) from_srq: bool,
    /// Bytes written so far.
    pub(crate) offset: u64,
}

/// Responder state.
pub(crate) struct Resp {
    /// Next PSN expected.
    pub(crate) psn: Psn,
    /// Message sequence number.
    pub(crate) msn: u32,
    pub(crate) seq: SeqState,
    /// Opcode of the last request processed (`None` after an RDMA READ).
    pub(crate) prev: Option<crate::proto::opcode::Opcode>,
    pub(crate) recv: Option<Receiving>,
    /// The copy of the receive WQE `recv` holds, decoded in place when it is taken;
    /// meaningless while `recv` is `None`.
    pub(crate) wqe: RecvWqe,
    pub(crate) write: Option<Writing>,
    pub(crate) reading: Option<Reading>,
    /// Read/atomic resources (`max_dest_rd_atomic` slots).
    pub(crate) res: KVec<Option<Resource>>,
    /// Next slot to use.
    pub(crate) res_next: usize,
    /// The acknowledge (PSN, MSN) of the last request this pass executed that asked for
    /// one, not sent yet: an ACK acknowledges every PSN before its own, so the last
    /// packets of messages a pass takes from the queue get one ACK, the last (coalesced,
    /// as the IBA allows). Sent before any other response, at once for a packet that
    /// does not end its message ([`crate::proto::responder::Reply::Ack`]), and at the end
    /// of the responder's stage ([`crate::resp::run`]): always `None` between passes.
    pub(crate) owed_ack: Option<(Psn, u32)>,
}

/// The engine of one QP.
pub(crate) struct Engine {
    /// Requester: the next WQE to start (masked send queue index).
    pub(crate) req_index: u32,
    /// WQEs before this index (from the consumer index) were started at least once.
    pub(crate) hw_index: u32,
    /// PSN of the next new WQE.
    pub(crate) psn: Psn,
    /// The PSN after the last one sent (after the last response PSN of an RDMA READ
    /// sent): responses beyond acknowledge nothing.
    pub(crate) sent_end: Psn,
    pub(crate) cur: Option<Cur>,
    /// The copy of the WQE `cur` sends, decoded in place when it starts; meaningless while
    /// `cur` is `None`.
    pub(crate) wqe: SendWqe,
    /// Where the completer decodes a WQE again, to store response data in its SGEs.
    pub(crate) reread: SendWqe,
    pub(crate) ack_policy: AckReqPolicy,
    /// Read/atomic slots in use.
    pub(crate) rd_atomic: u32,
    /// An RNR NAK was received: wait for the RNR timer.
    pub(crate) rnr_wait: bool,
    /// The requester stopped until an earlier WQE completes (a LOCAL INVALIDATE or a
    /// fence, a read/atomic slot, a full track): the next completion runs it again.
    pub(crate) wait_completion: bool,
    /// Per in-flight WQE, by send queue index modulo its length (a power of two).
    pub(crate) track: KVec<Track>,
    pub(crate) comp: CompState,
    pub(crate) retry: RetryCounter,
    pub(crate) rnr: RetryCounter,
    /// A retry is under way and made no progress yet.
    pub(crate) retrying: bool,
    /// Timeouts with an RDMA READ oldest since the last progress
    /// ([`crate::proto::completer::ask_on_timeout`]).
    pub(crate) timeouts: u32,
    /// Responses ahead of a missing read or atomic response since the last progress.
    pub(crate) ahead: AheadCount,
    /// Responses of the oldest RDMA READ kept beyond a missing one.
    pub(crate) holes: ReadHoles,
    /// The retransmission timer expired.
    pub(crate) timed_out: bool,
    /// What the completer (or the RNR timer) decided for the requester to redo.
    pub(crate) retry_plan: RetryPlan,
    pub(crate) resp: Resp,
}

impl Engine {
    /// A fresh engine tracking up to `tracked` WQEs (a power of two), for send and receive
    /// WQEs of up to `send_sges` and `recv_sges` SGEs.
    pub(crate) fn new(tracked: u32, send_sges: u32, recv_sges: u32) -> Result<Self> {
        let mut track = KVec::with_capacity(tracked as usize, GFP_KERNEL)?;
        for _ in 0..tracked {
            track.push(Track::empty(), GFP_KERNEL)?;
        }
        Ok(Engine {
            req_index: 0,
            hw_index: 0,
            psn: Psn::new(0),
            sent_end: Psn::new(0),
            cur: None,
            wqe: SendWqe::new(send_sges)?,
            reread: SendWqe::new(send_sges)?,
            ack_policy: AckReqPolicy::new(),
            rd_atomic: 0,
            rnr_wait: false,
            wait_completion: false,
            track,
            comp: CompState::new(Psn::new(0)),
            retry: RetryCounter::new(0),
            rnr: RetryCounter::new(0),
            retrying: false,
            timeouts: 0,
            ahead: AheadCount::default(),
            holes: ReadHoles::new(),
            timed_out: false,
            retry_plan: RetryPlan::default(),
            resp: Resp {
                psn: Psn::new(0),
                msn: 0,
                seq: SeqState::default(),
                prev: None,
                recv: None,
                wqe: RecvWqe::new(recv_sges)?,
                write: None,
                reading: None,
                res: KVec::new(),
                res_next: 0,
                owed_ack: None,
            },
        })
    }

    /// The track of send queue index `index`. A reference: the completer looks at the
    /// oldest one several times per response.
    pub(crate) fn track(&self, index: u32) -> &Track {
        let mask = self.track.len().wrapping_sub(1);
        self.track.get(index as usize & mask).unwrap_or(&NO_TRACK)
    }

    /// The track of send queue index `index`, to change in place.
    pub(crate) fn track_mut(&mut self, index: u32) -> Option<&mut Track> {
        let mask = self.track.len().wrapping_sub(1);
        self.track.get_mut(index as usize & mask)
    }

    /// Sets the track of send queue index `index`.
    pub(crate) fn set_track(&mut self, index: u32, t: Track) {
        let mask = self.track.len().wrapping_sub(1);
        if let Some(slot) = self.track.get_mut(index as usize & mask) {
            *slot = t;
        }
    }

    /// Notes that PSNs before `end` were sent (or, for an RDMA READ, asked for).
    pub(crate) fn note_sent(&mut self, end: Psn) {
        if end.is_after(self.sent_end) {
            self.sent_end = end;
        }
    }

    /// How many WQEs can be tracked.
    pub(crate) fn tracked(&self) -> u32 {
        self.track.len() as u32
    }

    /// Forgets everything in flight (reset, or error after the flush), keeping the tracks'
    /// memory and the responder's resources. Not the ACK the responder owes
    /// ([`Resp::owed_ack`]): a QP that goes to error in a pass still acknowledges the
    /// requests it executed before, when the responder's stage ends.
    pub(crate) fn clear(&mut self, sq_index: u32) {
        self.req_index = sq_index;
        self.hw_index = sq_index;
        self.cur = None;
        self.rd_atomic = 0;
        self.rnr_wait = false;
        self.wait_completion = false;
        self.retrying = false;
        self.timeouts = 0;
        self.ahead.reset();
        self.holes.clear();
        self.timed_out = false;
        self.retry_plan = RetryPlan::default();
        self.ack_policy = AckReqPolicy::new();
        self.resp.recv = None;
        self.resp.write = None;
        self.resp.reading = None;
        self.resp.prev = None;
        // A reset starts the responder's message count again, as rxe_qp_reset does.
        self.resp.msn = 0;
        self.resp.seq = SeqState::default();
        for r in self.resp.res.iter_mut() {
            *r = None;
        }
    }
}

/// What to do once the QP lock is dropped.
#[derive(Default)]
pub(crate) struct Outbox {
    /// Call the send CQ's handler.
    pub(crate) send_cq: bool,
    /// Call the receive CQ's handler.
    pub(crate) recv_cq: bool,
    /// Arm the retransmission timer (microseconds), or stop it (`Some(0)`).
    pub(crate) retrans: Option<u64>,
    /// Arm the RNR timer (microseconds).
    pub(crate) rnr: Option<u32>,
    /// Run the work item again (budget exhausted).
    pub(crate) again: bool,
}
