// SPDX-License-Identifier: GPL-2.0

//! Host build of rrxe's protocol core.
//!
//! [`proto`] is `drivers/infiniband/sw/rrxe/proto/`, compiled exactly as the kernel module
//! compiles it (`no_std`, no `alloc`). [`TableCrc32`] is the host's CRC-32 engine for the
//! ICRC, standing in for the kernel's `crc32_le`.

#![no_std]
#![forbid(unsafe_code)]

#[path = "../../../../drivers/infiniband/sw/rrxe/proto/mod.rs"]
pub mod proto;

/// Byte-wise table of the reflected CRC-32 polynomial `0xEDB88320`.
const TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// Table-driven CRC-32 with the contract of Linux `crc32_le`: reflected polynomial
/// `0xEDB88320`, continuing from the given value, no inversion.
#[derive(Debug, Clone, Copy, Default)]
pub struct TableCrc32;

impl proto::icrc::Crc32 for TableCrc32 {
    fn update(&self, crc: u32, data: &[u8]) -> u32 {
        data.iter().fold(crc, |c, &b| {
            let idx = usize::from((c as u8) ^ b);
            TABLE.get(idx).copied().unwrap_or(0) ^ (c >> 8)
        })
    }
}
