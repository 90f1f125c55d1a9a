// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: creation with their send and receive queues (mapped into the user context
//! for userspace QPs), attribute and state changes by the IBTA state table (bounds in
//! `qp_attr`, the error state and its flush in `qp_error`), queries, and kernel
//! consumers' posting. A QP's protocol engine: its state in `eng`, a pass of it in `pass`,
//! its work item and timers in `task`.

use crate::{
    ah::Ah,
    device::RrxeDev,
    direct::Batch,
    eng::{Engine, Outbox, MAX_TRACKED},
    ext::{
        delay::msleep,
        error::eopnotsupp,
        net::{route::KeptRoute, skb::SkbQueue, xmit::TxOwner},
        rdma::{
            ah::{AhAttrs, RoceAv},
            cq::CqRef,
            device::{Device, Registered},
            mmap::MmapEntry,
            qp::{copy_cap, transition_ok, QpAttr, QpAttrs, QpCap, QpInit, QpInitAttr},
            qp_event::QpEvents,
            rxe_abi::{CreateQpResp, MmInfo, RECV_WQE_SIZE, SEND_WQE_SIZE},
            types::{Flags, QpAttrMask, QpState, SigType},
            udata::Udata,
            wr::{RecvWrs, SendWrs},
        },
        sync::{SpinLockBh, SpinLockIrq},
        timer::ArcTimer,
        workqueue::flush_work,
        xarray::IdTable,
    },
    keys::MrCache,
    mem::Owner,
    new_spinlock_bh, new_spinlock_irq, params,
    proto::{
        admit::QpKeys, bth::QPN_MASK, completer::RetryCounter, packet::Headers, psn::Psn,
        verbs::QpType,
    },
    qp_attr::{check_attr, Params},
    queue::{map, FromClient, Producer, Watch},
    reqbox::ReqBox,
    respbox::{Resp, RespBox},
    srq::SrqShared,
    task::{Runner, Seen, TxWake, WakeSlot, TX_DRAIN_MS},
    tx::{self, Path},
    wqe,
};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use kernel::{
    prelude::*,
    sync::Arc,
    types::ARef,
    workqueue::{impl_has_work, new_work, Work},
};

/// `IB_QP_ATTR_STANDARD_BITS`: the attribute mask bits the core defines.
const STANDARD_BITS: u32 = (1 << 21) - 1;

/// The QPs of a device by number.
pub(crate) type QpTable = IdTable<QpShared>;

/// Packets a work item run takes from each queue, and packets it sends, before it lets
/// other work run (it queues itself again).
pub(crate) const BUDGET: u32 = 64;
/// The Q_Key of the GSI QP (IBA 15.4.6).
pub(crate) const GSI_QKEY: u32 = 0x8001_0000;
/// [`QpShared::peer`] of a QP that no other QP's caller runs: no QP's serial.
pub(crate) const NO_PEER: u64 = 0;

/// The serial of the next QP created ([`QpShared::serial`]).
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(NO_PEER + 1);

/// A queue pair (the driver data of an `ib_qp`).
pub(crate) struct Qp {
    shared: Arc<QpShared>,
    table: Arc<QpTable>,
    /// Lets the transmit path wake the QP (holds a reference to it until destroyed).
    wake: Arc<WakeSlot>,
    /// The user context's mappings of the queues.
    _mmaps: [Option<MmapEntry>; 2],
}

impl Drop for Qp {
    fn drop(&mut self) {
        self.table.remove(self.shared.qpn);
        // No more work: packets still queued are dropped, a running work item finds the
        // QP dead, and the timers can no longer fire.
        let (tx, peer, mrs) = {
            let mut inner = self.shared.inner.lock();
            inner.dead = true;
            let cons = inner.sq.consumer();
            // Drops the references to MRs the engine held (never their memory: see
            // `crate::mr`).
            inner.eng.clear(cons);
            (
                inner.tx.take(),
                inner.peer_qp.take(),
                core::mem::take(&mut inner.mrs),
            )
        };
        // It names no peer any more, and its peer keeps no reference to it.
        drop(peer);
        drop(mrs);
        // No pass runs any more (`dead`, under the lock just dropped): none keeps a route.
        let route = core::mem::take(&mut *self.shared.route.lock());
        drop(route);
        if self.shared.peer.swap(NO_PEER, Ordering::Relaxed) != NO_PEER {
            self.shared
                .forget_peer(self.shared.peer_qpn.swap(0, Ordering::Relaxed));
        }
        *self.wake.qp.lock() = None;
        self.shared.shutdown_timer_sync::<0>();
        self.shared.shutdown_timer_sync::<1>();
        // A pass in progress (one that found the QP alive before `dead` was set) finishes:
        // it may still call the CQs' handlers, and the consumer may destroy the CQs once
        // this returns. It may run in the work item, the doorbell or another QP's caller
        // (a loopback peer's); no pass starts after.
        self.shared.runner.stop();
        flush_work(&*self.shared);
        self.shared.req_q.purge();
        self.shared.resp_q.purge();
        if let Some(tx) = tx {
            // The skbs' destructor is this module's code: wait for the stack to free them
            // (a sender stuck behind a dead link gives up after two seconds).
            let mut waited = 0;
            while tx.in_flight() > 0 && waited < TX_DRAIN_MS {
                msleep(1);
                waited += 1;
            }
            if tx.in_flight() > 0 {
                pr_warn!(
                    "QP {}: {} packets still queued for transmission\n",
                    self.shared.qpn,
                    tx.in_flight()
                );
            }
        }
    }
}

/// The state of a QP that its packets (and its number) find.
#[pin_data]
pub(crate) struct QpShared {
    pub(crate) qpn: u32,
    pub(crate) qp_type: QpType,
    pub(crate) signal_all: bool,
    /// The state (a [`QpState`]'s raw value), mirrored out of the lock for posting, which
    /// may run with interrupts disabled.
    pub(crate) state: AtomicU32,
    /// The identity of the QP's PD.
    pub(crate) pd: crate::ext::rdma::mr::PdId,
    /// The `ib_qp` (its address), which kernel consumers' completions name.
    pub(crate) ib_qp: usize,
    /// A kernel consumer's QP.
    pub(crate) kernel: bool,
    /// This QP's serial among all QPs created since the module loaded: unlike its number,
    /// never another QP's.
    pub(crate) serial: u64,
    /// The serial of the QP this one is connected to, if this is a userspace RC or UC QP
    /// whose path leads back to this device and that QP, of the same type, existed when
    /// this one was last modified ([`NO_PEER`] otherwise), set by [`Qp::modify`] (and to
    /// [`NO_PEER`] by the QP's destroy): the one QP whose pass's caller may run this QP's
    /// pass ([`crate::task::SentBy::wake`]), and that may leave packets in its boxes
    /// ([`crate::direct`]).
    pub(crate) peer: AtomicU64,
    /// The number of that QP, set with [`Self::peer`] (0 with [`NO_PEER`]): where a
    /// doorbell looks for it ([`QpShared::ring`]).
    pub(crate) peer_qpn: AtomicU32,
    pub(crate) send_cq: CqRef<RrxeDev>,
    pub(crate) recv_cq: CqRef<RrxeDev>,
    pub(crate) srq: Option<Arc<SrqShared>>,
    /// The QP's asynchronous events.
    pub(crate) events: Arc<QpEvents>,
    /// Received requests (for the responder) and responses (for the completer). Only a
    /// pass takes them, one at a time, each freed after it is taken, and a request only
    /// while the request box is empty: the order of what a loopback peer leaves in the
    /// QP's boxes depends on it ([`crate::direct`]).
    #[pin]
    pub(crate) req_q: SkbQueue,
    #[pin]
    pub(crate) resp_q: SkbQueue,
    /// What the loopback peer left for the QP instead of packets ([`crate::direct`]).
    pub(crate) boxes: Pin<KBox<Boxes>>,
    /// Who runs the engine (one pass at a time).
    pub(crate) runner: Runner,
    /// The send queue's indices, for the doorbell.
    pub(crate) sq_watch: Watch,
    /// What the doorbell saw last.
    pub(crate) seen: Seen,
    #[pin]
    work: Work<QpShared>,
    #[pin]
    retrans_timer: crate::ext::timer::Timer<QpShared, 0>,
    #[pin]
    rnr_timer: crate::ext::timer::Timer<QpShared, 1>,
    #[pin]
    pub(crate) inner: SpinLockBh<Inner>,
    /// What admission checks the QP's packets against where they arrive, before they are
    /// queued ([`crate::admit`]): a copy of the path's GIDs and the Q_Key, set with them
    /// under [`Self::inner`] ([`keys_of`]); a lock no other is taken under.
    #[pin]
    pub(crate) admit_keys: SpinLockBh<QpKeys>,
    /// The route of the QP's last datagram through the net device, for its next passes
    /// (a plain IPv4 one only: [`KeptRoute`]); under a lock of its own, which only a pass
    /// that sends through the net device takes (a loopback pass does not).
    #[pin]
    pub(crate) route: SpinLockBh<KeptRoute>,
    /// Kernel consumers post under this lock (they may hold IRQ-safe locks), to the
    /// producer sides of the queues, apart from the engine's lock.
    #[pin]
    posting: SpinLockIrq<Posting>,
    /// The device, kept registered while the QP exists (dropped last).
    pub(crate) dev: ARef<Device<RrxeDev, Registered>>,
}

/// The producer sides of a kernel QP's queues and the capacities posting checks.
struct Posting {
    sq: Producer,
    rq: Option<Producer>,
    max_send_sge: usize,
    max_inline: usize,
    max_recv_sge: usize,
}

impl_has_work! {
    impl HasWork<QpShared> for QpShared { self.work }
}

crate::impl_has_timer! {
    impl HasTimer<0> for QpShared { self.retrans_timer }
    impl HasTimer<1> for QpShared { self.rnr_timer }
}

/// Empties a QP's queue of received packets at its reset: they go as its flushed work
/// goes (consumed, counted in rcvd_pkts only). Bounded: a queue holds at most
/// `RX_QUEUE_MAX` packets (and one more per CPU), and from the reset on admission refuses
/// what arrives.
fn flush_queue(q: &SkbQueue) {
    while let Some(skb) = q.pop() {
        skb.consume();
    }
}

/// What admission checks a packet for a QP of `qp_type` with `path` and `params` against.
fn keys_of(qp_type: QpType, path: &Path, params: &Params) -> QpKeys {
    QpKeys {
        qp_type,
        sgid: path.av().sgid,
        dgid: path.av().dgid,
        qkey: params.qkey,
    }
}

/// What the QP lock protects.
pub(crate) struct Inner {
    /// Current state.
    pub(crate) state: QpState,
    /// Attributes set by `modify_qp`.
    pub(crate) attr: QpAttrs,
    /// The primary path (RC and UC).
    pub(crate) path: Path,
    pub(crate) cap: QpCap,
    pub(crate) sq: FromClient,
    /// Absent with an SRQ.
    pub(crate) rq: Option<FromClient>,
    pub(crate) eng: Engine,
    /// Owns the QP's skbs in flight; taken when the QP is destroyed.
    pub(crate) tx: Option<TxOwner<TxWake>>,
    /// The attributes the engine uses, decoded.
    pub(crate) params: Params,
    /// The QP was destroyed.
    pub(crate) dead: bool,
    /// What the QP took from its boxes and has not handled yet ([`crate::direct`]);
    /// taken out while a pass handles it.
    pub(crate) hands: Option<KBox<Hands>>,
    /// The loopback peer, once a pass found it connected to this QP as this QP is to it
    /// ([`crate::task::SentBy::lookup`]): where later passes find it without a lookup in
    /// the device's table; taken out while a pass runs. Kept only while the two name each
    /// other: a modify that changes [`QpShared::peer`] drops it, and a QP that stops naming
    /// its peer (a modify, or its destroy) takes the peer's reference to it
    /// ([`QpShared::forget_peer`]). So two connected QPs do not keep each other, and none
    /// keeps a QP past that QP's destroy, unless it is being destroyed itself: its own
    /// destroy then drops it. Dropped with no lock held (the last reference to a QP frees
    /// its queues, which may sleep).
    pub(crate) peer_qp: Option<Arc<QpShared>>,
    /// The MRs the QP found by key last ([`crate::keys`]).
    pub(crate) mrs: MrCache,
}

/// A QP's boxes, where its loopback peer leaves packets for it ([`crate::direct`]).
#[pin_data]
pub(crate) struct Boxes {
    /// Responses, for the completer ([`crate::respbox`]).
    #[pin]
    pub(crate) resp: RespBox,
    /// Requests, for the responder ([`crate::reqbox`]).
    #[pin]
    pub(crate) req: ReqBox,
}

/// What a QP took from its boxes ([`Boxes`]), to handle without their locks.
pub(crate) struct Hands {
    /// The requests the responder took and has not handled yet ([`crate::reqbox`]).
    pub(crate) req: Batch<Headers>,
    /// The responses the completer took (empty between passes,
    /// [`crate::comp::on_left`]).
    pub(crate) resp: Batch<Resp>,
}

impl QpShared {
    /// The QP as the owner of memory accesses (for key checks).
    pub(crate) fn owner(&self) -> Owner {
        Owner {
            pd: self.pd,
            qpn: self.qpn,
        }
    }

    /// Takes from the QP numbered `qpn`, the peer this QP named until [`Self::peer`]
    /// changed, its reference to this QP ([`Inner::peer_qp`]). A pass of that QP stores
    /// one only while this QP names it, which it checks under its lock: one that checked
    /// before the change stored it before this takes it. Process context, no lock held.
    fn forget_peer(&self, qpn: u32) {
        let Some(peer) = self.dev.data().qps().get(qpn) else {
            return;
        };
        let stale = {
            let mut inner = peer.inner.lock();
            let to_this = inner
                .peer_qp
                .as_ref()
                .is_some_and(|qp| core::ptr::eq(&**qp, self));
            if to_this {
                inner.peer_qp.take()
            } else {
                None
            }
        };
        drop(stale);
    }
}

impl Inner {
    /// Whether the responder holds requests it took from its box and has not handled yet
    /// ([`crate::reqbox`]).
    pub(crate) fn requests_in_hand(&self) -> bool {
        self.hands.as_ref().is_some_and(|h| !h.req.is_empty())
    }

    /// Empties the QP's boxes and what it took from them ([`crate::direct`]).
    pub(crate) fn clear_boxes(&mut self, qp: &QpShared) {
        qp.boxes.resp.clear();
        qp.boxes.req.clear();
        if let Some(h) = self.hands.as_mut() {
            h.req.clear();
            h.resp.clear();
        }
    }

    /// Whether requests may be received (RTR, RTS, SQD, SQE).
    pub(crate) fn can_receive(&self) -> bool {
        matches!(
            self.state,
            QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
        )
    }

    /// Whether the send side runs (RTS, or SQD finishing what it started).
    pub(crate) fn can_send(&self) -> bool {
        matches!(self.state, QpState::Rts | QpState::Sqd)
    }
}

/// Checks the capacities asked for; fails with `EINVAL` beyond the device's limits.
fn check_cap(cap: &QpCap, has_srq: bool) -> Result {
    let max_wr = params::MAX_QP_WR;
    let max_sge = params::MAX_SGE;
    if cap.max_send_wr > max_wr
        || cap.max_send_sge > max_sge
        || cap.max_inline_data > params::MAX_INLINE_DATA
    {
        return Err(EINVAL);
    }
    if !has_srq && (cap.max_recv_wr > max_wr || cap.max_recv_sge > max_sge) {
        return Err(EINVAL);
    }
    Ok(())
}

impl Qp {
    /// Creates a QP; returns it and its number.
    pub(crate) fn new(
        dev: &Device<RrxeDev>,
        init: &mut QpInit<'_, RrxeDev>,
        udata: &mut Udata<'_>,
    ) -> Result<(Self, u32)> {
        // The rxe ABI has no command data for this verb.
        if udata.in_len() != 0 {
            return Err(EINVAL);
        }
        if init.create_flags() != 0 {
            return Err(eopnotsupp());
        }
        let qp_type = QpType::from_u32(init.qp_type()).ok_or_else(eopnotsupp)?;
        if qp_type == QpType::Gsi && init.port_num() != 1 {
            return Err(EINVAL);
        }
        let (Some(send_cq), Some(recv_cq)) = (init.send_cq(), init.recv_cq()) else {
            return Err(EINVAL);
        };
        let srq = init.srq().map(|s| s.shared().clone());
        let has_srq = srq.is_some();
        check_cap(init.cap(), has_srq)?;
        let dev_ref = dev.try_get().ok_or(ENODEV)?;

        // Send queue: room for the SGEs or the inline data, whichever is larger.
        let cap = init.cap();
        let sge_room =
            (cap.max_send_sge as usize * wqe::SGE_SIZE).max(cap.max_inline_data as usize);
        let sq = FromClient::new(cap.max_send_wr, SEND_WQE_SIZE + sge_room)?;
        cap.max_send_wr = sq.capacity();
        cap.max_send_sge = (sge_room / wqe::SGE_SIZE) as u32;
        cap.max_inline_data = sge_room as u32;
        let rq = if has_srq {
            None
        } else {
            let rq = FromClient::new(
                cap.max_recv_wr,
                RECV_WQE_SIZE + cap.max_recv_sge as usize * wqe::SGE_SIZE,
            )?;
            cap.max_recv_wr = rq.capacity();
            Some(rq)
        };
        let cap = copy_cap(cap);
        let recv_sges = match &srq {
            Some(srq) => srq.max_sge(),
            None => cap.max_recv_sge,
        };
        let eng = Engine::new(
            (sq.capacity() + 1).min(MAX_TRACKED),
            cap.max_send_sge,
            recv_sges,
        )?;
        let wake = Arc::pin_init(
            pin_init!(WakeSlot {
                qp <- new_spinlock_bh!(None, "rrxe:qp_wake"),
            }),
            GFP_KERNEL,
        )?;
        // Apart from the QP's state, which they would push past a 2 KiB slab object.
        let boxes = KBox::pin_init(
            pin_init!(Boxes {
                resp <- crate::respbox::new_box(),
                req <- crate::reqbox::new_box(),
            }),
            GFP_KERNEL,
        )?;
        let hands = KBox::new(
            Hands {
                req: Batch::new(),
                resp: Batch::new(),
            },
            GFP_KERNEL,
        )?;
        // The skbs of the QP, which may outlive it, keep the module loaded through the
        // device's registration.
        let tx = TxOwner::new(
            TxWake {
                throttled: AtomicBool::new(false),
                slot: wake.clone(),
            },
            dev_ref.clone().into(),
        )?;
        let posting = Posting {
            sq: sq.producer_side(),
            rq: rq.as_ref().map(FromClient::producer_side),
            max_send_sge: cap.max_send_sge as usize,
            max_inline: cap.max_inline_data as usize,
            max_recv_sge: cap.max_recv_sge as usize,
        };

        let (sq_mmap, sq_mi) = map(sq.mem(), udata)?;
        let (rq_mmap, rq_mi) = match rq.as_ref() {
            Some(rq) => map(rq.mem(), udata)?,
            None => (None, MmInfo::default()),
        };
        udata.write_response(&CreateQpResp { rq_mi, sq_mi })?;

        let table = dev.data().qps().clone();
        let (min, max) = if qp_type == QpType::Gsi {
            (params::GSI_QPN, params::GSI_QPN)
        } else {
            (params::MIN_QPN, params::MAX_QPN)
        };
        // A second GSI QP finds its number taken. Numbers are drawn at random, not in
        // sequence: a QPN is the only handle an off-path attacker needs besides the
        // addresses and PSNs, so it should not be guessable from the last one.
        let qpn = table.reserve_random(min, max).map_err(|e| {
            if min == params::GSI_QPN {
                EINVAL
            } else {
                e
            }
        })?;
        let path = Path::new(RoceAv::default(), tx::src_port(qpn));
        let params = Params::initial();
        let admit_keys = keys_of(qp_type, &path, &params);
        let sq_watch = sq.watch();
        let shared = Arc::pin_init(
            pin_init!(QpShared {
                qpn,
                qp_type,
                state: AtomicU32::new(QpState::Reset.raw()),
                signal_all: init.signal_all(),
                pd: init.pd_id(),
                ib_qp: init.ib_qp(),
                kernel: !udata.is_user(),
                serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
                peer: AtomicU64::new(NO_PEER),
                peer_qpn: AtomicU32::new(0),
                send_cq,
                recv_cq,
                srq,
                events: init.events(),
                dev: dev_ref,
                req_q <- SkbQueue::new(),
                resp_q <- SkbQueue::new(),
                boxes,
                runner: Runner::new(),
                sq_watch,
                seen: Seen::new(),
                work <- new_work!("rrxe:qp"),
                retrans_timer <- crate::new_timer!("rrxe:retrans"),
                rnr_timer <- crate::new_timer!("rrxe:rnr"),
                inner <- new_spinlock_bh!(
                    Inner {
                        state: QpState::Reset,
                        attr: QpAttrs::default(),
                        path,
                        cap,
                        sq,
                        rq,
                        eng,
                        tx: Some(tx),
                        params,
                        dead: false,
                        hands: Some(hands),
                        peer_qp: None,
                        mrs: MrCache::default(),
                    },
                    "rrxe:qp"
                ),
                admit_keys <- new_spinlock_bh!(admit_keys, "rrxe:qp_keys"),
                route <- new_spinlock_bh!(KeptRoute::default(), "rrxe:qp_route"),
                posting <- new_spinlock_irq!(posting, "rrxe:qp_post"),
            }),
            GFP_KERNEL,
        )
        .inspect_err(|_| table.unreserve(qpn))?;
        table.fill(qpn, shared.clone());
        *wake.qp.lock() = Some(shared.clone());
        Ok((
            Qp {
                shared,
                table,
                wake,
                _mmaps: [sq_mmap, rq_mmap],
            },
            qpn,
        ))
    }

    /// The QP number.
    pub(crate) fn qpn(&self) -> u32 {
        self.shared.qpn
    }

    /// Applies the attributes selected by `mask`.
    pub(crate) fn modify(&self, attr: &QpAttr, mask: QpAttrMask) -> Result {
        if mask.bits() & !STANDARD_BITS != 0 {
            return Err(eopnotsupp());
        }
        let set = |bit| mask.contains(bit);
        // Sleeping allocations first: the responder's read/atomic resources.
        let res = if set(QpAttrMask::MAX_DEST_RD_ATOMIC) {
            let n = usize::from(attr.max_dest_rd_atomic.max(1));
            let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
            for _ in 0..n {
                v.push(None, GFP_KERNEL)?;
            }
            Some(v)
        } else {
            None
        };
        let av = if set(QpAttrMask::AV) {
            Some(AhAttrs::new(&attr.ah_attr).roce().ok_or(EINVAL)?)
        } else {
            None
        };
        let qp = &self.shared;
        let user_connected = !qp.kernel && matches!(qp.qp_type, QpType::Rc | QpType::Uc);
        // Whether the path leads back to this device, for `peer`.
        let ndev = user_connected.then(|| qp.dev.netdev()).flatten();
        // Dropped after the lock, as the reference to the peer it replaces.
        let mut peer = None;
        let mut old_peer = None;
        // The peer named until this modify, if it changed.
        let mut forget = None;
        let mut out = Outbox::default();
        let mut reset = false;
        {
            let mut inner = qp.inner.lock();
            // States out of range fail as the IBTA table fails them.
            let cur = if set(QpAttrMask::CUR_STATE) {
                QpState::try_from(attr.cur_qp_state)?
            } else {
                inner.state
            };
            let next = if set(QpAttrMask::STATE) {
                QpState::try_from(attr.qp_state)?
            } else {
                cur
            };
            if !transition_ok(cur, next, qp.qp_type as u32, mask) {
                return Err(EINVAL);
            }
            check_attr(attr, mask)?;
            inner.attr.update(attr, mask);
            inner.params = Params::of(&inner.attr.get(), qp);
            if let Some(av) = av {
                inner.path = inner.path.to(av);
            }
            *qp.admit_keys.lock() = keys_of(qp.qp_type, &inner.path, &inner.params);
            if ndev.as_ref().is_some_and(|n| inner.path.loops_back(n)) {
                // Of the same transport: what a peer leaves in a box skips admission,
                // whose check of the opcode against the QP's type it would need.
                peer = qp
                    .dev
                    .data()
                    .qps()
                    .get(inner.params.dest_qpn & QPN_MASK)
                    .filter(|peer| peer.qp_type == qp.qp_type);
            }
            let serial = peer.as_ref().map_or(NO_PEER, |peer| peer.serial);
            let peer_qpn = peer.as_ref().map_or(0, |peer| peer.qpn);
            let old_qpn = qp.peer_qpn.swap(peer_qpn, Ordering::Relaxed);
            let old_serial = qp.peer.swap(serial, Ordering::Relaxed);
            if old_serial != serial {
                // Nothing the former peer left is taken ([`crate::direct::still`]).
                inner.clear_boxes(qp);
                old_peer = inner.peer_qp.take();
                forget = (old_serial != NO_PEER).then_some(old_qpn);
            }
            if let Some(res) = res {
                inner.eng.resp.res = res;
                inner.eng.resp.res_next = 0;
            }
            if set(QpAttrMask::SQ_PSN) {
                let psn = Psn::new(attr.sq_psn);
                inner.eng.psn = psn;
                inner.eng.sent_end = psn;
                inner.eng.comp = crate::proto::completer::CompState::new(psn);
            }
            if set(QpAttrMask::RQ_PSN) {
                inner.eng.resp.psn = Psn::new(attr.rq_psn);
            }
            if set(QpAttrMask::RETRY_CNT) {
                inner.eng.retry = RetryCounter::new(attr.retry_cnt);
            }
            if set(QpAttrMask::RNR_RETRY) {
                inner.eng.rnr = RetryCounter::new(attr.rnr_retry);
            }
            match next {
                QpState::Err => {
                    inner.state = cur;
                    inner.set_error(qp, &mut out);
                }
                QpState::Reset => {
                    inner.state = next;
                    reset = true;
                    inner.discard();
                    inner.clear_boxes(qp);
                    let cons = inner.sq.consumer();
                    inner.eng.clear(cons);
                    out.retrans = Some(0);
                }
                _ => inner.state = next,
            }
            qp.state.store(inner.state.raw(), Ordering::Release);
        }
        if reset {
            // What was queued before the reset was admitted by the keys before it, not
            // for the QP the next modifies make (rxe's `rxe_qp_reset` drains its queues
            // too); from now on a packet is refused where it arrives until the QP is RTR.
            flush_queue(&qp.req_q);
            flush_queue(&qp.resp_q);
        }
        drop(old_peer);
        if let Some(qpn) = forget {
            qp.forget_peer(qpn);
        }
        qp.finish(out);
        // Work posted before the QP could send.
        qp.clone().schedule();
        Ok(())
    }

    /// Posts send requests of a kernel consumer.
    pub(crate) fn post_send(&self, wrs: &mut SendWrs<'_, RrxeDev>) -> Result {
        let qp = &self.shared;
        self.check_can_post_send()?;
        let res = (|| {
            let p = qp.posting.lock();
            let kmem = wrs.kernel_mem();
            while let Some(wr) = wrs.next(qp.qp_type.is_datagram(), |ah: &Ah| ah.roce()) {
                let (wr, av) = wr?;
                if p.sq.is_full() {
                    return Err(ENOMEM);
                }
                let av = match av {
                    Some(Some(av)) => Some(av),
                    Some(None) => return Err(EINVAL),
                    None => None,
                };
                wqe::write_send(&p.sq, &kmem, &wr, av.as_ref(), p.max_send_sge, p.max_inline)?;
                p.sq.produce()?;
            }
            Ok(())
        })();
        self.kick();
        res
    }

    /// Posts receive requests of a kernel consumer.
    pub(crate) fn post_recv(&self, wrs: &mut RecvWrs<'_>) -> Result {
        let qp = &self.shared;
        let res = (|| {
            let p = qp.posting.lock();
            let rq = p.rq.as_ref().ok_or(EINVAL)?;
            for wr in wrs {
                let wr = wr?;
                if rq.is_full() {
                    return Err(ENOMEM);
                }
                wqe::write_recv(rq, &wr, p.max_recv_sge)?;
                rq.produce()?;
            }
            Ok(())
        })();
        // Receives posted to a QP in error are flushed by its work item.
        self.kick();
        res
    }

    /// Posting send work needs RTS (or later: SQD, SQE, ERR, where it is flushed);
    /// `EINVAL` before.
    fn check_can_post_send(&self) -> Result {
        match QpState::try_from(self.shared.state.load(Ordering::Acquire)) {
            Ok(QpState::Reset | QpState::Init | QpState::Rtr) => Err(EINVAL),
            _ => Ok(()),
        }
    }

    /// Kernel consumers posted work requests (possibly with interrupts disabled): the
    /// engine runs again, in its work item ([`QpShared::kick`]).
    pub(crate) fn kick(&self) {
        self.shared.clone().kick();
    }

    /// The doorbell: userspace posted send WQEs (a POST_SEND with no work requests). The
    /// caller's thread runs the engine at once if the client waits for this message, only
    /// one CPU is online or clients that post ahead (or receivers that poll) keep every
    /// CPU busy, else the work item runs it beside the client ([`QpShared::ring`]).
    pub(crate) fn doorbell(&self) -> Result {
        self.check_can_post_send()?;
        self.shared.clone().ring();
        Ok(())
    }

    /// Reports the QP's attributes and creation attributes.
    pub(crate) fn query(&self, attr: &mut QpAttr, init: &mut QpInitAttr) -> Result {
        let qp = &self.shared;
        let inner = qp.inner.lock();
        *attr = inner.attr.get();
        attr.qp_state = inner.state.raw();
        attr.cur_qp_state = inner.state.raw();
        attr.cap = copy_cap(&inner.cap);
        init.cap = copy_cap(&inner.cap);
        init.qp_type = qp.qp_type as u32;
        init.sq_sig_type = if qp.signal_all {
            SigType::AllWr
        } else {
            SigType::ReqWr
        }
        .raw();
        init.port_num = 1;
        Ok(())
    }
}
