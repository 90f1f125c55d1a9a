// SPDX-License-Identifier: GPL-2.0

//! Queues shared with userspace in the rxe ABI layout (`struct rxe_queue_buf`): a header
//! with the element size, the index mask and the producer and consumer indices, each in
//! its own cache line area, then a power-of-two number of power-of-two-sized elements.
//! One slot stays empty, so a queue of `n` slots holds `n - 1` elements.
//!
//! Indices are kept masked. The side the kernel owns (the producer of a CQ, the consumer
//! of a work queue) lives in a private copy; the other side is read from the shared page,
//! where userspace can write anything, and is masked before use.

use crate::ext::rdma::{
    mmap::MmapEntry,
    rxe_abi::{
        queue_buf::{CONSUMER, DATA, INDEX_MASK, LOG2_ELEM_SIZE, PRODUCER},
        MmInfo,
    },
    shared::SharedMem,
    udata::Udata,
};
use core::mem::size_of;
use kernel::{prelude::*, sync::Arc, types::FromBytes};

/// Most slots of a queue (2^20, the device's largest queue plus one).
const MAX_SLOTS: u32 = 1 << 21;
/// Largest element.
const MAX_ELEM_SIZE: usize = 4096;
/// Copies between queues go through a stack buffer of this size.
const CHUNK: usize = 128;

/// The memory and geometry of a queue.
#[derive(Clone)]
struct Ring {
    mem: Arc<SharedMem>,
    log2_elem: u32,
    mask: u32,
}

impl Ring {
    fn new(entries: u32, elem_size: usize) -> Result<Self> {
        let slots = entries
            .checked_add(1)
            .and_then(u32::checked_next_power_of_two)
            .filter(|s| *s <= MAX_SLOTS)
            .ok_or(EINVAL)?;
        let elem_size = elem_size
            .checked_next_power_of_two()
            .filter(|e| *e <= MAX_ELEM_SIZE)
            .ok_or(EINVAL)?;
        let log2_elem = elem_size.trailing_zeros();
        let size = (slots as usize)
            .checked_mul(elem_size)
            .and_then(|d| d.checked_add(DATA))
            .ok_or(EINVAL)?;
        let mem = SharedMem::new(size)?;
        mem.write(LOG2_ELEM_SIZE, &log2_elem.to_ne_bytes())?;
        mem.write(INDEX_MASK, &(slots - 1).to_ne_bytes())?;
        Ok(Self {
            mem,
            log2_elem,
            mask: slots - 1,
        })
    }

    /// The byte offset of element `index` (masked), plus `off` into it.
    fn offset(&self, index: u32, off: usize) -> usize {
        DATA + (((index & self.mask) as usize) << self.log2_elem) + off
    }

    fn elem_size(&self) -> usize {
        1 << self.log2_elem
    }
}

/// For a userspace object, makes a queue's memory mappable and says where (the `mminfo` of
/// create and resize responses); nothing for kernel consumers.
pub(crate) fn map(mem: &Arc<SharedMem>, udata: &Udata<'_>) -> Result<(Option<MmapEntry>, MmInfo)> {
    let mut mi = MmInfo::default();
    if !udata.is_user() {
        return Ok((None, mi));
    }
    let entry = MmapEntry::insert(udata, mem.clone())?;
    mi.offset = entry.offset();
    mi.size = u32::try_from(mem.size()).map_err(|_| EINVAL)?;
    Ok((Some(entry), mi))
}

/// Copies `count` elements of `from`, starting at index `first`, to the start of `to` (of
/// the same element size), through a small stack buffer.
fn copy_elems(from: &Ring, first: u32, to: &Ring, count: u32) -> Result {
    let mut buf = [0u8; CHUNK];
    for i in 0..count {
        let mut off = 0;
        while off < to.elem_size() {
            let n = CHUNK.min(to.elem_size() - off);
            let chunk = buf.get_mut(..n).ok_or(EINVAL)?;
            from.mem
                .read(from.offset(first.wrapping_add(i), off), chunk)?;
            to.mem.write(to.offset(i, off), chunk)?;
            off += n;
        }
    }
    Ok(())
}

/// A queue the kernel produces into and the client consumes (a CQ).
pub(crate) struct ToClient {
    ring: Ring,
    /// The producer index (private copy).
    prod: u32,
}

impl ToClient {
    /// A queue with room for at least `entries` elements of `elem_size` bytes.
    pub(crate) fn new(entries: u32, elem_size: usize) -> Result<Self> {
        Ok(Self {
            ring: Ring::new(entries, elem_size)?,
            prod: 0,
        })
    }

    /// How many elements fit.
    pub(crate) fn capacity(&self) -> u32 {
        self.ring.mask
    }

    /// The shared memory, for mapping it into the user context.
    pub(crate) fn mem(&self) -> &Arc<SharedMem> {
        &self.ring.mem
    }

    /// The consumer index (masked; the client's, read from the shared page).
    pub(crate) fn consumer(&self) -> u32 {
        self.ring.mem.load_acquire(CONSUMER) & self.ring.mask
    }

    /// Elements produced and not yet consumed.
    pub(crate) fn count(&self) -> u32 {
        self.prod.wrapping_sub(self.consumer()) & self.ring.mask
    }

    /// Appends `elem` (at most one element's bytes); `ENOSPC` when full.
    pub(crate) fn push(&mut self, elem: &[u8]) -> Result {
        if elem.len() > self.ring.elem_size() {
            return Err(EINVAL);
        }
        if self.count() == self.ring.mask {
            return Err(ENOSPC);
        }
        self.ring.mem.write(self.ring.offset(self.prod, 0), elem)?;
        self.prod = (self.prod + 1) & self.ring.mask;
        self.ring.mem.store_release(PRODUCER, self.prod);
        Ok(())
    }

    /// Appends an element that `write(memory, offset)` stores; `ENOSPC` when full.
    pub(crate) fn push_with(&mut self, write: impl FnOnce(&SharedMem, usize) -> Result) -> Result {
        if self.count() == self.ring.mask {
            return Err(ENOSPC);
        }
        write(&self.ring.mem, self.ring.offset(self.prod, 0))?;
        self.prod = (self.prod + 1) & self.ring.mask;
        self.ring.mem.store_release(PRODUCER, self.prod);
        Ok(())
    }

    /// For a kernel consumer: consumes the oldest element with `read(memory, offset)`;
    /// returns false when empty.
    pub(crate) fn pop_with(&self, read: impl FnOnce(&SharedMem, usize) -> Result) -> Result<bool> {
        let cons = self.consumer();
        if cons == self.prod {
            return Ok(false);
        }
        read(&self.ring.mem, self.ring.offset(cons, 0))?;
        self.ring
            .mem
            .store_release(CONSUMER, (cons + 1) & self.ring.mask);
        Ok(true)
    }

    /// Moves the unconsumed elements of `old`, oldest first, into this new, empty queue
    /// of the same element size. Fails with `EINVAL` if they do not fit. Does not allocate,
    /// so it may run under a spinlock.
    pub(crate) fn take_from(&mut self, old: &ToClient) -> Result {
        let count = old.count();
        if count > self.capacity() || self.ring.log2_elem != old.ring.log2_elem || self.prod != 0 {
            return Err(EINVAL);
        }
        let mut buf = [0u8; CHUNK];
        let cons = old.consumer();
        for i in 0..count {
            let mut off = 0;
            while off < self.ring.elem_size() {
                let n = CHUNK.min(self.ring.elem_size() - off);
                let chunk = buf.get_mut(..n).ok_or(EINVAL)?;
                old.ring
                    .mem
                    .read(old.ring.offset(cons.wrapping_add(i), off), chunk)?;
                self.ring.mem.write(self.ring.offset(i, off), chunk)?;
                off += n;
            }
        }
        self.prod = count;
        self.ring.mem.store_release(PRODUCER, count);
        Ok(())
    }
}

/// A queue the client produces into and the kernel consumes (a send or receive queue).
pub(crate) struct FromClient {
    ring: Ring,
    /// The consumer index (private copy).
    cons: u32,
}

impl FromClient {
    /// A queue with room for at least `entries` elements of `elem_size` bytes.
    pub(crate) fn new(entries: u32, elem_size: usize) -> Result<Self> {
        Ok(Self {
            ring: Ring::new(entries, elem_size)?,
            cons: 0,
        })
    }

    /// How many elements fit.
    pub(crate) fn capacity(&self) -> u32 {
        self.ring.mask
    }

    /// The shared memory, for mapping it into the user context.
    pub(crate) fn mem(&self) -> &Arc<SharedMem> {
        &self.ring.mem
    }

    /// Elements posted and not yet consumed.
    pub(crate) fn count(&self) -> u32 {
        let prod = self.ring.mem.load_acquire(PRODUCER) & self.ring.mask;
        prod.wrapping_sub(self.cons) & self.ring.mask
    }

    /// The consumer index (masked).
    pub(crate) fn consumer(&self) -> u32 {
        self.cons
    }

    /// The producer index (masked; untrusted, but any masked value is a valid slot).
    pub(crate) fn producer(&self) -> u32 {
        self.ring.mem.load_acquire(PRODUCER) & self.ring.mask
    }

    /// The index after `index`.
    pub(crate) fn next_index(&self, index: u32) -> u32 {
        index.wrapping_add(1) & self.ring.mask
    }

    /// How many slots lie from `from` up to `to`.
    pub(crate) fn distance(&self, from: u32, to: u32) -> u32 {
        to.wrapping_sub(from) & self.ring.mask
    }

    /// Whether an element has `len` bytes from `off`.
    pub(crate) fn holds(&self, off: usize, len: usize) -> bool {
        off.checked_add(len)
            .is_some_and(|end| end <= self.ring.elem_size())
    }

    /// Copies bytes of element `index`, from `off`, into `dst`.
    pub(crate) fn read_at(&self, index: u32, off: usize, dst: &mut [u8]) -> Result {
        if !self.holds(off, dst.len()) {
            return Err(EINVAL);
        }
        self.ring.mem.read(self.ring.offset(index, off), dst)
    }

    /// Reads a `T` at `off` of element `index`.
    pub(crate) fn read_obj_at<T: FromBytes>(&self, index: u32, off: usize) -> Result<T> {
        if !self.holds(off, size_of::<T>()) {
            return Err(EINVAL);
        }
        self.ring.mem.read_obj(self.ring.offset(index, off))
    }

    /// The producer side, for a kernel consumer posting work requests (under its own lock,
    /// apart from the side that consumes).
    pub(crate) fn producer_side(&self) -> Producer {
        Producer {
            ring: self.ring.clone(),
        }
    }

    /// A view of the indices for readers without the queue's lock ([`Watch`]).
    pub(crate) fn watch(&self) -> Watch {
        Watch {
            ring: self.ring.clone(),
        }
    }

    /// Copies bytes of the oldest element, from `off`, into `dst`.
    pub(crate) fn read_front(&self, off: usize, dst: &mut [u8]) -> Result {
        if !self.holds(off, dst.len()) {
            return Err(EINVAL);
        }
        self.ring.mem.read(self.ring.offset(self.cons, off), dst)
    }

    /// The posted, unconsumed elements as they are now (the producer index read once),
    /// for [`FromClient::take_posted`] to copy without this queue's lock.
    pub(crate) fn posted(&self) -> Posted {
        Posted {
            ring: self.ring.clone(),
            first: self.cons,
            count: self.count(),
        }
    }

    /// Copies the elements `posted` names, oldest first, into this new, empty queue of the
    /// same element size. Fails with `EINVAL` if they do not fit. The source queue must not
    /// be consumed meanwhile.
    pub(crate) fn take_posted(&mut self, posted: &Posted) -> Result {
        let count = posted.count;
        if count > self.capacity() || self.ring.log2_elem != posted.ring.log2_elem || self.cons != 0
        {
            return Err(EINVAL);
        }
        copy_elems(&posted.ring, posted.first, &self.ring, count)?;
        self.ring.mem.store_release(PRODUCER, count);
        Ok(())
    }

    /// Consumes every posted element at once (the producer index read once).
    pub(crate) fn drop_posted(&mut self) {
        self.cons = self.producer();
        self.ring.mem.store_release(CONSUMER, self.cons);
    }

    /// Consumes the oldest element.
    pub(crate) fn advance(&mut self) {
        self.cons = (self.cons + 1) & self.ring.mask;
        self.ring.mem.store_release(CONSUMER, self.cons);
    }
}

/// The indices of a [`FromClient`] queue as its shared page shows them, read without the
/// queue's lock: the producer index the client wrote and the consumer index the kernel
/// last published. Either may be stale, and the client can write anything there: only for
/// guesses that nothing depends on (where the engine runs, [`crate::task`]).
pub(crate) struct Watch {
    ring: Ring,
}

impl Watch {
    /// The producer index (masked).
    pub(crate) fn producer(&self) -> u32 {
        self.ring.mem.load_acquire(PRODUCER) & self.ring.mask
    }

    /// The consumer index (masked).
    pub(crate) fn consumer(&self) -> u32 {
        self.ring.mem.load_acquire(CONSUMER) & self.ring.mask
    }

    /// How many slots lie from `from` up to `to`.
    pub(crate) fn distance(&self, from: u32, to: u32) -> u32 {
        to.wrapping_sub(from) & self.ring.mask
    }
}

/// The posted elements of a [`FromClient`] queue at one moment (see
/// [`FromClient::posted`]).
pub(crate) struct Posted {
    ring: Ring,
    first: u32,
    count: u32,
}

/// The producer side of a [`FromClient`] queue of a kernel consumer: posting writes
/// elements and publishes the producer index; the consumer side runs concurrently.
/// Posters serialise among themselves.
pub(crate) struct Producer {
    ring: Ring,
}

impl Producer {
    /// The producer index.
    fn producer(&self) -> u32 {
        self.ring.mem.load_acquire(PRODUCER) & self.ring.mask
    }

    /// Whether the queue is full.
    pub(crate) fn is_full(&self) -> bool {
        let cons = self.ring.mem.load_acquire(CONSUMER) & self.ring.mask;
        self.producer().wrapping_sub(cons) & self.ring.mask == self.ring.mask
    }

    /// Writes the element at the producer index with `write(memory, offset)`.
    pub(crate) fn write_next(&self, write: impl FnOnce(&SharedMem, usize) -> Result) -> Result {
        write(&self.ring.mem, self.ring.offset(self.producer(), 0))
    }

    /// Publishes the element written at the producer index; `ENOMEM` when the queue is
    /// full (as rxe reports it).
    pub(crate) fn produce(&self) -> Result {
        if self.is_full() {
            return Err(ENOMEM);
        }
        let prod = self.producer();
        self.ring
            .mem
            .store_release(PRODUCER, (prod + 1) & self.ring.mask);
        Ok(())
    }
}
