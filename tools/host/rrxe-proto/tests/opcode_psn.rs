// SPDX-License-Identifier: GPL-2.0

//! The opcode table and PSN arithmetic.

use std::cmp::Ordering;

use rrxe_proto::proto::opcode::{
    HeaderSet, Opcode, Operation, Position, Transport, MAX_HEADER_LEN,
};
use rrxe_proto::proto::psn::{Psn, PSN_MASK};
use rrxe_proto::proto::ProtoError;

/// (opcode byte, header length) of every opcode rxe knows for RC, UC and UD
/// (`rxe_opcode[].length` in Linux 6.12 rxe_opcode.c).
const RXE_LENGTHS: [(u8, usize); 39] = [
    (0x00, 12),
    (0x01, 12),
    (0x02, 12),
    (0x03, 16),
    (0x04, 12),
    (0x05, 16),
    (0x06, 28),
    (0x07, 12),
    (0x08, 12),
    (0x09, 16),
    (0x0a, 28),
    (0x0b, 32),
    (0x0c, 28),
    (0x0d, 16),
    (0x0e, 12),
    (0x0f, 16),
    (0x10, 16),
    (0x11, 16),
    (0x12, 24),
    (0x13, 40),
    (0x14, 40),
    (0x16, 16),
    (0x17, 16),
    (0x1c, 32),
    (0x1d, 28),
    (0x20, 12),
    (0x21, 12),
    (0x22, 12),
    (0x23, 16),
    (0x24, 12),
    (0x25, 16),
    (0x26, 28),
    (0x27, 12),
    (0x28, 12),
    (0x29, 16),
    (0x2a, 28),
    (0x2b, 32),
    (0x64, 20),
    (0x65, 24),
];

#[test]
fn table_matches_rxe_lengths() {
    for (byte, len) in RXE_LENGTHS {
        let op = Opcode::from_u8(byte).unwrap();
        assert_eq!(op.to_u8(), byte);
        assert_eq!(op.header_len(), len, "{op:?}");
    }
    // The atomic requests: BTH and AtomicETH.
    let longest = RXE_LENGTHS.iter().map(|&(_, len)| len).max();
    assert_eq!(Some(MAX_HEADER_LEN), longest);
    assert_eq!(MAX_HEADER_LEN, 40);
}

#[test]
fn every_byte_decodes_or_errors() {
    let known: Vec<u8> = RXE_LENGTHS.iter().map(|&(b, _)| b).collect();
    for v in 0..=255u8 {
        match Opcode::from_u8(v) {
            Ok(op) => {
                assert!(known.contains(&v));
                assert_eq!(op.to_u8(), v);
            }
            Err(e) => {
                assert!(!known.contains(&v));
                assert_eq!(e, ProtoError::UnknownOpcode(v));
            }
        }
    }
    assert_eq!(Opcode::ALL.len(), known.len());
    for (op, b) in Opcode::ALL.iter().zip(known) {
        assert_eq!(op.to_u8(), b);
    }
}

#[test]
fn transports() {
    for op in Opcode::ALL {
        let t = match op.to_u8() >> 5 {
            0 => Transport::Rc,
            1 => Transport::Uc,
            3 => Transport::Ud,
            _ => unreachable!(),
        };
        assert_eq!(op.transport(), t);
    }
}

#[test]
fn header_sets() {
    use HeaderSet as H;
    let p = H::PAYLOAD;
    let cases = [
        (Opcode::RcSendFirst, p),
        (Opcode::RcSendLastImm, p.with(H::IMMDT)),
        (Opcode::RcSendOnlyInv, p.with(H::IETH)),
        (Opcode::RcWriteFirst, p.with(H::RETH)),
        (Opcode::RcWriteOnlyImm, p.with(H::RETH).with(H::IMMDT)),
        (Opcode::RcReadRequest, H::RETH),
        (Opcode::RcReadResponseMiddle, p),
        (Opcode::RcReadResponseLast, p.with(H::AETH)),
        (Opcode::RcAck, H::AETH),
        (Opcode::RcAtomicAck, H::AETH.with(H::ATOMIC_ACK_ETH)),
        (Opcode::RcCompareSwap, H::ATOMIC_ETH),
        (Opcode::RcFlush, H::FETH.with(H::RETH)),
        (Opcode::RcAtomicWrite, p.with(H::RETH)),
        (Opcode::UdSendOnly, p.with(H::DETH)),
        (Opcode::UdSendOnlyImm, p.with(H::DETH).with(H::IMMDT)),
    ];
    for (op, set) in cases {
        assert_eq!(op.headers(), set, "{op:?}");
        assert_eq!(op.header_len(), 12 + set.ext_len());
    }
    assert!(!Opcode::RcFlush.has_payload());
    assert!(!Opcode::RcAck.has_payload());
    assert!(Opcode::RcAtomicWrite.has_payload());
}

#[test]
fn positions_and_classes() {
    assert_eq!(Opcode::RcSendFirst.position(), Position::First);
    assert_eq!(Opcode::UcWriteMiddle.position(), Position::Middle);
    assert_eq!(Opcode::RcReadResponseLast.position(), Position::Last);
    assert_eq!(Opcode::RcReadRequest.position(), Position::Only);
    assert!(Opcode::RcSendOnly.is_start() && Opcode::RcSendOnly.is_end());
    assert!(Opcode::RcSendFirst.is_start() && !Opcode::RcSendFirst.is_end());
    assert!(!Opcode::RcSendMiddle.is_start() && !Opcode::RcSendMiddle.is_end());
    for op in Opcode::ALL {
        let resp = matches!(
            op.operation(),
            Operation::ReadResponse | Operation::Ack | Operation::AtomicAck
        );
        assert_eq!(op.is_request(), !resp, "{op:?}");
    }
    // Receive WQE consumption and completion (rxe's RWR and COMP masks).
    let rwr: Vec<u8> = Opcode::ALL
        .iter()
        .filter(|o| o.consumes_recv_wqe())
        .map(|o| o.to_u8())
        .collect();
    assert_eq!(
        rwr,
        [0x00, 0x04, 0x05, 0x09, 0x0b, 0x17, 0x20, 0x24, 0x25, 0x29, 0x2b, 0x64, 0x65]
    );
    let comp: Vec<u8> = Opcode::ALL
        .iter()
        .filter(|o| o.completes_recv_wqe())
        .map(|o| o.to_u8())
        .collect();
    assert_eq!(
        comp,
        [
            0x02, 0x03, 0x04, 0x05, 0x09, 0x0b, 0x16, 0x17, 0x22, 0x23, 0x24, 0x25, 0x29, 0x2b,
            0x64, 0x65
        ]
    );
}

#[test]
fn psn_masking() {
    assert_eq!(Psn::new(0x1ff_ffff).value(), PSN_MASK);
    assert_eq!(Psn::new(PSN_MASK).next().value(), 0);
    assert_eq!(Psn::new(0).prev().value(), PSN_MASK);
    assert_eq!(Psn::new(PSN_MASK - 1).wrapping_add(5).value(), 3);
    assert_eq!(Psn::new(3).wrapping_sub(5).value(), PSN_MASK - 1);
    assert_eq!(Psn::new(10).wrapping_add(u32::MAX).value(), 9);
}

#[test]
fn psn_compare_across_wrap() {
    let top = Psn::new(PSN_MASK);
    let zero = Psn::new(0);
    assert_eq!(zero.diff(top), 1);
    assert_eq!(top.diff(zero), -1);
    assert!(zero.is_after(top));
    assert!(top.is_before(zero));
    assert_eq!(zero.compare(top), Ordering::Greater);
    assert_eq!(top.compare(top), Ordering::Equal);
    assert_eq!(Psn::new(5).diff(Psn::new(PSN_MASK - 4)), 10);
    assert_eq!(
        Psn::new(PSN_MASK - 4).distance_from(Psn::new(5)),
        PSN_MASK - 9
    );
    assert_eq!(Psn::new(5).distance_from(Psn::new(PSN_MASK - 4)), 10);
    // Half the space apart: the largest positive and the most negative distance.
    let half = 1 << 23;
    assert_eq!(Psn::new(half - 1).diff(zero), half as i32 - 1);
    assert_eq!(Psn::new(half).diff(zero), -(half as i32));
    assert!(Psn::new(half).is_before(zero));
    assert!(zero.is_before(Psn::new(half)));
    // Ranges across the wrap.
    assert!(zero.within(top.wrapping_sub(3), Psn::new(2)));
    assert!(top.within(top.wrapping_sub(3), Psn::new(2)));
    assert!(!Psn::new(3).within(top.wrapping_sub(3), Psn::new(2)));
    assert!(!top.wrapping_sub(4).within(top.wrapping_sub(3), Psn::new(2)));
}

#[test]
fn psn_diff_exhaustive_sample() {
    // For every distance d in a window around the wrap, a + d is after a exactly when d is
    // in 1..2^23.
    for a in [0u32, 1, 0x7f_ffff, 0x80_0000, PSN_MASK - 1, PSN_MASK] {
        let a = Psn::new(a);
        for d in (0u32..=PSN_MASK)
            .step_by(4099)
            .chain([1, 0x7f_ffff, 0x80_0000])
        {
            let b = a.wrapping_add(d);
            let expect = if d == 0 {
                0
            } else if d < 0x80_0000 {
                d as i32
            } else {
                d as i32 - (1 << 24)
            };
            assert_eq!(b.diff(a), expect, "a {a:?} d {d}");
            assert_eq!(b.distance_from(a), d);
        }
    }
}
