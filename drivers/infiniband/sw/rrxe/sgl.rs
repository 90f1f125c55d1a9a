// SPDX-License-Identifier: GPL-2.0

//! Copies between packets and the memory a scatter/gather list names, each element checked
//! against its local key.

use crate::{
    keys::Keys,
    mem::{local, Bytes, MemError, PagePiece},
    proto::verbs::Access,
    wqe::Sge,
};

/// Calls `f(sge, offset in the SGE, range in the buffer)` for each piece of `len` bytes
/// starting `offset` bytes into the list; `Range` if the list is too short.
fn walk(
    sges: &[Sge],
    offset: u64,
    len: usize,
    mut f: impl FnMut(&Sge, u64, core::ops::Range<usize>) -> Result<(), MemError>,
) -> Result<(), MemError> {
    let mut skip = offset;
    let mut done = 0usize;
    for sge in sges {
        if done == len {
            break;
        }
        let sl = u64::from(sge.length);
        if skip >= sl {
            skip -= sl;
            continue;
        }
        let avail = usize::try_from(sl - skip).unwrap_or(usize::MAX);
        let n = avail.min(len - done);
        f(sge, skip, done..done + n)?;
        done += n;
        skip = 0;
    }
    if done == len {
        Ok(())
    } else {
        Err(MemError::Range)
    }
}

/// Copies `dst.len()` bytes from the list, starting `offset` bytes into it.
pub(crate) fn read(
    keys: Keys<'_>,
    sges: &[Sge],
    offset: u64,
    dst: &mut [u8],
) -> Result<(), MemError> {
    let len = dst.len();
    walk(sges, offset, len, |sge, off, range| {
        let n = range.len() as u64;
        let va = sge.addr.checked_add(off).ok_or(MemError::Range)?;
        let dst = dst.get_mut(range).ok_or(MemError::Range)?;
        local(keys, sge.lkey, va, n, Access(0), |m| m.read(dst))
    })
}

/// Hands `take` a reference on each page piece of `len` bytes of the list, starting
/// `offset` bytes into it, in order, each element checked as for [`read`]; returns whether
/// it took them all, `false` also at the first element not in pinned user pages. The
/// pieces keep the pages allocated, not the key valid: they are for the local payload of
/// a request, which a client that deregisters its memory during the send only changes for
/// itself, never for memory a remote key names (see rrxe.rst, Security model).
pub(crate) fn pieces(
    keys: Keys<'_>,
    sges: &[Sge],
    offset: u64,
    len: usize,
    mut take: impl FnMut(PagePiece) -> bool,
) -> Result<bool, MemError> {
    let mut all = true;
    walk(sges, offset, len, |sge, off, range| {
        if !all {
            return Ok(());
        }
        let n = range.len();
        let va = sge.addr.checked_add(off).ok_or(MemError::Range)?;
        all = local(keys, sge.lkey, va, n as u64, Access(0), |m| {
            m.pieces(&mut take)
        })?;
        Ok(())
    })?;
    Ok(all)
}

/// Copies `src` into the list, starting `offset` bytes into it.
pub(crate) fn write(
    keys: Keys<'_>,
    sges: &[Sge],
    offset: u64,
    src: Bytes<'_>,
) -> Result<(), MemError> {
    walk(sges, offset, src.len(), |sge, off, range| {
        let n = range.len() as u64;
        let va = sge.addr.checked_add(off).ok_or(MemError::Range)?;
        let src = src.get(range).ok_or(MemError::Range)?;
        local(keys, sge.lkey, va, n, Access::LOCAL_WRITE, |m| m.write(src))
    })
}
