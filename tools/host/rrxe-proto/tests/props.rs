// SPDX-License-Identifier: GPL-2.0

//! Property tests: decode(encode(x)) == x for every header and whole packets, decoding never
//! panics on arbitrary bytes, ICRC generate/verify, PSN arithmetic, segmentation invariants.

use proptest::prelude::*;

use rrxe_proto::proto::aeth::{Aeth, Syndrome};
use rrxe_proto::proto::atomic::{AtomicAckEth, AtomicEth};
use rrxe_proto::proto::bth::Bth;
use rrxe_proto::proto::deth::Deth;
use rrxe_proto::proto::flush::Feth;
use rrxe_proto::proto::icrc::{self, Crc32, NetHeaders};
use rrxe_proto::proto::ieth::Ieth;
use rrxe_proto::proto::immdt::ImmDt;
use rrxe_proto::proto::mtu::Mtu;
use rrxe_proto::proto::opcode::{HeaderSet, Opcode, MAX_HEADER_LEN};
use rrxe_proto::proto::packet::{encode, pad_len, Headers, Packet};
use rrxe_proto::proto::psn::{Psn, PSN_MASK};
use rrxe_proto::proto::requester::{packets_for, Segment, Segmenter};
use rrxe_proto::proto::responder::{self, ReadReply, ReadResource};
use rrxe_proto::proto::reth::Reth;
use rrxe_proto::proto::verbs::{QpType, WrOpcode};
use rrxe_proto::proto::ProtoError;
use rrxe_proto::TableCrc32;

fn opcode() -> impl Strategy<Value = Opcode> {
    prop::sample::select(Opcode::ALL.to_vec())
}

fn mtu() -> impl Strategy<Value = Mtu> {
    prop::sample::select(Mtu::ALL.to_vec())
}

fn bth(op: Opcode) -> impl Strategy<Value = Bth> {
    (
        any::<(bool, bool, bool, bool, bool)>(),
        0u8..4,
        any::<u16>(),
        0u32..=0xff_ffff,
        0u32..=PSN_MASK,
    )
        .prop_map(move |((se, m, f, b, a), pad, pkey, qpn, psn)| Bth {
            opcode: op,
            solicited: se,
            mig_req: m,
            pad,
            tver: 0,
            pkey,
            fecn: f,
            becn: b,
            dest_qpn: qpn,
            ack_req: a,
            psn: Psn::new(psn),
        })
}

fn syndrome() -> impl Strategy<Value = Syndrome> {
    any::<u8>().prop_map(Syndrome::from_u8)
}

fn reth() -> impl Strategy<Value = Reth> {
    any::<(u64, u32, u32)>().prop_map(|(va, rkey, dma_len)| Reth { va, rkey, dma_len })
}

fn aeth() -> impl Strategy<Value = Aeth> {
    (syndrome(), 0u32..=0xff_ffff).prop_map(|(syndrome, msn)| Aeth { syndrome, msn })
}

fn atomic_eth() -> impl Strategy<Value = AtomicEth> {
    any::<(u64, u32, u64, u64)>().prop_map(|(va, rkey, swap_add, compare)| AtomicEth {
        va,
        rkey,
        swap_add,
        compare,
    })
}

fn deth() -> impl Strategy<Value = Deth> {
    (any::<u32>(), 0u32..=0xff_ffff).prop_map(|(qkey, src_qpn)| Deth { qkey, src_qpn })
}

fn feth() -> impl Strategy<Value = Feth> {
    (0u8..16, 0u8..4).prop_map(|(placement, selectivity)| Feth {
        placement,
        selectivity,
    })
}

/// Headers for `op` with arbitrary values in every field it has.
fn headers_for(op: Opcode) -> impl Strategy<Value = Headers> {
    let set = op.headers();
    (
        bth(op),
        feth(),
        reth(),
        deth(),
        atomic_eth(),
        aeth(),
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
    )
        .prop_map(move |(b, f, r, d, a, k, orig, imm, rkey)| {
            let mut h = Headers::new(b);
            let on = |x: HeaderSet| set.contains(x);
            h.feth = on(HeaderSet::FETH).then_some(f);
            h.reth = on(HeaderSet::RETH).then_some(r);
            h.deth = on(HeaderSet::DETH).then_some(d);
            h.atomic_eth = on(HeaderSet::ATOMIC_ETH).then_some(a);
            h.aeth = on(HeaderSet::AETH).then_some(k);
            h.atomic_ack = on(HeaderSet::ATOMIC_ACK_ETH).then_some(AtomicAckEth { orig });
            h.immdt = on(HeaderSet::IMMDT).then_some(ImmDt { imm });
            h.ieth = on(HeaderSet::IETH).then_some(Ieth { rkey });
            h
        })
}

/// A packet: headers and a payload fitting the opcode.
fn packet() -> impl Strategy<Value = (Headers, Vec<u8>)> {
    opcode().prop_flat_map(|op| {
        let max: usize = if op.has_payload() { 4096 } else { 0 };
        let len = prop_oneof![0..=max.min(64), 0..=max];
        (
            headers_for(op),
            len.prop_flat_map(|n| prop::collection::vec(any::<u8>(), n)),
        )
    })
}

fn ipv4() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 20).prop_map(|mut v| {
        v[0] = 0x45;
        v
    })
}

/// `Packet::peek` of `buf` gives what `Packet::parse` does: the same BTH and payload, or
/// the same error.
fn peek_agrees(buf: &[u8]) -> Result<(), TestCaseError> {
    match (Packet::peek(buf), Packet::parse(buf)) {
        (Ok((bth, payload)), Ok(p)) => {
            prop_assert_eq!(bth, p.hdr.bth);
            prop_assert_eq!(payload, p.payload);
        }
        (Err(a), Err(b)) => prop_assert_eq!(a, b),
        (a, b) => prop_assert!(false, "peek {:?}, parse {:?}", a.map(|x| x.0), b),
    }
    Ok(())
}

/// `Packet::parse_head` of the first `cut` bytes of `buf` never disagrees with
/// `Packet::parse` of all of it: what it accepts, `parse` accepts with the same headers and
/// the payload where it says; and with at least `MAX_HEADER_LEN` bytes (or all of a shorter
/// packet) it gives exactly `parse`'s result.
fn head_agrees(buf: &[u8], cut: usize) -> Result<(), TestCaseError> {
    let head = &buf[..cut.min(buf.len())];
    let whole = Packet::parse(buf);
    match Packet::parse_head(head, buf.len()) {
        Ok(p) => {
            let q = whole.map_err(|e| TestCaseError::fail(format!("parse: {e:?}")))?;
            prop_assert_eq!(p.hdr, q.hdr);
            prop_assert_eq!(&buf[p.payload], q.payload);
        }
        Err(e) if head.len() >= MAX_HEADER_LEN.min(buf.len()) => {
            prop_assert_eq!(Err(e), whole.map(|_| ()));
        }
        Err(_) => {}
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn bth_round_trip(b in opcode().prop_flat_map(bth), tver in 0u8..16) {
        let b = Bth { tver, ..b };
        let mut buf = [0u8; 12];
        b.write(&mut buf).unwrap();
        prop_assert_eq!(Bth::parse(&buf).unwrap(), b);
    }

    #[test]
    fn small_headers_round_trip(r in reth(), a in aeth(), t in atomic_eth(), d in deth(),
                                f in feth(), x in any::<(u64, u32, u32)>()) {
        let mut buf = [0u8; 28];
        r.write(&mut buf).unwrap();
        prop_assert_eq!(Reth::parse(&buf).unwrap(), r);
        a.write(&mut buf).unwrap();
        prop_assert_eq!(Aeth::parse(&buf).unwrap(), a);
        t.write(&mut buf).unwrap();
        prop_assert_eq!(AtomicEth::parse(&buf).unwrap(), t);
        d.write(&mut buf).unwrap();
        prop_assert_eq!(Deth::parse(&buf).unwrap(), d);
        f.write(&mut buf).unwrap();
        prop_assert_eq!(Feth::parse(&buf).unwrap(), f);
        let k = AtomicAckEth { orig: x.0 };
        k.write(&mut buf).unwrap();
        prop_assert_eq!(AtomicAckEth::parse(&buf).unwrap(), k);
        let i = ImmDt { imm: x.1 };
        i.write(&mut buf).unwrap();
        prop_assert_eq!(ImmDt::parse(&buf).unwrap(), i);
        let e = Ieth { rkey: x.2 };
        e.write(&mut buf).unwrap();
        prop_assert_eq!(Ieth::parse(&buf).unwrap(), e);
    }

    #[test]
    fn out_of_range_fields_error(qpn in 0x100_0000u32.., msn in 0x100_0000u32..,
                                 pad in 4u8.., plt in 16u8..) {
        let mut buf = [0u8; 12];
        let b = Bth::new(Opcode::RcSendOnly, qpn, Psn::new(0));
        prop_assert_eq!(b.write(&mut buf), Err(ProtoError::FieldOutOfRange));
        let b = Bth { pad, ..Bth::new(Opcode::RcSendOnly, 1, Psn::new(0)) };
        prop_assert_eq!(b.write(&mut buf), Err(ProtoError::FieldOutOfRange));
        let a = Aeth { syndrome: Syndrome::ACK, msn };
        prop_assert_eq!(a.write(&mut buf), Err(ProtoError::FieldOutOfRange));
        let d = Deth { qkey: 0, src_qpn: qpn };
        prop_assert_eq!(d.write(&mut buf), Err(ProtoError::FieldOutOfRange));
        let f = Feth { placement: plt, selectivity: 0 };
        prop_assert_eq!(f.write(&mut buf), Err(ProtoError::FieldOutOfRange));
    }

    #[test]
    fn packet_round_trip((h, payload) in packet()) {
        let mut buf = vec![0u8; 4200];
        let lay = encode(&h, &payload, &mut buf).unwrap();
        prop_assert_eq!(lay.pad, pad_len(payload.len()));
        let p = Packet::parse(&buf[..lay.total_len]).unwrap();
        let mut expect = h;
        expect.bth.pad = lay.pad as u8;
        prop_assert_eq!(p.hdr, expect);
        prop_assert_eq!(p.payload, &payload[..]);
    }

    /// `peek` accepts what `parse` accepts, refuses it for the same reason, and finds the
    /// same BTH and payload.
    #[test]
    fn peek_agrees_with_parse(op in opcode(), ver in prop::bool::weighted(0.9),
                              mut bytes in prop::collection::vec(any::<u8>(), 0..120)) {
        if let Some(b) = bytes.get_mut(0) {
            *b = op.to_u8();
        }
        if ver {
            if let Some(b) = bytes.get_mut(1) {
                *b &= 0xf0;
            }
        }
        peek_agrees(&bytes)?;
    }

    /// `parse_head` of any first bytes agrees with `parse`, on arbitrary bytes behind a
    /// known opcode.
    #[test]
    fn parse_head_agrees_with_parse(op in opcode(), cut in 0usize..130,
                                    mut bytes in prop::collection::vec(any::<u8>(), 0..120)) {
        if let Some(b) = bytes.get_mut(0) {
            *b = op.to_u8();
        }
        if let Some(b) = bytes.get_mut(1) {
            *b &= 0xf0;
        }
        head_agrees(&bytes, cut)?;
    }

    /// The same on valid packets of every opcode, cut anywhere.
    #[test]
    fn parse_head_agrees_on_packets((h, payload) in packet(), cut in 0usize..4200) {
        let mut buf = vec![0u8; 4200];
        let lay = encode(&h, &payload, &mut buf).unwrap();
        buf.truncate(lay.total_len);
        prop_assert!(Packet::parse(&buf).is_ok());
        head_agrees(&buf, cut)?;
        head_agrees(&buf, lay.header_len)?;
        prop_assert!(Packet::parse_head(&buf[..lay.header_len], buf.len()).is_ok());
    }

    /// The same on valid packets with one header byte replaced: what the extension headers
    /// hold, where a check of content (not length) would show.
    #[test]
    fn peek_agrees_on_packets((h, payload) in packet(), at in any::<prop::sample::Index>(),
                              byte in any::<u8>()) {
        let mut buf = vec![0u8; 4200];
        let lay = encode(&h, &payload, &mut buf).unwrap();
        buf.truncate(lay.total_len);
        buf[at.index(lay.header_len)] = byte;
        peek_agrees(&buf)?;
    }

    #[test]
    fn parse_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = Packet::parse(&bytes);
        let _ = Packet::peek(&bytes);
        let _ = Headers::parse(&bytes);
        let _ = Bth::parse(&bytes);
        let _ = Reth::parse(&bytes);
        let _ = Aeth::parse(&bytes);
        let _ = AtomicEth::parse(&bytes);
        let _ = Deth::parse(&bytes);
        let _ = Feth::parse(&bytes);
    }

    /// Arbitrary bytes behind a known opcode, to get past the opcode check into the length
    /// logic; whatever parses encodes back to a packet that parses the same.
    #[test]
    fn parse_encode_parse(op in opcode(), ver in prop::bool::weighted(0.9),
                          mut bytes in prop::collection::vec(any::<u8>(), 12..120)) {
        bytes[0] = op.to_u8();
        if ver {
            bytes[1] &= 0xf0;
        }
        if let Ok(p) = Packet::parse(&bytes) {
            let mut buf = vec![0u8; bytes.len() + 8];
            let lay = encode(&p.hdr, p.payload, &mut buf).unwrap();
            prop_assert_eq!(lay.total_len, bytes.len());
            let q = Packet::parse(&buf[..lay.total_len]).unwrap();
            prop_assert_eq!(q, p);
        }
    }

    /// A generated ICRC verifies; any flipped bit outside the masked BTH byte breaks it;
    /// and the ICRC checked in parts (the head, the rest continued in two pieces split
    /// anywhere, the trailer), as a receiver of a paged packet does, agrees with `verify`
    /// on both.
    #[test]
    fn icrc_generate_verify((h, payload) in packet(), ip in ipv4(), udp in any::<[u8; 8]>(),
                            cut in any::<prop::sample::Index>(),
                            flip in any::<prop::sample::Index>(), bit in 0u8..8) {
        let mut buf = vec![0u8; 4200];
        let lay = encode(&h, &payload, &mut buf).unwrap();
        let pkt = &mut buf[..lay.total_len];
        let net = NetHeaders::Ipv4 { ip: &ip, udp: &udp };
        icrc::generate(&TableCrc32, &net, pkt).unwrap();
        let icrc_at = lay.total_len - 4;
        let mid = 12 + cut.index(icrc_at - 12 + 1);
        let in_parts = |pkt: &[u8]| {
            let (rest, stored) = pkt.split_at(icrc_at);
            icrc::verify_parts(&TableCrc32, &net, &pkt[..12], |c| {
                let c = TableCrc32.update(c, &rest[12..mid]);
                TableCrc32.update(c, &rest[mid..])
            }, stored)
        };
        prop_assert_eq!(icrc::verify(&TableCrc32, &net, pkt), Ok(()));
        prop_assert_eq!(in_parts(pkt), Ok(()));
        let i = flip.index(pkt.len());
        if i != 4 {
            pkt[i] ^= 1 << bit;
            prop_assert_eq!(icrc::verify(&TableCrc32, &net, pkt), Err(ProtoError::BadIcrc));
            prop_assert_eq!(in_parts(pkt), Err(ProtoError::BadIcrc));
        }
    }

    #[test]
    fn icrc_never_panics(ip in prop::collection::vec(any::<u8>(), 0..48),
                         udp in prop::collection::vec(any::<u8>(), 0..10),
                         pkt in prop::collection::vec(any::<u8>(), 0..64), v6 in any::<bool>()) {
        let net = if v6 {
            NetHeaders::Ipv6 { ip: &ip, udp: &udp }
        } else {
            NetHeaders::Ipv4 { ip: &ip, udp: &udp }
        };
        let _ = icrc::verify(&TableCrc32, &net, &pkt);
    }

    #[test]
    fn psn_arithmetic(a in 0u32..=PSN_MASK, d in 0u32..=PSN_MASK) {
        let a = Psn::new(a);
        let b = a.wrapping_add(d);
        prop_assert_eq!(b.distance_from(a), d);
        prop_assert_eq!(b.wrapping_sub(d), a);
        let diff = b.diff(a);
        prop_assert!((-(1 << 23)..(1 << 23)).contains(&diff));
        prop_assert_eq!(diff.rem_euclid(1 << 24) as u32, d);
        if d != 0 && d != 1 << 23 {
            prop_assert_eq!(a.diff(b), -diff);
            prop_assert_eq!(a.compare(b), b.compare(a).reverse());
        }
        prop_assert_eq!(b.is_after(a), d != 0 && d < (1 << 23));
    }

    #[test]
    fn segmentation_invariants(len in prop_oneof![0u32..5000, 0u32..(1 << 24)], m in mtu(),
                               psn in 0u32..=PSN_MASK,
                               wr in prop::sample::select(vec![WrOpcode::Send,
                                   WrOpcode::SendImm, WrOpcode::RdmaWrite,
                                   WrOpcode::RdmaWriteImm, WrOpcode::RdmaRead]),
                               rc in any::<bool>()) {
        let qp = if rc || wr == WrOpcode::RdmaRead { QpType::Rc } else { QpType::Uc };
        let seg = Segmenter::new(qp, wr, len, m, Psn::new(psn)).unwrap();
        let span = seg.psn_span();
        prop_assert_eq!(span, packets_for(len, m.bytes()));
        prop_assert_eq!(seg.last_psn().distance_from(Psn::new(psn)), span - 1);
        let s: Vec<Segment> = seg.collect();
        if wr == WrOpcode::RdmaRead {
            prop_assert_eq!(s.len(), 1);
        } else {
            prop_assert_eq!(s.len() as u32, span);
            let total: u64 = s.iter().map(|x| u64::from(x.payload_len)).sum();
            prop_assert_eq!(total, u64::from(len));
            for (i, x) in s.iter().enumerate() {
                prop_assert_eq!(x.psn, Psn::new(psn).wrapping_add(i as u32));
                prop_assert!(x.payload_len <= m.bytes());
                prop_assert_eq!(x.opcode.is_start(), i == 0);
                prop_assert_eq!(x.opcode.is_end(), i + 1 == s.len());
                // Every packet passes the responder's length checks.
                let len_ok = responder::check_length(qp, x.opcode, x.payload_len, m, None, 0);
                prop_assert!(len_ok.is_ok());
                prop_assert!(responder::check_write_payload(x.remaining, x.payload_len,
                    pad_len(x.payload_len as usize) as u8, m).is_ok());
            }
        }
    }

    #[test]
    fn read_reply_invariants(len in prop_oneof![0u32..5000, 0u32..(1 << 24)], m in mtu(),
                             psn in 0u32..=PSN_MASK, fresh in any::<bool>()) {
        let r: Vec<_> = ReadReply::new(Psn::new(psn), len, m, fresh).collect();
        prop_assert_eq!(r.len() as u32, packets_for(len, m.bytes()));
        let last = responder::read_last_psn(Psn::new(psn), len, m);
        prop_assert_eq!(r.last().unwrap().psn, last);
        let total: u64 = r.iter().map(|x| u64::from(x.payload_len)).sum();
        prop_assert_eq!(total, u64::from(len));
        for x in &r {
            let ok = responder::check_length(QpType::Rc, x.opcode, x.payload_len, m, None, 0);
            prop_assert!(ok.is_ok());
        }
    }

    #[test]
    fn replay_and_range_never_panic(a in any::<(u64, u32, u32, u64, u32, u32)>(),
                                    psn in 0u32..=PSN_MASK, r in any::<(u64, u64, u64, u64)>()) {
        let res = ReadResource { first_psn: Psn::new(psn), va: a.0, len: a.1, rkey: a.2 };
        let reth = Reth { va: a.3, rkey: a.4, dma_len: a.5 };
        if let Some(rp) = responder::read_replay(&res, Psn::new(psn), &reth) {
            prop_assert!(rp.va >= res.va);
            let end = u128::from(rp.va) + u128::from(rp.len);
            prop_assert!(end <= u128::from(res.va) + u128::from(res.len));
        }
        let ok = responder::check_range(r.0, r.1, r.2, r.3).is_ok();
        let expect = u128::from(r.0) >= u128::from(r.2)
            && u128::from(r.0) + u128::from(r.1) <= u128::from(r.2) + u128::from(r.3)
            && r.0.checked_add(r.1).is_some() && r.2.checked_add(r.3).is_some();
        prop_assert_eq!(ok, expect);
    }
}
