// SPDX-License-Identifier: GPL-2.0

//! The protocol core's ICRC computed with the kernel's CRC-32.

use crate::{ext::crc::Crc32, proto::icrc};

/// The device's CRC-32 transform ([`Crc32`]) as the ICRC engine.
pub(crate) struct KernelCrc<'a>(pub(crate) &'a Crc32);

impl icrc::Crc32 for KernelCrc<'_> {
    fn update(&self, crc: u32, data: &[u8]) -> u32 {
        self.0.update(crc, data)
    }
}
