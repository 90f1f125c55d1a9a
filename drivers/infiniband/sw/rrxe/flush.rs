// SPDX-License-Identifier: GPL-2.0

//! The error state of a QP: moving to it, and completing the outstanding work of both
//! queues (and a receive WQE the responder took from an SRQ) with `IB_WC_WR_FLUSH_ERR`.

use crate::{
    bindings as b,
    cq::Cqe,
    eng::Outbox,
    proto::verbs::WcOpcode,
    qp::{Inner, QpShared},
    queue::FromClient,
};
use core::{mem::offset_of, sync::atomic::Ordering};
use kernel::prelude::*;

/// WQEs of each queue that one pass flushes.
const FLUSH_BUDGET: u32 = 1024;
/// Where the `wr_id` of a send WQE is.
const SEND_WR_ID: usize = offset_of!(b::rxe_send_wqe, wr) + offset_of!(b::rxe_send_wr, wr_id);
/// Where the work request opcode of a send WQE is.
const SEND_OPCODE: usize = offset_of!(b::rxe_send_wqe, wr) + offset_of!(b::rxe_send_wr, opcode);
/// Where the `wr_id` of a receive WQE is.
const RECV_WR_ID: usize = offset_of!(b::rxe_recv_wqe, wr_id);

/// The completion opcode of a send work request opcode (`IB_WR_*`).
fn send_wc_opcode(wr_opcode: u32) -> u32 {
    match wr_opcode {
        b::ib_wr_opcode_IB_WR_RDMA_WRITE | b::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM => {
            b::ib_uverbs_wc_opcode_IB_UVERBS_WC_RDMA_WRITE
        }
        b::ib_wr_opcode_IB_WR_RDMA_READ => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_RDMA_READ,
        b::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_COMP_SWAP,
        b::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_FETCH_ADD,
        b::ib_wr_opcode_IB_WR_LOCAL_INV => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_LOCAL_INV,
        b::ib_wr_opcode_IB_WR_BIND_MW => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_BIND_MW,
        b::ib_wr_opcode_IB_WR_FLUSH => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_FLUSH,
        b::ib_wr_opcode_IB_WR_ATOMIC_WRITE => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_ATOMIC_WRITE,
        _ => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_SEND,
    }
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
        if self.state == b::ib_qp_state_IB_QPS_ERR {
            return;
        }
        self.state = b::ib_qp_state_IB_QPS_ERR;
        qp.state.store(self.state, Ordering::Release);
        self.flush_all(qp, out);
        if qp.srq.is_some() {
            qp.events.last_wqe_reached();
        }
    }

    /// Flushes both queues and the WQE the responder holds from an SRQ.
    pub(crate) fn flush_all(&mut self, qp: &QpShared, out: &mut Outbox) {
        if let Some(r) = self.eng.resp.recv.take() {
            if r.from_srq {
                let wc = Cqe {
                    wr_id: r.wqe.wr_id,
                    status: b::ib_wc_status_IB_WC_WR_FLUSH_ERR,
                    opcode: WcOpcode::Recv as u32,
                    qp_num: qp.qpn,
                    ib_qp: qp.ib_qp,
                    ..Default::default()
                };
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
                    front_u64(&self.sq, SEND_WR_ID).unwrap_or(0),
                    send_wc_opcode(front_u32(&self.sq, SEND_OPCODE).unwrap_or(0)),
                )
            };
            let wc = Cqe {
                wr_id,
                status: b::ib_wc_status_IB_WC_WR_FLUSH_ERR,
                opcode,
                qp_num: qp.qpn,
                ib_qp: qp.ib_qp,
                ..Default::default()
            };
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
                let wc = Cqe {
                    wr_id: front_u64(rq, RECV_WR_ID).unwrap_or(0),
                    status: b::ib_wc_status_IB_WC_WR_FLUSH_ERR,
                    opcode: WcOpcode::Recv as u32,
                    qp_num: qp.qpn,
                    ib_qp: qp.ib_qp,
                    ..Default::default()
                };
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
