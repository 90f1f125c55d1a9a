// SPDX-License-Identifier: GPL-2.0

//! C entry points of the device, port, user context, mmap and counter operations.

use crate::bindings;
use crate::ext::rdma::{
    device::{Device, Ucontext},
    mmap::MmapEntry,
    ops::DeviceOps,
};
use core::ptr::addr_of_mut;
use kernel::{error::from_result, ffi};

impl<T: DeviceOps> Device<T> {
    /// C entry point `query_device_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn query_device_cb(
        ib: *mut bindings::ib_device,
        attr: *mut bindings::ib_device_attr,
        udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: The core passes our device and a valid, zeroed attribute struct.
            let (dev, attr) = unsafe { (Self::from_raw(ib), &mut *attr) };
            // SAFETY: `udata` is null or valid for the call.
            let len = unsafe { udata_len(udata) };
            T::query_device(dev, attr, len)?;
            Ok(0)
        })
    }

    /// C entry point `query_port_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn query_port_cb(
        ib: *mut bindings::ib_device,
        port: u32,
        attr: *mut bindings::ib_port_attr,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: The core passes our device and a valid attribute struct.
            let (dev, attr) = unsafe { (Self::from_raw(ib), &mut *attr) };
            T::query_port(dev, port, attr)?;
            Ok(0)
        })
    }

    /// C entry point `get_port_immutable_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn get_port_immutable_cb(
        ib: *mut bindings::ib_device,
        port: u32,
        imm: *mut bindings::ib_port_immutable,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: The core passes our device and a valid struct.
            let (dev, imm) = unsafe { (Self::from_raw(ib), &mut *imm) };
            T::get_port_immutable(dev, port, imm)?;
            Ok(0)
        })
    }

    /// C entry point `get_link_layer_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn get_link_layer_cb(
        _ib: *mut bindings::ib_device,
        _port: u32,
    ) -> bindings::rdma_link_layer {
        bindings::rdma_link_layer_IB_LINK_LAYER_ETHERNET
    }

    /// C entry point `query_pkey_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn query_pkey_cb(
        ib: *mut bindings::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: The core passes our device.
            let dev = unsafe { Self::from_raw(ib) };
            let value = T::query_pkey(dev, port, index)?;
            // SAFETY: `pkey` is a valid out-pointer.
            unsafe { pkey.write(value) };
            Ok(0)
        })
    }

    /// C entry point `alloc_ucontext_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn alloc_ucontext_cb(
        uctx: *mut bindings::ib_ucontext,
        udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: The core allocated `size_ib_ucontext` bytes for `uctx`, with the
            // `ib_ucontext` first and its `device` set to our device.
            let dev = unsafe { Self::from_raw((*uctx).device) };
            // SAFETY: `udata` is null or valid for the call.
            let len = unsafe { udata_len(udata) };
            let data = T::alloc_ucontext(dev, len)?;
            let this = uctx.cast::<Ucontext<T>>();
            // SAFETY: The field is uninitialised memory of the core's allocation.
            unsafe { addr_of_mut!((*this).data).write(data) };
            Ok(0)
        })
    }

    /// C entry point `dealloc_ucontext_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn dealloc_ucontext_cb(uctx: *mut bindings::ib_ucontext) {
        let this = uctx.cast::<Ucontext<T>>();
        // SAFETY: `alloc_ucontext_cb` initialised the data; this is its last use before the
        // core frees the memory.
        unsafe { core::ptr::drop_in_place(addr_of_mut!((*this).data)) };
    }

    /// C entry point `alloc_hw_port_stats_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn alloc_hw_port_stats_cb(
        _ib: *mut bindings::ib_device,
        _port: u32,
    ) -> *mut bindings::rdma_hw_stats {
        let stats = T::hw_stats();
        // SAFETY: The descriptors are a static array of `len()` entries.
        unsafe {
            bindings::rdma_alloc_hw_stats_struct(
                stats.as_raw(),
                stats.len() as ffi::c_int,
                bindings::RDMA_HW_STATS_DEFAULT_LIFESPAN as ffi::c_ulong,
            )
        }
    }

    /// C entry point `get_hw_stats_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn get_hw_stats_cb(
        ib: *mut bindings::ib_device,
        stats: *mut bindings::rdma_hw_stats,
        port: u32,
        _index: ffi::c_int,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: The core passes our device and the stats it allocated through
            // `alloc_hw_port_stats_cb`, whose `value` array has `num_counters` entries.
            let (dev, values) = unsafe {
                let n = (*stats).num_counters as usize;
                let values = (*stats).value.as_mut_slice(n);
                (Self::from_raw(ib), values)
            };
            T::get_hw_stats(dev, port, values)?;
            Ok(values.len() as ffi::c_int)
        })
    }

    /// C entry point `mmap_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn mmap_cb(
        uctx: *mut bindings::ib_ucontext,
        vma: *mut bindings::vm_area_struct,
    ) -> ffi::c_int {
        // SAFETY: The core's arguments; every entry of our contexts comes from `MmapEntry`.
        unsafe { MmapEntry::mmap(uctx, vma) }
    }

    /// C entry point `mmap_free_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn mmap_free_cb(entry: *mut bindings::rdma_user_mmap_entry) {
        // SAFETY: The core frees an unreferenced entry, which `MmapEntry` inserted.
        unsafe { MmapEntry::free(entry) }
    }

    /// C entry point `dealloc_driver_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    pub(super) unsafe extern "C" fn dealloc_driver_cb(ib: *mut bindings::ib_device) {
        let this = ib.cast::<Self>();
        // SAFETY: The core calls this once, after unregistration (or a failed one), before it
        // frees the memory; `register` initialised both fields before setting the ops.
        unsafe {
            (*this).registry.remove(ib);
            core::ptr::drop_in_place(addr_of_mut!((*this).data));
            core::ptr::drop_in_place(addr_of_mut!((*this).registry));
        }
    }
}

/// The (in, out) lengths of a request's driver data.
///
/// # Safety
///
/// `udata` must be null or valid.
unsafe fn udata_len(udata: *const bindings::ib_udata) -> (usize, usize) {
    if udata.is_null() {
        (0, 0)
    } else {
        // SAFETY: Valid by the caller's promise.
        unsafe { ((*udata).inlen, (*udata).outlen) }
    }
}
