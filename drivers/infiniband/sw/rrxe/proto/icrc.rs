// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 invariant CRC (IBA 7.8.1 and Annex A17.8).
//!
//! The ICRC is a CRC-32 (the Ethernet polynomial, reflected: `0xEDB88320`) over
//!
//! 1. eight bytes of `0xff` standing for the masked LRH of native InfiniBand,
//! 2. the IP header with its variant fields set to all ones: for IPv4 the type of service
//!    (DSCP and ECN), the TTL and the header checksum; for IPv6 the traffic class, the flow
//!    label and the hop limit,
//! 3. the UDP header with the checksum set to all ones,
//! 4. the BTH with its reserved byte (FECN, BECN and six reserved bits) set to all ones,
//! 5. everything after the BTH up to the ICRC: extension headers, payload and pad.
//!
//! The CRC starts from all ones and the ICRC is its ones' complement, stored least significant
//! byte first (the bit and byte order of the Ethernet FCS): [`to_wire`]. rxe stores the
//! complemented `crc32_le` value as a native `u32` (through a pointer typed `__be32`, without
//! conversion), which is this order on little-endian hosts; a ConnectX-4 Lx capture in the
//! tests has the same order. Step 1 is folded into the start value [`SEED`], the CRC of eight
//! `0xff` bytes from all ones, as rxe does.
//!
//! The CRC engine is supplied by the caller through [`Crc32`], so the kernel can use the
//! crypto API's `"crc32"` (crc32-pclmul where the CPU has it) and the host tests a table
//! implementation; the computation is incremental, for payloads that are not contiguous.

use super::bth::RESV8A_OFFSET;
use super::opcode::BTH_LEN;
use super::packet::ICRC_LEN;
use super::{ProtoError, Result};

/// A CRC-32 engine with the contract of Linux `crc32_le(crc, data, len)`: reflected polynomial
/// `0xEDB88320`, continuing from `crc`, no inversion before or after.
pub trait Crc32 {
    /// Continues the CRC `crc` over `data` and returns the new value.
    fn update(&self, crc: u32, data: &[u8]) -> u32;
}

/// CRC-32 of eight `0xff` bytes (the masked LRH) started from all ones.
pub const SEED: u32 = 0xdebb_20e3;

/// Length of an IPv4 header without options (the only form RoCEv2 uses).
pub const IPV4_HDR_LEN: usize = 20;
/// Length of the IPv6 base header.
pub const IPV6_HDR_LEN: usize = 40;
/// Length of the UDP header.
pub const UDP_HDR_LEN: usize = 8;

/// The network headers in front of the BTH, as received or as they will be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetHeaders<'a> {
    /// IPv4 header (20 bytes, no options) and UDP header.
    Ipv4 {
        /// The IPv4 header; only its first 20 bytes are used.
        ip: &'a [u8],
        /// The UDP header; only its first 8 bytes are used.
        udp: &'a [u8],
    },
    /// IPv6 header (40 bytes, no extension headers) and UDP header.
    Ipv6 {
        /// The IPv6 header; only its first 40 bytes are used.
        ip: &'a [u8],
        /// The UDP header; only its first 8 bytes are used.
        udp: &'a [u8],
    },
}

/// Largest pseudo-header: IPv6, UDP and BTH.
const PSEUDO_MAX: usize = IPV6_HDR_LEN + UDP_HDR_LEN + BTH_LEN;

/// An ICRC computation in progress.
pub struct Icrc<'c, C: Crc32 + ?Sized> {
    engine: &'c C,
    crc: u32,
}

impl<'c, C: Crc32 + ?Sized> Icrc<'c, C> {
    /// Starts an ICRC: covers the masked network headers and the masked BTH (the first 12
    /// bytes of `bth`). Fails when a header is short or of the wrong IP version.
    pub fn begin(engine: &'c C, net: &NetHeaders<'_>, bth: &[u8]) -> Result<Self> {
        let mut pseudo = [0u8; PSEUDO_MAX];
        let (ip_len, udp) = match *net {
            NetHeaders::Ipv4 { ip, udp } => {
                let ip = ip.get(..IPV4_HDR_LEN).ok_or(ProtoError::BadNetworkHeader)?;
                // Version 4 and an IHL of 5 words: RoCEv2 sends no IPv4 options.
                if ip.first() != Some(&0x45) {
                    return Err(ProtoError::BadNetworkHeader);
                }
                let p = pseudo
                    .get_mut(..IPV4_HDR_LEN)
                    .ok_or(ProtoError::BadNetworkHeader)?;
                p.copy_from_slice(ip);
                // Type of service, TTL, header checksum.
                for i in [1, 8, 10, 11] {
                    if let Some(b) = p.get_mut(i) {
                        *b = 0xff;
                    }
                }
                (IPV4_HDR_LEN, udp)
            }
            NetHeaders::Ipv6 { ip, udp } => {
                let ip = ip.get(..IPV6_HDR_LEN).ok_or(ProtoError::BadNetworkHeader)?;
                if ip.first().map(|b| b >> 4) != Some(6) {
                    return Err(ProtoError::BadNetworkHeader);
                }
                let p = pseudo
                    .get_mut(..IPV6_HDR_LEN)
                    .ok_or(ProtoError::BadNetworkHeader)?;
                p.copy_from_slice(ip);
                // Traffic class and flow label (the 28 bits after the version), hop limit.
                if let Some(b) = p.get_mut(0) {
                    *b |= 0x0f;
                }
                for i in [1, 2, 3, 7] {
                    if let Some(b) = p.get_mut(i) {
                        *b = 0xff;
                    }
                }
                (IPV6_HDR_LEN, udp)
            }
        };
        let udp = udp.get(..UDP_HDR_LEN).ok_or(ProtoError::BadNetworkHeader)?;
        let bth = bth.get(..BTH_LEN).ok_or(ProtoError::Truncated)?;
        let udp_end = ip_len + UDP_HDR_LEN;
        let end = udp_end + BTH_LEN;
        let u = pseudo
            .get_mut(ip_len..udp_end)
            .ok_or(ProtoError::BadNetworkHeader)?;
        u.copy_from_slice(udp);
        // UDP checksum.
        u.get_mut(6..8).into_iter().for_each(|c| c.fill(0xff));
        let b = pseudo
            .get_mut(udp_end..end)
            .ok_or(ProtoError::BadNetworkHeader)?;
        b.copy_from_slice(bth);
        if let Some(r) = b.get_mut(RESV8A_OFFSET) {
            *r = 0xff;
        }
        let covered = pseudo.get(..end).ok_or(ProtoError::BadNetworkHeader)?;
        Ok(Icrc {
            engine,
            crc: engine.update(SEED, covered),
        })
    }

    /// Continues over `data` (extension headers, payload, pad, in order).
    pub fn update(&mut self, data: &[u8]) {
        self.crc = self.engine.update(self.crc, data);
    }

    /// Continues over bytes that `f` covers itself: it gets the CRC so far and returns it
    /// continued over them with the same CRC-32 (e.g. over memory it maps piece by piece).
    pub fn extend(&mut self, f: impl FnOnce(u32) -> u32) {
        self.crc = f(self.crc);
    }

    /// The ICRC value (the complemented CRC).
    pub fn finish(self) -> u32 {
        !self.crc
    }
}

/// The four ICRC bytes as they appear on the wire.
pub const fn to_wire(icrc: u32) -> [u8; ICRC_LEN] {
    icrc.to_le_bytes()
}

/// Splits a whole packet (BTH through ICRC) into the covered bytes after the BTH and the
/// ICRC trailer.
fn split(pkt: &[u8]) -> Result<(&[u8], &[u8])> {
    let covered_end = pkt
        .len()
        .checked_sub(ICRC_LEN)
        .filter(|&e| e >= BTH_LEN)
        .ok_or(ProtoError::Truncated)?;
    let rest = pkt.get(BTH_LEN..covered_end).ok_or(ProtoError::Truncated)?;
    let icrc = pkt.get(covered_end..).ok_or(ProtoError::Truncated)?;
    Ok((rest, icrc))
}

/// The ICRC of a whole packet `pkt` (from the BTH through the ICRC, whose four bytes are
/// not covered) sent or received behind `net`.
pub fn compute<C: Crc32 + ?Sized>(engine: &C, net: &NetHeaders<'_>, pkt: &[u8]) -> Result<u32> {
    let (rest, _) = split(pkt)?;
    let mut icrc = Icrc::begin(engine, net, pkt)?;
    icrc.update(rest);
    Ok(icrc.finish())
}

/// Computes the ICRC of the whole packet `pkt` and stores it in its last four bytes.
pub fn generate<C: Crc32 + ?Sized>(engine: &C, net: &NetHeaders<'_>, pkt: &mut [u8]) -> Result<()> {
    let value = compute(engine, net, pkt)?;
    let at = pkt.len().saturating_sub(ICRC_LEN);
    pkt.get_mut(at..)
        .ok_or(ProtoError::Truncated)?
        .copy_from_slice(&to_wire(value));
    Ok(())
}

/// Checks the ICRC stored in the last four bytes of the whole packet `pkt`.
pub fn verify<C: Crc32 + ?Sized>(engine: &C, net: &NetHeaders<'_>, pkt: &[u8]) -> Result<()> {
    let (rest, stored) = split(pkt)?;
    verify_parts(engine, net, pkt, |crc| engine.update(crc, rest), stored)
}

/// Checks the ICRC of a packet that is not in one slice: `head` holds its first bytes,
/// at least the BTH; `rest` continues a CRC over the bytes after the BTH up to the ICRC
/// (as [`Icrc::extend`]); `stored` is the ICRC as received.
pub fn verify_parts<C: Crc32 + ?Sized>(
    engine: &C,
    net: &NetHeaders<'_>,
    head: &[u8],
    rest: impl FnOnce(u32) -> u32,
    stored: &[u8],
) -> Result<()> {
    let mut icrc = Icrc::begin(engine, net, head)?;
    icrc.extend(rest);
    if stored == to_wire(icrc.finish()).as_slice() {
        Ok(())
    } else {
        Err(ProtoError::BadIcrc)
    }
}
