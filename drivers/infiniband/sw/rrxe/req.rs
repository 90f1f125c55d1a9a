// SPDX-License-Identifier: GPL-2.0

//! The requester: takes send WQEs in order, executes local operations, cuts messages into
//! packets (the protocol core's segmenter) and sends them, within the RC window and the
//! read/atomic limit.

use crate::{
    counters::Counter,
    device::RrxeDev,
    eng::{Cur, Track},
    ext::{param, rdma::device::Device},
    keys::Keys,
    mem::{self, MemError, PagePiece},
    mr, mw,
    pass::Pass,
    proto::{
        atomic::AtomicEth,
        bth::{Bth, QPN_MASK},
        burst::Burst,
        deth::Deth,
        flush::Feth,
        ieth::Ieth,
        immdt::ImmDt,
        mtu::Mtu,
        opcode::{HeaderSet, Opcode, Operation},
        packet::Headers,
        readholes::Hole,
        requester::{
            gate, psn_window_open, solicited, window_room, AckReqPolicy, Gate, GateInput, ReqError,
            Segmenter,
        },
        reth::Reth,
        verbs::{QpType, WcStatus, WrOpcode},
    },
    qp::{Inner, QpShared, BUDGET},
    queue::FromClient,
    reqbox, sgl,
    tx::{self, Sender, TxError},
    wqe::{self, SendWqe, Shape, SEND_SIGNALED},
};

/// Carries out the retry the completer (or the RNR timer) decided: restarts sending at the
/// oldest WQE not completed (WQEs already started resume at the PSN the completer
/// expects), and asks again for what an RDMA READ misses.
fn carry_out_retry(p: &mut Pass<'_>) {
    let plan = core::mem::take(&mut p.inner.eng.retry_plan);
    if !p.inner.can_send() {
        return;
    }
    if plan.rewind {
        p.inner.eng.req_index = p.inner.sq.consumer();
        p.inner.eng.cur = None;
    }
    let Some(first_psn) = plan.read else {
        return;
    };
    // Only for the read it was decided for, if that is still the oldest WQE.
    let cons = p.inner.sq.consumer();
    if cons == p.inner.eng.hw_index {
        return;
    }
    let t = *p.inner.eng.track(cons);
    if t.first_psn != first_psn || !matches!(t.op, WrOpcode::RdmaRead | WrOpcode::RdmaReadInv) {
        return;
    }
    // In the order the completer decides them: a chunk whose predecessor arrived whole,
    // then a range missing below responses that came after.
    if plan.chunk {
        let e = &mut p.inner.eng;
        let chunk = e.holes.chunk(t.first_psn, e.comp.psn, t.last_psn);
        ask_read(p, &t, chunk);
    }
    if plan.hole {
        if let Some(hole) = p.inner.eng.holes.ask(t.first_psn, t.last_psn) {
            ask_read(p, &t, hole);
        }
    }
}

/// Asks again for a missing range of responses of the RDMA READ tracked as `t` (the
/// oldest WQE): a read request with the range's first PSN and its part of the remote
/// buffer, as the first send took them from the WQE (never read again). The responder
/// answers it as a duplicate; the requester's place in the send queue does not change.
fn ask_read(p: &Pass<'_>, t: &Track, hole: Hole) {
    let Some(tx) = p.inner.tx.as_ref() else {
        return;
    };
    let total = t.shape.len;
    let mtu = p.inner.params.mtu.bytes();
    let off = hole
        .psn
        .distance_from(t.first_psn)
        .saturating_mul(mtu)
        .min(total);
    let len = hole.count.saturating_mul(mtu).min(total - off);
    let mut bth = Bth::new(
        Opcode::RcReadRequest,
        p.inner.params.dest_qpn & QPN_MASK,
        hole.psn,
    );
    bth.ack_req = true;
    let mut hdr = Headers::new(bth);
    hdr.reth = Some(Reth {
        va: t.shape.remote_addr.wrapping_add(u64::from(off)),
        rkey: t.shape.remote_rkey,
        dma_len: len,
    });
    // A request lost here is asked for again at a later timeout (`ask_on_timeout`).
    let s = Sender {
        dev: p.dev,
        link: p.link,
        owner: tx,
        path: &p.inner.path,
    };
    match tx::send(s, &hdr, 0, |_| Ok::<(), MemError>(())) {
        Ok(()) => p.count(Counter::RdmaSends),
        Err(_) => p.count(Counter::SendErr),
    }
}

/// Whether the requester has work: a retry to carry out, a WQE being sent, or one posted
/// and not started ([`run`] does nothing otherwise). The producer index is the client's
/// word: a wrong one only makes this pass run the requester or not.
pub(crate) fn pending(p: &Pass<'_>) -> bool {
    let eng = &p.inner.eng;
    !eng.retry_plan.is_empty() || eng.cur.is_some() || eng.req_index != p.inner.sq.producer()
}

/// Sends what the send queue holds, up to the budget. Returns true if there is more.
pub(crate) fn run(p: &mut Pass<'_>) -> bool {
    carry_out_retry(p);
    let mut sent = 0;
    while p.inner.can_send() && !p.inner.eng.rnr_wait {
        if sent >= BUDGET {
            // Another pass only for work left: a message of exactly the budget's packets
            // would otherwise ask for a pass that finds nothing.
            return p.inner.eng.cur.is_some() || p.inner.eng.req_index != p.inner.sq.producer();
        }
        if p.inner.eng.cur.is_none() {
            if !start_next(p) {
                return false;
            }
            continue;
        }
        if p.qp.qp_type == QpType::Rc {
            let next = p.inner.eng.cur.as_ref().map(|c| c.next_psn);
            if let Some(next) = next {
                if !psn_window_open(next, p.inner.eng.comp.psn) {
                    return false;
                }
            }
        }
        if p.inner.tx_throttled() {
            return false;
        }
        let eng = &mut p.inner.eng;
        let Some(cur) = eng.cur.as_mut() else {
            continue;
        };
        let next = if cur.bursts {
            // As many packets as the window of unacknowledged PSNs takes; one alone while
            // it has room for less than a burst may carry (a burst refused ends the WQE's
            // bursts, a single packet does not).
            let room = window_room(cur.next_psn, eng.comp.psn);
            let max_k = if room.saturating_mul(cur.seg.mtu()) < tx::BURST_MIN {
                1
            } else {
                room
            };
            cur.seg.next_burst(max_k)
        } else {
            cur.seg.next().map(|seg| Burst { seg, k: 1 })
        };
        let Some(b) = next else {
            finish_cur(p.inner);
            continue;
        };
        let seg = b.seg;
        cur.next_psn = b.last_psn().next();
        // An RDMA READ request is answered with PSNs up to the read's last.
        let end = if seg.opcode.operation() == Operation::ReadRequest {
            cur.seg.last_psn().next()
        } else {
            b.last_psn().next()
        };
        let last = seg.opcode.is_end();
        match send_segment(p, &b) {
            Ok(true) => p.inner.eng.note_sent(end),
            Ok(false) => {
                // The burst could not go: its packets go one by one, and the rest of the
                // WQE's too.
                if let Some(cur) = p.inner.eng.cur.as_mut() {
                    cur.bursts = false;
                    cur.next_psn = seg.psn;
                    if cur.seg.resume_at(seg.psn).is_err() {
                        fail_cur(p.inner, WcStatus::LocQpOpErr);
                        return false;
                    }
                }
                continue;
            }
            Err(status) => {
                fail_cur(p.inner, status);
                return false;
            }
        }
        sent += b.k;
        // The retransmission timer runs while packets are unacknowledged: each packet sent
        // pushes it out (an RNR NAK or the error state taken earlier in this pass asked to
        // stop it; a completer that found nothing outstanding left it to expire).
        if p.qp.qp_type == QpType::Rc && matches!(p.out.retrans, None | Some(0)) {
            p.out.retrans = p.inner.params.timeout_us;
        }
        if last {
            finish_cur(p.inner);
        }
    }
    false
}

/// The WQE being sent was sent entirely.
fn finish_cur(inner: &mut Inner) {
    if let Some(cur) = inner.eng.cur.take() {
        if let Some(t) = inner.eng.track_mut(cur.index) {
            t.all_sent = true;
        }
        inner.eng.req_index = inner.sq.next_index(cur.index);
    }
}

/// The WQE being sent failed locally: it completes in error (at the end of the pass, or
/// in its turn after the WQEs before it), and the QP goes to error then. The requester
/// stops for this pass and goes on after the next completion.
fn fail_cur(inner: &mut Inner, status: WcStatus) {
    if let Some(cur) = inner.eng.cur.take() {
        if let Some(t) = inner.eng.track_mut(cur.index) {
            t.all_sent = true;
            t.no_ack = true;
            t.status = status;
        }
        inner.eng.req_index = inner.sq.next_index(cur.index);
    }
    inner.eng.wait_completion = true;
}

/// Whether `index` lies before the requester's high-water mark (was started before).
fn restarted(inner: &Inner, index: u32) -> bool {
    let cons = inner.sq.consumer();
    inner.sq.distance(cons, index) < inner.sq.distance(cons, inner.eng.hw_index)
}

/// Records a WQE that completes without being sent.
fn record_done(
    inner: &mut Inner,
    index: u32,
    wqe_id: u64,
    op: WrOpcode,
    flags: u32,
    status: WcStatus,
) {
    let t = Track {
        wr_id: wqe_id,
        op,
        signaled: flags & SEND_SIGNALED != 0,
        first_psn: inner.eng.psn,
        last_psn: inner.eng.psn,
        all_sent: true,
        no_ack: true,
        holds_rd_atomic: false,
        status,
        early: None,
        shape: Shape::EMPTY,
    };
    inner.eng.set_track(index, t);
    inner.eng.req_index = inner.sq.next_index(index);
    if !restarted(inner, index) {
        inner.eng.hw_index = inner.eng.req_index;
    }
}

/// A WQE reached again (after a rewind) that must not be sent again: it keeps the PSNs of
/// its first send and completes, in its turn, with `status` (none if it was decided
/// already). The requester goes on after it, unless it fails: then it stops for this pass
/// (the failed WQE completes at its end if it is the oldest, and the QP goes to error) and
/// goes on after the next completion. Returns whether the requester goes on in this pass.
///
/// Its completion, like every completion of a WQE that needs no acknowledge, comes at the
/// end of the pass: a fenced WQE after it waits for that, one pass later.
fn skip_again(inner: &mut Inner, index: u32, status: Option<WcStatus>) -> bool {
    let mut t = *inner.eng.track(index);
    if let Some(status) = status {
        t.all_sent = true;
        t.no_ack = true;
        t.status = status;
        inner.eng.set_track(index, t);
    }
    inner.eng.req_index = inner.sq.next_index(index);
    if t.status != WcStatus::Success {
        inner.eng.wait_completion = true;
        return false;
    }
    true
}

/// Local operations (IBA 10.6): memory registration, invalidation, window binding.
fn local_op(qp: &QpShared, dev: &Device<RrxeDev>, wqe: &SendWqe) -> Result<(), MemError> {
    let d = dev.data();
    match wqe.op {
        WrOpcode::LocalInv => mem::invalidate(d, wqe.ex, qp.owner()),
        WrOpcode::RegMr => {
            let bd = &wqe.bind;
            mr::fast_reg(d, qp.pd, bd.mr_lkey, bd.rkey, bd.access, bd.addr)
        }
        WrOpcode::BindMw => mw::bind(d, qp.owner(), &wqe.bind),
        _ => Err(MemError::State),
    }
}

/// The completion status of a failed local operation.
fn local_status(op: WrOpcode, _e: MemError) -> WcStatus {
    match op {
        WrOpcode::BindMw => WcStatus::MwBindErr,
        WrOpcode::LocalInv | WrOpcode::RegMr => WcStatus::LocQpOpErr,
        _ => WcStatus::LocProtErr,
    }
}

/// Starts the next WQE, if one is posted and may start. Returns false when nothing can
/// start now.
fn start_next(p: &mut Pass<'_>) -> bool {
    let (qp, dev, ndev) = (p.qp, p.dev, p.link.ndev());
    let inner = &mut *p.inner;
    let index = inner.eng.req_index;
    if index == inner.sq.producer() {
        return false;
    }
    let cons = inner.sq.consumer();
    let in_flight = inner.sq.distance(cons, index);
    if in_flight + 1 >= inner.eng.tracked() {
        inner.eng.wait_completion = true;
        return false;
    }
    let again = restarted(inner, index);
    let old = *inner.eng.track(index);
    // A WQE decided at its first turn (a local operation executed, or a failure found
    // locally) is not executed again.
    if again && old.all_sent && old.no_ack {
        return skip_again(inner, index, None);
    }
    let shape = match wqe::read_send(&inner.sq, index, qp.kernel, &mut inner.eng.wqe) {
        Ok(()) => Shape::of(&inner.eng.wqe),
        Err(e) if again => {
            return skip_again(inner, index, Some(e.wc_status()));
        }
        Err(e) => {
            let wr_id = wqe::send_wr_id(&inner.sq, index);
            record_done(
                inner,
                index,
                wr_id,
                WrOpcode::Send,
                SEND_SIGNALED,
                e.wc_status(),
            );
            // It completes in error at the end of the pass (the QP goes to error then).
            inner.eng.wait_completion = true;
            return false;
        }
    };
    if again && shape != old.shape {
        // Rewritten since its first send, whose PSNs and completion stand.
        return skip_again(inner, index, Some(WcStatus::LocQpOpErr));
    }
    let wqe = &inner.eng.wqe;
    // What the rest needs of the WQE, copied: `inner` is changed on the way.
    let (wr_id, op, flags, len, fence) = (wqe.wr_id, wqe.op, wqe.flags, wqe.len, wqe.fence());
    let holds = again && old.holds_rd_atomic;
    let g = gate(&GateInput {
        qp: qp.qp_type,
        wr: op,
        fence,
        earlier_outstanding: in_flight > 0,
        rd_atomic_in_flight: inner.eng.rd_atomic,
        max_rd_atomic: inner.params.max_rd_atomic.max(1),
        holds_rd_atomic: holds,
        next_psn: if again { old.first_psn } else { inner.eng.psn },
        oldest_unacked: inner.eng.comp.psn,
    });
    if g != Gate::Proceed {
        // Acknowledges open the PSN window; they come as responses, which run the engine.
        inner.eng.wait_completion = g != Gate::WaitPsnWindow;
        return false;
    }
    if op.is_local() {
        let status = match local_op(qp, dev, &inner.eng.wqe) {
            Ok(()) => WcStatus::Success,
            Err(e) => local_status(op, e),
        };
        record_done(inner, index, wr_id, op, flags, status);
        return true;
    }
    // Destination: the connected path, or the AH of a datagram.
    let (path, dest_qpn, qkey) = if qp.qp_type.is_datagram() {
        let (av, ud) = (inner.eng.wqe.av, inner.eng.wqe.ud);
        let av = match av {
            Some(av) => Some(av),
            // An AH of the QP's PD only.
            None => dev
                .data()
                .ahs()
                .get(ud.ah_num)
                .filter(|ah| ah.pd() == qp.pd)
                .and_then(|ah| ah.roce()),
        };
        let Some(av) = av else {
            record_done(inner, index, wr_id, op, flags, WcStatus::LocQpOpErr);
            return true;
        };
        // IBA 10.2.5: a Q_Key with the high bit set means "use the QP's".
        let qkey = if ud.remote_qkey & 0x8000_0000 != 0 {
            inner.params.qkey
        } else {
            ud.remote_qkey
        };
        (Some(inner.path.to(av)), ud.remote_qpn, qkey)
    } else {
        (None, inner.params.dest_qpn, 0)
    };
    let mtu = if qp.qp_type.is_datagram() {
        Mtu::for_netdev_mtu(ndev.mtu()).unwrap_or(Mtu::Mtu1024)
    } else {
        inner.params.mtu
    };
    let first_psn = if again { old.first_psn } else { inner.eng.psn };
    let mut seg = match Segmenter::new(qp.qp_type, op, len, mtu, first_psn) {
        Ok(s) => s,
        Err(ReqError::UdTooLong) => {
            // IBA C10-93.1.1: not sent, completed successfully; it still takes a PSN.
            record_done(inner, index, wr_id, op, flags, WcStatus::Success);
            if !again {
                inner.eng.psn = inner.eng.psn.next();
            }
            return true;
        }
        Err(e) => {
            record_done(inner, index, wr_id, op, flags, e.wc_status());
            return true;
        }
    };
    let resume = inner.eng.comp.psn;
    if again && resume.within(seg.first_psn(), seg.last_psn()) && resume != seg.first_psn() {
        if seg.resume_at(resume).is_err() {
            return false;
        }
    }
    let mut holds_rd_atomic = holds;
    if op.uses_rd_atomic() && !holds {
        inner.eng.rd_atomic += 1;
        holds_rd_atomic = true;
    }
    let t = Track {
        wr_id,
        op,
        signaled: flags & SEND_SIGNALED != 0,
        first_psn,
        last_psn: seg.last_psn(),
        // A WQE sent again was sent whole once: an acknowledge of it may arrive while it
        // is being sent again, and completes it.
        all_sent: again && old.all_sent,
        no_ack: qp.qp_type != QpType::Rc,
        holds_rd_atomic,
        status: WcStatus::Success,
        // A result that came early stays with a WQE sent again.
        early: if again { old.early } else { None },
        shape,
    };
    inner.eng.set_track(index, t);
    if !again {
        inner.eng.psn = first_psn.wrapping_add(seg.psn_span());
        inner.eng.hw_index = inner.sq.next_index(index);
    }
    let next_psn = if again && resume.within(seg.first_psn(), seg.last_psn()) {
        resume
    } else {
        first_psn
    };
    // A WQE sent again goes packet by packet.
    let bursts = !again && seg.packets_left() > 1 && may_burst(p);
    let inner = &mut *p.inner;
    inner.eng.cur = Some(Cur {
        index,
        seg,
        next_psn,
        path,
        dest_qpn,
        qkey,
        bursts,
    });
    true
}

/// Whether the packets of the WQE being started, several, may go in loopback bursts
/// ([`crate::proto::burst`], module parameter `bursts`): a userspace client's RC SEND or
/// RDMA WRITE of registered memory (not inline), by reference (`zero_copy`), to this
/// device itself. Kept out of line: a single packet's path stays as short as it was.
#[inline(never)]
fn may_burst(p: &Pass<'_>) -> bool {
    !p.qp.kernel
        && p.qp.qp_type == QpType::Rc
        && !p.inner.eng.wqe.inline
        && param::bursts()
        && param::zero_copy()
        && tx::loops_back(&p.link, &p.inner.path)
}

/// The payload of one packet of a send WQE: its inline data or the memory its SGEs name.
struct SqPayload<'a> {
    keys: Keys<'a>,
    /// Whether the payload may go by reference: only for a userspace client's RC QP. A
    /// kernel consumer's memory is kernel memory; a UD or UC send completes once its
    /// packets are handed to the network stack, and the client may then write the buffer
    /// before a device reads it, where an RC send completes when acknowledged, once its
    /// data arrived (see rrxe.rst, Security model).
    by_ref: bool,
    sq: &'a FromClient,
    index: u32,
    wqe: &'a SendWqe,
    /// Where the packet's payload starts in the message.
    offset: u32,
    len: usize,
}

impl tx::Payload for SqPayload<'_> {
    type Error = MemError;

    fn paged(&self) -> bool {
        self.by_ref && !self.wqe.inline
    }

    fn copy(&self, buf: &mut [u8]) -> Result<(), MemError> {
        if self.wqe.inline {
            wqe::read_inline(self.sq, self.index, self.wqe, self.offset as usize, buf)
                .map_err(|_| MemError::Range)
        } else {
            let sges = self.wqe.sges.sges();
            sgl::read(self.keys, sges, u64::from(self.offset), buf)
        }
    }

    fn pieces(&self, take: impl FnMut(PagePiece) -> bool) -> Result<bool, MemError> {
        if !self.paged() {
            return Ok(false);
        }
        let sges = self.wqe.sges.sges();
        sgl::pieces(self.keys, sges, u64::from(self.offset), self.len, take)
    }
}

/// Builds and sends one packet of the current WQE, or a loopback burst of them. Returns
/// whether it went (a burst may not: nothing was sent then).
fn send_segment(p: &mut Pass<'_>, b: &Burst) -> Result<bool, WcStatus> {
    let (qp, dev, link) = (p.qp, p.dev, p.link);
    let inner = &mut *p.inner;
    let seg = &b.seg;
    let ack_req = if b.k > 1 {
        // Counted as sent only if the burst goes (below).
        AckReqPolicy::burst_ack_req(qp.qp_type)
    } else {
        inner.eng.ack_policy.ack_req(qp.qp_type, seg.opcode)
    };
    let Some(cur) = inner.eng.cur.as_ref() else {
        return Err(WcStatus::LocQpOpErr);
    };
    let Some(tx) = inner.tx.as_ref() else {
        return Ok(true);
    };
    let wqe = &inner.eng.wqe;
    let set = seg.opcode.headers();
    let mut bth = Bth::new(seg.opcode, cur.dest_qpn & QPN_MASK, seg.psn);
    bth.solicited = solicited(seg.opcode, wqe.solicited());
    bth.ack_req = ack_req;
    let mut hdr = Headers::new(bth);
    let remote_va = wqe.remote.addr.wrapping_add(u64::from(seg.offset));
    if set.contains(HeaderSet::RETH) {
        hdr.reth = Some(Reth {
            va: remote_va,
            rkey: wqe.remote.rkey,
            dma_len: seg.remaining,
        });
    }
    if set.contains(HeaderSet::DETH) {
        hdr.deth = Some(Deth {
            qkey: cur.qkey,
            src_qpn: qp.qpn,
        });
    }
    if set.contains(HeaderSet::IMMDT) {
        hdr.immdt = Some(ImmDt {
            imm: u32::from_be(wqe.ex),
        });
    }
    if set.contains(HeaderSet::IETH) {
        hdr.ieth = Some(Ieth { rkey: wqe.ex });
    }
    if set.contains(HeaderSet::ATOMIC_ETH) {
        let (swap_add, compare) = match wqe.op {
            WrOpcode::AtomicCmpSwp => (wqe.remote.swap, wqe.remote.compare_add),
            _ => (wqe.remote.compare_add, 0),
        };
        hdr.atomic_eth = Some(AtomicEth {
            va: wqe.remote.addr,
            rkey: wqe.remote.rkey,
            swap_add,
            compare,
        });
    }
    if set.contains(HeaderSet::FETH) {
        // The fields as the FETH holds them (4 and 2 bits), as rxe's `feth_init` masks
        // what userspace wrote.
        hdr.feth = Some(Feth {
            placement: wqe.remote.flush_type & 0x0f,
            selectivity: wqe.remote.flush_level & 0x03,
        });
    }
    let payload = SqPayload {
        keys: Keys::new(dev.data(), qp.owner(), &inner.mrs),
        by_ref: !qp.kernel && qp.qp_type == QpType::Rc,
        sq: &inner.sq,
        index: cur.index,
        wqe,
        offset: seg.offset,
        len: seg.payload_len as usize,
    };
    let s = Sender {
        dev,
        link,
        owner: tx,
        // A connected QP's path as it is now: an address change (SQD to SQD) takes effect
        // for the rest of a message in progress too.
        path: cur.path.as_ref().unwrap_or(&inner.path),
    };
    let len = seg.payload_len as usize;
    let res = if b.k > 1 {
        let Some(mtu) = Mtu::fitting(cur.seg.mtu()) else {
            return Ok(false);
        };
        tx::send_burst(s, &hdr, len, b.k, mtu, &payload)
    } else {
        // Left in the loopback peer's box if it can be ([`crate::reqbox`]).
        match reqbox::leave(&s, &hdr, len, |buf| tx::Payload::copy(&payload, buf)) {
            Ok(true) => Ok(true),
            Ok(false) => tx::send_from(s, &hdr, len, &payload).map(|()| true),
            Err(e) => Err(TxError::Fill(e)),
        }
    };
    if b.k > 1 && matches!(res, Ok(true) | Err(TxError::Net)) {
        inner.eng.ack_policy.burst_sent();
    }
    match res {
        Ok(false) => Ok(false),
        Ok(true) => {
            if matches!(
                seg.opcode.operation(),
                Operation::Write | Operation::ReadRequest
            ) {
                dev.data().count_n(Counter::RdmaSends, b.k);
            }
            Ok(true)
        }
        Err(TxError::Fill(_)) => Err(WcStatus::LocProtErr),
        // Lost like a packet on the wire: RC retries, UC and UD lose it.
        Err(TxError::Net) => {
            dev.data().count(Counter::SendErr);
            Ok(true)
        }
    }
}
