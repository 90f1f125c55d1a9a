// SPDX-License-Identifier: GPL-2.0

//! The C entry points of a device's operations: they recover the driver's objects from
//! the core's and call the driver's [`DeviceOps`].

mod ah_srq;
mod cq;
mod device;
mod mem;
mod qp;

use super::{
    device::{Device, Ucontext},
    object::CoreObj,
    ops::DeviceOps,
    qp_event::QpObj,
};
use crate::bindings;
use core::mem::{size_of, MaybeUninit};

/// The operation `f` if the driver implements it (`has`, a `#[vtable]` `HAS_*` constant).
macro_rules! op {
    ($has:expr, $f:expr) => {
        if $has {
            Some($f)
        } else {
            None
        }
    };
}

impl<T: DeviceOps> Device<T> {
    /// The device operations of `T`, built at compile time from the `#[vtable]` constants.
    ///
    /// `owner` is null: `THIS_MODULE` is a static of the driver's crate that a constant
    /// cannot read. [`Device::register`] sets it with a second `ib_set_device_ops`, which
    /// merges it into the device's operations (the core's own way of combining tables).
    const VTABLE: bindings::ib_device_ops = bindings::ib_device_ops {
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
        size_ib_cq: size_of::<super::cq::CoreCq<T>>(),
        size_ib_qp: size_of::<CoreObj<bindings::ib_qp, QpObj<T::Qp>>>(),
        size_ib_ah: size_of::<CoreObj<bindings::ib_ah, T::Ah>>(),
        size_ib_srq: size_of::<super::event::CoreSrq<T>>(),
        size_ib_mw: size_of::<CoreObj<bindings::ib_mw, T::Mw>>(),
        // SAFETY: All zeros is a valid `ib_device_ops`: its other members are optional
        // function pointers (`None`), integers and pointers (null).
        ..unsafe { MaybeUninit::zeroed().assume_init() }
    };

    /// The device operations of `T` (see [`Device::VTABLE`]), for `ib_set_device_ops`.
    pub(super) const fn build() -> &'static bindings::ib_device_ops {
        &Self::VTABLE
    }
}
