// SPDX-License-Identifier: GPL-2.0

//! The protocol core's ICRC computed with the kernel's CRC-32.

use crate::{ext::crc::crc32_le, proto::icrc::Crc32};

/// The kernel's `crc32_le` as the ICRC engine.
pub(crate) struct KernelCrc;

impl Crc32 for KernelCrc {
    fn update(&self, crc: u32, data: &[u8]) -> u32 {
        crc32_le(crc, data)
    }
}
