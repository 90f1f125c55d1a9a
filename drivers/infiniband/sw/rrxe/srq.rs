// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: a receive queue several QPs draw from, with a limit below which
//! its consumer is told to post more.

use crate::{
    device::RrxeDev,
    ext::{
        error::eopnotsupp,
        rdma::{
            device::{Device, SrqAttr},
            mmap::MmapEntry,
            rxe_abi::{CreateSrqResp, MmInfo, ModifySrqCmd, RECV_WQE_SIZE},
            types::{SrqAttrMask, SrqType},
            udata::Udata,
        },
        sync::SpinLockIrq,
        xarray::IdTable,
    },
    new_spinlock_irq, params,
    queue::{map, FromClient},
};
use crate::{
    ext::rdma::{event::SrqEvents, wr::RecvWrs},
    wqe::{self, read_recv, write_recv, RecvWqe, WqeError},
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// What the SRQ lock protects.
struct Inner {
    rq: FromClient,
    /// Below this many posted WQEs the limit event fires (0: disarmed).
    limit: u32,
    /// A resize is copying the posted WQEs to a new queue: nothing is taken meanwhile
    /// (the requests wait for receive WQEs as when none is posted).
    resizing: bool,
}

/// What QPs using the SRQ share.
pub(crate) struct SrqShared {
    inner: Pin<KBox<SpinLockIrq<Inner>>>,
    /// How many SGEs its WQEs may have (set when it is created, never changed).
    max_sge: u32,
    /// Reports the limit event.
    events: SrqEvents,
}

impl SrqShared {
    /// How many SGEs its WQEs may have.
    pub(crate) fn max_sge(&self) -> u32 {
        self.max_sge
    }

    /// Takes the oldest posted WQE, decoded into `w` (`Err` for a malformed one, which is
    /// consumed). When the number of posted WQEs falls below the armed limit, disarms it
    /// and reports `IB_EVENT_SRQ_LIMIT_REACHED`.
    pub(crate) fn take(&self, w: &mut RecvWqe) -> Option<Result<(), WqeError>> {
        let (wqe, limit) = {
            let mut inner = self.inner.lock();
            if inner.resizing || inner.rq.count() == 0 {
                return None;
            }
            let cons = inner.rq.consumer();
            let wqe = read_recv(&inner.rq, cons, w);
            inner.rq.advance();
            let limit = inner.limit != 0 && inner.rq.count() < inner.limit;
            if limit {
                inner.limit = 0;
            }
            (wqe, limit)
        };
        // Outside the lock: the handler may modify the SRQ.
        if limit {
            self.events.limit_reached();
        }
        Some(wqe)
    }
}

/// The SRQs of a device by number.
pub(crate) type SrqTable = IdTable<SrqShared>;

/// A shared receive queue (the driver data of an `ib_srq`).
pub(crate) struct Srq {
    num: u32,
    shared: Arc<SrqShared>,
    table: Arc<SrqTable>,
    /// The user context's mapping of the queue (kept here, not in the shared part, which
    /// QPs may release in any context).
    mmap: Pin<KBox<Mutex<Option<MmapEntry>>>>,
    /// A kernel consumer's SRQ (posted to with `post_srq_recv`).
    kernel: bool,
}

impl Drop for Srq {
    fn drop(&mut self) {
        self.table.remove(self.num);
    }
}

/// A new receive queue for `max_wr` WQEs of `max_sge` SGEs; with its mapping and where it is,
/// for userspace.
fn new_queue(
    max_wr: u32,
    max_sge: u32,
    udata: &Udata<'_>,
) -> Result<(FromClient, Option<MmapEntry>, MmInfo)> {
    let rq = FromClient::new(max_wr, RECV_WQE_SIZE + max_sge as usize * wqe::SGE_SIZE)?;
    let (mmap, mi) = map(rq.mem(), udata)?;
    Ok((rq, mmap, mi))
}

/// Checks a requested number of WQEs.
fn check_max_wr(max_wr: u32) -> Result<u32> {
    if max_wr == 0 || max_wr > params::MAX_SRQ_WR {
        return Err(EINVAL);
    }
    Ok(max_wr)
}

impl Srq {
    /// Creates an SRQ; writes back its capacities.
    pub(crate) fn new(
        dev: &Device<RrxeDev>,
        events: SrqEvents,
        attr: &mut SrqAttr,
        srq_type: u32,
        udata: &mut Udata<'_>,
    ) -> Result<Self> {
        if srq_type != SrqType::Basic.raw() {
            return Err(eopnotsupp());
        }
        let max_wr = check_max_wr(attr.max_wr)?;
        if attr.max_sge > params::MAX_SRQ_SGE {
            return Err(EINVAL);
        }
        let max_sge = attr.max_sge.max(1);
        let (rq, mmap, mi) = new_queue(max_wr, max_sge, udata)?;
        if attr.srq_limit > rq.capacity() {
            return Err(EINVAL);
        }
        attr.max_wr = rq.capacity();
        attr.max_sge = max_sge;
        let limit = attr.srq_limit;
        let table = dev.data().srqs().clone();
        let num = table.reserve(params::MIN_SRQ_NUM, params::MAX_SRQ_NUM)?;
        let shared = KBox::pin_init(
            new_spinlock_irq!(
                Inner {
                    rq,
                    limit,
                    resizing: false
                },
                "rrxe:srq"
            ),
            GFP_KERNEL,
        )
        .and_then(|inner| {
            Ok(Arc::new(
                SrqShared {
                    inner,
                    max_sge,
                    events,
                },
                GFP_KERNEL,
            )?)
        })
        .inspect_err(|_| table.unreserve(num))?;
        table.fill(num, shared.clone());
        let mmap = KBox::pin_init(new_mutex!(mmap, "rrxe:srq_mmap"), GFP_KERNEL)
            .inspect_err(|_| drop(table.remove(num)))?;
        let srq = Self {
            num,
            shared,
            table,
            mmap,
            kernel: !udata.is_user(),
        };
        udata.write_response(&CreateSrqResp {
            mi,
            srq_num: num,
            reserved: 0,
        })?;
        Ok(srq)
    }

    /// Resizes (`IB_SRQ_MAX_WR`, keeping posted WQEs) and/or sets the limit (`IB_SRQ_LIMIT`).
    pub(crate) fn modify(&self, attr: &SrqAttr, mask: u32, udata: &mut Udata<'_>) -> Result {
        let known = SrqAttrMask::MAX_WR.bits() | SrqAttrMask::LIMIT.bits();
        if mask & !known != 0 {
            return Err(EINVAL);
        }
        if mask & SrqAttrMask::MAX_WR.bits() != 0 {
            let max_wr = check_max_wr(attr.max_wr)?;
            // The new queue's mapping goes where the command says (rxe ABI).
            let mi_addr = if udata.is_user() {
                Some(udata.read_command::<ModifySrqCmd>()?.mmap_info_addr)
            } else {
                None
            };
            let (mut rq, mmap, mi) = new_queue(max_wr, self.shared.max_sge, udata)?;
            // Report the new mapping before switching: if the copy fails, nothing changed.
            if let Some(addr) = mi_addr {
                udata.write_to_user(addr, &mi)?;
            }
            // The mutex serialises resizes.
            let mut mapping = self.mmap.lock();
            let old = if self.kernel {
                // A kernel consumer posts under the SRQ lock, at any time, into a queue of
                // the size it chose: the copy is made under the lock, as rxe does.
                let mut inner = self.shared.inner.lock();
                if inner.limit > rq.capacity() {
                    return Err(EINVAL);
                }
                rq.take_posted(&inner.rq.posted())?;
                core::mem::replace(&mut inner.rq, rq)
            } else {
                // Userspace posts through its mapping (librxe holds its SRQ lock across
                // the resize) and may make the copy as long as the queue: it runs outside
                // the SRQ's IRQ-disabling lock, while the SRQ gives out no WQE.
                let posted = {
                    let mut inner = self.shared.inner.lock();
                    if inner.limit > rq.capacity() {
                        return Err(EINVAL);
                    }
                    inner.resizing = true;
                    inner.rq.posted()
                };
                let copied = rq.take_posted(&posted);
                let mut inner = self.shared.inner.lock();
                inner.resizing = false;
                copied?;
                core::mem::replace(&mut inner.rq, rq)
            };
            let old = (old, core::mem::replace(&mut *mapping, mmap));
            // Freed outside the lock: removing a mapping and freeing memory may sleep.
            drop(old);
        }
        if mask & SrqAttrMask::LIMIT.bits() != 0 {
            let mut inner = self.shared.inner.lock();
            if attr.srq_limit > inner.rq.capacity() {
                return Err(EINVAL);
            }
            inner.limit = attr.srq_limit;
        }
        Ok(())
    }

    /// Posts receive requests of a kernel consumer.
    pub(crate) fn post(&self, wrs: &mut RecvWrs<'_>) -> Result {
        let inner = self.shared.inner.lock();
        for wr in wrs {
            let wr = wr?;
            let rq = inner.rq.producer_side();
            if rq.is_full() {
                return Err(ENOMEM);
            }
            write_recv(&rq, &wr, self.shared.max_sge as usize)?;
            rq.produce()?;
        }
        Ok(())
    }

    /// What QPs using the SRQ share.
    pub(crate) fn shared(&self) -> &Arc<SrqShared> {
        &self.shared
    }

    /// Reports the capacities and limit.
    pub(crate) fn query(&self, attr: &mut SrqAttr) -> Result {
        let inner = self.shared.inner.lock();
        attr.max_wr = inner.rq.capacity();
        attr.max_sge = self.shared.max_sge;
        attr.srq_limit = inner.limit;
        Ok(())
    }
}
