// SPDX-License-Identifier: GPL-2.0

//! Affiliated asynchronous events of a QP, delivered to its consumer's event handler only
//! while the QP exists.

use crate::{bindings, ext::sync::SpinLockIrq, new_spinlock_irq};
use core::ptr::NonNull;
use kernel::{prelude::*, sync::Arc};

/// The `ib_qp` an event names.
struct RawQp(NonNull<bindings::ib_qp>);

// SAFETY: Only a pointer; `QpEvents` says when it may be used.
unsafe impl Send for RawQp {}

/// Raises events on a QP.
///
/// # Invariants
///
/// `qp` holds the `ib_qp` from its creation until the QP's `destroy_qp` (or a failed
/// `create_qp`), which empties it under the lock before the core frees the `ib_qp`. An
/// event is raised under the lock with the `ib_qp` present, so never after `destroy_qp`
/// returned, however long a holder keeps its `QpEvents`.
#[pin_data]
pub struct QpEvents {
    #[pin]
    qp: SpinLockIrq<Option<RawQp>>,
}

impl QpEvents {
    /// Events of the QP `qp` being created.
    ///
    /// # Safety
    ///
    /// `qp` is the `ib_qp` of a `create_qp` call, and `revoke` is called before that call
    /// fails or the QP's `destroy_qp` returns.
    pub(crate) unsafe fn new(qp: *mut bindings::ib_qp) -> Result<Arc<Self>> {
        let qp = NonNull::new(qp).map(RawQp);
        Arc::pin_init(
            pin_init!(Self {
                qp <- new_spinlock_irq!(qp, "rdma:qp_events"),
            }),
            GFP_KERNEL,
        )
    }

    /// Forgets the QP (it is being destroyed); waits for an event being raised.
    pub(crate) fn revoke(&self) {
        *self.qp.lock() = None;
    }

    /// Reports that a QP attached to an SRQ, in the error state, will take no more WQEs
    /// from the SRQ (`IB_EVENT_QP_LAST_WQE_REACHED`, IBA 11.6.3.1). Does nothing once the
    /// QP is destroyed.
    ///
    /// The handler runs with interrupts disabled, as the core allows for QP events.
    pub fn last_wqe_reached(&self) {
        self.raise(bindings::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED);
    }

    fn raise(&self, event: bindings::ib_event_type) {
        let guard = self.qp.lock();
        let Some(RawQp(qp)) = guard.as_ref() else {
            return;
        };
        let qp = qp.as_ptr();
        let mut ev = bindings::ib_event {
            // SAFETY: The QP exists while the lock holds its pointer (type invariants).
            device: unsafe { (*qp).device },
            event,
            ..Default::default()
        };
        // SAFETY: Writes the union member QP events use.
        unsafe { *ev.element.qp.as_mut() = qp };
        // SAFETY: The QP exists (as above); the core sets the handler and its context
        // before the QP is used and keeps them until it is destroyed.
        unsafe {
            if let Some(handler) = (*qp).event_handler {
                handler(&mut ev, (*qp).qp_context);
            }
        }
        drop(guard);
    }
}

/// The driver data of an `ib_qp` and the events of the QP, revoked when it is destroyed.
pub(crate) struct QpObj<D> {
    pub(crate) data: D,
    pub(crate) events: Arc<QpEvents>,
}
