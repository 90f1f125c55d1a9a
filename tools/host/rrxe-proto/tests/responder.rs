// SPDX-License-Identifier: GPL-2.0

//! Responder: PSN classification, opcode sequencing, checks, error actions, replies.

use rrxe_proto::proto::aeth::{NakCode, Syndrome};
use rrxe_proto::proto::flush::{Feth, PLT_GLOBAL, PLT_PERSISTENT};
use rrxe_proto::proto::mtu::Mtu;
use rrxe_proto::proto::opcode::{Opcode, Operation, Position};
use rrxe_proto::proto::psn::{Psn, PSN_MASK};
use rrxe_proto::proto::responder::*;
use rrxe_proto::proto::reth::Reth;
use rrxe_proto::proto::verbs::{Access, QpType, WcOpcode, WcStatus};

#[test]
fn rc_psn_classification_with_wrap() {
    let mut st = SeqState::default();
    let exp = Psn::new(1);
    let op = Opcode::RcSendOnly;
    assert_eq!(
        check_psn(QpType::Rc, op, Psn::new(1), exp, &mut st),
        PsnVerdict::Process
    );
    assert_eq!(
        check_psn(QpType::Rc, op, Psn::new(0), exp, &mut st),
        PsnVerdict::Duplicate
    );
    assert_eq!(
        check_psn(QpType::Rc, op, Psn::new(PSN_MASK), exp, &mut st),
        PsnVerdict::Duplicate
    );
    assert_eq!(
        check_psn(QpType::Rc, op, Psn::new(0x80_0001), exp, &mut st),
        PsnVerdict::Duplicate,
        "2^23 behind is still behind"
    );
    // Ahead: one NAK, then silence until the expected PSN shows up.
    assert_eq!(
        check_psn(QpType::Rc, op, Psn::new(3), exp, &mut st),
        PsnVerdict::NakSequence
    );
    assert!(st.psn_nak_sent);
    assert_eq!(
        check_psn(QpType::Rc, op, Psn::new(4), exp, &mut st),
        PsnVerdict::Drop
    );
    assert_eq!(
        check_psn(QpType::Rc, op, Psn::new(0x80_0000), exp, &mut st),
        PsnVerdict::Drop
    );
    assert_eq!(
        check_psn(QpType::Rc, op, Psn::new(1), exp, &mut st),
        PsnVerdict::Process
    );
    assert!(!st.psn_nak_sent);
    assert_eq!(
        check_psn(QpType::Rc, op, Psn::new(2), exp, &mut st),
        PsnVerdict::NakSequence
    );
    // Expected PSN at the top of the range.
    let mut st = SeqState::default();
    let exp = Psn::new(PSN_MASK);
    assert_eq!(
        check_psn(QpType::Rc, op, Psn::new(0), exp, &mut st),
        PsnVerdict::NakSequence
    );
    let mut st = SeqState::default();
    assert_eq!(
        check_psn(QpType::Rc, op, Psn::new(PSN_MASK - 1), exp, &mut st),
        PsnVerdict::Duplicate
    );
}

#[test]
fn uc_psn_drops_rest_of_message() {
    let mut st = SeqState::default();
    let exp = Psn::new(10);
    assert_eq!(
        check_psn(QpType::Uc, Opcode::UcSendMiddle, Psn::new(10), exp, &mut st),
        PsnVerdict::Process
    );
    // A lost packet: the rest of the message goes.
    assert_eq!(
        check_psn(QpType::Uc, Opcode::UcSendMiddle, Psn::new(12), exp, &mut st),
        PsnVerdict::Drop
    );
    assert!(st.drop_msg);
    assert_eq!(
        check_psn(QpType::Uc, Opcode::UcSendLast, Psn::new(10), exp, &mut st),
        PsnVerdict::Drop
    );
    // A new message starts whatever its PSN.
    assert_eq!(
        check_psn(QpType::Uc, Opcode::UcSendFirst, Psn::new(14), exp, &mut st),
        PsnVerdict::Process
    );
    assert!(!st.drop_msg);
    // UD does not check.
    assert_eq!(
        check_psn(QpType::Ud, Opcode::UdSendOnly, Psn::new(999), exp, &mut st),
        PsnVerdict::Process
    );
}

#[test]
fn op_sequence_rc() {
    use Opcode::*;
    let qp = QpType::Rc;
    let ok = |prev, cur| check_op_seq(qp, prev, cur) == OpSeq::Valid;
    // Nothing in progress: anything that starts.
    for cur in Opcode::ALL
        .iter()
        .copied()
        .filter(|o| o.transport() == qp.transport())
    {
        let continues = matches!(cur.position(), Position::Middle | Position::Last);
        assert_eq!(ok(None, cur), !continues, "{cur:?}");
        assert_eq!(ok(Some(RcSendLast), cur), !continues, "{cur:?}");
        assert_eq!(ok(Some(RcWriteOnly), cur), !continues, "{cur:?}");
    }
    assert_eq!(
        check_op_seq(qp, None, RcSendMiddle),
        OpSeq::Invalid(RespError::MissingFirst)
    );
    // SEND in progress.
    for prev in [RcSendFirst, RcSendMiddle] {
        for cur in [RcSendMiddle, RcSendLast, RcSendLastImm, RcSendLastInv] {
            assert!(ok(Some(prev), cur));
        }
        for cur in [
            RcSendFirst,
            RcSendOnly,
            RcWriteMiddle,
            RcWriteLast,
            RcReadRequest,
            RcFetchAdd,
        ] {
            assert_eq!(
                check_op_seq(qp, Some(prev), cur),
                OpSeq::Invalid(RespError::MissingLast),
                "{prev:?} {cur:?}"
            );
        }
    }
    // WRITE in progress.
    for prev in [RcWriteFirst, RcWriteMiddle] {
        for cur in [RcWriteMiddle, RcWriteLast, RcWriteLastImm] {
            assert!(ok(Some(prev), cur));
        }
        for cur in [RcSendMiddle, RcSendLast, RcWriteFirst, RcWriteOnly] {
            assert_eq!(
                check_op_seq(qp, Some(prev), cur),
                OpSeq::Invalid(RespError::MissingLast)
            );
        }
    }
}

#[test]
fn op_sequence_uc_and_ud() {
    use Opcode::*;
    let qp = QpType::Uc;
    assert_eq!(
        check_op_seq(qp, Some(UcSendFirst), UcSendLast),
        OpSeq::Valid
    );
    assert_eq!(
        check_op_seq(qp, Some(UcSendMiddle), UcSendOnly),
        OpSeq::AbandonAndStart
    );
    assert_eq!(
        check_op_seq(qp, Some(UcWriteFirst), UcSendFirst),
        OpSeq::AbandonAndStart
    );
    assert_eq!(
        check_op_seq(qp, Some(UcWriteFirst), UcSendMiddle),
        OpSeq::Invalid(RespError::MissingLast)
    );
    assert_eq!(
        check_op_seq(qp, None, UcWriteLast),
        OpSeq::Invalid(RespError::MissingFirst)
    );
    assert_eq!(
        check_op_seq(QpType::Ud, Some(UcSendFirst), UdSendOnly),
        OpSeq::Valid
    );
}

#[test]
fn access_checks() {
    let none = Access::default();
    let all = Access::REMOTE_READ
        .with(Access::REMOTE_WRITE)
        .with(Access::REMOTE_ATOMIC)
        .with(Access::FLUSH_GLOBAL)
        .with(Access::FLUSH_PERSISTENT);
    for op in Opcode::ALL {
        let qp = match op.transport() {
            rrxe_proto::proto::opcode::Transport::Rc => QpType::Rc,
            rrxe_proto::proto::opcode::Transport::Uc => QpType::Uc,
            rrxe_proto::proto::opcode::Transport::Ud => QpType::Ud,
        };
        let feth = Some(Feth {
            placement: PLT_GLOBAL | PLT_PERSISTENT,
            selectivity: 0,
        });
        assert_eq!(check_access(qp, op, all, feth), Ok(()), "{op:?}");
        let needs = matches!(
            op.operation(),
            Operation::ReadRequest
                | Operation::Write
                | Operation::AtomicWrite
                | Operation::CompareSwap
                | Operation::FetchAdd
                | Operation::Flush
        );
        let r = check_access(qp, op, none, feth);
        assert_eq!(r.is_err(), needs, "{op:?}");
    }
    let rc = QpType::Rc;
    assert!(check_access(rc, Opcode::RcReadRequest, Access::REMOTE_WRITE, None).is_err());
    assert!(check_access(rc, Opcode::RcWriteFirst, Access::REMOTE_READ, None).is_err());
    assert!(check_access(rc, Opcode::RcAtomicWrite, Access::REMOTE_WRITE, None).is_ok());
    assert!(check_access(rc, Opcode::RcFetchAdd, Access::REMOTE_WRITE, None).is_err());
    // FLUSH needs the rights of its placement type only.
    let g = Some(Feth {
        placement: PLT_GLOBAL,
        selectivity: 0,
    });
    let p = Some(Feth {
        placement: PLT_PERSISTENT,
        selectivity: 0,
    });
    assert!(check_access(rc, Opcode::RcFlush, Access::FLUSH_GLOBAL, g).is_ok());
    assert!(check_access(rc, Opcode::RcFlush, Access::FLUSH_GLOBAL, p).is_err());
    assert!(check_access(rc, Opcode::RcFlush, Access::FLUSH_PERSISTENT, p).is_ok());
    // The same rights are asked of the memory the FLUSH names.
    assert_eq!(flush_access(g), Access::FLUSH_GLOBAL);
    assert_eq!(flush_access(p), Access::FLUSH_PERSISTENT);
    assert_eq!(flush_access(None), Access(0));
    // SEND never needs remote rights.
    assert!(check_access(rc, Opcode::RcSendOnly, none, None).is_ok());
}

#[test]
fn resource_checks() {
    assert_eq!(
        check_resource(Opcode::RcReadRequest, 0, false),
        Err(RespError::TooManyRdAtomic)
    );
    assert_eq!(
        check_resource(Opcode::RcAtomicWrite, 0, false),
        Err(RespError::TooManyRdAtomic)
    );
    assert_eq!(check_resource(Opcode::RcReadRequest, 1, false), Ok(()));
    assert_eq!(
        check_resource(Opcode::RcSendFirst, 0, false),
        Err(RespError::Rnr)
    );
    assert_eq!(check_resource(Opcode::RcSendMiddle, 0, false), Ok(()));
    assert_eq!(
        check_resource(Opcode::RcWriteLastImm, 0, false),
        Err(RespError::Rnr)
    );
    assert_eq!(check_resource(Opcode::RcWriteLast, 0, false), Ok(()));
    assert_eq!(check_resource(Opcode::UdSendOnly, 0, true), Ok(()));
}

#[test]
fn length_checks() {
    let rc = QpType::Rc;
    for mtu in Mtu::ALL {
        let m = mtu.bytes();
        let chk = |op, n| check_length(rc, op, n, mtu, None, 0);
        assert_eq!(chk(Opcode::RcSendOnly, 0), Ok(()));
        assert_eq!(chk(Opcode::RcSendOnly, m), Ok(()));
        assert_eq!(chk(Opcode::RcSendOnly, m + 1), Err(RespError::Length));
        assert_eq!(chk(Opcode::RcSendFirst, m), Ok(()));
        assert_eq!(chk(Opcode::RcSendFirst, m - 1), Err(RespError::Length));
        assert_eq!(chk(Opcode::RcWriteMiddle, m), Ok(()));
        assert_eq!(chk(Opcode::RcWriteMiddle, m + 4), Err(RespError::Length));
        assert_eq!(chk(Opcode::RcSendLast, 1), Ok(()));
        assert_eq!(chk(Opcode::RcSendLast, m), Ok(()));
        assert_eq!(chk(Opcode::RcSendLast, 0), Err(RespError::Length));
        assert_eq!(chk(Opcode::RcSendLast, m + 1), Err(RespError::Length));
    }
    // RETH length above 2^31.
    let reth = |dma_len| {
        Some(Reth {
            va: 0,
            rkey: 1,
            dma_len,
        })
    };
    assert_eq!(
        check_length(rc, Opcode::RcReadRequest, 0, Mtu::Mtu1024, reth(1 << 31), 0),
        Ok(())
    );
    assert_eq!(
        check_length(
            rc,
            Opcode::RcReadRequest,
            0,
            Mtu::Mtu1024,
            reth((1 << 31) + 1),
            0
        ),
        Err(RespError::Length)
    );
    // UD: the receive buffer holds the 40-byte GRH and the payload.
    let ud = |n, buf| check_length(QpType::Ud, Opcode::UdSendOnly, n, Mtu::Mtu1024, None, buf);
    assert_eq!(ud(100, 140), Ok(()));
    assert_eq!(ud(100, 139), Err(RespError::Length));
    assert_eq!(ud(0, 40), Ok(()));
}

#[test]
fn memory_checks() {
    assert_eq!(check_range(0x1000, 0x100, 0x1000, 0x100), Ok(()));
    assert_eq!(check_range(0x1000, 0, 0x1000, 0), Ok(()));
    assert_eq!(
        check_range(0x0fff, 0x10, 0x1000, 0x100),
        Err(RespError::RkeyViolation)
    );
    assert_eq!(
        check_range(0x1001, 0x100, 0x1000, 0x100),
        Err(RespError::RkeyViolation)
    );
    assert_eq!(
        check_range(u64::MAX, 2, 0, u64::MAX),
        Err(RespError::RkeyViolation)
    );
    assert_eq!(
        check_range(1, 1, u64::MAX, 2),
        Err(RespError::RkeyViolation)
    );
    assert_eq!(check_range(u64::MAX - 1, 1, u64::MAX - 1, 1), Ok(()));

    let m = Mtu::Mtu1024;
    assert_eq!(check_write_payload(5000, 1024, 0, m), Ok(()));
    assert_eq!(
        check_write_payload(5000, 1024, 1, m),
        Err(RespError::Length)
    );
    assert_eq!(
        check_write_payload(5000, 1000, 0, m),
        Err(RespError::Length)
    );
    assert_eq!(check_write_payload(1024, 1024, 0, m), Ok(()));
    assert_eq!(check_write_payload(5, 5, 3, m), Ok(()));
    assert_eq!(check_write_payload(5, 5, 0, m), Err(RespError::Length));
    assert_eq!(check_write_payload(5, 4, 0, m), Err(RespError::Length));
    assert_eq!(check_write_payload(0, 0, 0, m), Ok(()));

    assert_eq!(check_atomic_write(8, 8, 0), Ok(()));
    assert_eq!(check_atomic_write(8, 4, 0), Err(RespError::Length));
    assert_eq!(check_atomic_write(16, 8, 0), Err(RespError::Length));
    assert_eq!(check_atomic_write(8, 8, 1), Err(RespError::Length));

    assert_eq!(check_atomic_alignment(0x1000), Ok(()));
    assert_eq!(
        check_atomic_alignment(0x1004),
        Err(RespError::MisalignedAtomic)
    );
}

#[test]
fn error_actions_rc() {
    let invalid = Some(Syndrome::Nak(NakCode::InvalidRequest));
    for e in [
        RespError::MissingFirst,
        RespError::MissingLast,
        RespError::NotPermitted,
        RespError::TooManyRdAtomic,
        RespError::MisalignedAtomic,
        RespError::Length,
        RespError::InvalidateRkey,
    ] {
        let a = error_action(QpType::Rc, false, e, 12);
        assert_eq!(a.nak, invalid, "{e:?}");
        assert_eq!(a.complete, Some(WcStatus::RemInvReqErr));
        assert!(a.qp_error && !a.drop_msg);
    }
    let a = error_action(QpType::Rc, false, RespError::Rnr, 0x2e);
    assert_eq!(a.nak, Some(Syndrome::RnrNak { timer: 0x0e }));
    assert_eq!(a.nak.unwrap().to_u8(), 0x2e);
    assert_eq!((a.complete, a.qp_error), (None, false));
    let a = error_action(QpType::Rc, true, RespError::RkeyViolation, 0);
    assert_eq!(a.nak, Some(Syndrome::Nak(NakCode::RemoteAccessError)));
    assert_eq!(a.nak.unwrap().to_u8(), 0x62);
    assert_eq!(a.complete, Some(WcStatus::RemAccessErr));
    assert!(a.qp_error);
    let a = error_action(QpType::Rc, false, RespError::MalformedWqe, 0);
    assert_eq!(a.nak.unwrap().to_u8(), 0x63);
    assert_eq!(a.complete, Some(WcStatus::LocQpOpErr));
    let a = error_action(QpType::Rc, false, RespError::CqOverflow, 0);
    assert_eq!((a.nak, a.complete, a.qp_error), (None, None, true));
}

#[test]
fn error_actions_uc_ud() {
    for qp in [QpType::Uc, QpType::Ud] {
        for srq in [false, true] {
            for e in [
                RespError::MissingFirst,
                RespError::MissingLast,
                RespError::NotPermitted,
                RespError::Rnr,
                RespError::RkeyViolation,
                RespError::Length,
            ] {
                let a = error_action(qp, srq, e, 5);
                assert_eq!(a.nak, None, "{qp:?} {e:?}");
                assert!(!a.qp_error);
            }
        }
    }
    let a = error_action(QpType::Uc, false, RespError::MissingLast, 0);
    assert!(a.drop_msg && a.reuse_wqe && a.complete.is_none());
    let a = error_action(QpType::Uc, true, RespError::MissingLast, 0);
    assert!(a.drop_msg && !a.reuse_wqe);
    assert_eq!(a.complete, Some(WcStatus::RemInvReqErr));
    let a = abandon_message(false);
    assert!(a.reuse_wqe && !a.drop_msg && a.complete.is_none() && a.nak.is_none());
    let a = abandon_message(true);
    assert!(!a.reuse_wqe && !a.drop_msg && !a.qp_error);
    assert_eq!(a.complete, Some(WcStatus::RemInvReqErr));
    let a = error_action(QpType::Uc, true, RespError::RkeyViolation, 0);
    assert_eq!(a.complete, Some(WcStatus::RemAccessErr));
    let a = error_action(QpType::Uc, false, RespError::RkeyViolation, 0);
    assert!(a.drop_msg && a.complete.is_none());
    // A length error gives the message up as a missing Last does: the RQ's WQE is used
    // again from its start, an SRQ's completes in error; the rest of the message is dropped.
    for qp in [QpType::Uc, QpType::Ud] {
        let a = error_action(qp, true, RespError::Length, 0);
        assert!(a.drop_msg && !a.reuse_wqe, "{qp:?}");
        assert_eq!(a.complete, Some(WcStatus::RemInvReqErr));
        let a = error_action(qp, false, RespError::Length, 0);
        assert!(a.drop_msg && a.reuse_wqe && a.complete.is_none(), "{qp:?}");
    }
    let a = error_action(QpType::Ud, false, RespError::MalformedWqe, 0);
    assert_eq!(
        (a.nak, a.complete, a.qp_error),
        (None, Some(WcStatus::LocQpOpErr), true)
    );
}

#[test]
fn replies_and_coalescing() {
    let rc = QpType::Rc;
    assert_eq!(reply_kind(rc, Opcode::RcSendMiddle, false), Reply::None);
    assert_eq!(reply_kind(rc, Opcode::RcSendMiddle, true), Reply::Ack);
    assert_eq!(reply_kind(rc, Opcode::RcWriteMiddle, true), Reply::Ack);
    assert_eq!(
        reply_kind(rc, Opcode::RcWriteLast, true),
        Reply::CoalescedAck
    );
    assert_eq!(
        reply_kind(rc, Opcode::RcSendOnly, true),
        Reply::CoalescedAck
    );
    assert_eq!(reply_kind(rc, Opcode::RcWriteFirst, true), Reply::Ack);
    assert_eq!(
        reply_kind(rc, Opcode::RcReadRequest, false),
        Reply::ReadResponse
    );
    assert_eq!(reply_kind(rc, Opcode::RcFetchAdd, false), Reply::AtomicAck);
    assert_eq!(
        reply_kind(rc, Opcode::RcCompareSwap, true),
        Reply::AtomicAck
    );
    assert_eq!(
        reply_kind(rc, Opcode::RcFlush, false),
        Reply::ReadResponseAck
    );
    assert_eq!(
        reply_kind(rc, Opcode::RcAtomicWrite, false),
        Reply::ReadResponseAck
    );
    assert_eq!(
        reply_kind(QpType::Uc, Opcode::UcSendOnly, true),
        Reply::None
    );
    assert_eq!(
        reply_kind(QpType::Ud, Opcode::UdSendOnly, true),
        Reply::None
    );
    assert_eq!(next_msn(0), 1);
    assert_eq!(next_msn(0xff_ffff), 0);
    assert_eq!(
        recv_wc_opcode(Opcode::RcWriteOnlyImm),
        WcOpcode::RecvRdmaWithImm
    );
    assert_eq!(
        recv_wc_opcode(Opcode::UcWriteLastImm),
        WcOpcode::RecvRdmaWithImm
    );
    assert_eq!(recv_wc_opcode(Opcode::RcSendLastImm), WcOpcode::Recv);
    assert_eq!(recv_wc_opcode(Opcode::UdSendOnly), WcOpcode::Recv);
}

#[test]
fn read_reply_segments() {
    for mtu in Mtu::ALL {
        let m = mtu.bytes();
        for len in [0, 1, m - 1, m, m + 1, 3 * m, 8 << 20] {
            let start = Psn::new(PSN_MASK - 2);
            let segs: Vec<ReadSegment> = ReadReply::new(start, len, mtu, true).collect();
            let n = len.div_ceil(m).max(1) as usize;
            assert_eq!(segs.len(), n);
            assert_eq!(
                read_last_psn(start, len, mtu),
                start.wrapping_add(n as u32 - 1)
            );
            let mut off = 0;
            for (i, s) in segs.iter().enumerate() {
                assert_eq!(s.psn, start.wrapping_add(i as u32));
                assert_eq!(s.offset, off);
                let expect = match (i == 0, i + 1 == n) {
                    (true, true) => Opcode::RcReadResponseOnly,
                    (true, false) => Opcode::RcReadResponseFirst,
                    (false, false) => Opcode::RcReadResponseMiddle,
                    (false, true) => Opcode::RcReadResponseLast,
                };
                assert_eq!(s.opcode, expect);
                if i + 1 < n {
                    assert_eq!(s.payload_len, m);
                }
                off += s.payload_len;
            }
            assert_eq!(off, len);
        }
    }
    // A replay from the middle continues with Middle/Last.
    let r: Vec<ReadSegment> = ReadReply::new(Psn::new(5), 600, Mtu::Mtu256, false).collect();
    let ops: Vec<Opcode> = r.iter().map(|s| s.opcode).collect();
    assert_eq!(
        ops,
        [
            Opcode::RcReadResponseMiddle,
            Opcode::RcReadResponseMiddle,
            Opcode::RcReadResponseLast
        ]
    );
    let mut rr = ReadReply::new(Psn::new(5), 600, Mtu::Mtu256, false);
    assert_eq!(rr.by_ref().count(), 3);
    assert_eq!(rr.next_psn(), Psn::new(8));
    let r: Vec<ReadSegment> = ReadReply::new(Psn::new(5), 10, Mtu::Mtu256, false).collect();
    assert_eq!(r[0].opcode, Opcode::RcReadResponseLast);
}

#[test]
fn duplicates() {
    let exp = Psn::new(0);
    assert_eq!(
        duplicate_action(Opcode::RcSendOnly, exp),
        DuplicateAction::Reack(Psn::new(PSN_MASK))
    );
    assert_eq!(
        duplicate_action(Opcode::RcWriteMiddle, Psn::new(9)),
        DuplicateAction::Reack(Psn::new(8))
    );
    assert_eq!(
        duplicate_action(Opcode::RcReadRequest, exp),
        DuplicateAction::ReplayRead
    );
    for op in [
        Opcode::RcCompareSwap,
        Opcode::RcFetchAdd,
        Opcode::RcFlush,
        Opcode::RcAtomicWrite,
    ] {
        assert_eq!(duplicate_action(op, exp), DuplicateAction::ReplayReply);
    }
    let res = [
        None,
        Some((Psn::new(PSN_MASK - 1), Psn::new(2))),
        Some((Psn::new(10), Psn::new(10))),
    ];
    assert_eq!(find_resource(res, Psn::new(0)), Some(1));
    assert_eq!(find_resource(res, Psn::new(PSN_MASK - 1)), Some(1));
    assert_eq!(find_resource(res, Psn::new(10)), Some(2));
    assert_eq!(find_resource(res, Psn::new(3)), None);
    assert_eq!(find_resource(res, Psn::new(PSN_MASK - 2)), None);

    let saved = ReadResource {
        first_psn: Psn::new(100),
        va: 0x1000,
        len: 4096,
        rkey: 7,
    };
    let reth = |va, dma_len, rkey| Reth { va, rkey, dma_len };
    let r = read_replay(&saved, Psn::new(100), &reth(0x1000, 4096, 7)).unwrap();
    assert!(r.from_first);
    assert_eq!((r.va, r.len, r.psn), (0x1000, 4096, Psn::new(100)));
    let r = read_replay(&saved, Psn::new(102), &reth(0x1800, 2048, 7)).unwrap();
    assert!(!r.from_first);
    assert_eq!(
        read_replay(&saved, Psn::new(100), &reth(0x1000, 4096, 8)),
        None
    );
    assert_eq!(
        read_replay(&saved, Psn::new(100), &reth(0x0fff, 16, 7)),
        None
    );
    assert_eq!(
        read_replay(&saved, Psn::new(100), &reth(0x1800, 2049, 7)),
        None
    );
    assert_eq!(
        read_replay(&saved, Psn::new(100), &reth(u64::MAX, 2, 7)),
        None
    );
}

#[test]
fn replay_superseded_only_by_an_ask_for_all_it_has_left() {
    // Replaying responses 110..=237 of a read saved as 100..=1123 (a 128-response chunk).
    let replay = Replay {
        first: Psn::new(110),
        last: Psn::new(237),
        saved_last: Psn::new(1123),
    };
    let by = |psn, last| replay.superseded_by(Psn::new(psn), Psn::new(last));
    // A later ask to the chunk's end or beyond (a timeout's next ask, a go-back-N
    // requester's ask for the rest of the read).
    assert!(by(110, 237));
    assert!(by(150, 237));
    assert!(by(150, 1123));
    assert!(by(300, 427));
    // Narrower: a missing range asked for while the replay streams in.
    assert!(!by(115, 116));
    assert!(!by(150, 236));
    // Older than the replay (reordered), or outside the read saved.
    assert!(!by(100, 237));
    assert!(!by(150, 1124));
    assert!(!by(1124, 1200));
    // Across the PSN wrap.
    let wrap = Replay {
        first: Psn::new(PSN_MASK - 2),
        last: Psn::new(5),
        saved_last: Psn::new(20),
    };
    assert!(wrap.superseded_by(Psn::new(PSN_MASK), Psn::new(5)));
    assert!(wrap.superseded_by(Psn::new(1), Psn::new(20)));
    assert!(!wrap.superseded_by(Psn::new(PSN_MASK - 3), Psn::new(5)));
    assert!(!wrap.superseded_by(Psn::new(PSN_MASK), Psn::new(4)));
}
