// SPDX-License-Identifier: GPL-2.0

//! How a QP's engine runs: its work item (which runs a pass, [`crate::pass`]), its
//! retransmission and RNR timers, the wake-up of a sender that stopped at its limit of
//! packets in flight, and what a pass asks for once the QP lock is dropped (CQ handlers,
//! timers, another pass).

use crate::{
    counters::Counter,
    device::RrxeDev,
    eng::Outbox,
    ext::{
        net::{skb::SkBuff, xmit::TxDone},
        rdma::device::{Device, Registered},
        sync::SpinLockBh,
        timer::{ArcTimer, TimerCallback},
    },
    pass::Pass,
    qp::{Inner, QpShared, BUDGET},
};
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{prelude::*, sync::Arc, types::ARef, workqueue::WorkItem};

/// How long a destroyed QP waits for its packets to leave (milliseconds).
pub(crate) const TX_DRAIN_MS: u32 = 2000;
/// A QP stops sending with this many skbs in flight...
const TX_HIGH: usize = 64;
/// ... and resumes when they fall to this many (as rxe).
const TX_LOW: usize = 16;
/// Received packets a QP queues for its requests, and as many for its responses; more are
/// dropped. A conforming peer has far fewer in flight (a requester at most its window of
/// unacknowledged packets, a responder the answers to what was asked), and the responder
/// takes no request while it sends a READ's responses; the peer retransmits what was
/// dropped.
pub(crate) const RX_QUEUE_MAX: usize = 512;

/// The receive path of another QP (loopback) or the stack frees this QP's skbs: wakes the
/// sender if it stopped at the high mark.
pub(crate) struct TxWake {
    pub(crate) throttled: AtomicBool,
    pub(crate) slot: Arc<WakeSlot>,
    /// Keeps the device registered, hence the module loaded, while the QP's skbs are in
    /// flight, also after the QP is destroyed: the skb destructor is this module's code,
    /// and module exit unregisters its devices, which waits for their references.
    pub(crate) _dev: ARef<Device<RrxeDev, Registered>>,
}

/// Where [`TxWake`] finds its QP; emptied when the QP is destroyed.
#[pin_data]
pub(crate) struct WakeSlot {
    #[pin]
    pub(crate) qp: SpinLockBh<Option<Arc<QpShared>>>,
}

impl TxDone for TxWake {
    fn tx_done(&self, in_flight: usize) {
        if in_flight <= TX_LOW && self.throttled.swap(false, Ordering::SeqCst) {
            let qp = self.slot.qp.lock().clone();
            if let Some(qp) = qp {
                qp.schedule();
            }
        }
    }
}

impl Inner {
    /// Whether the sender must stop: too many of its packets are in flight (it is woken
    /// when they drain), or the QP is being destroyed.
    pub(crate) fn tx_throttled(&self) -> bool {
        let Some(tx) = self.tx.as_ref() else {
            return true;
        };
        if tx.in_flight() < TX_HIGH {
            return false;
        }
        tx.data().throttled.store(true, Ordering::SeqCst);
        // Freed meanwhile: the wake-up may have been missed.
        if tx.in_flight() < TX_HIGH {
            tx.data().throttled.store(false, Ordering::SeqCst);
            return false;
        }
        true
    }
}

impl QpShared {
    /// Queues a received packet and schedules the work item; drops it (and counts it) when
    /// the queue is full. Softirq context.
    pub(crate) fn enqueue(self: Arc<Self>, skb: SkBuff, request: bool) {
        let q = if request { &self.req_q } else { &self.resp_q };
        // Receive runs on several CPUs at once: the queue may exceed the limit by as many
        // packets as there are CPUs.
        if q.len() >= RX_QUEUE_MAX {
            self.dev.data().count(Counter::RcvdQueueFull);
            return;
        }
        q.push(skb);
        self.schedule();
    }

    /// Schedules the work item (it runs once more if it is running).
    pub(crate) fn schedule(self: Arc<Self>) {
        let wq = self.dev.data().wq().clone();
        // Already queued: it will see the new work.
        let _ = wq.enqueue(self);
    }

    /// Handles what the engine asked for once the lock is dropped.
    pub(crate) fn finish(self: &Arc<Self>, out: Outbox) {
        if out.send_cq {
            self.send_cq.notify();
        }
        if out.recv_cq && !(out.send_cq && self.recv_cq.same(&self.send_cq)) {
            self.recv_cq.notify();
        }
        match out.retrans {
            Some(0) => {
                self.cancel_timer::<0>();
            }
            Some(us) => self.arm_timer_usecs::<0>(u32::try_from(us).unwrap_or(u32::MAX)),
            None => {}
        }
        if let Some(us) = out.rnr {
            self.arm_timer_usecs::<1>(us);
        }
        if out.again {
            self.clone().schedule();
        }
    }
}

impl WorkItem for QpShared {
    type Pointer = Arc<QpShared>;

    fn run(this: Arc<QpShared>) {
        this.process();
    }
}

impl QpShared {
    /// One pass of the engine, its stages in the order in which a packet's consequences
    /// flow, each within its budget:
    ///
    /// 1. the completer ([`crate::comp`]) takes the responses received and a
    ///    retransmission timeout, completes send WQEs and *decides* retries;
    /// 2. the responder ([`crate::resp`]) answers the requests received;
    /// 3. the requester ([`crate::req`]) *carries out* the completer's retry decision (a
    ///    rewind, or a range of an RDMA READ asked for again), then sends new work;
    /// 4. the completer completes, in order, what was sent and needs no acknowledge.
    ///
    /// No stage calls back into another: what one decides for a later one it records in
    /// the engine ([`crate::eng::Engine::retry_plan`], `wait_completion`), and what must
    /// happen once the QP lock is dropped in the pass's [`Outbox`], which [`Self::finish`]
    /// carries out. Queues the work item again if work is left. Process context.
    pub(crate) fn process(self: Arc<Self>) {
        let qp = &*self;
        let Some(ndev) = qp.dev.netdev() else {
            qp.req_q.purge();
            qp.resp_q.purge();
            return;
        };
        let out = {
            let mut inner = qp.inner.lock();
            if inner.dead {
                return;
            }
            let mut p = Pass {
                qp,
                dev: &qp.dev,
                ndev: &ndev,
                inner: &mut inner,
                out: Outbox::default(),
            };
            if p.in_error() {
                p.inner.flush_all(qp, &mut p.out);
            }
            for _ in 0..BUDGET {
                let Some(skb) = qp.resp_q.pop() else { break };
                crate::comp::on_response(&mut p, skb);
            }
            if core::mem::take(&mut p.inner.eng.timed_out) {
                crate::comp::on_timeout(&mut p);
            }
            let more = crate::resp::run(&mut p);
            p.out.again |= more;
            let more = crate::req::run(&mut p);
            p.out.again |= more;
            crate::comp::complete_sent(&mut p);
            p.out.again |= !qp.resp_q.is_empty();
            p.out
        };
        self.finish(out);
    }
}

impl TimerCallback<0> for QpShared {
    fn fired(this: Arc<Self>) {
        this.inner.lock().eng.timed_out = true;
        this.schedule();
    }
}

impl TimerCallback<1> for QpShared {
    fn fired(this: Arc<Self>) {
        {
            let mut inner = this.inner.lock();
            if inner.eng.rnr_wait {
                inner.eng.rnr_wait = false;
                inner.eng.retry_plan.rewind = true;
            }
        }
        this.schedule();
    }
}
