// SPDX-License-Identifier: GPL-2.0

//! Handles to verbs objects that outlive the object safely.
//!
//! The RDMA core frees a verbs object (`ib_cq`, `ib_srq`) once its destroy callback
//! returns. A QP's engine refers to its CQs and SRQ from work items, timers and the
//! receive path, which may still hold the QP's state after `destroy_qp` returned. A
//! [`CoreLink`] is what such a handle shares with the object: the destroy callback
//! revokes it and waits for the uses in progress, so a use either completes before the
//! object is destroyed or finds it gone. No promise about the order of destruction is
//! needed for memory safety.
//!
//! A use holds no lock (it only counts itself in), so it may call a consumer's handler
//! that re-enters the driver and uses the same link again, e.g. a completion handler that
//! moves a QP to the error state, which flushes completions into the same CQ.

use crate::ext::delay::msleep;
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicU32, Ordering},
};
use kernel::{prelude::*, sync::Arc};

/// The bit of [`CoreLink`]'s count that says the link is revoked.
const REVOKED: u32 = 1 << 31;

/// A revocable link to a C verbs object, shared between the object's driver data (which
/// revokes it when the object is destroyed) and the handles that refer to the object.
///
/// A use counts itself in and out with one atomic operation each (no lock, no interrupt
/// masking: a CQ's link is used for every doorbell and every completion).
///
/// # Invariants
///
/// `obj` is a live object while [`REVOKED`] is clear in `state`, and for a use that found
/// it clear when it counted itself in, until it counts itself out: `revoke` runs before
/// the object's driver data is dropped and the core frees it, sets [`REVOKED`], and
/// returns only once the count is zero. A use that counts itself in after the bit was set
/// sees it and does not touch `obj` (it still counts, briefly: `revoke` may wait for it).
pub(crate) struct CoreLink<C> {
    obj: NonNull<C>,
    /// [`REVOKED`], and the uses in progress in the bits below it.
    state: AtomicU32,
}

// SAFETY: `obj` is only dereferenced while the object exists (see the invariants); the
// verbs objects it points to may be used from any context the core allows.
unsafe impl<C> Send for CoreLink<C> {}

// SAFETY: As for `Send`; the count is atomic.
unsafe impl<C> Sync for CoreLink<C> {}

impl<C> CoreLink<C> {
    /// A new link to `obj`, shared from the start.
    ///
    /// # Safety
    ///
    /// `obj` is live, and whoever owns the object calls [`CoreLink::revoke`] before it is
    /// freed (its destroy callback).
    pub(crate) unsafe fn new(obj: NonNull<C>) -> Result<Arc<Self>> {
        // INVARIANT: The caller's promise.
        Ok(Arc::new(
            Self {
                obj,
                state: AtomicU32::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    /// Revokes the link: later uses find the object gone; waits for the uses in progress.
    /// Process context (it sleeps while a use is in progress); never from a use of the
    /// same link.
    pub(crate) fn revoke(&self) {
        // AcqRel: ordered against every use's count (one modification order), so a use
        // either counted itself in before (and is waited for) or sees the bit.
        self.state.fetch_or(REVOKED, Ordering::AcqRel);
        // Acquire: what the last use did to the object happens before the caller frees it.
        // A use that starts now counts itself in and out at once: the wait is for those
        // in progress, each bounded by its `f`.
        while self.state.load(Ordering::Acquire) & !REVOKED != 0 {
            msleep(1);
        }
    }

    /// Runs `f` on the object if it still exists. `f` runs in the caller's context; the
    /// pointer it receives is valid for the call only.
    pub(crate) fn with<R>(&self, f: impl FnOnce(NonNull<C>) -> R) -> Option<R> {
        // Bounded by the threads that can be in `f` at once: far below `REVOKED`.
        let before = self.state.fetch_add(1, Ordering::Acquire);
        if before & REVOKED == 0 {
            let r = f(self.obj);
            // Release: the use's accesses happen before `revoke` sees the count fall.
            self.state.fetch_sub(1, Ordering::Release);
            return Some(r);
        }
        self.state.fetch_sub(1, Ordering::Relaxed);
        None
    }

    /// Whether both links name the same object.
    pub(crate) fn same(&self, other: &Self) -> bool {
        core::ptr::eq(self, other)
    }
}
