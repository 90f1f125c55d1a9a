// SPDX-License-Identifier: GPL-2.0

//! Path MTU: the largest payload of one packet (`enum ib_mtu`).

use super::{ProtoError, Result};

/// Bytes rxe reserves for Ethernet, IP, UDP, transport headers and ICRC when deriving the
/// port's MTU from the netdev MTU (`RXE_MAX_HDR_LENGTH`).
pub const MAX_HDR_OVERHEAD: u32 = 80;

/// An IBA path MTU, with the discriminants of `enum ib_mtu`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Mtu {
    /// 256 bytes.
    Mtu256 = 1,
    /// 512 bytes.
    Mtu512 = 2,
    /// 1024 bytes.
    Mtu1024 = 3,
    /// 2048 bytes.
    Mtu2048 = 4,
    /// 4096 bytes.
    Mtu4096 = 5,
}

impl Mtu {
    /// Every MTU, smallest first.
    pub const ALL: [Mtu; 5] = [
        Mtu::Mtu256,
        Mtu::Mtu512,
        Mtu::Mtu1024,
        Mtu::Mtu2048,
        Mtu::Mtu4096,
    ];

    /// Payload bytes per packet.
    pub const fn bytes(self) -> u32 {
        128 << (self as u32)
    }

    /// Decodes an `enum ib_mtu` value (1..=5).
    pub const fn from_ib(v: u32) -> Result<Mtu> {
        Ok(match v {
            1 => Mtu::Mtu256,
            2 => Mtu::Mtu512,
            3 => Mtu::Mtu1024,
            4 => Mtu::Mtu2048,
            5 => Mtu::Mtu4096,
            _ => return Err(ProtoError::FieldOutOfRange),
        })
    }

    /// The `enum ib_mtu` value.
    pub const fn to_ib(self) -> u32 {
        self as u32
    }

    /// The largest MTU whose packets fit in `bytes` bytes of IBA payload, if any.
    pub const fn fitting(bytes: u32) -> Option<Mtu> {
        Some(if bytes >= 4096 {
            Mtu::Mtu4096
        } else if bytes >= 2048 {
            Mtu::Mtu2048
        } else if bytes >= 1024 {
            Mtu::Mtu1024
        } else if bytes >= 512 {
            Mtu::Mtu512
        } else if bytes >= 256 {
            Mtu::Mtu256
        } else {
            return None;
        })
    }

    /// The port MTU for a netdev MTU, as rxe derives it (1500 gives 1024, 9000 gives 4096).
    pub const fn for_netdev_mtu(netdev_mtu: u32) -> Option<Mtu> {
        Mtu::fitting(netdev_mtu.saturating_sub(MAX_HDR_OVERHEAD))
    }
}
