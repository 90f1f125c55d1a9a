// SPDX-License-Identifier: GPL-2.0

//! Immediate data extended transport header (IBA 9.3.7), 4 bytes, carried by the last (or
//! only) packet of SEND and RDMA WRITE with immediate data.

use super::wire;
use super::Result;

/// Immediate data.
///
/// The verbs (`imm_data`, a `__be32`) hand the four bytes over in wire order; `imm` is those
/// bytes read as a big-endian number, so a driver converts with `u32::from_be` on the way in
/// and `u32::to_be` on the way out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ImmDt {
    /// The immediate value (big-endian on the wire).
    pub imm: u32,
}

impl ImmDt {
    /// Encoded length.
    pub const LEN: usize = 4;

    /// Decodes the first 4 bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let b: &[u8; Self::LEN] = wire::array(buf)?;
        Ok(ImmDt {
            imm: u32::from_be_bytes(*b),
        })
    }

    /// Encodes into the first 4 bytes of `buf`.
    pub fn write(&self, buf: &mut [u8]) -> Result<()> {
        let b: &mut [u8; Self::LEN] = wire::array_mut(buf)?;
        *b = self.imm.to_be_bytes();
        Ok(())
    }
}
