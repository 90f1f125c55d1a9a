// SPDX-License-Identifier: GPL-2.0

//! Packets between two connected QPs of this device that go without an skb. A request
//! packet of at most [`MAX_BOXED`] bytes of payload, not part of a loopback burst, is left
//! in its peer's request box ([`crate::reqbox`]), and a positive ACK, an atomic
//! acknowledge or a one-packet RDMA READ response in its peer's response box
//! ([`crate::respbox`]), where the peer's responder or completer takes it as it would take
//! the packet; no skb is allocated, built, looped back, queued, parsed or freed for it.
//! Each skb of a small message cost about a fifth of its engine time (the two skbs of a
//! small RDMA READ about 40 %, 2026-11-30).
//!
//! Who: only a userspace RC or UC QP, to the QP of the same type it is connected to, as
//! that QP is to it ([`crate::task::SentBy::peers`]), the only QP allowed to leave
//! anything in its boxes ([`peer`]). Admission's address checks are not made: they do not
//! tell local senders apart (any local QP may choose its source among the device's GIDs,
//! and any local process may send a datagram to the RoCE port), and the P_Key is the
//! default one on both. Everything else stays a packet: loopback bursts, longer payloads,
//! NAKs and duplicate ACKs, and whatever finds the box full (its [`SLOTS`] packets or
//! [`ROOM`] bytes of payload) or cannot grow its batch (allocated without waiting, as
//! traffic needs: only QPs that take packets this way pay for it).
//!
//! Order: a QP takes a peer's requests, and its responses, in the order they were sent.
//! A QP leaves something in a box only when none of its skbs is in flight, so every
//! packet it sent before has been taken and freed (a loopback skb leaves its sender's
//! count only when the QP it went to frees it, after taking it: nothing orphans or clones
//! a loopback skb). A packet it sends after is queued after the box was written, and the
//! QP that takes that packet takes what the box holds first: the completer after each
//! response it pops from its queue and before it handles it ([`crate::respbox`]), the
//! responder before it pops a request, and pops one only while its box is empty, which
//! it checks under the queue's lock ([`crate::reqbox`]). Each box is first in, first out.
//! A packet lost meanwhile (a full queue) is lost as before.
//!
//! A QP's reset empties its boxes (and its queues), but its peer may leave more until the
//! QP is connected anew: they are judged against the QP's sequence numbers when they are
//! taken (a packet is refused where it arrives until the QP is RTR again). Once a modify
//! connected it to another QP, it empties its boxes again, and the former peer, which
//! checks under a box's lock that the two are still connected ([`still`]), leaves nothing
//! more.
//!
//! A box keeps the count of what it holds in an atomic that its QP reads without the lock
//! (a box is mostly empty), relaxed: a count read as zero by a pass that missed what was
//! just left costs no wake-up, for the sender hands the QP to its pass's caller after it
//! left it ([`delivered`]), which runs the QP's pass once more if it is running
//! ([`crate::task::Runner`]); and a packet that the sender queues later is queued under
//! the queue's lock after the count was written, which the QP that pops the packet
//! takes.

use crate::{
    counters::Counter,
    proto::bth::QPN_MASK,
    qp::{QpShared, NO_PEER},
    tx::Sender,
};
use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::{
    alloc::{
        flags::{__GFP_NOWARN, GFP_NOWAIT},
        KVec,
    },
    prelude::*,
    sync::{Arc, SpinLock},
};

/// The largest payload of a packet left in a box.
pub(crate) const MAX_BOXED: usize = 1024;

// A payload's place and length in a box's room are kept in 16 bits.
const _: () = assert!(
    ROOM <= u16::MAX as usize
        && MAX_BOXED <= ROOM
        && ROOM.is_power_of_two()
        && MAX_BOXED.is_power_of_two()
);

/// The bytes of payload a batch holds.
const ROOM: usize = 16384;

/// The QP that a packet `s` would send to QP `dest_qpn` may take it from a box instead:
/// the sender's loopback peer, if it is connected to the sender as the sender is to it,
/// and none of the sender's skbs are in flight (see the order above).
pub(crate) fn peer(s: &Sender<'_>, dest_qpn: u32) -> Option<Arc<QpShared>> {
    let by = s.link.by;
    if by.qp.peer.load(Ordering::Relaxed) == NO_PEER || s.owner.in_flight() != 0 || !s.loops_back()
    {
        return None;
    }
    let peer = by.lookup(s.dev.data(), dest_qpn & QPN_MASK)?;
    by.peers(&peer).then_some(peer)
}

/// Whether the sender and `peer` are still connected to each other: checked again under
/// the lock of the box a packet is left in, which a QP's modify takes to empty its boxes
/// once it connected the QP to another peer ([`crate::qp::Qp::modify`]), so that nothing
/// the former peer leaves is taken after that.
pub(crate) fn still(s: &Sender<'_>, peer: &QpShared) -> bool {
    s.link.by.peers(peer)
}

/// Counts a packet left for `peer` as it would be counted, sent and received, and as `c`
/// (also an ACK that replaced one not taken yet, as its packet would have been sent and
/// received; and what a reset empties from a box stays counted, as a packet it flushes
/// from a queue), and hands `peer` to the pass's caller as the packet would
/// ([`crate::task::SentBy::wake`]).
pub(crate) fn delivered(s: &Sender<'_>, peer: Arc<QpShared>, c: Counter) {
    let data = s.dev.data();
    data.count(Counter::SentPkts);
    data.count(Counter::RcvdPkts);
    data.count(c);
    s.link.by.wake(peer);
}

/// What a box holds, or what its QP took from it at once: packets in the order they were
/// left, and their payloads. The QP's pass takes a box's whole batch under the box's lock
/// by swapping it with the batch it emptied before ([`Mailbox::swap`]), then handles its
/// packets without the lock while the peer fills the other: the two sides of a stream on
/// two CPUs do not wait for each other (handled under the lock, a batch kept the peer
/// waiting for all of it).
pub(crate) struct Batch<E> {
    /// Up to [`SLOTS`] slots, allocated as packets are left.
    slots: KVec<Slot<E>>,
    /// The slots filled.
    count: usize,
    /// The next slot to take.
    next: usize,
    /// The payloads, one after the other: up to [`ROOM`] bytes, allocated as payloads
    /// are left.
    room: KVec<u8>,
    /// The bytes of the room filled.
    used: usize,
}

/// A packet in a batch, and where its payload is in the batch's room.
#[derive(Clone, Copy)]
struct Slot<E> {
    e: E,
    at: u16,
    len: u16,
}

/// The packets a batch holds: a pass's budget ([`crate::qp::BUDGET`]; with 16, a 2 B
/// WRITE stream on two vCPUs left a quarter of its requests in boxes, the rest went as
/// packets while one was in flight, and its rate was not higher, 2026-11-30).
const SLOTS: usize = 64;

impl<E: Copy> Batch<E> {
    /// An empty batch, not allocated.
    pub(crate) const fn new() -> Self {
        Batch {
            slots: KVec::new(),
            count: 0,
            next: 0,
            room: KVec::new(),
            used: 0,
        }
    }

    /// Whether every packet was taken.
    pub(crate) fn is_empty(&self) -> bool {
        self.next >= self.count
    }

    /// Empties the batch.
    pub(crate) fn clear(&mut self) {
        self.count = 0;
        self.next = 0;
        self.used = 0;
    }

    /// Adds `e` with `len` bytes of payload that `fill` writes: `Ok(false)` if there is no
    /// room for it (or no memory), `fill`'s error if it failed (nothing added).
    fn push<F>(
        &mut self,
        e: E,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> Result<(), F>,
    ) -> Result<bool, F> {
        if self.count >= SLOTS || len > MAX_BOXED || ROOM - self.used < len {
            return Ok(false);
        }
        // Grown as needed, never shrunk: a box's batches grow to what its traffic needs.
        let flags = GFP_NOWAIT | __GFP_NOWARN;
        if self.slots.len() <= self.count {
            let blank = Slot { e, at: 0, len: 0 };
            if self.slots.push(blank, flags).is_err() {
                return Ok(false);
            }
        }
        let at = self.used;
        let end = at + len;
        if len != 0 {
            if end > self.room.len() {
                // In powers of two, which a vector's capacity doubles to: never past ROOM.
                let size = end.next_power_of_two().clamp(MAX_BOXED, ROOM);
                if self
                    .room
                    .extend_with(size - self.room.len(), 0, flags)
                    .is_err()
                {
                    return Ok(false);
                }
            }
            let Some(buf) = self.room.get_mut(at..end) else {
                return Ok(false);
            };
            fill(buf)?;
        }
        let Some(slot) = self.slots.get_mut(self.count) else {
            return Ok(false);
        };
        *slot = Slot {
            e,
            // Both fit in 16 bits: `at + len <= ROOM`.
            at: at as u16,
            len: len as u16,
        };
        self.count += 1;
        self.used = end;
        Ok(true)
    }

    /// The last packet added, if it was not taken.
    fn last_mut(&mut self) -> Option<&mut E> {
        if self.is_empty() {
            return None;
        }
        self.slots.get_mut(self.count - 1).map(|s| &mut s.e)
    }

    /// The next packet to take, and its payload.
    pub(crate) fn front(&self) -> Option<(&E, &[u8])> {
        if self.is_empty() {
            return None;
        }
        let s = self.slots.get(self.next)?;
        let (at, len) = (usize::from(s.at), usize::from(s.len));
        Some((&s.e, self.room.get(at..at + len).unwrap_or(&[])))
    }

    /// Takes what `full` holds into this batch, whose packets were all taken, and leaves
    /// this batch's allocations to `full`, empty. Field by field: `core::mem::swap` of
    /// the whole batch compiled to a loop of word swaps in the completer.
    fn take_from(&mut self, full: &mut Self) {
        core::mem::swap(&mut self.slots, &mut full.slots);
        core::mem::swap(&mut self.room, &mut full.room);
        self.count = full.count;
        self.next = full.next;
        self.used = full.used;
        full.clear();
    }

    /// Takes the next packet; empties the batch after its last.
    pub(crate) fn advance(&mut self) {
        self.next += 1;
        if self.is_empty() {
            self.clear();
        }
    }
}

impl<E: Copy> Default for Batch<E> {
    fn default() -> Self {
        Self::new()
    }
}

/// A QP's box: the batch its loopback peer fills.
#[pin_data]
pub(crate) struct Mailbox<T> {
    /// The packets the batch holds, read without the lock (see the order above).
    queued: AtomicUsize,
    /// A plain spinlock: only passes and a QP's modify take it, each with a QP's lock held
    /// (no softirq or interrupt does).
    #[pin]
    batch: SpinLock<Batch<T>>,
}

impl<T: Copy> Mailbox<T> {
    /// An empty box, its lock `lock` (made by each kind of box's constructor, so that
    /// each kind has a lock class of its own).
    pub(crate) fn new(lock: impl PinInit<SpinLock<Batch<T>>>) -> impl PinInit<Self> {
        pin_init!(Mailbox {
            queued: AtomicUsize::new(0),
            batch <- lock,
        })
    }

    /// Whether the box holds nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.queued.load(Ordering::Relaxed) == 0
    }

    /// Swaps the box's batch with `hand` if the box's QP emptied it: `hand` then holds what
    /// the box held, in order.
    pub(crate) fn swap(&self, hand: &mut Batch<T>) {
        if self.is_empty() || !hand.is_empty() {
            return;
        }
        let mut b = self.batch.lock();
        hand.take_from(&mut b);
        self.queued.store(0, Ordering::Relaxed);
    }

    /// Empties the box.
    pub(crate) fn clear(&self) {
        self.batch.lock().clear();
        self.queued.store(0, Ordering::Relaxed);
    }

    /// Leaves `e` with `len` bytes of payload that `fill` writes, if `still` (under the
    /// lock, [`still`]): `Ok(false)` if it must go as a packet (the box is full, or
    /// `still` is false), `fill`'s error if it failed (nothing left).
    pub(crate) fn put<F>(
        &self,
        e: T,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> Result<(), F>,
        still: impl FnOnce() -> bool,
    ) -> Result<bool, F> {
        let mut b = self.batch.lock();
        if !still() || !b.push(e, len, fill)? {
            return Ok(false);
        }
        self.queued.store(b.count, Ordering::Relaxed);
        Ok(true)
    }

    /// Merges `e` into the last packet left if `merge` does (true), else leaves it (no
    /// payload), if `still` (under the lock): `Some(true)` if merged, `Some(false)` if
    /// left, `None` if it must go as a packet.
    pub(crate) fn put_or_merge(
        &self,
        e: T,
        merge: impl FnOnce(&mut T) -> bool,
        still: impl FnOnce() -> bool,
    ) -> Option<bool> {
        let mut b = self.batch.lock();
        if !still() {
            return None;
        }
        if b.last_mut().is_some_and(merge) {
            return Some(true);
        }
        if !b.push(e, 0, |_| Ok::<(), ()>(())).ok()? {
            return None;
        }
        self.queued.store(b.count, Ordering::Relaxed);
        Some(false)
    }
}
