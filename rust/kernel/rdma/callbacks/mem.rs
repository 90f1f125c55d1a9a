// SPDX-License-Identifier: GPL-2.0

//! C entry points of the PD, MR and MW operations.

use crate::bindings;
use crate::ext::rdma::{
    device::Device,
    mr::{KernelMem, PdId, SgMap},
    object::CoreObj,
    ops::DeviceOps,
    udata::Udata,
};
use kernel::{error::from_result, ffi, prelude::*, types::Opaque};

impl<T: DeviceOps> Device<T> {
    /// C entry point `alloc_pd_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn alloc_pd_cb(
        pd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: The core allocated `size_ib_pd` bytes with `device` set to our device;
            // `udata` is null or the request's.
            let (dev, mut udata) =
                unsafe { (Self::from_raw((*pd).device), Udata::from_raw(udata)) };
            let data = T::alloc_pd(dev, &mut udata)?;
            // SAFETY: The data is uninitialised memory of the core's allocation.
            unsafe { CoreObj::init(pd, data) };
            Ok(0)
        })
    }

    /// C entry point `dealloc_pd_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn dealloc_pd_cb(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: `alloc_pd_cb` initialised the data; the core frees the object afterwards.
        unsafe { CoreObj::<bindings::ib_pd, T::Pd>::drop_data(pd) };
        0
    }

    /// Allocates the `ib_mr` of a new MR with keys; the core fills in the rest.
    pub(super) fn new_mr(mr: Result<(T::Mr, u32, u32)>) -> *mut bindings::ib_mr {
        let obj = mr.and_then(|(data, lkey, rkey)| {
            let obj = KBox::new(
                CoreObj {
                    ib: Opaque::new(bindings::ib_mr::default()),
                    data,
                },
                GFP_KERNEL,
            )?;
            let ib = KBox::into_raw(obj).cast::<bindings::ib_mr>();
            // SAFETY: Just allocated; the `ib_mr` is the first field.
            unsafe {
                (*ib).lkey = lkey;
                (*ib).rkey = rkey;
            }
            Ok(ib)
        });
        obj.unwrap_or_else(|e| e.to_errno() as isize as *mut bindings::ib_mr)
    }

    /// C entry point `reg_user_mr_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn reg_user_mr_cb(
        pd: *mut bindings::ib_pd,
        start: u64,
        length: u64,
        iova: u64,
        access: ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        // SAFETY: `pd` is a PD of our device; `udata` is the request's.
        let (dev, mut udata) = unsafe { (Self::from_raw((*pd).device), Udata::from_raw(udata)) };
        Self::new_mr(T::reg_user_mr(
            dev,
            PdId::from_raw(pd),
            start,
            length,
            iova,
            access as u32,
            &mut udata,
        ))
    }

    /// C entry point `get_dma_mr_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn get_dma_mr_cb(
        pd: *mut bindings::ib_pd,
        access: ffi::c_int,
    ) -> *mut bindings::ib_mr {
        // SAFETY: `pd` is a PD of our device; only kernel consumers create a DMA MR.
        let (dev, mem) = unsafe { (Self::from_raw((*pd).device), KernelMem::new()) };
        Self::new_mr(T::get_dma_mr(dev, PdId::from_raw(pd), access as u32, mem))
    }

    /// C entry point `alloc_mr_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn alloc_mr_cb(
        pd: *mut bindings::ib_pd,
        mr_type: bindings::ib_mr_type,
        max_num_sg: u32,
    ) -> *mut bindings::ib_mr {
        // SAFETY: `pd` is a PD of our device; only kernel consumers allocate MRs this way
        // (`ib_alloc_mr`), and they map them to kernel memory.
        let (dev, mem) = unsafe { (Self::from_raw((*pd).device), KernelMem::new()) };
        Self::new_mr(T::alloc_mr(
            dev,
            PdId::from_raw(pd),
            mr_type,
            max_num_sg,
            mem,
        ))
    }

    /// C entry point `map_mr_sg_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn map_mr_sg_cb(
        mr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        sg_nents: ffi::c_int,
        sg_offset: *mut ffi::c_uint,
    ) -> ffi::c_int {
        // SAFETY: An MR of ours (`new_mr`), alive for the call; the arguments are the call's
        // and `set_page_cb` is the matching callback.
        let (data, map) = unsafe {
            (
                CoreObj::<bindings::ib_mr, T::Mr>::data(mr),
                SgMap::new(mr, sg, sg_nents, sg_offset, Self::set_page_cb),
            )
        };
        T::map_mr_sg(data, map).unwrap_or_else(|e| e.to_errno())
    }

    /// The `set_page` callback `ib_sg_to_pages` calls for `map_mr_sg_cb`.
    ///
    /// # Safety
    ///
    /// Only called by `ib_sg_to_pages` during `map_mr_sg_cb`, with that call's MR.
    pub(super) unsafe extern "C" fn set_page_cb(mr: *mut bindings::ib_mr, addr: u64) -> ffi::c_int {
        // SAFETY: An MR of ours, alive for the call.
        let data = unsafe { CoreObj::<bindings::ib_mr, T::Mr>::data(mr) };
        match T::mr_set_page(data, addr) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// C entry point `rereg_user_mr_cb`: changes the MR in place (returns null) or fails.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn rereg_user_mr_cb(
        mr: *mut bindings::ib_mr,
        flags: ffi::c_int,
        _start: u64,
        _length: u64,
        _iova: u64,
        access: ffi::c_int,
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        // SAFETY: An MR of ours (`new_mr`), alive for the call, of our device.
        let (dev, data) = unsafe {
            (
                Self::from_raw((*mr).device),
                CoreObj::<bindings::ib_mr, T::Mr>::data(mr),
            )
        };
        let pd = (!pd.is_null()).then(|| PdId::from_raw(pd));
        match T::rereg_user_mr(dev, data, flags as u32, access as u32, pd) {
            Ok(()) => core::ptr::null_mut(),
            Err(e) => e.to_errno() as isize as *mut bindings::ib_mr,
        }
    }

    /// C entry point `dereg_mr_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn dereg_mr_cb(
        mr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: An MR of ours (`new_mr`), alive for the call.
        if let Err(e) = T::retire_mr(unsafe { CoreObj::<bindings::ib_mr, T::Mr>::data(mr) }) {
            // The core keeps the MR.
            return e.to_errno();
        }
        // SAFETY: Allocated by `new_mr`; the core is done with it.
        drop(unsafe { KBox::from_raw(mr.cast::<CoreObj<bindings::ib_mr, T::Mr>>()) });
        0
    }

    /// C entry point `alloc_mw_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn alloc_mw_cb(
        mw: *mut bindings::ib_mw,
        udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: The core allocated `size_ib_mw` bytes with `device` and `type` set;
            // `udata` is null or the request's.
            let (dev, mw_type, mut udata) = unsafe {
                (
                    Self::from_raw((*mw).device),
                    (*mw).type_,
                    Udata::from_raw(udata),
                )
            };
            // SAFETY: The core set the PD.
            let pd = PdId::from_raw(unsafe { (*mw).pd });
            let (data, rkey) = T::alloc_mw(dev, pd, mw_type, &mut udata)?;
            // SAFETY: As in `alloc_pd_cb`; `rkey` is the core's field for the key.
            unsafe {
                CoreObj::init(mw, data);
                (*mw).rkey = rkey;
            }
            Ok(0)
        })
    }

    /// C entry point `dealloc_mw_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn dealloc_mw_cb(mw: *mut bindings::ib_mw) -> ffi::c_int {
        // SAFETY: `alloc_mw_cb` initialised the data; the core frees the object afterwards.
        unsafe { CoreObj::<bindings::ib_mw, T::Mw>::drop_data(mw) };
        0
    }
}
