// SPDX-License-Identifier: GPL-2.0

//! What a UD receive reports about the network header of the datagram it took (IBA Vol 1
//! 11.4.1.2, Annex A17.4.5): the header in front of the payload, and the header's type in
//! the work completion.

use super::icrc::{IPV4_HDR_LEN, IPV6_HDR_LEN};

/// Bytes a UD receive buffer must have in front of the payload for the network header (the
/// 40-byte GRH, or the IPv4 header in its last 20 bytes).
pub const UD_GRH_LEN: u64 = 40;

/// The network header of a received UD datagram, as the receive buffer and the completion
/// show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdGrh {
    /// The first [`UD_GRH_LEN`] bytes of the receive buffer: an IPv6 header fills them, an
    /// IPv4 header their last 20 bytes after 20 zero bytes (as rdma_rxe writes them:
    /// libibverbs' `ibv_init_ah_from_wc` reads a first byte without IP version 6 as "IPv4
    /// follows").
    pub area: [u8; UD_GRH_LEN as usize],
    /// The datagram came over IPv4.
    pub ipv4: bool,
}

impl UdGrh {
    /// The UD receive view of network header `ip` (20 bytes for IPv4, 40 for IPv6); `None`
    /// for any other length.
    pub fn new(ip: &[u8]) -> Option<Self> {
        let mut area = [0; UD_GRH_LEN as usize];
        let ipv4 = match ip.len() {
            IPV4_HDR_LEN => true,
            IPV6_HDR_LEN => false,
            _ => return None,
        };
        area.get_mut(IPV6_HDR_LEN - ip.len()..)?.copy_from_slice(ip);
        Some(Self { area, ipv4 })
    }

    /// The RoCE packet type to report in the completion's SL, where a RoCEv2 UD completion
    /// says whether the frame was IPv4 or IPv6 (Annex A17.4.5.1) and the user ABI's work
    /// completion has no other field for it: 2 for IPv4, 1 for IPv6, the L3 header type
    /// values ConnectX devices report there. UCX's UD transport reads it to find the
    /// destination address in the header area and drops the datagram if that is not one
    /// of the device's GIDs.
    pub const fn roce_pkt_type(&self) -> u8 {
        if self.ipv4 {
            2
        } else {
            1
        }
    }
}
