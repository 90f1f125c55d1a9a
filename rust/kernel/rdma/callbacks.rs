// SPDX-License-Identifier: GPL-2.0

//! The C entry points of a device's operations: they recover the driver's objects from
//! the core's and call the driver's [`DeviceOps`].

use super::{
    ah::AhAttrs,
    device::{Device, Ucontext},
    event::SrqEvents,
    mmap::MmapEntry,
    mr::{KernelMem, PdId, SgMap},
    object::CoreObj,
    ops::DeviceOps,
    qp::QpInit,
    udata::Udata,
    wr::{RecvWrs, SendWrs, WcArray},
};
use crate::bindings;
use core::{mem::size_of, ptr::addr_of_mut};
use kernel::{error::from_result, ffi, prelude::*, types::Opaque, ThisModule};

impl<T: DeviceOps> Device<T> {
    pub(super) fn ops(module: &'static ThisModule) -> bindings::ib_device_ops {
        // The operation `f` if the driver implements it (`has`).
        macro_rules! op {
            ($has:expr, $f:expr) => {
                if $has {
                    Some($f)
                } else {
                    None
                }
            };
        }
        bindings::ib_device_ops {
            owner: module.as_ptr(),
            driver_id: T::DRIVER_ID,
            uverbs_abi_ver: T::UVERBS_ABI_VER,
            query_device: Some(Self::query_device_cb),
            query_port: Some(Self::query_port_cb),
            get_port_immutable: Some(Self::get_port_immutable_cb),
            get_link_layer: Some(Self::get_link_layer_cb),
            query_pkey: Some(Self::query_pkey_cb),
            alloc_ucontext: Some(Self::alloc_ucontext_cb),
            dealloc_ucontext: Some(Self::dealloc_ucontext_cb),
            alloc_hw_port_stats: op!(T::HAS_GET_HW_STATS, Self::alloc_hw_port_stats_cb),
            get_hw_stats: op!(T::HAS_GET_HW_STATS, Self::get_hw_stats_cb),
            mmap: Some(Self::mmap_cb),
            mmap_free: Some(Self::mmap_free_cb),
            alloc_pd: op!(T::HAS_ALLOC_PD, Self::alloc_pd_cb),
            dealloc_pd: op!(T::HAS_ALLOC_PD, Self::dealloc_pd_cb),
            create_cq: op!(T::HAS_CREATE_CQ, Self::create_cq_cb),
            destroy_cq: op!(T::HAS_CREATE_CQ, Self::destroy_cq_cb),
            resize_cq: op!(T::HAS_RESIZE_CQ, Self::resize_cq_cb),
            req_notify_cq: op!(T::HAS_REQ_NOTIFY_CQ, Self::req_notify_cq_cb),
            create_qp: op!(T::HAS_CREATE_QP, Self::create_qp_cb),
            destroy_qp: op!(T::HAS_CREATE_QP, Self::destroy_qp_cb),
            modify_qp: op!(T::HAS_MODIFY_QP, Self::modify_qp_cb),
            post_send: op!(
                T::HAS_POST_SEND_DOORBELL && T::HAS_POST_SEND,
                Self::post_send_cb
            ),
            post_recv: op!(T::HAS_POST_RECV, Self::post_recv_cb),
            post_srq_recv: op!(T::HAS_POST_SRQ_RECV, Self::post_srq_recv_cb),
            poll_cq: op!(T::HAS_POLL_CQ, Self::poll_cq_cb),
            peek_cq: op!(T::HAS_PEEK_CQ, Self::peek_cq_cb),
            query_qp: op!(T::HAS_QUERY_QP, Self::query_qp_cb),
            reg_user_mr: op!(T::HAS_REG_USER_MR, Self::reg_user_mr_cb),
            get_dma_mr: op!(T::HAS_GET_DMA_MR, Self::get_dma_mr_cb),
            rereg_user_mr: op!(T::HAS_REREG_USER_MR, Self::rereg_user_mr_cb),
            alloc_mr: op!(T::HAS_ALLOC_MR, Self::alloc_mr_cb),
            map_mr_sg: op!(T::HAS_MAP_MR_SG, Self::map_mr_sg_cb),
            dereg_mr: op!(
                T::HAS_REG_USER_MR || T::HAS_GET_DMA_MR || T::HAS_ALLOC_MR,
                Self::dereg_mr_cb
            ),
            create_ah: op!(T::HAS_CREATE_AH, Self::create_ah_cb),
            create_user_ah: op!(T::HAS_CREATE_AH, Self::create_ah_cb),
            destroy_ah: op!(T::HAS_CREATE_AH, Self::destroy_ah_cb),
            query_ah: op!(T::HAS_QUERY_AH, Self::query_ah_cb),
            create_srq: op!(T::HAS_CREATE_SRQ, Self::create_srq_cb),
            destroy_srq: op!(T::HAS_CREATE_SRQ, Self::destroy_srq_cb),
            modify_srq: op!(T::HAS_MODIFY_SRQ, Self::modify_srq_cb),
            query_srq: op!(T::HAS_QUERY_SRQ, Self::query_srq_cb),
            alloc_mw: op!(T::HAS_ALLOC_MW, Self::alloc_mw_cb),
            dealloc_mw: op!(T::HAS_ALLOC_MW, Self::dealloc_mw_cb),
            attach_mcast: op!(T::HAS_ATTACH_MCAST, Self::attach_mcast_cb),
            detach_mcast: op!(T::HAS_DETACH_MCAST, Self::detach_mcast_cb),
            dealloc_driver: Some(Self::dealloc_driver_cb),
            size_ib_ucontext: size_of::<Ucontext<T>>(),
            size_ib_pd: size_of::<CoreObj<bindings::ib_pd, T::Pd>>(),
            size_ib_cq: size_of::<CoreObj<bindings::ib_cq, T::Cq>>(),
            size_ib_qp: size_of::<CoreObj<bindings::ib_qp, T::Qp>>(),
            size_ib_ah: size_of::<CoreObj<bindings::ib_ah, T::Ah>>(),
            size_ib_srq: size_of::<CoreObj<bindings::ib_srq, T::Srq>>(),
            size_ib_mw: size_of::<CoreObj<bindings::ib_mw, T::Mw>>(),
            ..Default::default()
        }
    }

    /// C entry point `query_device_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn query_device_cb(
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
    unsafe extern "C" fn query_port_cb(
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
    unsafe extern "C" fn get_port_immutable_cb(
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
    unsafe extern "C" fn get_link_layer_cb(
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
    unsafe extern "C" fn query_pkey_cb(
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
    unsafe extern "C" fn alloc_ucontext_cb(
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
    unsafe extern "C" fn dealloc_ucontext_cb(uctx: *mut bindings::ib_ucontext) {
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
    unsafe extern "C" fn alloc_hw_port_stats_cb(
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
    unsafe extern "C" fn get_hw_stats_cb(
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
    unsafe extern "C" fn mmap_cb(
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
    unsafe extern "C" fn mmap_free_cb(entry: *mut bindings::rdma_user_mmap_entry) {
        // SAFETY: The core frees an unreferenced entry, which `MmapEntry` inserted.
        unsafe { MmapEntry::free(entry) }
    }

    /// C entry point `alloc_pd_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn alloc_pd_cb(
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
    unsafe extern "C" fn dealloc_pd_cb(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: `alloc_pd_cb` initialised the data; the core frees the object afterwards.
        unsafe { CoreObj::<bindings::ib_pd, T::Pd>::drop_data(pd) };
        0
    }

    /// C entry point `create_cq_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn create_cq_cb(
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
            // SAFETY: As in `alloc_pd_cb`; `cqe` is the core's field for the capacity.
            unsafe {
                CoreObj::init(cq, data);
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
    unsafe extern "C" fn destroy_cq_cb(
        cq: *mut bindings::ib_cq,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: `create_cq_cb` initialised the data; the core refuses to destroy a CQ still
        // in use and frees the object afterwards.
        unsafe { CoreObj::<bindings::ib_cq, T::Cq>::drop_data(cq) };
        0
    }

    /// C entry point `resize_cq_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn resize_cq_cb(
        cq: *mut bindings::ib_cq,
        cqe: ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            let cqe = u32::try_from(cqe).map_err(|_| EINVAL)?;
            // SAFETY: A CQ of ours, initialised; `udata` is null or the request's.
            let (data, mut udata) = unsafe {
                (
                    CoreObj::<bindings::ib_cq, T::Cq>::data(cq),
                    Udata::from_raw(udata),
                )
            };
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
    unsafe extern "C" fn req_notify_cq_cb(
        cq: *mut bindings::ib_cq,
        flags: bindings::ib_cq_notify_flags,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: A CQ of ours, initialised.
            let data = unsafe { CoreObj::<bindings::ib_cq, T::Cq>::data(cq) };
            Ok(T::req_notify_cq(data, flags)? as ffi::c_int)
        })
    }

    /// C entry point `create_qp_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn create_qp_cb(
        qp: *mut bindings::ib_qp,
        init: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: The core allocated `size_ib_qp` bytes with `device` set; `init` is valid
            // and its CQs are this device's; `udata` is null or the request's.
            let (dev, mut init, mut udata) = unsafe {
                (
                    Self::from_raw((*qp).device),
                    QpInit::from_raw(&mut *init, (*qp).pd, qp),
                    Udata::from_raw(udata),
                )
            };
            let (data, qpn) = T::create_qp(dev, &mut init, &mut udata)?;
            // SAFETY: As in `alloc_pd_cb`; `qp_num` is the core's field for the number.
            unsafe {
                CoreObj::init(qp, data);
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
    unsafe extern "C" fn destroy_qp_cb(
        qp: *mut bindings::ib_qp,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: `create_qp_cb` initialised the data; the core frees the object afterwards.
        unsafe { CoreObj::<bindings::ib_qp, T::Qp>::drop_data(qp) };
        0
    }

    /// C entry point `post_send_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn post_send_cb(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
    ) -> ffi::c_int {
        // SAFETY: A QP of ours, initialised.
        let data = unsafe { CoreObj::<bindings::ib_qp, T::Qp>::data(qp) };
        // Userspace QPs post through their mapped queue; a POST_SEND command only rings
        // the doorbell (work requests it might carry are ignored, as rxe does).
        // SAFETY: `qp` is valid; `uobject` is set at creation for userspace QPs only.
        if wr.is_null() || !unsafe { (*qp).uobject }.is_null() {
            return from_result(|| T::post_send_doorbell(data).map(|()| 0));
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
    unsafe extern "C" fn post_recv_cb(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> ffi::c_int {
        // SAFETY: A QP of ours, initialised.
        let data = unsafe { CoreObj::<bindings::ib_qp, T::Qp>::data(qp) };
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
    unsafe extern "C" fn post_srq_recv_cb(
        srq: *mut bindings::ib_srq,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> ffi::c_int {
        // SAFETY: An SRQ of ours, initialised.
        let data = unsafe { CoreObj::<bindings::ib_srq, T::Srq>::data(srq) };
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

    /// C entry point `peek_cq_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn peek_cq_cb(cq: *mut bindings::ib_cq, wc_cnt: ffi::c_int) -> ffi::c_int {
        // SAFETY: A CQ of ours, initialised.
        let data = unsafe { CoreObj::<bindings::ib_cq, T::Cq>::data(cq) };
        T::peek_cq(data, usize::try_from(wc_cnt).unwrap_or(0)) as ffi::c_int
    }

    /// C entry point `poll_cq_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn poll_cq_cb(
        cq: *mut bindings::ib_cq,
        num: ffi::c_int,
        wc: *mut bindings::ib_wc,
    ) -> ffi::c_int {
        // SAFETY: A CQ of ours, initialised.
        let data = unsafe { CoreObj::<bindings::ib_cq, T::Cq>::data(cq) };
        // SAFETY: The core passes `num` writable entries.
        let mut wcs = unsafe { WcArray::from_raw(wc, usize::try_from(num).unwrap_or(0)) };
        match T::poll_cq(data, &mut wcs) {
            Ok(n) => n as ffi::c_int,
            Err(e) => e.to_errno(),
        }
    }

    /// C entry point `modify_qp_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn modify_qp_cb(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: A QP of ours, initialised; `attr` valid; `udata` null or the request's.
            let (data, attr, mut udata) = unsafe {
                (
                    CoreObj::<bindings::ib_qp, T::Qp>::data(qp),
                    &*attr,
                    Udata::from_raw(udata),
                )
            };
            T::modify_qp(data, attr, mask as u32, &mut udata)?;
            Ok(0)
        })
    }

    /// C entry point `query_qp_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn query_qp_cb(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        _mask: ffi::c_int,
        init: *mut bindings::ib_qp_init_attr,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: A QP of ours, initialised; both out-structures are valid.
            let (data, attr, init) = unsafe {
                (
                    CoreObj::<bindings::ib_qp, T::Qp>::data(qp),
                    &mut *attr,
                    &mut *init,
                )
            };
            T::query_qp(data, attr, init)?;
            Ok(0)
        })
    }

    /// Allocates the `ib_mr` of a new MR with keys; the core fills in the rest.
    fn new_mr(mr: Result<(T::Mr, u32, u32)>) -> *mut bindings::ib_mr {
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
    unsafe extern "C" fn reg_user_mr_cb(
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
    unsafe extern "C" fn get_dma_mr_cb(
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
    unsafe extern "C" fn alloc_mr_cb(
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
    unsafe extern "C" fn map_mr_sg_cb(
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
    unsafe extern "C" fn set_page_cb(mr: *mut bindings::ib_mr, addr: u64) -> ffi::c_int {
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
    unsafe extern "C" fn rereg_user_mr_cb(
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
    unsafe extern "C" fn dereg_mr_cb(
        mr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: Allocated by `new_mr`; the core is done with it.
        drop(unsafe { KBox::from_raw(mr.cast::<CoreObj<bindings::ib_mr, T::Mr>>()) });
        0
    }

    /// C entry point `create_ah_cb` (also `create_user_ah`).
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn create_ah_cb(
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
    unsafe extern "C" fn destroy_ah_cb(ah: *mut bindings::ib_ah, _flags: u32) -> ffi::c_int {
        // SAFETY: `create_ah_cb` initialised the data; the core frees the object afterwards.
        unsafe { CoreObj::<bindings::ib_ah, T::Ah>::drop_data(ah) };
        0
    }

    /// C entry point `query_ah_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn query_ah_cb(
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
    unsafe extern "C" fn create_srq_cb(
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
            // SAFETY: The SRQ being created.
            let events = unsafe { SrqEvents::from_raw(srq) }.ok_or(EINVAL)?;
            let data = T::create_srq(dev, events, &mut init.attr, init.srq_type, &mut udata)?;
            // SAFETY: As in `alloc_pd_cb`.
            unsafe { CoreObj::init(srq, data) };
            Ok(0)
        })
    }

    /// C entry point `destroy_srq_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn destroy_srq_cb(
        srq: *mut bindings::ib_srq,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: `create_srq_cb` initialised the data; the core refuses to destroy an SRQ
        // still in use and frees the object afterwards.
        unsafe { CoreObj::<bindings::ib_srq, T::Srq>::drop_data(srq) };
        0
    }

    /// C entry point `modify_srq_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn modify_srq_cb(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
        mask: bindings::ib_srq_attr_mask,
        udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: An SRQ of ours, initialised; `attr` valid; `udata` null or the request's.
            let (data, attr, mut udata) = unsafe {
                (
                    CoreObj::<bindings::ib_srq, T::Srq>::data(srq),
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
    unsafe extern "C" fn query_srq_cb(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: An SRQ of ours, initialised; `attr` is valid.
            let (data, attr) =
                unsafe { (CoreObj::<bindings::ib_srq, T::Srq>::data(srq), &mut *attr) };
            T::query_srq(data, attr)?;
            Ok(0)
        })
    }

    /// C entry point `alloc_mw_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn alloc_mw_cb(
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
    unsafe extern "C" fn dealloc_mw_cb(mw: *mut bindings::ib_mw) -> ffi::c_int {
        // SAFETY: `alloc_mw_cb` initialised the data; the core frees the object afterwards.
        unsafe { CoreObj::<bindings::ib_mw, T::Mw>::drop_data(mw) };
        0
    }

    /// C entry point `attach_mcast_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn attach_mcast_cb(
        qp: *mut bindings::ib_qp,
        gid: *mut bindings::ib_gid,
        _lid: u16,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: A QP of ours, initialised; `gid` is valid.
            let (dev, data, gid) = unsafe {
                (
                    Self::from_raw((*qp).device),
                    CoreObj::<bindings::ib_qp, T::Qp>::data(qp),
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
    unsafe extern "C" fn detach_mcast_cb(
        qp: *mut bindings::ib_qp,
        gid: *mut bindings::ib_gid,
        _lid: u16,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: As in `attach_mcast_cb`.
            let (dev, data, gid) = unsafe {
                (
                    Self::from_raw((*qp).device),
                    CoreObj::<bindings::ib_qp, T::Qp>::data(qp),
                    (*gid).raw.as_ref(),
                )
            };
            T::detach_mcast(dev, data, gid)?;
            Ok(0)
        })
    }

    /// C entry point `dealloc_driver_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn dealloc_driver_cb(ib: *mut bindings::ib_device) {
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
