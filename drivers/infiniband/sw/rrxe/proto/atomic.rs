// SPDX-License-Identifier: GPL-2.0

//! Atomic extended transport header (IBA 9.3.4, 28 bytes: virtual address, R_Key, swap or add
//! data, compare data) and atomic acknowledge extended transport header (IBA 9.3.6, 8 bytes:
//! the original remote data).

use super::wire;
use super::Result;

/// Required alignment of the 64-bit target of an atomic operation (natural alignment).
pub const ATOMIC_ALIGN: u64 = 8;

/// An atomic extended transport header (CMP SWAP and FETCH ADD requests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AtomicEth {
    /// Remote virtual address (8-byte aligned).
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Swap data (CMP SWAP) or add data (FETCH ADD).
    pub swap_add: u64,
    /// Compare data (CMP SWAP; zero for FETCH ADD).
    pub compare: u64,
}

impl AtomicEth {
    /// Encoded length.
    pub const LEN: usize = 28;

    /// Decodes the first 28 bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let b: &[u8; Self::LEN] = wire::array(buf)?;
        Ok(AtomicEth {
            va: wire::be64_at(b, 0),
            rkey: wire::be32_at(b, 8),
            swap_add: wire::be64_at(b, 12),
            compare: wire::be64_at(b, 20),
        })
    }

    /// Encodes into the first 28 bytes of `buf`.
    pub fn write(&self, buf: &mut [u8]) -> Result<()> {
        let b: &mut [u8; Self::LEN] = wire::array_mut(buf)?;
        wire::put(b, 0, &self.va.to_be_bytes());
        wire::put(b, 8, &self.rkey.to_be_bytes());
        wire::put(b, 12, &self.swap_add.to_be_bytes());
        wire::put(b, 20, &self.compare.to_be_bytes());
        Ok(())
    }
}

/// An atomic acknowledge extended transport header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AtomicAckEth {
    /// The remote data before the atomic operation.
    pub orig: u64,
}

impl AtomicAckEth {
    /// Encoded length.
    pub const LEN: usize = 8;

    /// Decodes the first 8 bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let b: &[u8; Self::LEN] = wire::array(buf)?;
        Ok(AtomicAckEth {
            orig: u64::from_be_bytes(*b),
        })
    }

    /// Encodes into the first 8 bytes of `buf`.
    pub fn write(&self, buf: &mut [u8]) -> Result<()> {
        let b: &mut [u8; Self::LEN] = wire::array_mut(buf)?;
        *b = self.orig.to_be_bytes();
        Ok(())
    }
}
