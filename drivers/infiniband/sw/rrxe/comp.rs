// SPDX-License-Identifier: GPL-2.0

//! The completer: matches acknowledges and read/atomic responses to the send WQEs in
//! flight (the protocol core's `judge`), completes them in order, stores read data and
//! atomic results, and decides retries and RNR waits.

use crate::{
    counters::Counter,
    cq::Cqe,
    eng::Track,
    ext::net::skb::SkBuff,
    keys::Keys,
    mem::Bytes,
    pass::Pass,
    proto::{
        admit::{response_place, ResponsePlace},
        aeth::{Aeth, Syndrome},
        atomic::AtomicAckEth,
        bth::Bth,
        burst::{check_read_burst, ReadBurst},
        completer::{
            ask_on_timeout, early, judge, read_complete, retry, rnr_retry, ReadAsk, Response,
            RetryCounter, RetryDecision, Verdict, IMPLICIT_NAK_AFTER,
        },
        mtu::Mtu,
        opcode::Operation,
        packet::{pad_len, Headers, Packet},
        verbs::{QpType, WcStatus, WrOpcode},
    },
    qp::Inner,
    recv::{self, RxPacket},
    respbox::{Kind, Resp},
    sgl, wqe,
};

/// Completes the oldest send WQE with `status`; an error moves the QP to the error state.
///
/// The WQE's slot is released before the completion is queued: a consumer that polls the
/// completion may post again at once, into a queue that is then not full.
fn complete_front(p: &mut Pass<'_>, status: WcStatus) {
    let inner = &mut *p.inner;
    let cons = inner.sq.consumer();
    let t = inner.eng.track(cons);
    let (holds_rd_atomic, signaled, wr_id, op, byte_len) =
        (t.holds_rd_atomic, t.signaled, t.wr_id, t.op, t.byte_len());
    // What was kept of later reads stays with them: forgotten are the PSNs before the one
    // the completer expects now (a local operation has none of its own: its PSNs are the
    // next WQE's).
    inner.eng.holes.retire(inner.eng.comp.psn.prev());
    if holds_rd_atomic {
        inner.eng.rd_atomic = inner.eng.rd_atomic.saturating_sub(1);
    }
    inner.sq.advance();
    // A requester waiting for this completion goes on in another pass: completions of
    // WQEs that need no acknowledge (local operations, datagrams) come after it in a pass.
    if core::mem::take(&mut inner.eng.wait_completion) {
        p.out.again = true;
    }
    // The requester may be sending it again: it stops, and goes on after it.
    if inner.eng.cur.as_ref().is_some_and(|c| c.index == cons) {
        inner.eng.cur = None;
    }
    if inner.eng.req_index == cons {
        inner.eng.req_index = inner.sq.consumer();
    }
    let qp = p.qp;
    if signaled || qp.signal_all || status != WcStatus::Success {
        let wc = Cqe {
            byte_len,
            ..Cqe::new(qp, wr_id, status, op.wc_opcode() as u32)
        };
        match crate::cq::post(&qp.send_cq, &wc, false) {
            Ok(notify) => p.out.send_cq |= notify,
            Err(_) => {
                // The CQ overran: its consumer is told, and the QP cannot go on.
                qp.send_cq.error_event();
                p.set_error();
                return;
            }
        }
    }
    if status != WcStatus::Success {
        p.set_error();
    }
}

/// Whether send WQEs were started and not completed.
fn outstanding(inner: &Inner) -> bool {
    inner.sq.consumer() != inner.eng.hw_index
}

/// Whether the oldest WQE can be completed: one is outstanding and the QP is not in error.
fn front_open(p: &Pass<'_>) -> bool {
    outstanding(p.inner) && !p.in_error()
}

/// Completes, in order, the WQEs at the front that need no acknowledge and were sent, and
/// the reads behind them made whole by responses kept ([`complete_early`]); a range such a
/// read misses is asked for in the next pass.
pub(crate) fn complete_sent(p: &mut Pass<'_>) {
    while front_open(p) {
        if complete_early(p) {
            continue;
        }
        let t = p.inner.eng.track(p.inner.sq.consumer());
        if !(t.all_sent && t.no_ack) {
            break;
        }
        let status = t.status;
        complete_front(p, status);
    }
    if p.inner.eng.retry_plan.read.is_some() {
        p.out.again = true;
    }
}

/// Why a retry is wanted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Why {
    /// The retransmission timer expired.
    Timeout,
    /// Responses came ahead of a missing read or atomic response.
    ImplicitNak,
    /// The responder asked for a retransmission (PSN sequence error NAK).
    SeqNak,
}

/// Decides a retransmission from the oldest unacknowledged PSN if the retry count allows.
/// When the oldest WQE is an RDMA READ whose responses stopped (timeout, implicit NAK),
/// only what it misses is asked for: its oldest missing range, or the next chunk of its
/// rest; with an infinite retry count, timeouts in a row ask with a backoff
/// ([`ask_on_timeout`]). The requester carries the decision out.
fn start_retry(p: &mut Pass<'_>, why: Why) {
    let e = &mut p.inner.eng;
    let t = *e.track(p.inner.sq.consumer());
    let read = matches!(t.op, WrOpcode::RdmaRead | WrOpcode::RdmaReadInv);
    if why == Why::Timeout && read {
        e.timeouts = e.timeouts.wrapping_add(1);
        if !ask_on_timeout(e.retry, e.timeouts) {
            return;
        }
    }
    match retry(
        &mut e.retry,
        e.retrying,
        why == Why::Timeout,
        e.psn,
        e.comp.psn,
    ) {
        RetryDecision::Retransmit => {
            e.retrying = true;
            p.dev.data().count(Counter::CompleterRetryErr);
            if why != Why::SeqNak && read {
                let ask = if e.holes.is_active() {
                    ReadAsk::Hole
                } else {
                    ReadAsk::Chunk
                };
                e.retry_plan.ask_read(t.first_psn, ask);
            } else {
                e.holes.clear();
                e.retry_plan.rewind = true;
                p.out.again = true;
            }
        }
        RetryDecision::Ignore => {}
        RetryDecision::Exceeded => {
            p.count(Counter::RetryExceededErr);
            complete_front(p, WcStatus::RetryExcErr);
        }
    }
}

/// The retransmission timer expired, and nothing restarted it since: neither a response
/// taken in this pass ([`on_response`], [`on_left`]) nor a pass that ended after
/// the expiry (the caller checks that the timer is not pending again). The timer times the
/// responder's silence; an expiry that a restart overtook is stale, as rxe's completer
/// drops a timeout when it finds a response queued. Taken as a timeout on a busy CPU,
/// where the expiry and the responses it waited for come late together, it sent the
/// window again for nothing (slow-responder.sh).
///
/// An expiry in an RNR wait is void too: the requester is silent at the responder's
/// request, and the RNR timer's retransmission starts the timer again (the RNR NAK stops
/// it, [`heard`]; the RNR timer voids an expiry it finds unhandled). Counted, a wait
/// longer than the ACK timeout spent the retry count and failed the WQE with
/// `RETRY_EXC_ERR` on a responder that was only out of receives (rnr-forever.sh; rxe does
/// the same).
///
/// So is an expiry with no packet awaiting its acknowledge: the timer is left to expire
/// when a response leaves nothing outstanding ([`heard`]), and a WQE started since then
/// may have sent nothing yet (held back by the sender's limit of packets in flight); only
/// a packet sent arms the timer for it.
pub(crate) fn on_timeout(p: &mut Pass<'_>) {
    let e = &p.inner.eng;
    if p.qp.qp_type != QpType::Rc
        || !p.inner.can_send()
        || !outstanding(p.inner)
        || e.rnr_wait
        || !e.sent_end.is_after(e.comp.psn)
    {
        return;
    }
    start_retry(p, Why::Timeout);
    if let Some(us) = p.inner.params.timeout_us.filter(|_| !p.in_error()) {
        p.out.retrans = Some(us);
    }
}

/// Progress was made: the retry and RNR counters start again.
fn progress(inner: &mut Inner) {
    let p = inner.params;
    let e = &mut inner.eng;
    e.retry = RetryCounter::new(p.retry_cnt);
    e.rnr = RetryCounter::new(p.rnr_retry);
    e.retrying = false;
    e.timeouts = 0;
    e.ahead.reset();
}

/// Completes the oldest WQE if its result came early, or if it is an RDMA READ whose
/// responses were kept while an older one missed some and they make it whole. Returns true
/// if it did. Not a WQE the requester gave up on (no acknowledge awaited: it completes
/// with the status it was given).
fn complete_early(p: &mut Pass<'_>) -> bool {
    if !front_open(p) {
        return false;
    }
    let t = *p.inner.eng.track(p.inner.sq.consumer());
    if t.no_ack {
        return false;
    }
    let Some(status) = t.early else {
        return take_kept(p, &t);
    };
    let last_psn = t.last_psn;
    p.inner.eng.comp.wqe_done(last_psn);
    progress(p.inner);
    complete_front(p, status);
    true
}

/// The oldest WQE, an RDMA READ tracked as `t` that the completer has taken nothing of yet:
/// takes its responses kept while an older WQE was the oldest ([`keep_early`]), from its
/// first PSN on. Completes it if they make it whole (returns true); else, once a few are
/// kept beyond a missing one (as [`keep_read`] waits for them), asks for the oldest
/// missing range (lost: the responder sent the later ones after it).
fn take_kept(p: &mut Pass<'_>, t: &Track) -> bool {
    let e = &mut p.inner.eng;
    if !matches!(t.op, WrOpcode::RdmaRead | WrOpcode::RdmaReadInv)
        || !t.all_sent
        || !e.holes.is_active()
        || e.comp.psn != t.first_psn
        || e.comp.opcode.is_some()
    {
        return false;
    }
    let kept = e.holes.advance(e.comp.psn, t.last_psn);
    if kept > 0 {
        let done = e.comp.psn.wrapping_add(kept).is_after(t.last_psn);
        e.comp.read_taken(kept, done);
        progress(p.inner);
        if done {
            complete_front(p, WcStatus::Success);
            return true;
        }
    }
    let holes = &p.inner.eng.holes;
    if holes.must_ask() && holes.kept() >= u32::from(IMPLICIT_NAK_AFTER) {
        ask_hole(p, t);
    }
    false
}

/// Writes response data at `off` in the local buffers of the send WQE at `index`, tracked
/// as `t`: its one SGE as first sent, or else its SGEs read again. False if they refuse it,
/// or if the WQE read again was rewritten since its first send.
fn store(p: &mut Pass<'_>, index: u32, t: &Track, off: u64, data: Bytes<'_>) -> bool {
    if let Some(sge) = t.shape.sge() {
        return sgl::write(
            Keys::new(p.dev.data(), p.qp.owner(), &p.inner.mrs),
            &[sge],
            off,
            data,
        )
        .is_ok();
    }
    let inner = &mut *p.inner;
    let keys = Keys::new(p.dev.data(), p.qp.owner(), &inner.mrs);
    let w = &mut inner.eng.reread;
    wqe::read_send(&inner.sq, index, p.qp.kernel, w).is_ok()
        && wqe::Shape::of(w) == t.shape
        && sgl::write(keys, w.sges.sges(), off, data).is_ok()
}

/// The original value an atomic acknowledge returns.
fn atomic_orig(pkt: &RxPacket<'_>) -> [u8; 8] {
    pkt.hdr
        .atomic_ack
        .map(|a| a.orig)
        .unwrap_or(0)
        .to_ne_bytes()
}

/// A response came ahead of the oldest WQE: if it is the whole answer of a later one-packet
/// read or atomic, stores the result with that WQE, which completes in its turn; if it is
/// one of the responses of a later read of more, stores its data and keeps its PSN with
/// those kept beyond the oldest WQE's missing one ([`keep_later_read`]).
fn keep_early(p: &mut Pass<'_>, rsp: &Response, pkt: &RxPacket<'_>) {
    let sq = &p.inner.sq;
    let cons = sq.consumer();
    let mut index = cons;
    for _ in 1..sq.distance(cons, p.inner.eng.hw_index) {
        index = p.inner.sq.next_index(index);
        let mut t = *p.inner.eng.track(index);
        if t.first_psn.is_after(rsp.psn) {
            return;
        }
        if t.no_ack || t.early.is_some() {
            continue;
        }
        let stored = match early(&t.view(), rsp) {
            Some(Verdict::AtomicResult) => store(p, index, &t, 0, Bytes::Slice(&atomic_orig(pkt))),
            Some(Verdict::ReadData) if pkt.payload.len() as u64 == u64::from(t.byte_len()) => {
                store(p, index, &t, 0, pkt.payload)
            }
            Some(_) => return,
            None if rsp.psn.is_after(t.last_psn) => continue,
            None => {
                keep_later_read(p, index, &t, rsp, pkt.payload);
                return;
            }
        };
        t.early = Some(if stored {
            WcStatus::Success
        } else {
            WcStatus::LocProtErr
        });
        p.inner.eng.set_track(index, t);
        return;
    }
}

/// A response for the PSNs of the later WQE at `index`, tracked as `t`, came while an older
/// WQE misses some: if `t` is an RDMA READ of more than one response sent whole, this one
/// of its responses, and inside the window of [`crate::proto::readholes`], stores its data
/// and keeps its PSN, for the read to take when it is the oldest ([`take_kept`]). Else it
/// is dropped, and asked for again then. A failed store fails the read in its turn.
fn keep_later_read(p: &mut Pass<'_>, index: u32, t: &Track, rsp: &Response, payload: Bytes<'_>) {
    let ack = !matches!(rsp.syndrome, Some(s) if !s.is_ack());
    if !matches!(t.op, WrOpcode::RdmaRead | WrOpcode::RdmaReadInv)
        || !t.all_sent
        || rsp.opcode.operation() != Operation::ReadResponse
        || !ack
        || !p.inner.eng.holes.can_keep(p.inner.eng.comp.psn, rsp.psn)
    {
        return;
    }
    let Some(off) = read_offset(p, t, rsp, payload) else {
        return;
    };
    if !store(p, index, t, off, payload) {
        let mut t = *t;
        t.early = Some(WcStatus::LocProtErr);
        p.inner.eng.set_track(index, t);
        return;
    }
    let expected = p.inner.eng.comp.psn;
    p.inner.eng.holes.keep(expected, rsp.psn);
}

/// Where an RDMA READ response for the read tracked as `t` belongs: the offset of its data
/// in the read, if it carries what it must there (a whole MTU for every response but the
/// read's last, whatever its opcode: the answer to a range asked for again may start with
/// First or Only and end with Last; the rest for the last, which ends a sequence).
fn read_offset(p: &Pass<'_>, t: &Track, rsp: &Response, payload: Bytes<'_>) -> Option<u64> {
    let mtu = u64::from(p.inner.params.mtu.bytes());
    let off = u64::from(rsp.psn.distance_from(t.first_psn)) * mtu;
    let ok = if rsp.psn == t.last_psn {
        rsp.opcode.is_end() && payload.len() as u64 == u64::from(t.byte_len()).saturating_sub(off)
    } else {
        payload.len() as u64 == mtu
    };
    ok.then_some(off)
}

/// Asks the requester for the oldest missing range of the oldest WQE, an RDMA READ tracked
/// as `t`.
fn ask_hole(p: &mut Pass<'_>, t: &Track) {
    p.inner.eng.retry_plan.ask_read(t.first_psn, ReadAsk::Hole);
}

/// A response of the oldest WQE, an RDMA READ tracked as `t`, came beyond a missing one:
/// stores its data and keeps its PSN, and once a few came, asks for what is missing.
fn keep_read(p: &mut Pass<'_>, t: &Track, rsp: &Response, payload: Bytes<'_>) {
    let expected = p.inner.eng.comp.psn;
    if !p.inner.eng.holes.can_keep(expected, rsp.psn) {
        return;
    }
    let Some(off) = read_offset(p, t, rsp, payload) else {
        return;
    };
    if !store(p, p.inner.sq.consumer(), t, off, payload) {
        complete_front(p, WcStatus::LocProtErr);
        return;
    }
    let holes = &mut p.inner.eng.holes;
    holes.keep(expected, rsp.psn);
    if holes.must_ask() && holes.kept() >= u32::from(IMPLICIT_NAK_AFTER) {
        ask_hole(p, t);
    }
}

/// Read data of the oldest WQE, an RDMA READ tracked as `t`, at the PSN expected (of a
/// response, or of a burst of them checked as `at`): stores it, takes responses kept
/// beyond it, completes the read when it is whole, else decides what to ask for next.
fn read_data(
    p: &mut Pass<'_>,
    t: &Track,
    rsp: &Response,
    payload: Bytes<'_>,
    at: Option<ReadBurst>,
) {
    let (off, last) = match at {
        Some(b) => (u64::from(b.offset), b.last_psn),
        None => match read_offset(p, t, rsp, payload) {
            Some(off) => (off, rsp.psn),
            // Not what the responder owes there: dropped (asked for again).
            None => return,
        },
    };
    if !store(p, p.inner.sq.consumer(), t, off, payload) {
        complete_front(p, WcStatus::LocProtErr);
        return;
    }
    progress(p.inner);
    let end = off + payload.len() as u64;
    let remaining = u64::from(t.byte_len()).saturating_sub(end) as u32;
    let e = &mut p.inner.eng;
    e.comp.update(rsp.opcode, last);
    // Responses kept beyond this one are taken now; the last may be among them.
    let kept = e.holes.advance(e.comp.psn, t.last_psn);
    let after = e.comp.psn.wrapping_add(kept);
    let done = read_complete(remaining, rsp.opcode) || (kept > 0 && after.is_after(t.last_psn));
    if kept > 0 || !done {
        e.comp.read_taken(kept, done);
    }
    if done {
        complete_front(p, WcStatus::Success);
    } else if e.holes.must_ask() {
        ask_hole(p, t);
    } else if rsp.opcode.is_end() && e.holes.chunk_done(e.comp.psn) {
        // The chunk asked for arrived whole: the next one.
        e.retry_plan.ask_read(t.first_psn, ReadAsk::Chunk);
    }
}

/// An RNR NAK: waits for the RNR timer, or fails the WQE when its retries are spent.
fn rnr(p: &mut Pass<'_>, timer: u8) {
    p.count(Counter::RcvdRnrErr);
    match rnr_retry(&mut p.inner.eng.rnr, timer) {
        Ok(us) => {
            p.inner.eng.rnr_wait = true;
            p.out.rnr = Some(us);
        }
        Err(status) => {
            p.count(Counter::RetryRnrExceededErr);
            complete_front(p, status);
        }
    }
}

/// Matches one response against the oldest WQEs: completes those it acknowledges, stores
/// its data or result, and decides a retry or an RNR wait. A loopback burst of RDMA READ
/// responses (cut by its sender's path MTU `burst`, [`crate::proto::burst`]) is taken only
/// as the data the oldest WQE expects next, with no response kept beyond a missing one
/// ([`check_read_burst`]); anywhere else it is dropped, and its responses asked for again
/// (a replay, packet by packet).
fn take_response(p: &mut Pass<'_>, rsp: &Response, pkt: &RxPacket<'_>, burst: Option<Mtu>) {
    while front_open(p) {
        if complete_early(p) {
            continue;
        }
        let cons = p.inner.sq.consumer();
        let t = p.inner.eng.track(cons);
        if t.no_ack {
            if t.all_sent {
                let status = t.status;
                complete_front(p, status);
                continue;
            }
            break;
        }
        let view = t.view();
        let v = judge(&p.inner.eng.comp, &view, rsp);
        let at = match burst {
            None => None,
            Some(sender_mtu) => match burst_place(p, t, rsp, pkt, sender_mtu, v) {
                Some(at) => at,
                None => {
                    // Dropped; one ahead of the oldest WQE's responses counts toward the
                    // implicit NAK, as a single response there would, and so does one
                    // beyond a missing response of the oldest read while nothing is kept
                    // (kept responses ask for the missing range themselves).
                    let ahead = matches!(v, Verdict::Ahead)
                        || matches!(v, Verdict::ReadAhead) && !p.inner.eng.holes.is_active();
                    if ahead && p.inner.eng.ahead.note() {
                        start_retry(p, Why::ImplicitNak);
                    }
                    break;
                }
            },
        };
        if v.resets_retries() {
            progress(p.inner);
        }
        match v {
            Verdict::Drop => break,
            Verdict::CompleteImplicit => {
                p.inner.eng.comp.wqe_done(view.last_psn);
                complete_front(p, WcStatus::Success);
            }
            Verdict::Complete => {
                let comp = &mut p.inner.eng.comp;
                if !rsp.psn.is_before(comp.psn) {
                    comp.update(rsp.opcode, rsp.psn);
                }
                complete_front(p, WcStatus::Success);
                break;
            }
            Verdict::Progress => {
                p.inner.eng.comp.update(rsp.opcode, rsp.psn);
                break;
            }
            Verdict::ReadData => {
                let t = *p.inner.eng.track(cons);
                read_data(p, &t, rsp, pkt.payload, at);
                break;
            }
            Verdict::ReadAhead => {
                let t = *p.inner.eng.track(cons);
                keep_read(p, &t, rsp, pkt.payload);
                break;
            }
            Verdict::AtomicResult => {
                let t = *p.inner.eng.track(cons);
                let stored = store(p, cons, &t, 0, Bytes::Slice(&atomic_orig(pkt)));
                p.inner.eng.comp.update(rsp.opcode, rsp.psn);
                let status = if stored {
                    WcStatus::Success
                } else {
                    WcStatus::LocProtErr
                };
                complete_front(p, status);
                break;
            }
            Verdict::Ahead => {
                keep_early(p, rsp, pkt);
                if p.inner.eng.ahead.note() {
                    start_retry(p, Why::ImplicitNak);
                }
                break;
            }
            Verdict::Retry { nak_psn } => {
                if let Some(psn) = nak_psn {
                    p.count(Counter::RcvdSeqErr);
                    if p.inner.eng.comp.nak_sequence(psn) {
                        progress(p.inner);
                    }
                }
                start_retry(p, Why::SeqNak);
                break;
            }
            Verdict::Rnr { timer } => {
                rnr(p, timer);
                break;
            }
            Verdict::Fail(status) => {
                complete_front(p, status);
                break;
            }
        }
    }
}

/// What the completer does with a loopback burst of RDMA READ responses cut by its
/// sender's path MTU `sender_mtu`, judged `v` against the oldest WQE, tracked as `t`: go
/// on with the verdict, with the burst's place if it is the read data the WQE expects next
/// (`Some`), or drop it (`None`). A burst completes older WQEs implicitly as its first
/// response would; it is taken only as the data expected next with no response kept
/// beyond a missing one ([`check_read_burst`]). Kept out of line: a single response's
/// path stays as short as it was.
#[inline(never)]
fn burst_place(
    p: &Pass<'_>,
    t: &Track,
    rsp: &Response,
    pkt: &RxPacket<'_>,
    sender_mtu: Mtu,
    v: Verdict,
) -> Option<Option<ReadBurst>> {
    match v {
        Verdict::CompleteImplicit => Some(None),
        Verdict::ReadData if !p.inner.eng.holes.is_active() => check_read_burst(
            rsp.opcode,
            rsp.psn,
            pkt.payload.len() as u32,
            sender_mtu,
            p.inner.params.mtu,
            t.first_psn,
            t.last_psn,
            t.byte_len(),
        )
        .map(Some),
        _ => None,
    }
}

/// Whether the QP takes responses now (an RC QP that sends). One it no longer takes was
/// admitted while it did ([`crate::admit`]): it goes with the rest of what the QP had
/// queued when it stopped, as its flushed work goes (rxe drains its queues so), counted
/// in rcvd_pkts only.
fn takes_responses(p: &Pass<'_>) -> bool {
    p.qp.qp_type == QpType::Rc && p.inner.can_send()
}

/// Processes one response packet: consumed if it answers a PSN outstanding, else dropped.
pub(crate) fn on_response(p: &mut Pass<'_>, skb: SkBuff) {
    if !takes_responses(p) {
        skb.consume();
        return;
    }
    let burst = recv::burst_of(&skb);
    let Some(view) = skb.rx_view() else { return };
    let Some(pkt) = recv::parse(&view, burst) else {
        return;
    };
    let rsp = Response {
        opcode: pkt.opcode(),
        psn: pkt.psn(),
        syndrome: pkt.hdr.aeth.map(|a| a.syndrome),
    };
    if respond(p, &rsp, &pkt, burst) {
        skb.consume();
    }
}

/// Takes the responses the QP's loopback peer left instead of packets
/// ([`crate::respbox`]), all at once, and processes each as its packet: the same checks
/// after admission, which its sender stands in for.
pub(crate) fn on_left(p: &mut Pass<'_>) {
    if p.qp.boxes.resp.is_empty() {
        return;
    }
    let Some(mut hands) = p.inner.hands.take() else {
        return;
    };
    let hand = &mut hands.resp;
    p.qp.boxes.resp.swap(hand);
    while let Some((r, payload)) = hand.front() {
        on_direct(p, r, payload);
        hand.advance();
    }
    p.inner.hands = Some(hands);
}

/// Processes response `r` with payload `payload` that the QP's loopback peer left.
fn on_direct(p: &mut Pass<'_>, r: &Resp, payload: &[u8]) {
    if !takes_responses(p) {
        return;
    }
    let opcode = r.kind.opcode();
    let mut hdr = Headers::new(Bth::new(opcode, p.qp.qpn, r.psn));
    // As its packet's, which carries it on the wire.
    hdr.bth.pad = pad_len(payload.len()) as u8;
    let syndrome = Syndrome::ACK;
    hdr.aeth = Some(Aeth {
        syndrome,
        msn: r.msn,
    });
    if let Kind::Atomic(orig) = r.kind {
        hdr.atomic_ack = Some(AtomicAckEth { orig });
    }
    let pkt = Packet {
        hdr,
        payload: Bytes::Slice(payload),
    };
    let rsp = Response {
        opcode,
        psn: r.psn,
        syndrome: Some(syndrome),
    };
    respond(p, &rsp, &pkt, None);
}

/// Takes response `rsp` (of packet `pkt`, a loopback burst cut by `burst` if it is one):
/// false if it answers no PSN outstanding (dropped), else true.
fn respond(p: &mut Pass<'_>, rsp: &Response, pkt: &RxPacket<'_>, burst: Option<Mtu>) -> bool {
    // Only PSNs sent and not completed yet are acknowledged: anything else is a stale
    // duplicate or a forgery.
    let e = &p.inner.eng;
    let oldest = if outstanding(p.inner) {
        e.track(p.inner.sq.consumer()).first_psn
    } else {
        e.sent_end
    };
    match response_place(rsp.psn, rsp.syndrome, oldest, e.sent_end) {
        ResponsePlace::Outstanding => {}
        ResponsePlace::Stale => {
            p.count(Counter::RcvdBadRespPsn);
            heard(p);
            return false;
        }
        ResponsePlace::Ahead => {
            p.count(Counter::RcvdBadRespPsn);
            return false;
        }
    }
    take_response(p, rsp, pkt, burst);
    while complete_early(p) {}
    heard(p);
    true
}

/// The peer answered: the retransmission timer starts again. It measures the responder's
/// silence: every response that answers a PSN outstanding or is a stale duplicate behind
/// them restarts it, progress or not (rxe's completer restarts it on any response); the
/// retry count bounds the retries without progress. So a responder still sending what
/// earlier asks of a read asked for is not asked again meanwhile. When the timer ran from
/// the last progress, a responder slower than the timeout (the debug kernel, or a short
/// timeout) got a new ask at every timeout, queued behind those it was serving, and
/// answered stale asks for ever (lossy-read -u 8: a livelock). When stale duplicates did
/// not restart it, rxe as the responder, which answers every ask it queued from its start,
/// got a new ask at every timeout while it streamed answers to reads completed already,
/// and its queue of asks grew without end (the debug kernel's interop-rxe-rrxe). Only
/// packets from the peer's address to this QP get here ([`crate::admit::accept`]), as with
/// rxe, and responses its loopback peer left ([`crate::respbox`]); one that forges packets can
/// hold off a timeout, not cause a retry. An expiry this pass has not handled yet is void
/// ([`on_timeout`]). An RNR NAK stops the timer instead: the requester sends nothing until
/// the RNR timer's retransmission, which starts it.
/// When the response leaves nothing outstanding, the timer is left to expire: its expiry
/// finds nothing to retry ([`on_timeout`]), and the next packet sent pushes it out; a
/// cancel for every such response cost a timer dequeue and a re-queue per message. An
/// idle QP takes one expiry (a pass that does nothing) at the end of its traffic.
fn heard(p: &mut Pass<'_>) {
    p.inner.eng.timed_out = false;
    p.out.retrans = if p.inner.eng.rnr_wait || p.in_error() {
        Some(0)
    } else if outstanding(p.inner) {
        p.inner.params.timeout_us.or(Some(0))
    } else {
        None
    };
}
