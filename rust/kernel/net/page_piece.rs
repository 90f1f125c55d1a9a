// SPDX-License-Identifier: GPL-2.0

//! Pieces of pages that a transmitted datagram carries by reference instead of a copy
//! (zero-copy transmit, see [`TxSkb::push_page`](super::xmit::TxSkb::push_page)).

use crate::bindings;
use core::ptr::NonNull;
use kernel::page::PAGE_SIZE;

/// A reference on a page (`get_page`) and a byte range in it: the page stays allocated
/// while the reference lives, whoever else unpins or frees it meanwhile. Dropping it puts
/// the reference (`put_page`).
///
/// # Invariants
///
/// `page` is a valid page that `sendpage_ok()` accepted, on which we hold one reference;
/// `0 < len` and `off + len <= PAGE_SIZE`.
pub struct PagePiece {
    page: NonNull<bindings::page>,
    off: u32,
    len: u32,
}

// SAFETY: A page reference may be put from any context.
unsafe impl Send for PagePiece {}

impl PagePiece {
    /// Takes a reference on `page` for the `len` bytes at `off` in it. `None` if the range
    /// is empty or leaves the page, or if the page may not be sent by reference (a slab
    /// page, or one without references: `sendpage_ok()`).
    ///
    /// # Safety
    ///
    /// `page` must be valid for the call (e.g. pinned by the caller).
    pub unsafe fn get(page: NonNull<bindings::page>, off: usize, len: usize) -> Option<Self> {
        let end = off.checked_add(len)?;
        // SAFETY: The caller promises a valid page.
        if len == 0 || end > PAGE_SIZE || !unsafe { bindings::sendpage_ok(page.as_ptr()) } {
            return None;
        }
        // SAFETY: The caller promises a valid page; the reference is put in `drop` or
        // handed over in `into_raw`.
        unsafe { bindings::get_page(page.as_ptr()) };
        // Both fit: at most `PAGE_SIZE`.
        Some(Self {
            page,
            off: off as u32,
            len: len as u32,
        })
    }

    /// The length of the piece in bytes.
    pub(super) fn len(&self) -> usize {
        self.len as usize
    }

    /// The piece of [`Self::into_raw`] again.
    ///
    /// # Safety
    ///
    /// The arguments must be what `into_raw` returned, with its reference, which this
    /// takes back.
    pub(super) unsafe fn from_raw(page: NonNull<bindings::page>, off: u32, len: u32) -> Self {
        Self { page, off, len }
    }

    /// The page, its offset and length, with the reference, which the caller takes over.
    pub(super) fn into_raw(self) -> (NonNull<bindings::page>, u32, u32) {
        let this = core::mem::ManuallyDrop::new(self);
        (this.page, this.off, this.len)
    }
}

impl Drop for PagePiece {
    fn drop(&mut self) {
        // SAFETY: The type invariant's reference, given up here.
        unsafe { bindings::put_page(self.page.as_ptr()) };
    }
}
