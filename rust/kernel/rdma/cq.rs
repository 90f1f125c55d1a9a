// SPDX-License-Identifier: GPL-2.0

//! Completion queues: the driver data the core's `ib_cq` carries, and the references to
//! a CQ that the QPs completing into it hold.

use super::{object::CoreObj, ops::DeviceOps, revocable::CoreLink};
use crate::bindings;
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{prelude::*, sync::Arc};

/// What an `ib_cq` of a `T` device carries: the driver's CQ, and the link that
/// [`CqRef`]s share, revoked when the CQ is destroyed.
pub(crate) struct CqObj<T: DeviceOps> {
    pub(crate) data: T::Cq,
    pub(crate) link: Arc<CoreLink<bindings::ib_cq>>,
}

/// The driver data of an `ib_cq` of a `T` device.
pub(crate) type CoreCq<T> = CoreObj<bindings::ib_cq, CqObj<T>>;

/// A CQ of the device, as a QP refers to it.
///
/// It may outlive the CQ (a QP's engine can still hold it after `destroy_qp` returned,
/// and the core may free the CQ then): every use goes through the CQ's [`CoreLink`],
/// which `destroy_cq` revokes, and does nothing once the CQ is gone.
pub struct CqRef<T: DeviceOps> {
    link: Arc<CoreLink<bindings::ib_cq>>,
    _t: PhantomData<T>,
}

impl<T: DeviceOps> CqRef<T> {
    /// A reference to `cq`.
    ///
    /// # Safety
    ///
    /// `cq` is a CQ of a device whose `DeviceOps` is `T`, initialised by `create_cq_cb`
    /// and not yet destroyed, for the duration of the call.
    pub(crate) unsafe fn from_raw(cq: *mut bindings::ib_cq) -> Self {
        // SAFETY: The caller's promise.
        let obj = unsafe { CoreCq::<T>::data(cq) };
        Self {
            link: obj.link.clone(),
            _t: PhantomData,
        }
    }

    /// Runs `f` on the driver's CQ if the CQ still exists (`None` otherwise); the CQ's
    /// destroy waits for it.
    pub fn with<R>(&self, f: impl FnOnce(&T::Cq) -> R) -> Option<R> {
        self.link.with(|cq| {
            // SAFETY: The CQ and its data are alive for the call (`CoreLink` invariants;
            // `destroy_cq_cb` revokes before dropping the data).
            let obj = unsafe { CoreCq::<T>::data(cq.as_ptr()) };
            f(&obj.data)
        })
    }

    /// Whether both refer to the same CQ.
    pub fn same(&self, other: &Self) -> bool {
        self.link.same(&other.link)
    }

    /// Reports a CQ overrun (`IB_EVENT_CQ_ERR`) to the CQ's event handler, if the CQ
    /// still exists.
    pub fn error_event(&self) {
        self.link.with(|cq| {
            let cq = cq.as_ptr();
            let mut ev = bindings::ib_event {
                // SAFETY: A live CQ for the call (`CoreLink` invariants).
                device: unsafe { (*cq).device },
                event: bindings::ib_event_type_IB_EVENT_CQ_ERR,
                ..Default::default()
            };
            // SAFETY: Writes the union member CQ events use.
            unsafe { *ev.element.cq.as_mut() = cq };
            // SAFETY: A live CQ; the core sets the handler and its context at creation.
            unsafe {
                if let Some(handler) = (*cq).event_handler {
                    handler(&mut ev, (*cq).cq_context);
                }
            }
        });
    }

    /// Calls the CQ's completion handler (a completion arrived while notification was
    /// armed), if the CQ still exists. The handler may poll and re-arm the CQ, and move
    /// QPs to the error state; call it without holding driver locks.
    pub fn notify(&self) {
        self.link.with(|cq| {
            let cq = cq.as_ptr();
            // SAFETY: A live CQ; the core sets the handler and its context at creation.
            unsafe {
                if let Some(handler) = (*cq).comp_handler {
                    handler(cq, (*cq).cq_context);
                }
            }
        });
    }
}

/// Creates the link of a new CQ, for its [`CqObj`].
///
/// # Safety
///
/// `cq` is the CQ being created; its destroy callback revokes the link.
pub(crate) unsafe fn new_link(cq: *mut bindings::ib_cq) -> Result<Arc<CoreLink<bindings::ib_cq>>> {
    let cq = NonNull::new(cq).ok_or(EINVAL)?;
    // SAFETY: The caller's promise.
    unsafe { CoreLink::new(cq) }
}
