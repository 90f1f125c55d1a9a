// SPDX-License-Identifier: GPL-2.0

//! The completer: matches acknowledges and read/atomic responses to the send WQEs in
//! flight (the protocol core's `judge`), completes them in order, stores read data and
//! atomic results, and decides retries and RNR waits.

use crate::{
    bindings as b,
    counters::Counter,
    cq::Cqe,
    device::RrxeDev,
    eng::{Outbox, Track},
    ext::{
        net::{device::NetDevice, skb::SkBuff},
        rdma::device::Device,
    },
    proto::{
        admit::response_in_window,
        completer::{
            early, judge, read_complete, retry, rnr_retry, Response, RetryCounter, RetryDecision,
            Verdict, IMPLICIT_NAK_AFTER,
        },
        packet::Packet,
        verbs::{QpType, WcStatus, WrOpcode},
    },
    qp::{Inner, QpShared},
    req::{ask_read, rewind},
    sgl::{self, Owner},
    wqe,
};

/// Completes the oldest send WQE with `status`; an error moves the QP to the error state.
///
/// The WQE's slot is released before the completion is queued: a consumer that polls the
/// completion may post again at once, into a queue that is then not full.
fn complete_front(qp: &QpShared, inner: &mut Inner, out: &mut Outbox, status: WcStatus) {
    let cons = inner.sq.consumer();
    let t = inner.eng.track(cons);
    inner.eng.holes.clear();
    if t.holds_rd_atomic {
        inner.eng.rd_atomic = inner.eng.rd_atomic.saturating_sub(1);
    }
    inner.sq.advance();
    // A requester waiting for this completion goes on in another pass: completions of
    // WQEs that need no acknowledge (local operations, datagrams) come after it in a pass.
    if core::mem::take(&mut inner.eng.wait_completion) {
        out.again = true;
    }
    // The requester may be sending it again: it stops, and goes on after it.
    if inner.eng.cur.as_ref().is_some_and(|c| c.index == cons) {
        inner.eng.cur = None;
    }
    if inner.eng.req_index == cons {
        inner.eng.req_index = inner.sq.consumer();
    }
    if t.signaled || qp.signal_all || status != WcStatus::Success {
        let wc = Cqe {
            wr_id: t.wr_id,
            status: status as u32,
            opcode: t.op.wc_opcode() as u32,
            byte_len: t.byte_len,
            qp_num: qp.qpn,
            ib_qp: qp.ib_qp,
            ..Default::default()
        };
        match crate::cq::post(&qp.send_cq, &wc, false) {
            Ok(notify) => out.send_cq |= notify,
            Err(_) => {
                // The CQ overran: its consumer is told, and the QP cannot go on.
                qp.send_cq.error_event();
                inner.set_error(qp, out);
                return;
            }
        }
    }
    if status != WcStatus::Success {
        inner.set_error(qp, out);
    }
}

/// Whether send WQEs were started and not completed.
fn outstanding(inner: &Inner) -> bool {
    inner.sq.consumer() != inner.eng.hw_index
}

/// Completes, in order, the WQEs at the front that need no acknowledge and were sent.
pub(crate) fn complete_sent(qp: &QpShared, inner: &mut Inner, out: &mut Outbox) {
    while outstanding(inner) && inner.state != b::ib_qp_state_IB_QPS_ERR {
        let t = inner.eng.track(inner.sq.consumer());
        if !(t.all_sent && t.no_ack) {
            break;
        }
        complete_front(qp, inner, out, t.status);
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

/// Retransmits from the oldest unacknowledged PSN if the retry count allows. When the
/// oldest WQE is an RDMA READ whose responses stopped (timeout, implicit NAK), asks for
/// what it misses only: its oldest missing range, or the next chunk of its rest.
fn start_retry(
    qp: &QpShared,
    dev: &Device<RrxeDev>,
    ndev: &NetDevice,
    inner: &mut Inner,
    out: &mut Outbox,
    why: Why,
) {
    let e = &mut inner.eng;
    match retry(
        &mut e.retry,
        e.retrying,
        why == Why::Timeout,
        e.psn,
        e.comp.psn,
    ) {
        RetryDecision::Retransmit => {
            e.retrying = true;
            dev.data().count(Counter::CompleterRetryErr);
            let t = e.track(inner.sq.consumer());
            if why != Why::SeqNak && matches!(t.op, WrOpcode::RdmaRead | WrOpcode::RdmaReadInv) {
                if e.holes.is_active() {
                    ask_hole(dev, ndev, inner, &t);
                } else {
                    let chunk = e.holes.chunk(t.first_psn, e.comp.psn, t.last_psn);
                    ask_read(dev, ndev, inner, &t, chunk);
                }
            } else {
                e.holes.clear();
                rewind(inner);
                out.again = true;
            }
        }
        RetryDecision::Ignore => {}
        RetryDecision::Exceeded => {
            dev.data().count(Counter::RetryExceededErr);
            complete_front(qp, inner, out, WcStatus::RetryExcErr);
        }
    }
}

/// The retransmission timer expired.
pub(crate) fn on_timeout(
    qp: &QpShared,
    dev: &Device<RrxeDev>,
    ndev: &NetDevice,
    inner: &mut Inner,
    out: &mut Outbox,
) {
    if qp.qp_type != QpType::Rc || !inner.can_send() || !outstanding(inner) {
        return;
    }
    start_retry(qp, dev, ndev, inner, out, Why::Timeout);
    if let Some(us) = inner.params.timeout_us {
        out.retrans = Some(us);
    }
}

/// Progress was made: the retry and RNR counters start again.
fn progress(inner: &mut Inner) {
    let p = inner.params;
    let e = &mut inner.eng;
    e.retry = RetryCounter::new(p.retry_cnt);
    e.rnr = RetryCounter::new(p.rnr_retry);
    e.retrying = false;
    e.ahead.reset();
}

/// Completes the oldest WQE if its result came early. Returns true if it did.
fn complete_early(qp: &QpShared, inner: &mut Inner, out: &mut Outbox) -> bool {
    if !outstanding(inner) || inner.state == b::ib_qp_state_IB_QPS_ERR {
        return false;
    }
    let t = inner.eng.track(inner.sq.consumer());
    let Some(status) = t.early else {
        return false;
    };
    inner.eng.comp.wqe_done(t.last_psn);
    progress(inner);
    complete_front(qp, inner, out, status);
    true
}

/// Writes response data at `off` in the local buffers of the send WQE at `index`, tracked
/// as `t`. False if they refuse it, or if the WQE was rewritten since its first send.
fn store(
    qp: &QpShared,
    dev: &Device<RrxeDev>,
    inner: &Inner,
    index: u32,
    t: &Track,
    off: u64,
    data: &[u8],
) -> bool {
    let owner = Owner {
        pd: qp.pd,
        qpn: qp.qpn,
    };
    let stored = wqe::read_send(&inner.sq, index, qp.kernel)
        .ok()
        .filter(|w| wqe::Shape::of(w) == t.shape)
        .map(|w| sgl::write(dev.data(), owner, w.data.sges(), off, data));
    matches!(stored, Some(Ok(())))
}

/// The original value an atomic acknowledge returns.
fn atomic_orig(pkt: &Packet<'_>) -> [u8; 8] {
    pkt.hdr
        .atomic_ack
        .map(|a| a.orig)
        .unwrap_or(0)
        .to_ne_bytes()
}

/// A response came ahead of the oldest WQE: if it is the whole answer of a later one-packet
/// read or atomic, stores the result with that WQE, which completes in its turn.
fn keep_early(
    qp: &QpShared,
    dev: &Device<RrxeDev>,
    inner: &mut Inner,
    rsp: &Response,
    pkt: &Packet<'_>,
) {
    let cons = inner.sq.consumer();
    let mut index = cons;
    for _ in 1..inner.sq.distance(cons, inner.eng.hw_index) {
        index = inner.sq.next_index(index);
        let mut t = inner.eng.track(index);
        if t.first_psn.is_after(rsp.psn) {
            return;
        }
        if t.no_ack || t.early.is_some() {
            continue;
        }
        let stored = match early(&t.view(), rsp) {
            Some(Verdict::AtomicResult) => store(qp, dev, inner, index, &t, 0, &atomic_orig(pkt)),
            Some(Verdict::ReadData) if pkt.payload.len() as u64 == u64::from(t.byte_len) => {
                store(qp, dev, inner, index, &t, 0, pkt.payload)
            }
            Some(_) => return,
            None => continue,
        };
        t.early = Some(if stored {
            WcStatus::Success
        } else {
            WcStatus::LocProtErr
        });
        inner.eng.set_track(index, t);
        return;
    }
}

/// Whether an RDMA READ response for the read tracked as `t`, placed at `off`, carries
/// what it must: a whole MTU for every response but the read's last (whatever its opcode:
/// the answer to a range asked for again may start with First or Only and end with Last),
/// the rest for the last, which ends a sequence.
fn read_len_ok(t: &Track, rsp: &Response, off: u64, mtu: u64, payload: &[u8]) -> bool {
    if rsp.psn == t.last_psn {
        rsp.opcode.is_end() && payload.len() as u64 == u64::from(t.byte_len).saturating_sub(off)
    } else {
        payload.len() as u64 == mtu
    }
}

/// Asks for the oldest missing range of the oldest WQE, an RDMA READ tracked as `t`.
fn ask_hole(dev: &Device<RrxeDev>, ndev: &NetDevice, inner: &mut Inner, t: &Track) {
    if let Some(hole) = inner.eng.holes.ask(t.first_psn) {
        ask_read(dev, ndev, inner, t, hole);
    }
}

/// A response of the oldest WQE, an RDMA READ tracked as `t`, came beyond a missing one:
/// stores its data and keeps its PSN, and once a few came, asks for what is missing.
#[allow(clippy::too_many_arguments)]
fn keep_read(
    qp: &QpShared,
    dev: &Device<RrxeDev>,
    ndev: &NetDevice,
    inner: &mut Inner,
    out: &mut Outbox,
    t: &Track,
    rsp: &Response,
    payload: &[u8],
) {
    let expected = inner.eng.comp.psn;
    if !inner.eng.holes.can_keep(expected, rsp.psn) {
        return;
    }
    let mtu = u64::from(inner.params.mtu.bytes());
    let off = u64::from(rsp.psn.distance_from(t.first_psn)) * mtu;
    if !read_len_ok(t, rsp, off, mtu, payload) {
        return;
    }
    if !store(qp, dev, inner, inner.sq.consumer(), t, off, payload) {
        complete_front(qp, inner, out, WcStatus::LocProtErr);
        return;
    }
    inner.eng.holes.keep(expected, rsp.psn);
    if inner.eng.holes.must_ask() && inner.eng.holes.kept() >= u32::from(IMPLICIT_NAK_AFTER) {
        ask_hole(dev, ndev, inner, t);
    }
}

/// Processes one response packet.
pub(crate) fn on_response(
    qp: &QpShared,
    dev: &Device<RrxeDev>,
    ndev: &NetDevice,
    inner: &mut Inner,
    skb: SkBuff,
    out: &mut Outbox,
) {
    if qp.qp_type != QpType::Rc || !inner.can_send() {
        dev.data().count(Counter::RcvdBadTypeState);
        return;
    }
    let Some(view) = skb.rx_view() else { return };
    let Ok(pkt) = Packet::parse(view.payload) else {
        return;
    };
    if !crate::admit::accept(qp, dev, inner, view.ip, view.udp, &pkt) {
        return;
    }
    let rsp = Response {
        opcode: pkt.opcode(),
        psn: pkt.psn(),
        syndrome: pkt.hdr.aeth.map(|a| a.syndrome),
    };
    // Only PSNs sent and not completed yet are acknowledged: anything else is a stale
    // duplicate or a forgery.
    let oldest = if outstanding(inner) {
        inner.eng.track(inner.sq.consumer()).first_psn
    } else {
        inner.eng.sent_end
    };
    if !response_in_window(rsp.psn, rsp.syndrome, oldest, inner.eng.sent_end) {
        dev.data().count(Counter::RcvdBadRespPsn);
        return;
    }
    let mut progressed = false;
    while outstanding(inner) && inner.state != b::ib_qp_state_IB_QPS_ERR {
        if complete_early(qp, inner, out) {
            progressed = true;
            continue;
        }
        let cons = inner.sq.consumer();
        let t = inner.eng.track(cons);
        if t.no_ack {
            if t.all_sent {
                complete_front(qp, inner, out, t.status);
                continue;
            }
            break;
        }
        let v = judge(&inner.eng.comp, &t.view(), &rsp);
        if v.resets_retries() {
            progress(inner);
            progressed = true;
        }
        match v {
            Verdict::Drop => break,
            Verdict::CompleteImplicit => {
                inner.eng.comp.wqe_done(t.last_psn);
                complete_front(qp, inner, out, WcStatus::Success);
            }
            Verdict::Complete => {
                if !rsp.psn.is_before(inner.eng.comp.psn) {
                    inner.eng.comp.update(rsp.opcode, rsp.psn);
                }
                complete_front(qp, inner, out, WcStatus::Success);
                break;
            }
            Verdict::Progress => {
                inner.eng.comp.update(rsp.opcode, rsp.psn);
                break;
            }
            Verdict::ReadData => {
                let mtu = u64::from(inner.params.mtu.bytes());
                let off = u64::from(rsp.psn.distance_from(t.first_psn)) * mtu;
                if !read_len_ok(&t, &rsp, off, mtu, pkt.payload) {
                    // Not what the responder owes there: dropped (asked for again).
                    break;
                }
                if !store(qp, dev, inner, cons, &t, off, pkt.payload) {
                    complete_front(qp, inner, out, WcStatus::LocProtErr);
                    break;
                }
                let end = off + pkt.payload.len() as u64;
                let remaining = u64::from(t.byte_len).saturating_sub(end) as u32;
                inner.eng.comp.update(rsp.opcode, rsp.psn);
                // Responses kept beyond this one are taken now; the last may be among them.
                let kept = inner.eng.holes.advance(inner.eng.comp.psn);
                let after = inner.eng.comp.psn.wrapping_add(kept);
                let done = read_complete(remaining, rsp.opcode)
                    || (kept > 0 && after.is_after(t.last_psn));
                if kept > 0 || !done {
                    inner.eng.comp.read_taken(kept, done);
                }
                if done {
                    complete_front(qp, inner, out, WcStatus::Success);
                } else if inner.eng.holes.must_ask() {
                    ask_hole(dev, ndev, inner, &t);
                } else if rsp.opcode.is_end() && inner.eng.holes.chunk_done(inner.eng.comp.psn) {
                    // The chunk asked for arrived whole: the next one.
                    let chunk = inner
                        .eng
                        .holes
                        .chunk(t.first_psn, inner.eng.comp.psn, t.last_psn);
                    ask_read(dev, ndev, inner, &t, chunk);
                }
                break;
            }
            Verdict::ReadAhead => {
                keep_read(qp, dev, ndev, inner, out, &t, &rsp, pkt.payload);
                break;
            }
            Verdict::AtomicResult => {
                let stored = store(qp, dev, inner, cons, &t, 0, &atomic_orig(&pkt));
                inner.eng.comp.update(rsp.opcode, rsp.psn);
                let status = if stored {
                    WcStatus::Success
                } else {
                    WcStatus::LocProtErr
                };
                complete_front(qp, inner, out, status);
                break;
            }
            Verdict::Ahead => {
                keep_early(qp, dev, inner, &rsp, &pkt);
                if inner.eng.ahead.note() {
                    start_retry(qp, dev, ndev, inner, out, Why::ImplicitNak);
                }
                break;
            }
            Verdict::Retry { nak_psn } => {
                if let Some(p) = nak_psn {
                    dev.data().count(Counter::RcvdSeqErr);
                    if inner.eng.comp.nak_sequence(p) {
                        progress(inner);
                        progressed = true;
                    }
                }
                start_retry(qp, dev, ndev, inner, out, Why::SeqNak);
                break;
            }
            Verdict::Rnr { timer } => {
                dev.data().count(Counter::RcvdRnrErr);
                match rnr_retry(&mut inner.eng.rnr, timer) {
                    Ok(us) => {
                        inner.eng.rnr_wait = true;
                        out.rnr = Some(us);
                    }
                    Err(status) => {
                        dev.data().count(Counter::RetryRnrExceededErr);
                        complete_front(qp, inner, out, status);
                    }
                }
                break;
            }
            Verdict::Fail(status) => {
                complete_front(qp, inner, out, status);
                break;
            }
        }
    }
    while complete_early(qp, inner, out) {
        progressed = true;
    }
    // The retransmission timer runs from the last progress, not from the last response:
    // responses that acknowledge nothing new do not hold it off.
    out.retrans = if !outstanding(inner) || inner.state == b::ib_qp_state_IB_QPS_ERR {
        Some(0)
    } else if progressed {
        inner.params.timeout_us.or(Some(0))
    } else {
        out.retrans
    };
}
