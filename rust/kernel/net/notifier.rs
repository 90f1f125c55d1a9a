// SPDX-License-Identifier: GPL-2.0

//! The netdevice notifier: events about every network device of every namespace.

use super::device::NetDevice;
use crate::bindings;
use kernel::{container_of, ffi, prelude::*, sync::Arc, types::Opaque};

/// A netdevice event a handler may act on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NetdevEvent {
    /// The device was brought up (`NETDEV_UP`).
    Up,
    /// The device was brought down (`NETDEV_DOWN`).
    Down,
    /// The device's state changed, e.g. its carrier (`NETDEV_CHANGE`).
    Change,
    /// The device is being unregistered (`NETDEV_UNREGISTER`).
    Unregister,
    /// The device's MTU changed (`NETDEV_CHANGEMTU`).
    ChangeMtu,
}

impl NetdevEvent {
    fn from_raw(action: ffi::c_ulong) -> Option<Self> {
        let action = u32::try_from(action).ok()?;
        Some(match action {
            bindings::netdev_cmd_NETDEV_UP => Self::Up,
            bindings::netdev_cmd_NETDEV_DOWN => Self::Down,
            bindings::netdev_cmd_NETDEV_CHANGE => Self::Change,
            bindings::netdev_cmd_NETDEV_UNREGISTER => Self::Unregister,
            bindings::netdev_cmd_NETDEV_CHANGEMTU => Self::ChangeMtu,
            _ => return None,
        })
    }
}

/// Handles netdevice events. Called in process context with RTNL held.
pub trait NetdevNotifier: Send + Sync + 'static {
    /// Called for each event on each network device.
    fn notify(&self, event: NetdevEvent, dev: &NetDevice);
}

/// A registered netdevice notifier; unregistered when dropped.
pub struct Registration<T: NetdevNotifier> {
    nb: Opaque<bindings::notifier_block>,
    handler: Arc<T>,
    registered: bool,
}

impl<T: NetdevNotifier> Registration<T> {
    /// Registers `handler` for netdevice events.
    ///
    /// The core replays registration and up events for existing devices during the call.
    pub fn register(handler: Arc<T>) -> Result<Pin<KBox<Self>>> {
        let mut this = KBox::pin(
            Self {
                nb: Opaque::uninit(),
                handler,
                registered: false,
            },
            GFP_KERNEL,
        )?;
        let nb = this.nb.get();
        // SAFETY: `nb` points into the pinned allocation, valid for writes; an all-zero
        // `notifier_block` is valid.
        unsafe {
            nb.write(bindings::notifier_block {
                notifier_call: Some(Self::call),
                ..Default::default()
            })
        };
        // SAFETY: `nb` is initialised and stays at this address until `drop` unregisters it.
        kernel::error::to_result(unsafe { bindings::register_netdevice_notifier(nb) })?;
        // SAFETY: Only a plain field is written; nothing is moved out of the pinned box.
        unsafe { this.as_mut().get_unchecked_mut().registered = true };
        Ok(this)
    }

    /// C entry point `call`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn call(
        nb: *mut bindings::notifier_block,
        action: ffi::c_ulong,
        data: *mut ffi::c_void,
    ) -> ffi::c_int {
        let Some(event) = NetdevEvent::from_raw(action) else {
            return bindings::NOTIFY_DONE as ffi::c_int;
        };
        // SAFETY: `nb` is the `nb` field of a registered `Registration<T>`, which lives until it
        // is unregistered, and notifier calls do not outlive the unregistration.
        let this =
            unsafe { &*container_of!(nb.cast::<Opaque<bindings::notifier_block>>(), Self, nb) };
        // SAFETY: For netdevice notifiers, `data` is a `netdev_notifier_info` whose device is
        // valid and referenced for the duration of the call.
        let dev =
            unsafe { NetDevice::from_raw(bindings::netdev_notifier_info_to_dev(data.cast())) };
        this.handler.notify(event, dev);
        bindings::NOTIFY_DONE as ffi::c_int
    }
}

impl<T: NetdevNotifier> Drop for Registration<T> {
    fn drop(&mut self) {
        if self.registered {
            // SAFETY: `register` registered `nb`; after this call no notifier call runs.
            unsafe { bindings::unregister_netdevice_notifier(self.nb.get()) };
        }
    }
}

// SAFETY: The notifier block is only touched by the notifier core under its own lock, and
// the handler is `Send + Sync`.
unsafe impl<T: NetdevNotifier> Send for Registration<T> {}
// SAFETY: See `Send`.
unsafe impl<T: NetdevNotifier> Sync for Registration<T> {}
