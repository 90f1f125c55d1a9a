// SPDX-License-Identifier: GPL-2.0

//! The kernel's CRC-32 as the crypto API offers it: `"crc32"` (the `crc32_le` function,
//! reflected polynomial 0xedb88320, no implicit inversion), with the driver of highest
//! priority (crc32-pclmul on x86 with PCLMULQDQ), as rxe computes its ICRCs.

use crate::bindings;
use core::ptr::NonNull;
use kernel::prelude::*;

/// A transform of the crypto API's `"crc32"`.
///
/// # Invariants
///
/// `tfm` is a `"crc32"` transform that `crypto_alloc_shash` returned, whose descriptor
/// state is the `u32` CRC; owned: freed on drop.
pub struct Crc32 {
    tfm: NonNull<bindings::crypto_shash>,
}

// SAFETY: The transform is only freed on drop; using it does not change it (each update
// has its own descriptor on the caller's stack), so any thread may use it, at once.
unsafe impl Send for Crc32 {}
// SAFETY: As for `Send`: shared use only reads the transform.
unsafe impl Sync for Crc32 {}

impl Crc32 {
    /// The crypto API's `"crc32"`: the driver of highest priority registered now (loaded
    /// as a module if none is), kept for the transform's life. Process context: it may
    /// sleep.
    pub fn new() -> Result<Self> {
        let mut tfm = core::ptr::null_mut();
        // SAFETY: `tfm` is a valid out-pointer; process context, as documented.
        kernel::error::to_result(unsafe { bindings::crc32_alloc(&mut tfm) })?;
        // INVARIANT: The helper returned 0: a "crc32" transform with a `u32` state, ours.
        Ok(Self {
            tfm: NonNull::new(tfm).ok_or(EINVAL)?,
        })
    }

    /// Continues the CRC-32 `crc` over `data`.
    pub fn update(&self, crc: u32, data: &[u8]) -> u32 {
        // SAFETY: The transform is valid (type invariant); `data` is a valid slice for the
        // call, only read.
        unsafe { bindings::crc32_update(self.tfm.as_ptr(), crc, data.as_ptr(), data.len()) }
    }

    /// The transform, for the C helpers that compute a CRC over an skb's bytes.
    pub(crate) fn as_raw(&self) -> *mut bindings::crypto_shash {
        self.tfm.as_ptr()
    }
}

impl Drop for Crc32 {
    fn drop(&mut self) {
        // SAFETY: The transform is ours (type invariant) and no longer used.
        unsafe { bindings::crc32_free(self.tfm.as_ptr()) };
    }
}
