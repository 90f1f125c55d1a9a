// SPDX-License-Identifier: GPL-2.0

//! Network namespaces and per-namespace module data (`pernet_operations` with
//! `net_generic` storage).

use super::device::NetDevice;
use crate::bindings;
use core::{marker::PhantomData, mem::size_of, ptr::NonNull};
use kernel::{ffi, prelude::*, types::Opaque};

/// A network namespace.
///
/// # Invariants
///
/// The wrapped `net` is alive for as long as the borrow.
#[repr(transparent)]
pub struct Net(Opaque<bindings::net>);

impl Net {
    /// The namespace of a network device.
    pub fn of(dev: &NetDevice) -> &Net {
        // SAFETY: A device is in a live namespace for as long as it is referenced: the
        // namespace unregisters (or moves) its devices before it goes away.
        unsafe { &*dev.net_raw().cast() }
    }

    /// The raw pointer, for the abstractions.
    pub(crate) fn as_raw(&self) -> *mut bindings::net {
        self.0.get()
    }
}

/// The id of a module's per-namespace storage (`pernet_operations.id`).
///
/// Drivers declare one as a `static` and return it from [`PernetData::id`].
pub struct PernetId(Opaque<ffi::c_uint>);

// SAFETY: The id is written once by `register_pernet_subsys` before any reader can run and is
// read-only afterwards.
unsafe impl Sync for PernetId {}

impl PernetId {
    /// A new, unassigned id.
    pub const fn new() -> Self {
        Self(Opaque::new(0))
    }

    fn get(&self) -> ffi::c_uint {
        // SAFETY: Plain read of an integer that is only written during registration.
        unsafe { *self.0.get() }
    }
}

/// Data a module keeps in every network namespace.
///
/// It is created when the namespace is (or, for existing ones, at registration) and dropped
/// when the namespace exits or the registration is dropped.
pub trait PernetData: Sized + Send + Sync + 'static {
    /// The static id of this storage.
    fn id() -> &'static PernetId;

    /// The data of a new namespace.
    fn init() -> Result<Self>;
}

/// A registered per-namespace storage of `T`; unregistered (dropping every namespace's `T`)
/// when dropped.
pub struct Registration<T: PernetData> {
    ops: Opaque<bindings::pernet_operations>,
    registered: bool,
    _t: PhantomData<T>,
}

impl<T: PernetData> Registration<T> {
    /// Registers the storage; `T::init` runs for every existing namespace.
    pub fn register() -> Result<Pin<KBox<Self>>> {
        // `net_generic` storage is `kzalloc`ed, hence at least 8-byte aligned.
        const { assert!(core::mem::align_of::<T>() <= 8) };
        let mut this = KBox::pin(
            Self {
                ops: Opaque::uninit(),
                registered: false,
                _t: PhantomData,
            },
            GFP_KERNEL,
        )?;
        let ops = this.ops.get();
        // SAFETY: `ops` points into the pinned allocation; all-zero `pernet_operations` are
        // valid, and the id is a static that outlives the registration.
        unsafe {
            ops.write(bindings::pernet_operations {
                init: Some(Self::init_net),
                exit: Some(Self::exit_net),
                id: T::id().0.get(),
                size: size_of::<T>(),
                ..Default::default()
            })
        };
        // SAFETY: `ops` is initialised and stays at this address until `drop` unregisters it.
        kernel::error::to_result(unsafe { bindings::register_pernet_subsys(ops) })?;
        // SAFETY: Only a plain field is written; nothing is moved out of the pinned box.
        unsafe { this.as_mut().get_unchecked_mut().registered = true };
        Ok(this)
    }

    /// The data of namespace `net`.
    pub fn get<'a>(&'a self, net: &'a Net) -> &'a T {
        // SAFETY: While registered, every live namespace has an initialised `T` at its
        // `net_generic` slot (`init_net` succeeded or the namespace would not exist).
        unsafe { &*Self::slot(net.as_raw()).as_ptr() }
    }

    fn slot(net: *mut bindings::net) -> NonNull<T> {
        // SAFETY: `net` is live and the id is registered; `net_generic` never returns null for
        // a registered id.
        let p = unsafe { bindings::net_generic(net, T::id().get()) };
        NonNull::new(p.cast()).unwrap_or(NonNull::dangling())
    }

    /// C entry point `init_net`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn init_net(net: *mut bindings::net) -> ffi::c_int {
        let slot = Self::slot(net).as_ptr();
        match T::init() {
            Ok(data) => {
                // SAFETY: `slot` is this namespace's storage of `size_of::<T>()` bytes, suitably
                // aligned, and not yet initialised.
                unsafe { slot.write(data) };
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// C entry point `exit_net`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn exit_net(net: *mut bindings::net) {
        // SAFETY: `init_net` initialised the slot; the namespace is exiting, so this is the
        // last use, and the core frees the memory afterwards.
        unsafe { core::ptr::drop_in_place(Self::slot(net).as_ptr()) };
    }
}

impl<T: PernetData> Drop for Registration<T> {
    fn drop(&mut self) {
        if self.registered {
            // SAFETY: `register` registered `ops`; this runs `exit_net` for every namespace.
            unsafe { bindings::unregister_pernet_subsys(self.ops.get()) };
        }
    }
}

// SAFETY: The operations are only used by the namespace core under its own locks.
unsafe impl<T: PernetData> Send for Registration<T> {}
// SAFETY: See `Send`; `get` hands out `&T` and `T: Sync`.
unsafe impl<T: PernetData> Sync for Registration<T> {}
