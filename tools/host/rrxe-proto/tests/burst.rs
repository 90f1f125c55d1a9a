// SPDX-License-Identifier: GPL-2.0

//! Loopback bursts: a burst stands for exactly the packets per-packet segmentation gives,
//! and the responder's burst checks accept exactly what its per-packet checks would accept
//! of those packets.

use proptest::prelude::*;

use rrxe_proto::proto::burst::{check_burst, check_burst_write, Burst, MAX_BURST};
use rrxe_proto::proto::mtu::Mtu;
use rrxe_proto::proto::opcode::Opcode;
use rrxe_proto::proto::packet::pad_len;
use rrxe_proto::proto::psn::Psn;
use rrxe_proto::proto::requester::{
    packets_for, psn_window_open, window_room, AckReqPolicy, Segment, Segmenter, MAX_PKT_PER_ACK,
    MAX_UNACKED_PSNS,
};
use rrxe_proto::proto::responder::{check_length, check_write_payload, RespError};
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

proptest! {
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
