// SPDX-License-Identifier: GPL-2.0

//! Memory regions: user memory pinned for the device, the DMA MR of kernel consumers, and
//! fast-registration MRs of kernel consumers (mapped by `map_mr_sg`, which frees a valid
//! one, made valid by a REG_MR work request, freed by LOCAL_INV or SEND with invalidate).
//! Keys are the MR's index shifted left by 8 with an 8-bit key, as rxe makes them; lkey
//! and rkey are equal.
//!
//! The data path reaches an MR's memory through [`crate::mem`], which resolves keys (of
//! MRs here, of windows in [`crate::mw`]) to checked references; what it may do with an
//! MR is here: [`grant`] checks a key's rights and records the MR as it is (a window's
//! grant records it by [`MrShared::mapping`]), and [`MrShared::with_mem`] gives access to
//! the memory only while the MR is still as recorded; [`with_key`] checks a key as
//! [`grant`] does and gives access to the range checked ([`Span`]) under the same hold of
//! the MR's lock. Everything the data path calls works in process context and softirq: no
//! sleeping, no allocation.
//!
//! Lifetime: a reference to memory, and a QP's cache of the MRs it used last
//! ([`crate::keys::MrCache`]), hold a reference on the MR's [`MrShared`], which keeps the
//! MR's state allocated, not its memory. The memory is in the state, under the MR's lock,
//! which every access holds. Deregistration (refused while windows are bound, IBA
//! 10.6.7.2.6) removes the MR from the table (no new lookups), marks it invalid and takes
//! the memory out under the lock (no access is in progress then, and every later one
//! fails), then unpins it, in its process context: whoever still holds the MR, the pages
//! are unpinned when `dereg_mr` returns.
//!
//! Re-validation: a reference lives for a whole message (an RDMA WRITE or READ reply of
//! many packets), but the MR may be invalidated, deregistered, remapped or re-registered
//! with other rights meanwhile (and a window unbound). Every such change bumps a
//! generation number under the MR's (the window's) lock; the rights are checked and the
//! generation recorded under one hold of that lock ([`grant`]), and every copy or atomic
//! checks, under those locks and holding them for the copy, that the generation is the one
//! recorded. So no access touches memory after its invalidation, deregistration, remapping
//! or the re-registration that took its right away has returned (a fast-registration MR's
//! pages belong to the kernel consumer again then), and a message that straddles one fails
//! as rxe's per-packet rkey checks make it fail.

use crate::{
    device::RrxeDev,
    ext::{
        bytes::Bytes,
        error::eopnotsupp,
        net::page_piece::PagePiece,
        rdma::{
            device::Device,
            mr::{AccessError, KernelMem, PdId, SgMap, Umem, UserPages},
            types::{AccessFlags, MrReregFlags, MrType},
        },
        sync::SpinLockBh,
        xarray::IdTable,
    },
    keys::Keys,
    new_spinlock_bh,
    params::{MAX_FAST_REG_PAGES, MAX_MR_INDEX, MIN_MR_INDEX},
};
use core::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use kernel::{prelude::*, sync::Arc};

use crate::ext::rdma::mr::AtomicOp;

const LOCAL_WRITE: u32 = AccessFlags::LOCAL_WRITE.bits();
const REMOTE_READ: u32 = AccessFlags::REMOTE_READ.bits();
const REMOTE_WRITE: u32 = AccessFlags::REMOTE_WRITE.bits();
const REMOTE_ATOMIC: u32 = AccessFlags::REMOTE_ATOMIC.bits();
const MW_BIND: u32 = AccessFlags::MW_BIND.bits();
const REMOTE: u32 = REMOTE_READ | REMOTE_WRITE | REMOTE_ATOMIC;

/// The access rights an MR may have (rxe's `RXE_ACCESS_SUPPORTED_MR`).
const SUPPORTED_MR: u32 = REMOTE
    | LOCAL_WRITE
    | MW_BIND
    | AccessFlags::ON_DEMAND.bits()
    | AccessFlags::FLUSH_GLOBAL.bits()
    | AccessFlags::FLUSH_PERSISTENT.bits()
    | AccessFlags::OPTIONAL.bits();

/// Who is asking: a QP's PD and number, for key checks.
#[derive(Clone, Copy)]
pub(crate) struct Owner {
    pub(crate) pd: PdId,
    pub(crate) qpn: u32,
}

/// Why memory named by a key cannot be used.
///
/// Intended mapping by the engine: for local keys (SGEs of a WQE) `Range` on a receive
/// is `IB_WC_LOC_LEN_ERR`, everything else `IB_WC_LOC_PROT_ERR`; for LOCAL_INV and REG_MR
/// work requests `IB_WC_LOC_QP_OP_ERR`, for BIND_MW `IB_WC_MW_BIND_ERR` (as rxe); for
/// remote keys a NAK "remote access error" (`IB_WC_REM_ACCESS_ERR` at the requester),
/// except `Align` on an atomic, a NAK "invalid request"; a failed SEND with invalidate is
/// a NAK "invalid request" too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemError {
    /// No such key, or a stale 8-bit key part.
    Key,
    /// The key belongs to another PD.
    Pd,
    /// A type 2B window bound to another QP.
    Qp,
    /// The access is not allowed by the key's rights.
    Access,
    /// The range is outside the region or window.
    Range,
    /// The region or window is not in a state that allows the operation (not valid,
    /// not free, windows bound, wrong kind).
    State,
    /// An atomic target is not 8-byte aligned.
    Align,
}

impl From<AccessError> for MemError {
    fn from(e: AccessError) -> Self {
        match e {
            AccessError::Range => MemError::Range,
            AccessError::Align => MemError::Align,
            AccessError::ReadOnly => MemError::Access,
        }
    }
}

/// The state of an MR (IBA 10.6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Usable.
    Valid,
    /// A fast-registration MR not registered (yet, or since invalidation or a new
    /// mapping).
    Free,
    /// Deregistered.
    Invalid,
}

/// The memory behind an MR.
enum Memory {
    /// Deregistered: the memory taken away, user memory unpinned (at `dereg_mr`, see
    /// [`Mr`]'s drop).
    Released,
    /// Pinned user memory; offsets from the MR's iova.
    User(UserPages),
    /// The DMA MR: all kernel memory, by kernel virtual address (iova = address).
    Dma(KernelMem),
    /// A fast-registration MR: the kernel virtual addresses of its pages (of the size
    /// `map_mr_sg` chose), `MrState::npages` of them set.
    Fast {
        mem: KernelMem,
        pages: KVec<AtomicU64>,
    },
}

/// What may change in an MR, and its memory: reached only under the MR's lock, so that
/// deregistration can take the memory away once no access is in progress.
struct MrState {
    mem: Memory,
    /// The key (lkey = rkey).
    key: u32,
    state: State,
    /// Access rights (`IB_ACCESS_*`).
    access: u32,
    pd: PdId,
    /// The I/O virtual address of the first byte and the length.
    iova: u64,
    length: u64,
    /// Fast registration: log2 of the page size, and the pages set.
    page_shift: u32,
    npages: usize,
    /// Memory windows bound to the MR (it cannot be invalidated, mapped again, re-registered
    /// or deregistered meanwhile).
    mws: u32,
    /// Bumped by every change that ends the accesses begun before it (see the module
    /// documentation).
    gen: u64,
}

impl MrState {
    /// Whether key `key` may use the MR with rights `access` (`IB_ACCESS_*`; 0 to read
    /// locally) for a QP of PD `pd`: the key, the state, the PD and the rights, in that
    /// order.
    fn check(&self, key: u32, pd: PdId, access: u32) -> Result<(), MemError> {
        if self.key != key {
            return Err(MemError::Key);
        }
        if self.state != State::Valid {
            return Err(MemError::State);
        }
        if self.pd != pd {
            return Err(MemError::Pd);
        }
        if self.access & access != access {
            return Err(MemError::Access);
        }
        Ok(())
    }

    /// As [`Self::check`], then whether the `len` bytes at `iova` are in the MR (the
    /// whole MR, as a reference's window locates them, `mem::MemRef`): the MR as it is
    /// now, for [`Self::run`].
    fn check_range(
        &self,
        key: u32,
        pd: PdId,
        access: u32,
        iova: u64,
        len: u64,
    ) -> Result<Mapping, MemError> {
        self.check(key, pd, access)?;
        let off = iova.checked_sub(self.iova).ok_or(MemError::Range)?;
        let end = off.checked_add(len).ok_or(MemError::Range)?;
        if end > self.length {
            return Err(MemError::Range);
        }
        Ok(self.mapping())
    }

    /// Runs `f` on the `len` bytes at `iova`, which [`Self::check_range`] checked and
    /// mapped as `map`, under the same hold of the lock.
    fn run<R>(
        &self,
        map: &Mapping,
        iova: u64,
        len: u64,
        f: impl FnOnce(&Span<'_>) -> Result<R, MemError>,
    ) -> Result<R, MemError> {
        let mem = MrMem {
            mem: &self.mem,
            map,
        };
        f(&Span::new(&mem, iova, len))
    }

    /// Ends the accesses begun so far.
    fn bump(&mut self) {
        self.gen = self.gen.wrapping_add(1);
    }

    /// The MR as it is now (see [`Mapping`]).
    fn mapping(&self) -> Mapping {
        Mapping {
            base: self.iova,
            page_shift: self.page_shift,
            npages: self.npages,
            gen: self.gen,
        }
    }
}

/// What the data path finds by key.
#[pin_data]
pub(crate) struct MrShared {
    #[pin]
    st: SpinLockBh<MrState>,
}

/// The part of an MR a reference to memory ([`crate::mem::MemRef`]) may use, in the
/// caller's address space: `[lo, lo + len)` at MR iova `iova + delta`.
#[derive(Clone, Copy)]
pub(crate) struct Window {
    pub(crate) lo: u64,
    pub(crate) len: u64,
    pub(crate) delta: u64,
}

/// An MR as a reference to its memory recorded it (by [`grant`], or for a window by
/// [`MrShared::mapping`]).
#[derive(Clone, Copy)]
pub(crate) struct Mapping {
    /// The MR's iova.
    base: u64,
    /// Fast registration: log2 of the page size and the pages set.
    page_shift: u32,
    npages: usize,
    /// The generation recorded: accesses fail once it changed.
    gen: u64,
}

/// The MR `key` names (an lkey, or an rkey of an MR), checked for a use with rights
/// `access` (`IB_ACCESS_*`; 0 to read locally) by `keys`' QP: the MR, the part of it the
/// key grants, and the MR as it was when checked. The rights are checked and the MR
/// recorded under one hold of its lock: a rereg or a new registration in between would
/// otherwise let an access checked against the old rights through to the new one. The MR
/// is looked for in the QP's cache first ([`crate::keys::MrCache`]).
pub(crate) fn grant(
    keys: Keys<'_>,
    key: u32,
    access: u32,
) -> Result<(Arc<MrShared>, Window, Mapping), MemError> {
    let pd = keys.who.pd;
    if let Some(mr) = keys.mrs.take(key) {
        // A stale entry is dropped here.
        if let Ok((win, map)) = mr.granted(key, pd, access) {
            keys.mrs.keep(key, mr.clone());
            return Ok((mr, win, map));
        }
    }
    let mr = lookup(keys.dev, key)?;
    let (win, map) = mr.granted(key, pd, access)?;
    keys.mrs.keep(key, mr.clone());
    Ok((mr, win, map))
}

/// Runs `f` on the `len` bytes at `iova` of the MR that `key` names (an lkey, or an rkey of
/// an MR), checked as [`grant`] checks it for a use with rights `access` by `keys`' QP,
/// and the range last ([`MemError::Range`]). The checks and the access run under one hold
/// of the MR's lock: nothing comes between them (a one-shot access, where [`grant`]
/// records the MR for accesses to come). The MR is looked for in the QP's cache first.
pub(crate) fn with_key<R>(
    keys: Keys<'_>,
    key: u32,
    access: u32,
    iova: u64,
    len: u64,
    f: impl FnOnce(&Span<'_>) -> Result<R, MemError>,
) -> Result<R, MemError> {
    let pd = keys.who.pd;
    if let Some(mr) = keys.mrs.take(key) {
        let st = mr.st.lock();
        if let Ok(map) = st.check_range(key, pd, access, iova, len) {
            let r = st.run(&map, iova, len, f);
            drop(st);
            keys.mrs.keep(key, mr);
            return r;
        }
        // Stale: dropped.
    }
    let mr = lookup(keys.dev, key)?;
    let st = mr.st.lock();
    let map = st.check_range(key, pd, access, iova, len)?;
    let r = st.run(&map, iova, len, f);
    drop(st);
    keys.mrs.keep(key, mr);
    r
}

/// The MR with the index of `key` (any 8-bit key part).
fn lookup(dev: &RrxeDev, key: u32) -> Result<Arc<MrShared>, MemError> {
    let index = key >> 8;
    if !(MIN_MR_INDEX..=MAX_MR_INDEX).contains(&index) {
        return Err(MemError::Key);
    }
    dev.mrs().get(index).ok_or(MemError::Key)
}

/// An MR to bind a window to (BIND_MW with `mr_lkey`): checked that it is valid, in `pd`,
/// allows binding, allows writes if the window does (`access`), and contains
/// `[addr, addr + length)` (also for a zero-based window, whose offset 0 is `addr`).
/// Counts the binding on success (see [`MrShared::unbind`]).
pub(crate) fn bind_target(
    dev: &RrxeDev,
    mr_lkey: u32,
    pd: PdId,
    addr: u64,
    length: u64,
    access: u32,
) -> Result<Arc<MrShared>, MemError> {
    let mr = lookup(dev, mr_lkey)?;
    {
        let mut st = mr.st.lock();
        // C10-73: the MR allows binding.
        st.check(mr_lkey, pd, MW_BIND)?;
        // C10-74: remote write or atomic rights need the MR's local write.
        if access & (REMOTE_WRITE | REMOTE_ATOMIC) != 0 && st.access & LOCAL_WRITE == 0 {
            return Err(MemError::Access);
        }
        // C10-75: zero-based or not, the window is `[addr, addr + length)` of the MR.
        let inside = addr >= st.iova
            && addr
                .checked_add(length)
                .is_some_and(|end| end - st.iova <= st.length);
        if !inside {
            return Err(MemError::Range);
        }
        st.mws += 1;
    }
    Ok(mr)
}

impl MrShared {
    /// Drops a binding counted by [`bind_target`].
    pub(crate) fn unbind(&self) {
        let mut st = self.st.lock();
        st.mws = st.mws.saturating_sub(1);
    }

    /// The part of the MR a window bound to `[addr, addr + length)` grants: at
    /// `[addr, addr + length)`, or at `[0, length)` if `zero_based` (offset 0 is `addr`).
    pub(crate) fn window(addr: u64, length: u64, zero_based: bool) -> Window {
        if zero_based {
            Window {
                lo: 0,
                len: length,
                delta: addr,
            }
        } else {
            Window {
                lo: addr,
                len: length,
                delta: 0,
            }
        }
    }
}

impl MrShared {
    /// What [`grant`] returns for the MR, if `key` may use it with rights `access` for a
    /// QP of PD `pd`: the part the key grants and the MR as it is now.
    fn granted(&self, key: u32, pd: PdId, access: u32) -> Result<(Window, Mapping), MemError> {
        let st = self.st.lock();
        st.check(key, pd, access)?;
        let win = Window {
            lo: st.iova,
            len: st.length,
            delta: 0,
        };
        Ok((win, st.mapping()))
    }

    /// The MR as it is now, for accesses through a window bound to it that must fail once it
    /// changes; fails if it is not valid. Checks no rights: the window's grant calls it
    /// under the window's lock, having checked the binding's (see [`crate::mw::grant`]).
    pub(crate) fn mapping(&self) -> Result<Mapping, MemError> {
        let st = self.st.lock();
        if st.state != State::Valid {
            return Err(MemError::State);
        }
        Ok(st.mapping())
    }

    /// Runs `f` with access to the memory if the MR is still as `map` recorded it, holding
    /// its lock so that no invalidation, deregistration or remapping overtakes it.
    pub(crate) fn with_mem<R>(
        &self,
        map: &Mapping,
        f: impl FnOnce(&MrMem<'_>) -> Result<R, MemError>,
    ) -> Result<R, MemError> {
        let st = self.st.lock();
        if st.gen != map.gen || st.state != State::Valid {
            return Err(MemError::State);
        }
        let r = f(&MrMem { mem: &st.mem, map });
        drop(st);
        r
    }
}

/// Access to an MR's memory, by MR iova, given only by [`MrShared::with_mem`] and
/// [`with_key`] (under the MR's lock, while it is as recorded).
pub(crate) struct MrMem<'a> {
    mem: &'a Memory,
    map: &'a Mapping,
}

impl MrMem<'_> {
    /// Calls `f(kernel address, range in the buffer)` for each piece of the `len` bytes
    /// at MR iova `at` of a fast-registration MR.
    fn fast_walk(
        &self,
        pages: &KVec<AtomicU64>,
        at: u64,
        len: usize,
        mut f: impl FnMut(u64, core::ops::Range<usize>) -> Result<(), AccessError>,
    ) -> Result<(), MemError> {
        let shift = self.map.page_shift;
        let size = 1u64.checked_shl(shift).ok_or(MemError::Range)?;
        let first = self.map.base.checked_shr(shift).ok_or(MemError::Range)?;
        let mut at = at;
        let mut done = 0usize;
        while done < len {
            let index = (at >> shift).checked_sub(first).ok_or(MemError::Range)?;
            let index = usize::try_from(index).map_err(|_| MemError::Range)?;
            if index >= self.map.npages {
                return Err(MemError::Range);
            }
            let page = pages
                .get(index)
                .ok_or(MemError::Range)?
                .load(Ordering::Relaxed);
            let in_page = at & (size - 1);
            let n = usize::try_from(size - in_page).map_or(len - done, |n| n.min(len - done));
            f(
                page.checked_add(in_page).ok_or(MemError::Range)?,
                done..done + n,
            )?;
            done += n;
            at = at.checked_add(n as u64).ok_or(MemError::Range)?;
        }
        Ok(())
    }

    /// The offset of MR iova `at` in pinned user memory.
    fn user_offset(&self, at: u64) -> Result<u64, MemError> {
        at.checked_sub(self.map.base).ok_or(MemError::Range)
    }

    /// Copies from MR iova `at` into `dst`.
    pub(crate) fn read(&self, at: u64, dst: &mut [u8]) -> Result<(), MemError> {
        match self.mem {
            Memory::User(u) => u.read_at(self.user_offset(at)?, dst)?,
            Memory::Dma(m) => m.read_at(at, dst)?,
            Memory::Fast { mem, pages } => self.fast_walk(pages, at, dst.len(), |addr, r| {
                mem.read_at(addr, dst.get_mut(r).ok_or(AccessError::Range)?)
            })?,
            Memory::Released => return Err(MemError::State),
        }
        Ok(())
    }

    /// Copies `src` to MR iova `at`.
    pub(crate) fn write(&self, at: u64, src: Bytes<'_>) -> Result<(), MemError> {
        match self.mem {
            Memory::User(u) => u.write_at(self.user_offset(at)?, src)?,
            Memory::Dma(m) => m.write_at(at, src)?,
            Memory::Fast { mem, pages } => self.fast_walk(pages, at, src.len(), |addr, r| {
                mem.write_at(addr, src.get(r).ok_or(AccessError::Range)?)
            })?,
            Memory::Released => return Err(MemError::State),
        }
        Ok(())
    }

    /// Calls `take` with a reference on each page piece of the `len` bytes at MR iova `at`,
    /// in order, until it refuses one; returns whether it took them all, `false` also if
    /// the memory is not pinned user pages (nothing taken then: kernel memory is copied).
    fn pieces(
        &self,
        at: u64,
        len: usize,
        take: impl FnMut(PagePiece) -> bool,
    ) -> Result<bool, MemError> {
        match self.mem {
            Memory::User(u) => Ok(u.pieces_at(self.user_offset(at)?, len, take)?),
            Memory::Dma(_) | Memory::Fast { .. } => Ok(false),
            Memory::Released => Err(MemError::State),
        }
    }

    /// Performs `op` on the 8 bytes at MR iova `at`; returns the value found.
    fn atomic(&self, at: u64, op: AtomicOp) -> Result<u64, MemError> {
        let orig = match self.mem {
            Memory::User(u) => u.atomic_at(self.user_offset(at)?, op)?,
            Memory::Dma(m) => m.atomic_at(at, op)?,
            Memory::Fast { mem, pages } => {
                let mut orig = 0;
                self.fast_walk(pages, at, 8, |addr, r| {
                    if r.len() != 8 {
                        return Err(AccessError::Align);
                    }
                    orig = mem.atomic_at(addr, op)?;
                    Ok(())
                })?;
                orig
            }
            Memory::Released => return Err(MemError::State),
        };
        Ok(orig)
    }
}

/// Invalidates the fast-registration MR `key` names (LOCAL_INV, SEND with invalidate) for
/// a QP of PD `pd`: it becomes free.
pub(crate) fn invalidate(dev: &RrxeDev, key: u32, pd: PdId) -> Result<(), MemError> {
    let mr = lookup(dev, key)?;
    let mut st = mr.st.lock();
    if !matches!(st.mem, Memory::Fast { .. }) {
        return Err(MemError::State);
    }
    if st.key != key {
        return Err(MemError::Key);
    }
    if st.pd != pd {
        return Err(MemError::Pd);
    }
    if st.mws != 0 || st.state == State::Invalid {
        return Err(MemError::State);
    }
    st.state = State::Free;
    st.bump();
    Ok(())
}

/// Registers the fast-registration MR whose lkey is `mr_lkey` (REG_MR by a QP of PD
/// `pd`) with the key `new_key` (only its 8-bit part may differ) and `access`, over the
/// pages `map_mr_sg` mapped, at `iova`: the consumer may have changed the iova
/// `map_mr_sg` gave (NFS/RDMA does) but not its offset in the first page, which the pages
/// are mapped for. The MR must be free.
pub(crate) fn fast_reg(
    dev: &RrxeDev,
    pd: PdId,
    mr_lkey: u32,
    new_key: u32,
    access: u32,
    iova: u64,
) -> Result<(), MemError> {
    if new_key >> 8 != mr_lkey >> 8 {
        return Err(MemError::Key);
    }
    let mr = lookup(dev, mr_lkey)?;
    let mut st = mr.st.lock();
    if !matches!(st.mem, Memory::Fast { .. }) {
        return Err(MemError::State);
    }
    if access & !SUPPORTED_MR != 0 {
        return Err(MemError::Access);
    }
    if st.state != State::Free {
        return Err(MemError::State);
    }
    if st.pd != pd {
        return Err(MemError::Pd);
    }
    let page_mask = 1u64
        .checked_shl(st.page_shift)
        .ok_or(MemError::Range)?
        .wrapping_sub(1);
    if iova & page_mask != st.iova & page_mask || iova.checked_add(st.length).is_none() {
        return Err(MemError::Range);
    }
    st.iova = iova;
    st.key = new_key;
    st.access = access;
    st.state = State::Valid;
    st.bump();
    Ok(())
}

/// The MRs of a device by index.
pub(crate) type MrTable = IdTable<MrShared>;

/// A memory region (the driver data of an `ib_mr`).
pub(crate) struct Mr {
    index: u32,
    table: Arc<MrTable>,
    /// Always `Some` until dropped.
    shared: Option<Arc<MrShared>>,
}

impl Drop for Mr {
    fn drop(&mut self) {
        drop(self.table.remove(self.index));
        let Some(shared) = self.shared.take() else {
            return;
        };
        // Taken under the lock, which every access holds: none is in progress, and every
        // later one finds the MR invalid.
        let mem = {
            let mut st = shared.st.lock();
            st.state = State::Invalid;
            st.bump();
            core::mem::replace(&mut st.mem, Memory::Released)
        };
        // Process context (dereg_mr): user memory is unpinned now, whoever still holds a
        // reference to the MR (a QP's cache, a message in progress).
        if let Memory::User(u) = &mem {
            u.release_in_place();
        }
        drop(mem);
        drop(shared);
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
    /// Adds an MR over `mem` in `pd` with `access`, `[iova, iova + length)` and `state`;
    /// returns it and its keys.
    fn add(
        dev: &Device<RrxeDev>,
        mem: Memory,
        pd: PdId,
        access: u32,
        iova: u64,
        length: u64,
        state: State,
    ) -> Result<(Self, u32, u32)> {
        let table = dev.data().mrs().clone();
        let index = table.reserve(MIN_MR_INDEX, MAX_MR_INDEX)?;
        let key = index << 8 | u32::from(dev.data().keys().next());
        let shared = Arc::pin_init(
            pin_init!(MrShared {
                st <- new_spinlock_bh!(
                    MrState {
                        mem,
                        key,
                        state,
                        access,
                        pd,
                        iova,
                        length,
                        page_shift: 0,
                        npages: 0,
                        mws: 0,
                        gen: 0,
                    },
                    "rrxe:mr"
                ),
            }),
            GFP_KERNEL,
        );
        let shared = match shared {
            Ok(shared) => shared,
            Err(e) => {
                table.unreserve(index);
                return Err(e);
            }
        };
        table.fill(index, shared.clone());
        Ok((
            Self {
                index,
                table,
                shared: Some(shared),
            },
            key,
            key,
        ))
    }

    fn shared(&self) -> Result<&MrShared> {
        self.shared.as_deref().ok_or(EINVAL)
    }

    /// Registers user memory.
    pub(crate) fn new_user(
        dev: &Device<RrxeDev>,
        pd: PdId,
        start: u64,
        length: u64,
        iova: u64,
        access: u32,
    ) -> Result<(Self, u32, u32)> {
        if access & AccessFlags::ON_DEMAND.bits() != 0 {
            return Err(eopnotsupp());
        }
        let umem = Umem::get(dev, start, length, access)?;
        let pages = UserPages::new(umem, length, dev.data().wq().clone())?;
        Self::add(
            dev,
            Memory::User(pages),
            pd,
            access,
            iova,
            length,
            State::Valid,
        )
    }

    /// The DMA MR.
    pub(crate) fn new_dma(
        dev: &Device<RrxeDev>,
        pd: PdId,
        access: u32,
        mem: KernelMem,
    ) -> Result<(Self, u32, u32)> {
        Self::add(dev, Memory::Dma(mem), pd, access, 0, u64::MAX, State::Valid)
    }

    /// A fast-registration MR of at most `max_num_sg` pages, free.
    pub(crate) fn new_fast(
        dev: &Device<RrxeDev>,
        pd: PdId,
        mr_type: u32,
        max_num_sg: u32,
        mem: KernelMem,
    ) -> Result<(Self, u32, u32)> {
        if mr_type != MrType::MemReg.raw() || max_num_sg > MAX_FAST_REG_PAGES {
            return Err(EINVAL);
        }
        let n = max_num_sg as usize;
        let mut pages = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            pages.push(AtomicU64::new(0), GFP_KERNEL)?;
        }
        Self::add(
            dev,
            Memory::Fast { mem, pages },
            pd,
            REMOTE,
            0,
            0,
            State::Free,
        )
    }

    /// Maps a fast-registration MR to the scatterlist of `map` (`map_mr_sg`); a valid one
    /// becomes free until the next REG_MR. Refused with `EBUSY` while windows are bound.
    pub(crate) fn map_sg(&self, map: SgMap<'_>) -> Result<i32> {
        let shared = self.shared()?;
        let size = map.page_size();
        {
            let mut st = shared.st.lock();
            if !matches!(st.mem, Memory::Fast { .. }) || !size.is_power_of_two() {
                return Err(EINVAL);
            }
            if st.mws != 0 {
                return Err(EBUSY);
            }
            // A consumer may map an MR again while it is still valid (iSER does, and
            // invalidates it in the chain with the REG_MR): its key must not reach the
            // pages being set for the next registration.
            if st.state == State::Valid {
                st.state = State::Free;
            }
            st.page_shift = size.trailing_zeros();
            st.npages = 0;
            st.bump();
        }
        // Calls `set_page` for each page.
        let mapped = map.map()?;
        let mut st = shared.st.lock();
        st.iova = mapped.iova;
        st.length = mapped.length;
        // The iova and the length changed.
        st.bump();
        Ok(mapped.count)
    }

    /// Records the next page of a mapping (its kernel virtual address).
    pub(crate) fn set_page(&self, addr: u64) -> Result {
        let shared = self.shared()?;
        let mut guard = shared.st.lock();
        let st = &mut *guard;
        let Memory::Fast { pages, .. } = &st.mem else {
            return Err(EINVAL);
        };
        pages
            .get(st.npages)
            .ok_or(ENOMEM)?
            .store(addr, Ordering::Relaxed);
        st.npages += 1;
        Ok(())
    }

    /// Changes the PD or the access of a user MR (`rereg_user_mr`; rxe supports only these
    /// two, not a new translation). Refused with `EBUSY` while memory windows are bound to
    /// it, as deregistration is (a rereg is a deregistration followed by a registration): it
    /// would take from them what [`bind_target`] checked (the PD, `MW_BIND`,
    /// `LOCAL_WRITE`), which their accesses do not check again. rxe allows it.
    pub(crate) fn rereg(&self, flags: u32, access: u32, pd: Option<PdId>) -> Result {
        let rereg_pd = MrReregFlags::PD.bits();
        let rereg_access = MrReregFlags::ACCESS.bits();
        if flags & !(rereg_pd | rereg_access) != 0 {
            return Err(eopnotsupp());
        }
        let shared = self.shared()?;
        let mut st = shared.st.lock();
        let Memory::User(pages) = &st.mem else {
            return Err(EINVAL);
        };
        pages.umem().ok_or(EINVAL)?.check_rereg(flags, access)?;
        if flags & rereg_access != 0 && access & !SUPPORTED_MR != 0 {
            return Err(eopnotsupp());
        }
        let pd = if flags & rereg_pd != 0 {
            Some(pd.ok_or(EINVAL)?)
        } else {
            None
        };
        if st.mws != 0 {
            return Err(EBUSY);
        }
        if let Some(pd) = pd {
            st.pd = pd;
        }
        if flags & rereg_access != 0 {
            st.access = access;
        }
        st.bump();
        Ok(())
    }

    /// Deregisters the MR (`dereg_mr`, before it is dropped): refused with `EBUSY` while
    /// memory windows are bound to it (IBA 10.6.7.2.6; rxe refuses with `EINVAL`), else it
    /// becomes invalid, so that no window can be bound to it any more.
    pub(crate) fn retire(&self) -> Result {
        let shared = self.shared()?;
        let mut st = shared.st.lock();
        if st.mws != 0 {
            return Err(EBUSY);
        }
        st.state = State::Invalid;
        st.bump();
        Ok(())
    }
}

/// The bytes of an MR that a one-shot access was checked for ([`with_key`], or a window's
/// [`crate::mem::remote_once`]): `len` of them from MR iova `at`. Every access through it
/// lies within them, from their start.
#[derive(Clone, Copy)]
pub(crate) struct Span<'a> {
    mem: &'a MrMem<'a>,
    at: u64,
    len: u64,
}

impl<'a> Span<'a> {
    /// The `len` bytes at MR iova `at` of `mem`: a range checked for the access to come.
    pub(crate) fn new(mem: &'a MrMem<'a>, at: u64, len: u64) -> Self {
        Self { mem, at, len }
    }

    /// `Range` unless the span holds `n` bytes.
    fn holds(&self, n: usize) -> Result<(), MemError> {
        if n as u64 <= self.len {
            Ok(())
        } else {
            Err(MemError::Range)
        }
    }

    /// Copies the start of the span into `dst`.
    pub(crate) fn read(&self, dst: &mut [u8]) -> Result<(), MemError> {
        self.holds(dst.len())?;
        self.mem.read(self.at, dst)
    }

    /// Copies `src` to the start of the span.
    pub(crate) fn write(&self, src: Bytes<'_>) -> Result<(), MemError> {
        self.holds(src.len())?;
        self.mem.write(self.at, src)
    }

    /// Performs `op` on the span, which is 8 bytes; returns the value found.
    pub(crate) fn atomic(&self, op: AtomicOp) -> Result<u64, MemError> {
        if self.len != 8 {
            return Err(MemError::Range);
        }
        self.mem.atomic(self.at, op)
    }

    /// Hands `take` a reference on each page piece of the span, in order, until it refuses
    /// one; whether it took them all (`false` also if the memory is not pinned user pages).
    pub(crate) fn pieces(&self, take: impl FnMut(PagePiece) -> bool) -> Result<bool, MemError> {
        let len = usize::try_from(self.len).map_err(|_| MemError::Range)?;
        self.mem.pieces(self.at, len, take)
    }
}
