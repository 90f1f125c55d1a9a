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

/// A spinlock that also disables interrupts (`spin_lock_irqsave`): for data that code
/// running with interrupts disabled touches too, such as kernel consumers posting work
/// requests under their own IRQ-safe locks.
///
/// Create one with [`new_spinlock_irq!`](crate::new_spinlock_irq).
pub type SpinLockIrq<T> = Lock<T, SpinLockIrqBackend>;

/// The `spin_lock_irqsave` backend of [`SpinLockIrq`].
pub struct SpinLockIrqBackend;

// SAFETY: `spinlock_t` ensures mutual exclusion; the guard keeps the saved interrupt flags
// for the matching restore; `relock` uses the default, which calls `lock` again.
unsafe impl Backend for SpinLockIrqBackend {
    type State = bindings::spinlock_t;
    type GuardState = kernel::ffi::c_ulong;

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
        unsafe { bindings::spin_lock_irqsave(ptr) }
    }

    unsafe fn unlock(ptr: *mut Self::State, flags: &Self::GuardState) {
        // SAFETY: The caller owns the lock, taken with these flags.
        unsafe { bindings::spin_unlock_irqrestore(ptr, *flags) }
    }
}

/// Creates a [`SpinLockIrq`] initialiser with a lockdep class of its own.
#[macro_export]
macro_rules! new_spinlock_irq {
    ($inner:expr $(, $name:literal)? $(,)?) => {
        $crate::ext::sync::SpinLockIrq::new(
            $inner, ::kernel::optional_name!($($name)?), ::kernel::static_lock_class!())
    };
}
