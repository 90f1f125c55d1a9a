// SPDX-License-Identifier: GPL-2.0

//! How a QP's engine runs: its work item or the doorbell's caller (which run passes,
//! [`crate::pass`]: the QP's own, then those of the local peers its loopback packets
//! reached), which of the two a doorbell picks, its retransmission and RNR timers, the
//! wake-up of a sender that stopped at its limit of packets in flight, and what a pass asks
//! for once the QP lock is dropped (CQ handlers, timers, another pass).

use crate::{
    counters::Counter,
    device::RrxeDev,
    eng::Outbox,
    ext::rdma::cq::CqRef,
    ext::{
        cpu,
        delay::msleep,
        net::{device::NetDevice, route::RouteMemo, skb::SkBuff, xmit::TxDone},
        sync::SpinLockBh,
        timer::{self, ArcTimer, TimerCallback},
    },
    pass::Pass,
    posters,
    qp::{Inner, QpShared, BUDGET, NO_PEER},
    tx::Egress,
};
use core::{
    cell::Cell,
    sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering},
};
use kernel::{prelude::*, sync::Arc, workqueue::WorkItem};

/// How long a destroyed QP waits for its packets to leave (milliseconds).
pub(crate) const TX_DRAIN_MS: u32 = 2000;
/// A QP stops sending with this many skbs in flight...
const TX_HIGH: usize = 64;
/// ... and resumes when they fall to this many (as rxe).
const TX_LOW: usize = 16;
/// A QP's READ responses go in loopback bursts, each up to 32 KiB allocated, only while it
/// has fewer skbs than this in flight: its memory in flight stays about what
/// [`TX_HIGH`] single responses of 4 KiB would hold.
const TX_BURSTS: usize = 8;
/// Passes a doorbell's call of [`QpShared::process`] runs: its QP's, then those of the QPs
/// that its loopback packets reached, and theirs (a request, its answer, the completion:
/// three); the QPs still woken after that are scheduled. Bounds the work done in a
/// doorbell's system call.
const INLINE_PASSES: u32 = 4;
/// Received packets a QP queues for its requests, and as many for its responses; more are
/// dropped, and the peer sends them again. A conforming requester has far fewer in flight
/// (its window of unacknowledged packets), and the responder takes no request while it
/// sends a READ's responses (but a later ask for the rest of the read it replays). A
/// responder answers a READ with one packet per MTU of it, as fast as it can: when this
/// QP's passes fall behind, the excess is dropped and asked for again (two VMs, five
/// 8 MiB READs: 12,591 of 66,531 responses dropped here, 2026-11-27).
pub(crate) const RX_QUEUE_MAX: usize = 512;

/// The receive path of another QP (loopback) or the stack frees this QP's skbs: wakes the
/// sender if it stopped at the high mark.
pub(crate) struct TxWake {
    pub(crate) throttled: AtomicBool,
    pub(crate) slot: Arc<WakeSlot>,
}

/// Who runs a QP's engine: nobody, one caller, or one caller that others asked to run
/// it once more; or, once the QP is destroyed, one caller finishing its pass and then
/// nobody ever again. One pass runs at a time: a caller that finds the engine running
/// asks for another pass and returns instead of spinning on the QP lock (a doorbell
/// spinning on the lock while the work item ran a long pass took a third of the CPU in a
/// 64 KiB write stream). The one running it sees the request when it is done and
/// schedules the work item: nothing asked for is lost.
pub(crate) struct Runner(AtomicU8);

const IDLE: u8 = 0;
const BUSY: u8 = 1;
const ARMED: u8 = 2;
const STOPPED: u8 = 3;
const STOPPING: u8 = 4;

impl Runner {
    /// Nobody runs the engine.
    pub(crate) const fn new() -> Self {
        Runner(AtomicU8::new(IDLE))
    }

    /// Takes the engine: true if the caller runs it now; false if another caller runs it
    /// (which is asked to run it once more) or it is stopped.
    fn claim(&self) -> bool {
        let mut cur = self.0.load(Ordering::Relaxed);
        loop {
            let next = match cur {
                IDLE => BUSY,
                BUSY | ARMED => ARMED,
                _ => return false,
            };
            // Acquire: a caller that takes the engine sees what the last one did. Release
            // (also when it was armed already): the one running it, whose `release` reads
            // this write, sees the work this caller queued before asking.
            match self
                .0
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return cur == IDLE,
                Err(now) => cur = now,
            }
        }
    }

    /// Gives the engine up; returns whether another pass was asked for meanwhile (never
    /// once [`Self::stop`] has begun: the engine is stopped then).
    fn release(&self) -> bool {
        let mut cur = self.0.load(Ordering::Relaxed);
        loop {
            let next = if cur == STOPPING { STOPPED } else { IDLE };
            // Release: the next caller (or `stop`) sees this pass's work.
            match self
                .0
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return cur == ARMED,
                Err(now) => cur = now,
            }
        }
    }

    /// Asks the caller running the engine for another pass, as [`Self::claim`] does when
    /// it fails, without taking an idle engine: false if nobody runs it (the caller sees
    /// that it runs), true if it is running (and runs again) or stopped.
    fn request(&self) -> bool {
        let mut cur = self.0.load(Ordering::Relaxed);
        loop {
            if cur == IDLE {
                return false;
            }
            if cur != BUSY && cur != ARMED {
                return true;
            }
            // Release (also when it was armed already, as in `claim`): the one running it,
            // whose `release` reads this write, sees the work this caller queued.
            match self
                .0
                .compare_exchange_weak(cur, ARMED, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
    }

    /// Stops the engine for good: no pass starts after this is called, and the one
    /// running, if any, has finished when it returns (CQ handlers included, perhaps in
    /// another QP's caller, [`QpShared::process`]). The wait is for that one pass, which
    /// is bounded ([`BUDGET`]). For teardown, process context.
    pub(crate) fn stop(&self) {
        let mut cur = self.0.load(Ordering::Relaxed);
        while cur != STOPPED {
            let next = if cur == IDLE { STOPPED } else { STOPPING };
            // Acquire: this caller sees the last pass's work.
            match self
                .0
                .compare_exchange(cur, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if next == STOPPED => return,
                Ok(_) => break,
                Err(now) => cur = now,
            }
        }
        while self.0.load(Ordering::Acquire) != STOPPED {
            msleep(1);
        }
    }
}

/// What a QP's doorbell remembers from one call to the next, to tell a client that waits
/// for each message from one that posts ahead ([`QpShared::ring`]). Written by doorbells
/// only; a race between two threads ringing the same QP only misplaces a pass.
pub(crate) struct Seen {
    /// The send queue's producer index at the last doorbell.
    sq_prod: AtomicU32,
    /// The consumer indices of the send and receive CQs at the last doorbell that found
    /// nothing outstanding before its WQEs; `u32::MAX` (never an index) until then, so
    /// that a new QP's first doorbell counts as one the client waited for.
    cq_cons: [AtomicU32; 2],
    /// Whether the last doorbell ran the engine in its caller (a client that waits for
    /// each message, a single CPU, or CPUs that clients keep busy): the work item then
    /// runs the loopback peers' passes too.
    inline: AtomicBool,
    /// The jiffy of the last look at the loopback peer's receive CQ, and what it saw: the
    /// CQ's completions queued (the high half) and consumer index (the low half), and its
    /// requests for notification; 0 before the first.
    peer_look: AtomicU32,
    peer_seen: AtomicU64,
    peer_arms: AtomicU32,
    /// What that look found: a task polls the peer's receive CQ ([`QpShared::peer_polls`]).
    peer_polls: AtomicBool,
}

impl Seen {
    /// Nothing seen yet.
    pub(crate) const fn new() -> Self {
        Seen {
            sq_prod: AtomicU32::new(0),
            cq_cons: [AtomicU32::new(u32::MAX), AtomicU32::new(u32::MAX)],
            inline: AtomicBool::new(false),
            peer_look: AtomicU32::new(0),
            peer_seen: AtomicU64::new(0),
            peer_arms: AtomicU32::new(0),
            peer_polls: AtomicBool::new(false),
        }
    }
}

/// The consumer index of `cq` (0 if it is gone: the core destroys CQs after their QPs).
fn cq_consumer(cq: &CqRef<RrxeDev>) -> u32 {
    cq.with(|cq| cq.consumer()).unwrap_or(0)
}

/// The completions a second that a loopback peer's receiver must take, polling, to count
/// as keeping its CPU busy ([`QpShared::peer_polls`]). Two vCPUs under TCG (2026-11-30,
/// one boot each): a SEND stream's engine in the client's thread took 64 KiB SENDs
/// (26,000 completions a second) from 978-1,164 to 1,616-1,653 MB/s, but 1 MiB ones (1,400
/// a second) from 1,380-1,475 to 1,283-1,318 MB/s: the work item beside did the copying
/// while the server, with little to reap, only polled. A figure of TCG: on faster CPUs
/// more streams of large messages pass it.
const POLLED_RATE: u32 = 8000;

/// How many QPs a [`Woken`] holds; more are scheduled.
const WOKEN_MAX: usize = 4;

/// QPs that packets sent over the loopback shortcut (or packets left in their boxes,
/// [`crate::direct`]) reached during a pass, for a doorbell's caller to run once the
/// sender's lock is dropped ([`QpShared::process`]): a message between two local QPs
/// then costs no work-item wake-up (a work item runs its own QP's pass alone, and
/// dropping the set schedules the peers). Only a QP that is connected to the sender, as
/// the sender is to it, joins ([`SentBy::wake`]): its peer's caller runs it, as its own
/// caller runs the peer. Any other QP gets its work item, so that no other user's thread
/// runs (and, preempted, holds up) its engine: a UD or GSI QP, which anyone may send to; a
/// kernel consumer's QP; and a connected QP that a QP it is not connected to sent to (any
/// local user's QP may name it as its destination, and the checks of the QP's pass cannot
/// tell local senders apart by their addresses). Beyond [`WOKEN_MAX`] QPs, and for those
/// still held when it is dropped, the QP's work item is scheduled: no QP is left without a
/// pass for the packets queued to it. One pass's, on its stack (not `Sync`).
#[derive(Default)]
pub(crate) struct Woken([Cell<Option<Arc<QpShared>>>; WOKEN_MAX]);

/// Who sent a loopback packet: a pass, for the QPs its packets reach.
#[derive(Clone, Copy)]
pub(crate) struct SentBy<'a> {
    /// The QPs its caller runs after it.
    pub(crate) woken: &'a Woken,
    /// The pass's QP.
    pub(crate) qp: &'a QpShared,
    /// Its loopback peer, if a pass found it ([`crate::qp::Inner::peer_qp`]), out of the
    /// QP's lock for the pass.
    pub(crate) peer: &'a Cell<Option<Arc<QpShared>>>,
}

impl SentBy<'_> {
    /// Hands `qp`, which a packet of this sender's (or a packet it left in `qp`'s box,
    /// [`crate::direct`]) reached, to the sender's caller (once) if the two are connected
    /// to each other, two userspace RC or UC QPs of this device ([`QpShared::peer`]); else,
    /// or if the set has no room, schedules its work item.
    pub(crate) fn wake(&self, qp: Arc<QpShared>) {
        if !self.peers(&qp) {
            qp.schedule();
            return;
        }
        self.woken.hold(qp);
    }

    /// The QP numbered `qpn` that a loopback packet of this sender's (or a packet for its
    /// box) goes to: the sender's peer if it has that number, else from its caller's set
    /// ([`Woken::find`]), else from `dev`'s table. A QP found that is connected to the
    /// sender, as the sender is to it, is kept as the sender's peer for its next passes
    /// (a lookup in the table, which the set could not spare a ping-pong's requester, took
    /// about 2 % of a small RDMA READ's round trip, 2026-12-01). A peer destroyed
    /// meanwhile is found until its destroy takes it from the sender, where the table
    /// would have dropped the packet; its queue goes with it.
    pub(crate) fn lookup(&self, dev: &RrxeDev, qpn: u32) -> Option<Arc<QpShared>> {
        let kept = self.peer.take();
        let hit = kept.as_ref().filter(|peer| peer.qpn == qpn).cloned();
        if hit.is_some() {
            self.peer.set(kept);
            return hit;
        }
        let found = self.woken.find(qpn).or_else(|| dev.qps().get(qpn));
        match found.as_ref() {
            // Checked under the sender's lock, which `QpShared::forget_peer` takes after the
            // peer changed its `peer`: a store made before that change is taken.
            Some(qp) if kept.is_none() && self.peers(qp) => self.peer.set(Some(qp.clone())),
            _ => self.peer.set(kept),
        }
        found
    }

    /// Whether `qp` and the sender are connected to each other, two userspace RC or UC QPs
    /// of this device ([`QpShared::peer`]).
    pub(crate) fn peers(&self, qp: &QpShared) -> bool {
        qp.peer.load(Ordering::Relaxed) == self.qp.serial
            && self.qp.peer.load(Ordering::Relaxed) == qp.serial
    }
}

impl Woken {
    /// Adds `qp` (once), or schedules it if there is no room; for [`SentBy::wake`], and for
    /// a QP that this set's caller ran and that was asked for once more meanwhile
    /// ([`Runner::release`]; a ping-pong's peer posted its answer on the completion the
    /// pass made), which passed the rule of [`SentBy::wake`] or is the set's first QP.
    fn hold(&self, qp: Arc<QpShared>) {
        let mut free = None;
        for slot in &self.0 {
            let held = slot.take();
            let same = held.as_ref().is_some_and(|h| Arc::ptr_eq(h, &qp));
            if held.is_none() && free.is_none() {
                free = Some(slot);
            }
            slot.set(held);
            if same {
                return;
            }
        }
        match free {
            Some(slot) => slot.set(Some(qp)),
            None => qp.schedule(),
        }
    }

    /// A set holding `qp` alone: the QP a call of [`QpShared::process`] runs first, whatever
    /// its type (the rule of [`SentBy::wake`] is for the peers its packets reach).
    fn with(qp: Arc<QpShared>) -> Self {
        let this = Self::default();
        this.0[0].set(Some(qp));
        this
    }

    /// The QP numbered `qpn` if this set holds it: a loopback packet's destination, most
    /// often the peer its pass sent to before (no lookup in the device's table). A QP
    /// destroyed meanwhile is still found here, where the table would have dropped the
    /// packet; its queue goes with it.
    fn find(&self, qpn: u32) -> Option<Arc<QpShared>> {
        self.0.iter().find_map(|slot| {
            let held = slot.take();
            let found = held.as_ref().filter(|qp| qp.qpn == qpn).cloned();
            slot.set(held);
            found
        })
    }

    /// Takes a QP (the one in the first slot held).
    pub(crate) fn take(&self) -> Option<Arc<QpShared>> {
        self.0.iter().find_map(Cell::take)
    }
}

impl Drop for Woken {
    fn drop(&mut self) {
        while let Some(qp) = self.take() {
            qp.schedule();
        }
    }
}

/// Where [`TxWake`] finds its QP; emptied when the QP is destroyed.
#[pin_data]
pub(crate) struct WakeSlot {
    #[pin]
    pub(crate) qp: SpinLockBh<Option<Arc<QpShared>>>,
}

impl TxDone for TxWake {
    fn tx_done(&self, in_flight: usize) {
        // A load first: the flag is rarely set, and a swap is a locked instruction per skb.
        // SeqCst as in `tx_throttled`: it sets the flag and then reads `in_flight`, this
        // reads the flag after `in_flight` dropped, so one of them sees the other.
        if in_flight <= TX_LOW
            && self.throttled.load(Ordering::SeqCst)
            && self.throttled.swap(false, Ordering::SeqCst)
        {
            let qp = self.slot.qp.lock().clone();
            if let Some(qp) = qp {
                qp.schedule();
            }
        }
    }
}

impl Inner {
    /// Whether few enough of the sender's skbs are in flight for a burst of copied READ
    /// responses ([`TX_BURSTS`]).
    pub(crate) fn tx_light(&self) -> bool {
        self.tx
            .as_ref()
            .is_some_and(|tx| tx.in_flight() < TX_BURSTS)
    }

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
    /// Queues a received packet and schedules the work item, or, for a loopback packet,
    /// hands the QP to the pass that sent it (`by`, [`SentBy::wake`]); drops the packet
    /// (and counts it) when the queue is full. Softirq context, or a sending pass.
    pub(crate) fn enqueue(self: Arc<Self>, skb: SkBuff, request: bool, by: Option<SentBy<'_>>) {
        let q = if request { &self.req_q } else { &self.resp_q };
        // Receive runs on several CPUs at once: the queue may exceed the limit by as many
        // packets as there are CPUs.
        if q.len() >= RX_QUEUE_MAX {
            self.dev.data().count(Counter::RcvdQueueFull);
            return;
        }
        q.push(skb);
        match by {
            Some(by) => by.wake(self),
            None => self.schedule(),
        }
    }

    /// Makes sure the engine runs after work was queued for it without running it here:
    /// the caller running it runs it again ([`Runner`]), or the work item is scheduled.
    /// Any context.
    pub(crate) fn kick(self: Arc<Self>) {
        if !self.runner.request() {
            self.schedule();
        }
    }

    /// Schedules the work item (it runs once more if it is running).
    pub(crate) fn schedule(self: Arc<Self>) {
        let wq = self.dev.data().wq().clone();
        // Already queued: it will see the new work.
        let _ = wq.enqueue(self);
    }

    /// Whether responses wait for the completer: queued, or left in the QP's box.
    fn responses_waiting(&self) -> bool {
        !self.resp_q.is_empty() || !self.boxes.resp.is_empty()
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

    /// For a stream, the QP's pass alone: the loopback peers it reaches get their own
    /// work items, which run beside it on another CPU (a stream's requester and
    /// responder overlap, as rxe's tasks do; running them one after the other in one
    /// work item would serialise them as the doorbell once did). For a client that waits
    /// for each message ([`QpShared::ring`]), the passes of the peers too, as the
    /// doorbell's: its doorbell finds this pass running when the client posts its next
    /// message on the completion this pass made (a request, its answer and its
    /// completion in one work item, not three one after the other). The same on a single
    /// CPU, where no work item runs beside another.
    ///
    /// Work left after the pass, or asked for while it ran, queues the item again, though
    /// it is running (an idle worker wakes, finds it running and sleeps again). Looping
    /// here instead, and asking running peers for another pass rather than queueing them,
    /// was measured slower (2026-11-26, test kernel: 2 B writes 0.84x, 64 KiB 0.83-0.93x,
    /// 12-29 % more kernel CPU per 64 KiB message): each pass then finds less work.
    fn run(this: Arc<QpShared>) {
        this.dev.data().count(Counter::WorkRuns);
        // Taken, not read: a QP that stopped ringing (now only a stream's responder,
        // say) goes back to running its own pass alone.
        let passes = if this.seen.inline.swap(false, Ordering::Relaxed) {
            INLINE_PASSES
        } else {
            1
        };
        this.process(passes, None);
    }
}

impl QpShared {
    /// The doorbell: the client posted send WQEs. Where the engine runs follows what the
    /// client does, as the doorbell finds it:
    ///
    /// - The client waits for each message (a ping-pong, a request and its answer): every
    ///   WQE it posted before this doorbell's has completed, and since the last such
    ///   doorbell it took a completion from one of the QP's CQs (the last answer, or the
    ///   acknowledge of its last message). The caller runs the engine at once, and the
    ///   passes of the local QPs its packets reach: request, answer and completion in one
    ///   system call, no work item woken ([`Self::process`]).
    /// - Otherwise the client posts ahead of its completions (a stream): the doorbell only
    ///   makes sure the engine runs ([`Self::kick`]) and returns, and the client goes back
    ///   to posting and polling while work items run the protocol, the QP's and each of
    ///   its loopback peers' apart, on the other CPU and beside each other. Running a
    ///   stream in the poster's thread left the other CPU idle and halved the
    ///   small-message rate.
    /// - Except on a single CPU (online now): there a work item cannot run beside the
    ///   client, only instead of it, when the scheduler switches to it. The caller runs
    ///   the engine at once for a stream too, as for a client that waits (in instruction
    ///   time on one vCPU, 2026-11-28: 2.2 to 2.4 times the small-message rate of
    ///   waking the work item for it, for WRITE, READ, SEND and atomics).
    /// - And except where clients that post ahead and poll keep every CPU busy: on each
    ///   other CPU, another task rang a stream's doorbell within the last 20 ms and did
    ///   not sleep since the one before ([`posters::crowded`]; two streams' clients on two
    ///   CPUs, say). A work item would run instead of one of them, not beside it, so the
    ///   caller runs a stream's engine too, charged to its own thread, and its CPU time,
    ///   polling otherwise, runs the protocol. Other busy tasks do not count: a work item
    ///   shares their CPU, whose time they need (and a stream's own work items would
    ///   count, as the device's many workers would with thousands of QPs: a rule that
    ///   counted any task misfired). A receiver that polls counts as such a client: a
    ///   task that reaps the loopback peer's receive CQ without arming it
    ///   ([`Self::peer_polls`]), as the server of a SEND stream that posts a receive for
    ///   each one it reaps. Its CPU is as busy; the work items took it from the server,
    ///   which then fell behind, and the responder found its receive queue empty (2 B
    ///   SENDs on two vCPUs, 2026-11-30, medians of 3: 61,200 messages a second with RNR
    ///   NAKs, 117,500 and none or one a run in the caller).
    ///
    /// Neither test alone tells the two apart: a pass run in the doorbell completes its
    /// WQE before the call returns (the answer of a local peer comes back in the same
    /// call), so that the next doorbell of a stream, too, finds nothing outstanding; but the
    /// client of a stream does not take a completion between two of its doorbells. And
    /// a client that took one may still be posting ahead (several QPs sharing a CQ, a
    /// stream reaping as it goes): it has WQEs outstanding. A fresh QP's first doorbell
    /// runs at once. On two or more CPUs, a ping-pong that completes nothing it polls
    /// (unsignaled WQEs, the answer found in memory) gets its work item for every message,
    /// as with rxe, unless its two clients poll on two CPUs and so keep them busy.
    ///
    /// The indices come from memory the client writes: any value only picks where the
    /// engine runs, and either place runs all of it.
    pub(crate) fn ring(self: Arc<Self>) {
        // Always asked: it keeps track of what the client did since the last doorbell.
        let waits = self.waits();
        let online = cpu::num_online();
        let single = !waits && online == 1;
        let crowded = !waits && !single && posters::crowded(online, self.peer_polls().into());
        let inline = waits || single || crowded;
        self.seen.inline.store(inline, Ordering::Relaxed);
        if inline {
            self.dev.data().count(Counter::DoorbellInline);
            if crowded {
                self.dev.data().count(Counter::DoorbellCrowded);
            }
            self.process(INLINE_PASSES, Some(Counter::DoorbellBusy));
        } else {
            self.dev.data().count(Counter::DoorbellKick);
            self.kick();
        }
    }

    /// Whether a task polls the receive CQ of this QP's loopback peer without waiting for
    /// events, and takes many completions: since the last look, a jiffy or more before,
    /// the consumer took some, at least [`POLLED_RATE`] a second were queued, and the CQ
    /// was neither armed nor asked to be (a receiver that sleeps on events arms it each
    /// time). Such a receiver (a server that reaps its receives and posts new ones in a
    /// loop) keeps a CPU busy, as a client that posts ahead and polls does
    /// ([`Self::ring`]). Not if that CQ is one of this QP's own: the poller may be this
    /// caller. Where the receiver polls is not known: one that shares the caller's CPU
    /// counts too, though a work item would find the other CPU idle. One look a jiffy;
    /// the doorbells in between take its answer. No peer, or one that changed or went:
    /// no.
    ///
    /// The consumer index is memory the receiver writes: a receiver that moves it without
    /// polling makes the sender's stream run in the sender's thread, which costs the
    /// sender CPU time the work item would have taken, and nothing else.
    fn peer_polls(&self) -> bool {
        let now = timer::now() as u32;
        let seen = &self.seen;
        let last = seen.peer_look.load(Ordering::Relaxed);
        if last == now {
            return seen.peer_polls.load(Ordering::Relaxed);
        }
        seen.peer_look.store(now, Ordering::Relaxed);
        let qpn = self.peer_qpn.load(Ordering::Relaxed);
        let w = if self.peer.load(Ordering::Relaxed) == NO_PEER {
            None
        } else {
            self.dev
                .data()
                .qps()
                .get(qpn)
                .filter(|peer| {
                    peer.peer.load(Ordering::Relaxed) == self.serial
                        && self.peer.load(Ordering::Relaxed) == peer.serial
                        && !peer.recv_cq.same(&self.send_cq)
                        && !peer.recv_cq.same(&self.recv_cq)
                })
                .and_then(|peer| peer.recv_cq.with(|cq| cq.reaping()))
        };
        let Some(w) = w else {
            // The next look compares with nothing: its answer is no, too.
            seen.peer_seen.store(0, Ordering::Relaxed);
            seen.peer_polls.store(false, Ordering::Relaxed);
            return false;
        };
        let before = seen.peer_seen.load(Ordering::Relaxed);
        let (pushed, consumer) = ((before >> 32) as u32, before as u32);
        let arms = seen.peer_arms.load(Ordering::Relaxed);
        // At least POLLED_RATE / HZ a jiffy (HZ: the jiffies of a second).
        let (hz, jiffies) = (timer::usecs_to_jiffies(1_000_000), now.wrapping_sub(last));
        let many = u64::from(w.pushed.wrapping_sub(pushed)) * hz as u64
            >= u64::from(POLLED_RATE) * u64::from(jiffies);
        let polls = before != 0 && many && w.consumer != consumer && w.arms == arms && !w.armed;
        seen.peer_seen.store(
            (u64::from(w.pushed) << 32) | u64::from(w.consumer),
            Ordering::Relaxed,
        );
        seen.peer_arms.store(w.arms, Ordering::Relaxed);
        seen.peer_polls.store(polls, Ordering::Relaxed);
        polls
    }

    /// Whether the client waits for the WQEs this doorbell is for (see [`Self::ring`]).
    fn waits(&self) -> bool {
        let q = &self.sq_watch;
        let (prod, cons) = (q.producer(), q.consumer());
        let prev = self.seen.sq_prod.swap(prod, Ordering::Relaxed);
        // The WQEs posted before this doorbell's: from the consumer (the oldest not
        // completed) up to the producer index that the last doorbell saw, unless the
        // consumer has gone past that (then none).
        let before = q.distance(cons, prev);
        if before != 0 && before <= q.distance(cons, prod) {
            return false;
        }
        let send = cq_consumer(&self.send_cq);
        let recv = if self.recv_cq.same(&self.send_cq) {
            send
        } else {
            cq_consumer(&self.recv_cq)
        };
        let [s, r] = &self.seen.cq_cons;
        let took = s.swap(send, Ordering::Relaxed) != send;
        r.swap(recv, Ordering::Relaxed) != recv || took
    }

    /// Runs a pass of this QP, then those of the QPs that its loopback packets reached (a
    /// local responder, then the requester its acknowledges reached, ...), and once more
    /// any of them asked for while it ran, up to `passes` in all; schedules the QPs left.
    /// A QP whose engine another caller runs is left to that caller ([`Runner`]); `busy`
    /// counts that for this QP. The doorbell's caller
    /// ([`Self::ring`]) or the work item; process context, no QP lock held.
    fn process(self: Arc<Self>, passes: u32, mut busy: Option<Counter>) {
        // The device's net device, once for all the passes (their QPs are this device's).
        let Some(ndev) = self.dev.netdev() else {
            self.req_q.purge();
            self.resp_q.purge();
            return;
        };
        let todo = Woken::with(self);
        for _ in 0..passes {
            let Some(qp) = todo.take() else {
                return;
            };
            let first = busy.take();
            if !qp.runner.claim() {
                if let Some(c) = first {
                    qp.dev.data().count(c);
                }
                continue;
            }
            qp.pass(&ndev, &todo);
            if qp.runner.release() {
                // Asked for while it ran: this caller runs it again if passes are left,
                // as it runs the QPs its packets reach; else its work item does.
                todo.hold(qp);
            }
        }
        // Dropping `todo` schedules what it holds.
    }

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
    /// carries out. Queues the work item again if work is left. Sends through `ndev`, the
    /// device's net device; the peers that its loopback packets reach join `woken`. Process
    /// context.
    fn pass(self: &Arc<Self>, ndev: &NetDevice, woken: &Woken) {
        let qp: &QpShared = self;
        let mut inner = qp.inner.lock();
        if inner.dead {
            return;
        }
        // Out of the lock's data while the pass borrows it, back after.
        let peer = Cell::new(inner.peer_qp.take());
        // The route of the pass's last packet serves its next ones, and, if it may be
        // kept, the next passes' (checked again before each).
        let out = RouteMemo::with(ndev, &qp.route, |memo| {
            let mut p = Pass {
                qp,
                dev: &qp.dev,
                link: Egress {
                    by: SentBy {
                        woken,
                        qp,
                        peer: &peer,
                    },
                    memo,
                },
                inner: &mut inner,
                out: Outbox::default(),
            };
            if p.in_error() {
                p.inner.flush_all(qp, &mut p.out);
            }
            // A stage with nothing to do is not entered: a small RDMA READ's round trip
            // runs three passes, each with two idle stages, whose checks took 2 % of its
            // instructions (2026-12-01).
            if qp.responses_waiting() {
                for _ in 0..BUDGET {
                    let skb = qp.resp_q.pop();
                    // After the pop, before the response: those its sender left before it
                    // go first ([`crate::respbox`], which needs the skb freed only after
                    // this pop).
                    crate::comp::on_left(&mut p);
                    let Some(skb) = skb else { break };
                    crate::comp::on_response(&mut p, skb);
                }
            }
            // Pending again: a pass that ended after the expiry restarted the timer.
            if core::mem::take(&mut p.inner.eng.timed_out) && !self.timer_pending::<0>() {
                crate::comp::on_timeout(&mut p);
            }
            if crate::resp::pending(&p) {
                let more = crate::resp::run(&mut p);
                p.out.again |= more;
            }
            if crate::req::pending(&p) {
                let more = crate::req::run(&mut p);
                p.out.again |= more;
            }
            crate::comp::complete_sent(&mut p);
            p.out.again |= qp.responses_waiting();
            p.out
        });
        inner.peer_qp = peer.into_inner();
        drop(inner);
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
                // An expiry of the retransmission timer not handled yet fell in the wait:
                // void (`comp::on_timeout`).
                inner.eng.timed_out = false;
            }
        }
        this.schedule();
    }
}
