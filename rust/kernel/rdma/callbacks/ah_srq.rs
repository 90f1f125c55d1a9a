// SPDX-License-Identifier: GPL-2.0

//! C entry points of the AH, SRQ and multicast operations.

use crate::bindings;
use crate::ext::rdma::{
    ah::AhAttrs,
    device::Device,
    event::{CoreSrq, SrqEvents, SrqObj},
    mr::PdId,
    object::CoreObj,
    ops::DeviceOps,
    qp_event::QpObj,
    udata::Udata,
};
use kernel::{error::from_result, ffi};

impl<T: DeviceOps> Device<T> {
    /// C entry point `create_ah_cb` (also `create_user_ah`).
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn create_ah_cb(
        ah: *mut bindings::ib_ah,
        init: *mut bindings::rdma_ah_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: The core allocated `size_ib_ah` bytes with `device` set; `init` and
            // its address vector are valid; `udata` is null or the request's.
            let (dev, attr, flags, mut udata) = unsafe {
                (
                    Self::from_raw((*ah).device),
                    AhAttrs::new(&*(*init).ah_attr),
                    (*init).flags,
                    Udata::from_raw(udata),
                )
            };
            let sleepable = flags & bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE != 0;
            // SAFETY: The core sets the AH's PD before calling.
            let pd = PdId::from_raw(unsafe { (*ah).pd });
            let data = T::create_ah(dev, pd, attr, sleepable, &mut udata)?;
            // SAFETY: As in `alloc_pd_cb`.
            unsafe { CoreObj::init(ah, data) };
            Ok(0)
        })
    }

    /// C entry point `destroy_ah_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn destroy_ah_cb(
        ah: *mut bindings::ib_ah,
        _flags: u32,
    ) -> ffi::c_int {
        // SAFETY: `create_ah_cb` initialised the data; the core frees the object afterwards.
        unsafe { CoreObj::<bindings::ib_ah, T::Ah>::drop_data(ah) };
        0
    }

    /// C entry point `query_ah_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn query_ah_cb(
        ah: *mut bindings::ib_ah,
        attr: *mut bindings::rdma_ah_attr,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: An AH of ours, initialised; `attr` is valid.
            let data = unsafe { CoreObj::<bindings::ib_ah, T::Ah>::data(ah) };
            let value = T::query_ah(data)?.get();
            // SAFETY: `attr` is valid for writes.
            unsafe { attr.write(value) };
            Ok(0)
        })
    }

    /// C entry point `create_srq_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn create_srq_cb(
        srq: *mut bindings::ib_srq,
        init: *mut bindings::ib_srq_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: The core allocated `size_ib_srq` bytes with `device` set; `init` is
            // valid; `udata` is null or the request's.
            let (dev, init, mut udata) = unsafe {
                (
                    Self::from_raw((*srq).device),
                    &mut *init,
                    Udata::from_raw(udata),
                )
            };
            // SAFETY: The SRQ being created; `destroy_srq_cb` revokes the link.
            let (events, link) = unsafe { SrqEvents::new(srq) }?;
            let data = T::create_srq(dev, events, &mut init.attr, init.srq_type, &mut udata)?;
            // SAFETY: As in `alloc_pd_cb`.
            unsafe { CoreObj::init(srq, SrqObj::<T> { data, link }) };
            Ok(0)
        })
    }

    /// C entry point `destroy_srq_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn destroy_srq_cb(
        srq: *mut bindings::ib_srq,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: `create_srq_cb` initialised the data; the core frees the object afterwards.
        unsafe {
            // Events being raised finish; later ones are dropped.
            CoreSrq::<T>::data(srq).link.revoke();
            CoreSrq::<T>::drop_data(srq);
        }
        0
    }

    /// C entry point `modify_srq_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn modify_srq_cb(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
        mask: bindings::ib_srq_attr_mask,
        udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: An SRQ of ours, initialised; `attr` valid; `udata` null or the request's.
            let (data, attr, mut udata) = unsafe {
                (
                    &CoreSrq::<T>::data(srq).data,
                    &*attr,
                    Udata::from_raw(udata),
                )
            };
            T::modify_srq(data, attr, mask, &mut udata)?;
            Ok(0)
        })
    }

    /// C entry point `query_srq_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn query_srq_cb(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: An SRQ of ours, initialised; `attr` is valid.
            let (data, attr) = unsafe { (&CoreSrq::<T>::data(srq).data, &mut *attr) };
            T::query_srq(data, attr)?;
            Ok(0)
        })
    }

    /// C entry point `attach_mcast_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn attach_mcast_cb(
        qp: *mut bindings::ib_qp,
        gid: *mut bindings::ib_gid,
        _lid: u16,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: A QP of ours, initialised; `gid` is valid.
            let (dev, data, gid) = unsafe {
                (
                    Self::from_raw((*qp).device),
                    &CoreObj::<bindings::ib_qp, QpObj<T::Qp>>::data(qp).data,
                    (*gid).raw.as_ref(),
                )
            };
            T::attach_mcast(dev, data, gid)?;
            Ok(0)
        })
    }

    /// C entry point `detach_mcast_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn detach_mcast_cb(
        qp: *mut bindings::ib_qp,
        gid: *mut bindings::ib_gid,
        _lid: u16,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: As in `attach_mcast_cb`.
            let (dev, data, gid) = unsafe {
                (
                    Self::from_raw((*qp).device),
                    &CoreObj::<bindings::ib_qp, QpObj<T::Qp>>::data(qp).data,
                    (*gid).raw.as_ref(),
                )
            };
            T::detach_mcast(dev, data, gid)?;
            Ok(0)
        })
    }
}
