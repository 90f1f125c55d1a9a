// SPDX-License-Identifier: GPL-2.0

//! Affiliated asynchronous events of a QP, delivered to its consumer's event handler only
//! while the QP exists.

use super::revocable::CoreLink;
use crate::bindings;
use core::ptr::NonNull;
use kernel::{prelude::*, sync::Arc};

/// Raises events on a QP.
///
/// It may outlive the QP: events go through the QP's [`CoreLink`], which `destroy_qp` (or
/// a failed `create_qp`) revokes before the core frees the `ib_qp`, so no event is raised
/// after `destroy_qp` returned, however long a holder keeps its `QpEvents`.
pub struct QpEvents {
    link: Arc<CoreLink<bindings::ib_qp>>,
}

impl QpEvents {
    /// Events of the QP `qp` being created.
    ///
    /// # Safety
    ///
    /// `qp` is the `ib_qp` of a `create_qp` call, and `revoke` is called before that call
    /// fails or the QP's `destroy_qp` returns.
    pub(crate) unsafe fn new(qp: *mut bindings::ib_qp) -> Result<Arc<Self>> {
        let qp = NonNull::new(qp).ok_or(EINVAL)?;
        // SAFETY: The caller's promise.
        let link = unsafe { CoreLink::new(qp) }?;
        Ok(Arc::new(Self { link }, GFP_KERNEL)?)
    }

    /// Forgets the QP (it is being destroyed); waits for an event being raised.
    pub(crate) fn revoke(&self) {
        self.link.revoke();
    }

    /// Reports that a QP attached to an SRQ, in the error state, will take no more WQEs
    /// from the SRQ (`IB_EVENT_QP_LAST_WQE_REACHED`, IBA 11.6.3.1). Does nothing once the
    /// QP is destroyed.
    pub fn last_wqe_reached(&self) {
        self.raise(bindings::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED);
    }

    fn raise(&self, event: bindings::ib_event_type) {
        self.link.with(|qp| {
            let qp = qp.as_ptr();
            let mut ev = bindings::ib_event {
                // SAFETY: A live QP for the call (`CoreLink` invariants).
                device: unsafe { (*qp).device },
                event,
                ..Default::default()
            };
            // SAFETY: Writes the union member QP events use.
            unsafe { *ev.element.qp.as_mut() = qp };
            // SAFETY: A live QP; the core sets the handler and its context before the QP
            // is used and keeps them until it is destroyed.
            unsafe {
                if let Some(handler) = (*qp).event_handler {
                    handler(&mut ev, (*qp).qp_context);
                }
            }
        });
    }
}

/// The driver data of an `ib_qp` and the events of the QP, revoked when it is destroyed.
pub(crate) struct QpObj<D> {
    pub(crate) data: D,
    pub(crate) events: Arc<QpEvents>,
}
