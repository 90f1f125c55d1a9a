// SPDX-License-Identifier: GPL-2.0

//! The devices a module registered, so that it can unregister exactly those.

use super::{
    device::{Device, Registered},
    ops::DeviceOps,
};
use crate::{
    bindings,
    ext::{net::device::NetDevice, sync::SpinLockBh},
};
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{prelude::*, sync::Arc, types::ARef};

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
    pub fn get_by_netdev(&self, ndev: &NetDevice) -> Option<ARef<Device<T, Registered>>> {
        // SAFETY: `ndev` is valid; the core returns a registration reference or null.
        let ib = NonNull::new(unsafe {
            bindings::ib_device_get_by_netdev(ndev.as_raw(), T::DRIVER_ID)
        })?;
        // Other drivers may use the same driver id: only devices in the registry are ours.
        let ours = self.devices.lock().contains(&(ib.as_ptr() as usize));
        if !ours {
            // SAFETY: Drops the registration reference just taken.
            unsafe { bindings::ib_device_put(ib.as_ptr()) };
            return None;
        }
        // SAFETY: The core gave us a registration reference, which the `ARef` takes over, on
        // a device of ours, i.e. a `Device<T>` (whose first field is the `ib_device`).
        Some(unsafe { ARef::from_raw(ib.cast()) })
    }

    pub(super) fn add(&self, dev: *mut bindings::ib_device) -> Result {
        // Under a spinlock: atomic allocation, of one word.
        self.devices.lock().push(dev as usize, GFP_ATOMIC)?;
        Ok(())
    }

    pub(super) fn remove(&self, dev: *mut bindings::ib_device) {
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
                devices
                    .iter()
                    .map(|d| *d as *mut bindings::ib_device)
                    .find(|d| {
                        // SAFETY: Devices stay in the registry until their `dealloc_driver`,
                        // which takes this lock, so every address is a valid `ib_device`.
                        unsafe { bindings::ib_device_try_get(*d) }
                    })
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
