// SPDX-License-Identifier: GPL-2.0

//! C entry points of the CQ operations.

use crate::bindings;
use crate::ext::rdma::{
    cq::{new_link, CoreCq, CqObj},
    device::Device,
    object::CoreObj,
    ops::DeviceOps,
    types::CqNotifyFlags,
    udata::Udata,
    wr::WcArray,
};
use kernel::{error::from_result, ffi, prelude::*};

impl<T: DeviceOps> Device<T> {
    /// C entry point `create_cq_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn create_cq_cb(
        cq: *mut bindings::ib_cq,
        attr: *const bindings::ib_cq_init_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: The core allocated `size_ib_cq` bytes with `device` set; `attr` is
            // valid; `attrs` is null for kernel callers or the request's bundle.
            let (dev, attr, mut udata) = unsafe {
                (
                    Self::from_raw((*cq).device),
                    &*attr,
                    Udata::from_raw(bindings::attrs_to_udata(attrs)),
                )
            };
            let (data, cqe) = T::create_cq(dev, attr, &mut udata)?;
            // SAFETY: The CQ being created; `destroy_cq_cb` revokes the link.
            let link = unsafe { new_link(cq) }?;
            // SAFETY: As in `alloc_pd_cb`; `cqe` is the core's field for the capacity.
            unsafe {
                CoreObj::init(cq, CqObj::<T> { data, link });
                (*cq).cqe = cqe as ffi::c_int;
            }
            Ok(0)
        })
    }

    /// C entry point `destroy_cq_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn destroy_cq_cb(
        cq: *mut bindings::ib_cq,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: `create_cq_cb` initialised the data; the core frees the object afterwards.
        unsafe {
            // Uses of the CQ through `CqRef`s in progress finish; later ones find it gone.
            CoreCq::<T>::data(cq).link.revoke();
            CoreCq::<T>::drop_data(cq);
        }
        0
    }

    /// C entry point `resize_cq_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn resize_cq_cb(
        cq: *mut bindings::ib_cq,
        cqe: ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            let cqe = u32::try_from(cqe).map_err(|_| EINVAL)?;
            // SAFETY: A CQ of ours, initialised; `udata` is null or the request's.
            let (data, mut udata) =
                unsafe { (&CoreCq::<T>::data(cq).data, Udata::from_raw(udata)) };
            let cqe = T::resize_cq(data, cqe, &mut udata)?;
            // SAFETY: The core serialises verbs on one CQ object; the field is the capacity.
            unsafe { (*cq).cqe = cqe as ffi::c_int };
            Ok(0)
        })
    }

    /// C entry point `req_notify_cq_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn req_notify_cq_cb(
        cq: *mut bindings::ib_cq,
        flags: bindings::ib_cq_notify_flags,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: A CQ of ours, initialised.
            let data = unsafe { &CoreCq::<T>::data(cq).data };
            Ok(T::req_notify_cq(data, CqNotifyFlags::from_bits(flags))? as ffi::c_int)
        })
    }

    /// C entry point `peek_cq_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn peek_cq_cb(
        cq: *mut bindings::ib_cq,
        wc_cnt: ffi::c_int,
    ) -> ffi::c_int {
        // SAFETY: A CQ of ours, initialised.
        let data = unsafe { &CoreCq::<T>::data(cq).data };
        T::peek_cq(data, usize::try_from(wc_cnt).unwrap_or(0)) as ffi::c_int
    }

    /// C entry point `poll_cq_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn poll_cq_cb(
        cq: *mut bindings::ib_cq,
        num: ffi::c_int,
        wc: *mut bindings::ib_wc,
    ) -> ffi::c_int {
        // SAFETY: A CQ of ours, initialised.
        let data = unsafe { &CoreCq::<T>::data(cq).data };
        // SAFETY: The core passes `num` writable entries.
        let mut wcs = unsafe { WcArray::from_raw(wc, usize::try_from(num).unwrap_or(0)) };
        match T::poll_cq(data, &mut wcs) {
            Ok(n) => n as ffi::c_int,
            Err(e) => e.to_errno(),
        }
    }
}
