// SPDX-License-Identifier: GPL-2.0

//! The responder: checks each request (the protocol core's PSN, opcode sequence, access,
//! resource and length rules), executes it against local memory, completes receive WQEs,
//! answers with acknowledges, read responses and atomic acknowledges, and replays them for
//! duplicate requests.

use crate::{
    counters::Counter,
    cq::Cqe,
    eng::{Reading, Receiving, ResKind, Resource, Writing},
    ext::{
        net::skb::SkBuff,
        param,
        rdma::types::{NetworkType, WcFlags},
    },
    keys::Keys,
    mem::{self, AtomicOp, Bytes, MemError, MemRef, RemoteSpan},
    pass::Pass,
    proto::{
        aeth::{Aeth, NakCode, Syndrome},
        atomic::AtomicAckEth,
        bth::{Bth, QPN_MASK},
        burst::{self, check_burst, check_burst_write, MAX_BURST},
        flush::SEL_MR,
        grh::{UdGrh, UD_GRH_LEN},
        mtu::Mtu,
        opcode::{HeaderSet, Opcode, Operation},
        packet::Headers,
        psn::Psn,
        responder::{
            abandon_message, check_access, check_atomic_alignment, check_atomic_write,
            check_length, check_op_seq, check_psn, check_resource, check_write_payload,
            duplicate_action, error_action, find_resource, flush_access, next_msn, read_last_psn,
            read_replay, recv_wc_opcode, reply_kind, DuplicateAction, OpSeq, PsnVerdict, ReadReply,
            ReadResource, Replay, Reply, RespError,
        },
        reth::Reth,
        verbs::{Access, WcOpcode, WcStatus},
    },
    qp::{Inner, QpShared, BUDGET},
    recv::{self, RxPacket},
    reqbox, respbox, sgl,
    tx::{self, Sender},
    wqe::read_recv,
};

/// Whether the responder has work: a read reply in progress, an ACK owed, or requests in
/// hand, in its box or queued ([`run`] does nothing otherwise).
pub(crate) fn pending(p: &Pass<'_>) -> bool {
    let resp = &p.inner.eng.resp;
    resp.reading.is_some()
        || resp.owed_ack.is_some()
        || !p.qp.boxes.req.is_empty()
        || p.inner.requests_in_hand()
        || !p.qp.req_q.is_empty()
}

/// Sends read responses and processes requests, up to the budget, then the ACK they owe.
/// Returns true if there is more to do.
pub(crate) fn run(p: &mut Pass<'_>) -> bool {
    let more = requests(p);
    pay_ack(p);
    more
}

/// Sends read responses and processes requests, up to the budget. Returns true if there
/// is more to do.
fn requests(p: &mut Pass<'_>) -> bool {
    // Packets: a loopback burst counts those it stands for.
    let mut spent = 0;
    while spent < BUDGET {
        if let Some(reading) = p.inner.eng.resp.reading.as_ref() {
            // A later ask for the rest of the read being replayed supersedes the replay
            // ([`Replay::superseded_by`]). Served one after another, stale asks kept a
            // responder slower than the requester's timeout replaying for ever (each
            // timeout queued another ask). Asks for other reads wait their turn: a
            // go-back-N requester resends all its reads, and each must be answered.
            if let Some(replay) = reading.replay {
                // The oldest request: the first of those left in the box, else the
                // queue's ([`crate::reqbox`]).
                let (qp, mtu) = (p.qp, p.inner.params.mtu);
                let ask = |hdr: &Headers| supersedes(hdr, &replay, mtu);
                if let Some(k) = reqbox::take(p, ask, take_direct) {
                    spent += k;
                    continue;
                }
                let none_left = !p.inner.requests_in_hand();
                let ask =
                    |skb: &SkBuff| none_left && qp.boxes.req.is_empty() && supersedes_skb(skb, ask);
                if let Some(skb) = qp.req_q.pop_if(ask) {
                    spent += take_request(p, skb);
                    continue;
                }
            }
            if p.inner.tx_throttled() {
                return false;
            }
            spent += send_read_response(p);
            continue;
        }
        // The requests left in the box first, and one from the queue only while the box
        // is empty ([`crate::reqbox`]).
        if let Some(k) = reqbox::take(p, |_| true, take_direct) {
            spent += k;
            continue;
        }
        let qp = p.qp;
        let Some(skb) = qp.req_q.pop_if(|_| qp.boxes.req.is_empty()) else {
            if qp.boxes.req.is_empty() {
                return false;
            }
            // Left in the box meanwhile.
            spent += 1;
            continue;
        };
        spent += take_request(p, skb);
    }
    // Another pass only for work left (not for a budget spent exactly).
    p.inner.eng.resp.reading.is_some()
        || !p.qp.req_q.is_empty()
        || !p.qp.boxes.req.is_empty()
        || p.inner.requests_in_hand()
}

/// Processes one request packet taken from the queue; consumed if executed, else dropped.
/// Returns the packets it stood for (a loopback burst's, else 1). Out of line: inlined,
/// it left the requester's stage out of the pass instead (about 1 % of a small
/// message's instructions, 2026-11-30).
#[inline(never)]
fn take_request(p: &mut Pass<'_>, skb: SkBuff) -> u32 {
    // One the QP no longer takes was admitted while it did ([`crate::admit`]): it goes
    // with the rest of what the QP had queued when it stopped, as its flushed work goes
    // (rxe drains its queues so), counted in rcvd_pkts only.
    if !p.inner.can_receive() {
        skb.consume();
        return 1;
    }
    let (done, packets) = request(p, &skb);
    if done {
        skb.consume();
    }
    packets
}

/// Processes one request its loopback peer left instead of a packet
/// ([`crate::reqbox`]), as that packet once admitted ([`request`]). Returns the
/// packets it stood for (1).
fn take_direct(p: &mut Pass<'_>, pkt: &RxPacket<'_>) -> u32 {
    if !p.inner.can_receive() {
        return 1;
    }
    admitted(p, pkt, &[], None).1
}

/// Whether `hdr` are those of an RDMA READ request that supersedes `replay`
/// ([`Replay::superseded_by`]). Looks at the headers only; `request` checks the rest.
fn supersedes(hdr: &Headers, replay: &Replay, mtu: Mtu) -> bool {
    let psn = hdr.bth.psn;
    match hdr.reth {
        Some(reth) if hdr.bth.opcode == Opcode::RcReadRequest => {
            replay.superseded_by(psn, read_last_psn(psn, reth.dma_len, mtu))
        }
        _ => false,
    }
}

/// Whether `skb` is a request whose headers `ask` says yes to.
fn supersedes_skb(skb: &SkBuff, ask: impl FnOnce(&Headers) -> bool) -> bool {
    let Some(view) = skb.rx_view() else {
        return false;
    };
    // A burst is never a READ request.
    recv::parse(&view, None).is_some_and(|pkt| ask(&pkt.hdr))
}

/// Sends the ACK the requests executed so far owe, if any ([`crate::eng::Resp::owed_ack`]),
/// or leaves it in the box of the loopback peer ([`crate::respbox`]).
fn pay_ack(p: &mut Pass<'_>) {
    if let Some((psn, msn)) = p.inner.eng.resp.owed_ack.take() {
        if respbox::leave_ack(p, psn, msn) {
            return;
        }
        transmit(
            p,
            Opcode::RcAck,
            psn,
            Aeth {
                syndrome: Syndrome::ACK,
                msn,
            },
            None,
        );
    }
}

/// Sends a response with `opcode` and `psn`, an AETH with `syndrome` (the current MSN),
/// and the atomic acknowledge `atomic_ack`; after the ACK owed, which comes first. An
/// atomic acknowledge or an empty READ response leaves it in the box of the loopback peer
/// instead if it can ([`crate::respbox`]).
fn send_response(
    p: &mut Pass<'_>,
    opcode: Opcode,
    psn: Psn,
    syndrome: Syndrome,
    atomic_ack: Option<AtomicAckEth>,
) {
    pay_ack(p);
    let msn = p.inner.eng.resp.msn;
    if syndrome.is_ack() {
        let left = match (opcode, atomic_ack) {
            (Opcode::RcAtomicAck, Some(a)) => respbox::leave_atomic(p, psn, msn, a.orig),
            (Opcode::RcReadResponseOnly, None) => {
                respbox::leave_read(p, psn, msn, 0, |_| Ok::<(), ()>(())) == Ok(true)
            }
            _ => false,
        };
        if left {
            return;
        }
    }
    transmit(p, opcode, psn, Aeth { syndrome, msn }, atomic_ack);
}

/// Sends a response with `opcode`, `psn`, `aeth` and `atomic_ack`.
fn transmit(p: &Pass<'_>, opcode: Opcode, psn: Psn, aeth: Aeth, atomic_ack: Option<AtomicAckEth>) {
    let Some(tx) = p.inner.tx.as_ref() else {
        return;
    };
    let mut hdr = Headers::new(bth(p.inner, opcode, psn));
    hdr.aeth = Some(aeth);
    hdr.atomic_ack = atomic_ack;
    let s = Sender {
        dev: p.dev,
        link: p.link,
        owner: tx,
        path: &p.inner.path,
    };
    let _ = tx::send(s, &hdr, 0, |_| Ok::<(), ()>(()));
}

/// Sends an acknowledge (or NAK) with `syndrome` for `psn`.
fn send_ack(p: &mut Pass<'_>, syndrome: Syndrome, psn: Psn) {
    send_response(p, Opcode::RcAck, psn, syndrome, None);
}

/// Sends an atomic acknowledge with the original value.
fn send_atomic_ack(p: &mut Pass<'_>, psn: Psn, orig: u64) {
    let ack = Some(AtomicAckEth { orig });
    send_response(p, Opcode::RcAtomicAck, psn, Syndrome::ACK, ack);
}

/// Sends an empty read response (the answer to FLUSH and ATOMIC WRITE).
fn send_read_ack(p: &mut Pass<'_>, psn: Psn) {
    send_response(p, Opcode::RcReadResponseOnly, psn, Syndrome::ACK, None);
}

/// A response BTH.
fn bth(inner: &Inner, opcode: Opcode, psn: Psn) -> Bth {
    Bth::new(opcode, inner.params.dest_qpn & QPN_MASK, psn)
}

/// Sends the next packet of the RDMA READ reply in progress, or a loopback burst of them
/// ([`send_read_burst`]). Returns the packets it stood for. If the memory read was
/// invalidated, deregistered or unbound since the request (see [`crate::mem`]), the reply
/// ends with a remote access error NAK in place of the packet, as rxe's per-packet rkey
/// check ends it (rxe NAKs with the request's PSN; the packet's is the one the requester
/// waits for).
fn send_read_response(p: &mut Pass<'_>) -> u32 {
    pay_ack(p);
    let inner = &mut *p.inner;
    let Some(reading) = inner.eng.resp.reading.as_mut() else {
        return 1;
    };
    if reading.replay.is_none()
        && reading.reply.several_left()
        && param::bursts()
        && tx::loops_back(&p.link, &inner.path)
        && inner.tx_light()
    {
        if let Some(k) = send_read_burst(p) {
            return k;
        }
    }
    let inner = &mut *p.inner;
    let Some(reading) = inner.eng.resp.reading.as_mut() else {
        return 1;
    };
    let Some(seg) = reading.reply.next() else {
        inner.eng.resp.reading = None;
        return 1;
    };
    let va = reading.va.wrapping_add(u64::from(seg.offset));
    if seg.opcode == Opcode::RcReadResponseOnly {
        let msn = inner.eng.resp.msn;
        let Some(reading) = p.inner.eng.resp.reading.as_ref() else {
            return 1;
        };
        let len = seg.payload_len as usize;
        match respbox::leave_read(p, seg.psn, msn, len, |buf| read_reply(reading, va, buf)) {
            Ok(false) => {}
            Ok(true) => {
                p.count(Counter::RdmaSends);
                p.inner.eng.resp.reading = None;
                return 1;
            }
            Err(_) => {
                p.inner.eng.resp.reading = None;
                reject(p, RespError::RkeyViolation, seg.psn);
                return 1;
            }
        }
    }
    let inner = &mut *p.inner;
    let mut hdr = Headers::new(bth(inner, seg.opcode, seg.psn));
    if seg.opcode.headers().contains(HeaderSet::AETH) {
        hdr.aeth = Some(Aeth {
            syndrome: Syndrome::ACK,
            msn: inner.eng.resp.msn,
        });
    }
    let (Some(reading), Some(tx)) = (inner.eng.resp.reading.as_ref(), inner.tx.as_ref()) else {
        return 1;
    };
    let s = Sender {
        dev: p.dev,
        link: p.link,
        owner: tx,
        path: &inner.path,
    };
    let res = tx::send(s, &hdr, seg.payload_len as usize, |buf| {
        read_reply(reading, va, buf)
    });
    match res {
        Ok(()) => p.count(Counter::RdmaSends),
        Err(tx::TxError::Fill(_)) => {
            p.inner.eng.resp.reading = None;
            reject(p, RespError::RkeyViolation, seg.psn);
            return 1;
        }
        Err(_) => {}
    }
    if seg.opcode.is_end() {
        p.inner.eng.resp.reading = None;
    }
    1
}

/// Copies the reply's data at `va` into `buf`.
fn read_reply(reading: &Reading, va: u64, buf: &mut [u8]) -> Result<(), MemError> {
    match reading.mem.as_ref() {
        Some(mem) => mem.read(va, buf),
        None if buf.is_empty() => Ok(()),
        None => Err(MemError::Range),
    }
}

/// Sends the next responses of the RDMA READ reply in progress as one loopback burst
/// ([`crate::proto::burst`]; the caller checked that the path loops back, that more than
/// one response is left, that the reply is the first answer to its request (a replay
/// goes response by response), and that few of the QP's skbs are in flight). Returns the
/// responses it stood for, or `None` if the burst could not go (nothing sent: the caller
/// sends one response). Kept out of line: a single response's path stays as short as it
/// was.
#[inline(never)]
fn send_read_burst(p: &mut Pass<'_>) -> Option<u32> {
    let inner = &mut *p.inner;
    // Checked before the reply moves on: past `next_burst`, a burst that does not go
    // restores it.
    inner.tx.as_ref()?;
    let reading = inner.eng.resp.reading.as_mut()?;
    let before = reading.reply.clone();
    let (seg, k) = reading.reply.next_burst(MAX_BURST)?;
    let va = reading.va.wrapping_add(u64::from(seg.offset));
    let mut hdr = Headers::new(bth(inner, seg.opcode, seg.psn));
    if seg.opcode.headers().contains(HeaderSet::AETH) {
        hdr.aeth = Some(Aeth {
            syndrome: Syndrome::ACK,
            msn: inner.eng.resp.msn,
        });
    }
    let (Some(reading), Some(tx)) = (inner.eng.resp.reading.as_mut(), inner.tx.as_ref()) else {
        return None;
    };
    let s = Sender {
        dev: p.dev,
        link: p.link,
        owner: tx,
        path: &inner.path,
    };
    let mtu = inner.params.mtu;
    let fill = |buf: &mut [u8]| read_reply(reading, va, buf);
    match tx::send_copied_burst(s, &hdr, seg.payload_len as usize, k, mtu, fill) {
        Ok(true) => p.dev.data().count_n(Counter::RdmaSends, k),
        Ok(false) => {
            reading.reply = before;
            return None;
        }
        Err(tx::TxError::Fill(_)) => {
            p.inner.eng.resp.reading = None;
            reject(p, RespError::RkeyViolation, seg.psn);
            return Some(k);
        }
        // Lost, as a single response whose skb cannot be had; asked for again.
        Err(tx::TxError::Net) => {}
    }
    if seg.opcode.is_end() {
        p.inner.eng.resp.reading = None;
    }
    Some(k)
}

/// Takes a receive WQE for a new message, if none is held.
fn take_recv(qp: &QpShared, inner: &mut Inner) -> Result<bool, RespError> {
    if inner.eng.resp.recv.is_some() {
        return Ok(true);
    }
    let wqe = &mut inner.eng.resp.wqe;
    let (from_srq, read) = if let Some(srq) = qp.srq.as_ref() {
        match srq.take(wqe) {
            None => return Ok(false),
            Some(read) => (true, read),
        }
    } else {
        let Some(rq) = inner.rq.as_ref() else {
            return Ok(false);
        };
        if rq.count() == 0 {
            return Ok(false);
        }
        (false, read_recv(rq, rq.consumer(), wqe))
    };
    // Held even if malformed (an SRQ's is consumed already): the malformed WQE error
    // completes it, with the wr_id it was read with, as LOC_QP_OP_ERR.
    inner.eng.resp.recv = Some(Receiving {
        from_srq,
        offset: 0,
    });
    read.map_err(|_| RespError::MalformedWqe)?;
    Ok(true)
}

/// Completes the held receive WQE with `wc` (its `wr_id` filled in here).
fn complete_recv(p: &mut Pass<'_>, wc: &Cqe, solicited: bool) {
    let Some(r) = p.inner.eng.resp.recv.take() else {
        return;
    };
    // Release the slot first: the consumer may post again as soon as it polls.
    if !r.from_srq {
        if let Some(rq) = p.inner.rq.as_mut() {
            rq.advance();
        }
    }
    let wc = Cqe {
        wr_id: p.inner.eng.resp.wqe.wr_id,
        ..*wc
    };
    match crate::cq::post(&p.qp.recv_cq, &wc, solicited) {
        Ok(notify) => p.out.recv_cq |= notify,
        Err(_) => {
            // The CQ overran: its consumer is told, and the QP cannot go on.
            p.qp.recv_cq.error_event();
            p.set_error();
        }
    }
}

/// Completes the held receive WQE in error with `status`.
fn fail_recv(p: &mut Pass<'_>, status: WcStatus) {
    let wc = Cqe::new(p.qp, 0, status, WcOpcode::Recv as u32);
    complete_recv(p, &wc, false);
}

/// Applies the consequences of a rejected request.
fn reject(p: &mut Pass<'_>, err: RespError, psn: Psn) {
    let qp = p.qp;
    let a = error_action(
        qp.qp_type,
        qp.srq.is_some(),
        err,
        p.inner.params.min_rnr_timer,
    );
    if let Some(syn) = a.nak {
        if matches!(syn, Syndrome::RnrNak { .. }) {
            p.count(Counter::SendRnrErr);
        }
        send_ack(p, syn, psn);
    } else {
        p.count(Counter::RcvdReqDropped);
    }
    if let Some(status) = a.complete {
        fail_recv(p, status);
    }
    let resp = &mut p.inner.eng.resp;
    if a.reuse_wqe {
        // Not consumed from the RQ: the next message uses it again.
        resp.recv = None;
    }
    if a.drop_msg {
        resp.seq.drop_msg = true;
        resp.write = None;
        resp.prev = None;
    }
    if a.qp_error {
        p.set_error();
    }
}

/// Stores a read/atomic resource, replacing the oldest.
fn save_resource(inner: &mut Inner, kind: ResKind, first_psn: Psn, last_psn: Psn) {
    let resp = &mut inner.eng.resp;
    let n = resp.res.len();
    if n == 0 {
        return;
    }
    let i = resp.res_next % n;
    if let Some(slot) = resp.res.get_mut(i) {
        *slot = Some(Resource {
            kind,
            first_psn,
            last_psn,
        });
    }
    resp.res_next = (i + 1) % n;
}

/// The memory a request names with `rkey` for `len` bytes at `va` with rights `access`
/// (none for an empty RDMA READ or WRITE, whose key is not checked: C9-88).
fn remote_mem(
    p: &Pass<'_>,
    rkey: u32,
    va: u64,
    len: u32,
    access: Access,
) -> Result<Option<MemRef>, MemError> {
    if len == 0 {
        return Ok(None);
    }
    mem::resolve(
        Keys::new(p.dev.data(), p.qp.owner(), &p.inner.mrs),
        rkey,
        va,
        u64::from(len),
        access,
    )
    .map(Some)
}

/// Handles a duplicate RC request.
fn duplicate(p: &mut Pass<'_>, pkt: &RxPacket<'_>) {
    p.count(Counter::DuplicateRequest);
    let psn = pkt.psn();
    let resp = &p.inner.eng.resp;
    let found = find_resource(
        resp.res
            .iter()
            .map(|r| r.map(|r| (r.first_psn, r.last_psn))),
        psn,
    )
    .and_then(|i| resp.res.get(i).copied().flatten());
    match duplicate_action(pkt.opcode(), resp.psn) {
        DuplicateAction::Reack(at) => send_ack(p, Syndrome::ACK, at),
        DuplicateAction::ReplayRead => {
            let (Some(res), Some(reth)) = (found, pkt.hdr.reth) else {
                return;
            };
            let ResKind::Read { va, len, rkey } = res.kind else {
                return;
            };
            let saved = ReadResource {
                first_psn: res.first_psn,
                va,
                len,
                rkey,
            };
            let Some(rp) = read_replay(&saved, psn, &reth) else {
                return;
            };
            let Ok(mem) = remote_mem(p, reth.rkey, rp.va, rp.len, Access::REMOTE_READ) else {
                return;
            };
            p.inner.eng.resp.reading = Some(Reading {
                reply: ReadReply::new(rp.psn, rp.len, p.inner.params.mtu, rp.from_first),
                mem,
                va: rp.va,
                replay: Some(Replay {
                    first: rp.psn,
                    last: read_last_psn(rp.psn, rp.len, p.inner.params.mtu),
                    saved_last: res.last_psn,
                }),
            });
        }
        DuplicateAction::ReplayReply => match found.map(|r| r.kind) {
            Some(ResKind::Atomic { orig }) => send_atomic_ack(p, psn, orig),
            Some(ResKind::Ack) => send_read_ack(p, psn),
            _ => {}
        },
    }
}

/// The UD receive buffer length (for the length check).
fn recv_len(inner: &Inner) -> u64 {
    let resp = &inner.eng.resp;
    resp.recv.as_ref().map_or(0, |_| resp.wqe.sges.len())
}

/// Checks a request's PSN; handles a duplicate or out-of-sequence one. Returns whether it
/// is processed.
fn in_sequence(p: &mut Pass<'_>, pkt: &RxPacket<'_>) -> bool {
    let resp = &mut p.inner.eng.resp;
    match check_psn(
        p.qp.qp_type,
        pkt.opcode(),
        pkt.psn(),
        resp.psn,
        &mut resp.seq,
    ) {
        PsnVerdict::Process => return true,
        PsnVerdict::Duplicate => duplicate(p, pkt),
        PsnVerdict::NakSequence => {
            p.count(Counter::OutOfSeqRequest);
            let expected = p.inner.eng.resp.psn;
            send_ack(p, Syndrome::Nak(NakCode::PsnSequenceError), expected);
        }
        PsnVerdict::Drop => p.count(Counter::OutOfSeqRequest),
    }
    false
}

/// The checks of a request in sequence before it executes: opcode sequence, access, a
/// receive WQE, resources and lengths (a loopback burst's, cut by its sender's path MTU
/// `burst`, for each of its packets). Returns the packets it stands for.
fn check(p: &mut Pass<'_>, pkt: &RxPacket<'_>, burst: Option<Mtu>) -> Result<u32, RespError> {
    let qp = p.qp;
    let op = pkt.opcode();
    match check_op_seq(qp.qp_type, p.inner.eng.resp.prev, op) {
        OpSeq::Valid => {}
        OpSeq::Invalid(e) => return Err(e),
        OpSeq::AbandonAndStart => {
            if let Some(status) = abandon_message(qp.srq.is_some()).complete {
                fail_recv(p, status);
            }
            p.inner.eng.resp.recv = None;
            p.inner.eng.resp.write = None;
        }
    }
    let params = p.inner.params;
    check_access(qp.qp_type, op, params.access, pkt.hdr.feth)?;
    let have_recv = !op.consumes_recv_wqe() || take_recv(qp, p.inner)?;
    let datagram = qp.qp_type.is_datagram();
    check_resource(
        op,
        params.max_dest_rd_atomic.max(u32::from(datagram)),
        have_recv,
    )?;
    let payload_len = pkt.payload.len() as u32;
    if let Some(sender_mtu) = burst {
        return check_burst(
            qp.qp_type,
            op,
            payload_len,
            pkt.hdr.reth,
            sender_mtu,
            params.mtu,
        );
    }
    check_length(
        qp.qp_type,
        op,
        payload_len,
        params.mtu,
        pkt.hdr.reth,
        recv_len(p.inner),
    )?;
    Ok(1)
}

/// Processes one request packet, or a loopback burst of them ([`crate::proto::burst`]: as
/// its packets would be, one after the other). Returns whether it was executed (one
/// refused, out of sequence or a duplicate is dropped) and the packets it stood for.
fn request(p: &mut Pass<'_>, skb: &SkBuff) -> (bool, u32) {
    let Some(view) = skb.rx_view() else {
        return (false, 1);
    };
    let burst = recv::burst_of(skb);
    let Some(pkt) = recv::parse(&view, burst) else {
        return (false, 1);
    };
    admitted(p, &pkt, view.ip, burst)
}

/// Processes request `pkt` (its IP header `ip`; a loopback burst cut by `burst` if it is
/// one) once admitted; as [`request`].
fn admitted(p: &mut Pass<'_>, pkt: &RxPacket<'_>, ip: &[u8], burst: Option<Mtu>) -> (bool, u32) {
    if !in_sequence(p, pkt) {
        return (false, 1);
    }
    let op = pkt.opcode();
    let psn = pkt.psn();
    let k = match check(p, pkt, burst) {
        Ok(k) => k,
        Err(e) => {
            reject(p, e, psn);
            return (false, 1);
        }
    };
    if let Err(e) = execute(p, pkt, ip, k) {
        reject(p, e, psn);
        return (false, 1);
    }
    // The burst's last packet (the packet's own PSN if not a burst), which its
    // acknowledge names.
    let last = burst::last_psn(psn, k);
    if p.in_error() {
        return (true, k);
    }
    let reply = reply_kind(p.qp.qp_type, op, pkt.hdr.bth.ack_req);
    if matches!(reply, Reply::Ack | Reply::CoalescedAck) {
        // Sent at once, or when the stage ends or another response goes first.
        let resp = &mut p.inner.eng.resp;
        if resp.owed_ack.replace((last, resp.msn)).is_some() {
            p.count(Counter::AckCoalesced);
        }
        if reply == Reply::Ack {
            pay_ack(p);
        }
    }
    if !matches!(op.operation(), Operation::ReadRequest) {
        p.inner.eng.resp.psn = last.next();
        p.inner.eng.resp.prev = Some(op);
    }
    (true, k)
}

/// Executes a request that passed the checks (a burst of `k` packets, else 1).
fn execute(p: &mut Pass<'_>, pkt: &RxPacket<'_>, ip: &[u8], k: u32) -> Result<(), RespError> {
    match pkt.opcode().operation() {
        Operation::Send => execute_send(p, pkt, ip),
        Operation::Write => execute_write(p, pkt, k),
        Operation::ReadRequest => execute_read(p, pkt),
        Operation::CompareSwap | Operation::FetchAdd => execute_atomic(p, pkt),
        Operation::AtomicWrite => execute_atomic_write(p, pkt),
        Operation::Flush => execute_flush(p, pkt),
        Operation::ReadResponse | Operation::Ack | Operation::AtomicAck => Ok(()),
    }
}

/// A SEND: its payload goes to the receive WQE held (after the network header for a
/// datagram).
fn execute_send(p: &mut Pass<'_>, pkt: &RxPacket<'_>, ip: &[u8]) -> Result<(), RespError> {
    let qp = p.qp;
    let keys = Keys::new(p.dev.data(), qp.owner(), &p.inner.mrs);
    let mut wc = Cqe {
        opcode: recv_wc_opcode(pkt.opcode()) as u32,
        ..Cqe::of(qp)
    };
    let resp = &mut p.inner.eng.resp;
    let Some(r) = resp.recv.as_mut() else {
        return Err(RespError::Rnr);
    };
    let sges = resp.wqe.sges.sges();
    if qp.qp_type.is_datagram() {
        // The network header goes first.
        let grh = UdGrh::new(ip).ok_or(RespError::Length)?;
        // It fits: `check_length` saw the payload and the header fit the buffer.
        sgl::write(keys, sges, 0, Bytes::Slice(&grh.area)).map_err(|_| RespError::MalformedWqe)?;
        r.offset = UD_GRH_LEN;
        wc.wc_flags |= WcFlags::GRH.bits();
        wc.network_hdr_type = if grh.ipv4 {
            NetworkType::Ipv4
        } else {
            NetworkType::Ipv6
        }
        .raw() as u8;
        wc.sl = grh.roce_pkt_type();
        wc.src_qp = pkt.hdr.deth.map_or(0, |x| x.src_qpn);
    }
    // A message longer than the device's largest (`max_msg_sz`) is a length error, as one
    // that overflows the receive buffer is (its completion's byte count, 32 bits, could
    // not say how much arrived): found before a byte of the packet is written. Within the
    // buffer, a write fails for the WQE's own fault (an SGE beyond its MR, a bad lkey):
    // a malformed WQE.
    let end = r.offset + pkt.payload.len() as u64;
    if end > u64::from(crate::params::MAX_MSG_SZ) || end > resp.wqe.sges.len() {
        return Err(RespError::Length);
    }
    sgl::write(keys, sges, r.offset, pkt.payload).map_err(|_| RespError::MalformedWqe)?;
    r.offset = end;
    wc.byte_len = end as u32;
    finish_message(p, pkt, wc)
}

/// An RDMA WRITE packet (or a burst of `k`): its first resolves the memory, each writes
/// its payload.
fn execute_write(p: &mut Pass<'_>, pkt: &RxPacket<'_>, k: u32) -> Result<(), RespError> {
    if let Some(reth) = pkt.hdr.reth {
        if pkt.opcode().is_end() && k == 1 && reth.dma_len > 0 {
            return execute_write_only(p, pkt, reth);
        }
        let mem = remote_mem(p, reth.rkey, reth.va, reth.dma_len, Access::REMOTE_WRITE)
            .map_err(|_| RespError::RkeyViolation)?;
        p.inner.eng.resp.write = Some(Writing {
            mem,
            va: reth.va,
            resid: reth.dma_len,
            total: reth.dma_len,
        });
    }
    let mtu = p.inner.params.mtu;
    let Some(w) = p.inner.eng.resp.write.as_mut() else {
        return Err(RespError::MissingFirst);
    };
    let len = pkt.payload.len() as u32;
    if k > 1 {
        check_burst_write(w.resid, len, pkt.hdr.bth.pad, k, mtu)?;
    } else {
        check_write_payload(w.resid, len, pkt.hdr.bth.pad, mtu)?;
    }
    if !pkt.payload.is_empty() {
        let mem = w.mem.as_ref().ok_or(RespError::Length)?;
        mem.write(w.va, pkt.payload)
            .map_err(|_| RespError::RkeyViolation)?;
    }
    w.va = w.va.wrapping_add(pkt.payload.len() as u64);
    w.resid = w.resid.saturating_sub(pkt.payload.len() as u32);
    let wc = Cqe {
        opcode: recv_wc_opcode(pkt.opcode()) as u32,
        byte_len: w.total,
        ..Cqe::of(p.qp)
    };
    if pkt.opcode().is_end() {
        p.inner.eng.resp.write = None;
        p.count(Counter::RdmaRecvs);
    }
    finish_message(p, pkt, wc)
}

/// An RDMA WRITE of one packet (not empty): as [`execute_write`] would execute it (the key,
/// then the lengths, then the copy), its memory accessed once ([`mem::remote_once`]).
fn execute_write_only(p: &mut Pass<'_>, pkt: &RxPacket<'_>, reth: Reth) -> Result<(), RespError> {
    let (keys, mtu) = (
        Keys::new(p.dev.data(), p.qp.owner(), &p.inner.mrs),
        p.inner.params.mtu,
    );
    let len = pkt.payload.len() as u32;
    let va = reth.va;
    let access = Access::REMOTE_WRITE;
    let copy = |m: &RemoteSpan<'_>| {
        if let Err(e) = check_write_payload(reth.dma_len, len, pkt.hdr.bth.pad, mtu) {
            return Ok(Err(e));
        }
        m.write(pkt.payload).map(Ok)
    };
    mem::remote_once(keys, reth.rkey, va, u64::from(reth.dma_len), access, copy)
        .map_err(|_| RespError::RkeyViolation)??;
    let wc = Cqe {
        opcode: recv_wc_opcode(pkt.opcode()) as u32,
        byte_len: reth.dma_len,
        ..Cqe::of(p.qp)
    };
    p.inner.eng.resp.write = None;
    p.count(Counter::RdmaRecvs);
    finish_message(p, pkt, wc)
}

/// An RDMA READ request: saved as a resource, answered by the read responses that
/// [`send_read_response`] sends.
fn execute_read(p: &mut Pass<'_>, pkt: &RxPacket<'_>) -> Result<(), RespError> {
    let reth = pkt.hdr.reth.ok_or(RespError::Length)?;
    let mem = remote_mem(p, reth.rkey, reth.va, reth.dma_len, Access::REMOTE_READ)
        .map_err(|_| RespError::RkeyViolation)?;
    let psn = pkt.psn();
    let mtu = p.inner.params.mtu;
    let last = read_last_psn(psn, reth.dma_len, mtu);
    let kind = ResKind::Read {
        va: reth.va,
        len: reth.dma_len,
        rkey: reth.rkey,
    };
    save_resource(p.inner, kind, psn, last);
    let resp = &mut p.inner.eng.resp;
    resp.msn = next_msn(resp.msn);
    resp.reading = Some(Reading {
        reply: ReadReply::new(psn, reth.dma_len, mtu, true),
        mem,
        va: reth.va,
        replay: None,
    });
    resp.psn = last.next();
    resp.prev = None;
    p.count(Counter::RdmaRecvs);
    Ok(())
}

/// Saves a one-packet request's resource and counts its message (atomics, FLUSH).
fn one_packet_done(p: &mut Pass<'_>, kind: ResKind, psn: Psn) {
    save_resource(p.inner, kind, psn, psn);
    let resp = &mut p.inner.eng.resp;
    resp.msn = next_msn(resp.msn);
}

/// A compare-and-swap or fetch-and-add: executed, saved, answered with the original value.
fn execute_atomic(p: &mut Pass<'_>, pkt: &RxPacket<'_>) -> Result<(), RespError> {
    let a = pkt.hdr.atomic_eth.ok_or(RespError::Length)?;
    check_atomic_alignment(a.va)?;
    let aop = if pkt.opcode().operation() == Operation::CompareSwap {
        AtomicOp::CmpSwap {
            compare: a.compare,
            swap: a.swap_add,
        }
    } else {
        AtomicOp::FetchAdd(a.swap_add)
    };
    let access = Access::REMOTE_ATOMIC;
    let orig = mem::remote_once(
        Keys::new(p.dev.data(), p.qp.owner(), &p.inner.mrs),
        a.rkey,
        a.va,
        8,
        access,
        |m| m.atomic(aop),
    )
    .map_err(|e| match e {
        MemError::Align => RespError::MisalignedAtomic,
        _ => RespError::RkeyViolation,
    })?;
    let psn = pkt.psn();
    one_packet_done(p, ResKind::Atomic { orig }, psn);
    send_atomic_ack(p, psn, orig);
    Ok(())
}

/// An ATOMIC WRITE: the 8 bytes written at once, answered with an empty read response.
fn execute_atomic_write(p: &mut Pass<'_>, pkt: &RxPacket<'_>) -> Result<(), RespError> {
    let reth = pkt.hdr.reth.ok_or(RespError::Length)?;
    check_atomic_write(reth.dma_len, pkt.payload.len() as u32, pkt.hdr.bth.pad)?;
    check_atomic_alignment(reth.va)?;
    let mut v = [0u8; 8];
    let value = pkt.payload.get(0..8).ok_or(RespError::Length)?;
    value.read(&mut v).map_err(|_| RespError::Length)?;
    let op = AtomicOp::Write(u64::from_ne_bytes(v));
    mem::remote_once(
        Keys::new(p.dev.data(), p.qp.owner(), &p.inner.mrs),
        reth.rkey,
        reth.va,
        8,
        Access::REMOTE_WRITE,
        |m| m.atomic(op),
    )
    .map_err(|_| RespError::RkeyViolation)?;
    let psn = pkt.psn();
    one_packet_done(p, ResKind::Ack, psn);
    send_read_ack(p, psn);
    Ok(())
}

/// A FLUSH: its key and rights checked (memory is coherent here: nothing to write back),
/// answered with an empty read response.
fn execute_flush(p: &mut Pass<'_>, pkt: &RxPacket<'_>) -> Result<(), RespError> {
    let reth = pkt.hdr.reth.ok_or(RespError::Length)?;
    // The key is checked even for 0 bytes (C9-88 spares READ and WRITE only), the range
    // unless the FLUSH is of the whole MR (as rxe's `check_rkey`).
    let whole_mr = pkt.hdr.feth.is_some_and(|f| f.selectivity == SEL_MR);
    let access = flush_access(pkt.hdr.feth);
    let len = u64::from(reth.dma_len);
    match mem::resolve(
        Keys::new(p.dev.data(), p.qp.owner(), &p.inner.mrs),
        reth.rkey,
        reth.va,
        len,
        access,
    ) {
        Ok(_) => {}
        Err(MemError::Range) if whole_mr => {}
        Err(_) => return Err(RespError::RkeyViolation),
    }
    let psn = pkt.psn();
    one_packet_done(p, ResKind::Ack, psn);
    send_read_ack(p, psn);
    Ok(())
}

/// The end of a SEND or RDMA WRITE packet's processing: immediate data, invalidation, the
/// MSN at a message's end, and the receive completion.
fn finish_message(p: &mut Pass<'_>, pkt: &RxPacket<'_>, mut wc: Cqe) -> Result<(), RespError> {
    let op = pkt.opcode();
    if op.has_immediate() {
        if let Some(imm) = pkt.hdr.immdt {
            wc.ex = imm.imm.to_be();
            wc.wc_flags |= WcFlags::WITH_IMM.bits();
        }
    }
    if op.has_invalidate() {
        if let Some(ieth) = pkt.hdr.ieth {
            mem::invalidate(p.dev.data(), ieth.rkey, p.qp.owner())
                .map_err(|_| RespError::InvalidateRkey)?;
            wc.ex = ieth.rkey;
            wc.wc_flags |= WcFlags::WITH_INVALIDATE.bits();
        }
    }
    if op.is_end() && !p.qp.qp_type.is_datagram() {
        let resp = &mut p.inner.eng.resp;
        resp.msn = next_msn(resp.msn);
    }
    if op.completes_recv_wqe() {
        complete_recv(p, &wc, pkt.hdr.bth.solicited);
    }
    Ok(())
}
