// SPDX-License-Identifier: GPL-2.0

//! Completion queues: a queue of completions shared with the consumer (mapped into the
//! user context for userspace consumers), and the notification state.

use crate::ext::error::eopnotsupp;
use crate::{
    device::RrxeDev,
    ext::{
        rdma::{
            cq::CqRef,
            device::{CqInitAttr, Device},
            mmap::MmapEntry,
            rxe_abi::{CreateCqResp, ResizeCqResp},
            types::{CqNotifyFlags, Flags, WcFlags},
            udata::Udata,
            wr::{KernelWc, UverbsWc, UverbsWcEx, WcArray, KERNEL_WC_SIZE},
        },
        sync::SpinLockIrq,
        transmute::AsBytesExt,
    },
    new_spinlock_irq, params,
    proto::verbs::WcStatus,
    qp::QpShared,
    queue::{map, ToClient},
};
use core::mem::size_of;
use kernel::prelude::*;

/// Completion element: the user ABI's `ib_uverbs_wc`, or the kernel's `ib_wc` for kernel
/// consumers; one size serves both.
const ELEM_SIZE: usize = if KERNEL_WC_SIZE > size_of::<UverbsWc>() {
    KERNEL_WC_SIZE
} else {
    size_of::<UverbsWc>()
};

/// A completion, in the form the engine produces; the CQ stores it in its consumer's
/// format.
#[derive(Default, Clone, Copy)]
pub(crate) struct Cqe {
    pub(crate) wr_id: u64,
    /// `IB_WC_*` status.
    pub(crate) status: u32,
    /// `IB_WC_*` opcode.
    pub(crate) opcode: u32,
    pub(crate) byte_len: u32,
    /// Immediate data (network order as stored) or invalidated rkey.
    pub(crate) ex: u32,
    pub(crate) qp_num: u32,
    pub(crate) src_qp: u32,
    /// `IB_WC_*` flags.
    pub(crate) wc_flags: u32,
    /// The `ib_qp` (its address) for kernel consumers.
    pub(crate) ib_qp: usize,
    /// `RDMA_NETWORK_*` of a UD receive (kernel consumers).
    pub(crate) network_hdr_type: u8,
    /// The RoCE packet type of a UD receive, reported as the SL to userspace, whose work
    /// completion has no `network_hdr_type` ([`crate::proto::grh::UdGrh::roce_pkt_type`]).
    pub(crate) sl: u8,
}

impl Cqe {
    /// A completion of `qp`'s work: its number and `ib_qp` filled in, the rest zero.
    pub(crate) fn of(qp: &QpShared) -> Self {
        Cqe {
            qp_num: qp.qpn,
            ib_qp: qp.ib_qp,
            ..Default::default()
        }
    }

    /// A completion with status `status` of `qp`'s work request `wr_id`, completion
    /// opcode `opcode` (`IB_WC_*`).
    pub(crate) fn new(qp: &QpShared, wr_id: u64, status: WcStatus, opcode: u32) -> Self {
        Cqe {
            wr_id,
            status: status as u32,
            opcode,
            ..Cqe::of(qp)
        }
    }
}

/// What the CQ lock protects.
struct Inner {
    queue: ToClient,
    /// The user context's mapping of `queue`, for userspace CQs.
    mmap: Option<MmapEntry>,
    /// Armed notification: none, `SOLICITED` or `NEXT_COMP`.
    notify: CqNotifyFlags,
    /// Completions queued, and requests for notification, since the CQ was created
    /// (wrapping): for [`Cq::reaping`].
    pushed: u32,
    arms: u32,
}

/// What a look at a CQ finds of its consumer ([`Cq::reaping`]).
#[derive(Clone, Copy)]
pub(crate) struct Reaping {
    /// Completions queued since the CQ was created (wrapping).
    pub(crate) pushed: u32,
    /// The consumer index: where the consumer's polling has got to.
    pub(crate) consumer: u32,
    /// Requests for notification since the CQ was created (wrapping).
    pub(crate) arms: u32,
    /// Whether notification is armed (`SOLICITED` or `NEXT_COMP`).
    pub(crate) armed: bool,
}

/// A completion queue.
pub(crate) struct Cq {
    /// Shared with the completion path, which runs in softirq context.
    inner: Pin<KBox<SpinLockIrq<Inner>>>,
    /// A kernel consumer's CQ: completions are `ib_wc`, polled with `poll_cq`.
    kernel: bool,
}

impl Cq {
    /// Creates a CQ for `attr`; returns it and its capacity.
    pub(crate) fn new(
        dev: &Device<RrxeDev>,
        attr: &CqInitAttr,
        udata: &mut Udata<'_>,
    ) -> Result<(Self, u32)> {
        if attr.flags != 0 {
            return Err(eopnotsupp());
        }
        if attr.cqe == 0 || attr.cqe > params::MAX_CQE {
            return Err(EINVAL);
        }
        if attr.comp_vector >= dev.num_comp_vectors() {
            return Err(EINVAL);
        }
        let queue = ToClient::new(attr.cqe, ELEM_SIZE)?;
        let (mmap, mi) = map(queue.mem(), udata)?;
        udata.write_response(&CreateCqResp { mi })?;
        let cqe = queue.capacity();
        let inner = KBox::pin_init(
            new_spinlock_irq!(
                Inner {
                    queue,
                    mmap,
                    notify: CqNotifyFlags::default(),
                    pushed: 0,
                    arms: 0,
                },
                "rrxe:cq"
            ),
            GFP_KERNEL,
        )?;
        Ok((
            Cq {
                inner,
                kernel: !udata.is_user(),
            },
            cqe,
        ))
    }

    /// Resizes to at least `cqe` entries, keeping queued completions; fails with `EINVAL`
    /// if they do not fit.
    pub(crate) fn resize(&self, cqe: u32, udata: &mut Udata<'_>) -> Result<u32> {
        if cqe == 0 || cqe > params::MAX_CQE {
            return Err(EINVAL);
        }
        // Allocate and map the new queue outside the lock (allocation sleeps), so that a
        // failure leaves the CQ as it was. Userspace does not poll this CQ while it resizes
        // it (librxe holds its CQ lock); the completion path is excluded by the lock.
        let mut queue = ToClient::new(cqe, ELEM_SIZE)?;
        let (mmap, mi) = map(queue.mem(), udata)?;
        // Report the new mapping before switching: if the copy fails, nothing changed.
        udata.write_response(&ResizeCqResp { mi })?;
        let capacity = queue.capacity();
        let old = {
            let mut inner = self.inner.lock();
            queue.take_from(&inner.queue)?;
            (
                core::mem::replace(&mut inner.queue, queue),
                core::mem::replace(&mut inner.mmap, mmap),
            )
        };
        // Freed outside the lock: removing the old mapping and freeing memory may sleep.
        drop(old);
        Ok(capacity)
    }

    /// Queues a completion; returns whether the CQ's handler must be called (then call
    /// it without holding locks). `ENOSPC` when the CQ is full.
    pub(crate) fn push(&self, c: &Cqe, solicited: bool) -> Result<bool> {
        let mut inner = self.inner.lock();
        if self.kernel {
            let wc = KernelWc {
                wr_id: c.wr_id,
                status: c.status,
                opcode: c.opcode,
                byte_len: c.byte_len,
                qp: c.ib_qp,
                ex: c.ex,
                src_qp: c.src_qp,
                wc_flags: c.wc_flags
                    | if c.network_hdr_type != 0 {
                        WcFlags::WITH_NETWORK_HDR_TYPE.bits()
                    } else {
                        0
                    },
                port_num: 1,
                network_hdr_type: c.network_hdr_type,
            };
            inner
                .queue
                .push_with(|mem, off| mem.write_kernel_wc(off, &wc))?;
        } else {
            let wc = UverbsWc {
                wr_id: c.wr_id,
                status: c.status,
                opcode: c.opcode,
                byte_len: c.byte_len,
                ex: UverbsWcEx {
                    bindgen_union_field: c.ex,
                    ..Default::default()
                },
                qp_num: c.qp_num,
                src_qp: c.src_qp,
                wc_flags: c.wc_flags,
                sl: c.sl,
                port_num: 1,
                ..Default::default()
            };
            inner.queue.push(wc.as_bytes())?;
        }
        inner.pushed = inner.pushed.wrapping_add(1);
        let fire = inner.notify == CqNotifyFlags::NEXT_COMP
            || (inner.notify == CqNotifyFlags::SOLICITED && solicited);
        if fire {
            inner.notify = CqNotifyFlags::default();
        }
        Ok(fire)
    }

    /// Takes completions of a kernel consumer's CQ into `wcs`; returns how many.
    pub(crate) fn poll(&self, wcs: &mut WcArray<'_>) -> Result<usize> {
        if !self.kernel {
            return Err(EINVAL);
        }
        if wcs.is_empty() {
            return Ok(0);
        }
        let inner = self.inner.lock();
        let mut n = 0;
        while n < wcs.len() {
            if !inner.queue.pop_with(|mem, off| wcs.fill(n, mem, off))? {
                break;
            }
            n += 1;
        }
        Ok(n)
    }

    /// The consumer index: where the consumer's polling has got to.
    pub(crate) fn consumer(&self) -> u32 {
        self.inner.lock().queue.consumer()
    }

    /// How the consumer takes completions, read at once: whether it polls the CQ without
    /// waiting for events ([`crate::qp::QpShared::ring`]).
    pub(crate) fn reaping(&self) -> Reaping {
        let inner = self.inner.lock();
        Reaping {
            pushed: inner.pushed,
            consumer: inner.queue.consumer(),
            arms: inner.arms,
            armed: inner.notify != CqNotifyFlags::default(),
        }
    }

    /// How many completions are queued, up to `max`.
    pub(crate) fn peek(&self, max: usize) -> usize {
        (self.inner.lock().queue.count() as usize).min(max)
    }

    /// Arms notification; with `IB_CQ_REPORT_MISSED_EVENTS`, returns whether completions
    /// are already queued.
    pub(crate) fn req_notify(&self, flags: CqNotifyFlags) -> Result<bool> {
        let mut inner = self.inner.lock();
        let kind = flags & CqNotifyFlags::SOLICITED_MASK;
        inner.arms = inner.arms.wrapping_add(1);
        // A solicited-only request does not weaken an armed next-completion one.
        if inner.notify != CqNotifyFlags::NEXT_COMP {
            inner.notify = kind;
        }
        Ok(flags.contains(CqNotifyFlags::REPORT_MISSED_EVENTS) && inner.queue.count() > 0)
    }
}

/// Queues a completion in the CQ `cq` refers to (see [`Cq::push`]); returns whether its
/// handler must be called. A CQ already destroyed takes nothing (its link is revoked):
/// the core destroys a CQ only after its QPs, and `destroy_qp` stops a QP's engine, so
/// only a bug elsewhere could get here.
pub(crate) fn post(cq: &CqRef<RrxeDev>, c: &Cqe, solicited: bool) -> Result<bool> {
    cq.with(|cq| cq.push(c, solicited)).unwrap_or(Ok(false))
}
