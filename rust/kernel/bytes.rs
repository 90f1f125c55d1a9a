// SPDX-License-Identifier: GPL-2.0

//! Bytes to copy into memory, from wherever they lie: a slice, or a range of a received
//! skb, whose payload may be in fragments (pages of the sender, for a packet from this
//! host), so that it is copied once, straight to its destination.

use crate::{bindings, ext::net::skb::SkbBytes};
use core::ops::Range;
use kernel::prelude::*;

/// Bytes to copy: a slice, or a range of a received skb.
#[derive(Clone, Copy)]
pub enum Bytes<'a> {
    /// Bytes in one slice.
    Slice(&'a [u8]),
    /// Bytes of a received skb.
    Skb(SkbBytes<'a>),
}

impl<'a> Bytes<'a> {
    /// The number of bytes.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Bytes::Slice(s) => s.len(),
            Bytes::Skb(b) => b.len(),
        }
    }

    /// Whether there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes in `range` of these; `None` if it is not within them.
    #[inline]
    pub fn get(&self, range: Range<usize>) -> Option<Self> {
        match self {
            Bytes::Slice(s) => s.get(range).map(Bytes::Slice),
            Bytes::Skb(b) => b.get(range).map(Bytes::Skb),
        }
    }

    /// Copies the bytes to `dst`, which must be as long (else `EINVAL`).
    #[inline]
    pub fn read(&self, dst: &mut [u8]) -> Result {
        match self {
            Bytes::Slice(s) => {
                if dst.len() != s.len() {
                    return Err(EINVAL);
                }
                dst.copy_from_slice(s);
                Ok(())
            }
            Bytes::Skb(b) => b.read(dst),
        }
    }

    /// Copies the bytes to `off` in `page`.
    ///
    /// # Safety
    ///
    /// `page` is a valid page that may be written, `off + self.len()` at most its size.
    #[inline]
    pub unsafe fn copy_to_page(&self, page: *mut bindings::page, off: usize) -> Result {
        match self {
            Bytes::Slice(s) => {
                // SAFETY: The caller vouches for the page; the helper only reads `s`.
                unsafe {
                    bindings::page_copy(page, off, s.as_ptr().cast_mut().cast(), s.len(), true)
                };
                Ok(())
            }
            // SAFETY: The caller's promise, passed on.
            Bytes::Skb(b) => unsafe { b.copy_to_page(page, off) },
        }
    }

    /// Copies the bytes to the kernel virtual address `addr`.
    ///
    /// # Safety
    ///
    /// `addr` is the start of `self.len()` bytes of kernel memory that may be written.
    #[inline]
    pub unsafe fn copy_to_kva(&self, addr: u64) -> Result {
        match self {
            Bytes::Slice(s) => {
                // SAFETY: The caller vouches for the memory; the helper only reads `s`.
                unsafe { bindings::kva_copy(addr, s.as_ptr().cast_mut().cast(), s.len(), true) };
                Ok(())
            }
            // SAFETY: The caller's promise, passed on.
            Bytes::Skb(b) => unsafe { b.copy_to_kva(addr) },
        }
    }
}
