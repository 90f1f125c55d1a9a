// SPDX-License-Identifier: GPL-2.0

//! IBA 1.5 memory placement extensions: the FLUSH extended transport header and the ATOMIC
//! WRITE payload.
//!
//! FETH, 4 bytes, big-endian word: bits 31:6 reserved, bits 5:4 selectivity level, bits 3:0
//! placement type. A FLUSH packet is BTH + FETH + RETH and carries no payload; it is answered
//! by a zero-length RDMA READ Response Only. An ATOMIC WRITE packet is BTH + RETH + an 8-byte
//! payload, answered the same way.

use super::wire;
use super::{ProtoError, Result};

/// Placement type bit: make the data globally visible.
pub const PLT_GLOBAL: u8 = 1 << 0;
/// Placement type bit: make the data persistent.
pub const PLT_PERSISTENT: u8 = 1 << 1;
/// Selectivity level: flush the memory range named by the RETH.
pub const SEL_RANGE: u8 = 0;
/// Selectivity level: flush the whole memory region of the R_Key.
pub const SEL_MR: u8 = 1;

/// Length of an ATOMIC WRITE payload (one 64-bit word, copied as raw bytes).
pub const ATOMIC_WRITE_LEN: usize = 8;

/// A FLUSH extended transport header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Feth {
    /// Placement type (4 bits: [`PLT_GLOBAL`], [`PLT_PERSISTENT`]).
    pub placement: u8,
    /// Selectivity level (2 bits: [`SEL_RANGE`], [`SEL_MR`]).
    pub selectivity: u8,
}

impl Feth {
    /// Encoded length.
    pub const LEN: usize = 4;

    /// Decodes the first 4 bytes of `buf` (reserved bits ignored).
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let b: &[u8; Self::LEN] = wire::array(buf)?;
        Ok(Feth {
            placement: b[3] & 0x0f,
            selectivity: (b[3] >> 4) & 0x3,
        })
    }

    /// Encodes into the first 4 bytes of `buf`, reserved bits zero. Fails when a field does
    /// not fit.
    pub fn write(&self, buf: &mut [u8]) -> Result<()> {
        if self.placement > 0x0f || self.selectivity > 0x3 {
            return Err(ProtoError::FieldOutOfRange);
        }
        let b: &mut [u8; Self::LEN] = wire::array_mut(buf)?;
        *b = [0, 0, 0, (self.selectivity << 4) | self.placement];
        Ok(())
    }
}
