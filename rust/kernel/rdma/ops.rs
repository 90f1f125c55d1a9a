// SPDX-License-Identifier: GPL-2.0

//! The operations a driver implements for its RDMA devices: a `#[vtable]` trait whose
//! implemented methods become the device's `ib_device_ops` (see [`super::callbacks`]).

use super::{
    ah::AhAttrs,
    device::Device,
    event::SrqEvents,
    mr::{KernelMem, PdId, SgMap},
    qp::{QpAttr, QpInit, QpInitAttr},
    stats::HwStats,
    types::{CqNotifyFlags, QpAttrMask},
    udata::Udata,
    wr::{RecvWrs, SendWrs, WcArray},
};
use crate::bindings;
use kernel::{error::VTABLE_DEFAULT_ERROR, prelude::*};

/// Attributes of an SRQ (`struct ib_srq_attr`).
pub type SrqAttr = bindings::ib_srq_attr;
/// Attributes of a new CQ (`struct ib_cq_init_attr`).
pub type CqInitAttr = bindings::ib_cq_init_attr;
/// Device attributes reported by `query_device` (`struct ib_device_attr`).
pub type DeviceAttr = bindings::ib_device_attr;
/// Port attributes reported by `query_port` (`struct ib_port_attr`).
pub type PortAttr = bindings::ib_port_attr;
/// Port properties fixed at registration (`struct ib_port_immutable`).
pub type PortImmutable = bindings::ib_port_immutable;

/// Driver-provided operations of an RDMA device.
#[vtable]
pub trait DeviceOps: Sized + Send + Sync + 'static {
    /// The `rdma_driver_id` the device reports (selects the userspace provider).
    const DRIVER_ID: u32;
    /// The provider ABI version reported through uverbs.
    const UVERBS_ABI_VER: u32;

    /// Per user context data.
    type Ucontext: Send + Sync;

    /// Fills the device attributes. `udata_len` is the (in, out) length of the request's
    /// driver data.
    fn query_device(dev: &Device<Self>, attr: &mut DeviceAttr, udata_len: (usize, usize))
        -> Result;

    /// Fills the attributes of `port`.
    fn query_port(dev: &Device<Self>, port: u32, attr: &mut PortAttr) -> Result;

    /// Fills the immutable properties of `port`.
    fn get_port_immutable(dev: &Device<Self>, port: u32, imm: &mut PortImmutable) -> Result;

    /// Returns the P_Key at `index` of `port`'s table.
    fn query_pkey(dev: &Device<Self>, port: u32, index: u16) -> Result<u16>;

    /// Creates the data of a new user context. `udata_len` is as in `query_device`.
    fn alloc_ucontext(dev: &Device<Self>, udata_len: (usize, usize)) -> Result<Self::Ucontext>;

    /// Protection domain data.
    type Pd: Send + Sync;

    /// Creates a protection domain.
    fn alloc_pd(_dev: &Device<Self>, _udata: &mut Udata<'_>) -> Result<Self::Pd> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Completion queue data.
    type Cq: Send + Sync;

    /// Creates a completion queue for `attr`; returns it and its capacity in entries.
    fn create_cq(
        _dev: &Device<Self>,
        _attr: &CqInitAttr,
        _udata: &mut Udata<'_>,
    ) -> Result<(Self::Cq, u32)> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Resizes a completion queue to hold at least `cqe` entries; returns its capacity.
    fn resize_cq(_cq: &Self::Cq, _cqe: u32, _udata: &mut Udata<'_>) -> Result<u32> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Takes up to `wcs.len()` completions of a kernel consumer's CQ; returns how many.
    fn poll_cq(_cq: &Self::Cq, _wcs: &mut WcArray<'_>) -> Result<usize> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// How many completions a kernel consumer's CQ holds, up to `max`.
    fn peek_cq(_cq: &Self::Cq, _max: usize) -> usize {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Arms completion notification (`IB_CQ_*` flags); returns whether completions are
    /// already waiting when `IB_CQ_REPORT_MISSED_EVENTS` is set.
    fn req_notify_cq(_cq: &Self::Cq, _flags: CqNotifyFlags) -> Result<bool> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Queue pair data.
    type Qp: Send + Sync;

    /// Creates a queue pair; returns it and its QP number.
    fn create_qp(
        _dev: &Device<Self>,
        _init: &mut QpInit<'_, Self>,
        _udata: &mut Udata<'_>,
    ) -> Result<(Self::Qp, u32)> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The send doorbell: userspace posted send WQEs into the mapped send queue and asks
    /// the device to process them (a POST_SEND command without work requests).
    fn post_send_doorbell(_qp: &Self::Qp) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Posts send work requests of a kernel consumer.
    fn post_send(_qp: &Self::Qp, _wrs: &mut SendWrs<'_, Self>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Posts receive work requests of a kernel consumer.
    fn post_recv(_qp: &Self::Qp, _wrs: &mut RecvWrs<'_>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Modifies the attributes selected by `mask` (`IB_QP_*`), possibly the state.
    fn modify_qp(
        _qp: &Self::Qp,
        _attr: &QpAttr,
        _mask: QpAttrMask,
        _udata: &mut Udata<'_>,
    ) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reports the QP's attributes and creation attributes.
    fn query_qp(_qp: &Self::Qp, _attr: &mut QpAttr, _init: &mut QpInitAttr) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Shared receive queue data.
    type Srq: Send + Sync;

    /// Creates a shared receive queue of `srq_type` (`IB_SRQT_*`) for `attr`; writes back
    /// the capacities it provides.
    fn create_srq(
        _dev: &Device<Self>,
        _events: SrqEvents,
        _attr: &mut SrqAttr,
        _srq_type: u32,
        _udata: &mut Udata<'_>,
    ) -> Result<Self::Srq> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Changes the size or limit of an SRQ (`IB_SRQ_*` in `mask`).
    fn modify_srq(_srq: &Self::Srq, _attr: &SrqAttr, _mask: u32, _udata: &mut Udata<'_>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Posts receive work requests of a kernel consumer to an SRQ.
    fn post_srq_recv(_srq: &Self::Srq, _wrs: &mut RecvWrs<'_>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reports an SRQ's attributes.
    fn query_srq(_srq: &Self::Srq, _attr: &mut SrqAttr) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Attaches `qp` to the multicast group `gid` (the core checked the GID and QP type).
    fn attach_mcast(_dev: &Device<Self>, _qp: &Self::Qp, _gid: &[u8; 16]) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Detaches `qp` from the multicast group `gid`.
    fn detach_mcast(_dev: &Device<Self>, _qp: &Self::Qp, _gid: &[u8; 16]) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Memory window data.
    type Mw: Send + Sync;

    /// Allocates a memory window of `mw_type` (`IB_MW_TYPE_*`) in PD `pd`; returns it and
    /// its rkey.
    fn alloc_mw(
        _dev: &Device<Self>,
        _pd: PdId,
        _mw_type: u32,
        _udata: &mut Udata<'_>,
    ) -> Result<(Self::Mw, u32)> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Address handle data.
    type Ah: Send + Sync;

    /// Creates an address handle for `attr`.
    /// `sleepable`: the caller may sleep (`RDMA_CREATE_AH_SLEEPABLE`); otherwise nothing
    /// may sleep, allocations included.
    fn create_ah(
        _dev: &Device<Self>,
        _pd: PdId,
        _attr: AhAttrs,
        _sleepable: bool,
        _udata: &mut Udata<'_>,
    ) -> Result<Self::Ah> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reports an address handle's address vector.
    fn query_ah(_ah: &Self::Ah) -> Result<AhAttrs> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Memory region data.
    type Mr: Send + Sync;

    /// Registers `length` bytes of user memory at `start`, accessed at `iova`, with
    /// `access` (`IB_ACCESS_*`), in PD `pd`; returns the MR and its keys (lkey, rkey).
    fn reg_user_mr(
        _dev: &Device<Self>,
        _pd: PdId,
        _start: u64,
        _length: u64,
        _iova: u64,
        _access: u32,
        _udata: &mut Udata<'_>,
    ) -> Result<(Self::Mr, u32, u32)> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates an MR of all kernel memory for kernel consumers in PD `pd`, accessed through
    /// `mem`; returns it and its keys.
    fn get_dma_mr(
        _dev: &Device<Self>,
        _pd: PdId,
        _access: u32,
        _mem: KernelMem,
    ) -> Result<(Self::Mr, u32, u32)> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Changes the PD (`Some`, with `IB_MR_REREG_PD`) or the access (`IB_MR_REREG_ACCESS`)
    /// of a user MR, as `flags` (`IB_MR_REREG_*`) say; the MR keeps its keys.
    fn rereg_user_mr(
        _dev: &Device<Self>,
        _mr: &Self::Mr,
        _flags: u32,
        _access: u32,
        _pd: Option<PdId>,
    ) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Asked by `dereg_mr` before the MR is dropped: an error (e.g. `EBUSY` while memory
    /// windows are bound to it) keeps the MR registered and is the verb's result.
    fn retire_mr(_mr: &Self::Mr) -> Result {
        Ok(())
    }

    /// Allocates an MR of `mr_type` (`IB_MR_TYPE_*`) for fast registration of at most
    /// `max_num_sg` pages of kernel memory, accessed through `mem`, in PD `pd`; returns it
    /// and its keys.
    fn alloc_mr(
        _dev: &Device<Self>,
        _pd: PdId,
        _mr_type: u32,
        _max_num_sg: u32,
        _mem: KernelMem,
    ) -> Result<(Self::Mr, u32, u32)> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Maps a fast-registration MR to a scatterlist: calls [`SgMap::map`], which calls
    /// [`DeviceOps::mr_set_page`] for each page; returns the number of elements mapped.
    fn map_mr_sg(_mr: &Self::Mr, _map: SgMap<'_>) -> Result<i32> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Records the next page (its DMA address) of a mapping [`DeviceOps::map_mr_sg`] runs.
    fn mr_set_page(_mr: &Self::Mr, _addr: u64) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The names of the port's hardware counters.
    fn hw_stats() -> &'static HwStats {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reads the port's hardware counters into `values` (one per name of `hw_stats`).
    fn get_hw_stats(_dev: &Device<Self>, _port: u32, _values: &mut [u64]) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
}
