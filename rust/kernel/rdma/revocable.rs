// SPDX-License-Identifier: GPL-2.0

//! Handles to verbs objects that outlive the object safely.
//!
//! The RDMA core frees a verbs object (`ib_cq`, `ib_srq`) once its destroy callback
//! returns. A QP's engine refers to its CQs and SRQ from work items, timers and the
//! receive path, which may still hold the QP's state after `destroy_qp` returned. A
//! [`CoreLink`] is what such a handle shares with the object: the destroy callback
//! revokes it, and every use of the object through it happens under its lock, so a use
//! either completes before the object is destroyed or finds it gone. No promise about the
//! order of destruction is needed for memory safety.

use crate::{ext::sync::SpinLockIrq, new_spinlock_irq};
use core::ptr::NonNull;
use kernel::{prelude::*, sync::Arc};

/// The pointer a [`CoreLink`] guards.
struct Raw<C>(NonNull<C>);

// SAFETY: `Raw` is only dereferenced under the link's lock while the object exists; the
// verbs objects it points to may be used from any context the core allows.
unsafe impl<C> Send for Raw<C> {}

/// A revocable link to a C verbs object, shared between the object's driver data (which
/// revokes it when the object is destroyed) and the handles that refer to the object.
///
/// # Invariants
///
/// While the lock holds `Some(p)`, `p` is a live object: `revoke` runs before the object's
/// driver data is dropped and the core frees it.
#[pin_data]
pub(crate) struct CoreLink<C> {
    #[pin]
    obj: SpinLockIrq<Option<Raw<C>>>,
}

impl<C> CoreLink<C> {
    /// A new link to `obj`, shared from the start.
    ///
    /// # Safety
    ///
    /// `obj` is live, and whoever owns the object calls [`CoreLink::revoke`] before it is
    /// freed (its destroy callback).
    pub(crate) unsafe fn new(obj: NonNull<C>) -> Result<Arc<Self>> {
        // INVARIANT: The caller's promise.
        Arc::pin_init(
            pin_init!(Self {
                obj <- new_spinlock_irq!(Some(Raw(obj)), "rrxe:core_link"),
            }),
            GFP_KERNEL,
        )
    }

    /// Revokes the link: uses in progress finish first, later ones find the object gone.
    pub(crate) fn revoke(&self) {
        *self.obj.lock() = None;
    }

    /// Runs `f` on the object if it still exists, holding the link's lock (interrupts
    /// disabled): `f` must not sleep.
    ///
    /// The pointer `f` receives is valid for the duration of the call only.
    pub(crate) fn with<R>(&self, f: impl FnOnce(NonNull<C>) -> R) -> Option<R> {
        let guard = self.obj.lock();
        let raw = guard.as_ref()?;
        Some(f(raw.0))
    }

    /// Whether both links name the same object.
    pub(crate) fn same(&self, other: &Self) -> bool {
        core::ptr::eq(self, other)
    }
}
