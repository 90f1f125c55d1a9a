// SPDX-License-Identifier: GPL-2.0

//! Requester: segmentation, PSN assignment, ack requests, solicited events, WQE gating.

use rrxe_proto::proto::mtu::Mtu;
use rrxe_proto::proto::opcode::{Opcode, Operation, Position};
use rrxe_proto::proto::psn::{Psn, PSN_MASK};
use rrxe_proto::proto::requester::{
    gate, packet_opcode, packets_for, psn_window_open, solicited, AckReqPolicy, Gate, GateInput,
    ReqError, Segment, Segmenter, MAX_MSG_SIZE, MAX_PKT_PER_ACK, MAX_UNACKED_PSNS,
};
use rrxe_proto::proto::verbs::{QpType, WcStatus, WrOpcode};

fn segs(qp: QpType, wr: WrOpcode, len: u32, mtu: Mtu, psn: u32) -> Vec<Segment> {
    Segmenter::new(qp, wr, len, mtu, Psn::new(psn))
        .unwrap()
        .collect()
}

/// Checks the invariants of a SEND/WRITE segmentation.
fn check_data_segments(s: &[Segment], qp: QpType, wr: WrOpcode, len: u32, mtu: Mtu, psn: u32) {
    let m = mtu.bytes();
    let n = packets_for(len, m) as usize;
    assert_eq!(s.len(), n, "{wr:?} {len} {mtu:?}");
    let mut total = 0u64;
    for (i, seg) in s.iter().enumerate() {
        assert_eq!(seg.psn, Psn::new(psn).wrapping_add(i as u32));
        assert_eq!(seg.offset as u64, total);
        assert_eq!(seg.remaining, len - seg.offset);
        let pos = seg.opcode.position();
        let expect_pos = match (i == 0, i + 1 == n) {
            (true, true) => Position::Only,
            (true, false) => Position::First,
            (false, false) => Position::Middle,
            (false, true) => Position::Last,
        };
        assert_eq!(pos, expect_pos);
        assert_eq!(seg.opcode.transport(), qp.transport());
        if i + 1 < n {
            assert_eq!(seg.payload_len, m);
        } else {
            assert!(seg.payload_len <= m);
            assert!(seg.payload_len > 0 || len == 0);
        }
        total += seg.payload_len as u64;
    }
    assert_eq!(total, len as u64);
    let last = s.last().unwrap();
    match wr {
        WrOpcode::SendImm | WrOpcode::RdmaWriteImm => assert!(last.opcode.has_immediate()),
        WrOpcode::SendInv => assert!(last.opcode.has_invalidate()),
        _ => assert!(!last.opcode.has_immediate() && !last.opcode.has_invalidate()),
    }
    for seg in &s[..n - 1] {
        assert!(!seg.opcode.has_immediate() && !seg.opcode.has_invalidate());
    }
}

#[test]
fn send_and_write_sizes_every_mtu() {
    for mtu in Mtu::ALL {
        let m = mtu.bytes();
        for len in [0, 1, m - 1, m, m + 1, 2 * m, 3 * m - 1, 8 << 20] {
            for qp in [QpType::Rc, QpType::Uc] {
                for wr in [
                    WrOpcode::Send,
                    WrOpcode::SendImm,
                    WrOpcode::RdmaWrite,
                    WrOpcode::RdmaWriteImm,
                ] {
                    let s = segs(qp, wr, len, mtu, 100);
                    check_data_segments(&s, qp, wr, len, mtu, 100);
                    let first = s[0].opcode;
                    let op = first.operation();
                    assert!(matches!(op, Operation::Send | Operation::Write));
                    // RDMA WRITE First/Only carry the RETH with the whole length.
                    assert_eq!(
                        first
                            .headers()
                            .contains(rrxe_proto::proto::opcode::HeaderSet::RETH),
                        op == Operation::Write
                    );
                }
            }
            let s = segs(QpType::Rc, WrOpcode::SendInv, len, mtu, 7);
            check_data_segments(&s, QpType::Rc, WrOpcode::SendInv, len, mtu, 7);
        }
    }
}

#[test]
fn eight_mib_counts() {
    let len = 8 << 20;
    for mtu in Mtu::ALL {
        let mut seg =
            Segmenter::new(QpType::Rc, WrOpcode::RdmaWrite, len, mtu, Psn::new(0)).unwrap();
        let n = len / mtu.bytes();
        assert_eq!(seg.psn_span(), n);
        assert_eq!(seg.last_psn(), Psn::new(n - 1));
        assert_eq!(seg.by_ref().count() as u32, n);
        assert_eq!(seg.next(), None);
    }
}

#[test]
fn exact_opcodes() {
    let s = segs(QpType::Rc, WrOpcode::Send, 2500, Mtu::Mtu1024, 0);
    let ops: Vec<Opcode> = s.iter().map(|x| x.opcode).collect();
    assert_eq!(
        ops,
        [
            Opcode::RcSendFirst,
            Opcode::RcSendMiddle,
            Opcode::RcSendLast
        ]
    );
    assert_eq!(
        s.iter().map(|x| x.payload_len).collect::<Vec<_>>(),
        [1024, 1024, 452]
    );
    let s = segs(QpType::Uc, WrOpcode::RdmaWriteImm, 1025, Mtu::Mtu1024, 0);
    assert_eq!(s[0].opcode, Opcode::UcWriteFirst);
    assert_eq!(s[1].opcode, Opcode::UcWriteLastImm);
    assert_eq!(s[0].remaining, 1025);
    let s = segs(QpType::Rc, WrOpcode::SendInv, 100, Mtu::Mtu1024, 0);
    assert_eq!(s[0].opcode, Opcode::RcSendOnlyInv);
    let s = segs(QpType::Rc, WrOpcode::SendInv, 2000, Mtu::Mtu1024, 0);
    assert_eq!(s[1].opcode, Opcode::RcSendLastInv);
    let s = segs(QpType::Ud, WrOpcode::SendImm, 10, Mtu::Mtu1024, 0);
    assert_eq!(s[0].opcode, Opcode::UdSendOnlyImm);
    let s = segs(QpType::Gsi, WrOpcode::Send, 256, Mtu::Mtu256, 0);
    assert_eq!(s[0].opcode, Opcode::UdSendOnly);
}

#[test]
fn psn_wraps_within_message() {
    let s = segs(
        QpType::Rc,
        WrOpcode::Send,
        5 * 256,
        Mtu::Mtu256,
        PSN_MASK - 1,
    );
    let psns: Vec<u32> = s.iter().map(|x| x.psn.value()).collect();
    assert_eq!(psns, [PSN_MASK - 1, PSN_MASK, 0, 1, 2]);
    let seg = Segmenter::new(
        QpType::Rc,
        WrOpcode::Send,
        5 * 256,
        Mtu::Mtu256,
        Psn::new(PSN_MASK - 1),
    )
    .unwrap();
    assert_eq!(seg.last_psn(), Psn::new(2));
}

#[test]
fn read_request_span() {
    for mtu in Mtu::ALL {
        let m = mtu.bytes();
        for (len, span) in [
            (0, 1),
            (1, 1),
            (m - 1, 1),
            (m, 1),
            (m + 1, 2),
            (8 << 20, (8 << 20) / m),
        ] {
            let mut seg =
                Segmenter::new(QpType::Rc, WrOpcode::RdmaRead, len, mtu, Psn::new(PSN_MASK))
                    .unwrap();
            assert_eq!(seg.psn_span(), span, "{len} {mtu:?}");
            assert_eq!(seg.first_psn(), Psn::new(PSN_MASK));
            assert_eq!(seg.last_psn(), Psn::new(PSN_MASK).wrapping_add(span - 1));
            let s: Vec<Segment> = seg.by_ref().collect();
            assert_eq!(s.len(), 1);
            assert_eq!(s[0].opcode, Opcode::RcReadRequest);
            assert_eq!((s[0].offset, s[0].payload_len, s[0].remaining), (0, 0, len));
            // A retry resumes with a request for the rest.
            if span > 1 {
                seg.resume_at(Psn::new(PSN_MASK).wrapping_add(1)).unwrap();
                let r: Vec<Segment> = seg.collect();
                assert_eq!(r.len(), 1);
                assert_eq!(r[0].psn, Psn::new(0));
                assert_eq!(r[0].offset, m);
                assert_eq!(r[0].remaining, len - m);
            }
        }
    }
}

#[test]
fn single_packet_operations() {
    for (wr, op, len) in [
        (WrOpcode::AtomicCmpSwp, Opcode::RcCompareSwap, 8),
        (WrOpcode::AtomicFetchAdd, Opcode::RcFetchAdd, 0),
        (WrOpcode::Flush, Opcode::RcFlush, 1 << 20),
        (WrOpcode::AtomicWrite, Opcode::RcAtomicWrite, 8),
    ] {
        let seg = Segmenter::new(QpType::Rc, wr, len, Mtu::Mtu256, Psn::new(9)).unwrap();
        assert_eq!(seg.psn_span(), 1);
        let s: Vec<Segment> = seg.collect();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].opcode, op);
        assert_eq!(s[0].psn, Psn::new(9));
        let payload = if wr == WrOpcode::AtomicWrite { 8 } else { 0 };
        assert_eq!(s[0].payload_len, payload);
    }
    // FLUSH's RETH carries the range length.
    let s: Vec<Segment> = Segmenter::new(
        QpType::Rc,
        WrOpcode::Flush,
        4 << 20,
        Mtu::Mtu4096,
        Psn::new(0),
    )
    .unwrap()
    .collect();
    assert_eq!(s[0].remaining, 4 << 20);
}

#[test]
fn segmentation_errors() {
    let mk = |qp, wr, len| Segmenter::new(qp, wr, len, Mtu::Mtu1024, Psn::new(0)).map(|_| ());
    assert_eq!(
        mk(QpType::Ud, WrOpcode::Send, 1025),
        Err(ReqError::UdTooLong)
    );
    assert_eq!(mk(QpType::Ud, WrOpcode::Send, 1024), Ok(()));
    assert_eq!(ReqError::UdTooLong.wc_status(), WcStatus::Success);
    assert_eq!(mk(QpType::Rc, WrOpcode::Send, MAX_MSG_SIZE), Ok(()));
    assert_eq!(
        mk(QpType::Rc, WrOpcode::Send, MAX_MSG_SIZE + 1),
        Err(ReqError::BadLength)
    );
    assert_eq!(ReqError::BadLength.wc_status(), WcStatus::LocLenErr);
    assert_eq!(
        mk(QpType::Rc, WrOpcode::AtomicWrite, 4),
        Err(ReqError::BadLength)
    );
    for (qp, wr) in [
        (QpType::Uc, WrOpcode::RdmaRead),
        (QpType::Uc, WrOpcode::SendInv),
        (QpType::Uc, WrOpcode::AtomicCmpSwp),
        (QpType::Ud, WrOpcode::RdmaWrite),
        (QpType::Ud, WrOpcode::SendInv),
        (QpType::Rc, WrOpcode::LocalInv),
        (QpType::Rc, WrOpcode::RegMr),
        (QpType::Rc, WrOpcode::BindMw),
        (QpType::Rc, WrOpcode::Lso),
        (QpType::Rc, WrOpcode::RdmaReadInv),
        (QpType::Rc, WrOpcode::MaskedAtomicCmpSwp),
    ] {
        assert_eq!(mk(qp, wr, 8), Err(ReqError::Unsupported), "{qp:?} {wr:?}");
    }
    assert_eq!(ReqError::Unsupported.wc_status(), WcStatus::LocQpOpErr);
    // Multi-packet UD and single-packet-only operations have no First/Middle opcodes.
    assert!(packet_opcode(QpType::Ud, WrOpcode::Send, true, false).is_err());
    assert!(packet_opcode(QpType::Rc, WrOpcode::RdmaRead, true, false).is_err());
    let mut seg =
        Segmenter::new(QpType::Rc, WrOpcode::Send, 3000, Mtu::Mtu1024, Psn::new(10)).unwrap();
    assert_eq!(seg.resume_at(Psn::new(13)), Err(ReqError::PsnOutOfRange));
    assert_eq!(seg.resume_at(Psn::new(9)), Err(ReqError::PsnOutOfRange));
}

#[test]
fn resume_send_in_the_middle() {
    let mut seg = Segmenter::new(
        QpType::Rc,
        WrOpcode::SendImm,
        4 * 512 + 1,
        Mtu::Mtu512,
        Psn::new(PSN_MASK - 1),
    )
    .unwrap();
    let all: Vec<Segment> = seg.by_ref().collect();
    assert_eq!(all.len(), 5);
    seg.resume_at(Psn::new(0)).unwrap();
    let again: Vec<Segment> = seg.by_ref().collect();
    assert_eq!(again, all[2..]);
    assert_eq!(again[0].opcode, Opcode::RcSendMiddle);
    seg.resume_at(Psn::new(PSN_MASK - 1)).unwrap();
    assert_eq!(seg.collect::<Vec<_>>(), all);
}

#[test]
fn ack_request_policy() {
    let mut p = AckReqPolicy::new();
    // A long RDMA WRITE: AckReq at least every MAX_PKT_PER_ACK + 1 packets and on the last.
    let s = segs(QpType::Rc, WrOpcode::RdmaWrite, 300 * 256, Mtu::Mtu256, 0);
    let flags: Vec<bool> = s.iter().map(|x| p.ack_req(QpType::Rc, x.opcode)).collect();
    assert!(*flags.last().unwrap());
    let mut gap = 0;
    for &f in &flags {
        if f {
            gap = 0;
        } else {
            gap += 1;
            assert!(gap <= MAX_PKT_PER_ACK);
        }
    }
    assert_eq!(
        flags.iter().filter(|&&f| f).count(),
        300 / (MAX_PKT_PER_ACK as usize + 1) + 1
    );
    // Short messages: every packet is a last packet.
    assert!(p.ack_req(QpType::Rc, Opcode::RcSendOnly));
    assert!(p.ack_req(QpType::Rc, Opcode::RcReadRequest));
    assert!(p.ack_req(QpType::Rc, Opcode::RcCompareSwap));
    // QP1 packets carry AckReq as rxe sends them; UC and UD never do.
    assert!(p.ack_req(QpType::Gsi, Opcode::UdSendOnly));
    assert!(!p.ack_req(QpType::Uc, Opcode::UcSendOnly));
    assert!(!p.ack_req(QpType::Ud, Opcode::UdSendOnly));
}

#[test]
fn solicited_event_bit() {
    assert!(solicited(Opcode::RcSendOnly, true));
    assert!(solicited(Opcode::RcSendLastImm, true));
    assert!(solicited(Opcode::UdSendOnly, true));
    assert!(solicited(Opcode::RcWriteOnlyImm, true));
    assert!(solicited(Opcode::UcWriteLastImm, true));
    assert!(!solicited(Opcode::RcSendOnly, false));
    assert!(!solicited(Opcode::RcSendFirst, true));
    assert!(!solicited(Opcode::RcWriteOnly, true));
    assert!(!solicited(Opcode::RcWriteLast, true));
    assert!(!solicited(Opcode::RcReadRequest, true));
}

fn base_gate() -> GateInput {
    GateInput {
        qp: QpType::Rc,
        wr: WrOpcode::Send,
        fence: false,
        earlier_outstanding: false,
        rd_atomic_in_flight: 0,
        max_rd_atomic: 2,
        holds_rd_atomic: false,
        next_psn: Psn::new(10),
        oldest_unacked: Psn::new(10),
    }
}

#[test]
fn wqe_gating() {
    let b = base_gate();
    assert_eq!(gate(&b), Gate::Proceed);
    // Fence waits for reads/atomics in flight only.
    let f = GateInput { fence: true, ..b };
    assert_eq!(gate(&f), Gate::Proceed);
    assert_eq!(
        gate(&GateInput {
            rd_atomic_in_flight: 1,
            ..f
        }),
        Gate::WaitFence
    );
    assert_eq!(
        gate(&GateInput {
            earlier_outstanding: true,
            ..f
        }),
        Gate::Proceed
    );
    // LOCAL INVALIDATE waits for everything before it.
    let li = GateInput {
        wr: WrOpcode::LocalInv,
        ..b
    };
    assert_eq!(gate(&li), Gate::Proceed);
    assert_eq!(
        gate(&GateInput {
            earlier_outstanding: true,
            ..li
        }),
        Gate::WaitFence
    );
    // Local operations ignore the PSN window and the read/atomic depth.
    assert_eq!(
        gate(&GateInput {
            wr: WrOpcode::RegMr,
            next_psn: Psn::new(1000),
            ..b
        }),
        Gate::Proceed
    );
    // The unacknowledged PSN window, across the wrap.
    let w = GateInput {
        oldest_unacked: Psn::new(PSN_MASK - 10),
        ..b
    };
    for (next, g) in [
        (
            Psn::new(PSN_MASK - 10).wrapping_add(MAX_UNACKED_PSNS),
            Gate::Proceed,
        ),
        (
            Psn::new(PSN_MASK - 10).wrapping_add(MAX_UNACKED_PSNS + 1),
            Gate::WaitPsnWindow,
        ),
    ] {
        assert_eq!(
            gate(&GateInput {
                next_psn: next,
                ..w
            }),
            g
        );
        // UC has no window.
        assert_eq!(
            gate(&GateInput {
                next_psn: next,
                qp: QpType::Uc,
                ..w
            }),
            Gate::Proceed
        );
    }
    assert!(psn_window_open(Psn::new(5), Psn::new(5)));
    // Read/atomic depth.
    for wr in [
        WrOpcode::RdmaRead,
        WrOpcode::AtomicCmpSwp,
        WrOpcode::AtomicFetchAdd,
        WrOpcode::AtomicWrite,
    ] {
        let r = GateInput { wr, ..b };
        assert_eq!(
            gate(&GateInput {
                rd_atomic_in_flight: 1,
                ..r
            }),
            Gate::Proceed
        );
        assert_eq!(
            gate(&GateInput {
                rd_atomic_in_flight: 2,
                ..r
            }),
            Gate::WaitRdAtomic
        );
        assert_eq!(
            gate(&GateInput {
                rd_atomic_in_flight: 2,
                holds_rd_atomic: true,
                ..r
            }),
            Gate::Proceed
        );
    }
    // SEND and FLUSH take no slot.
    for wr in [WrOpcode::Send, WrOpcode::Flush] {
        assert_eq!(
            gate(&GateInput {
                wr,
                rd_atomic_in_flight: 2,
                ..b
            }),
            Gate::Proceed
        );
    }
}
