// SPDX-License-Identifier: GPL-2.0

//! Every header: known wire bytes, round trip, field limits, truncated input.

use rrxe_proto::proto::aeth::{Aeth, NakCode, Syndrome, CREDITS_UNLIMITED, MSN_MASK};
use rrxe_proto::proto::atomic::{AtomicAckEth, AtomicEth};
use rrxe_proto::proto::bth::{Bth, DEFAULT_PKEY, QPN_MASK};
use rrxe_proto::proto::deth::{Deth, GSI_QKEY};
use rrxe_proto::proto::flush::{Feth, PLT_GLOBAL, PLT_PERSISTENT, SEL_MR, SEL_RANGE};
use rrxe_proto::proto::ieth::Ieth;
use rrxe_proto::proto::immdt::ImmDt;
use rrxe_proto::proto::opcode::Opcode;
use rrxe_proto::proto::psn::Psn;
use rrxe_proto::proto::reth::Reth;
use rrxe_proto::proto::ProtoError;

/// Every prefix shorter than `len` fails with `Truncated`, and writing into any shorter
/// buffer fails with `BufferTooSmall`.
fn check_short<T>(
    bytes: &[u8],
    parse: impl Fn(&[u8]) -> Result<T, ProtoError>,
    write: impl Fn(&mut [u8]) -> Result<(), ProtoError>,
) {
    for n in 0..bytes.len() {
        assert!(
            matches!(parse(&bytes[..n]), Err(ProtoError::Truncated)),
            "parse of {n} bytes"
        );
        let mut short = vec![0u8; n];
        assert_eq!(
            write(&mut short),
            Err(ProtoError::BufferTooSmall),
            "write into {n}"
        );
    }
}

#[test]
fn bth_wire_layout() {
    let bth = Bth {
        opcode: Opcode::UcSendOnly,
        solicited: false,
        mig_req: true,
        pad: 2,
        tver: 0,
        pkey: 0xffff,
        fecn: false,
        becn: false,
        dest_qpn: 211,
        ack_req: false,
        psn: Psn::new(13_571_856),
    };
    let mut b = [0u8; 12];
    bth.write(&mut b).unwrap();
    // The BTH of the UC packet in scapy's RoCE test (test/contrib/roce.uts).
    assert_eq!(
        b,
        [0x24, 0x60, 0xff, 0xff, 0x00, 0x00, 0x00, 0xd3, 0x00, 0xcf, 0x17, 0x10]
    );
    assert_eq!(Bth::parse(&b).unwrap(), bth);
}

#[test]
fn bth_all_bits() {
    let bth = Bth {
        opcode: Opcode::RcWriteLastImm,
        solicited: true,
        mig_req: true,
        pad: 3,
        tver: 0xf,
        pkey: 0x8001,
        fecn: true,
        becn: true,
        dest_qpn: QPN_MASK,
        ack_req: true,
        psn: Psn::new(0xff_ffff),
    };
    let mut b = [0u8; 12];
    bth.write(&mut b).unwrap();
    assert_eq!(
        b,
        [0x09, 0xff, 0x80, 0x01, 0xc0, 0xff, 0xff, 0xff, 0x80, 0xff, 0xff, 0xff]
    );
    assert_eq!(Bth::parse(&b).unwrap(), bth);
}

#[test]
fn bth_reserved_bits_ignored() {
    let mut b = [0u8; 12];
    Bth::new(Opcode::RcAck, 5, Psn::new(7))
        .write(&mut b)
        .unwrap();
    let clean = Bth::parse(&b).unwrap();
    b[4] |= 0x3f; // resv6a
    b[8] |= 0x7f; // resv7
    assert_eq!(Bth::parse(&b).unwrap(), clean);
}

#[test]
fn bth_new_defaults() {
    let bth = Bth::new(Opcode::RcSendOnly, 0x12, Psn::new(0x345));
    assert_eq!(bth.pkey, DEFAULT_PKEY);
    assert_eq!((bth.pad, bth.tver), (0, 0));
    assert!(!bth.solicited && !bth.mig_req && !bth.fecn && !bth.becn && !bth.ack_req);
}

#[test]
fn bth_limits() {
    let ok = Bth::new(Opcode::RcSendOnly, QPN_MASK, Psn::new(1));
    let mut b = [0u8; 12];
    ok.write(&mut b).unwrap();
    for bad in [
        Bth {
            dest_qpn: QPN_MASK + 1,
            ..ok
        },
        Bth { pad: 4, ..ok },
        Bth { tver: 16, ..ok },
    ] {
        assert_eq!(bad.write(&mut b), Err(ProtoError::FieldOutOfRange));
    }
}

#[test]
fn bth_unknown_opcode() {
    let mut b = [0u8; 12];
    ok_bth().write(&mut b).unwrap();
    for op in [0x15u8, 0x18, 0x1e, 0x2c, 0x40, 0x41, 0x60, 0x66, 0x81, 0xff] {
        b[0] = op;
        assert_eq!(Bth::parse(&b), Err(ProtoError::UnknownOpcode(op)));
    }
}

fn ok_bth() -> Bth {
    Bth::new(Opcode::RcSendOnly, 1, Psn::new(1))
}

#[test]
fn bth_truncated() {
    let mut b = [0u8; 12];
    ok_bth().write(&mut b).unwrap();
    check_short(&b, Bth::parse, |buf| ok_bth().write(buf));
}

#[test]
fn reth_round_trip() {
    let r = Reth {
        va: 0x0102_0304_0506_0708,
        rkey: 0x090a_0b0c,
        dma_len: 0x0d0e_0f10,
    };
    let mut b = [0u8; 16];
    r.write(&mut b).unwrap();
    assert_eq!(b, core::array::from_fn::<u8, 16, _>(|i| i as u8 + 1));
    assert_eq!(Reth::parse(&b).unwrap(), r);
    let max = Reth {
        va: u64::MAX,
        rkey: u32::MAX,
        dma_len: u32::MAX,
    };
    max.write(&mut b).unwrap();
    assert_eq!(b, [0xff; 16]);
    assert_eq!(Reth::parse(&b).unwrap(), max);
    check_short(&b, Reth::parse, |buf| r.write(buf));
}

#[test]
fn aeth_round_trip_and_limits() {
    let a = Aeth {
        syndrome: Syndrome::Nak(NakCode::RemoteAccessError),
        msn: 0x12_3456,
    };
    let mut b = [0u8; 4];
    a.write(&mut b).unwrap();
    assert_eq!(b, [0x62, 0x12, 0x34, 0x56]);
    assert_eq!(Aeth::parse(&b).unwrap(), a);
    let max = Aeth {
        syndrome: Syndrome::ACK,
        msn: MSN_MASK,
    };
    max.write(&mut b).unwrap();
    assert_eq!(b, [0x1f, 0xff, 0xff, 0xff]);
    assert_eq!(
        Aeth {
            msn: MSN_MASK + 1,
            ..a
        }
        .write(&mut b),
        Err(ProtoError::FieldOutOfRange)
    );
    for bad in [
        Syndrome::Ack { credits: 32 },
        Syndrome::RnrNak { timer: 0x20 },
        Syndrome::Nak(NakCode::Reserved(3)),
        Syndrome::Reserved(0x1f),
    ] {
        assert_eq!(
            Aeth {
                syndrome: bad,
                msn: 0
            }
            .write(&mut b),
            Err(ProtoError::FieldOutOfRange),
            "{bad:?}"
        );
    }
    check_short(&b, Aeth::parse, |buf| a.write(buf));
}

#[test]
fn syndrome_decoding() {
    assert_eq!(
        Syndrome::from_u8(0x1f),
        Syndrome::Ack {
            credits: CREDITS_UNLIMITED
        }
    );
    assert_eq!(Syndrome::from_u8(0x00), Syndrome::Ack { credits: 0 });
    assert_eq!(Syndrome::from_u8(0x2e), Syndrome::RnrNak { timer: 14 });
    assert_eq!(
        Syndrome::from_u8(0x60),
        Syndrome::Nak(NakCode::PsnSequenceError)
    );
    assert_eq!(
        Syndrome::from_u8(0x61),
        Syndrome::Nak(NakCode::InvalidRequest)
    );
    assert_eq!(
        Syndrome::from_u8(0x62),
        Syndrome::Nak(NakCode::RemoteAccessError)
    );
    assert_eq!(
        Syndrome::from_u8(0x63),
        Syndrome::Nak(NakCode::RemoteOperationalError)
    );
    assert_eq!(
        Syndrome::from_u8(0x64),
        Syndrome::Nak(NakCode::InvalidRdRequest)
    );
    assert_eq!(Syndrome::from_u8(0x65), Syndrome::Nak(NakCode::Reserved(5)));
    assert_eq!(Syndrome::from_u8(0x40), Syndrome::Reserved(0x40));
    assert_eq!(Syndrome::from_u8(0x80), Syndrome::Reserved(0x80));
    assert_eq!(Syndrome::from_u8(0x9f), Syndrome::Reserved(0x9f));
    for v in 0..=255u8 {
        let s = Syndrome::from_u8(v);
        assert_eq!(s.to_u8(), v);
        assert!(s.is_canonical());
        assert_eq!(s.is_ack(), v & 0xe0 == 0);
    }
}

#[test]
fn atomic_eth_round_trip() {
    let a = AtomicEth {
        va: 0x1122_3344_5566_7788,
        rkey: 0x99aa_bbcc,
        swap_add: 0xddee_ff00_0102_0304,
        compare: 0x0506_0708_090a_0b0c,
    };
    let mut b = [0u8; 28];
    a.write(&mut b).unwrap();
    assert_eq!(&b[..8], &0x1122_3344_5566_7788u64.to_be_bytes());
    assert_eq!(&b[8..12], &0x99aa_bbccu32.to_be_bytes());
    assert_eq!(&b[12..20], &0xddee_ff00_0102_0304u64.to_be_bytes());
    assert_eq!(&b[20..], &0x0506_0708_090a_0b0cu64.to_be_bytes());
    assert_eq!(AtomicEth::parse(&b).unwrap(), a);
    check_short(&b, AtomicEth::parse, |buf| a.write(buf));
}

#[test]
fn atomic_ack_eth_round_trip() {
    let a = AtomicAckEth {
        orig: 0xfedc_ba98_7654_3210,
    };
    let mut b = [0u8; 8];
    a.write(&mut b).unwrap();
    assert_eq!(b, [0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10]);
    assert_eq!(AtomicAckEth::parse(&b).unwrap(), a);
    check_short(&b, AtomicAckEth::parse, |buf| a.write(buf));
}

#[test]
fn deth_round_trip_and_limits() {
    let d = Deth {
        qkey: GSI_QKEY,
        src_qpn: 1,
    };
    let mut b = [0u8; 8];
    d.write(&mut b).unwrap();
    assert_eq!(b, [0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01]);
    assert_eq!(Deth::parse(&b).unwrap(), d);
    b[4] = 0xaa; // reserved byte, ignored
    assert_eq!(Deth::parse(&b).unwrap(), d);
    let max = Deth {
        qkey: u32::MAX,
        src_qpn: QPN_MASK,
    };
    max.write(&mut b).unwrap();
    assert_eq!(b, [0xff, 0xff, 0xff, 0xff, 0x00, 0xff, 0xff, 0xff]);
    assert_eq!(
        Deth {
            src_qpn: QPN_MASK + 1,
            ..d
        }
        .write(&mut b),
        Err(ProtoError::FieldOutOfRange)
    );
    check_short(&b, Deth::parse, |buf| d.write(buf));
}

#[test]
fn immdt_and_ieth_round_trip() {
    let i = ImmDt { imm: 0xdead_beef };
    let mut b = [0u8; 4];
    i.write(&mut b).unwrap();
    assert_eq!(b, [0xde, 0xad, 0xbe, 0xef]);
    assert_eq!(ImmDt::parse(&b).unwrap(), i);
    check_short(&b, ImmDt::parse, |buf| i.write(buf));

    let e = Ieth { rkey: 0x0102_0304 };
    e.write(&mut b).unwrap();
    assert_eq!(b, [1, 2, 3, 4]);
    assert_eq!(Ieth::parse(&b).unwrap(), e);
    check_short(&b, Ieth::parse, |buf| e.write(buf));
}

#[test]
fn feth_round_trip_and_limits() {
    let f = Feth {
        placement: PLT_GLOBAL | PLT_PERSISTENT,
        selectivity: SEL_MR,
    };
    let mut b = [0u8; 4];
    f.write(&mut b).unwrap();
    assert_eq!(b, [0, 0, 0, 0x13]);
    assert_eq!(Feth::parse(&b).unwrap(), f);
    let r = Feth {
        placement: PLT_GLOBAL,
        selectivity: SEL_RANGE,
    };
    r.write(&mut b).unwrap();
    assert_eq!(b, [0, 0, 0, 0x01]);
    // Reserved bits are ignored.
    assert_eq!(Feth::parse(&[0xff, 0xff, 0xff, 0xc1]).unwrap(), r);
    for bad in [
        Feth {
            placement: 16,
            selectivity: 0,
        },
        Feth {
            placement: 0,
            selectivity: 4,
        },
    ] {
        assert_eq!(bad.write(&mut b), Err(ProtoError::FieldOutOfRange));
    }
    check_short(&b, Feth::parse, |buf| f.write(buf));
}
