// SPDX-License-Identifier: GPL-2.0

//! Base transport header (IBA 9.2), 12 bytes:
//!
//! ```text
//! byte 0      OpCode
//! byte 1      SE(7) MigReq(6) PadCnt(5:4) TVer(3:0)
//! bytes 2-3   P_Key
//! byte 4      FECN(7) BECN(6) reserved(5:0)      <- "resv8a", masked in the ICRC
//! bytes 5-7   DestQP
//! byte 8      AckReq(7) reserved(6:0)
//! bytes 9-11  PSN
//! ```
//!
//! Reserved bits are sent as zero and ignored on receipt.

use super::opcode::{Opcode, BTH_LEN};
use super::psn::Psn;
use super::wire;
use super::{ProtoError, Result};

/// The default (full-membership) partition key, the only one rrxe uses.
pub const DEFAULT_PKEY: u16 = 0xffff;

/// Largest 24-bit queue pair number; also the multicast QPN.
pub const QPN_MASK: u32 = 0x00ff_ffff;

/// The queue pair number addressing every QP attached to a multicast group.
pub const MULTICAST_QPN: u32 = QPN_MASK;

/// Offset of the reserved byte (FECN, BECN, 6 reserved bits) that the ICRC masks.
pub const RESV8A_OFFSET: usize = 4;

/// A base transport header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bth {
    /// Operation code.
    pub opcode: Opcode,
    /// Solicited event requested.
    pub solicited: bool,
    /// Migration request.
    pub mig_req: bool,
    /// Pad bytes after the payload (0..=3).
    pub pad: u8,
    /// Transport header version (0..=15; only 0 is valid in packets).
    pub tver: u8,
    /// Partition key.
    pub pkey: u16,
    /// Forward explicit congestion notification.
    pub fecn: bool,
    /// Backward explicit congestion notification.
    pub becn: bool,
    /// Destination queue pair (24 bits).
    pub dest_qpn: u32,
    /// Acknowledge requested.
    pub ack_req: bool,
    /// Packet sequence number.
    pub psn: Psn,
}

impl Bth {
    /// Encoded length.
    pub const LEN: usize = BTH_LEN;

    /// A header for `opcode` to `dest_qpn` with `psn`: default P_Key, every flag clear,
    /// no pad, version 0.
    pub const fn new(opcode: Opcode, dest_qpn: u32, psn: Psn) -> Self {
        Bth {
            opcode,
            solicited: false,
            mig_req: false,
            pad: 0,
            tver: 0,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qpn,
            ack_req: false,
            psn,
        }
    }

    /// Decodes the first 12 bytes of `buf`. Fails on a short buffer or an unknown opcode;
    /// the version is returned as found (the packet parser rejects non-zero versions).
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let b: &[u8; BTH_LEN] = wire::array(buf)?;
        Ok(Bth {
            opcode: Opcode::from_u8(b[0])?,
            solicited: b[1] & 0x80 != 0,
            mig_req: b[1] & 0x40 != 0,
            pad: (b[1] >> 4) & 0x3,
            tver: b[1] & 0x0f,
            pkey: u16::from_be_bytes([b[2], b[3]]),
            fecn: b[4] & 0x80 != 0,
            becn: b[4] & 0x40 != 0,
            dest_qpn: wire::be32(0, b[5], b[6], b[7]),
            ack_req: b[8] & 0x80 != 0,
            psn: Psn::new(wire::be32(0, b[9], b[10], b[11])),
        })
    }

    /// Encodes into the first 12 bytes of `buf`, reserved bits zero. Fails when `buf` is
    /// short or a field does not fit (pad > 3, version > 15, QPN above 24 bits).
    pub fn write(&self, buf: &mut [u8]) -> Result<()> {
        if self.pad > 3 || self.tver > 0x0f || self.dest_qpn > QPN_MASK {
            return Err(ProtoError::FieldOutOfRange);
        }
        let b: &mut [u8; BTH_LEN] = wire::array_mut(buf)?;
        let qpn = self.dest_qpn.to_be_bytes();
        let psn = self.psn.value().to_be_bytes();
        let pkey = self.pkey.to_be_bytes();
        *b = [
            self.opcode.to_u8(),
            (u8::from(self.solicited) << 7)
                | (u8::from(self.mig_req) << 6)
                | (self.pad << 4)
                | self.tver,
            pkey[0],
            pkey[1],
            (u8::from(self.fecn) << 7) | (u8::from(self.becn) << 6),
            qpn[1],
            qpn[2],
            qpn[3],
            u8::from(self.ack_req) << 7,
            psn[1],
            psn[2],
            psn[3],
        ];
        Ok(())
    }
}
