// SPDX-License-Identifier: GPL-2.0

//! Asynchronous events of CQs and SRQs, delivered to their consumers' event handlers.

use crate::bindings;
use core::ptr::NonNull;

/// Raises events on an SRQ.
///
/// # Invariants
///
/// `ib` is an SRQ of the device. Whoever holds an `SrqEvents` only raises events while the
/// SRQ exists: the RDMA core destroys an SRQ only after the QPs using it, and events come
/// from the receive processing of those QPs.
pub struct SrqEvents {
    ib: NonNull<bindings::ib_srq>,
}

// SAFETY: Event handlers may be called from any context the core allows for them.
unsafe impl Send for SrqEvents {}
// SAFETY: See `Send`; raising an event only reads the SRQ.
unsafe impl Sync for SrqEvents {}

impl SrqEvents {
    /// # Safety
    ///
    /// `ib` is the SRQ being created (see the type invariants).
    pub(crate) unsafe fn from_raw(ib: *mut bindings::ib_srq) -> Option<Self> {
        NonNull::new(ib).map(|ib| Self { ib })
    }

    /// Reports that the number of posted WQEs fell below the armed limit.
    pub fn limit_reached(&self) {
        let srq = self.ib.as_ptr();
        let mut ev = bindings::ib_event {
            // SAFETY: The SRQ is valid (type invariants).
            device: unsafe { (*srq).device },
            event: bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED,
            ..Default::default()
        };
        // SAFETY: Writes the union member SRQ events use.
        unsafe { *ev.element.srq.as_mut() = srq };
        // SAFETY: The SRQ is valid; the core sets the handler and context at creation.
        unsafe {
            if let Some(handler) = (*srq).event_handler {
                handler(&mut ev, (*srq).srq_context);
            }
        }
    }
}
