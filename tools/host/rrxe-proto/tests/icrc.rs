// SPDX-License-Identifier: GPL-2.0

//! ICRC: CRC engine, real-capture vectors, masking, incremental computation.
//!
//! Provenance of the vectors:
//! - `CX4_CNP`: a RoCEv2 CNP captured on a Mellanox ConnectX-4 Lx, published as a hex dump
//!   in scapy's RoCE regression tests (secdev/scapy, `test/contrib/roce.uts`, "RoCE CNP
//!   captured on ConnectX-4 Lx"). The ICRC bytes on the wire are `82 fd 00 2a`. Hardware
//!   computed this ICRC, so it checks the masking and the stored byte order independently of
//!   rxe.
//! - `UC_SEND`: the UC SEND Only packet of the same test file (Mellanox MAC addresses,
//!   loopback 192.168.0.7); its ICRC `78 f3 53 f3` is asserted there (computed by scapy's
//!   independent ICRC code: zlib CRC-32 over the masked pseudo-packet).
//! - `V6_SEND`: an IPv6 RC SEND Only built for this test; its ICRC was computed with
//!   Python's `zlib.crc32` over `ff * 8 | masked IPv6 | masked UDP | masked BTH | payload |
//!   pad`, stored little-endian.

use rrxe_proto::proto::icrc::{self, Crc32, Icrc, NetHeaders, SEED};
use rrxe_proto::proto::packet::Packet;
use rrxe_proto::proto::ProtoError;
use rrxe_proto::TableCrc32;

/// Bit-at-a-time CRC-32, reflected `0xEDB88320`, no inversion: a second engine, independent
/// of the table one.
struct BitCrc32;

impl Crc32 for BitCrc32 {
    fn update(&self, mut crc: u32, data: &[u8]) -> u32 {
        for &b in data {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        crc
    }
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Ethernet frame of the ConnectX-4 Lx CNP (see the module documentation).
const CX4_CNP: &str = "e41d 2dab 2bc2 7cfe 9064 3b32 0800 45c2
    003c 718c 4000 4011 9161 0a00 1101 0a00
    1201 0000 12b7 0028 0000 8100 ffff 4000
    0118 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 82fd 002a";

/// IPv4 + UDP + IB packet of scapy's UC SEND Only example.
const UC_SEND: &str = "4501 0040 0478 4000 4011 b4d5 c0a8 0007 c0a8 0007
    c000 12b7 002c aca2
    2460 ffff 0000 00d3 00cf 1710
    4630 818b e289 35d9 0e9a 9550 5401 be88 5e50 0000
    78f3 53f3";

/// IPv6 + UDP + IB packet (RC SEND Only, 5-byte payload, pad 3).
const V6_SEND: &str = "6021 2345 0020 1140
    fe80 0000 0000 0000 0000 0000 0000 0001
    fe80 0000 0000 0000 0000 0000 0000 0002
    c123 12b7 0020 1234
    0430 ffff 0000 0011 8000 002a
    6865 6c6c 6f00 0000
    db58 c5b6";

#[test]
fn engines_agree_with_crc32_check_value() {
    // The CRC-32 check value: !crc32_le(!0, "123456789") == 0xCBF43926.
    for e in [&TableCrc32 as &dyn Crc32, &BitCrc32] {
        assert_eq!(!e.update(!0, b"123456789"), 0xcbf4_3926);
        assert_eq!(e.update(!0, &[0xff; 8]), SEED);
    }
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
    assert_eq!(
        TableCrc32.update(0x1234_5678, &data),
        BitCrc32.update(0x1234_5678, &data)
    );
}

#[test]
fn connectx4_cnp_capture() {
    let frame = hex(CX4_CNP);
    let (ip, rest) = frame[14..].split_at(20);
    let (udp, ib) = rest.split_at(8);
    assert_eq!(ib.len(), 32);
    assert_eq!(&ib[28..], &[0x82, 0xfd, 0x00, 0x2a]);
    let net = NetHeaders::Ipv4 { ip, udp };
    for e in [&TableCrc32 as &dyn Crc32, &BitCrc32] {
        assert_eq!(icrc::compute(e, &net, ib).unwrap(), 0x2a00_fd82);
        icrc::verify(e, &net, ib).unwrap();
    }
    // The CNP opcode (0x81) is not one rrxe handles: the ICRC check does not need to know it.
    assert_eq!(Packet::parse(ib), Err(ProtoError::UnknownOpcode(0x81)));
}

#[test]
fn scapy_uc_send_vector() {
    let pkt = hex(UC_SEND);
    let (ip, rest) = pkt.split_at(20);
    let (udp, ib) = rest.split_at(8);
    let net = NetHeaders::Ipv4 { ip, udp };
    icrc::verify(&TableCrc32, &net, ib).unwrap();
    let p = Packet::parse(ib).unwrap();
    assert_eq!(p.hdr.bth.pad, 2);
    assert_eq!(p.payload.len(), 18);
    // Generating over a zeroed ICRC gives the same bytes.
    let mut copy = ib.to_vec();
    let n = copy.len();
    copy[n - 4..].fill(0);
    icrc::generate(&TableCrc32, &net, &mut copy).unwrap();
    assert_eq!(copy, ib);
}

#[test]
fn ipv6_vector() {
    let pkt = hex(V6_SEND);
    let (ip, rest) = pkt.split_at(40);
    let (udp, ib) = rest.split_at(8);
    let net = NetHeaders::Ipv6 { ip, udp };
    icrc::verify(&TableCrc32, &net, ib).unwrap();
    icrc::verify(&BitCrc32, &net, ib).unwrap();
    assert_eq!(Packet::parse(ib).unwrap().payload, b"hello");
}

/// Flips every bit of the IP, UDP and IB bytes in turn; the ICRC must change exactly for
/// the bits it covers.
fn check_coverage(pkt: &[u8], ip_len: usize, masked: &[usize]) {
    let (ip, rest) = pkt.split_at(ip_len);
    let (udp, ib) = rest.split_at(8);
    let make = |ip: &[u8], udp: &[u8], ib: &[u8]| -> Result<(), ProtoError> {
        let net = if ip_len == 20 {
            NetHeaders::Ipv4 { ip, udp }
        } else {
            NetHeaders::Ipv6 { ip, udp }
        };
        icrc::verify(&TableCrc32, &net, ib)
    };
    make(ip, udp, ib).unwrap();
    let ib_covered = ib.len() - 4;
    for byte in 0..pkt.len() {
        for bit in 0..8 {
            let mut p = pkt.to_vec();
            p[byte] ^= 1 << bit;
            // Version bits make the header invalid rather than changing the CRC.
            if byte == 0 && (bit >= 4 || ip_len == 20) {
                continue;
            }
            let (ip, rest) = p.split_at(ip_len);
            let (udp, ib) = rest.split_at(8);
            let r = make(ip, udp, ib);
            let in_icrc = byte >= ip_len + 8 + ib_covered;
            let is_masked = masked.contains(&byte) || (byte == 0 && ip_len == 40);
            if is_masked {
                assert_eq!(r, Ok(()), "byte {byte} bit {bit} should be masked");
            } else {
                assert_eq!(
                    r,
                    Err(ProtoError::BadIcrc),
                    "byte {byte} bit {bit} (in ICRC: {in_icrc})"
                );
            }
        }
    }
}

#[test]
fn ipv4_masked_fields() {
    // TOS (1), TTL (8), header checksum (10, 11), UDP checksum (26, 27), BTH byte 4 (32).
    check_coverage(&hex(UC_SEND), 20, &[1, 8, 10, 11, 26, 27, 32]);
}

#[test]
fn ipv6_masked_fields() {
    // Traffic class and flow label (low nibble of 0, 1..3), hop limit (7), UDP checksum
    // (46, 47), BTH byte 4 (52).
    check_coverage(&hex(V6_SEND), 40, &[1, 2, 3, 7, 46, 47, 52]);
}

#[test]
fn incremental_equals_one_shot() {
    let pkt = hex(UC_SEND);
    let (ip, rest) = pkt.split_at(20);
    let (udp, ib) = rest.split_at(8);
    let net = NetHeaders::Ipv4 { ip, udp };
    let whole = icrc::compute(&TableCrc32, &net, ib).unwrap();
    let covered = &ib[12..ib.len() - 4];
    for cut in 0..=covered.len() {
        let mut c = Icrc::begin(&TableCrc32, &net, ib).unwrap();
        c.update(&covered[..cut]);
        c.update(&[]);
        c.update(&covered[cut..]);
        assert_eq!(c.finish(), whole);
    }
    assert_eq!(icrc::to_wire(whole), [0x78, 0xf3, 0x53, 0xf3]);
}

#[test]
fn bad_network_headers() {
    let pkt = hex(UC_SEND);
    let (ip, rest) = pkt.split_at(20);
    let (udp, ib) = rest.split_at(8);
    let check = |net: NetHeaders<'_>| icrc::compute(&TableCrc32, &net, ib);
    assert_eq!(
        check(NetHeaders::Ipv4 { ip: &ip[..19], udp }),
        Err(ProtoError::BadNetworkHeader)
    );
    assert_eq!(
        check(NetHeaders::Ipv4 { ip, udp: &udp[..7] }),
        Err(ProtoError::BadNetworkHeader)
    );
    let mut opts = ip.to_vec();
    opts[0] = 0x46; // IHL 6: options
    assert_eq!(
        check(NetHeaders::Ipv4 { ip: &opts, udp }),
        Err(ProtoError::BadNetworkHeader)
    );
    let v6 = [0x45u8; 40];
    assert_eq!(
        check(NetHeaders::Ipv6 { ip: &v6, udp }),
        Err(ProtoError::BadNetworkHeader)
    );
    let net = NetHeaders::Ipv4 { ip, udp };
    for n in 0..16 {
        assert_eq!(
            icrc::compute(&TableCrc32, &net, &ib[..n]),
            Err(ProtoError::Truncated),
            "{n}"
        );
    }
    let mut short = [0u8; 3];
    assert_eq!(
        icrc::generate(&TableCrc32, &net, &mut short),
        Err(ProtoError::Truncated)
    );
}
