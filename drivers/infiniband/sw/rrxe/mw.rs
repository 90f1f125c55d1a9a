// SPDX-License-Identifier: GPL-2.0

//! Memory windows, types 1 and 2B: remote access to part of an MR, bound by a BIND_MW
//! work request (for type 1 posted by the userspace provider on behalf of `ibv_bind_mw`).
//! Keys come from the upper half of the index space, as rxe makes them.
//!
//! A type 1 window is valid from allocation and bound or unbound (length 0) by binding;
//! a type 2B window is free until bound, bound to the QP that bound it, and freed again
//! by invalidation (LOCAL_INV, SEND with invalidate) (IBA 10.6.7, o10-36, o10-37).

use crate::{
    device::RrxeDev,
    ext::{
        rdma::{
            device::Device,
            mr::PdId,
            types::{AccessFlags, MwType},
        },
        sync::SpinLockBh,
        xarray::IdTable,
    },
    mr::{self, Mapping, MemError, MrShared, Owner, Window},
    new_spinlock_bh,
    params::{MAX_MW_INDEX, MIN_MW_INDEX},
    wqe::Bind,
};
use kernel::{prelude::*, sync::Arc};

const TYPE_1: u32 = MwType::Type1.raw();
const TYPE_2: u32 = MwType::Type2.raw();

/// The access rights a window may grant (rxe's `RXE_ACCESS_SUPPORTED_MW`).
const SUPPORTED: u32 = AccessFlags::REMOTE_READ
    .union(AccessFlags::REMOTE_WRITE)
    .union(AccessFlags::REMOTE_ATOMIC)
    .union(AccessFlags::LOCAL_WRITE)
    .union(AccessFlags::MW_BIND)
    .union(AccessFlags::ON_DEMAND)
    .union(AccessFlags::FLUSH_GLOBAL)
    .union(AccessFlags::FLUSH_PERSISTENT)
    .union(AccessFlags::OPTIONAL)
    .union(AccessFlags::ZERO_BASED)
    .bits();

/// Whether `index` (a key shifted right by 8) is in the windows' range.
pub(crate) fn is_index(index: u32) -> bool {
    (MIN_MW_INDEX..=MAX_MW_INDEX).contains(&index)
}

/// A binding of a window to an MR.
struct Binding {
    mr: Arc<MrShared>,
    addr: u64,
    length: u64,
    /// Access rights granted (`IB_ACCESS_*`, maybe `IB_ZERO_BASED`).
    access: u32,
    /// The QP a type 2B window is bound to.
    qpn: u32,
}

/// What may change in a window.
struct MwState {
    rkey: u32,
    /// Type 1: always valid until deallocated. Type 2B: valid while bound.
    valid: bool,
    bound: Option<Binding>,
    /// Bumped by every unbinding, which ends the accesses through the binding (see
    /// [`Via`]).
    gen: u64,
}

impl MwState {
    /// Unbinds, returning the binding to drop once the lock is released.
    fn unbind(&mut self) -> Option<Binding> {
        self.gen = self.gen.wrapping_add(1);
        let old = self.bound.take();
        if let Some(old) = &old {
            old.mr.unbind();
        }
        old
    }
}

/// What the data path finds by rkey.
#[pin_data]
pub(crate) struct MwShared {
    /// `IB_MW_TYPE_1` or `IB_MW_TYPE_2`.
    mw_type: u32,
    pd: PdId,
    #[pin]
    st: SpinLockBh<MwState>,
}

/// The binding of a window an access goes through (held by a [`crate::mem::MemRef`]), to
/// check before each copy that it still stands.
pub(crate) struct Via {
    mw: Arc<MwShared>,
    gen: u64,
}

impl Via {
    /// Runs `f` if the window is still bound as it was, holding its lock so that no
    /// invalidation or unbinding overtakes it.
    pub(crate) fn checked<R>(
        &self,
        f: impl FnOnce() -> Result<R, MemError>,
    ) -> Result<R, MemError> {
        let st = self.mw.st.lock();
        if st.gen != self.gen || !st.valid {
            return Err(MemError::State);
        }
        let r = f();
        drop(st);
        r
    }
}

/// The window `rkey` names.
fn lookup(dev: &RrxeDev, rkey: u32) -> Result<Arc<MwShared>, MemError> {
    let index = rkey >> 8;
    if !is_index(index) {
        return Err(MemError::Key);
    }
    dev.mws().get(index).ok_or(MemError::Key)
}

/// The memory the window `rkey` grants for a remote access with rights `access` by a QP
/// of PD `pd` and number `qpn` (see [`crate::mem::resolve`]): the MR it is bound to, the
/// binding, the part of the MR it grants, and the MR as it was when the binding was
/// checked (recorded under the window's lock, as [`Via::checked`] nests the locks).
pub(crate) fn grant(
    dev: &RrxeDev,
    rkey: u32,
    pd: PdId,
    qpn: u32,
    access: u32,
) -> Result<(Arc<MrShared>, Via, Window, Mapping), MemError> {
    let mw = lookup(dev, rkey)?;
    let (mr, win, map, gen) = {
        let st = mw.st.lock();
        if st.rkey != rkey {
            return Err(MemError::Key);
        }
        if mw.pd != pd {
            return Err(MemError::Pd);
        }
        let bound = match (&st.bound, st.valid) {
            (Some(bound), true) => bound,
            _ => return Err(MemError::State),
        };
        if mw.mw_type == TYPE_2 && bound.qpn != qpn {
            return Err(MemError::Qp);
        }
        if bound.access & access != access {
            return Err(MemError::Access);
        }
        let zero_based = bound.access & AccessFlags::ZERO_BASED.bits() != 0;
        (
            bound.mr.clone(),
            MrShared::window(bound.addr, bound.length, zero_based),
            bound.mr.mapping()?,
            st.gen,
        )
    };
    Ok((mr, Via { mw, gen }, win, map))
}

/// Binds window `bd.mw_rkey` (BIND_MW posted by `who`) to `[addr, addr + length)` of
/// the MR `mr_lkey` with `access`, giving it the 8-bit key part of `rkey`. Length 0
/// unbinds a type 1 window.
pub(crate) fn bind(dev: &RrxeDev, who: Owner, bd: &Bind) -> Result<(), MemError> {
    let (pd, qpn) = (who.pd, who.qpn);
    let Bind {
        addr,
        length,
        mr_lkey,
        mw_rkey,
        rkey: new_rkey,
        access,
    } = *bd;
    let mw = lookup(dev, mw_rkey)?;
    if access & !SUPPORTED != 0 {
        return Err(MemError::Access);
    }
    let zero_based = access & AccessFlags::ZERO_BASED.bits() != 0;
    let old = {
        let mut st = mw.st.lock();
        if st.rkey != mw_rkey {
            return Err(MemError::Key);
        }
        match mw.mw_type {
            TYPE_1 => {
                if !st.valid {
                    return Err(MemError::State);
                }
                // o10-36.2.2.
                if zero_based {
                    return Err(MemError::Access);
                }
            }
            _ => {
                // o10-37.2.30, o10-37.2.40.
                if st.valid || st.bound.is_some() {
                    return Err(MemError::State);
                }
                if length == 0 {
                    return Err(MemError::Range);
                }
            }
        }
        // C10-72.
        if mw.pd != pd {
            return Err(MemError::Pd);
        }
        let mr = if length == 0 {
            None
        } else {
            Some(mr::bind_target(dev, mr_lkey, pd, addr, length, access)?)
        };
        let old = st.unbind();
        st.rkey = (st.rkey & !0xff) | (new_rkey & 0xff);
        st.valid = true;
        st.bound = mr.map(|mr| Binding {
            mr,
            addr,
            length,
            access,
            qpn,
        });
        old
    };
    drop(old);
    Ok(())
}

/// Invalidates the type 2B window `rkey` (LOCAL_INV or SEND with invalidate received on
/// QP `qpn` of PD `pd`): it becomes free.
pub(crate) fn invalidate(dev: &RrxeDev, rkey: u32, pd: PdId, qpn: u32) -> Result<(), MemError> {
    let mw = lookup(dev, rkey)?;
    let old = {
        let mut st = mw.st.lock();
        if st.rkey != rkey {
            return Err(MemError::Key);
        }
        // o10-37.2.26: type 1 windows are not invalidated.
        if mw.mw_type == TYPE_1 || !st.valid {
            return Err(MemError::State);
        }
        if mw.pd != pd {
            return Err(MemError::Pd);
        }
        if st.bound.as_ref().is_some_and(|b| b.qpn != qpn) {
            return Err(MemError::Qp);
        }
        st.valid = false;
        st.unbind()
    };
    drop(old);
    Ok(())
}

/// The MWs of a device by index.
pub(crate) type MwTable = IdTable<MwShared>;

/// A memory window (the driver data of an `ib_mw`).
pub(crate) struct Mw {
    index: u32,
    table: Arc<MwTable>,
}

impl Drop for Mw {
    fn drop(&mut self) {
        if let Some(mw) = self.table.remove(self.index) {
            let old = {
                let mut st = mw.st.lock();
                st.valid = false;
                st.unbind()
            };
            drop(old);
        }
    }
}

impl Mw {
    /// Allocates a window in `pd`; returns it and its rkey.
    pub(crate) fn new(dev: &Device<RrxeDev>, pd: PdId, mw_type: u32) -> Result<(Self, u32)> {
        if mw_type != TYPE_1 && mw_type != TYPE_2 {
            return Err(EINVAL);
        }
        let table = dev.data().mws().clone();
        let index = table.reserve(MIN_MW_INDEX, MAX_MW_INDEX)?;
        let rkey = index << 8 | u32::from(dev.data().keys().next());
        let valid = mw_type == TYPE_1;
        let shared = Arc::pin_init(
            pin_init!(MwShared {
                mw_type,
                pd,
                st <- new_spinlock_bh!(
                    MwState {
                        rkey,
                        valid,
                        bound: None,
                        gen: 0,
                    },
                    "rrxe:mw"
                ),
            }),
            GFP_KERNEL,
        );
        match shared {
            Ok(shared) => table.fill(index, shared),
            Err(e) => {
                table.unreserve(index);
                return Err(e);
            }
        }
        Ok((Self { index, table }, rkey))
    }
}
