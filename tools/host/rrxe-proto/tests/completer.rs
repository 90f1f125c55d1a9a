// SPDX-License-Identifier: GPL-2.0

//! Completer: response judgement, implicit ACK/NAK, retry and RNR counters, timers.

use rrxe_proto::proto::aeth::{NakCode, Syndrome};
use rrxe_proto::proto::completer::*;
use rrxe_proto::proto::opcode::{HeaderSet, Opcode};
use rrxe_proto::proto::psn::{Psn, PSN_MASK};
use rrxe_proto::proto::timers::{local_ack_timeout_ns, rnr_timeout_us, RNR_TIMER_US};
use rrxe_proto::proto::verbs::{WcStatus, WrOpcode};

fn wqe(wr: WrOpcode, first: u32, last: u32) -> WqeView {
    WqeView {
        wr,
        first_psn: Psn::new(first),
        last_psn: Psn::new(last),
        all_sent: true,
    }
}

fn ack(psn: u32, syn: u8) -> Response {
    Response {
        opcode: Opcode::RcAck,
        psn: Psn::new(psn),
        syndrome: Some(Syndrome::from_u8(syn)),
    }
}

fn resp(opcode: Opcode, psn: u32) -> Response {
    Response {
        opcode,
        psn: Psn::new(psn),
        syndrome: opcode
            .headers()
            .contains(HeaderSet::AETH)
            .then_some(Syndrome::ACK),
    }
}

#[test]
fn ack_completes_send() {
    let st = CompState::new(Psn::new(10));
    let w = wqe(WrOpcode::Send, 10, 12);
    assert_eq!(judge(&st, &w, &ack(12, 0x1f)), Verdict::Complete);
    assert_eq!(judge(&st, &w, &ack(11, 0x1f)), Verdict::Progress);
    assert_eq!(judge(&st, &w, &ack(10, 0x00)), Verdict::Progress);
    // Not all of it sent yet: no completion.
    let partial = WqeView {
        all_sent: false,
        ..w
    };
    assert_eq!(judge(&st, &partial, &ack(12, 0x1f)), Verdict::Progress);
    assert_eq!(judge(&st, &partial, &ack(13, 0x1f)), Verdict::Drop);
}

#[test]
fn implicit_ack_and_nak() {
    let st = CompState::new(Psn::new(PSN_MASK));
    // An ACK beyond a SEND/WRITE/FLUSH/ATOMIC WRITE completes it implicitly.
    for wr in [
        WrOpcode::Send,
        WrOpcode::RdmaWrite,
        WrOpcode::Flush,
        WrOpcode::AtomicWrite,
    ] {
        let w = wqe(wr, PSN_MASK, PSN_MASK);
        assert_eq!(
            judge(&st, &w, &ack(0, 0x1f)),
            Verdict::CompleteImplicit,
            "{wr:?}"
        );
    }
    // Beyond a read or an atomic: its response was lost or is late (implicit NAK after
    // enough of them).
    for wr in [
        WrOpcode::RdmaRead,
        WrOpcode::AtomicCmpSwp,
        WrOpcode::AtomicFetchAdd,
    ] {
        let w = wqe(wr, PSN_MASK, PSN_MASK);
        assert_eq!(judge(&st, &w, &ack(0, 0x1f)), Verdict::Ahead);
    }
}

#[test]
fn stale_responses() {
    let st = CompState::new(Psn::new(20));
    let w = wqe(WrOpcode::RdmaWrite, 20, 25);
    // A duplicate ACK below the expected PSN is dropped...
    assert_eq!(judge(&st, &w, &ack(19, 0x1f)), Verdict::Drop);
    // ...unless it is the WQE's last PSN (a retried response).
    let st2 = CompState::new(Psn::new(26));
    assert_eq!(judge(&st2, &w, &ack(25, 0x1f)), Verdict::Complete);
    // A gap in the responses of a read: the later ones are kept (selective retry)...
    let r = wqe(WrOpcode::RdmaRead, 20, 23);
    assert_eq!(
        judge(&st, &r, &resp(Opcode::RcReadResponseMiddle, 21)),
        Verdict::ReadAhead
    );
    assert_eq!(
        judge(&st, &r, &resp(Opcode::RcReadResponseLast, 23)),
        Verdict::ReadAhead
    );
    // ...unless they carry a NAK, or are not read responses.
    let mut nak = resp(Opcode::RcReadResponseLast, 23);
    nak.syndrome = Some(Syndrome::Nak(NakCode::RemoteAccessError));
    assert_eq!(judge(&st, &r, &nak), Verdict::Drop);
    assert_eq!(judge(&st, &r, &ack(22, 0x1f)), Verdict::Drop);
    // An atomic's gap is dropped (its one response is what is missing).
    let a = wqe(WrOpcode::AtomicFetchAdd, 20, 20);
    let st_a = CompState::new(Psn::new(19));
    assert_eq!(
        judge(&st_a, &a, &resp(Opcode::RcAtomicAck, 20)),
        Verdict::Drop
    );
}

#[test]
fn read_taken_over_kept_responses() {
    let mut st = CompState::new(Psn::new(100));
    st.update(Opcode::RcReadResponseLast, Psn::new(101));
    assert_eq!(st.opcode, None);
    // A Last that ended a range asked for again: the read goes on after it.
    st.read_taken(0, false);
    assert_eq!(st.psn, Psn::new(102));
    assert_eq!(st.opcode, Some(Opcode::RcReadResponseMiddle));
    // Three responses after it were kept, the read's last among them.
    st.read_taken(3, true);
    assert_eq!(st, CompState::new(Psn::new(105)));
}

#[test]
fn read_response_sequence() {
    let w = wqe(WrOpcode::RdmaRead, 100, 102);
    let mut st = CompState::new(Psn::new(100));
    assert_eq!(
        judge(&st, &w, &resp(Opcode::RcReadResponseFirst, 100)),
        Verdict::ReadData
    );
    st.update(Opcode::RcReadResponseFirst, Psn::new(100));
    assert_eq!(st.opcode, Some(Opcode::RcReadResponseFirst));
    assert_eq!(st.psn, Psn::new(101));
    assert_eq!(
        judge(&st, &w, &resp(Opcode::RcReadResponseMiddle, 101)),
        Verdict::ReadData
    );
    // An Only at the expected PSN: a one-packet range asked for again, answered by a
    // responder that saved it as a request of its own.
    assert_eq!(
        judge(&st, &w, &resp(Opcode::RcReadResponseOnly, 101)),
        Verdict::ReadData
    );
    st.update(Opcode::RcReadResponseMiddle, Psn::new(101));
    assert_eq!(
        judge(&st, &w, &resp(Opcode::RcReadResponseLast, 102)),
        Verdict::ReadData
    );
    assert!(read_complete(0, Opcode::RcReadResponseLast));
    assert!(!read_complete(0, Opcode::RcReadResponseMiddle));
    assert!(!read_complete(4, Opcode::RcReadResponseLast));
    st.update(Opcode::RcReadResponseLast, Psn::new(102));
    assert_eq!(st, CompState::new(Psn::new(103)));
    // A retried read restarting with First at the first PSN is accepted.
    let mut st = CompState::new(Psn::new(100));
    st.update(Opcode::RcReadResponseMiddle, Psn::new(100));
    let st_behind = CompState {
        psn: Psn::new(100),
        opcode: Some(Opcode::RcReadResponseMiddle),
    };
    assert_eq!(
        judge(&st_behind, &w, &resp(Opcode::RcReadResponseFirst, 100)),
        Verdict::ReadData
    );
    // A Middle with no read in progress is a bad response.
    let fresh = CompState::new(Psn::new(100));
    assert_eq!(
        judge(&fresh, &w, &resp(Opcode::RcReadResponseMiddle, 100)),
        Verdict::Fail(WcStatus::BadRespErr)
    );
    // Read response to a WQE that is not a read.
    let s = wqe(WrOpcode::Send, 100, 100);
    assert_eq!(
        judge(&fresh, &s, &resp(Opcode::RcReadResponseOnly, 100)),
        Verdict::Fail(WcStatus::FatalErr)
    );
    // A NAK in a read response.
    let mut bad = resp(Opcode::RcReadResponseOnly, 100);
    bad.syndrome = Some(Syndrome::Nak(NakCode::RemoteAccessError));
    assert_eq!(judge(&fresh, &w, &bad), Verdict::Fail(WcStatus::BadRespErr));
    // A NAK arriving during a read sequence, with the PSN of a response already seen.
    let st = CompState {
        psn: Psn::new(102),
        opcode: Some(Opcode::RcReadResponseMiddle),
    };
    assert_eq!(
        judge(&st, &w, &ack(101, 0x62)),
        Verdict::Fail(WcStatus::RemAccessErr)
    );
    // A positive ACK cannot complete a read.
    assert_eq!(judge(&fresh, &w, &ack(100, 0x1f)), Verdict::Drop);
    assert_eq!(judge(&fresh, &w, &ack(102, 0x1f)), Verdict::Drop);
}

#[test]
fn flush_and_atomic_write_replies() {
    let st = CompState::new(Psn::new(7));
    // Whatever its length, a FLUSH is answered by one empty response, which completes it
    // (it used to be taken as read data, expected to bring the FLUSH's length in bytes).
    let f = wqe(WrOpcode::Flush, 7, 7);
    assert_eq!(
        judge(&st, &f, &resp(Opcode::RcReadResponseOnly, 7)),
        Verdict::Complete
    );
    assert_eq!(early(&f, &resp(Opcode::RcReadResponseOnly, 7)), None);
    let a = wqe(WrOpcode::AtomicWrite, 7, 7);
    assert_eq!(
        judge(&st, &a, &resp(Opcode::RcReadResponseOnly, 7)),
        Verdict::Complete
    );
}

#[test]
fn atomic_ack() {
    let st = CompState::new(Psn::new(3));
    let w = wqe(WrOpcode::AtomicFetchAdd, 3, 3);
    assert_eq!(
        judge(&st, &w, &resp(Opcode::RcAtomicAck, 3)),
        Verdict::AtomicResult
    );
    let s = wqe(WrOpcode::Send, 3, 3);
    assert_eq!(
        judge(&st, &s, &resp(Opcode::RcAtomicAck, 3)),
        Verdict::Fail(WcStatus::BadRespErr)
    );
    let mut nak = resp(Opcode::RcAtomicAck, 3);
    nak.syndrome = Some(Syndrome::RnrNak { timer: 1 });
    assert_eq!(judge(&st, &w, &nak), Verdict::Fail(WcStatus::BadRespErr));
}

#[test]
fn naks_and_rnr() {
    let mut st = CompState::new(Psn::new(50));
    let w = wqe(WrOpcode::Send, 50, 60);
    assert_eq!(judge(&st, &w, &ack(50, 0x2e)), Verdict::Rnr { timer: 14 });
    assert_eq!(
        judge(&st, &w, &ack(55, 0x60)),
        Verdict::Retry {
            nak_psn: Some(Psn::new(55))
        }
    );
    // The sequence NAK acknowledges everything before its PSN.
    assert!(st.nak_sequence(Psn::new(55)));
    assert_eq!(st.psn, Psn::new(55));
    assert!(!st.nak_sequence(Psn::new(54)));
    let st = CompState::new(Psn::new(50));
    for (syn, status) in [
        (0x61, WcStatus::RemInvReqErr),
        (0x62, WcStatus::RemAccessErr),
        (0x63, WcStatus::RemOpErr),
        (0x64, WcStatus::RemInvRdReqErr),
        (0x7f, WcStatus::RemOpErr),
    ] {
        assert_eq!(
            judge(&st, &w, &ack(50, syn)),
            Verdict::Fail(status),
            "{syn:#x}"
        );
    }
    // Reserved syndromes are bad responses.
    assert_eq!(
        judge(&st, &w, &ack(50, 0x40)),
        Verdict::Fail(WcStatus::BadRespErr)
    );
    assert_eq!(
        judge(&st, &w, &ack(50, 0x9f)),
        Verdict::Fail(WcStatus::BadRespErr)
    );
    assert_eq!(nak_status(NakCode::InvalidRequest), WcStatus::RemInvReqErr);
}

#[test]
fn comp_state_updates() {
    let mut st = CompState::new(Psn::new(PSN_MASK));
    st.update(Opcode::RcAck, Psn::new(PSN_MASK));
    assert_eq!(st.psn, Psn::new(0));
    // An older response does not move it back.
    st.update(Opcode::RcAck, Psn::new(PSN_MASK - 3));
    assert_eq!(st.psn, Psn::new(0));
    st.wqe_done(Psn::new(4));
    assert_eq!(st.psn, Psn::new(5));
    st.wqe_done(Psn::new(2));
    assert_eq!(st.psn, Psn::new(5));
    assert!(Verdict::Complete.resets_retries());
    // Read data resets them once taken, not when judged.
    assert!(!Verdict::ReadData.resets_retries());
    assert!(!Verdict::Rnr { timer: 0 }.resets_retries());
    assert!(!Verdict::Retry { nak_psn: None }.resets_retries());
    assert!(!Verdict::Drop.resets_retries());
}

#[test]
fn retry_counters() {
    let mut c = RetryCounter::new(2);
    let (n, c0) = (Psn::new(10), Psn::new(5));
    assert_eq!(
        retry(&mut c, false, false, n, c0),
        RetryDecision::Retransmit
    );
    // A retry in progress is not restarted by another NAK, only by a timeout.
    assert_eq!(retry(&mut c, true, false, n, c0), RetryDecision::Ignore);
    assert_eq!(c.remaining(), 1);
    assert_eq!(retry(&mut c, true, true, n, c0), RetryDecision::Retransmit);
    assert_eq!(retry(&mut c, false, true, n, c0), RetryDecision::Exceeded);
    // Everything acknowledged: nothing to retransmit.
    let mut c = RetryCounter::new(3);
    assert_eq!(retry(&mut c, false, true, n, n), RetryDecision::Ignore);
    // 7 is infinite.
    let mut c = RetryCounter::new(7);
    for _ in 0..1000 {
        assert_eq!(retry(&mut c, false, true, n, c0), RetryDecision::Retransmit);
    }
    assert_eq!(c.remaining(), RetryCounter::INFINITE);
    assert_eq!(RetryCounter::new(0xf).remaining(), 7);
    let mut zero = RetryCounter::new(0);
    assert!(!zero.take());
}

#[test]
fn rnr_counters_and_table() {
    let mut c = RetryCounter::new(1);
    assert_eq!(rnr_retry(&mut c, 14), Ok(1280));
    assert_eq!(rnr_retry(&mut c, 14), Err(WcStatus::RnrRetryExcErr));
    let mut inf = RetryCounter::new(7);
    for code in 0..64u8 {
        assert_eq!(
            rnr_retry(&mut inf, code),
            Ok(RNR_TIMER_US[usize::from(code & 31)])
        );
    }
    // IBA RNR timer table spot checks (ms): 0 -> 655.36, 1 -> 0.01, 18 -> 5.12,
    // 25 -> 61.44, 31 -> 491.52.
    assert_eq!(rnr_timeout_us(0), 655_360);
    assert_eq!(rnr_timeout_us(1), 10);
    assert_eq!(rnr_timeout_us(18), 5_120);
    assert_eq!(rnr_timeout_us(25), 61_440);
    assert_eq!(rnr_timeout_us(31), 491_520);
    assert_eq!(rnr_timeout_us(32), 655_360);
    // Codes 1..=31 increase.
    for w in RNR_TIMER_US[1..].windows(2) {
        assert!(w[0] < w[1]);
    }
    for (i, &us) in RNR_TIMER_US.iter().enumerate().skip(4) {
        // From code 4 on the values alternate 2^k * 40 us and 2^k * 60 us.
        let k = (i - 4) / 2;
        let base = if i % 2 == 0 { 40 } else { 60 };
        assert_eq!(us, base << k, "code {i}");
    }
}

#[test]
fn local_ack_timeout() {
    assert_eq!(local_ack_timeout_ns(0), None);
    assert_eq!(local_ack_timeout_ns(1), Some(8192));
    assert_eq!(local_ack_timeout_ns(14), Some(4096 << 14)); // ~67 ms
    assert_eq!(local_ack_timeout_ns(31), Some(4096u64 << 31));
    assert_eq!(local_ack_timeout_ns(200), Some(4096u64 << 31));
}

#[test]
fn early_results() {
    let atomic = wqe(WrOpcode::AtomicFetchAdd, 30, 30);
    let ack_ok = Response {
        opcode: Opcode::RcAtomicAck,
        psn: Psn::new(30),
        syndrome: Some(Syndrome::ACK),
    };
    assert_eq!(early(&atomic, &ack_ok), Some(Verdict::AtomicResult));
    // Another PSN, a NAK, a WQE not sent yet, or not a read or atomic: nothing to keep.
    assert_eq!(
        early(
            &atomic,
            &Response {
                psn: Psn::new(31),
                ..ack_ok
            }
        ),
        None
    );
    let nak = Response {
        syndrome: Some(Syndrome::from_u8(0x62)),
        ..ack_ok
    };
    assert_eq!(early(&atomic, &nak), None);
    let unsent = WqeView {
        all_sent: false,
        ..atomic
    };
    assert_eq!(early(&unsent, &ack_ok), None);
    assert_eq!(early(&wqe(WrOpcode::Send, 30, 30), &ack(30, 0x1f)), None);
    // A one-packet read: its only response. Not a read of several packets.
    let read = wqe(WrOpcode::RdmaRead, 40, 40);
    assert_eq!(
        early(&read, &resp(Opcode::RcReadResponseOnly, 40)),
        Some(Verdict::ReadData)
    );
    let long = wqe(WrOpcode::RdmaRead, 40, 42);
    assert_eq!(early(&long, &resp(Opcode::RcReadResponseFirst, 40)), None);
    assert_eq!(early(&read, &ack_ok), None);
}

#[test]
fn ahead_counts_to_an_implicit_nak() {
    let mut a = AheadCount::default();
    for _ in 1..IMPLICIT_NAK_AFTER {
        assert!(!a.note());
    }
    // Once at the threshold, not again until progress.
    assert!(a.note());
    for _ in 0..300 {
        assert!(!a.note());
    }
    a.reset();
    for _ in 1..IMPLICIT_NAK_AFTER {
        assert!(!a.note());
    }
    assert!(a.note());
}

#[test]
fn read_resumed_with_a_new_sequence() {
    let w = wqe(WrOpcode::RdmaRead, 100, 110);
    let st = CompState {
        psn: Psn::new(103),
        opcode: Some(Opcode::RcReadResponseMiddle),
    };
    // The usual answer to a retry from PSN 103 continues the sequence...
    assert_eq!(
        judge(&st, &w, &resp(Opcode::RcReadResponseMiddle, 103)),
        Verdict::ReadData
    );
    // ...but a new one starting there is accepted too.
    assert_eq!(
        judge(&st, &w, &resp(Opcode::RcReadResponseFirst, 103)),
        Verdict::ReadData
    );
    let at_last = CompState {
        psn: Psn::new(110),
        opcode: Some(Opcode::RcReadResponseMiddle),
    };
    assert_eq!(
        judge(&at_last, &w, &resp(Opcode::RcReadResponseOnly, 110)),
        Verdict::ReadData
    );
    // Before the expected PSN, a First is a retransmitted response.
    assert_eq!(
        judge(&at_last, &w, &resp(Opcode::RcReadResponseFirst, 109)),
        Verdict::Drop
    );
    // A one-packet range asked for again from the middle, answered by a responder that
    // saved it as a request of its own: an Only at the expected PSN.
    assert_eq!(
        judge(&st, &w, &resp(Opcode::RcReadResponseOnly, 103)),
        Verdict::ReadData
    );
    // What is not a read response there is a bad response.
    assert_eq!(
        judge(&st, &w, &resp(Opcode::RcAtomicAck, 103)),
        Verdict::Fail(WcStatus::BadRespErr)
    );
}

/// One pass may decide both the next chunk of the oldest RDMA READ and a hole below the
/// responses kept beyond it: the plan keeps both (a single slot once kept only the hole,
/// and the rest of the read waited for the retransmission timeout).
#[test]
fn retry_plan_keeps_chunk_and_hole() {
    let mut plan = RetryPlan::default();
    plan.ask_read(Psn::new(100), ReadAsk::Chunk);
    plan.ask_read(Psn::new(100), ReadAsk::Hole);
    assert_eq!(
        plan,
        RetryPlan {
            rewind: false,
            read: Some(Psn::new(100)),
            chunk: true,
            hole: true,
        }
    );
    // Asked twice, still once.
    plan.ask_read(Psn::new(100), ReadAsk::Chunk);
    assert!(plan.chunk && plan.hole);
}

/// Asks for another READ replace those for an earlier one; a rewind stays.
#[test]
fn retry_plan_forgets_other_reads() {
    let mut plan = RetryPlan {
        rewind: true,
        ..RetryPlan::default()
    };
    plan.ask_read(Psn::new(100), ReadAsk::Hole);
    plan.ask_read(Psn::new(200), ReadAsk::Chunk);
    assert_eq!(
        plan,
        RetryPlan {
            rewind: true,
            read: Some(Psn::new(200)),
            chunk: true,
            hole: false,
        }
    );
    // The default plan does nothing.
    assert_eq!(
        RetryPlan::default(),
        RetryPlan {
            rewind: false,
            read: None,
            chunk: false,
            hole: false,
        }
    );
}

#[test]
fn read_asks_back_off_on_timeouts_in_a_row() {
    let forever = RetryCounter::new(RetryCounter::INFINITE);
    let asked: Vec<u32> = (1..=64).filter(|&n| ask_on_timeout(forever, n)).collect();
    assert_eq!(asked, [1, 2, 4, 8, 16, 32, 48, 64]);
    // A peer silent for good is still asked at a steady rate, never less.
    let late = (1000..1000 + ASK_BACKOFF_MAX)
        .filter(|&n| ask_on_timeout(forever, n))
        .count();
    assert_eq!(late, 1);
    // A finite count retries at every timeout, as the IBTA says: it bounds the asks.
    for c in 0..RetryCounter::INFINITE {
        assert!((1..=64).all(|n| ask_on_timeout(RetryCounter::new(c), n)));
    }
}
