// SPDX-License-Identifier: GPL-2.0

//! Locks for state shared with softirq context, which 6.12's `kernel::sync` lacks: its
//! `SpinLock` uses plain `spin_lock`, which deadlocks when a softirq on the same CPU takes
//! the lock that process context holds.

use crate::bindings;
use kernel::sync::lock::{Backend, Lock};

/// A spinlock that also disables bottom halves (`spin_lock_bh`): for data shared between
/// process context and softirqs (network receive, timers).
///
/// Create one with [`new_spinlock_bh!`](crate::new_spinlock_bh).
pub type SpinLockBh<T> = Lock<T, SpinLockBhBackend>;

/// The `spin_lock_bh` backend of [`SpinLockBh`].
pub struct SpinLockBhBackend;

// SAFETY: `spinlock_t` ensures mutual exclusion; `relock` uses the default, which calls
// `lock` again, the same method.
unsafe impl Backend for SpinLockBhBackend {
    type State = bindings::spinlock_t;
    type GuardState = ();

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const kernel::ffi::c_char,
        key: *mut bindings::lock_class_key,
    ) {
        // SAFETY: `ptr` is valid for writes; `name` and `key` live forever (caller's promise).
        unsafe { bindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: `ptr` is an initialised lock (caller's promise).
        unsafe { bindings::spin_lock_bh(ptr) }
    }

    unsafe fn unlock(ptr: *mut Self::State, _guard_state: &Self::GuardState) {
        // SAFETY: The caller owns the lock.
        unsafe { bindings::spin_unlock_bh(ptr) }
    }
}

/// Creates a [`SpinLockBh`] initialiser with a lockdep class of its own.
#[macro_export]
macro_rules! new_spinlock_bh {
    ($inner:expr $(, $name:literal)? $(,)?) => {
        $crate::ext::sync::SpinLockBh::new(
            $inner, ::kernel::optional_name!($($name)?), ::kernel::static_lock_class!())
    };
}
