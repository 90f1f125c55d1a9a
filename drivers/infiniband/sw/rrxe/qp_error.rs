// SPDX-License-Identifier: GPL-2.0

//! The error state of a QP: moving to it, and completing the outstanding work of both
//! queues (and a receive WQE the responder took from an SRQ) with `IB_WC_WR_FLUSH_ERR`.

use crate::{
    cq::Cqe,
    eng::Outbox,
    ext::rdma::types::QpState,
    proto::verbs::{WcOpcode, WcStatus, WrOpcode},
    qp::{Inner, QpShared},
    queue::FromClient,
    wqe::off,
};
use core::sync::atomic::Ordering;
use kernel::prelude::*;

/// WQEs of each queue that one pass flushes.
const FLUSH_BUDGET: u32 = 1024;

/// The completion opcode of a send work request opcode (`IB_WR_*`) of a WQE never started:
/// the operation's, for those a userspace WQE may hold; SEND for anything else.
fn send_wc_opcode(wr_opcode: u32) -> u32 {
    use WrOpcode::*;
    let wc = match WrOpcode::from_u32(wr_opcode) {
        Some(
            op @ (RdmaWrite | RdmaWriteImm | RdmaRead | AtomicCmpSwp | AtomicFetchAdd | LocalInv
            | BindMw | Flush | AtomicWrite),
        ) => op.wc_opcode(),
        _ => WcOpcode::Send,
    };
    wc as u32
}

/// The flush completion of `qp`'s work request `wr_id` with completion opcode `opcode`.
fn flushed(qp: &QpShared, wr_id: u64, opcode: u32) -> Cqe {
    Cqe::new(qp, wr_id, WcStatus::WrFlushErr, opcode)
}

/// Reads a little `u64`/`u32` field of the oldest WQE (native byte order, as userspace
/// wrote it).
fn front_u64(q: &FromClient, off: usize) -> Result<u64> {
    let mut v = [0u8; 8];
    q.read_front(off, &mut v)?;
    Ok(u64::from_ne_bytes(v))
}

fn front_u32(q: &FromClient, off: usize) -> Result<u32> {
    let mut v = [0u8; 4];
    q.read_front(off, &mut v)?;
    Ok(u32::from_ne_bytes(v))
}

impl Inner {
    /// Moves the QP to the error state: flushes its work and forgets what is in flight.
    /// A QP with an SRQ then takes no more WQEs from it: the consumer learns it from the
    /// Last WQE Reached event (IBA 11.6.3.1, 10.3.1), which `ib_drain_qp` waits for.
    pub(crate) fn set_error(&mut self, qp: &QpShared, out: &mut Outbox) {
        if self.state == QpState::Err {
            return;
        }
        self.state = QpState::Err;
        qp.state.store(self.state.raw(), Ordering::Release);
        self.flush_all(qp, out);
        if qp.srq.is_some() {
            qp.events.last_wqe_reached();
        }
    }

    /// Flushes both queues and the WQE the responder holds from an SRQ.
    pub(crate) fn flush_all(&mut self, qp: &QpShared, out: &mut Outbox) {
        if let Some(r) = self.eng.resp.recv.take() {
            if r.from_srq {
                let wc = flushed(qp, self.eng.resp.wqe.wr_id, WcOpcode::Recv as u32);
                if crate::cq::post(&qp.recv_cq, &wc, false).unwrap_or(false) {
                    out.recv_cq = true;
                }
            }
        }
        let (s, r, more) = self.flush(qp);
        out.send_cq |= s;
        out.recv_cq |= r;
        out.again |= more;
        let cons = self.sq.consumer();
        self.eng.clear(cons);
        out.retrans = Some(0);
    }

    /// Completes the posted WQEs with `IB_WC_WR_FLUSH_ERR`, at most [`FLUSH_BUDGET`] of
    /// each queue; returns which CQs need their handlers called (send, receive) and
    /// whether WQEs are left for the next pass.
    ///
    /// The producer indices are userspace's to write at any time: each queue's count is
    /// read once, so a producer that keeps posting (or scribbling) cannot keep the loop,
    /// which runs under the QP lock, going; and a pass flushes a bounded number of WQEs,
    /// however large the queue. The rest, and what is posted later, are flushed by later
    /// passes (a QP in the error state flushes at every pass).
    fn flush(&mut self, qp: &QpShared) -> (bool, bool, bool) {
        let mut notify = (false, false);
        let posted = self.sq.count();
        let mut more = posted > FLUSH_BUDGET;
        // WQEs the requester started were read then: their completions say what was read.
        let started = self.sq.distance(self.sq.consumer(), self.eng.hw_index);
        for k in 0..posted.min(FLUSH_BUDGET) {
            let (wr_id, opcode) = if k < started {
                let t = self.eng.track(self.sq.consumer());
                (t.wr_id, t.op.wc_opcode() as u32)
            } else {
                (
                    front_u64(&self.sq, off::WR_ID).unwrap_or(0),
                    send_wc_opcode(front_u32(&self.sq, off::OPCODE).unwrap_or(0)),
                )
            };
            let wc = flushed(qp, wr_id, opcode);
            // A full CQ loses flush completions; the consumer sees the overflow.
            if crate::cq::post(&qp.send_cq, &wc, false).unwrap_or(false) {
                notify.0 = true;
            }
            self.sq.advance();
        }
        if let Some(rq) = self.rq.as_mut() {
            let posted = rq.count();
            more |= posted > FLUSH_BUDGET;
            for _ in 0..posted.min(FLUSH_BUDGET) {
                let wr_id = front_u64(rq, off::RECV_WR_ID).unwrap_or(0);
                let wc = flushed(qp, wr_id, WcOpcode::Recv as u32);
                if crate::cq::post(&qp.recv_cq, &wc, false).unwrap_or(false) {
                    notify.1 = true;
                }
                rq.advance();
            }
        }
        (notify.0, notify.1, more)
    }

    /// Drops every posted WQE (the QP is reset), at once.
    pub(crate) fn discard(&mut self) {
        self.sq.drop_posted();
        if let Some(rq) = self.rq.as_mut() {
            rq.drop_posted();
        }
    }
}
