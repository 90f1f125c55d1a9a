// SPDX-License-Identifier: GPL-2.0

//! Kernel timers (`struct timer_list`) embedded in objects held in an [`Arc`], which 6.12's
//! `kernel` crate lacks.
//!
//! A [`Timer<T, ID>`] is a pinned field of `T`; [`impl_has_timer!`](crate::impl_has_timer)
//! tells where it is and [`TimerCallback<ID>`] what happens when it fires. The `ID` const
//! parameter tells several timers of one type apart, as in [`kernel::workqueue`]. The timer
//! is driven through [`ArcTimer`] on the `Arc<T>`:
//!
//! - An armed timer keeps its object alive: arming a timer that is not pending moves one
//!   reference of the `Arc` into it (`Arc::into_raw`); re-arming a pending one only moves
//!   its expiry. On expiry the callback takes that reference back (`Arc::from_raw`) and
//!   hands it to [`TimerCallback::fired`]; cancelling a pending timer drops it.
//! - [`ArcTimer::shutdown_timer_sync`] stops the timer for good: it waits for a running
//!   callback, and later arms do nothing.
//!
//! A module must not unload while one of its timers is pending or its callback runs: the
//! owner calls [`ArcTimer::shutdown_timer_sync`] (process context) on every timer before it
//! lets go of the object, e.g. when the object is destroyed, and in any case before the
//! module's exit. Without that a pending timer also leaks its object.
//!
//! # Reference counting
//!
//! The timer holds exactly one reference whenever it is *pending* (queued in the timer
//! wheel) and between its expiry and the moment its callback takes the reference back.
//! The timer core changes the pending state only under its base lock, and its return values
//! say exactly which transition happened:
//!
//! - `mod_timer` returns 0 when the timer was not pending and queues it: the arm gives its
//!   reference to the timer. It returns 1 when the timer was pending and stays pending with a
//!   new expiry (or the expiry check raced with the expiry, which then consumes the
//!   reference): the arm keeps no reference. An expired timer whose callback has not yet
//!   run is no longer pending, so an arm racing with the callback on another CPU queues it
//!   again with a second reference, and the callback consumes the first.
//! - `timer_delete`/`timer_shutdown_sync` return 1 exactly when they dequeued a pending
//!   timer, which then never runs that expiry: the caller drops the timer's reference. When
//!   they return 0 the expired callback (if any) owns the reference.
//! - The one exception is `mod_timer` on a shut-down timer, which returns 0 without queueing
//!   it. A flag under a lock (`Timer::shut`) keeps arms away from shut-down timers: it is
//!   set before `timer_shutdown_sync`, and arms call `mod_timer` only while holding the lock
//!   with the flag clear, so every `mod_timer` that returned 0 queued the timer.
//!
//! # Examples
//!
//! ```ignore
//! #[pin_data]
//! struct Qp {
//!     #[pin]
//!     retransmit: Timer<Qp, 1>,
//! }
//!
//! impl_has_timer! {
//!     impl HasTimer<1> for Qp { self.retransmit }
//! }
//!
//! impl TimerCallback<1> for Qp {
//!     fn fired(this: Arc<Self>) {
//!         let _ = queue.enqueue(this);
//!     }
//! }
//!
//! let qp = Arc::pin_init(pin_init!(Qp { retransmit <- new_timer!("Qp::retransmit") }),
//!     GFP_KERNEL)?;
//! qp.arm_timer_usecs::<1>(500);
//! // ... and when the QP is destroyed, in process context:
//! qp.shutdown_timer_sync::<1>();
//! ```
//!
//! C header: [`include/linux/timer.h`](srctree/include/linux/timer.h)

use super::sync::SpinLockBh;
use crate::bindings;
use core::marker::PhantomData;
use kernel::{
    c_str,
    prelude::*,
    static_lock_class,
    str::CStr,
    sync::{Arc, LockClassKey},
    time::Jiffies,
    types::Opaque,
};

/// The time now, in jiffies (wrapping; they start a few minutes before wrapping at boot).
pub fn now() -> Jiffies {
    // SAFETY: Reading jiffies has no preconditions.
    unsafe { bindings::jiffies_now() }
}

/// `usecs` microseconds in jiffies, rounded up.
pub fn usecs_to_jiffies(usecs: u32) -> Jiffies {
    // SAFETY: `usecs_to_jiffies` is a pure computation.
    unsafe { bindings::usecs_to_jiffies(usecs) }
}

/// Creates a [`Timer`] initialiser with the given name and a lock class of its own.
#[macro_export]
macro_rules! new_timer {
    ($($name:literal)?) => {
        $crate::ext::timer::Timer::new(
            ::kernel::optional_name!($($name)?), ::kernel::static_lock_class!())
    };
}

/// What a timer does when it expires.
///
/// `ID` selects the timer when the type has several (see [`Timer`]).
pub trait TimerCallback<const ID: u64 = 0>: Send + Sync + 'static {
    /// Called when the timer expires, in softirq context (no sleeping, no `GFP_KERNEL`),
    /// with the reference that the timer held. It may arm the timer again.
    fn fired(this: Arc<Self>);
}

/// A kernel timer (`struct timer_list`) embedded in a `T` that lives in an [`Arc`].
///
/// Create it with [`new_timer!`](crate::new_timer) inside `T`'s pin initialiser, declare
/// it with [`impl_has_timer!`](crate::impl_has_timer), and drive it with [`ArcTimer`].
///
/// # Invariants
///
/// `timer` is initialised (`init_timer_key`, as `timer_setup` does) with the callback
/// `run::<T, ID>`. The timer is pending, or expired with its callback not yet past
/// `Arc::from_raw`, exactly when it holds one reference to the `Arc<T>` that contains it (see
/// the [module](self) documentation).
/// Once `shut` is set it stays set, and `mod_timer` is only called with `shut` locked and
/// clear.
#[pin_data]
#[repr(C)]
pub struct Timer<T, const ID: u64 = 0> {
    /// First field: the callback turns its `timer_list` pointer into a `Timer` pointer.
    #[pin]
    timer: Opaque<bindings::timer_list>,
    /// Whether [`ArcTimer::shutdown_timer_sync`] was called: later arms do nothing.
    #[pin]
    shut: SpinLockBh<bool>,
    _inner: PhantomData<T>,
}

// SAFETY: The `timer_list` is used through C calls that are thread-safe; the `Timer` holds
// no `T` (only references moved in and out of the timer, which `TimerCallback`'s `Send +
// Sync` make fine to use on any CPU).
unsafe impl<T, const ID: u64> Send for Timer<T, ID> {}
// SAFETY: As for `Send`: every method takes `&self` and calls thread-safe C functions.
unsafe impl<T, const ID: u64> Sync for Timer<T, ID> {}

impl<T: TimerCallback<ID> + HasTimer<ID>, const ID: u64> Timer<T, ID> {
    /// Creates a timer whose expiry calls `T`'s [`TimerCallback<ID>`]. `name` and `key` are
    /// its lockdep name and class (see [`new_timer!`](crate::new_timer)).
    pub fn new(name: &'static CStr, key: &'static LockClassKey) -> impl PinInit<Self> {
        // `LockClassKey` is a `repr(transparent)` wrapper of `Opaque<lock_class_key>` (an
        // `UnsafeCell`), whose pointer getter is private to the `kernel` crate.
        let key = core::ptr::from_ref(key)
            .cast_mut()
            .cast::<bindings::lock_class_key>();
        pin_init!(Self {
            timer <- Opaque::ffi_init(|slot: *mut bindings::timer_list| {
                // SAFETY: `slot` is valid for writes. This is `timer_setup(slot, run, 0)` with
                // the caller's name and class instead of ones per call site; `name` and `key`
                // live forever (and lockdep writes the key only through its `UnsafeCell`).
                // `run::<T, ID>` may be the callback: `T` has its `Timer<T, ID>` at
                // `T::OFFSET` (`HasTimer`).
                unsafe {
                    bindings::init_timer_key(slot, Some(run::<T, ID>), 0, name.as_char_ptr(), key)
                }
            }),
            shut <- SpinLockBh::new(false, c_str!("Timer::shut"), static_lock_class!()),
            _inner: PhantomData,
        })
    }
}

impl<T, const ID: u64> Timer<T, ID> {
    /// Returns the `timer_list` of the `Timer` at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points at a `Timer` (it need not be initialised).
    unsafe fn raw_timer(ptr: *const Self) -> *mut bindings::timer_list {
        // SAFETY: The caller promises `ptr` points at a `Timer`; `addr_of!` creates no
        // reference.
        unsafe { Opaque::raw_get(core::ptr::addr_of!((*ptr).timer)) }
    }
}

/// The callback of a `Timer<T, ID>`: takes back the timer's reference and fires.
///
/// # Safety
///
/// `ptr` is the `timer_list` of a `Timer<T, ID>` inside an `Arc<T>`, expired while it held
/// one reference to that `Arc`, which the call takes over (the `Timer` invariant; the timer
/// core calls the callback once per expiry).
unsafe extern "C" fn run<T: TimerCallback<ID> + HasTimer<ID>, const ID: u64>(
    ptr: *mut bindings::timer_list,
) {
    // `Timer` is `repr(C)` with the `timer_list` (an `Opaque`, `repr(transparent)`) first.
    let timer = ptr.cast::<Timer<T, ID>>().cast_const();
    // SAFETY: `timer` is the `Timer<T, ID>` field of a `T` (caller's promise).
    let this = unsafe { T::timer_container_of(timer) };
    // SAFETY: `this` is the pointer that the arm which queued this expiry got from
    // `Arc::into_raw` (same object, same offset back and forth); the timer held that
    // reference and gives it to us: the expired timer is no longer pending, and
    // `timer_delete`/`timer_shutdown_sync` return 0 for it, so nobody else drops it.
    let arc = unsafe { Arc::from_raw(this) };
    T::fired(arc)
}

/// Declares that a type has a [`Timer<Self, ID>`] field.
///
/// Implement it with [`impl_has_timer!`](crate::impl_has_timer).
///
/// # Safety
///
/// [`OFFSET`](HasTimer::OFFSET) is the offset of a field of type `Timer<Self, ID>` in `Self`,
/// and [`raw_get_timer`](HasTimer::raw_get_timer) returns a pointer to that field.
pub unsafe trait HasTimer<const ID: u64 = 0>: Sized {
    /// The offset of the `Timer<Self, ID>` field.
    const OFFSET: usize;

    /// Returns a pointer to the `Timer<Self, ID>` field of the `Self` at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points at a `Self` (it need not be initialised).
    unsafe fn raw_get_timer(ptr: *const Self) -> *const Timer<Self, ID>;

    /// Returns a pointer to the `Self` whose `Timer<Self, ID>` field is at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points at the `Timer<Self, ID>` field of a `Self`.
    #[inline]
    unsafe fn timer_container_of(ptr: *const Timer<Self, ID>) -> *const Self {
        // SAFETY: The field is `OFFSET` bytes into the `Self` (trait and caller promise), so
        // the result stays within that object.
        unsafe { ptr.cast::<u8>().sub(Self::OFFSET).cast::<Self>() }
    }
}

/// Implements [`HasTimer`] for a type's [`Timer`] fields.
///
/// ```ignore
/// impl_has_timer! {
///     impl HasTimer<1> for Qp { self.retransmit }
///     impl HasTimer<2> for Qp { self.rnr }
/// }
/// ```
#[macro_export]
macro_rules! impl_has_timer {
    ($(impl$({$($generics:tt)*})?
       HasTimer$(<$id:tt>)?
       for $self:ty
       { self.$field:ident }
    )*) => {$(
        // SAFETY: `OFFSET` is the offset of `$field` and `raw_get_timer` returns a pointer to
        // it; `raw_get_timer` only compiles if the field is a `Timer<Self, ID>`.
        // The invoking code may deny `unsafe_code`: the `unsafe` here is the macro's.
        #[allow(unsafe_code)]
        unsafe impl$(<$($generics)+>)? $crate::ext::timer::HasTimer$(<$id>)? for $self {
            const OFFSET: usize = ::core::mem::offset_of!(Self, $field);

            #[inline]
            unsafe fn raw_get_timer(
                ptr: *const Self,
            ) -> *const $crate::ext::timer::Timer<Self $(, $id)?> {
                // SAFETY: The caller promises that `ptr` points at a `Self`; `addr_of!`
                // creates no reference.
                unsafe { ::core::ptr::addr_of!((*ptr).$field) }
            }
        }
    )*};
}

/// The longest delay [`ArcTimer::arm_timer`] accepts (`MAX_JIFFY_OFFSET`); longer ones are
/// cut to it, so that the expiry stays in the future for `time_after`.
const MAX_DELAY: Jiffies = (Jiffies::MAX >> 2) - 1;

/// Drives the [`Timer`]s of an object in an `Arc<T>`; `ID` selects the timer (`0` when there
/// is one), e.g. `qp.arm_timer::<1>(delay)`.
///
/// Arming and cancelling work in process and softirq context (also from a callback), not in
/// hardirq context; [`shutdown_timer_sync`](ArcTimer::shutdown_timer_sync) only in process
/// context.
pub trait ArcTimer<T> {
    /// Arms the timer to fire `delay` jiffies from now (`mod_timer`), replacing the expiry of
    /// a pending one. Does nothing after [`shutdown_timer_sync`](Self::shutdown_timer_sync).
    fn arm_timer<const ID: u64>(&self, delay: Jiffies)
    where
        T: TimerCallback<ID> + HasTimer<ID>;

    /// Arms the timer to fire in `usecs` microseconds, rounded up to whole jiffies and at
    /// least one (see [`arm_timer`](Self::arm_timer)).
    fn arm_timer_usecs<const ID: u64>(&self, usecs: u32)
    where
        T: TimerCallback<ID> + HasTimer<ID>;

    /// Cancels the timer if it is pending (`timer_delete`) and drops the reference it held;
    /// returns whether it was pending. A callback already running on another CPU is not
    /// waited for and may arm the timer again.
    fn cancel_timer<const ID: u64>(&self) -> bool
    where
        T: TimerCallback<ID> + HasTimer<ID>;

    /// Whether the timer is pending (`timer_pending`): armed and not expired yet. An
    /// expired timer whose callback has not run yet is not pending.
    fn timer_pending<const ID: u64>(&self) -> bool
    where
        T: TimerCallback<ID> + HasTimer<ID>;

    /// Stops the timer for good (`timer_shutdown_sync`): cancels it, waits for a running
    /// callback to finish, and makes later arms no-ops. Drops the reference a pending timer
    /// held.
    ///
    /// Process context only; never from the timer's own callback, nor holding a lock that
    /// the callback takes (it waits for the callback). Owners call it before they let go of
    /// the object, and before the module unloads.
    fn shutdown_timer_sync<const ID: u64>(&self)
    where
        T: TimerCallback<ID> + HasTimer<ID>;
}

/// Returns the `timer_list` of `this`'s `Timer<T, ID>`.
fn timer_of<T: HasTimer<ID>, const ID: u64>(this: &Arc<T>) -> *mut bindings::timer_list {
    let ptr: *const T = &**this;
    // SAFETY: `ptr` points at a `T`, and `raw_get_timer` at its `Timer<T, ID>` (`HasTimer`).
    unsafe { Timer::raw_timer(T::raw_get_timer(ptr)) }
}

/// Drops one reference of `this`'s `Arc` that the timer held.
///
/// # Safety
///
/// The caller owns a reference that the timer held (it took it out of the timer).
unsafe fn drop_timer_ref<T>(this: &Arc<T>) {
    // The raw pointer comes from `Arc::into_raw` of a clone, which the first `from_raw` takes
    // back; the second takes over the timer's reference.
    let ptr = Arc::into_raw(this.clone());
    // SAFETY: `ptr` comes from `Arc::into_raw` just above.
    drop(unsafe { Arc::from_raw(ptr) });
    // SAFETY: The caller owns one more reference to this `Arc`, whose `into_raw` pointer is
    // `ptr` (one object, one address). Not the last one: `this` is another.
    drop(unsafe { Arc::from_raw(ptr) });
}

impl<T> ArcTimer<T> for Arc<T> {
    fn arm_timer<const ID: u64>(&self, delay: Jiffies)
    where
        T: TimerCallback<ID> + HasTimer<ID>,
    {
        let expires = now().wrapping_add(delay.min(MAX_DELAY));
        // Pending with this expiry already (armed again within a jiffy, as a stream's passes
        // do): `mod_timer` would return at its own first check, so nothing is done here
        // either, without the reference and the lock below.
        // SAFETY: The `timer_list` is initialised (`Timer` invariant) and lives as long as
        // `self`; the helper only reads it.
        if unsafe { bindings::timer_pending_at(timer_of::<T, ID>(self), expires) } {
            return;
        }
        // The reference the timer gets if `mod_timer` queues it. Taken before `mod_timer`:
        // once queued, the timer may expire on another CPU and consume it at once.
        let ptr = Arc::into_raw(self.clone());
        // SAFETY: `ptr` points at the `T` in the `Arc`, and `raw_get_timer` at its
        // `Timer<T, ID>` (`HasTimer`), which lives as long as we hold the reference.
        let timer = unsafe { &*T::raw_get_timer(ptr) };
        let shut = timer.shut.lock();
        let queued = if *shut {
            false
        } else {
            // SAFETY: The `timer_list` is initialised (`Timer` invariant). `shut` is locked and
            // clear, so the timer is not shut down and `mod_timer` returning 0 means it was not
            // pending and is now queued (module documentation).
            unsafe { bindings::mod_timer(Timer::raw_timer(timer), expires) == 0 }
        };
        drop(shut);
        if !queued {
            // SAFETY: The timer was pending and holds its own reference (or is shut down), so
            // the one taken above is ours to give back; `self` keeps the object alive.
            drop(unsafe { Arc::from_raw(ptr) });
        }
        // INVARIANT: Otherwise the timer went from not pending to pending and holds the
        // reference taken above (`ptr`), which its callback or a cancel takes back.
    }

    fn arm_timer_usecs<const ID: u64>(&self, usecs: u32)
    where
        T: TimerCallback<ID> + HasTimer<ID>,
    {
        self.arm_timer::<ID>(usecs_to_jiffies(usecs).max(1))
    }

    fn cancel_timer<const ID: u64>(&self) -> bool
    where
        T: TimerCallback<ID> + HasTimer<ID>,
    {
        // SAFETY: The `timer_list` is initialised (`Timer` invariant) and lives as long as
        // `self`.
        let was_pending = unsafe { bindings::timer_delete(timer_of::<T, ID>(self)) } != 0;
        if was_pending {
            // SAFETY: `timer_delete` dequeued a pending timer, which held one reference and
            // will not run for this expiry: the reference is ours. When it returns 0, an
            // expired timer's callback owns the reference instead.
            unsafe { drop_timer_ref(self) };
        }
        was_pending
    }

    fn timer_pending<const ID: u64>(&self) -> bool
    where
        T: TimerCallback<ID> + HasTimer<ID>,
    {
        // SAFETY: The `timer_list` is initialised (`Timer` invariant) and lives as long as
        // `self`; `timer_pending` only reads it.
        unsafe { bindings::timer_pending(timer_of::<T, ID>(self)) }
    }

    fn shutdown_timer_sync<const ID: u64>(&self)
    where
        T: TimerCallback<ID> + HasTimer<ID>,
    {
        let ptr: *const T = &**self;
        // SAFETY: `ptr` points at the `T` in the `Arc`, and `raw_get_timer` at its
        // `Timer<T, ID>` (`HasTimer`), which lives as long as `self`.
        let timer = unsafe { &*T::raw_get_timer(ptr) };
        // INVARIANT: Set for good, before the timer is shut down: an arm that holds the lock
        // after this sees it and leaves the timer alone; one that held it before queued the
        // timer before `timer_shutdown_sync` dequeues it below.
        *timer.shut.lock() = true;
        // SAFETY: The `timer_list` is initialised (`Timer` invariant); process context
        // (documented requirement).
        let was_pending = unsafe { bindings::timer_shutdown_sync(Timer::raw_timer(timer)) } != 0;
        if was_pending {
            // SAFETY: As in `cancel_timer`: a dequeued pending timer's reference is ours.
            unsafe { drop_timer_ref(self) };
        }
    }
}
