// SPDX-License-Identifier: GPL-2.0

//! Workqueues owned by the module, which 6.12's `kernel::workqueue` lacks: it only offers
//! the system queues ([`kernel::workqueue::system`] and friends).
//!
//! An [`OwnedQueue`] dereferences to a [`Queue`], so the kernel crate's work items
//! ([`kernel::workqueue::Work`], [`kernel::workqueue::WorkItem`], `impl_has_work!`) are
//! enqueued on it as on a system queue.
//!
//! C header: [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h)

use crate::bindings;
use core::{ops::Deref, ptr::NonNull};
use kernel::{
    prelude::*,
    str::CStr,
    workqueue::{HasWork, Queue, Work},
};

/// `WQ_UNBOUND`: workers are not bound to a CPU; work runs wherever the scheduler likes.
pub const WQ_UNBOUND: u32 = bindings::wq_flags_WQ_UNBOUND;
/// `WQ_MEM_RECLAIM`: the queue has a rescuer thread, for work on the memory reclaim path.
pub const WQ_MEM_RECLAIM: u32 = bindings::wq_flags_WQ_MEM_RECLAIM;

/// A workqueue that the module allocates (`alloc_workqueue`) and destroys when the
/// `OwnedQueue` is dropped (`destroy_workqueue`).
///
/// Dropping it drains the queue: work items still queued, and those they queue in turn,
/// run before the drop returns. It must therefore be dropped in process context, and not
/// from one of its own work items.
///
/// # Invariants
///
/// `self.0` is a workqueue returned by `alloc_workqueue` that has not been destroyed.
pub struct OwnedQueue(NonNull<bindings::workqueue_struct>);

// SAFETY: A `workqueue_struct` is usable from any thread; the `OwnedQueue` only owns the
// pointer, and destroying it from another thread than the one that allocated it is fine.
unsafe impl Send for OwnedQueue {}
// SAFETY: Queueing and flushing through `&OwnedQueue` are thread-safe C calls.
unsafe impl Sync for OwnedQueue {}

impl OwnedQueue {
    /// Allocates a workqueue called `name` (the name is copied) with `flags` (`WQ_*`, e.g.
    /// [`WQ_UNBOUND`]) and at most `max_active` work items running at once per CPU (per
    /// node for unbound queues); 0 chooses the default.
    ///
    /// Process context only (it allocates with `GFP_KERNEL`).
    pub fn new(name: &CStr, flags: u32, max_active: i32) -> Result<Self> {
        // SAFETY: `name` is a NUL-terminated string, valid for the call (the helper formats it
        // with "%s", so it is copied and never interpreted as a format).
        let ptr = unsafe { bindings::alloc_workqueue(name.as_char_ptr(), flags, max_active) };
        // INVARIANT: A non-NULL return is a new workqueue that only this `OwnedQueue` destroys.
        NonNull::new(ptr).map(Self).ok_or(ENOMEM)
    }
}

impl Deref for OwnedQueue {
    type Target = Queue;

    fn deref(&self) -> &Queue {
        // SAFETY: By the type invariant the queue is valid, and it stays valid for as long as
        // `self` is borrowed since only `drop` destroys it.
        unsafe { Queue::from_raw(self.0.as_ptr()) }
    }
}

impl Drop for OwnedQueue {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the queue is alive; this is its last use. Work items
        // that hold references to it (`&Queue` borrowed from `self`) cannot outlive `self`.
        unsafe { bindings::destroy_workqueue(self.0.as_ptr()) }
    }
}

/// Waits until the work item of `item` is idle, unless it is queued again meanwhile
/// (`flush_work`): a run in progress or pending finishes first.
///
/// Process context only (it sleeps), and never from the work item itself.
pub fn flush_work<T: HasWork<T, ID>, const ID: u64>(item: &T) {
    // SAFETY: `item` is a valid `T`, so the pointer is to its `Work` field.
    let work = unsafe { T::raw_get_work((item as *const T).cast_mut()) };
    // SAFETY: `work` points to a valid, initialised `Work` (it lives as long as `item`).
    let raw = unsafe { Work::raw_get(work) };
    // SAFETY: `raw` is an initialised `work_struct`; flushing it only waits for it.
    unsafe { bindings::flush_work(raw.cast()) };
}
