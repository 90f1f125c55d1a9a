// SPDX-License-Identifier: GPL-2.0

//! The kernel's CRC-32 (`crc32_le`, reflected polynomial 0xedb88320, no implicit
//! inversion).

use crate::bindings;

/// Continues the little-endian CRC-32 `crc` over `data`.
pub fn crc32_le(crc: u32, data: &[u8]) -> u32 {
    // SAFETY: `data` is a valid slice for the call; the function only reads it.
    unsafe { bindings::crc32_le(crc, data.as_ptr(), data.len()) }
}
