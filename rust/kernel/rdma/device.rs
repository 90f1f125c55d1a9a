// SPDX-License-Identifier: GPL-2.0

//! RDMA devices (`struct ib_device`) of software RoCE drivers.
//!
//! A driver implements [`DeviceOps`] (a `#[vtable]` trait: only the operations it
//! implements reach the core's `ib_device_ops`) and creates devices with
//! [`Device::register`]. After registration the RDMA core owns the device: it is
//! unregistered by `rdma link delete`, by the driver (see [`DeviceRef`]), or when the
//! module's [`Registry`] is told to unregister everything; the driver data is dropped in
//! the core's `dealloc_driver` callback.

use super::{
    ah::AhAttrs,
    mmap::MmapEntry,
    qp::{QpAttr, QpInit},
    stats::HwStats,
    udata::Udata,
};
use crate::{
    bindings,
    ext::{net::device::NetDevice, sync::SpinLockBh},
};
use core::{
    marker::PhantomData,
    mem::size_of,
    ptr::{addr_of_mut, NonNull},
};
use kernel::{
    error::{from_result, VTABLE_DEFAULT_ERROR},
    ffi,
    prelude::*,
    str::CStr,
    sync::Arc,
    types::{ARef, Opaque},
    ThisModule,
};

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

/// A port event delivered to the device's consumers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PortEvent {
    /// The port became active.
    Active,
    /// The port went down.
    Error,
}

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

    /// Arms completion notification (`IB_CQ_*` flags); returns whether completions are
    /// already waiting when `IB_CQ_REPORT_MISSED_EVENTS` is set.
    fn req_notify_cq(_cq: &Self::Cq, _flags: u32) -> Result<bool> {
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

    /// Modifies the attributes selected by `mask` (`IB_QP_*`), possibly the state.
    fn modify_qp(_qp: &Self::Qp, _attr: &QpAttr, _mask: u32, _udata: &mut Udata<'_>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reports the QP's attributes and creation attributes.
    fn query_qp(
        _qp: &Self::Qp,
        _attr: &mut QpAttr,
        _init: &mut bindings::ib_qp_init_attr,
    ) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Shared receive queue data.
    type Srq: Send + Sync;

    /// Creates a shared receive queue of `srq_type` (`IB_SRQT_*`) for `attr`; writes back
    /// the capacities it provides.
    fn create_srq(
        _dev: &Device<Self>,
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

    /// Allocates a memory window of `mw_type` (`IB_MW_TYPE_*`); returns it and its rkey.
    fn alloc_mw(
        _dev: &Device<Self>,
        _mw_type: u32,
        _udata: &mut Udata<'_>,
    ) -> Result<(Self::Mw, u32)> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Address handle data.
    type Ah: Send + Sync;

    /// Creates an address handle for `attr`.
    fn create_ah(_dev: &Device<Self>, _attr: AhAttrs, _udata: &mut Udata<'_>) -> Result<Self::Ah> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reports an address handle's address vector.
    fn query_ah(_ah: &Self::Ah) -> Result<AhAttrs> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Memory region data.
    type Mr: Send + Sync;

    /// Registers `length` bytes of user memory at `start`, accessed at `iova`, with
    /// `access` (`IB_ACCESS_*`); returns the MR and its keys (lkey, rkey).
    fn reg_user_mr(
        _dev: &Device<Self>,
        _start: u64,
        _length: u64,
        _iova: u64,
        _access: u32,
        _udata: &mut Udata<'_>,
    ) -> Result<(Self::Mr, u32, u32)> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates an MR of all kernel memory for kernel consumers; returns it and its keys.
    fn get_dma_mr(_dev: &Device<Self>, _access: u32) -> Result<(Self::Mr, u32, u32)> {
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

/// Fixed properties given to a device at creation.
pub struct DeviceParams<'a> {
    /// Node description (truncated to 63 bytes).
    pub node_desc: &'a CStr,
    /// Node GUID, as it appears on the wire (network order bytes).
    pub node_guid: [u8; 8],
    /// Extra legacy uverbs commands the driver implements (`uverbs_cmd_mask` bits).
    pub uverbs_cmd_mask: u64,
}

/// The addresses of a module's registered devices, so that module unload can unregister
/// exactly its own devices (never by driver id, which other drivers share).
///
/// Its lock disables bottom halves, so lookups work from the receive path (softirq).
#[pin_data]
pub struct Registry<T: DeviceOps> {
    #[pin]
    devices: SpinLockBh<KVec<usize>>,
    _t: PhantomData<T>,
}

impl<T: DeviceOps> Registry<T> {
    /// A new, empty registry.
    pub fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                devices <- crate::new_spinlock_bh!(KVec::new(), "rrxe:registry"),
                _t: PhantomData,
            }),
            GFP_KERNEL,
        )
    }

    /// Finds the registry's device on `ndev`, if any.
    pub fn get_by_netdev(&self, ndev: &NetDevice) -> Option<DeviceRef<T>> {
        // SAFETY: `ndev` is valid; the core returns a registration reference or null.
        let ib = unsafe { bindings::ib_device_get_by_netdev(ndev.as_raw(), T::DRIVER_ID) };
        let dev = DeviceRef {
            ib: NonNull::new(ib)?,
            _t: PhantomData,
        };
        // Other drivers may use the same driver id: only devices in the registry are ours.
        let ours = self.devices.lock().contains(&(ib as usize));
        ours.then_some(dev)
    }

    fn add(&self, dev: *mut bindings::ib_device) -> Result {
        // Under a spinlock: atomic allocation, of one word.
        self.devices.lock().push(dev as usize, GFP_ATOMIC)?;
        Ok(())
    }

    fn remove(&self, dev: *mut bindings::ib_device) {
        let mut devices = self.devices.lock();
        if let Some(i) = devices.iter().position(|d| *d == dev as usize) {
            crate::ext::vec::swap_remove(&mut devices, i);
        }
    }

    /// Unregisters every device of the registry and waits until all are gone.
    ///
    /// The caller must have stopped new registrations (unregistered its link type).
    pub fn unregister_all(&self) {
        loop {
            let next = {
                let devices = self.devices.lock();
                if devices.is_empty() {
                    return;
                }
                // SAFETY: Devices stay in the registry until their `dealloc_driver`, which
                // takes this lock, so every address is a valid `ib_device` here.
                devices
                    .iter()
                    .map(|d| *d as *mut bindings::ib_device)
                    .find(|d| unsafe { bindings::ib_device_try_get(*d) })
            };
            match next {
                // SAFETY: We hold a registration reference, which the call consumes.
                Some(dev) => unsafe { bindings::ib_unregister_device_and_put(dev) },
                // Every remaining device is being unregistered by someone else; it leaves
                // the registry when that finishes.
                // SAFETY: Sleeping is fine: module unload runs in process context.
                None => unsafe { bindings::msleep(10) },
            }
        }
    }
}

/// An RDMA device with driver data `T`.
///
/// The `ib_device` is the first field, as the core requires (it allocates and frees the
/// whole object by the `ib_device` pointer).
#[repr(C)]
pub struct Device<T: DeviceOps> {
    ib: Opaque<bindings::ib_device>,
    registry: Arc<Registry<T>>,
    data: T,
}

/// A user context (`struct ib_ucontext`) with driver data.
#[repr(C)]
struct Ucontext<T: DeviceOps> {
    ib: Opaque<bindings::ib_ucontext>,
    data: T::Ucontext,
}

/// A verbs object the core allocates with the driver's size (`size_ib_*`): the C object
/// first, then the driver data.
#[repr(C)]
pub(crate) struct CoreObj<C, D> {
    ib: Opaque<C>,
    data: D,
}

impl<C, D> CoreObj<C, D> {
    /// Writes the data of a new object.
    ///
    /// # Safety
    ///
    /// `ib` must be an object of `size_of::<Self>()` bytes whose data is uninitialised.
    pub(crate) unsafe fn init(ib: *mut C, data: D) {
        // SAFETY: The caller's promise.
        unsafe { addr_of_mut!((*ib.cast::<Self>()).data).write(data) };
    }

    /// The data of an object.
    ///
    /// # Safety
    ///
    /// `ib` must be initialised by `init` and not yet dropped, for the lifetime `'a`.
    pub(crate) unsafe fn data<'a>(ib: *mut C) -> &'a D {
        // SAFETY: The caller's promise.
        unsafe { &(*ib.cast::<Self>()).data }
    }

    /// Drops the data of an object about to be freed.
    ///
    /// # Safety
    ///
    /// As for `data`; no use of the data may follow.
    pub(crate) unsafe fn drop_data(ib: *mut C) {
        // SAFETY: The caller's promise.
        unsafe { core::ptr::drop_in_place(addr_of_mut!((*ib.cast::<Self>()).data)) };
    }
}

impl<T: DeviceOps> Device<T> {
    /// Creates and registers a device named `name` on port 1 of `ndev`.
    ///
    /// Must be called in process context without RTNL held (registration queries the port).
    pub fn register(
        module: &'static ThisModule,
        registry: &Arc<Registry<T>>,
        name: &CStr,
        ndev: &NetDevice,
        params: &DeviceParams<'_>,
        data: impl PinInit<T, Error>,
    ) -> Result {
        const { assert!(core::mem::align_of::<Device<T>>() <= 8) };
        // SAFETY: Allocates a zeroed object of our size with the `ib_device` at offset 0.
        let ib = unsafe { bindings::_ib_alloc_device(size_of::<Self>()) };
        let ib = NonNull::new(ib).ok_or(ENOMEM)?;
        let this = ib.as_ptr().cast::<Self>();
        // SAFETY: `this` is the new, exclusively owned allocation; `data` is uninitialised.
        if let Err(e) = unsafe { data.__pinned_init(addr_of_mut!((*this).data)) } {
            // SAFETY: No ops are set yet, so this only frees the allocation.
            unsafe { bindings::ib_dealloc_device(ib.as_ptr()) };
            return Err(e);
        }
        // SAFETY: As above; the field is uninitialised.
        unsafe { addr_of_mut!((*this).registry).write(registry.clone()) };

        // SAFETY: The device is not yet visible to anyone else.
        unsafe { Self::setup(ib.as_ptr(), ndev, params) };
        // From here on `dealloc_driver` (via `ib_dealloc_device`) drops data and registry.
        let ops = Self::ops(module);
        // SAFETY: The core copies the operations.
        unsafe { bindings::ib_set_device_ops(ib.as_ptr(), &ops) };

        if let Err(e) = registry.add(ib.as_ptr()) {
            // SAFETY: Not registered; frees the device through `dealloc_driver`.
            unsafe { bindings::ib_dealloc_device(ib.as_ptr()) };
            return Err(e);
        }
        // SAFETY: `ndev` is valid; the core takes its own reference.
        let ret = unsafe { bindings::ib_device_set_netdev(ib.as_ptr(), ndev.as_raw(), 1) };
        let ret = kernel::error::to_result(ret).and_then(|()| {
            // SAFETY: `name` is NUL-terminated; a null DMA device selects virtual DMA.
            kernel::error::to_result(unsafe {
                bindings::ib_register_device(ib.as_ptr(), name.as_char_ptr(), core::ptr::null_mut())
            })
        });
        if let Err(e) = ret {
            // SAFETY: Registration failed: the caller must free the device, which runs
            // `dealloc_driver`.
            unsafe { bindings::ib_dealloc_device(ib.as_ptr()) };
            return Err(e);
        }

        // A netdev being unregistered right now may have sent its notification before the
        // device could be found by it. Under RTNL either that is visible here or the
        // notifier will see the device.
        if !crate::ext::net::device::with_rtnl(|| ndev.is_registered()) {
            // SAFETY: Registered above; we hold the initial registration.
            unsafe { bindings::ib_unregister_device(ib.as_ptr()) };
            return Err(ENODEV);
        }
        Ok(())
    }

    /// Fills the device fields the core reads at registration.
    ///
    /// # Safety
    ///
    /// `ib` must be a freshly allocated, unregistered device.
    unsafe fn setup(ib: *mut bindings::ib_device, ndev: &NetDevice, params: &DeviceParams<'_>) {
        // SAFETY: The caller guarantees exclusive access to the unregistered device.
        let d = unsafe { &mut *ib };
        d.node_type = bindings::RDMA_NODE_IB_CA as u8;
        d.phys_port_cnt = 1;
        // One completion vector per possible CPU.
        // SAFETY: The helper only reads `num_possible_cpus()`.
        d.num_comp_vectors = unsafe { bindings::num_possible_cpus() } as i32;
        d.local_dma_lkey = 0;
        d.node_guid = u64::from_ne_bytes(params.node_guid);
        d.name_assign_type = bindings::rdma_nl_name_assign_type_RDMA_NAME_ASSIGN_TYPE_USER;
        d.uverbs_cmd_mask |= params.uverbs_cmd_mask;
        let desc = params.node_desc.as_bytes();
        let n = desc.len().min(d.node_desc.len() - 1);
        for (dst, src) in d.node_desc.iter_mut().zip(&desc[..n]) {
            *dst = *src as ffi::c_char;
        }
        // Give the device the netdev's parent, so that sysfs shows
        // `/sys/class/infiniband/DEV/device/net/NETDEV`. Virtual DMA is unaffected.
        // SAFETY: `dev` is the embedded `struct device`, not yet registered; the parent is
        // referenced by the driver core when the device is added.
        unsafe {
            let dev: *mut bindings::device = addr_of_mut!(d.__bindgen_anon_1.dev).cast();
            (*dev).parent = ndev.parent_raw();
        }
    }

    fn ops(module: &'static ThisModule) -> bindings::ib_device_ops {
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
            query_qp: op!(T::HAS_QUERY_QP, Self::query_qp_cb),
            reg_user_mr: op!(T::HAS_REG_USER_MR, Self::reg_user_mr_cb),
            get_dma_mr: op!(T::HAS_GET_DMA_MR, Self::get_dma_mr_cb),
            dereg_mr: op!(T::HAS_REG_USER_MR || T::HAS_GET_DMA_MR, Self::dereg_mr_cb),
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

    /// # Safety
    ///
    /// `ib` must be a device created by [`Device::register`] whose driver data is alive
    /// (i.e. any `ib_device` the core passes to this device's callbacks).
    unsafe fn from_raw<'a>(ib: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: The `ib_device` is the first field of `Self` (repr(C)).
        unsafe { &*ib.cast::<Self>() }
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::ib_device {
        self.ib.get()
    }

    /// The driver data.
    pub fn data(&self) -> &T {
        &self.data
    }

    /// The device name.
    pub fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array of the valid device.
        unsafe { CStr::from_char_ptr((*self.as_raw()).name.as_ptr()) }
    }

    /// The number of completion vectors.
    pub fn num_comp_vectors(&self) -> u32 {
        // SAFETY: The device is valid; the field is fixed at registration.
        unsafe { (*self.as_raw()).num_comp_vectors as u32 }
    }

    /// The net device of port 1, if it still has one.
    pub fn netdev(&self) -> Option<ARef<NetDevice>> {
        // SAFETY: The device is valid; the core returns a held reference or null.
        unsafe { NetDevice::from_raw_owned(bindings::ib_device_get_netdev(self.as_raw(), 1)) }
    }

    /// The port's Ethernet speed and width, as `(active_speed, active_width)`.
    ///
    /// Takes RTNL: must not be called with it held (e.g. from a netdev notifier).
    pub fn eth_speed(&self, port: u32) -> Result<(u16, u8)> {
        let (mut speed, mut width) = (0u16, 0u8);
        // SAFETY: The device is valid; the out-pointers are valid for the call.
        kernel::error::to_result(unsafe {
            bindings::ib_get_eth_speed(self.as_raw(), port, &mut speed, &mut width)
        })?;
        Ok((speed, width))
    }

    /// Delivers a port event to the device's consumers.
    pub fn dispatch_port_event(&self, port: u32, event: PortEvent) {
        let mut ev = bindings::ib_event {
            device: self.as_raw(),
            event: match event {
                PortEvent::Active => bindings::ib_event_type_IB_EVENT_PORT_ACTIVE,
                PortEvent::Error => bindings::ib_event_type_IB_EVENT_PORT_ERR,
            },
            ..Default::default()
        };
        // SAFETY: Writes the union member that port events use.
        unsafe { *ev.element.port_num.as_mut() = port };
        // SAFETY: `ev` is a valid event for this registered device.
        unsafe { bindings::ib_dispatch_event(&ev) };
    }

    /// Whether any device with this driver id (of any driver) is bound to `ndev`.
    pub fn netdev_has_device(ndev: &NetDevice) -> bool {
        // SAFETY: As in `get_by_netdev`.
        let ib = unsafe { bindings::ib_device_get_by_netdev(ndev.as_raw(), T::DRIVER_ID) };
        if ib.is_null() {
            return false;
        }
        // SAFETY: Drops the reference just taken.
        unsafe { bindings::ib_device_put(ib) };
        true
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
                    QpInit::from_raw(&mut *init),
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
        // SAFETY: `pd` is a PD of our device.
        let dev = unsafe { Self::from_raw((*pd).device) };
        Self::new_mr(T::get_dma_mr(dev, access as u32))
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
            let (dev, attr, mut udata) = unsafe {
                (
                    Self::from_raw((*ah).device),
                    AhAttrs::new(&*(*init).ah_attr),
                    Udata::from_raw(udata),
                )
            };
            let data = T::create_ah(dev, attr, &mut udata)?;
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
            let data = T::create_srq(dev, &mut init.attr, init.srq_type, &mut udata)?;
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
            let (data, rkey) = T::alloc_mw(dev, mw_type, &mut udata)?;
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

/// A registration reference to a device: it stays registered (and its data alive) until
/// the reference is dropped.
pub struct DeviceRef<T: DeviceOps> {
    ib: NonNull<bindings::ib_device>,
    _t: PhantomData<T>,
}

// SAFETY: The reference may be dropped from any context.
unsafe impl<T: DeviceOps> Send for DeviceRef<T> {}
// SAFETY: It only gives shared access to a `Sync` device.
unsafe impl<T: DeviceOps> Sync for DeviceRef<T> {}

impl<T: DeviceOps> core::ops::Deref for DeviceRef<T> {
    type Target = Device<T>;

    fn deref(&self) -> &Device<T> {
        // SAFETY: The registration reference keeps the device and its data alive.
        unsafe { Device::from_raw(self.ib.as_ptr()) }
    }
}

impl<T: DeviceOps> DeviceRef<T> {
    /// Queues the device's unregistration (usable with RTNL held) and drops the reference.
    pub fn unregister_queued(self) {
        // SAFETY: The device is registered and valid while we hold the reference.
        unsafe { bindings::ib_unregister_device_queued(self.ib.as_ptr()) };
    }
}

impl<T: DeviceOps> Drop for DeviceRef<T> {
    fn drop(&mut self) {
        // SAFETY: We own one registration reference.
        unsafe { bindings::ib_device_put(self.ib.as_ptr()) };
    }
}
