// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 framing of the generic UDP datagrams of [`crate::ext::net::xmit`]: what a RoCEv2
//! packet's UDP and IP headers hold, as the kernel's `rdma_rxe` puts them on the wire.
//!
//! A RoCEv2 packet goes to the UDP port 4791, IPv4 with Don't Fragment set (the RDMA layer
//! sizes packets by the QP's path MTU; a fragment would be lost to the ICRC). Its UDP
//! checksum is 0: RoCEv2 relies on the ICRC, which the sender writes over the final
//! headers in the `finish` callback of [`TxSkb::send`](crate::ext::net::xmit::TxSkb::send).

use crate::ext::net::xmit::{Flow, IpAddrs};

/// The UDP destination port of RoCEv2 (IANA).
const ROCE_V2_PORT: u16 = 4791;

/// What varies between the headers of RoCEv2 packets.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RoceFlow {
    /// The addresses, which also select the family.
    pub addrs: IpAddrs,
    /// UDP source port (host order), e.g. a hash of the QP number for entropy.
    pub src_port: u16,
    /// IPv4 TOS byte or IPv6 traffic class.
    pub tos: u8,
    /// IPv4 TTL or IPv6 hop limit.
    pub ttl: u8,
    /// IPv6 flow label (low 20 bits; `rdma_rxe` sends 0); ignored for IPv4.
    pub flow_label: u32,
}

impl RoceFlow {
    /// The UDP datagram flow of these packets: to the RoCEv2 port, with DF set on IPv4.
    pub fn flow(&self) -> Flow {
        Flow {
            addrs: self.addrs,
            src_port: self.src_port,
            dst_port: ROCE_V2_PORT,
            tos: self.tos,
            ttl: self.ttl,
            flow_label: self.flow_label,
            df: true,
        }
    }
}
