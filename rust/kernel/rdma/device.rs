// SPDX-License-Identifier: GPL-2.0

//! RDMA devices (`struct ib_device`) of software RoCE drivers.
//!
//! A driver implements [`DeviceOps`] (a `#[vtable]` trait: only the operations it
//! implements reach the core's `ib_device_ops`) and creates devices with
//! [`Device::register`]. After registration the RDMA core owns the device: it is
//! unregistered by `rdma link delete`, by the driver (see [`Registered`]), or when the
//! module's [`Registry`] is told to unregister everything; the driver data is dropped in
//! the core's `dealloc_driver` callback.

pub use super::{
    ops::{CqInitAttr, DeviceAttr, DeviceOps, PortAttr, PortImmutable, SrqAttr},
    registry::Registry,
};
use crate::{bindings, ext::net::device::NetDevice};
use core::{
    marker::PhantomData,
    mem::size_of,
    ptr::{addr_of_mut, NonNull},
};
use kernel::{
    ffi,
    prelude::*,
    str::CStr,
    sync::Arc,
    types::{ARef, AlwaysRefCounted, Opaque},
    ThisModule,
};

/// A port event delivered to the device's consumers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PortEvent {
    /// The port became active.
    Active,
    /// The port went down.
    Error,
}

/// Fixed properties given to a device at creation.
pub struct DeviceParams<'a> {
    /// Node description (truncated to 63 bytes).
    pub node_desc: &'a CStr,
    /// Node GUID, as it appears on the wire (network order bytes).
    pub node_guid: [u8; 8],
    /// Extra legacy uverbs commands the driver implements.
    pub uverbs_cmd_mask: super::types::UverbsCmdMask,
}
/// What a reference to a [`Device`] tells about the device's registration (a typestate, as
/// the device contexts of later kernels' `kernel::device::Device`).
pub trait DeviceState: private::Sealed + 'static {}

/// No guarantee: the device may be registering or being unregistered. This is what the
/// core's callbacks give.
pub enum Normal {}
impl DeviceState for Normal {}

/// The device is registered and stays so while the reference exists: only
/// `ARef<Device<T, Registered>>` (a registration reference, see [`Device::try_get`]) and
/// references borrowed from one exist.
///
/// Unregistration waits until every registration reference is dropped, so the device and
/// its driver data outlive them.
pub enum Registered {}
impl DeviceState for Registered {}

mod private {
    /// Keeps [`super::DeviceState`] to the states of this module.
    pub trait Sealed {}
    impl Sealed for super::Normal {}
    impl Sealed for super::Registered {}
}

/// An RDMA device with driver data `T`, referenced in state `S` (see [`DeviceState`]).
///
/// The `ib_device` is the first field, as the core requires (it allocates and frees the
/// whole object by the `ib_device` pointer). The layout does not depend on `S`.
#[repr(C)]
pub struct Device<T: DeviceOps, S: DeviceState = Normal> {
    ib: Opaque<bindings::ib_device>,
    /// What C `rdma_rxe` takes for the rest of its `struct rxe_dev` when it finds this
    /// device (`RDMA_DRIVER_RXE`) on a net device: its netdev notifier writes port state,
    /// MTU and counters there. Zeroed at allocation, never used by this module.
    _rxe_alias: Opaque<[u8; RXE_ALIAS_SIZE]>,
    pub(super) registry: Arc<Registry<T>>,
    pub(super) data: T,
    _state: PhantomData<S>,
}

// SAFETY: The device is only ever used through shared references and registration
// references: its `ib_device` through core functions that may be called from any thread
// (and a registration reference may be dropped in any context), its driver data `T` is
// `Send + Sync` (`DeviceOps`).
unsafe impl<T: DeviceOps, S: DeviceState> Send for Device<T, S> {}
// SAFETY: See `Send`.
unsafe impl<T: DeviceOps, S: DeviceState> Sync for Device<T, S> {}

/// The bytes of `struct rxe_dev` after its `ib_device` (see `rust/helpers/rxe_alias.h`).
const RXE_ALIAS_SIZE: usize =
    (bindings::RRXE_RXE_DEV_SIZE as usize).saturating_sub(size_of::<bindings::ib_device>());

/// A user context (`struct ib_ucontext`) with driver data.
#[repr(C)]
pub(super) struct Ucontext<T: DeviceOps> {
    ib: Opaque<bindings::ib_ucontext>,
    pub(super) data: T::Ucontext,
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
        // SAFETY: The core copies the operations.
        unsafe { bindings::ib_set_device_ops(ib.as_ptr(), Self::build()) };
        // The owner, which the constant table lacks: the core takes a non-null `owner`.
        let owner = bindings::ib_device_ops {
            owner: module.as_ptr(),
            ..Default::default()
        };
        // SAFETY: As above; every other member is unset, so nothing else changes.
        unsafe { bindings::ib_set_device_ops(ib.as_ptr(), &owner) };

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
        d.uverbs_cmd_mask |= params.uverbs_cmd_mask.bits();
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

    /// # Safety
    ///
    /// `ib` must be a device created by [`Device::register`] whose driver data is alive
    /// (i.e. any `ib_device` the core passes to this device's callbacks).
    pub(super) unsafe fn from_raw<'a>(ib: *mut bindings::ib_device) -> &'a Self {
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

    /// A registration reference to this device, unless it is not registered yet or is being
    /// unregistered and already lost its last one.
    pub fn try_get(&self) -> Option<ARef<Device<T, Registered>>> {
        // SAFETY: The device is valid.
        if !unsafe { bindings::ib_device_try_get(self.as_raw()) } {
            return None;
        }
        // SAFETY: We took the registration reference that the `ARef` owns; the layout of
        // `Device` does not depend on the state.
        Some(unsafe { ARef::from_raw(NonNull::from(self).cast()) })
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
}

impl<T: DeviceOps> core::ops::Deref for Device<T, Registered> {
    type Target = Device<T>;

    fn deref(&self) -> &Device<T> {
        // SAFETY: Same layout; `Normal` guarantees less than `Registered`.
        unsafe { &*(self as *const Self).cast::<Device<T>>() }
    }
}

impl<T: DeviceOps> Device<T, Registered> {
    /// Whether `gid` is one of port `port`'s RoCEv2 GIDs now: of net device `ndev`, or of
    /// any of the port's if `None`. Any context.
    pub fn has_roce_gid(&self, port: u32, gid: &[u8; 16], ndev: Option<&NetDevice>) -> bool {
        let ndev = ndev.map_or(core::ptr::null_mut(), NetDevice::as_raw);
        // SAFETY: The device is registered (the reference this borrows from), so its GID
        // table is set up, and it stays so until the device is released; `gid` is valid
        // for reads of 16 bytes; `ndev` is null or a valid net device, which the lookup
        // only compares; the helper drops the reference to the GID entry it finds.
        unsafe { bindings::rdma_has_roce_gid(self.as_raw(), port, gid.as_ptr(), ndev) }
    }

    /// Queues the device's unregistration (usable with RTNL held), which completes once
    /// every registration reference, this one included, is dropped.
    pub fn unregister_queued(&self) {
        // SAFETY: The device is registered and valid while we hold the reference.
        unsafe { bindings::ib_unregister_device_queued(self.as_raw()) };
    }
}

/// Keeps this module loaded while it exists, for callbacks into the module's code that the
/// kernel may make after the object that set them up is gone (an skb destructor, a
/// zero-copy completion): a registration reference on one of the module's devices, whatever
/// its driver data type.
///
/// Module unload unregisters the module's devices ([`Registry::unregister_all`], which the
/// module's exit must call, as rrxe's does), and unregistration waits for every
/// registration reference: the module's code stays while a `ModuleRef` does. (It is not a
/// count on the module itself, `try_module_get`, which would make `rmmod` refuse rather
/// than wait.) A type that calls back into the module after its owner is gone takes one,
/// so that no caller can forget it; a callback drops it as its last access to the module's
/// data. The code it still runs after that (the free of its state, the return) is covered
/// by the RCU grace period of module unload when it runs with bottom halves or preemption
/// disabled, as the network stack frees skbs, and otherwise by the context that freed the
/// skb, if that is the module's own (a work item, which module exit flushes, or a verbs
/// call, which unregistration waits for).
///
/// # Invariants
///
/// `self.0` is a device of this module on which the value owns one registration reference.
pub struct ModuleRef(NonNull<bindings::ib_device>);

// SAFETY: A reference count on the device; `ib_device_put` may be called from any context
// and thread (it completes the unregistration's wait at zero).
unsafe impl Send for ModuleRef {}
// SAFETY: `&ModuleRef` gives no access to anything.
unsafe impl Sync for ModuleRef {}

impl<T: DeviceOps> From<ARef<Device<T, Registered>>> for ModuleRef {
    fn from(dev: ARef<Device<T, Registered>>) -> Self {
        // INVARIANT: The registration reference of `dev`, taken over, on the device whose
        // `ib_device` is the first field (`repr(C)`).
        Self(ARef::into_raw(dev).cast())
    }
}

impl Drop for ModuleRef {
    fn drop(&mut self) {
        // SAFETY: We own one registration reference on the valid device (type invariant).
        unsafe { bindings::ib_device_put(self.0.as_ptr()) };
    }
}

// SAFETY: The count is the core's registration reference count (`ib_device_try_get`,
// `ib_device_put`). A `&Device<T, Registered>` only exists while a registration reference
// is held, so the count is above zero and an increment keeps the device registered, and its
// memory and driver data alive, until the matching `ib_device_put`: unregistration waits
// for the count to reach zero before `dealloc_driver` and the free.
unsafe impl<T: DeviceOps> AlwaysRefCounted for Device<T, Registered> {
    fn inc_ref(&self) {
        // SAFETY: The device is valid. The count is above zero (see above), so this
        // increments it and cannot fail.
        let taken = unsafe { bindings::ib_device_try_get(self.as_raw()) };
        debug_assert!(taken);
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller gives up one registration reference on this valid device, whose
        // `ib_device` is its first field (repr(C)).
        unsafe { bindings::ib_device_put(obj.cast::<bindings::ib_device>().as_ptr()) };
    }
}
