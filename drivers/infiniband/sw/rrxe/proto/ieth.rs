// SPDX-License-Identifier: GPL-2.0

//! Invalidate extended transport header (IBA 9.3.8), 4 bytes: the R_Key the responder
//! invalidates on receipt of the last (or only) packet of a SEND with invalidate.

use super::wire;
use super::Result;

/// An invalidate extended transport header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Ieth {
    /// The remote key to invalidate.
    pub rkey: u32,
}

impl Ieth {
    /// Encoded length.
    pub const LEN: usize = 4;

    /// Decodes the first 4 bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let b: &[u8; Self::LEN] = wire::array(buf)?;
        Ok(Ieth {
            rkey: u32::from_be_bytes(*b),
        })
    }

    /// Encodes into the first 4 bytes of `buf`.
    pub fn write(&self, buf: &mut [u8]) -> Result<()> {
        let b: &mut [u8; Self::LEN] = wire::array_mut(buf)?;
        *b = self.rkey.to_be_bytes();
        Ok(())
    }
}
