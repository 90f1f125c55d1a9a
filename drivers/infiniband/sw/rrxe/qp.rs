// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: creation with their send and receive queues (mapped into the user context
//! for userspace QPs), attribute and state changes by the IBTA state table, queries, and
//! the flush of outstanding work when a QP enters the error state.

use crate::{
    ah::check_av,
    bindings as b,
    device::RrxeDev,
    ext::{
        error::eopnotsupp,
        rdma::{
            ah::AhAttrs,
            device::Device,
            mmap::MmapEntry,
            qp::{copy_cap, transition_ok, CqRef, QpAttr, QpAttrs, QpCap, QpInit},
            udata::Udata,
        },
        sync::SpinLockBh,
        xarray::IdTable,
    },
    new_spinlock_bh, params,
    queue::{map, FromClient},
};
use core::mem::{offset_of, size_of};
use kernel::{prelude::*, sync::Arc};

/// QP numbers of regular QPs: after the special ones.
const MIN_QPN: u32 = 16;
const MAX_QPN: u32 = (1 << 20) - 1;
/// The GSI QP (QP1).
const GSI_QPN: u32 = 1;
/// Inline data a send WQE can carry (the size of its SGE array at 32 SGEs).
const MAX_INLINE_DATA: u32 = 32 * SGE_SIZE as u32;
const SGE_SIZE: usize = size_of::<b::rxe_sge>();
/// `IB_QP_ATTR_STANDARD_BITS`: the attribute mask bits the core defines.
const STANDARD_BITS: u32 = (1 << 21) - 1;
/// Upper bounds of QP attributes (IBTA field widths and device limits).
const MAX_RD_ATOMIC: u8 = 128;
const MAX_RETRY: u8 = 7;
const MAX_TIMER: u8 = 31;

/// Where the `wr_id` of a send WQE is.
const SEND_WR_ID: usize = offset_of!(b::rxe_send_wqe, wr) + offset_of!(b::rxe_send_wr, wr_id);
/// Where the work request opcode of a send WQE is.
const SEND_OPCODE: usize = offset_of!(b::rxe_send_wqe, wr) + offset_of!(b::rxe_send_wr, opcode);
/// Where the `wr_id` of a receive WQE is.
const RECV_WR_ID: usize = offset_of!(b::rxe_recv_wqe, wr_id);

/// The QPs of a device by number.
pub(crate) type QpTable = IdTable<QpShared>;

/// A queue pair (the driver data of an `ib_qp`).
pub(crate) struct Qp {
    shared: Arc<QpShared>,
    table: Arc<QpTable>,
}

impl Drop for Qp {
    fn drop(&mut self) {
        self.table.remove(self.shared.qpn);
    }
}

/// The state of a QP that its packets (and its number) find.
pub(crate) struct QpShared {
    qpn: u32,
    qp_type: u32,
    signal_all: bool,
    send_cq: CqRef<RrxeDev>,
    recv_cq: CqRef<RrxeDev>,
    inner: Pin<KBox<SpinLockBh<Inner>>>,
}

/// What the QP lock protects.
struct Inner {
    /// Current state (`IB_QPS_*`).
    state: u32,
    /// Attributes set by `modify_qp`.
    attr: QpAttrs,
    cap: QpCap,
    sq: FromClient,
    /// Absent with an SRQ.
    rq: Option<FromClient>,
    /// The user context's mappings of the queues.
    _mmaps: [Option<MmapEntry>; 2],
}

/// The completion opcode of a send work request opcode (`IB_WR_*`).
fn send_wc_opcode(wr_opcode: u32) -> u32 {
    match wr_opcode {
        b::ib_wr_opcode_IB_WR_RDMA_WRITE | b::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM => {
            b::ib_uverbs_wc_opcode_IB_UVERBS_WC_RDMA_WRITE
        }
        b::ib_wr_opcode_IB_WR_RDMA_READ => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_RDMA_READ,
        b::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_COMP_SWAP,
        b::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_FETCH_ADD,
        b::ib_wr_opcode_IB_WR_LOCAL_INV => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_LOCAL_INV,
        b::ib_wr_opcode_IB_WR_BIND_MW => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_BIND_MW,
        b::ib_wr_opcode_IB_WR_FLUSH => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_FLUSH,
        b::ib_wr_opcode_IB_WR_ATOMIC_WRITE => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_ATOMIC_WRITE,
        _ => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_SEND,
    }
}

/// Reads a little `u64`/`u32` field of the oldest WQE (native byte order, as userspace
/// wrote it).
fn front_u64(q: &FromClient, off: usize) -> Result<u64> {
    let mut v = [0u8; 8];
    q.read_front(off, &mut v)?;
    Ok(u64::from_ne_bytes(v))
}

fn front_u32(q: &FromClient, off: usize) -> Result<u32> {
    let mut v = [0u8; 4];
    q.read_front(off, &mut v)?;
    Ok(u32::from_ne_bytes(v))
}

impl Inner {
    /// Completes every posted WQE with `IB_WC_WR_FLUSH_ERR`; returns which CQs need their
    /// handlers called (send, receive).
    fn flush(&mut self, qp: &QpShared) -> (bool, bool) {
        let mut notify = (false, false);
        while self.sq.count() > 0 {
            let wc = b::ib_uverbs_wc {
                wr_id: front_u64(&self.sq, SEND_WR_ID).unwrap_or(0),
                status: b::ib_wc_status_IB_WC_WR_FLUSH_ERR,
                opcode: send_wc_opcode(front_u32(&self.sq, SEND_OPCODE).unwrap_or(0)),
                qp_num: qp.qpn,
                ..Default::default()
            };
            // A full CQ loses flush completions; the consumer sees the overflow.
            if qp.send_cq.push(&wc, false).unwrap_or(false) {
                notify.0 = true;
            }
            self.sq.advance();
        }
        if let Some(rq) = self.rq.as_mut() {
            while rq.count() > 0 {
                let wc = b::ib_uverbs_wc {
                    wr_id: front_u64(rq, RECV_WR_ID).unwrap_or(0),
                    status: b::ib_wc_status_IB_WC_WR_FLUSH_ERR,
                    opcode: b::ib_uverbs_wc_opcode_IB_UVERBS_WC_SEND,
                    qp_num: qp.qpn,
                    ..Default::default()
                };
                if qp.recv_cq.push(&wc, false).unwrap_or(false) {
                    notify.1 = true;
                }
                rq.advance();
            }
        }
        notify
    }

    /// Drops every posted WQE (the QP is reset).
    fn discard(&mut self) {
        while self.sq.count() > 0 {
            self.sq.advance();
        }
        if let Some(rq) = self.rq.as_mut() {
            while rq.count() > 0 {
                rq.advance();
            }
        }
    }
}

/// Checks the capacities asked for; fails with `EINVAL` beyond the device's limits.
fn check_cap(cap: &QpCap, has_srq: bool) -> Result {
    let max_wr = params::MAX_QP_WR as u32;
    let max_sge = params::MAX_SGE as u32;
    if cap.max_send_wr > max_wr
        || cap.max_send_sge > max_sge
        || cap.max_inline_data > MAX_INLINE_DATA
    {
        return Err(EINVAL);
    }
    if !has_srq && (cap.max_recv_wr > max_wr || cap.max_recv_sge > max_sge) {
        return Err(EINVAL);
    }
    Ok(())
}

impl Qp {
    /// Creates a QP; returns it and its number.
    pub(crate) fn new(
        dev: &Device<RrxeDev>,
        init: &mut QpInit<'_, RrxeDev>,
        udata: &mut Udata<'_>,
    ) -> Result<(Self, u32)> {
        // The rxe ABI has no command data for this verb.
        if udata.in_len() != 0 {
            return Err(EINVAL);
        }
        if init.create_flags() != 0 {
            return Err(eopnotsupp());
        }
        let qp_type = init.qp_type();
        match qp_type {
            b::ib_qp_type_IB_QPT_RC | b::ib_qp_type_IB_QPT_UC | b::ib_qp_type_IB_QPT_UD => {}
            b::ib_qp_type_IB_QPT_GSI if init.port_num() == 1 => {}
            b::ib_qp_type_IB_QPT_GSI => return Err(EINVAL),
            _ => return Err(eopnotsupp()),
        }
        let (Some(send_cq), Some(recv_cq)) = (init.send_cq(), init.recv_cq()) else {
            return Err(EINVAL);
        };
        let has_srq = init.has_srq();
        check_cap(init.cap(), has_srq)?;

        // Send queue: room for the SGEs or the inline data, whichever is larger.
        let cap = init.cap();
        let sge_room = (cap.max_send_sge as usize * SGE_SIZE).max(cap.max_inline_data as usize);
        let sq = FromClient::new(cap.max_send_wr, size_of::<b::rxe_send_wqe>() + sge_room)?;
        cap.max_send_wr = sq.capacity();
        cap.max_send_sge = (sge_room / SGE_SIZE) as u32;
        cap.max_inline_data = sge_room as u32;
        let rq = if has_srq {
            None
        } else {
            let rq = FromClient::new(
                cap.max_recv_wr,
                size_of::<b::rxe_recv_wqe>() + cap.max_recv_sge as usize * SGE_SIZE,
            )?;
            cap.max_recv_wr = rq.capacity();
            Some(rq)
        };
        let cap = copy_cap(cap);

        let (sq_mmap, sq_mi) = map(sq.mem(), udata)?;
        let (rq_mmap, rq_mi) = match rq.as_ref() {
            Some(rq) => map(rq.mem(), udata)?,
            None => (None, b::mminfo::default()),
        };
        udata.write_response(&b::rxe_create_qp_resp { rq_mi, sq_mi })?;

        let inner = KBox::pin_init(
            new_spinlock_bh!(
                Inner {
                    state: b::ib_qp_state_IB_QPS_RESET,
                    attr: QpAttrs::default(),
                    cap,
                    sq,
                    rq,
                    _mmaps: [sq_mmap, rq_mmap],
                },
                "rrxe:qp"
            ),
            GFP_KERNEL,
        )?;
        let table = dev.data().qps().clone();
        let (min, max) = if qp_type == b::ib_qp_type_IB_QPT_GSI {
            (GSI_QPN, GSI_QPN)
        } else {
            (MIN_QPN, MAX_QPN)
        };
        // A second GSI QP finds its number taken.
        let qpn = table
            .reserve(min, max)
            .map_err(|e| if min == GSI_QPN { EINVAL } else { e })?;
        let shared = Arc::new(
            QpShared {
                qpn,
                qp_type,
                signal_all: init.signal_all(),
                send_cq,
                recv_cq,
                inner,
            },
            GFP_KERNEL,
        )
        .inspect_err(|_| table.unreserve(qpn))?;
        table.fill(qpn, shared.clone());
        Ok((Qp { shared, table }, qpn))
    }

    /// The QP number.
    pub(crate) fn qpn(&self) -> u32 {
        self.shared.qpn
    }

    /// Applies the attributes selected by `mask`.
    pub(crate) fn modify(&self, attr: &QpAttr, mask: u32) -> Result {
        if mask & !STANDARD_BITS != 0 {
            return Err(eopnotsupp());
        }
        let qp = &self.shared;
        let notify = {
            let mut inner = qp.inner.lock();
            let cur = if mask & b::ib_qp_attr_mask_IB_QP_CUR_STATE != 0 {
                attr.cur_qp_state
            } else {
                inner.state
            };
            let next = if mask & b::ib_qp_attr_mask_IB_QP_STATE != 0 {
                attr.qp_state
            } else {
                cur
            };
            if !transition_ok(cur, next, qp.qp_type, mask) {
                return Err(EINVAL);
            }
            check_attr(attr, mask)?;
            inner.attr.update(attr, mask);
            inner.state = next;
            match next {
                b::ib_qp_state_IB_QPS_ERR => inner.flush(qp),
                b::ib_qp_state_IB_QPS_RESET => {
                    inner.discard();
                    (false, false)
                }
                _ => (false, false),
            }
        };
        if notify.0 {
            qp.send_cq.notify();
        }
        if notify.1 && !(notify.0 && qp.recv_cq.same(&qp.send_cq)) {
            qp.recv_cq.notify();
        }
        Ok(())
    }

    /// Reports the QP's attributes and creation attributes.
    pub(crate) fn query(&self, attr: &mut QpAttr, init: &mut b::ib_qp_init_attr) -> Result {
        let qp = &self.shared;
        let inner = qp.inner.lock();
        *attr = inner.attr.get();
        attr.qp_state = inner.state;
        attr.cur_qp_state = inner.state;
        attr.cap = copy_cap(&inner.cap);
        init.cap = copy_cap(&inner.cap);
        init.qp_type = qp.qp_type;
        init.sq_sig_type = if qp.signal_all {
            b::ib_sig_type_IB_SIGNAL_ALL_WR
        } else {
            b::ib_sig_type_IB_SIGNAL_REQ_WR
        };
        init.port_num = 1;
        Ok(())
    }
}

/// Checks attribute values against the device's limits; `EINVAL` otherwise.
fn check_attr(attr: &QpAttr, mask: u32) -> Result {
    let set = |bit: u32| mask & bit != 0;
    let ok = (!set(b::ib_qp_attr_mask_IB_QP_PORT) || attr.port_num == 1)
        && (!set(b::ib_qp_attr_mask_IB_QP_PKEY_INDEX) || attr.pkey_index < params::PKEY_TBL_LEN)
        && (!set(b::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC) || attr.max_rd_atomic <= MAX_RD_ATOMIC)
        && (!set(b::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC)
            || attr.max_dest_rd_atomic <= MAX_RD_ATOMIC)
        && (!set(b::ib_qp_attr_mask_IB_QP_PATH_MTU)
            || (b::ib_mtu_IB_MTU_256..=b::ib_mtu_IB_MTU_4096).contains(&attr.path_mtu))
        && (!set(b::ib_qp_attr_mask_IB_QP_TIMEOUT) || attr.timeout <= MAX_TIMER)
        && (!set(b::ib_qp_attr_mask_IB_QP_RETRY_CNT) || attr.retry_cnt <= MAX_RETRY)
        && (!set(b::ib_qp_attr_mask_IB_QP_RNR_RETRY) || attr.rnr_retry <= MAX_RETRY)
        && (!set(b::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER) || attr.min_rnr_timer <= MAX_TIMER)
        && (!set(b::ib_qp_attr_mask_IB_QP_ALT_PATH) || attr.alt_port_num == 1);
    if !ok {
        return Err(EINVAL);
    }
    if set(b::ib_qp_attr_mask_IB_QP_AV) {
        check_av(&AhAttrs::new(&attr.ah_attr))?;
    }
    Ok(())
}
