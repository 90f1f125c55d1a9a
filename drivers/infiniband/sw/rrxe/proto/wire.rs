// SPDX-License-Identifier: GPL-2.0

//! Bounds-checked access to fixed-size big-endian fields.

use super::{ProtoError, Result};

/// The first `N` bytes of `buf` as an array, or [`ProtoError::Truncated`].
pub(crate) fn array<const N: usize>(buf: &[u8]) -> Result<&[u8; N]> {
    buf.get(..N)
        .and_then(|s| s.try_into().ok())
        .ok_or(ProtoError::Truncated)
}

/// The first `N` bytes of `buf` as a mutable array, or [`ProtoError::BufferTooSmall`].
pub(crate) fn array_mut<const N: usize>(buf: &mut [u8]) -> Result<&mut [u8; N]> {
    buf.get_mut(..N)
        .and_then(|s| s.try_into().ok())
        .ok_or(ProtoError::BufferTooSmall)
}

/// Big-endian `u32` from four bytes.
pub(crate) const fn be32(b0: u8, b1: u8, b2: u8, b3: u8) -> u32 {
    u32::from_be_bytes([b0, b1, b2, b3])
}

/// Big-endian `u64` at byte `off` of a fixed array (the caller keeps `off + 8 <= N`).
pub(crate) fn be64_at<const N: usize>(b: &[u8; N], off: usize) -> u64 {
    let mut v = [0u8; 8];
    if let Some(s) = b.get(off..off.saturating_add(8)) {
        v.copy_from_slice(s);
    }
    u64::from_be_bytes(v)
}

/// Big-endian `u32` at byte `off` of a fixed array (the caller keeps `off + 4 <= N`).
pub(crate) fn be32_at<const N: usize>(b: &[u8; N], off: usize) -> u32 {
    let mut v = [0u8; 4];
    if let Some(s) = b.get(off..off.saturating_add(4)) {
        v.copy_from_slice(s);
    }
    u32::from_be_bytes(v)
}

/// Stores `bytes` at byte `off` of a fixed array (the caller keeps the range in bounds).
pub(crate) fn put<const N: usize>(b: &mut [u8; N], off: usize, bytes: &[u8]) {
    if let Some(d) = b.get_mut(off..off.saturating_add(bytes.len())) {
        d.copy_from_slice(bytes);
    }
}
