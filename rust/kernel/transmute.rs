// SPDX-License-Identifier: GPL-2.0

//! What 6.12's [`AsBytes`] lacks.
//!
//! 6.12's `kernel::types::AsBytes` is a bare marker: it can be copied to userspace
//! ([`kernel::uaccess::UserSliceWriter::write`]) but not viewed as a byte slice, which rrxe
//! needs to write completions into a queue shared with userspace. Later kernels give the
//! trait an `as_bytes` method (`kernel::transmute::AsBytes::as_bytes`); [`AsBytesExt`] is
//! that method until then.

use kernel::types::AsBytes;

/// The byte view of an [`AsBytes`] value, as later kernels' `AsBytes::as_bytes`.
pub trait AsBytesExt: AsBytes + Sized {
    /// The bytes of the value.
    fn as_bytes(&self) -> &[u8] {
        // SAFETY: `Self: AsBytes` has no uninitialised bytes and no interior mutability; the
        // slice covers exactly the value and borrows it for its lifetime.
        unsafe {
            core::slice::from_raw_parts((self as *const Self).cast(), core::mem::size_of::<Self>())
        }
    }
}

impl<T: AsBytes> AsBytesExt for T {}
