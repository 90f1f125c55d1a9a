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
//! A use runs without the link's lock (it only counts itself in), so it may call a
//! consumer's handler that re-enters the driver and uses the same link again, e.g. a
//! completion handler that moves a QP to the error state, which flushes completions into
//! the same CQ.

use crate::{
    ext::{delay::msleep, sync::SpinLockIrq},
    new_spinlock_irq,
};
use core::ptr::NonNull;
use kernel::{prelude::*, sync::Arc};

/// The pointer a [`CoreLink`] guards.
struct Raw<C>(NonNull<C>);

// SAFETY: `Raw` is only dereferenced while the object exists (see `CoreLink`); the verbs
// objects it points to may be used from any context the core allows.
unsafe impl<C> Send for Raw<C> {}

/// What a [`CoreLink`]'s lock protects.
struct State<C> {
    /// The object, until revoked.
    obj: Option<Raw<C>>,
    /// Uses in progress.
    users: u32,
}

/// A revocable link to a C verbs object, shared between the object's driver data (which
/// revokes it when the object is destroyed) and the handles that refer to the object.
///
/// # Invariants
///
/// While `obj` is `Some(p)`, or `users` is not zero, `p` is a live object: `revoke` runs
/// before the object's driver data is dropped and the core frees it, clears `obj` and
/// returns only once `users` is zero.
#[pin_data]
pub(crate) struct CoreLink<C> {
    #[pin]
    state: SpinLockIrq<State<C>>,
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
                state <- new_spinlock_irq!(
                    State {
                        obj: Some(Raw(obj)),
                        users: 0
                    },
                    "rrxe:core_link"
                ),
            }),
            GFP_KERNEL,
        )
    }

    /// Revokes the link: later uses find the object gone; waits for the uses in progress.
    /// Process context (it sleeps while a use is in progress); never from a use of the
    /// same link.
    pub(crate) fn revoke(&self) {
        self.state.lock().obj = None;
        while self.state.lock().users > 0 {
            msleep(1);
        }
    }

    /// Runs `f` on the object if it still exists. `f` runs without the link's lock, in
    /// the caller's context; the pointer it receives is valid for the call only.
    pub(crate) fn with<R>(&self, f: impl FnOnce(NonNull<C>) -> R) -> Option<R> {
        let obj = {
            let mut st = self.state.lock();
            let obj = st.obj.as_ref()?.0;
            // Bounded by the threads that can be in `f` at once.
            st.users += 1;
            obj
        };
        let r = f(obj);
        self.state.lock().users -= 1;
        Some(r)
    }

    /// Whether both links name the same object.
    pub(crate) fn same(&self, other: &Self) -> bool {
        core::ptr::eq(self, other)
    }
}
