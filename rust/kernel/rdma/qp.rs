// SPDX-License-Identifier: GPL-2.0

//! Queue pair support: creation attributes and the IBTA QP state table.

use super::{
    cq::CqRef,
    event::CoreSrq,
    ops::DeviceOps,
    qp_event::QpEvents,
    types::{Flags, QpAttrMask, QpState, SigType},
};
use crate::bindings;
use core::{marker::PhantomData, ptr::NonNull};
use kernel::sync::Arc;

/// QP attributes of `modify_qp` / `query_qp` (`struct ib_qp_attr`).
pub type QpAttr = bindings::ib_qp_attr;
/// Capacities of a QP's queues (`struct ib_qp_cap`).
pub type QpCap = bindings::ib_qp_cap;
/// Creation attributes of a QP as `query_qp` reports them (`struct ib_qp_init_attr`).
pub type QpInitAttr = bindings::ib_qp_init_attr;

/// The creation attributes of a QP.
pub struct QpInit<'a, T: DeviceOps> {
    raw: &'a mut bindings::ib_qp_init_attr,
    pd: super::mr::PdId,
    qp: usize,
    events: Arc<QpEvents>,
    _t: PhantomData<T>,
}

impl<'a, T: DeviceOps> QpInit<'a, T> {
    /// # Safety
    ///
    /// `raw` must be the attributes of a `create_qp` call of a device whose `DeviceOps` is
    /// `T`: its CQs are that device's, initialised, and used by the QP being created.
    /// `pd` is the QP's PD (set by the core before `create_qp`); `events` are the QP's.
    pub(crate) unsafe fn from_raw(
        raw: &'a mut bindings::ib_qp_init_attr,
        pd: *mut bindings::ib_pd,
        qp: *mut bindings::ib_qp,
        events: Arc<QpEvents>,
    ) -> Self {
        Self {
            raw,
            pd: super::mr::PdId::from_raw(pd),
            qp: qp as usize,
            events,
            _t: PhantomData,
        }
    }

    /// Raises the QP's asynchronous events (for as long as the QP exists).
    pub fn events(&self) -> Arc<QpEvents> {
        self.events.clone()
    }

    /// The identity of the QP's PD.
    pub fn pd_id(&self) -> super::mr::PdId {
        self.pd
    }

    /// The address of the `ib_qp` being created (what kernel completions name).
    pub fn ib_qp(&self) -> usize {
        self.qp
    }

    /// The QP's SRQ, if it has one.
    pub fn srq(&self) -> Option<&T::Srq> {
        let srq = NonNull::new(self.raw.srq)?;
        // SAFETY: The core passes an SRQ of this device, initialised, that it keeps alive
        // (counted as used by the QP) for longer than this call.
        Some(unsafe { &CoreSrq::<T>::data(srq.as_ptr()).data })
    }

    /// The QP type (`IB_QPT_*`).
    pub fn qp_type(&self) -> u32 {
        self.raw.qp_type
    }

    /// Creation flags (`IB_QP_CREATE_*`).
    pub fn create_flags(&self) -> u32 {
        self.raw.create_flags
    }

    /// The port, for special QPs.
    pub fn port_num(&self) -> u32 {
        self.raw.port_num
    }

    /// Whether every send work request completes (`IB_SIGNAL_ALL_WR`).
    pub fn signal_all(&self) -> bool {
        self.raw.sq_sig_type == SigType::AllWr.raw()
    }

    /// The requested capacities; the driver writes back what it provides.
    pub fn cap(&mut self) -> &mut QpCap {
        &mut self.raw.cap
    }

    /// The CQ of send completions.
    pub fn send_cq(&self) -> Option<CqRef<T>> {
        Self::cq(self.raw.send_cq)
    }

    /// The CQ of receive completions.
    pub fn recv_cq(&self) -> Option<CqRef<T>> {
        Self::cq(self.raw.recv_cq)
    }

    fn cq(cq: *mut bindings::ib_cq) -> Option<CqRef<T>> {
        let cq = NonNull::new(cq)?;
        // SAFETY: `from_raw`'s promise: the core passes initialised CQs of this device,
        // which it keeps for longer than this call.
        Some(unsafe { CqRef::from_raw(cq.as_ptr()) })
    }
}

/// Whether the IBTA state table allows a QP of `qp_type` to go from `cur` to `next` with
/// the attributes in `mask` (`ib_modify_qp_is_ok`).
pub fn transition_ok(cur: QpState, next: QpState, qp_type: u32, mask: QpAttrMask) -> bool {
    // SAFETY: A pure function of its arguments.
    unsafe { bindings::ib_modify_qp_is_ok(cur.raw(), next.raw(), qp_type, mask.bits()) }
}

/// A copy of a plain C structure (bindgen does not derive `Copy` for them).
pub(crate) fn copy<C: CStruct>(v: &C) -> C {
    // SAFETY: `CStruct` types are plain data: no ownership, no `Drop`.
    unsafe { core::ptr::read(v) }
}

/// Plain C structures of the QP verbs that may be duplicated bitwise.
///
/// # Safety
///
/// Implementors own nothing and have no `Drop` (pointers in them are borrowed).
pub unsafe trait CStruct {}
// SAFETY: Integers, enums, and borrowed pointers only.
unsafe impl CStruct for QpAttr {}
// SAFETY: As above.
unsafe impl CStruct for bindings::rdma_ah_attr {}
// SAFETY: Integers only.
unsafe impl CStruct for QpCap {}

/// A copy of a QP's capacities.
pub fn copy_cap(cap: &QpCap) -> QpCap {
    copy(cap)
}

/// A QP's attributes as `modify_qp` set them: a copy of `ib_qp_attr` without its pointers
/// (the GID attribute and netdev references are the core's, valid only during a call).
#[derive(Default)]
pub struct QpAttrs(QpAttr);

// SAFETY: The pointers of the copy are always null; the rest is plain data.
unsafe impl Send for QpAttrs {}
// SAFETY: See `Send`.
unsafe impl Sync for QpAttrs {}

impl QpAttrs {
    /// A copy of the attributes.
    pub fn get(&self) -> QpAttr {
        copy(&self.0)
    }

    /// Takes the attributes of `src` selected by `mask`.
    pub fn update(&mut self, src: &QpAttr, mask: QpAttrMask) {
        let dst = &mut self.0;
        let set = |bit| mask.contains(bit);
        if set(QpAttrMask::EN_SQD_ASYNC_NOTIFY) {
            dst.en_sqd_async_notify = src.en_sqd_async_notify;
        }
        if set(QpAttrMask::ACCESS_FLAGS) {
            dst.qp_access_flags = src.qp_access_flags;
        }
        if set(QpAttrMask::PKEY_INDEX) {
            dst.pkey_index = src.pkey_index;
        }
        if set(QpAttrMask::PORT) {
            dst.port_num = src.port_num;
        }
        if set(QpAttrMask::QKEY) {
            dst.qkey = src.qkey;
        }
        if set(QpAttrMask::AV) {
            dst.ah_attr = copy(&src.ah_attr);
            dst.ah_attr.grh.sgid_attr = core::ptr::null();
        }
        if set(QpAttrMask::PATH_MTU) {
            dst.path_mtu = src.path_mtu;
        }
        if set(QpAttrMask::TIMEOUT) {
            dst.timeout = src.timeout;
        }
        if set(QpAttrMask::RETRY_CNT) {
            dst.retry_cnt = src.retry_cnt;
        }
        if set(QpAttrMask::RNR_RETRY) {
            dst.rnr_retry = src.rnr_retry;
        }
        if set(QpAttrMask::RQ_PSN) {
            dst.rq_psn = src.rq_psn & 0xff_ffff;
        }
        if set(QpAttrMask::MAX_QP_RD_ATOMIC) {
            dst.max_rd_atomic = src.max_rd_atomic;
        }
        if set(QpAttrMask::ALT_PATH) {
            dst.alt_ah_attr = copy(&src.alt_ah_attr);
            dst.alt_ah_attr.grh.sgid_attr = core::ptr::null();
            dst.alt_pkey_index = src.alt_pkey_index;
            dst.alt_port_num = src.alt_port_num;
            dst.alt_timeout = src.alt_timeout;
        }
        if set(QpAttrMask::MIN_RNR_TIMER) {
            dst.min_rnr_timer = src.min_rnr_timer;
        }
        if set(QpAttrMask::SQ_PSN) {
            dst.sq_psn = src.sq_psn & 0xff_ffff;
        }
        if set(QpAttrMask::MAX_DEST_RD_ATOMIC) {
            dst.max_dest_rd_atomic = src.max_dest_rd_atomic;
        }
        if set(QpAttrMask::PATH_MIG_STATE) {
            dst.path_mig_state = src.path_mig_state;
        }
        if set(QpAttrMask::DEST_QPN) {
            dst.dest_qp_num = src.dest_qp_num & 0xff_ffff;
        }
        dst.xmit_slave = core::ptr::null_mut();
    }
}
