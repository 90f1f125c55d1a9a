// SPDX-License-Identifier: GPL-2.0

//! The data path's memory layer: from a key to memory. [`resolve`] checks an rkey from the
//! network, which names an MR ([`crate::mr`]) or a bound memory window ([`crate::mw`]),
//! and returns a [`MemRef`] to copy through for a message, or [`remote_once`] makes one
//! access at once (a write or an atomic); [`local`] checks the lkey of a local SGE, which
//! names an MR, and makes one access under the same hold of its lock; [`invalidate`] ends
//! a key's validity. A [`MemRef`] checks before every access, under the locks of the
//! window and the MR, that neither changed since it was made (see [`crate::mr`]). Everything here works in process context and softirq: no sleeping, no
//! allocation.

use crate::{
    device::RrxeDev,
    keys::Keys,
    mr::{self, Mapping, MrMem, MrShared, Span, Window},
    mw::{self, Via},
    proto::verbs::Access,
};
use kernel::sync::Arc;

pub(crate) use crate::ext::net::page_piece::PagePiece;

pub(crate) use crate::{
    ext::{bytes::Bytes, rdma::mr::AtomicOp},
    mr::{MemError, Owner},
};

/// A checked reference to memory: copies within the range [`resolve`] checked
/// (or, for long messages, the whole window it found).
pub(crate) struct MemRef {
    mr: Arc<MrShared>,
    /// The window the access goes through, if any.
    via: Option<Via>,
    win: Window,
    /// The MR as it was when resolved.
    map: Mapping,
}

/// Finds the memory the rkey `key` names (an MR or a bound memory window) for an access of
/// `len` bytes at `iova` with rights `access` by `keys`' QP. The range is checked last:
/// [`MemError::Range`] means that every other check passed.
pub(crate) fn resolve(
    keys: Keys<'_>,
    key: u32,
    iova: u64,
    len: u64,
    access: Access,
) -> Result<MemRef, MemError> {
    let (mr, via, win, map) = if mw::is_index(key >> 8) {
        let who = keys.who;
        let (mr, via, win, map) = mw::grant(keys.dev, key, who.pd, who.qpn, access.0)?;
        (mr, Some(via), win, map)
    } else {
        let (mr, win, map) = mr::grant(keys, key, access.0)?;
        (mr, None, win, map)
    };
    let this = MemRef { mr, via, win, map };
    this.locate(iova, len)?;
    Ok(this)
}

/// Runs `f` once on the memory the rkey `key` names for an access of `len` bytes at
/// `iova` with rights `access` by `keys`' QP: checked as [`resolve`] checks it (the range last,
/// [`MemError::Range`]), then accessed as through the [`MemRef`] it returns, within the
/// range checked. A one-shot access (a one-packet RDMA WRITE, an atomic): for an MR the
/// checks and the access run under one hold of its lock ([`mr::with_key`]).
pub(crate) fn remote_once<R>(
    keys: Keys<'_>,
    key: u32,
    iova: u64,
    len: u64,
    access: Access,
    f: impl FnOnce(&RemoteSpan<'_>) -> Result<R, MemError>,
) -> Result<R, MemError> {
    if mw::is_index(key >> 8) {
        let mem = resolve(keys, key, iova, len, access)?;
        let at = mem.locate(iova, len)?;
        return mem.checked(|m| f(&RemoteSpan(Span::new(m, at, len))));
    }
    mr::with_key(keys, key, access.0, iova, len, |span| f(&RemoteSpan(*span)))
}

/// A one-shot access to memory a remote key names ([`remote_once`]): writes and atomics
/// within the range checked, never page references (memory a remote key names is never
/// sent by reference: see rrxe.rst, Security model).
pub(crate) struct RemoteSpan<'a>(Span<'a>);

impl RemoteSpan<'_> {
    /// Copies `src` to the start of the range.
    pub(crate) fn write(&self, src: Bytes<'_>) -> Result<(), MemError> {
        self.0.write(src)
    }

    /// Performs `op` on the range, which is 8 bytes; returns the value found.
    pub(crate) fn atomic(&self, op: AtomicOp) -> Result<u64, MemError> {
        self.0.atomic(op)
    }
}

/// Runs `f` on the `len` bytes at `iova` of the memory the lkey `key` names, for an access
/// with rights `access` (none to read locally) by `keys`' QP: an MR (a window's key is no lkey),
/// checked as [`mr::grant`] checks it and the range last ([`MemError::Range`]), the access
/// made within the range under the same hold of the MR's lock as the checks
/// ([`mr::with_key`]).
pub(crate) fn local<R>(
    keys: Keys<'_>,
    key: u32,
    iova: u64,
    len: u64,
    access: Access,
    f: impl FnOnce(&Span<'_>) -> Result<R, MemError>,
) -> Result<R, MemError> {
    // An lkey never names a window.
    if mw::is_index(key >> 8) {
        return Err(MemError::Key);
    }
    mr::with_key(keys, key, access.0, iova, len, f)
}

/// Invalidates the MR or memory window `key` names (LOCAL_INV, SEND with invalidate) for
/// `who`: a fast-registration MR becomes free, a type 2B window unbound.
pub(crate) fn invalidate(dev: &RrxeDev, key: u32, who: Owner) -> Result<(), MemError> {
    if mw::is_index(key >> 8) {
        mw::invalidate(dev, key, who.pd, who.qpn)
    } else {
        mr::invalidate(dev, key, who.pd)
    }
}

impl MemRef {
    /// Runs `f` (an access) if the window and the MR are still as they were when `self`
    /// was made, holding their locks so that no invalidation overtakes it.
    fn checked<R>(&self, f: impl FnOnce(&MrMem<'_>) -> Result<R, MemError>) -> Result<R, MemError> {
        let in_mr = || self.mr.with_mem(&self.map, f);
        match &self.via {
            Some(via) => via.checked(in_mr),
            None => in_mr(),
        }
    }

    /// The MR iova of the `len` bytes at `iova`, if they are in the window.
    fn locate(&self, iova: u64, len: u64) -> Result<u64, MemError> {
        let off = iova.checked_sub(self.win.lo).ok_or(MemError::Range)?;
        let end = off.checked_add(len).ok_or(MemError::Range)?;
        if end > self.win.len {
            return Err(MemError::Range);
        }
        iova.checked_add(self.win.delta).ok_or(MemError::Range)
    }

    /// Copies from `iova` into `dst`.
    pub(crate) fn read(&self, iova: u64, dst: &mut [u8]) -> Result<(), MemError> {
        let at = self.locate(iova, dst.len() as u64)?;
        self.checked(|m| m.read(at, dst))
    }

    /// Copies `src` to `iova`.
    pub(crate) fn write(&self, iova: u64, src: Bytes<'_>) -> Result<(), MemError> {
        let at = self.locate(iova, src.len() as u64)?;
        self.checked(|m| m.write(at, src))
    }
}
