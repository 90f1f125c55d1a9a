// SPDX-License-Identifier: GPL-2.0

//! Admission of received packets: transport, addresses and UDP port, P_Key, Q_Key; the
//! response PSN window.

use rrxe_proto::proto::admit::*;
use rrxe_proto::proto::aeth::{Aeth, NakCode, Syndrome};
use rrxe_proto::proto::bth::{Bth, MULTICAST_QPN};
use rrxe_proto::proto::deth::Deth;
use rrxe_proto::proto::opcode::Opcode;
use rrxe_proto::proto::packet::Headers;
use rrxe_proto::proto::psn::{Psn, PSN_MASK};
use rrxe_proto::proto::verbs::QpType;

const A4: [u8; 4] = [10, 9, 0, 1];
const B4: [u8; 4] = [10, 9, 0, 2];
const A6: [u8; 16] = [0x20; 16];
const B6: [u8; 16] = [0x30; 16];

fn mapped(a: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&a);
    g
}

/// The device's GIDs in these tests: B4 and B6.
fn ours(gid: &[u8; 16]) -> bool {
    *gid == mapped(B4) || *gid == B6
}

/// A connected QP's destination must be its own source GID: the GID table is not asked.
fn not_asked(_: &[u8; 16]) -> bool {
    unreachable!("a connected QP asked the GID table")
}

fn ipv4(src: [u8; 4], dst: [u8; 4]) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[12..16].copy_from_slice(&src);
    h[16..20].copy_from_slice(&dst);
    h
}

fn udp(dport: u16) -> [u8; 8] {
    let mut u = [0u8; 8];
    u[0..2].copy_from_slice(&0xc000u16.to_be_bytes());
    u[2..4].copy_from_slice(&dport.to_be_bytes());
    u
}

/// An encoded packet with `opcode`, `pkey` and, for UD, a DETH with `qkey`.
fn packet(opcode: Opcode, pkey: u16, qkey: u32) -> Vec<u8> {
    packet_to(17, opcode, pkey, qkey)
}

fn packet_to(qpn: u32, opcode: Opcode, pkey: u16, qkey: u32) -> Vec<u8> {
    let mut bth = Bth::new(opcode, qpn, Psn::new(5));
    bth.pkey = pkey;
    let mut h = Headers::new(bth);
    let set = opcode.headers();
    if set.contains(rrxe_proto::proto::opcode::HeaderSet::DETH) {
        h.deth = Some(Deth { qkey, src_qpn: 3 });
    }
    if set.contains(rrxe_proto::proto::opcode::HeaderSet::AETH) {
        h.aeth = Some(Aeth {
            syndrome: Syndrome::ACK,
            msn: 1,
        });
    }
    if set.contains(rrxe_proto::proto::opcode::HeaderSet::IMMDT) {
        h.immdt = Some(rrxe_proto::proto::immdt::ImmDt { imm: 9 });
    }
    let mut buf = vec![0u8; 256];
    let lay = h.write(0, &mut buf).unwrap();
    buf.truncate(lay.total_len);
    buf
}

fn rc_keys() -> QpKeys {
    QpKeys {
        qp_type: QpType::Rc,
        sgid: mapped(B4),
        dgid: mapped(A4),
        qkey: 0,
    }
}

#[test]
fn pkey_rules_are_rxes() {
    assert!(pkey_match(0xffff, 0xffff));
    assert!(
        pkey_match(0x7fff, 0xffff),
        "a limited member talks to a full member"
    );
    assert!(pkey_match(0xffff, 0x7fff));
    assert!(!pkey_match(0x7fff, 0x7fff), "two limited members do not");
    assert!(
        !pkey_match(0x8000, 0x8000),
        "the invalid key matches nothing"
    );
    assert!(!pkey_match(0x0000, 0xffff));
    assert!(!pkey_match(0x1234, 0xffff));
    assert!(!pkey_match(0x9234, 0xffff));
}

#[test]
fn connected_qp_takes_its_peer_only() {
    let k = rc_keys();
    let raw = packet(Opcode::RcAck, 0xffff, 0);
    assert_eq!(
        admit(&k, &ipv4(A4, B4), &udp(4791), &raw, not_asked),
        Ok(())
    );
    // Wrong source, wrong destination, swapped, wrong port.
    let c = [10, 9, 0, 99];
    assert_eq!(
        admit(&k, &ipv4(c, B4), &udp(4791), &raw, not_asked),
        Err(Refusal::Address)
    );
    assert_eq!(
        admit(&k, &ipv4(A4, c), &udp(4791), &raw, not_asked),
        Err(Refusal::Address)
    );
    assert_eq!(
        admit(&k, &ipv4(B4, A4), &udp(4791), &raw, not_asked),
        Err(Refusal::Address)
    );
    assert_eq!(
        admit(&k, &ipv4(A4, B4), &udp(4792), &raw, not_asked),
        Err(Refusal::Address)
    );
    assert_eq!(
        admit(&k, &ipv4(A4, B4), &[0x12, 0xb7], &raw, not_asked),
        Err(Refusal::Address)
    );
    // IPv6: the GIDs as they are; an IPv4 packet does not match IPv6 GIDs.
    let (s6, d6) = (A6, B6);
    let k6 = QpKeys {
        sgid: d6,
        dgid: s6,
        ..k
    };
    let mut h6 = [0u8; 40];
    h6[0] = 0x60;
    h6[8..24].copy_from_slice(&s6);
    h6[24..40].copy_from_slice(&d6);
    assert_eq!(admit(&k6, &h6, &udp(4791), &raw, not_asked), Ok(()));
    assert_eq!(
        admit(&k6, &ipv4(A4, B4), &udp(4791), &raw, not_asked),
        Err(Refusal::Address)
    );
    h6[8] = 0x21;
    assert_eq!(
        admit(&k6, &h6, &udp(4791), &raw, not_asked),
        Err(Refusal::Address)
    );
    // An IP header of another length (options) is refused.
    assert_eq!(
        admit(&k, &[0u8; 24], &udp(4791), &raw, not_asked),
        Err(Refusal::Address)
    );
    // UC likewise.
    let uc = QpKeys {
        qp_type: QpType::Uc,
        ..k
    };
    let raw = packet(Opcode::UcSendOnly, 0xffff, 0);
    assert_eq!(
        admit(&uc, &ipv4(A4, B4), &udp(4791), &raw, not_asked),
        Ok(())
    );
    assert_eq!(
        admit(&uc, &ipv4(c, B4), &udp(4791), &raw, not_asked),
        Err(Refusal::Address)
    );
}

#[test]
fn transport_then_pkey() {
    let k = rc_keys();
    let ip = ipv4(A4, B4);
    let u = udp(4791);
    let raw = packet(Opcode::UcSendOnly, 0xffff, 0);
    assert_eq!(admit(&k, &ip, &u, &raw, ours), Err(Refusal::Transport));
    for bad in [0x1234u16, 0x0000, 0x8000, 0xfffe] {
        let raw = packet(Opcode::RcSendOnly, bad, 0);
        assert_eq!(
            admit(&k, &ip, &u, &raw, ours),
            Err(Refusal::PKey),
            "{bad:#x}"
        );
    }
    let raw = packet(Opcode::RcSendOnly, 0x7fff, 0);
    assert_eq!(admit(&k, &ip, &u, &raw, ours), Ok(()));
}

#[test]
fn datagram_qp_checks_qkey_and_destination() {
    let k = QpKeys {
        qp_type: QpType::Ud,
        sgid: [0; 16],
        dgid: [0; 16],
        qkey: 0x1111_1111,
    };
    let ip = ipv4([1, 2, 3, 4], B4);
    let u = udp(4791);
    let ok = packet(Opcode::UdSendOnly, 0xffff, 0x1111_1111);
    assert_eq!(admit(&k, &ip, &u, &ok, ours), Ok(()));
    // From anyone, to any UDP port, but only to the device's addresses or a group.
    assert_eq!(admit(&k, &ipv4(A4, B4), &udp(1), &ok, ours), Ok(()));
    for dst in [[5, 6, 7, 8], [255, 255, 255, 255], [10, 9, 0, 255], A4] {
        assert_eq!(
            admit(&k, &ipv4(A4, dst), &u, &ok, ours),
            Err(Refusal::Address),
            "{dst:?}"
        );
    }
    // A group's datagram with the multicast QPN (it reached the QP as a member); not a
    // group's datagram to a QP by its number (to all hosts, QP1), nor the multicast QPN
    // at a unicast address. The GID table is not asked for a group.
    let never = |_: &[u8; 16]| -> bool { unreachable!("a group is asked for") };
    let mc = packet_to(MULTICAST_QPN, Opcode::UdSendOnly, 0xffff, 0x1111_1111);
    // A group address takes the multicast QPN only.
    let group_only = |ip: &[u8]| {
        assert_eq!(admit(&k, ip, &u, &mc, never), Ok(()));
        assert_eq!(admit(&k, ip, &u, &ok, never), Err(Refusal::Address));
    };
    for group in [[224, 0, 0, 1], [239, 1, 2, 3]] {
        group_only(&ipv4(A4, group));
    }
    assert_eq!(
        admit(&k, &ipv4(A4, B4), &u, &mc, ours),
        Err(Refusal::Address)
    );
    let mut h6 = [0u8; 40];
    h6[0] = 0x60;
    h6[8..24].copy_from_slice(&A6);
    h6[24..40].copy_from_slice(&B6);
    assert_eq!(admit(&k, &h6, &u, &ok, ours), Ok(()));
    h6[24..40].copy_from_slice(&A6);
    assert_eq!(admit(&k, &h6, &u, &ok, ours), Err(Refusal::Address));
    h6[24] = 0xff;
    group_only(&h6);
    // The "use the QP's Q_Key" bit means nothing on receive.
    for bad in [0x1111_1112u32, 0x9111_1111, 0x8001_0000] {
        let raw = packet(Opcode::UdSendOnly, 0xffff, bad);
        assert_eq!(admit(&k, &ip, &u, &raw, ours), Err(Refusal::QKey));
    }
    let raw = packet(Opcode::UdSendOnly, 0x1234, 0x1111_1111);
    assert_eq!(admit(&k, &ip, &u, &raw, ours), Err(Refusal::PKey));
    let gsi = QpKeys {
        qp_type: QpType::Gsi,
        qkey: 0x8001_0000,
        ..k
    };
    let raw = packet(Opcode::UdSendOnly, 0xffff, 0x8001_0000);
    assert_eq!(admit(&gsi, &ip, &u, &raw, ours), Ok(()));
}

#[test]
fn headers_that_do_not_decode_are_refused() {
    let k = rc_keys();
    let ip = ipv4(A4, B4);
    let u = udp(4791);
    let raw = packet(Opcode::RcSendOnly, 0xffff, 0);
    assert_eq!(admit(&k, &ip, &u, &raw[..11], ours), Err(Refusal::Header));
    let mut bad = raw.clone();
    bad[0] = 0x1f; // no opcode
    assert_eq!(admit(&k, &ip, &u, &bad, ours), Err(Refusal::Header));
    // A UD packet's Q_Key is in the DETH after the BTH, with or without immediate data.
    let ud = QpKeys {
        qp_type: QpType::Ud,
        qkey: 0x1111_1111,
        ..k
    };
    let raw = packet(Opcode::UdSendOnlyImm, 0xffff, 0x1111_1111);
    assert_eq!(admit(&ud, &ip, &u, &raw, ours), Ok(()));
    assert_eq!(admit(&ud, &ip, &u, &raw[..19], ours), Err(Refusal::Header));
}

#[test]
fn response_window() {
    use ResponsePlace::{Ahead, Outstanding, Stale};
    let seq = Some(Syndrome::Nak(NakCode::PsnSequenceError));
    let ack = Some(Syndrome::ACK);
    let acc = Some(Syndrome::Nak(NakCode::RemoteAccessError));
    let place = |p: u32, syn, o, e| response_place(Psn::new(p), syn, o, e);
    let (o, e) = (Psn::new(100), Psn::new(110));
    for p in 100..110 {
        assert_eq!(place(p, ack, o, e), Outstanding);
        assert_eq!(place(p, acc, o, e), Outstanding);
        assert_eq!(place(p, None, o, e), Outstanding);
    }
    // Behind, in the half of the PSN space before the oldest: stale duplicates.
    for p in [99, 0, PSN_MASK, 100 + (1 << 23)] {
        assert_eq!(place(p, ack, o, e), Stale, "{p}");
        assert_eq!(place(p, acc, o, e), Stale, "{p}");
    }
    // Ahead: never sent.
    for p in [110, 111, 100 + (1 << 22), 100 + (1 << 23) - 1] {
        assert_eq!(place(p, ack, o, e), Ahead, "{p}");
        assert_eq!(place(p, acc, o, e), Ahead, "{p}");
    }
    // A sequence error NAK may name the next PSN to send, not beyond.
    assert_eq!(place(110, seq, o, e), Outstanding);
    assert_eq!(place(111, seq, o, e), Ahead);
    assert_eq!(place(99, seq, o, e), Stale);
    // Nothing outstanding: nothing but that NAK.
    assert_eq!(response_place(e, ack, e, e), Ahead);
    assert_eq!(response_place(e, seq, e, e), Outstanding);
    assert_eq!(place(109, ack, e, e), Stale);
    // Across the wrap of the 24-bit space.
    let (o, e) = (Psn::new(PSN_MASK - 1), Psn::new(2));
    for p in [PSN_MASK - 1, PSN_MASK, 0, 1] {
        assert_eq!(place(p, ack, o, e), Outstanding);
    }
    assert_eq!(place(2, ack, o, e), Ahead);
    assert_eq!(place(PSN_MASK - 2, ack, o, e), Stale);
}
