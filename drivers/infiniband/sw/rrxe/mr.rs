// SPDX-License-Identifier: GPL-2.0

//! Memory regions: user memory pinned for the device, and the DMA MR of kernel consumers.
//! Keys are the MR's index shifted left by 8 with an 8-bit key, as rxe makes them.

use crate::{
    bindings as b,
    device::RrxeDev,
    ext::{
        error::eopnotsupp,
        rdma::{
            device::Device,
            mr::{Atomic, KernelMem, Umem},
        },
        xarray::IdTable,
    },
};
use core::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use kernel::{prelude::*, sync::Arc};

/// MR indices: the lower half of the 20-bit index space (memory windows take the upper).
const MIN_INDEX: u32 = 1;
const MAX_INDEX: u32 = (1 << 19) - 1;

/// What the data path finds by key.
pub(crate) struct MrShared {
    /// Access rights (`IB_ACCESS_*`).
    access: u32,
    /// The I/O virtual address of the first byte and the length.
    iova: u64,
    length: u64,
    /// The pinned user memory; none for the DMA MR (all kernel memory).
    umem: Option<Umem>,
    /// The PD.
    pd: usize,
    /// The key (lkey = rkey), set once the index is known.
    key: AtomicU32,
}

/// Why memory named by a key cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemError {
    /// No such key (or a stale key part).
    Key,
    /// The key belongs to another PD.
    Pd,
    /// The access is not allowed.
    Access,
    /// The range is outside the region.
    Range,
    /// The region is not in a state that allows the operation.
    State,
    /// An atomic target is not 8-byte aligned.
    Align,
}

/// An atomic operation on memory.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AtomicOp {
    /// Compare and swap.
    CmpSwap { compare: u64, swap: u64 },
    /// Fetch and add.
    FetchAdd(u64),
    /// Store (ATOMIC WRITE).
    Write(u64),
}

/// A checked reference to the memory of a key.
pub(crate) struct MemRef {
    mr: Arc<MrShared>,
}

/// Finds the memory `key` names for an access of `len` bytes at `iova` with rights
/// `access`, by `pd` (and QP `qpn`); `remote` for keys received from the network.
#[allow(clippy::too_many_arguments)]
pub(crate) fn resolve(
    dev: &RrxeDev,
    key: u32,
    pd: usize,
    _qpn: u32,
    _remote: bool,
    iova: u64,
    len: u64,
    access: u32,
) -> Result<MemRef, MemError> {
    let index = key >> 8;
    if !(MIN_INDEX..=MAX_INDEX).contains(&index) {
        return Err(MemError::Key);
    }
    let mr = dev.mrs().get(index).ok_or(MemError::Key)?;
    if mr.key.load(Ordering::Relaxed) != key {
        return Err(MemError::Key);
    }
    if mr.pd != pd {
        return Err(MemError::Pd);
    }
    if mr.access & access != access {
        return Err(MemError::Access);
    }
    let end = iova.checked_add(len).ok_or(MemError::Range)?;
    if iova < mr.iova || end > mr.iova.saturating_add(mr.length) {
        return Err(MemError::Range);
    }
    Ok(MemRef { mr })
}

impl MemRef {
    fn offset(&self, iova: u64, len: usize) -> Result<u64, MemError> {
        let off = iova.checked_sub(self.mr.iova).ok_or(MemError::Range)?;
        let end = off.checked_add(len as u64).ok_or(MemError::Range)?;
        if end > self.mr.length {
            return Err(MemError::Range);
        }
        Ok(off)
    }

    /// Copies from `iova` into `dst`.
    pub(crate) fn read(&self, iova: u64, dst: &mut [u8]) -> Result<(), MemError> {
        let off = self.offset(iova, dst.len())?;
        match self.mr.umem.as_ref() {
            Some(u) => u.read(off, dst).map_err(|_| MemError::Range),
            None => {
                KernelMem::read(iova, dst);
                Ok(())
            }
        }
    }

    /// Copies `src` to `iova`.
    pub(crate) fn write(&self, iova: u64, src: &[u8]) -> Result<(), MemError> {
        let off = self.offset(iova, src.len())?;
        match self.mr.umem.as_ref() {
            Some(u) => u.write(off, src).map_err(|_| MemError::Range),
            None => {
                KernelMem::write(iova, src);
                Ok(())
            }
        }
    }

    /// Performs `op` on the 8 bytes at `iova`; returns the old value.
    pub(crate) fn atomic(&self, iova: u64, op: AtomicOp) -> Result<u64, MemError> {
        if iova % 8 != 0 {
            return Err(MemError::Align);
        }
        let off = self.offset(iova, 8)?;
        let op = match op {
            AtomicOp::CmpSwap { compare, swap } => Atomic::CmpSwap(compare, swap),
            AtomicOp::FetchAdd(a) => Atomic::FetchAdd(a),
            AtomicOp::Write(v) => Atomic::Write(v),
        };
        match self.mr.umem.as_ref() {
            Some(u) => u.atomic(off, op).map_err(|_| MemError::Range),
            None => Ok(KernelMem::atomic(iova, op)),
        }
    }
}

/// Invalidates the MR or MW `key` names (LOCAL INVALIDATE, SEND with invalidate).
pub(crate) fn invalidate(_dev: &RrxeDev, _key: u32, _pd: usize, _qpn: u32) -> Result<(), MemError> {
    Err(MemError::State)
}

/// Binds memory window `mw_rkey` (BIND_MW).
#[allow(clippy::too_many_arguments)]
pub(crate) fn bind_mw(
    _dev: &RrxeDev,
    _pd: usize,
    _qpn: u32,
    _mw_rkey: u32,
    _rkey: u32,
    _mr_lkey: u32,
    _addr: u64,
    _length: u64,
    _access: u32,
) -> Result<(), MemError> {
    Err(MemError::State)
}

/// The MRs of a device by index.
pub(crate) type MrTable = IdTable<MrShared>;

/// A memory region (the driver data of an `ib_mr`).
pub(crate) struct Mr {
    index: u32,
    table: Arc<MrTable>,
}

impl Drop for Mr {
    fn drop(&mut self) {
        self.table.remove(self.index);
    }
}

/// Hands out the 8-bit key parts, so that a reused index gets a new key.
pub(crate) struct KeyGen(AtomicU8);

impl KeyGen {
    /// A new generator.
    pub(crate) const fn new() -> Self {
        Self(AtomicU8::new(0))
    }

    /// The next key part.
    pub(crate) fn next(&self) -> u8 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}

impl Mr {
    fn add(dev: &Device<RrxeDev>, shared: MrShared) -> Result<(Self, u32, u32)> {
        let table = dev.data().mrs().clone();
        let index = table.reserve(MIN_INDEX, MAX_INDEX)?;
        match Arc::new(shared, GFP_KERNEL) {
            Ok(shared) => table.fill(index, shared),
            Err(e) => {
                table.unreserve(index);
                return Err(e.into());
            }
        }
        let key = index << 8 | u32::from(dev.data().keys().next());
        if let Some(mr) = table.get(index) {
            mr.key.store(key, Ordering::Relaxed);
        }
        Ok((Self { index, table }, key, key))
    }

    /// Registers user memory.
    pub(crate) fn new_user(
        dev: &Device<RrxeDev>,
        pd: usize,
        start: u64,
        length: u64,
        iova: u64,
        access: u32,
    ) -> Result<(Self, u32, u32)> {
        if access & b::ib_access_flags_IB_ACCESS_ON_DEMAND != 0 {
            return Err(eopnotsupp());
        }
        let umem = Umem::get(dev, start, length, access)?;
        Self::add(
            dev,
            MrShared {
                access,
                iova,
                length,
                umem: Some(umem),
                pd,
                key: AtomicU32::new(0),
            },
        )
    }

    /// The DMA MR.
    pub(crate) fn new_dma(
        dev: &Device<RrxeDev>,
        pd: usize,
        access: u32,
    ) -> Result<(Self, u32, u32)> {
        Self::add(
            dev,
            MrShared {
                access,
                iova: 0,
                length: u64::MAX,
                umem: None,
                pd,
                key: AtomicU32::new(0),
            },
        )
    }
}
