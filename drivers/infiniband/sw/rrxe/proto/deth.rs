// SPDX-License-Identifier: GPL-2.0

//! Datagram extended transport header (IBA 9.3.2), 8 bytes: Q_Key (4), reserved (1), source
//! QP (3). Carried by every UD packet.

use super::bth::QPN_MASK;
use super::wire;
use super::{ProtoError, Result};

/// The well-known Q_Key of the general services interface (QP1).
pub const GSI_QKEY: u32 = 0x8001_0000;

/// A datagram extended transport header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Deth {
    /// Queue key.
    pub qkey: u32,
    /// Source queue pair (24 bits).
    pub src_qpn: u32,
}

impl Deth {
    /// Encoded length.
    pub const LEN: usize = 8;

    /// Decodes the first 8 bytes of `buf` (the reserved byte is ignored).
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let b: &[u8; Self::LEN] = wire::array(buf)?;
        Ok(Deth {
            qkey: wire::be32(b[0], b[1], b[2], b[3]),
            src_qpn: wire::be32(0, b[5], b[6], b[7]),
        })
    }

    /// Encodes into the first 8 bytes of `buf`. Fails when the source QPN exceeds 24 bits.
    pub fn write(&self, buf: &mut [u8]) -> Result<()> {
        if self.src_qpn > QPN_MASK {
            return Err(ProtoError::FieldOutOfRange);
        }
        let b: &mut [u8; Self::LEN] = wire::array_mut(buf)?;
        let q = self.qkey.to_be_bytes();
        let s = self.src_qpn.to_be_bytes();
        *b = [q[0], q[1], q[2], q[3], 0, s[1], s[2], s[3]];
        Ok(())
    }
}
