// SPDX-License-Identifier: GPL-2.0

//! Verbs objects the RDMA core allocates for the driver.

use core::ptr::addr_of_mut;
use kernel::types::Opaque;

/// A verbs object the core allocates with the driver's size (`size_ib_*`): the C object
/// first, then the driver data.
#[repr(C)]
pub(crate) struct CoreObj<C, D> {
    pub(super) ib: Opaque<C>,
    pub(super) data: D,
}

impl<C, D> CoreObj<C, D> {
    /// Writes the data of a new object.
    ///
    /// # Safety
    ///
    /// `ib` must be an object of `size_of::<Self>()` bytes whose data is uninitialised.
    pub(crate) unsafe fn init(ib: *mut C, data: D) {
        // SAFETY: The caller's promise.
        unsafe { addr_of_mut!((*ib.cast::<Self>()).data).write(data) };
    }

    /// The data of an object.
    ///
    /// # Safety
    ///
    /// `ib` must be initialised by `init` and not yet dropped, for the lifetime `'a`.
    pub(crate) unsafe fn data<'a>(ib: *mut C) -> &'a D {
        // SAFETY: The caller's promise.
        unsafe { &(*ib.cast::<Self>()).data }
    }

    /// Drops the data of an object about to be freed.
    ///
    /// # Safety
    ///
    /// As for `data`; no use of the data may follow.
    pub(crate) unsafe fn drop_data(ib: *mut C) {
        // SAFETY: The caller's promise.
        unsafe { core::ptr::drop_in_place(addr_of_mut!((*ib.cast::<Self>()).data)) };
    }
}
