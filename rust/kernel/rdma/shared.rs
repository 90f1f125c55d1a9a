// SPDX-License-Identifier: GPL-2.0

//! Memory shared with userspace: zeroed `vmalloc_user` buffers that user contexts map
//! (see [`super::mmap`]), e.g. the queues of CQs, QPs and SRQs.
//!
//! Userspace may write any value at any time into a mapped buffer: everything read from
//! it is a snapshot to be validated, never trusted.

use crate::bindings;
use core::mem::size_of;
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicBool, AtomicU32, Ordering},
};
use kernel::{prelude::*, sync::Arc, types::FromBytes};

/// A zeroed, page-aligned buffer that can be mapped into user contexts.
///
/// # Invariants
///
/// `ptr` points to a `vmalloc_user` allocation of at least `size` bytes, owned by `self`.
pub struct SharedMem {
    ptr: NonNull<u8>,
    size: usize,
    /// The buffer was offered to userspace ([`SharedMem::expose`]): it may be mapped, so it
    /// never holds kernel completions, which carry kernel addresses.
    exposed: AtomicBool,
}

// SAFETY: The buffer is plain memory; all accesses go through methods that copy or use
// atomics, so sharing between threads is fine.
unsafe impl Send for SharedMem {}
// SAFETY: See `Send`.
unsafe impl Sync for SharedMem {}

impl SharedMem {
    /// Allocates `size` zeroed bytes (rounded up to pages).
    pub fn new(size: usize) -> Result<Arc<Self>> {
        if size == 0 {
            return Err(EINVAL);
        }
        // SAFETY: Plain allocation.
        let ptr = NonNull::new(unsafe { bindings::vmalloc_user(size as _) }).ok_or(ENOMEM)?;
        // On failure the value is dropped, which frees the buffer.
        Ok(Arc::new(
            Self {
                ptr: ptr.cast(),
                size,
                exposed: AtomicBool::new(false),
            },
            GFP_KERNEL,
        )?)
    }

    /// Marks the buffer as offered to userspace (before it can be mapped); see
    /// [`SharedMem::is_exposed`].
    pub(crate) fn expose(&self) {
        self.exposed.store(true, Ordering::SeqCst);
    }

    /// Whether the buffer was offered to userspace: then nothing read from it may be taken
    /// for kernel data (pointers), and nothing private may be written to it.
    pub(crate) fn is_exposed(&self) -> bool {
        self.exposed.load(Ordering::SeqCst)
    }

    /// The size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The 4-byte-aligned word at `off`, if in bounds.
    fn word(&self, off: usize) -> Option<&AtomicU32> {
        if off % 4 != 0 || off.checked_add(4)? > self.size {
            return None;
        }
        // SAFETY: In bounds and aligned (the buffer is page-aligned); `AtomicU32` has the
        // layout of `u32`, and all accesses to shared words are atomic.
        Some(unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().add(off).cast()) })
    }

    /// Loads the word at `off` with acquire ordering (0 if out of bounds).
    pub fn load_acquire(&self, off: usize) -> u32 {
        self.word(off).map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// Stores the word at `off` with release ordering (ignored if out of bounds).
    pub fn store_release(&self, off: usize, v: u32) {
        if let Some(w) = self.word(off) {
            w.store(v, Ordering::Release);
        }
    }

    /// Copies `len` bytes from `off` to `dst`. Fails with `EINVAL` out of bounds.
    ///
    /// # Safety
    ///
    /// `dst` must be valid for writes of `len` bytes (initialised or not).
    unsafe fn copy_out(&self, off: usize, dst: *mut u8, len: usize) -> Result {
        let end = off.checked_add(len).ok_or(EINVAL)?;
        if end > self.size {
            return Err(EINVAL);
        }
        // SAFETY: `off..end` is in bounds of the allocation (type invariant), `dst` is valid
        // for `len` bytes (the caller's promise). The copy is C's `memcpy`: each byte is
        // loaded once, and a concurrent write by userspace races in C, not in Rust.
        unsafe { bindings::kva_copy(self.ptr.as_ptr().add(off) as u64, dst.cast(), len, false) };
        Ok(())
    }

    /// Copies `dst.len()` bytes from `off`. Fails with `EINVAL` out of bounds.
    ///
    /// Every byte is loaded once, by C (`memcpy`): userspace may write concurrently, and the
    /// Rust code only ever sees the copy, a snapshot that callers validate.
    pub fn read(&self, off: usize, dst: &mut [u8]) -> Result {
        // SAFETY: `dst` is valid for its length.
        unsafe { self.copy_out(off, dst.as_mut_ptr(), dst.len()) }
    }

    /// Reads a `T` at `off` (any alignment), as [`SharedMem::read`] does. Fails with `EINVAL`
    /// out of bounds.
    pub fn read_obj<T: FromBytes>(&self, off: usize) -> Result<T> {
        let mut v = core::mem::MaybeUninit::<T>::uninit();
        // SAFETY: `v` is valid for writes of its size.
        unsafe { self.copy_out(off, v.as_mut_ptr().cast(), size_of::<T>()) }?;
        // SAFETY: `copy_out` wrote every byte of `v`; every bit pattern is a valid `T`
        // (`FromBytes`).
        Ok(unsafe { v.assume_init() })
    }

    /// Copies `src` to `off`. Fails with `EINVAL` out of bounds.
    pub fn write(&self, off: usize, src: &[u8]) -> Result {
        let end = off.checked_add(src.len()).ok_or(EINVAL)?;
        if end > self.size {
            return Err(EINVAL);
        }
        // SAFETY: In bounds; see `read`.
        unsafe {
            core::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.as_ptr().add(off), src.len())
        };
        Ok(())
    }
}

impl Drop for SharedMem {
    fn drop(&mut self) {
        // SAFETY: Owned (type invariant). Pages still mapped into a process keep their own
        // references (the mapping inserted them page by page) and go when it unmaps.
        unsafe { bindings::vfree(self.ptr.as_ptr().cast()) };
    }
}
