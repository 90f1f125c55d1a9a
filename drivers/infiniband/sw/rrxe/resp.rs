// SPDX-License-Identifier: GPL-2.0

//! The responder: checks each request (the protocol core's PSN, opcode sequence, access,
//! resource and length rules), executes it against local memory, completes receive WQEs,
//! answers with acknowledges, read responses and atomic acknowledges, and replays them for
//! duplicate requests.

use crate::{
    bindings as b,
    counters::Counter,
    cq::Cqe,
    device::RrxeDev,
    eng::{Outbox, Reading, Receiving, ResKind, Resource, Writing},
    ext::{
        net::{device::NetDevice, skb::SkBuff},
        rdma::device::Device,
    },
    mr::{self, AtomicOp, MemError},
    proto::{
        aeth::{Aeth, Syndrome},
        atomic::AtomicAckEth,
        bth::{Bth, DEFAULT_PKEY},
        flush::SEL_MR,
        grh::{UdGrh, UD_GRH_LEN},
        opcode::{Opcode, Operation},
        packet::{Headers, Packet},
        psn::Psn,
        responder::{
            check_access, check_atomic_alignment, check_atomic_write, check_length, check_op_seq,
            check_psn, check_resource, check_write_payload, duplicate_action, error_action,
            find_resource, flush_access, next_msn, read_last_psn, read_replay, recv_wc_opcode,
            reply_kind, DuplicateAction, OpSeq, PsnVerdict, ReadReply, ReadResource, Reply,
            RespError,
        },
        verbs::{QpType, WcStatus},
    },
    qp::{Inner, QpShared, BUDGET},
    sgl::{self, Owner},
    tx,
    wqe::read_recv,
};

/// Sends read responses and processes requests, up to the budget. Returns true if there
/// is more to do.
pub(crate) fn run(
    qp: &QpShared,
    dev: &Device<RrxeDev>,
    ndev: &NetDevice,
    inner: &mut Inner,
    out: &mut Outbox,
) -> bool {
    let mut n = 0;
    loop {
        if n >= BUDGET {
            return true;
        }
        n += 1;
        if inner.eng.resp.reading.is_some() {
            if inner.tx_throttled() {
                return false;
            }
            send_read_response(qp, dev, ndev, inner, out);
            continue;
        }
        let Some(skb) = qp.req_q.pop() else {
            return false;
        };
        if inner.can_receive() {
            request(qp, dev, ndev, inner, out, &skb);
        } else {
            dev.data().count(Counter::RcvdBadTypeState);
        }
    }
}

/// Sends an acknowledge (or NAK) with `syndrome` for `psn`.
fn send_ack(dev: &Device<RrxeDev>, ndev: &NetDevice, inner: &Inner, syndrome: Syndrome, psn: Psn) {
    let Some(tx) = inner.tx.as_ref() else {
        return;
    };
    let mut hdr = Headers::new(bth(Opcode::RcAck, inner, psn));
    hdr.aeth = Some(Aeth {
        syndrome,
        msn: inner.eng.resp.msn,
    });
    let _ = tx::send(dev, ndev, tx, &inner.path, &hdr, 0, |_| Ok::<(), ()>(()));
}

/// A response BTH.
fn bth(opcode: Opcode, inner: &Inner, psn: Psn) -> Bth {
    Bth {
        opcode,
        solicited: false,
        mig_req: false,
        pad: 0,
        tver: 0,
        pkey: DEFAULT_PKEY,
        fecn: false,
        becn: false,
        dest_qpn: inner.params.dest_qpn & crate::proto::bth::QPN_MASK,
        ack_req: false,
        psn,
    }
}

/// Sends an atomic acknowledge with the original value.
fn send_atomic_ack(dev: &Device<RrxeDev>, ndev: &NetDevice, inner: &Inner, psn: Psn, orig: u64) {
    let Some(tx) = inner.tx.as_ref() else {
        return;
    };
    let mut hdr = Headers::new(bth(Opcode::RcAtomicAck, inner, psn));
    hdr.aeth = Some(Aeth {
        syndrome: Syndrome::ACK,
        msn: inner.eng.resp.msn,
    });
    hdr.atomic_ack = Some(AtomicAckEth { orig });
    let _ = tx::send(dev, ndev, tx, &inner.path, &hdr, 0, |_| Ok::<(), ()>(()));
}

/// Sends an empty read response (the answer to FLUSH and ATOMIC WRITE).
fn send_read_ack(dev: &Device<RrxeDev>, ndev: &NetDevice, inner: &Inner, psn: Psn) {
    let Some(tx) = inner.tx.as_ref() else {
        return;
    };
    let mut hdr = Headers::new(bth(Opcode::RcReadResponseOnly, inner, psn));
    hdr.aeth = Some(Aeth {
        syndrome: Syndrome::ACK,
        msn: inner.eng.resp.msn,
    });
    let _ = tx::send(dev, ndev, tx, &inner.path, &hdr, 0, |_| Ok::<(), ()>(()));
}

/// Sends the next packet of the RDMA READ reply in progress. If the memory read was
/// invalidated, deregistered or unbound since the request (see [`crate::mr`]), the reply
/// ends with a remote access error NAK in place of the packet, as rxe's per-packet rkey
/// check ends it (rxe NAKs with the request's PSN; the packet's is the one the requester
/// waits for).
fn send_read_response(
    qp: &QpShared,
    dev: &Device<RrxeDev>,
    ndev: &NetDevice,
    inner: &mut Inner,
    out: &mut Outbox,
) {
    let Some(reading) = inner.eng.resp.reading.as_mut() else {
        return;
    };
    let Some(seg) = reading.reply.next() else {
        inner.eng.resp.reading = None;
        return;
    };
    let va = reading.va.wrapping_add(u64::from(seg.offset));
    let mut hdr = Headers::new(bth(seg.opcode, inner, seg.psn));
    if seg
        .opcode
        .headers()
        .contains(crate::proto::opcode::HeaderSet::AETH)
    {
        hdr.aeth = Some(Aeth {
            syndrome: Syndrome::ACK,
            msn: inner.eng.resp.msn,
        });
    }
    let Some(reading) = inner.eng.resp.reading.as_ref() else {
        return;
    };
    let Some(tx) = inner.tx.as_ref() else {
        return;
    };
    let res = tx::send(
        dev,
        ndev,
        tx,
        &inner.path,
        &hdr,
        seg.payload_len as usize,
        |buf| match reading.mem.as_ref() {
            Some(mem) => mem.read(va, buf),
            None if buf.is_empty() => Ok(()),
            None => Err(MemError::Range),
        },
    );
    match res {
        Ok(()) => dev.data().count(Counter::RdmaSends),
        Err(tx::TxError::Fill(_)) => {
            inner.eng.resp.reading = None;
            reject(qp, dev, ndev, inner, out, RespError::RkeyViolation, seg.psn);
            return;
        }
        Err(_) => {}
    }
    if seg.opcode.is_end() {
        inner.eng.resp.reading = None;
    }
}

/// Takes a receive WQE for a new message, if none is held.
fn take_recv(qp: &QpShared, inner: &mut Inner) -> Result<bool, RespError> {
    if inner.eng.resp.recv.is_some() {
        return Ok(true);
    }
    if let Some(srq) = qp.srq.as_ref() {
        match srq.take() {
            None => Ok(false),
            Some(wqe) => {
                let wqe = wqe.map_err(|_| RespError::MalformedWqe)?;
                inner.eng.resp.recv = Some(Receiving {
                    wqe,
                    from_srq: true,
                    offset: 0,
                });
                Ok(true)
            }
        }
    } else {
        let Some(rq) = inner.rq.as_ref() else {
            return Ok(false);
        };
        if rq.count() == 0 {
            return Ok(false);
        }
        let wqe = read_recv(rq, rq.consumer()).map_err(|_| RespError::MalformedWqe)?;
        inner.eng.resp.recv = Some(Receiving {
            wqe,
            from_srq: false,
            offset: 0,
        });
        Ok(true)
    }
}

/// Completes the held receive WQE.
fn complete_recv(qp: &QpShared, inner: &mut Inner, out: &mut Outbox, wc: &Cqe, solicited: bool) {
    if let Some(r) = inner.eng.resp.recv.take() {
        // Release the slot first: the consumer may post again as soon as it polls.
        if !r.from_srq {
            if let Some(rq) = inner.rq.as_mut() {
                rq.advance();
            }
        }
        let wc = Cqe {
            wr_id: r.wqe.wr_id,
            ..*wc
        };
        match crate::cq::post(&qp.recv_cq, &wc, solicited) {
            Ok(notify) => out.recv_cq |= notify,
            Err(_) => {
                // The CQ overran: its consumer is told, and the QP cannot go on.
                qp.recv_cq.error_event();
                inner.set_error(qp, out);
            }
        }
    }
}

/// Applies the consequences of a rejected request.
fn reject(
    qp: &QpShared,
    dev: &Device<RrxeDev>,
    ndev: &NetDevice,
    inner: &mut Inner,
    out: &mut Outbox,
    err: RespError,
    psn: Psn,
) {
    let a = error_action(
        qp.qp_type,
        qp.srq.is_some(),
        err,
        inner.params.min_rnr_timer,
    );
    if let Some(syn) = a.nak {
        if matches!(syn, Syndrome::RnrNak { .. }) {
            dev.data().count(Counter::SendRnrErr);
        }
        send_ack(dev, ndev, inner, syn, psn);
    } else {
        dev.data().count(Counter::RcvdReqDropped);
    }
    if let Some(status) = a.complete {
        let wc = Cqe {
            status: status as u32,
            opcode: crate::proto::verbs::WcOpcode::Recv as u32,
            qp_num: qp.qpn,
            ib_qp: qp.ib_qp,
            ..Default::default()
        };
        complete_recv(qp, inner, out, &wc, false);
    }
    if a.reuse_wqe {
        // Not consumed from the RQ: the next message uses it again.
        inner.eng.resp.recv = None;
    }
    if a.drop_msg {
        inner.eng.resp.seq.drop_msg = true;
        inner.eng.resp.write = None;
        inner.eng.resp.prev = None;
    }
    if a.qp_error {
        inner.set_error(qp, out);
    }
}

/// Stores a read/atomic resource, replacing the oldest.
fn save_resource(inner: &mut Inner, r: Resource) {
    let resp = &mut inner.eng.resp;
    let n = resp.res.len();
    if n == 0 {
        return;
    }
    let i = resp.res_next % n;
    if let Some(slot) = resp.res.get_mut(i) {
        *slot = Some(r);
    }
    resp.res_next = (i + 1) % n;
}

/// Handles a duplicate RC request.
fn duplicate(
    dev: &Device<RrxeDev>,
    ndev: &NetDevice,
    inner: &mut Inner,
    qp: &QpShared,
    pkt: &Packet<'_>,
) {
    dev.data().count(Counter::DuplicateRequest);
    let psn = pkt.psn();
    let found = find_resource(
        inner
            .eng
            .resp
            .res
            .iter()
            .map(|r| r.map(|r| (r.first_psn, r.last_psn))),
        psn,
    )
    .and_then(|i| inner.eng.resp.res.get(i).copied().flatten());
    match duplicate_action(pkt.opcode(), inner.eng.resp.psn) {
        DuplicateAction::Reack(p) => send_ack(dev, ndev, inner, Syndrome::ACK, p),
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
            let mem = if rp.len == 0 {
                None
            } else {
                match mr::resolve(
                    dev.data(),
                    reth.rkey,
                    qp.pd,
                    qp.qpn,
                    true,
                    rp.va,
                    u64::from(rp.len),
                    b::ib_access_flags_IB_ACCESS_REMOTE_READ,
                ) {
                    Ok(m) => Some(m),
                    Err(_) => return,
                }
            };
            inner.eng.resp.reading = Some(Reading {
                reply: ReadReply::new(rp.psn, rp.len, inner.params.mtu, rp.from_first),
                mem,
                va: rp.va,
            });
        }
        DuplicateAction::ReplayReply => match found.map(|r| r.kind) {
            Some(ResKind::Atomic { orig }) => send_atomic_ack(dev, ndev, inner, psn, orig),
            Some(ResKind::Ack) => send_read_ack(dev, ndev, inner, psn),
            _ => {}
        },
    }
}

/// The UD receive buffer length (for the length check).
fn recv_len(inner: &Inner) -> u64 {
    inner.eng.resp.recv.as_ref().map_or(0, |r| r.wqe.data.len())
}

/// Processes one request packet.
fn request(
    qp: &QpShared,
    dev: &Device<RrxeDev>,
    ndev: &NetDevice,
    inner: &mut Inner,
    out: &mut Outbox,
    skb: &SkBuff,
) {
    let Some(view) = skb.rx_view() else { return };
    let Ok(pkt) = Packet::parse(view.payload) else {
        return;
    };
    if !crate::admit::accept(qp, dev, inner, view.ip, view.udp, &pkt) {
        return;
    }
    let op = pkt.opcode();
    let psn = pkt.psn();
    let p = inner.params;
    let datagram = qp.qp_type.is_datagram();
    match check_psn(
        qp.qp_type,
        op,
        psn,
        inner.eng.resp.psn,
        &mut inner.eng.resp.seq,
    ) {
        PsnVerdict::Process => {}
        PsnVerdict::Duplicate => {
            duplicate(dev, ndev, inner, qp, &pkt);
            return;
        }
        PsnVerdict::NakSequence => {
            dev.data().count(Counter::OutOfSeqRequest);
            let expected = inner.eng.resp.psn;
            send_ack(
                dev,
                ndev,
                inner,
                Syndrome::Nak(crate::proto::aeth::NakCode::PsnSequenceError),
                expected,
            );
            return;
        }
        PsnVerdict::Drop => {
            dev.data().count(Counter::OutOfSeqRequest);
            return;
        }
    }
    match check_op_seq(qp.qp_type, inner.eng.resp.prev, op) {
        OpSeq::Valid => {}
        OpSeq::AbandonAndStart => {
            let a = crate::proto::responder::abandon_message(qp.srq.is_some());
            if let Some(status) = a.complete {
                let wc = Cqe {
                    status: status as u32,
                    opcode: crate::proto::verbs::WcOpcode::Recv as u32,
                    qp_num: qp.qpn,
                    ib_qp: qp.ib_qp,
                    ..Default::default()
                };
                complete_recv(qp, inner, out, &wc, false);
            }
            inner.eng.resp.recv = None;
            inner.eng.resp.write = None;
        }
        OpSeq::Invalid(e) => {
            reject(qp, dev, ndev, inner, out, e, psn);
            return;
        }
    }
    if let Err(e) = check_access(qp.qp_type, op, p.access, pkt.hdr.feth) {
        reject(qp, dev, ndev, inner, out, e, psn);
        return;
    }
    let have_recv = if op.consumes_recv_wqe() {
        match take_recv(qp, inner) {
            Ok(h) => h,
            Err(e) => {
                reject(qp, dev, ndev, inner, out, e, psn);
                return;
            }
        }
    } else {
        true
    };
    if let Err(e) = check_resource(op, p.max_dest_rd_atomic.max(u32::from(datagram)), have_recv) {
        reject(qp, dev, ndev, inner, out, e, psn);
        return;
    }
    let payload_len = pkt.payload.len() as u32;
    if let Err(e) = check_length(
        qp.qp_type,
        op,
        payload_len,
        p.mtu,
        pkt.hdr.reth,
        recv_len(inner),
    ) {
        reject(qp, dev, ndev, inner, out, e, psn);
        return;
    }
    let result = execute(qp, dev, ndev, inner, out, &pkt, view.ip);
    if let Err(e) = result {
        reject(qp, dev, ndev, inner, out, e, psn);
        return;
    }
    if inner.state == b::ib_qp_state_IB_QPS_ERR {
        return;
    }
    if reply_kind(qp.qp_type, op, pkt.hdr.bth.ack_req) == Reply::Ack {
        send_ack(dev, ndev, inner, Syndrome::ACK, psn);
    }
    if !matches!(op.operation(), Operation::ReadRequest) {
        inner.eng.resp.psn = psn.next();
        inner.eng.resp.prev = Some(op);
    }
}

/// Executes a request that passed the checks.
fn execute(
    qp: &QpShared,
    dev: &Device<RrxeDev>,
    ndev: &NetDevice,
    inner: &mut Inner,
    out: &mut Outbox,
    pkt: &Packet<'_>,
    ip: &[u8],
) -> Result<(), RespError> {
    let op = pkt.opcode();
    let psn = pkt.psn();
    let owner = Owner {
        pd: qp.pd,
        qpn: qp.qpn,
    };
    let d = dev.data();
    let mut wc = Cqe {
        status: WcStatus::Success as u32,
        opcode: recv_wc_opcode(op) as u32,
        qp_num: qp.qpn,
        ib_qp: qp.ib_qp,
        ..Default::default()
    };
    match op.operation() {
        Operation::Send => {
            let Some(r) = inner.eng.resp.recv.as_mut() else {
                return Err(RespError::Rnr);
            };
            if qp.qp_type.is_datagram() {
                // The network header goes first.
                let grh = UdGrh::new(ip).ok_or(RespError::Length)?;
                sgl::write(d, owner, r.wqe.data.sges(), 0, &grh.area).map_err(mem_err_local)?;
                r.offset = UD_GRH_LEN;
                wc.wc_flags |= b::ib_wc_flags_IB_WC_GRH;
                wc.network_hdr_type = if grh.ipv4 {
                    b::rdma_network_type_RDMA_NETWORK_IPV4 as u8
                } else {
                    b::rdma_network_type_RDMA_NETWORK_IPV6 as u8
                };
                wc.sl = grh.roce_pkt_type();
                wc.src_qp = pkt.hdr.deth.map_or(0, |x| x.src_qpn);
            }
            // A message longer than the device's largest (`max_msg_sz`) is a length error,
            // as one that overflows the receive buffer is: its completion's byte count
            // (32 bits) could not say how much arrived.
            let end = r.offset + pkt.payload.len() as u64;
            if end > u64::from(crate::params::MAX_MSG_SZ) {
                return Err(RespError::Length);
            }
            sgl::write(d, owner, r.wqe.data.sges(), r.offset, pkt.payload)
                .map_err(mem_err_local)?;
            r.offset = end;
            wc.byte_len = end as u32;
        }
        Operation::Write => {
            if let Some(reth) = pkt.hdr.reth {
                let mem = if reth.dma_len == 0 {
                    None
                } else {
                    Some(
                        mr::resolve(
                            d,
                            reth.rkey,
                            qp.pd,
                            qp.qpn,
                            true,
                            reth.va,
                            u64::from(reth.dma_len),
                            b::ib_access_flags_IB_ACCESS_REMOTE_WRITE,
                        )
                        .map_err(|_| RespError::RkeyViolation)?,
                    )
                };
                inner.eng.resp.write = Some(Writing {
                    mem,
                    va: reth.va,
                    resid: reth.dma_len,
                    total: reth.dma_len,
                });
            }
            let mtu = inner.params.mtu;
            let Some(w) = inner.eng.resp.write.as_mut() else {
                return Err(RespError::MissingFirst);
            };
            check_write_payload(w.resid, pkt.payload.len() as u32, pkt.hdr.bth.pad, mtu)?;
            if !pkt.payload.is_empty() {
                let mem = w.mem.as_ref().ok_or(RespError::Length)?;
                mem.write(w.va, pkt.payload)
                    .map_err(|_| RespError::RkeyViolation)?;
            }
            w.va = w.va.wrapping_add(pkt.payload.len() as u64);
            w.resid = w.resid.saturating_sub(pkt.payload.len() as u32);
            wc.byte_len = w.total;
            if op.is_end() {
                inner.eng.resp.write = None;
                d.count(Counter::RdmaRecvs);
            }
        }
        Operation::ReadRequest => {
            let reth = pkt.hdr.reth.ok_or(RespError::Length)?;
            let mem = if reth.dma_len == 0 {
                None
            } else {
                Some(
                    mr::resolve(
                        d,
                        reth.rkey,
                        qp.pd,
                        qp.qpn,
                        true,
                        reth.va,
                        u64::from(reth.dma_len),
                        b::ib_access_flags_IB_ACCESS_REMOTE_READ,
                    )
                    .map_err(|_| RespError::RkeyViolation)?,
                )
            };
            let mtu = inner.params.mtu;
            let last = read_last_psn(psn, reth.dma_len, mtu);
            save_resource(
                inner,
                Resource {
                    kind: ResKind::Read {
                        va: reth.va,
                        len: reth.dma_len,
                        rkey: reth.rkey,
                    },
                    first_psn: psn,
                    last_psn: last,
                },
            );
            inner.eng.resp.msn = next_msn(inner.eng.resp.msn);
            inner.eng.resp.reading = Some(Reading {
                reply: ReadReply::new(psn, reth.dma_len, mtu, true),
                mem,
                va: reth.va,
            });
            inner.eng.resp.psn = last.next();
            inner.eng.resp.prev = None;
            d.count(Counter::RdmaRecvs);
            return Ok(());
        }
        Operation::CompareSwap | Operation::FetchAdd => {
            let a = pkt.hdr.atomic_eth.ok_or(RespError::Length)?;
            check_atomic_alignment(a.va)?;
            let mem = mr::resolve(
                d,
                a.rkey,
                qp.pd,
                qp.qpn,
                true,
                a.va,
                8,
                b::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC,
            )
            .map_err(|_| RespError::RkeyViolation)?;
            let aop = if op.operation() == Operation::CompareSwap {
                AtomicOp::CmpSwap {
                    compare: a.compare,
                    swap: a.swap_add,
                }
            } else {
                AtomicOp::FetchAdd(a.swap_add)
            };
            let orig = mem.atomic(a.va, aop).map_err(|e| match e {
                MemError::Align => RespError::MisalignedAtomic,
                _ => RespError::RkeyViolation,
            })?;
            save_resource(
                inner,
                Resource {
                    kind: ResKind::Atomic { orig },
                    first_psn: psn,
                    last_psn: psn,
                },
            );
            inner.eng.resp.msn = next_msn(inner.eng.resp.msn);
            send_atomic_ack(dev, ndev, inner, psn, orig);
            return Ok(());
        }
        Operation::AtomicWrite => {
            let reth = pkt.hdr.reth.ok_or(RespError::Length)?;
            check_atomic_write(reth.dma_len, pkt.payload.len() as u32, pkt.hdr.bth.pad)?;
            check_atomic_alignment(reth.va)?;
            let mem = mr::resolve(
                d,
                reth.rkey,
                qp.pd,
                qp.qpn,
                true,
                reth.va,
                8,
                b::ib_access_flags_IB_ACCESS_REMOTE_WRITE,
            )
            .map_err(|_| RespError::RkeyViolation)?;
            let mut v = [0u8; 8];
            v.copy_from_slice(pkt.payload.get(..8).ok_or(RespError::Length)?);
            mem.atomic(reth.va, AtomicOp::Write(u64::from_ne_bytes(v)))
                .map_err(|_| RespError::RkeyViolation)?;
            save_resource(
                inner,
                Resource {
                    kind: ResKind::Ack,
                    first_psn: psn,
                    last_psn: psn,
                },
            );
            inner.eng.resp.msn = next_msn(inner.eng.resp.msn);
            send_read_ack(dev, ndev, inner, psn);
            return Ok(());
        }
        Operation::Flush => {
            let reth = pkt.hdr.reth.ok_or(RespError::Length)?;
            // The key is checked even for 0 bytes (C9-88 spares READ and WRITE only), the
            // range unless the FLUSH is of the whole MR (as rxe's `check_rkey`).
            let whole_mr = pkt.hdr.feth.is_some_and(|f| f.selectivity == SEL_MR);
            match mr::resolve(
                d,
                reth.rkey,
                qp.pd,
                qp.qpn,
                true,
                reth.va,
                u64::from(reth.dma_len),
                flush_access(pkt.hdr.feth).0,
            ) {
                Ok(_) => {}
                Err(MemError::Range) if whole_mr => {}
                Err(_) => return Err(RespError::RkeyViolation),
            }
            save_resource(
                inner,
                Resource {
                    kind: ResKind::Ack,
                    first_psn: psn,
                    last_psn: psn,
                },
            );
            inner.eng.resp.msn = next_msn(inner.eng.resp.msn);
            send_read_ack(dev, ndev, inner, psn);
            return Ok(());
        }
        Operation::ReadResponse | Operation::Ack | Operation::AtomicAck => return Ok(()),
    }
    if op.has_immediate() {
        if let Some(imm) = pkt.hdr.immdt {
            wc.ex = imm.imm.to_be();
            wc.wc_flags |= b::ib_wc_flags_IB_WC_WITH_IMM;
        }
    }
    if op.has_invalidate() {
        if let Some(ieth) = pkt.hdr.ieth {
            mr::invalidate(d, ieth.rkey, qp.pd, qp.qpn).map_err(|_| RespError::InvalidateRkey)?;
            wc.ex = ieth.rkey;
            wc.wc_flags |= b::ib_wc_flags_IB_WC_WITH_INVALIDATE;
        }
    }
    if op.is_end() && !qp.qp_type.is_datagram() {
        inner.eng.resp.msn = next_msn(inner.eng.resp.msn);
    }
    if op.completes_recv_wqe() {
        complete_recv(qp, inner, out, &wc, pkt.hdr.bth.solicited);
    }
    Ok(())
}

/// A memory error on the local side of a receive (the receive WQE's SGEs).
fn mem_err_local(e: MemError) -> RespError {
    match e {
        MemError::Range => RespError::Length,
        _ => RespError::MalformedWqe,
    }
}

#[allow(dead_code)]
fn _unused(_: QpType) {}
