// SPDX-License-Identifier: GPL-2.0

//! C entry points of the QP operations, posting included.

use crate::bindings;
use crate::ext::rdma::{
    device::Device,
    object::CoreObj,
    ops::DeviceOps,
    qp::QpInit,
    qp_event::{QpEvents, QpObj},
    types::QpAttrMask,
    udata::Udata,
    wr::{RecvWrs, SendWrs},
};
use kernel::{error::from_result, ffi};

impl<T: DeviceOps> Device<T> {
    /// C entry point `create_qp_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn create_qp_cb(
        qp: *mut bindings::ib_qp,
        init: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: `qp` is being created; revoked below if that fails, else by
            // `destroy_qp_cb`.
            let events = unsafe { QpEvents::new(qp)? };
            // SAFETY: The core allocated `size_ib_qp` bytes with `device` set; `init` is valid
            // and its CQs are this device's; `udata` is null or the request's.
            let (dev, mut init, mut udata) = unsafe {
                (
                    Self::from_raw((*qp).device),
                    QpInit::from_raw(&mut *init, (*qp).pd, qp, events.clone()),
                    Udata::from_raw(udata),
                )
            };
            let (data, qpn) = T::create_qp(dev, &mut init, &mut udata).inspect_err(|_| {
                events.revoke();
            })?;
            // SAFETY: As in `alloc_pd_cb`; `qp_num` is the core's field for the number.
            unsafe {
                CoreObj::init(qp, QpObj { data, events });
                (*qp).qp_num = qpn;
            }
            Ok(0)
        })
    }

    /// C entry point `destroy_qp_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn destroy_qp_cb(
        qp: *mut bindings::ib_qp,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: `create_qp_cb` initialised the data; the core frees the object afterwards.
        let obj = unsafe { CoreObj::<bindings::ib_qp, QpObj<T::Qp>>::data(qp) };
        // No event after the QP is gone (`QpEvents::new`'s contract).
        obj.events.revoke();
        // SAFETY: As above; `obj` is not used again.
        unsafe { CoreObj::<bindings::ib_qp, QpObj<T::Qp>>::drop_data(qp) };
        0
    }

    /// C entry point `post_send_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn post_send_cb(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
    ) -> ffi::c_int {
        // SAFETY: A QP of ours, initialised.
        let data = unsafe { &CoreObj::<bindings::ib_qp, QpObj<T::Qp>>::data(qp).data };
        // Userspace QPs post through their mapped queue; a POST_SEND command only rings
        // the doorbell (work requests it might carry are ignored, as rxe does).
        // SAFETY: `qp` is valid; `uobject` is set at creation for userspace QPs only.
        if !unsafe { (*qp).uobject }.is_null() {
            return from_result(|| T::post_send_doorbell(data).map(|()| 0));
        }
        // A kernel consumer posting nothing (it may hold IRQ-safe locks: the doorbell,
        // which runs the engine in the caller, is for userspace only).
        if wr.is_null() {
            return 0;
        }
        // SAFETY: The list the core passed.
        let mut wrs = unsafe { SendWrs::<T>::from_raw(wr) };
        match T::post_send(data, &mut wrs) {
            Ok(()) => 0,
            Err(e) => {
                if !bad_wr.is_null() {
                    // SAFETY: The core passes a valid out-pointer.
                    unsafe { *bad_wr = wrs.last };
                }
                e.to_errno()
            }
        }
    }

    /// C entry point `post_recv_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn post_recv_cb(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> ffi::c_int {
        // SAFETY: A QP of ours, initialised.
        let data = unsafe { &CoreObj::<bindings::ib_qp, QpObj<T::Qp>>::data(qp).data };
        // Userspace QPs post receives into their mapped queue only.
        // SAFETY: `qp` is valid; `uobject` is set at creation for userspace QPs only.
        if !unsafe { (*qp).uobject }.is_null() {
            if !bad_wr.is_null() {
                // SAFETY: The core passes a valid out-pointer.
                unsafe { *bad_wr = wr };
            }
            return -(bindings::EINVAL as ffi::c_int);
        }
        // SAFETY: The list the core passed.
        let mut wrs = unsafe { RecvWrs::from_raw(wr) };
        match T::post_recv(data, &mut wrs) {
            Ok(()) => 0,
            Err(e) => {
                if !bad_wr.is_null() {
                    // SAFETY: The core passes a valid out-pointer.
                    unsafe { *bad_wr = wrs.last };
                }
                e.to_errno()
            }
        }
    }

    /// C entry point `post_srq_recv_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn post_srq_recv_cb(
        srq: *mut bindings::ib_srq,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> ffi::c_int {
        // SAFETY: An SRQ of ours, initialised.
        let data = unsafe { &super::super::event::CoreSrq::<T>::data(srq).data };
        // Userspace SRQs post into their mapped queue only.
        // SAFETY: `srq` is valid; `uobject` is set at creation for userspace SRQs only.
        if !unsafe { (*srq).uobject }.is_null() {
            if !bad_wr.is_null() {
                // SAFETY: The core passes a valid out-pointer.
                unsafe { *bad_wr = wr };
            }
            return -(bindings::EINVAL as ffi::c_int);
        }
        // SAFETY: The list the core passed.
        let mut wrs = unsafe { RecvWrs::from_raw(wr) };
        match T::post_srq_recv(data, &mut wrs) {
            Ok(()) => 0,
            Err(e) => {
                if !bad_wr.is_null() {
                    // SAFETY: The core passes a valid out-pointer.
                    unsafe { *bad_wr = wrs.last };
                }
                e.to_errno()
            }
        }
    }

    /// C entry point `modify_qp_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn modify_qp_cb(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: A QP of ours, initialised; `attr` valid; `udata` null or the request's.
            let (data, attr, mut udata) = unsafe {
                (
                    &CoreObj::<bindings::ib_qp, QpObj<T::Qp>>::data(qp).data,
                    &*attr,
                    Udata::from_raw(udata),
                )
            };
            T::modify_qp(data, attr, QpAttrMask::from_bits(mask as u32), &mut udata)?;
            Ok(0)
        })
    }

    /// C entry point `query_qp_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn query_qp_cb(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        _mask: ffi::c_int,
        init: *mut bindings::ib_qp_init_attr,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: A QP of ours, initialised; both out-structures are valid.
            let (data, attr, init) = unsafe {
                (
                    &CoreObj::<bindings::ib_qp, QpObj<T::Qp>>::data(qp).data,
                    &mut *attr,
                    &mut *init,
                )
            };
            T::query_qp(data, attr, init)?;
            Ok(0)
        })
    }
}
