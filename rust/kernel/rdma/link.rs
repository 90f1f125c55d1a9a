// SPDX-License-Identifier: GPL-2.0

//! `rdma link` types: `rdma link add NAME type TYPE netdev NETDEV` creates a device
//! through the registered type's `newlink`.

use crate::{bindings, ext::net::device::NetDevice};
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::{error::from_result, ffi, prelude::*, str::CStr, sync::Arc, types::Opaque};

/// Creates devices for `rdma link add`.
pub trait LinkOps: Send + Sync + 'static {
    /// The link type name (also the module alias suffix: `rdma-link-TYPE`).
    const TYPE: &'static CStr;

    /// Creates and registers a device named `name` on `ndev`. Process context, no RTNL.
    fn newlink(&self, name: &CStr, ndev: &NetDevice) -> Result;
}

/// The handler of the module's one link registration; `rdma_link_ops.newlink` has no
/// context argument.
static HANDLER: AtomicPtr<ffi::c_void> = AtomicPtr::new(core::ptr::null_mut());

/// A registered link type; unregistered when dropped. A module may have one.
pub struct Registration<T: LinkOps> {
    ops: Opaque<bindings::rdma_link_ops>,
    handler: Arc<T>,
}

impl<T: LinkOps> Registration<T> {
    /// Registers link type `T::TYPE`, served by `handler`. Fails with `EBUSY` if the module
    /// already has a registration.
    pub fn register(handler: Arc<T>) -> Result<Pin<KBox<Self>>> {
        let this = KBox::pin(
            Self {
                ops: Opaque::uninit(),
                handler,
            },
            GFP_KERNEL,
        )?;
        let ptr: *const T = &*this.handler;
        HANDLER
            .compare_exchange(
                core::ptr::null_mut(),
                ptr.cast_mut().cast(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .map_err(|_| EBUSY)?;
        let ops = this.ops.get();
        // SAFETY: `ops` points into the pinned allocation; the type string is static.
        unsafe {
            ops.write(bindings::rdma_link_ops {
                type_: T::TYPE.as_char_ptr(),
                newlink: Some(Self::newlink_cb),
                ..Default::default()
            });
            bindings::rdma_link_register(ops);
        }
        Ok(this)
    }

    /// C entry point `newlink_cb`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn newlink_cb(
        name: *const ffi::c_char,
        ndev: *mut bindings::net_device,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: `HANDLER` points to the handler of the live registration: it is cleared
            // only after `rdma_link_unregister`, which waits for running `newlink` calls.
            let handler = unsafe { &*HANDLER.load(Ordering::Acquire).cast::<T>() };
            // SAFETY: The core passes a NUL-terminated name and a referenced netdev.
            let (name, ndev) = unsafe { (CStr::from_char_ptr(name), NetDevice::from_raw(ndev)) };
            handler.newlink(name, ndev)?;
            Ok(0)
        })
    }
}

impl<T: LinkOps> Drop for Registration<T> {
    fn drop(&mut self) {
        let ours: *const T = &*self.handler;
        // Registered only if `HANDLER` was claimed for this registration.
        if HANDLER.load(Ordering::Acquire) == ours.cast_mut().cast() {
            // SAFETY: Registered in `register`; returns once no `newlink` runs.
            unsafe { bindings::rdma_link_unregister(self.ops.get()) };
            HANDLER.store(core::ptr::null_mut(), Ordering::Release);
        }
    }
}

// SAFETY: The ops are only used by the RDMA core under its lock; the handler is Send + Sync.
unsafe impl<T: LinkOps> Send for Registration<T> {}
// SAFETY: See `Send`.
unsafe impl<T: LinkOps> Sync for Registration<T> {}
