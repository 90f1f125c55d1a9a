// SPDX-License-Identifier: GPL-2.0

//! Asynchronous events of CQs and SRQs, delivered to their consumers' event handlers.

use super::{object::CoreObj, ops::DeviceOps, revocable::CoreLink};
use crate::bindings;
use core::ptr::NonNull;
use kernel::{prelude::*, sync::Arc};

/// What an `ib_srq` of a `T` device carries: the driver's SRQ, and the link its
/// [`SrqEvents`] share, revoked when the SRQ is destroyed.
pub(crate) struct SrqObj<T: DeviceOps> {
    pub(crate) data: T::Srq,
    pub(crate) link: Arc<CoreLink<bindings::ib_srq>>,
}

/// The driver data of an `ib_srq` of a `T` device.
pub(crate) type CoreSrq<T> = CoreObj<bindings::ib_srq, SrqObj<T>>;

/// Raises events on an SRQ.
///
/// It may outlive the SRQ (QPs using the SRQ hold it, and a QP's engine may still run
/// after `destroy_qp` returned): events go through the SRQ's [`CoreLink`], which
/// `destroy_srq` revokes, and are dropped once the SRQ is gone.
pub struct SrqEvents {
    link: Arc<CoreLink<bindings::ib_srq>>,
}

impl SrqEvents {
    /// The events of the SRQ being created, and the link its data keeps to revoke them.
    ///
    /// # Safety
    ///
    /// `ib` is the SRQ being created; its destroy callback revokes the link.
    pub(crate) unsafe fn new(
        ib: *mut bindings::ib_srq,
    ) -> Result<(Self, Arc<CoreLink<bindings::ib_srq>>)> {
        let ib = NonNull::new(ib).ok_or(EINVAL)?;
        // SAFETY: The caller's promise.
        let link = unsafe { CoreLink::new(ib) }?;
        Ok((Self { link: link.clone() }, link))
    }

    /// Reports that the number of posted WQEs fell below the armed limit (nothing if the
    /// SRQ is gone).
    pub fn limit_reached(&self) {
        self.link.with(|srq| {
            let srq = srq.as_ptr();
            let mut ev = bindings::ib_event {
                // SAFETY: A live SRQ for the call (`CoreLink` invariants).
                device: unsafe { (*srq).device },
                event: bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED,
                ..Default::default()
            };
            // SAFETY: Writes the union member SRQ events use.
            unsafe { *ev.element.srq.as_mut() = srq };
            // SAFETY: A live SRQ; the core sets the handler and context at creation.
            unsafe {
                if let Some(handler) = (*srq).event_handler {
                    handler(&mut ev, (*srq).srq_context);
                }
            }
        });
    }
}
