// SPDX-License-Identifier: GPL-2.0

//! ACK extended transport header (IBA 9.3.5), 4 bytes: syndrome (8 bits) and message sequence
//! number (24 bits). Carried by acknowledges, atomic acknowledges and the first, last and only
//! RDMA READ responses.
//!
//! Syndrome: bit 7 reserved (0), bits 6:5 the type, bits 4:0 a value:
//!
//! | type | meaning | value |
//! |---|---|---|
//! | `00` | ACK | credit count (`0x1f`: no credit information, "unlimited") |
//! | `01` | RNR NAK | RNR timer code (`timers::rnr_timeout_us` gives the time) |
//! | `10` | reserved | |
//! | `11` | NAK | NAK code |

use super::wire;
use super::{ProtoError, Result};

/// Largest message sequence number (24 bits).
pub const MSN_MASK: u32 = 0x00ff_ffff;

/// Credit count meaning "no end-to-end credit information" (all ones), as rxe always sends.
pub const CREDITS_UNLIMITED: u8 = 0x1f;

/// A NAK code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NakCode {
    /// PSN sequence error (0): the responder saw a PSN ahead of the expected one.
    PsnSequenceError,
    /// Invalid request (1).
    InvalidRequest,
    /// Remote access error (2).
    RemoteAccessError,
    /// Remote operational error (3).
    RemoteOperationalError,
    /// Invalid RD request (4).
    InvalidRdRequest,
    /// A reserved code (5..=31).
    Reserved(u8),
}

impl NakCode {
    /// Decodes the low five bits of `v`.
    pub const fn from_u8(v: u8) -> NakCode {
        match v & 0x1f {
            0 => NakCode::PsnSequenceError,
            1 => NakCode::InvalidRequest,
            2 => NakCode::RemoteAccessError,
            3 => NakCode::RemoteOperationalError,
            4 => NakCode::InvalidRdRequest,
            c => NakCode::Reserved(c),
        }
    }

    /// The five-bit code.
    pub const fn to_u8(self) -> u8 {
        match self {
            NakCode::PsnSequenceError => 0,
            NakCode::InvalidRequest => 1,
            NakCode::RemoteAccessError => 2,
            NakCode::RemoteOperationalError => 3,
            NakCode::InvalidRdRequest => 4,
            NakCode::Reserved(c) => c & 0x1f,
        }
    }
}

/// A decoded AETH syndrome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// Positive acknowledge with a five-bit credit count.
    Ack {
        /// Credit count code (`CREDITS_UNLIMITED` when not used).
        credits: u8,
    },
    /// Receiver not ready: retry after the time coded by `timer`.
    RnrNak {
        /// Five-bit RNR timer code.
        timer: u8,
    },
    /// Negative acknowledge.
    Nak(NakCode),
    /// A syndrome of the reserved type `10`, or with the reserved bit 7 set (raw value).
    Reserved(u8),
}

impl Syndrome {
    /// The positive acknowledge rxe sends (no credit information).
    pub const ACK: Syndrome = Syndrome::Ack {
        credits: CREDITS_UNLIMITED,
    };

    /// Decodes a syndrome byte. Total: every byte decodes, and [`Syndrome::to_u8`] gives it
    /// back.
    pub const fn from_u8(v: u8) -> Syndrome {
        match v & 0xe0 {
            0x00 => Syndrome::Ack { credits: v & 0x1f },
            0x20 => Syndrome::RnrNak { timer: v & 0x1f },
            0x60 => Syndrome::Nak(NakCode::from_u8(v)),
            _ => Syndrome::Reserved(v),
        }
    }

    /// Encodes the syndrome byte. Out-of-range values are masked to their field; see
    /// [`Syndrome::is_canonical`].
    pub const fn to_u8(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => credits & 0x1f,
            Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1f),
            Syndrome::Nak(code) => 0x60 | code.to_u8(),
            Syndrome::Reserved(v) => v,
        }
    }

    /// True when encoding loses nothing (every field in range, reserved values really
    /// reserved).
    pub fn is_canonical(self) -> bool {
        Syndrome::from_u8(self.to_u8()) == self
    }

    /// True for a positive acknowledge.
    pub const fn is_ack(self) -> bool {
        matches!(self, Syndrome::Ack { .. })
    }
}

/// An ACK extended transport header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Aeth {
    /// Syndrome.
    pub syndrome: Syndrome,
    /// Message sequence number (24 bits).
    pub msn: u32,
}

impl Aeth {
    /// Encoded length.
    pub const LEN: usize = 4;

    /// Decodes the first 4 bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let b: &[u8; Self::LEN] = wire::array(buf)?;
        Ok(Aeth {
            syndrome: Syndrome::from_u8(b[0]),
            msn: wire::be32(0, b[1], b[2], b[3]),
        })
    }

    /// Encodes into the first 4 bytes of `buf`. Fails when the MSN exceeds 24 bits or the
    /// syndrome is not canonical.
    pub fn write(&self, buf: &mut [u8]) -> Result<()> {
        if self.msn > MSN_MASK || !self.syndrome.is_canonical() {
            return Err(ProtoError::FieldOutOfRange);
        }
        let b: &mut [u8; Self::LEN] = wire::array_mut(buf)?;
        let msn = self.msn.to_be_bytes();
        *b = [self.syndrome.to_u8(), msn[1], msn[2], msn[3]];
        Ok(())
    }
}
