// SPDX-License-Identifier: GPL-2.0

//! Whether a received packet may reach the QP its BTH names (IBA 9.6.1 and 10.9.3, rxe's
//! `check_type_state` (its transport half: the driver checks the QP's state),
//! `check_addr` and `check_keys`), and whether a response acknowledges PSNs the requester
//! actually has outstanding.
//!
//! A connected QP (RC, UC) takes packets only from its peer: the source IP address must be
//! the destination GID of the QP's address vector and the destination IP address its
//! source GID (an IPv4 address compares as its IPv4-mapped GID), and the UDP destination
//! port must be RoCEv2's. A datagram QP (UD, GSI) takes packets from anyone, but only
//! those addressed to one of the device's GIDs (rxe's `rxe_chk_dgid`: not a broadcast,
//! nor an address of another interface of the host), or to a multicast address with the
//! multicast QPN (which reached the QP as a member of that group; rxe also lets one reach
//! the QP its BTH names, so a datagram to all hosts reaches QP1). Every QP checks the
//! P_Key (rrxe's P_Key table holds the default P_Key only), a datagram QP the Q_Key. The
//! QPN alone proves nothing: it is 24 bits an attacker can learn or guess.
//!
//! An acknowledge, NAK, RDMA READ response or atomic acknowledge must carry a PSN from the
//! oldest outstanding WQE's first PSN up to the last PSN sent (for an RDMA READ, the
//! last of its response PSNs): [`response_place`]. A PSN sequence error NAK may also
//! name the PSN after the last one sent (the responder has everything). Anything else
//! acknowledges nothing the requester has outstanding and is dropped: a stale duplicate
//! when its PSN lies in the half of the PSN space behind (the answer to an ask repeated,
//! which still shows that the responder is working), else a forgery.

use super::aeth::{NakCode, Syndrome};
use super::bth::{Bth, DEFAULT_PKEY, MULTICAST_QPN};
use super::deth::Deth;
use super::icrc::{IPV4_HDR_LEN, IPV6_HDR_LEN, UDP_HDR_LEN};
use super::opcode::{Transport, BTH_LEN};
use super::psn::Psn;
use super::verbs::QpType;

/// The UDP port of RoCEv2 (IANA).
pub const ROCE_V2_PORT: u16 = 4791;

/// What the QP expects of its packets, from its attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpKeys {
    /// The QP's type.
    pub qp_type: QpType,
    /// The address vector's source GID (this end) and destination GID (the peer); only
    /// RC and UC use them.
    pub sgid: [u8; 16],
    /// See `sgid`.
    pub dgid: [u8; 16],
    /// The QP's Q_Key (the GSI QP's is `0x8001_0000`); only UD and GSI use it.
    pub qkey: u32,
}

/// Why a packet was refused; each has its own drop counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The opcode is not of the QP's transport (RC, UC or UD).
    Transport,
    /// The IP addresses or the UDP port are not those of the QP's path; for a datagram
    /// QP, the destination is none of the device's GIDs, or a multicast address without
    /// the multicast QPN (or the multicast QPN without one).
    Address,
    /// The P_Key does not match.
    PKey,
    /// The Q_Key does not match.
    QKey,
    /// The transport headers do not decode.
    Header,
}

/// Whether two P_Keys match (IBA 10.9.3, rxe's `pkey_match`): the same 15-bit key, not
/// zero, and at least one of them a full member.
pub const fn pkey_match(a: u16, b: u16) -> bool {
    let (ka, kb) = (a & 0x7fff, b & 0x7fff);
    ka != 0 && ka == kb && (a & 0x8000 != 0 || b & 0x8000 != 0)
}

/// An IPv4 address as its IPv4-mapped GID (`::ffff:a.b.c.d`).
fn v4_mapped(a: &[u8]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    if let (Some(dst), Some(src)) = (g.get_mut(12..16), a.get(..4)) {
        dst.copy_from_slice(src);
    }
    g
}

/// The source and destination addresses of an IPv4 (20-byte) or IPv6 (40-byte) header, as
/// GIDs; `None` for any other length.
pub fn ip_gids(ip: &[u8]) -> Option<([u8; 16], [u8; 16])> {
    match ip.len() {
        IPV4_HDR_LEN => Some((v4_mapped(ip.get(12..16)?), v4_mapped(ip.get(16..20)?))),
        IPV6_HDR_LEN => Some((
            ip.get(8..24)?.try_into().ok()?,
            ip.get(24..40)?.try_into().ok()?,
        )),
        _ => None,
    }
}

/// Whether a packet with IP header `ip` and UDP header `udp` comes from the peer of a QP
/// whose address vector has `sgid` (this end) and `dgid` (the peer), to RoCEv2's port.
pub fn from_peer(ip: &[u8], udp: &[u8], sgid: &[u8; 16], dgid: &[u8; 16]) -> bool {
    let port_ok = udp.len() >= UDP_HDR_LEN
        && matches!(udp.get(2..4), Some(p) if u16::from_be_bytes([p[0], p[1]]) == ROCE_V2_PORT);
    port_ok && matches!(ip_gids(ip), Some((src, dst)) if src == *dgid && dst == *sgid)
}

/// Whether `gid` is a multicast address: IPv6's `ff00::/8`, or an IPv4-mapped
/// `224.0.0.0/4` (rdma_is_multicast_addr).
pub fn is_multicast_gid(gid: &[u8; 16]) -> bool {
    let (prefix, v4) = gid.split_at(12);
    gid[0] == 0xff
        || (prefix == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
            && matches!(v4.first(), Some(b) if b & 0xf0 == 0xe0))
}

/// Checks a packet received for a QP with `keys`, in rxe's order: transport, addresses,
/// P_Key, Q_Key. `head` holds its transport headers (from the BTH on). `ours` tells
/// whether a GID is one of the device's now; it is asked only for a datagram QP's packet
/// to a unicast address and QPN (a connected QP's destination must be its own source
/// GID).
pub fn admit(
    keys: &QpKeys,
    ip: &[u8],
    udp: &[u8],
    head: &[u8],
    ours: impl FnOnce(&[u8; 16]) -> bool,
) -> Result<(), Refusal> {
    let bth = Bth::parse(head).map_err(|_| Refusal::Header)?;
    if bth.opcode.transport() != keys.qp_type.transport() {
        return Err(Refusal::Transport);
    }
    let connected = matches!(keys.qp_type.transport(), Transport::Rc | Transport::Uc);
    if connected {
        if !from_peer(ip, udp, &keys.sgid, &keys.dgid) {
            return Err(Refusal::Address);
        }
    } else {
        let to_group = bth.dest_qpn == MULTICAST_QPN;
        let Some((_, dst)) = ip_gids(ip) else {
            return Err(Refusal::Address);
        };
        let for_us = if is_multicast_gid(&dst) {
            to_group
        } else {
            !to_group && ours(&dst)
        };
        if !for_us {
            return Err(Refusal::Address);
        }
    }
    if !pkey_match(bth.pkey, DEFAULT_PKEY) {
        return Err(Refusal::PKey);
    }
    if !connected {
        // A UD opcode's headers are the BTH, the DETH and perhaps immediate data: its
        // DETH follows the BTH.
        let deth = head.get(BTH_LEN..).map(Deth::parse);
        let Some(Ok(deth)) = deth else {
            return Err(Refusal::Header);
        };
        if deth.qkey != keys.qkey {
            return Err(Refusal::QKey);
        }
    }
    Ok(())
}

/// Where a response's PSN lies for the requester ([`response_place`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponsePlace {
    /// In the window: it answers a PSN outstanding.
    Outstanding,
    /// In the half of the PSN space behind the window: a stale duplicate, an answer to a
    /// PSN completed already (to an ask sent again, or replayed late by the responder).
    Stale,
    /// Ahead of what was sent: it answers nothing.
    Ahead,
}

/// Where a response with `psn` and `syndrome` lies: in the requester's window from
/// `oldest`, the first PSN of the oldest outstanding WQE (the next PSN to send if none is
/// outstanding), to before `sent_end`, the PSN after the last one sent (after the last
/// response PSN of an RDMA READ sent), where a PSN sequence error NAK may name `sent_end`
/// itself; behind it (serial-number order); or ahead of it.
pub fn response_place(
    psn: Psn,
    syndrome: Option<Syndrome>,
    oldest: Psn,
    sent_end: Psn,
) -> ResponsePlace {
    let span = sent_end.distance_from(oldest);
    let off = psn.distance_from(oldest);
    if off < span
        || (off == span && matches!(syndrome, Some(Syndrome::Nak(NakCode::PsnSequenceError))))
    {
        ResponsePlace::Outstanding
    } else if psn.is_before(oldest) {
        ResponsePlace::Stale
    } else {
        ResponsePlace::Ahead
    }
}
