// SPDX-License-Identifier: GPL-2.0

//! Loopback bursts: a burst stands for exactly the packets per-packet segmentation gives,
//! and the responder's burst checks accept exactly what its per-packet checks would accept
//! of those packets.

use proptest::prelude::*;

use rrxe_proto::proto::burst::{
    check_burst, check_burst_write, check_read_burst, Burst, ReadBurst, MAX_BURST,
    MAX_READ_BURST_PAYLOAD,
};
use rrxe_proto::proto::mtu::Mtu;
use rrxe_proto::proto::opcode::Opcode;
use rrxe_proto::proto::packet::pad_len;
use rrxe_proto::proto::psn::Psn;
use rrxe_proto::proto::requester::{
    packets_for, psn_window_open, window_room, AckReqPolicy, Segment, Segmenter, MAX_PKT_PER_ACK,
    MAX_UNACKED_PSNS,
};
use rrxe_proto::proto::responder::{
    check_length, check_write_payload, read_last_psn, ReadReply, ReadSegment, RespError,
};
use rrxe_proto::proto::reth::Reth;
use rrxe_proto::proto::verbs::{QpType, WrOpcode};

fn mtu() -> impl Strategy<Value = Mtu> {
    prop::sample::select(Mtu::ALL.to_vec())
}

fn wr() -> impl Strategy<Value = WrOpcode> {
    prop::sample::select(vec![
        WrOpcode::Send,
        WrOpcode::SendImm,
        WrOpcode::SendInv,
        WrOpcode::RdmaWrite,
        WrOpcode::RdmaWriteImm,
    ])
}

/// The bursts of a message, each at most `max_k` packets.
fn bursts(wr: WrOpcode, len: u32, m: Mtu, psn: u32, max_k: u32) -> Vec<Burst> {
    let mut s = Segmenter::new(QpType::Rc, wr, len, m, Psn::new(psn)).unwrap();
    let mut v = Vec::new();
    while let Some(b) = s.next_burst(max_k) {
        v.push(b);
    }
    v
}

fn packets(wr: WrOpcode, len: u32, m: Mtu, psn: u32) -> Vec<Segment> {
    Segmenter::new(QpType::Rc, wr, len, m, Psn::new(psn))
        .unwrap()
        .collect()
}

/// The responses of a read reply in bursts of at most `max_k`, each with its count.
fn read_bursts(
    len: u32,
    m: Mtu,
    psn: u32,
    from_first: bool,
    max_k: u32,
) -> Vec<(ReadSegment, u32)> {
    let mut r = ReadReply::new(Psn::new(psn), len, m, from_first);
    let mut v = Vec::new();
    while let Some(b) = r.next_burst(max_k) {
        v.push(b);
    }
    v
}

/// Whether the completer takes a response of `payload` bytes with `opcode` at `psn` of a
/// read of `len` bytes from `first` to `last`, one at a time (comp.rs `read_offset`).
fn takes_response(
    opcode: Opcode,
    psn: Psn,
    payload: u32,
    first: Psn,
    last: Psn,
    len: u32,
    mtu: u32,
) -> bool {
    let off = u64::from(psn.distance_from(first)) * u64::from(mtu);
    if psn == last {
        opcode.is_end() && u64::from(payload) == u64::from(len).saturating_sub(off)
    } else {
        payload == mtu
    }
}

proptest! {
    /// Read bursts cover the reply's responses in order, each as the responses it stands
    /// for would: first PSN, offset, payload, opcode position; never more than `max_k`
    /// responses or MAX_READ_BURST_PAYLOAD bytes.
    #[test]
    fn read_bursts_are_the_responses(len in prop_oneof![0u32..20_000, 0u32..(1 << 22)],
                                     m in mtu(), psn in 0u32..=0xff_ffff,
                                     from_first in any::<bool>(), max_k in 0u32..80) {
        let pkts: Vec<ReadSegment> = ReadReply::new(Psn::new(psn), len, m, from_first).collect();
        let bs = read_bursts(len, m, psn, from_first, max_k);
        let mut i = 0;
        for (b, k) in &bs {
            prop_assert!(*k >= 1 && *k <= max_k.max(1) && *k <= MAX_BURST);
            let part = &pkts[i..i + *k as usize];
            prop_assert_eq!(b.psn, part[0].psn);
            prop_assert_eq!(b.offset, part[0].offset);
            prop_assert_eq!(b.payload_len, part.iter().map(|p| p.payload_len).sum::<u32>());
            prop_assert_eq!(b.opcode.is_start(), part[0].opcode.is_start());
            prop_assert_eq!(b.opcode.is_end(), part[part.len() - 1].opcode.is_end());
            if *k == 1 {
                prop_assert_eq!(*b, part[0]);
            } else {
                prop_assert!(b.payload_len as usize <= MAX_READ_BURST_PAYLOAD);
            }
            i += *k as usize;
        }
        prop_assert_eq!(i, pkts.len());
    }

    /// The completer takes every burst of a read's reply where it expects it, as the
    /// responses it stands for, with the same MTU on both sides; with different MTUs none.
    #[test]
    fn read_bursts_check_out(len in 0u32..(1 << 20), m in mtu(), r in mtu(),
                             psn in 0u32..=0xff_ffff, max_k in 2u32..80) {
        let first = Psn::new(psn);
        let last = read_last_psn(first, len, m);
        for (b, k) in read_bursts(len, m, psn, true, max_k).iter().filter(|(_, k)| *k > 1) {
            let got = check_read_burst(b.opcode, b.psn, b.payload_len, m, r, first, last, len);
            if m == r {
                let want = ReadBurst {
                    offset: b.offset,
                    last_psn: b.psn.wrapping_add(k - 1),
                };
                prop_assert_eq!(got, Some(want));
            } else {
                prop_assert_eq!(got, None);
            }
        }
    }

    /// The completer takes every burst of the answer to a range of a read asked for again
    /// as a new request (from its start, First to Last), where the range lies.
    #[test]
    fn range_bursts_check_out(len in 1u32..(1 << 21), m in mtu(), psn in 0u32..=0xff_ffff,
                              a in 0u32..1000, n in 1u32..300, max_k in 2u32..80) {
        let first = Psn::new(psn);
        let last = read_last_psn(first, len, m);
        let mb = m.bytes();
        let total = last.distance_from(first) + 1;
        let at = a % total;
        let count = n.min(total - at);
        let start = first.wrapping_add(at);
        let range = if at + count == total { len - at * mb } else { count * mb };
        for (b, k) in read_bursts(range, m, start.value(), true, max_k)
            .iter()
            .filter(|(_, k)| *k > 1)
        {
            let got = check_read_burst(b.opcode, b.psn, b.payload_len, m, m, first, last, len);
            let want = ReadBurst {
                offset: at * mb + b.offset,
                last_psn: b.psn.wrapping_add(k - 1),
            };
            prop_assert_eq!(got, Some(want));
        }
    }

    /// check_read_burst takes a burst only if the completer would take each of its
    /// responses in turn, and never past the read's last PSN.
    #[test]
    fn read_burst_is_per_response(op in prop::sample::select(Opcode::ALL.to_vec()),
                                  pk in 0u32..3, pr in 0u32..40_000, m in mtu(),
                                  first in 0u32..=0xff_ffff, at in 0u32..100,
                                  len in prop_oneof![0u32..100_000, 0u32..(1 << 22)]) {
        let first = Psn::new(first);
        let last = read_last_psn(first, len, m);
        let psn = first.wrapping_add(at);
        let mb = m.bytes();
        // Lengths near the ones that fit: whole MTUs, the rest of the read, any.
        let payload = match pk {
            0 => (pr % 70) * mb,
            1 => len.saturating_sub(at * mb),
            _ => pr,
        };
        if let Some(rb) = check_read_burst(op, psn, payload, m, m, first, last, len) {
            let k = rb.last_psn.distance_from(psn) + 1;
            prop_assert!((2..=MAX_BURST).contains(&k));
            prop_assert!(!rb.last_psn.is_after(last));
            prop_assert_eq!(u64::from(rb.offset), u64::from(at) * u64::from(mb));
            for i in 0..k {
                let p = psn.wrapping_add(i);
                let size = if i + 1 < k { mb } else { payload - (k - 1) * mb };
                // Each response carries the burst's opcode's end only if it is its last.
                let o = if i + 1 == k { op } else { Opcode::RcReadResponseMiddle };
                prop_assert!(takes_response(o, p, size, first, last, len, mb));
            }
        }
    }

    /// Bursts cover the message's packets in order, each as the packets it stands for
    /// would: first PSN, offset, RETH length, payload, opcode position; never more than
    /// `max_k` packets; the last packet of a WRITE with immediate alone.
    #[test]
    fn bursts_are_the_packets(wr in wr(), len in prop_oneof![0u32..20_000, 0u32..(1 << 22)],
                              m in mtu(), psn in 0u32..=0xff_ffff, max_k in 0u32..80) {
        let pkts = packets(wr, len, m, psn);
        let bs = bursts(wr, len, m, psn, max_k);
        let mut i = 0;
        for b in &bs {
            prop_assert!(b.k >= 1 && b.k <= max_k.max(1) && b.k <= MAX_BURST);
            let part = &pkts[i..i + b.k as usize];
            prop_assert_eq!(b.seg.psn, part[0].psn);
            prop_assert_eq!(b.last_psn(), part[part.len() - 1].psn);
            prop_assert_eq!(b.seg.offset, part[0].offset);
            prop_assert_eq!(b.seg.remaining, part[0].remaining);
            prop_assert_eq!(b.seg.payload_len, part.iter().map(|p| p.payload_len).sum::<u32>());
            let (first, last) = (part[0].opcode, part[part.len() - 1].opcode);
            prop_assert_eq!(b.seg.opcode.is_start(), first.is_start());
            prop_assert_eq!(b.seg.opcode.is_end(), last.is_end());
            if b.k == 1 {
                prop_assert_eq!(b.seg, part[0]);
            }
            if b.k > 1 && wr == WrOpcode::RdmaWriteImm {
                prop_assert!(!last.has_immediate());
            }
            i += b.k as usize;
        }
        prop_assert_eq!(i, pkts.len());
    }

    /// The responder takes every burst the requester cuts, for the packets it stands for,
    /// with the same MTU on both sides; with different MTUs none (as its first packet).
    #[test]
    fn bursts_check_out(wr in wr(), len in 0u32..(1 << 20), m in mtu(), r in mtu(),
                        max_k in 2u32..80) {
        for b in bursts(wr, len, m, 0, max_k).iter().filter(|b| b.k > 1) {
            let got = check_burst(QpType::Rc, b.seg.opcode, b.seg.payload_len, None, m, r);
            if m == r {
                prop_assert_eq!(got, Ok(b.k));
            } else {
                prop_assert_eq!(got, Err(RespError::Length));
            }
        }
    }

    /// check_burst accepts a length for k packets exactly when check_length accepts each
    /// of them (the last one's position from the burst's opcode).
    #[test]
    fn burst_length_is_per_packet(op in prop::sample::select(Opcode::ALL.to_vec()),
                                  payload in 0u32..70_000, m in mtu()) {
        let got = check_burst(QpType::Rc, op, payload, None, m, m);
        let mb = m.bytes();
        if let Ok(k) = got {
            prop_assert!((2..=MAX_BURST).contains(&k));
            // Every packet but the last: one MTU, as a First (or Middle) packet (the length
            // rules go by position alone).
            let inner = if op.is_start() { Opcode::RcSendFirst } else { Opcode::RcSendMiddle };
            prop_assert_eq!(check_length(QpType::Rc, inner, mb, m, None, 0), Ok(()));
            let last = payload - (k - 1) * mb;
            let end = if op.is_end() { Opcode::RcSendLast } else { Opcode::RcSendMiddle };
            prop_assert_eq!(check_length(QpType::Rc, end, last, m, None, 0), Ok(()));
        }
    }

    /// check_burst_write accepts an RDMA WRITE burst exactly when check_write_payload
    /// accepts each of its packets in turn: lengths around the edges (the last packet a
    /// whole MTU or not, the message ending with the burst, before it or after it).
    #[test]
    fn burst_write_is_per_packet(k in 2u32..70, m in mtu(), pad in 0u8..4,
                                 ex in 0u32..4, exr in 0u32..5000,
                                 rs in 0u32..7, rr in 0u32..200_000) {
        let mb = m.bytes();
        let before = (k - 1) * mb;
        let extra = match ex {
            0 => mb,
            1 => exr % (mb + 4),
            2 => 1 + exr % 4,
            _ => exr,
        };
        let payload = before + extra;
        let resid = match rs {
            0 => payload,
            1 => payload + 1,
            2 => payload.saturating_sub(1),
            3 => payload + mb,
            4 => before,
            5 => before + mb + 1 + rr % 8,
            _ => rr,
        };
        let burst = check_burst_write(resid, payload, pad, k, m);
        // The packets: k - 1 of one MTU and no pad, then the rest with the pad.
        let mut per_packet = Ok(());
        let mut left = resid;
        for i in 0..k {
            let (len, p) = if i + 1 < k { (mb, 0) } else { (extra, pad) };
            if let Err(e) = check_write_payload(left, len, p, m) {
                per_packet = Err(e);
                break;
            }
            left = left.saturating_sub(len);
            if left == 0 && i + 1 < k {
                // The message ended before the burst did.
                per_packet = Err(RespError::Length);
                break;
            }
        }
        prop_assert_eq!(burst, per_packet);
    }

    /// window_room counts the PSNs psn_window_open lets go from `next`.
    #[test]
    fn window_room_counts(oldest in 0u32..=0xff_ffff, ahead in 0u32..300) {
        let oldest = Psn::new(oldest);
        let next = oldest.wrapping_add(ahead);
        let open = (0..=MAX_UNACKED_PSNS + 2)
            .take_while(|i| psn_window_open(next.wrapping_add(*i), oldest))
            .count() as u32;
        prop_assert_eq!(window_room(next, oldest), open);
    }
}

#[test]
fn write_imm_last_alone() {
    let m = Mtu::Mtu1024;
    let bs = bursts(WrOpcode::RdmaWriteImm, 8 * 1024, m, 0, 64);
    assert_eq!(bs.iter().map(|b| b.k).collect::<Vec<_>>(), [7, 1]);
    assert_eq!(bs[0].seg.opcode, Opcode::RcWriteFirst);
    assert_eq!(bs[1].seg.opcode, Opcode::RcWriteLastImm);
    // A whole WRITE with immediate of two packets: none may burst.
    let bs = bursts(WrOpcode::RdmaWriteImm, 2 * 1024, m, 0, 64);
    assert_eq!(bs.iter().map(|b| b.k).collect::<Vec<_>>(), [1, 1]);
    assert_eq!(
        check_burst(QpType::Rc, Opcode::RcWriteLastImm, 2048, None, m, m),
        Err(RespError::Length)
    );
    assert_eq!(
        check_burst(QpType::Rc, Opcode::RcWriteOnlyImm, 2048, None, m, m),
        Err(RespError::Length)
    );
}

#[test]
fn burst_shapes() {
    let m = Mtu::Mtu1024;
    // 64 KiB in bursts of up to 60: Only is never possible, First then Last.
    let bs = bursts(WrOpcode::RdmaWrite, 64 * 1024, m, 0xff_fff0, 60);
    assert_eq!(bs.len(), 2);
    assert_eq!((bs[0].seg.opcode, bs[0].k), (Opcode::RcWriteFirst, 60));
    assert_eq!((bs[1].seg.opcode, bs[1].k), (Opcode::RcWriteLast, 4));
    assert_eq!(bs[1].seg.psn, Psn::new(0xff_fff0).wrapping_add(60));
    assert_eq!(bs[1].last_psn(), Psn::new(0xff_fff0).wrapping_add(63));
    // A whole SEND in one burst.
    let bs = bursts(WrOpcode::Send, 5000, m, 7, 60);
    assert_eq!(
        (bs[0].seg.opcode, bs[0].k, bs[0].seg.payload_len),
        (Opcode::RcSendOnly, 5, 5000)
    );
    assert_eq!(
        check_burst(QpType::Rc, Opcode::RcSendOnly, 5000, None, m, m),
        Ok(5)
    );
    assert_eq!(packets_for(5000, 1024), 5);
    // One MTU or less is no burst; a First burst of a part MTU neither.
    assert_eq!(
        check_burst(QpType::Rc, Opcode::RcSendOnly, 1024, None, m, m),
        Err(RespError::Length)
    );
    assert_eq!(
        check_burst(QpType::Rc, Opcode::RcSendFirst, 3000, None, m, m),
        Err(RespError::Length)
    );
    assert_eq!(
        check_burst(QpType::Rc, Opcode::RcSendFirst, 3072, None, m, m),
        Ok(3)
    );
    // Only SEND and WRITE.
    assert_eq!(
        check_burst(QpType::Rc, Opcode::RcReadResponseFirst, 3072, None, m, m),
        Err(RespError::Length)
    );
    // RC and UC only; a RETH length within the largest message.
    for qp in [QpType::Ud, QpType::Gsi] {
        assert_eq!(
            check_burst(qp, Opcode::UdSendOnly, 5000, None, m, m),
            Err(RespError::Length)
        );
    }
    assert_eq!(
        check_burst(QpType::Uc, Opcode::UcSendOnly, 5000, None, m, m),
        Err(RespError::Length)
    );
    let reth = |dma_len| {
        Some(Reth {
            va: 0,
            rkey: 1,
            dma_len,
        })
    };
    assert_eq!(
        check_burst(QpType::Rc, Opcode::RcWriteFirst, 3072, reth(1 << 31), m, m),
        Ok(3)
    );
    assert_eq!(
        check_burst(
            QpType::Rc,
            Opcode::RcWriteFirst,
            3072,
            reth((1 << 31) + 1),
            m,
            m
        ),
        Err(RespError::Length)
    );
    // No more than the payload a burst may carry, whatever the MTU.
    let bs = bursts(WrOpcode::RdmaWrite, 1 << 20, Mtu::Mtu4096, 0, 64);
    assert!(bs.iter().all(|b| b.k <= 15));
    assert!(AckReqPolicy::burst_ack_req(QpType::Rc));
    assert!(!AckReqPolicy::burst_ack_req(QpType::Uc));
    // A burst that went restarts the count of packets without a request.
    let mut p = AckReqPolicy::new();
    for _ in 0..40 {
        assert!(!p.ack_req(QpType::Rc, Opcode::RcWriteMiddle));
    }
    p.burst_sent();
    let n = (0..100)
        .take_while(|_| !p.ack_req(QpType::Rc, Opcode::RcWriteMiddle))
        .count();
    assert_eq!(n as u32, MAX_PKT_PER_ACK);
    assert_eq!(pad_len(5000), 0);
}

#[test]
fn read_burst_shapes() {
    let m = Mtu::Mtu1024;
    let first = Psn::new(0xff_fff0);
    // 64 KiB: 7 pages at most per burst, First, Middle, Last.
    let bs = read_bursts(64 * 1024, m, 0xff_fff0, true, 64);
    let got: Vec<_> = bs
        .iter()
        .map(|(b, k)| (b.opcode, *k, b.payload_len))
        .collect();
    assert_eq!(
        got,
        [
            (Opcode::RcReadResponseFirst, 28, 28 * 1024),
            (Opcode::RcReadResponseMiddle, 28, 28 * 1024),
            (Opcode::RcReadResponseLast, 8, 8 * 1024),
        ]
    );
    let last = read_last_psn(first, 64 * 1024, m);
    assert_eq!(last, first.wrapping_add(63));
    let (b, _) = bs[2];
    assert_eq!(
        check_read_burst(b.opcode, b.psn, b.payload_len, m, m, first, last, 64 * 1024),
        Some(ReadBurst {
            offset: 56 * 1024,
            last_psn: last
        })
    );
    // Not a Middle where the read ends, nor past its end, nor short of it with an end.
    for op in [
        Opcode::RcReadResponseMiddle,
        Opcode::RcSendLast,
        Opcode::RcWriteLast,
    ] {
        assert_eq!(
            check_read_burst(op, b.psn, b.payload_len, m, m, first, last, 64 * 1024),
            None
        );
    }
    let end = first.wrapping_add(60);
    assert_eq!(
        check_read_burst(
            Opcode::RcReadResponseMiddle,
            end,
            8 * 1024,
            m,
            m,
            first,
            last,
            64 * 1024
        ),
        None
    );
    // A Last burst before the read's end: the end of a range asked for again.
    assert_eq!(
        check_read_burst(
            Opcode::RcReadResponseLast,
            first.wrapping_add(40),
            8 * 1024,
            m,
            m,
            first,
            last,
            64 * 1024
        ),
        Some(ReadBurst {
            offset: 40 * 1024,
            last_psn: first.wrapping_add(47)
        })
    );
    // A whole read of 5,000 bytes: one Only burst; at MTU 4096, 7 responses at most.
    let bs = read_bursts(5000, m, 7, true, 64);
    assert_eq!((bs[0].0.opcode, bs[0].1), (Opcode::RcReadResponseOnly, 5));
    let bs = read_bursts(1 << 20, Mtu::Mtu4096, 0, true, 64);
    assert!(bs.iter().all(|(_, k)| *k <= 7));
    // A replay from the middle continues the sequence: Middle, then Last.
    let bs = read_bursts(8 * 1024, m, 3, false, 64);
    assert_eq!((bs[0].0.opcode, bs[0].1), (Opcode::RcReadResponseLast, 8));
}
