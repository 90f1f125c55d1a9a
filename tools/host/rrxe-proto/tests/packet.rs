// SPDX-License-Identifier: GPL-2.0

//! Whole-packet build and parse.

use rrxe_proto::proto::aeth::{Aeth, Syndrome};
use rrxe_proto::proto::atomic::{AtomicAckEth, AtomicEth};
use rrxe_proto::proto::bth::Bth;
use rrxe_proto::proto::deth::Deth;
use rrxe_proto::proto::flush::Feth;
use rrxe_proto::proto::icrc::{self, Crc32, Icrc, NetHeaders};
use rrxe_proto::proto::ieth::Ieth;
use rrxe_proto::proto::immdt::ImmDt;
use rrxe_proto::proto::opcode::{HeaderSet, Opcode, BTH_LEN};
use rrxe_proto::proto::packet::{encode, pad_len, Headers, Layout, Packet, ICRC_LEN, MAX_PAYLOAD};
use rrxe_proto::proto::psn::Psn;
use rrxe_proto::proto::reth::Reth;
use rrxe_proto::proto::ProtoError;
use rrxe_proto::TableCrc32;

/// Headers for `op` with every extension header it needs, filled with recognisable values.
fn full_headers(op: Opcode) -> Headers {
    let set = op.headers();
    let mut h = Headers::new(Bth::new(op, 0x00ab_cdef, Psn::new(0x12_3456)));
    if set.contains(HeaderSet::FETH) {
        h.feth = Some(Feth {
            placement: 3,
            selectivity: 1,
        });
    }
    if set.contains(HeaderSet::RETH) {
        h.reth = Some(Reth {
            va: 0x1000,
            rkey: 0x77,
            dma_len: 100,
        });
    }
    if set.contains(HeaderSet::DETH) {
        h.deth = Some(Deth {
            qkey: 0x1111_2222,
            src_qpn: 0x33,
        });
    }
    if set.contains(HeaderSet::ATOMIC_ETH) {
        h.atomic_eth = Some(AtomicEth {
            va: 0x2000,
            rkey: 9,
            swap_add: 1,
            compare: 2,
        });
    }
    if set.contains(HeaderSet::AETH) {
        h.aeth = Some(Aeth {
            syndrome: Syndrome::ACK,
            msn: 42,
        });
    }
    if set.contains(HeaderSet::ATOMIC_ACK_ETH) {
        h.atomic_ack = Some(AtomicAckEth { orig: 0x55 });
    }
    if set.contains(HeaderSet::IMMDT) {
        h.immdt = Some(ImmDt { imm: 0xcafe_f00d });
    }
    if set.contains(HeaderSet::IETH) {
        h.ieth = Some(Ieth { rkey: 0x4242 });
    }
    h
}

#[test]
fn every_opcode_round_trips() {
    for op in Opcode::ALL {
        let sizes: &[usize] = if op.has_payload() {
            &[0, 1, 2, 3, 4, 5, 255, 256, 4095, 4096]
        } else {
            &[0]
        };
        for &n in sizes {
            let h = full_headers(op);
            let payload: Vec<u8> = (0..n).map(|i| (i * 13) as u8).collect();
            let mut buf = vec![0xeeu8; n + 100];
            let lay = encode(&h, &payload, &mut buf).unwrap();
            assert_eq!(lay.header_len, op.header_len());
            assert_eq!(lay.pad, pad_len(n));
            assert_eq!(lay.total_len % 4, 0, "{op:?} {n}");
            assert_eq!(lay.total_len, op.header_len() + n + lay.pad + ICRC_LEN);
            // Pad and ICRC placeholder are zero.
            assert!(buf[lay.pad_range().start..lay.total_len]
                .iter()
                .all(|&b| b == 0));
            assert_eq!(lay.icrc_offset(), lay.total_len - 4);
            let p = Packet::parse(&buf[..lay.total_len]).unwrap();
            let mut expect = h;
            expect.bth.pad = lay.pad as u8;
            assert_eq!(p.hdr, expect, "{op:?}");
            assert_eq!(p.payload, &payload[..]);
            assert_eq!(p.opcode(), op);
            assert_eq!(p.psn(), Psn::new(0x12_3456));
        }
    }
}

#[test]
fn header_order_on_the_wire() {
    // RDMA WRITE Only with immediate: BTH, RETH, ImmDt.
    let h = full_headers(Opcode::RcWriteOnlyImm);
    let mut buf = [0u8; 64];
    let lay = h.write(0, &mut buf).unwrap();
    assert_eq!(lay.header_len, 32);
    assert_eq!(&buf[12..20], &0x1000u64.to_be_bytes());
    assert_eq!(&buf[28..32], &0xcafe_f00du32.to_be_bytes());
    // Atomic Acknowledge: BTH, AETH, AtomicAckETH.
    let h = full_headers(Opcode::RcAtomicAck);
    h.write(0, &mut buf).unwrap();
    assert_eq!(&buf[12..16], &[0x1f, 0, 0, 42]);
    assert_eq!(&buf[16..24], &0x55u64.to_be_bytes());
    // FLUSH: BTH, FETH, RETH.
    let h = full_headers(Opcode::RcFlush);
    h.write(0, &mut buf).unwrap();
    assert_eq!(&buf[12..16], &[0, 0, 0, 0x13]);
    assert_eq!(&buf[16..24], &0x1000u64.to_be_bytes());
    // UD SEND Only with immediate: BTH, DETH, ImmDt.
    let h = full_headers(Opcode::UdSendOnlyImm);
    h.write(0, &mut buf).unwrap();
    assert_eq!(&buf[12..16], &0x1111_2222u32.to_be_bytes());
    assert_eq!(&buf[20..24], &0xcafe_f00du32.to_be_bytes());
}

#[test]
fn header_mismatch_rejected() {
    let mut buf = [0u8; 128];
    let mut h = full_headers(Opcode::RcWriteFirst);
    h.reth = None;
    assert_eq!(h.write(8, &mut buf), Err(ProtoError::HeaderMismatch));
    let mut h = full_headers(Opcode::RcSendOnly);
    h.immdt = Some(ImmDt { imm: 1 });
    assert_eq!(h.write(8, &mut buf), Err(ProtoError::HeaderMismatch));
    let h = full_headers(Opcode::RcAck);
    assert_eq!(h.write(1, &mut buf), Err(ProtoError::UnexpectedPayload));
    let h = full_headers(Opcode::RcSendOnly);
    let mut big = vec![0u8; 5000];
    assert_eq!(
        h.write(MAX_PAYLOAD + 1, &mut big),
        Err(ProtoError::PayloadTooLong)
    );
    // Too small a buffer, by one byte.
    let lay = Layout::new(Opcode::RcSendOnly, 10).unwrap();
    let mut small = vec![0u8; lay.total_len - 1];
    assert_eq!(h.write(10, &mut small), Err(ProtoError::BufferTooSmall));
    // A field out of range.
    let mut h = full_headers(Opcode::RcSendOnly);
    h.bth.dest_qpn = 1 << 24;
    assert_eq!(h.write(0, &mut buf), Err(ProtoError::FieldOutOfRange));
}

#[test]
fn parse_length_checks() {
    let h = full_headers(Opcode::RcSendOnly);
    let mut buf = [0u8; 64];
    let lay = encode(&h, b"abcde", &mut buf).unwrap();
    let pkt = &buf[..lay.total_len];
    assert_eq!(lay.total_len, 12 + 5 + 3 + 4);
    // Any truncation is detected (a shorter packet still long enough for the headers, pad
    // and ICRC parses with a shorter payload, so check the error cases only).
    for n in 0..16 + 3 {
        let r = Packet::parse(&pkt[..n]);
        assert_eq!(r, Err(ProtoError::Truncated), "{n}");
    }
    // Pad larger than what follows the headers.
    let mut p = [0u8; 16];
    h.write(0, &mut p).unwrap();
    p[1] |= 0x30;
    assert_eq!(Packet::parse(&p), Err(ProtoError::Truncated));
    // Another pad count just moves the end of the payload.
    let mut m = pkt.to_vec();
    m[1] = (m[1] & !0x30) | 0x20;
    assert_eq!(Packet::parse(&m).unwrap().payload, b"abcde\0");
    // Lengths that are not multiples of four.
    let mut longer = pkt.to_vec();
    longer.push(0);
    assert_eq!(Packet::parse(&longer), Err(ProtoError::Misaligned));
    // Version other than 0.
    let mut v = pkt.to_vec();
    v[1] |= 0x01;
    assert_eq!(Packet::parse(&v), Err(ProtoError::BadTransportVersion(1)));
    // Payload after an opcode without one.
    let ack = full_headers(Opcode::RcAck);
    let mut a = [0u8; 24];
    ack.write(0, &mut a).unwrap();
    assert!(Packet::parse(&a[..20]).is_ok());
    assert_eq!(Packet::parse(&a), Err(ProtoError::UnexpectedPayload));
    assert_eq!(Packet::parse(&a[..19]), Err(ProtoError::Truncated));
    // Payload above 4096 bytes.
    let mut big = vec![0u8; 12 + 4100 + 4];
    h.write(0, &mut big).unwrap();
    big[1] &= !0x30;
    assert_eq!(Packet::parse(&big), Err(ProtoError::PayloadTooLong));
    let mut max = vec![0u8; 12 + 4096 + 4];
    h.write(0, &mut max).unwrap();
    assert_eq!(Packet::parse(&max).unwrap().payload.len(), 4096);
}

#[test]
fn layout_values() {
    let l = Layout::new(Opcode::UdSendOnly, 7).unwrap();
    assert_eq!(
        (l.header_len, l.payload_len, l.pad, l.total_len),
        (20, 7, 1, 32)
    );
    assert_eq!(l.payload_range(), 20..27);
    assert_eq!(l.pad_range(), 27..28);
    assert_eq!(
        Layout::new(Opcode::RcReadRequest, 1),
        Err(ProtoError::UnexpectedPayload)
    );
    for n in 0..16 {
        assert_eq!((n + pad_len(n)) % 4, 0);
        assert!(pad_len(n) < 4);
    }
}

/// A packet sent by reference to its payload: the headers written alone (`write_head`)
/// into a buffer of their length, the payload in pieces elsewhere, the ICRC continued over
/// the pieces with `Icrc::extend`, then over the pad: the same headers and ICRC as the
/// packet built whole.
#[test]
fn headers_alone_and_icrc_over_pieces() {
    let ip = [
        0x45u8, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 9, 0, 1, 10, 9, 0, 2,
    ];
    let udp = [0xc0u8, 0x01, 0x12, 0xb7, 0, 0, 0, 0];
    let net = NetHeaders::Ipv4 { ip: &ip, udp: &udp };
    for op in Opcode::ALL.into_iter().filter(|o| o.has_payload()) {
        for n in [1usize, 3, 1024, 4093, 4096] {
            let h = full_headers(op);
            let payload: Vec<u8> = (0..n).map(|i| (i * 7 + 1) as u8).collect();
            let mut buf = vec![0u8; n + 100];
            let lay = encode(&h, &payload, &mut buf).unwrap();
            let whole = &mut buf[..lay.total_len];
            icrc::generate(&TableCrc32, &net, whole).unwrap();

            let mut head = vec![0xeeu8; lay.header_len];
            assert_eq!(h.write_head(n, &mut head), Ok(lay));
            assert_eq!(head[..], whole[..lay.header_len], "{op:?} {n}");
            let mut crc = Icrc::begin(&TableCrc32, &net, &head).unwrap();
            crc.update(&head[BTH_LEN..]);
            for piece in payload.chunks(1000) {
                crc.extend(|c| TableCrc32.update(c, piece));
            }
            crc.update(&[0u8; 3][..lay.pad]);
            assert_eq!(
                icrc::to_wire(crc.finish())[..],
                whole[lay.icrc_offset()..],
                "{op:?} {n}"
            );
        }
    }
    let h = full_headers(Opcode::RcSendOnly);
    assert_eq!(
        h.write_head(8, &mut [0u8; 11]),
        Err(ProtoError::BufferTooSmall)
    );
}
