// SPDX-License-Identifier: GPL-2.0

//! RDMA extended transport header (IBA 9.3.3), 16 bytes: virtual address (8), R_Key (4),
//! DMA length (4). Carried by the first (or only) packet of RDMA WRITE, by RDMA READ
//! requests, by FLUSH and by ATOMIC WRITE.

use super::wire;
use super::Result;

/// An RDMA extended transport header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Reth {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Length of the whole operation in bytes.
    pub dma_len: u32,
}

impl Reth {
    /// Encoded length.
    pub const LEN: usize = 16;

    /// Decodes the first 16 bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let b: &[u8; Self::LEN] = wire::array(buf)?;
        Ok(Reth {
            va: wire::be64_at(b, 0),
            rkey: wire::be32_at(b, 8),
            dma_len: wire::be32_at(b, 12),
        })
    }

    /// Encodes into the first 16 bytes of `buf`.
    pub fn write(&self, buf: &mut [u8]) -> Result<()> {
        let b: &mut [u8; Self::LEN] = wire::array_mut(buf)?;
        wire::put(b, 0, &self.va.to_be_bytes());
        wire::put(b, 8, &self.rkey.to_be_bytes());
        wire::put(b, 12, &self.dma_len.to_be_bytes());
        Ok(())
    }
}
