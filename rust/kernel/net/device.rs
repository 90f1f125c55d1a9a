// SPDX-License-Identifier: GPL-2.0

//! Network devices (`struct net_device`).

use crate::bindings;
use core::ptr::NonNull;
use kernel::{
    prelude::*,
    types::{ARef, AlwaysRefCounted, Opaque},
};

/// `ARPHRD_ETHER`: the hardware type of Ethernet devices (`include/uapi/linux/if_arp.h`).
const ARPHRD_ETHER: u16 = 1;

/// A network device.
///
/// # Invariants
///
/// The wrapped `net_device` is valid: callers hand it out only while they hold a reference
/// on it (an [`ARef`], or a borrow from a context that holds one).
#[repr(transparent)]
pub struct NetDevice(Opaque<bindings::net_device>);

// SAFETY: `net_device` is reference counted with `dev_hold`/`dev_put`, which may be called
// from any context, and the type invariant keeps the pointer valid while referenced.
unsafe impl AlwaysRefCounted for NetDevice {
    fn inc_ref(&self) {
        // SAFETY: The object is valid by the type invariant.
        unsafe { bindings::dev_hold(self.as_raw()) }
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller owns a reference, which it gives up here.
        unsafe { bindings::dev_put(obj.cast().as_ptr()) }
    }
}

// SAFETY: `net_device` may be used from any thread; its fields are read with the kernel's
// own synchronisation (helpers use `READ_ONCE` or RTNL-protected state).
unsafe impl Send for NetDevice {}
// SAFETY: See `Send`; shared access only reads the device.
unsafe impl Sync for NetDevice {}

impl NetDevice {
    /// Borrows a `net_device` the caller holds a reference on.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid and stay referenced for the lifetime `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // SAFETY: `NetDevice` is transparent over `net_device`; validity is the caller's promise.
        unsafe { &*ptr.cast() }
    }

    /// Takes ownership of a reference the caller holds on `ptr`, if it is non-null.
    ///
    /// # Safety
    ///
    /// `ptr` must be null or a valid `net_device` with one reference owned by the caller.
    pub(crate) unsafe fn from_raw_owned(ptr: *mut bindings::net_device) -> Option<ARef<Self>> {
        let ptr = NonNull::new(ptr)?;
        // SAFETY: The caller gives us its reference.
        Some(unsafe { ARef::from_raw(ptr.cast()) })
    }

    /// The raw pointer, for the abstractions.
    pub(crate) fn as_raw(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// The interface name.
    pub fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array inside the valid device.
        unsafe { CStr::from_char_ptr(bindings::netdev_name(self.as_raw())) }
    }

    /// The MTU in bytes.
    pub fn mtu(&self) -> u32 {
        // SAFETY: The device is valid; the MTU is read once, as `READ_ONCE(dev->mtu)`
        // does in C.
        unsafe { bindings::netdev_mtu(self.as_raw()) }
    }

    /// Whether the device transmits scatter-gather skbs as they are (`NETIF_F_SG`), so that
    /// a datagram's payload may be pieces of pages; a snapshot of its features.
    pub fn can_sg(&self) -> bool {
        // SAFETY: The device is valid; the features are read once (`READ_ONCE`).
        unsafe { bindings::netdev_can_sg(self.as_raw()) }
    }

    /// Whether the device is Ethernet (`ARPHRD_ETHER`).
    pub fn is_ethernet(&self) -> bool {
        // SAFETY: The device is valid; `type` is set before registration and never changes.
        unsafe { bindings::netdev_type(self.as_raw()) == ARPHRD_ETHER }
    }

    /// Whether the device is a VLAN device.
    pub fn is_vlan(&self) -> bool {
        // SAFETY: The device is valid.
        unsafe { bindings::is_vlan_dev(self.as_raw()) }
    }

    /// Whether the device is administratively up and has carrier.
    pub fn is_running_with_carrier(&self) -> bool {
        // SAFETY: The device is valid; both helpers only test state bits.
        unsafe {
            bindings::netif_running(self.as_raw()) && bindings::netif_carrier_ok(self.as_raw())
        }
    }

    /// Whether the device is administratively up (`IFF_UP`).
    pub fn is_up(&self) -> bool {
        // SAFETY: The device is valid; the helper only reads its flags.
        unsafe { bindings::netdev_is_up(self.as_raw()) }
    }

    /// Whether the device is still registered (not being unregistered).
    ///
    /// Stable only under RTNL, see [`crate::ext::net::device::with_rtnl`].
    pub fn is_registered(&self) -> bool {
        // SAFETY: The device is valid.
        unsafe { bindings::netdev_registered(self.as_raw()) }
    }

    /// The EUI-64 identifier derived from the device's MAC address, in network order.
    pub fn eui64(&self) -> [u8; 8] {
        let mut eui = [0u8; 8];
        // SAFETY: The device is valid and `eui` has room for the 8 bytes written.
        unsafe { bindings::netdev_eui64(self.as_raw(), eui.as_mut_ptr()) };
        eui
    }

    /// The device's MAC address.
    pub fn mac(&self) -> [u8; 6] {
        let mut mac = [0u8; 6];
        // SAFETY: The device is valid and `mac` has room for the 6 bytes written.
        unsafe { bindings::netdev_mac(self.as_raw(), mac.as_mut_ptr()) };
        mac
    }

    /// Adds `addr` to the device's multicast filter (reference counted by the core).
    pub fn mc_add(&self, addr: &[u8; 6]) -> Result {
        // SAFETY: The device is valid; `addr` is a 6-byte address.
        kernel::error::to_result(unsafe { bindings::dev_mc_add(self.as_raw(), addr.as_ptr()) })
    }

    /// Removes one reference to `addr` from the device's multicast filter.
    pub fn mc_del(&self, addr: &[u8; 6]) -> Result {
        // SAFETY: As in `mc_add`.
        kernel::error::to_result(unsafe { bindings::dev_mc_del(self.as_raw(), addr.as_ptr()) })
    }

    /// The parent device of the netdev (e.g. its virtio or PCI function), if any.
    pub(crate) fn parent_raw(&self) -> *mut bindings::device {
        // SAFETY: The device is valid; `dev.parent` is set before registration.
        unsafe { bindings::netdev_parent(self.as_raw()) }
    }

    /// The network namespace the device lives in.
    pub(crate) fn net_raw(&self) -> *mut bindings::net {
        // SAFETY: The device is valid.
        unsafe { bindings::dev_net(self.as_raw()) }
    }
}

/// Runs `f` with the RTNL lock held.
///
/// Must be called in process context, without RTNL held.
pub fn with_rtnl<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: `rtnl_lock` may be called in process context; it is released below.
    unsafe { bindings::rtnl_lock() };
    let r = f();
    // SAFETY: Taken above.
    unsafe { bindings::rtnl_unlock() };
    r
}
