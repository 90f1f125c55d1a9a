// SPDX-License-Identifier: GPL-2.0

//! Socket buffers (`struct sk_buff`): owned skbs, a read-only view of received UDP
//! datagrams (whose payload may lie in fragments: [`SkbBytes`]), and queues of skbs.

use super::device::NetDevice;
use crate::{
    bindings,
    ext::{bytes::Bytes, crc::Crc32},
};
use core::{
    mem::{ManuallyDrop, MaybeUninit},
    ops::Range,
    ptr::{self, NonNull},
};
use kernel::{prelude::*, types::Opaque};

/// Length of a UDP header.
pub(crate) const UDP_HDR_LEN: usize = 8;
/// Length of an IPv4 header without options.
pub(crate) const IPV4_HDR_LEN: usize = 20;
/// Length of an IPv6 header without extension headers.
pub(crate) const IPV6_HDR_LEN: usize = 40;

/// An owned socket buffer; freed as a dropped packet when dropped, as a delivered one by
/// [`SkBuff::consume`].
///
/// # Invariants
///
/// The wrapper owns one reference on the skb and, if `skb->dev` is set, one reference on
/// that device (so [`SkBuff::dev`] stays valid however long the skb is kept, e.g. in an
/// [`SkbQueue`]). Only this module changes `skb->dev` of an owned skb.
pub struct SkBuff(NonNull<bindings::sk_buff>);

// SAFETY: An owned skb may be passed to and freed from any context; so may the device
// reference (`dev_put`).
unsafe impl Send for SkBuff {}
// SAFETY: Shared access only reads the skb: its linear data, which nobody else writes
// while we own it, through slices; its fragments (which may be pages their owner writes
// meanwhile, `SKBFL_SHARED_FRAG`) only through C copies and checksums, never slices.
unsafe impl Sync for SkBuff {}

/// The headers and payload of a received UDP datagram, see [`SkBuff::rx_view`].
///
/// # Invariants
///
/// `head` is the first bytes of the UDP payload, at most `len`; the payload's `len` bytes
/// start `offset` bytes after `skb->data`, and `offset + len` is within `skb->len`.
#[derive(Clone, Copy)]
pub struct RxView<'a> {
    /// The network header up to the transport header: 20 bytes for IPv4 without
    /// options, 40 for IPv6 without extension headers; longer otherwise (the caller
    /// checks the version and length it accepts).
    pub ip: &'a [u8],
    /// The 8-byte UDP header.
    pub udp: &'a [u8],
    head: &'a [u8],
    len: usize,
    skb: &'a SkBuff,
    /// Where the UDP payload starts, from `skb->data`.
    offset: usize,
}

impl<'a> RxView<'a> {
    /// The start of the UDP payload that lies in the skb's linear part: all of the payload
    /// if the skb is linear, else at least what [`SkBuff::pull_transport`] made linear.
    #[inline]
    pub fn head(&self) -> &'a [u8] {
        self.head
    }

    /// The length of the UDP payload: the UDP length field minus the header.
    #[inline]
    pub fn payload_len(&self) -> usize {
        self.len
    }

    /// The UDP payload bytes in `range`, wherever they lie; `None` if `range` is not in
    /// the payload.
    #[inline]
    pub fn bytes(&self, range: Range<usize>) -> Option<Bytes<'a>> {
        if range.start > range.end || range.end > self.len {
            return None;
        }
        if let Some(s) = self.head.get(range.clone()) {
            return Some(Bytes::Slice(s));
        }
        // INVARIANT: `range` is in the payload, which is within `skb->len` (type
        // invariant).
        Some(Bytes::Skb(SkbBytes {
            skb: self.skb,
            offset: self.offset + range.start,
            len: range.len(),
        }))
    }

    /// Continues the CRC-32 `crc` with `engine` over the UDP payload bytes in `range` (those
    /// of them that are in the payload).
    pub fn crc32(&self, engine: &Crc32, crc: u32, range: Range<usize>) -> u32 {
        let end = range.end.min(self.len);
        let start = range.start.min(end);
        if let Some(s) = self.head.get(start..end) {
            return engine.update(crc, s);
        }
        let (Ok(at), Ok(len)) = (
            i32::try_from(self.offset + start),
            i32::try_from(end - start),
        ) else {
            return crc;
        };
        // SAFETY: The transform and the skb are valid, the skb only read; the range lies
        // within the payload, so within `skb->len` (type invariant).
        unsafe { bindings::skb_crc32(engine.as_raw(), self.skb.as_raw(), at, len, crc) }
    }
}

/// Bytes of a received skb, in its linear part or its fragments: a [`Bytes`] source.
///
/// # Invariants
///
/// `offset + len` is within the skb's length (`skb->len`, from `skb->data`).
#[derive(Clone, Copy)]
pub struct SkbBytes<'a> {
    skb: &'a SkBuff,
    offset: usize,
    len: usize,
}

impl<'a> SkbBytes<'a> {
    /// The number of bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// The bytes in `range` of these.
    #[inline]
    pub fn get(&self, range: Range<usize>) -> Option<Self> {
        if range.start > range.end || range.end > self.len {
            return None;
        }
        // INVARIANT: Within these, so within the skb.
        Some(SkbBytes {
            skb: self.skb,
            offset: self.offset + range.start,
            len: range.len(),
        })
    }

    /// The offset from `skb->data` and the length, as the C functions take them.
    #[inline]
    fn span(&self) -> Result<(i32, i32)> {
        let offset = i32::try_from(self.offset).map_err(|_| EINVAL)?;
        let len = i32::try_from(self.len).map_err(|_| EINVAL)?;
        Ok((offset, len))
    }

    /// Copies the bytes to `dst`, which must be as long.
    pub fn read(&self, dst: &mut [u8]) -> Result {
        if dst.len() != self.len {
            return Err(EINVAL);
        }
        let (offset, len) = self.span()?;
        // SAFETY: The skb is valid and only read (the range within it: type invariant);
        // `dst` is `len` writable bytes.
        let err = unsafe {
            bindings::skb_copy_bits(self.skb.as_raw(), offset, dst.as_mut_ptr().cast(), len)
        };
        kernel::error::to_result(err)
    }

    /// Copies the bytes to `off` in `page`.
    ///
    /// # Safety
    ///
    /// `page` is a valid page that may be written, `off + self.len()` at most its size.
    pub unsafe fn copy_to_page(&self, page: *mut bindings::page, off: usize) -> Result {
        let (offset, _) = self.span()?;
        // SAFETY: The skb is valid and only read (the range within it: type invariant);
        // the caller vouches for the page.
        let err =
            unsafe { bindings::skb_copy_to_page(self.skb.as_raw(), offset, page, off, self.len) };
        kernel::error::to_result(err)
    }

    /// Copies the bytes to the kernel virtual address `addr`.
    ///
    /// # Safety
    ///
    /// `addr` is the start of `self.len()` bytes of kernel memory that may be written.
    pub unsafe fn copy_to_kva(&self, addr: u64) -> Result {
        let (offset, len) = self.span()?;
        // SAFETY: As in `read`; the caller vouches for the memory.
        let err = unsafe {
            bindings::skb_copy_bits(
                self.skb.as_raw(),
                offset,
                addr as usize as *mut core::ffi::c_void,
                len,
            )
        };
        kernel::error::to_result(err)
    }
}

impl SkBuff {
    /// Takes ownership of `skb`, if non-null, and takes a reference on `skb->dev`.
    ///
    /// # Safety
    ///
    /// `skb` must be null or a valid skb whose reference the caller gives up, whose linear
    /// data nobody else writes any more (its page fragments may be pages their owner still
    /// writes, as a local sender's pinned memory: this type reads them only through C
    /// copies, never through a slice), and whose `skb->dev`, if set, is valid for the call
    /// (as in the receive path, which runs under RCU).
    pub(crate) unsafe fn from_raw(skb: *mut bindings::sk_buff) -> Option<Self> {
        let skb = NonNull::new(skb)?;
        // SAFETY: `skb` is valid.
        let dev = unsafe { bindings::skb_dev(skb.as_ptr()) };
        if !dev.is_null() {
            // SAFETY: The caller promises that `dev` is valid now; the reference is the
            // type invariant's and is dropped in `drop`.
            unsafe { bindings::dev_hold(dev) };
        }
        Some(Self(skb))
    }

    /// Takes ownership of `skb` and of a reference on `skb->dev` that the caller took.
    ///
    /// # Safety
    ///
    /// As [`Self::from_raw`], and `skb->dev` is set, with a reference on it that the
    /// caller gives up.
    pub(crate) unsafe fn from_raw_held(skb: NonNull<bindings::sk_buff>) -> Self {
        Self(skb)
    }

    /// Gives up ownership of the skb with its device reference (see the type invariant).
    fn into_raw(self) -> *mut bindings::sk_buff {
        ManuallyDrop::new(self).0.as_ptr()
    }

    /// The raw pointer, for the abstractions.
    fn as_raw(&self) -> *mut bindings::sk_buff {
        self.0.as_ptr()
    }

    /// The device the skb arrived on (or, for a loopback skb, the one it was built for).
    pub fn dev(&self) -> Option<&NetDevice> {
        // SAFETY: The skb is valid.
        let dev = unsafe { bindings::skb_dev(self.as_raw()) };
        if dev.is_null() {
            return None;
        }
        // SAFETY: By the type invariant we hold a reference on `skb->dev`, and nobody
        // changes `skb->dev` while `self` is borrowed.
        Some(unsafe { NetDevice::from_raw(dev) })
    }

    /// Whether all the skb's data is in its linear part (no fragments).
    pub fn is_linear(&self) -> bool {
        // SAFETY: The skb is valid; `data_len` is a plain field, not written while the
        // skb is borrowed.
        unsafe { (*self.as_raw()).data_len == 0 }
    }

    /// The first word of the skb's control buffer (`skb->cb`), as [`Self::set_cb_word`]
    /// set it; whatever an earlier layer left there otherwise.
    #[inline]
    pub fn cb_word(&self) -> u32 {
        // SAFETY: The skb is valid; `cb` is a plain array of 48 bytes, not written while
        // the skb is borrowed. The read is unaligned-safe.
        unsafe {
            ptr::addr_of!((*self.as_raw()).cb)
                .cast::<u32>()
                .read_unaligned()
        }
    }

    /// Sets the first word of the skb's control buffer (`skb->cb`): private data of the
    /// layer that holds the skb, which travels with it (a queue, a clone) until another
    /// layer takes it. A new skb's is 0 (`alloc_skb` zeroes it).
    #[inline]
    pub fn set_cb_word(&mut self, word: u32) {
        // SAFETY: The skb is ours (`&mut`); `cb` is a plain array of 48 bytes. The write
        // is unaligned-safe.
        unsafe {
            ptr::addr_of_mut!((*self.as_raw()).cb)
                .cast::<u32>()
                .write_unaligned(word)
        }
    }

    /// Makes the first `len` bytes after the transport header linear (all of them if the
    /// skb has fewer), for the headers [`RxView::head`] must hold, and all of them if the
    /// skb holds much more memory than its length (a datagram reassembled from IP
    /// fragments, whose sizes the sender chose: a fragment list of whole skbs, or receive
    /// buffers taken over as page fragments), which frees what it held. May allocate
    /// (`GFP_ATOMIC`); does nothing if the skb is linear already.
    ///
    /// Fails with `EMSGSIZE`, before any copy, if the skb is not linear and more than
    /// `max` bytes follow the transport header; `ENOMEM`.
    pub fn pull_transport(&mut self, len: usize, max: usize) -> Result {
        if self.is_linear() {
            // All of it is there already (most skbs; no call).
            return Ok(());
        }
        let len = u32::try_from(len).map_err(|_| EINVAL)?;
        let max = u32::try_from(max).map_err(|_| EINVAL)?;
        // SAFETY: The skb is valid and ours.
        kernel::error::to_result(unsafe { bindings::skb_pull_transport(self.as_raw(), len, max) })
    }

    /// A copy of the skb sharing its data (`skb_clone`, `GFP_ATOMIC`), e.g. to deliver one
    /// multicast datagram to several receivers. The data must then be treated as
    /// read-only, which is all this API allows. `None` if out of memory.
    ///
    /// The clone does not carry the original's transmit owner (`skb->sk`).
    pub fn try_clone(&self) -> Option<SkBuff> {
        // SAFETY: The skb is valid.
        let clone = unsafe { bindings::skb_clone_atomic(self.as_raw()) };
        // SAFETY: `skb_clone` returns null or a new skb that we own; its `dev` is ours,
        // valid by our own type invariant, and gets a reference of its own.
        unsafe { SkBuff::from_raw(clone) }
    }

    /// The IP header, UDP header and UDP payload of a datagram as a UDP tunnel's
    /// `encap_rcv` receives it (network and transport headers set, the transport header
    /// at the UDP header, data not after it), after [`Self::pull_transport`].
    ///
    /// `None` if its headers are not set, out of order or not linear, the IP header is
    /// shorter than the minimum of its family (by `skb->protocol`), or the UDP length field
    /// is below 8 or beyond the skb's data.
    pub fn rx_view(&self) -> Option<RxView<'_>> {
        let mut l = MaybeUninit::<bindings::rrxe_skb_layout>::uninit();
        // SAFETY: The skb is valid; `l` is valid for writes of its type, and the helper
        // assigns the whole struct (every field, each a valid value of its type).
        let l = unsafe {
            bindings::skb_layout(self.as_raw(), l.as_mut_ptr());
            l.assume_init()
        };
        if !l.transport_set {
            return None;
        }
        let (network, transport, data, tail) = (
            l.network as usize,
            l.transport as usize,
            l.data as usize,
            l.tail as usize,
        );
        if network > transport || data > transport || transport > tail {
            return None;
        }
        let min_ip = match u32::from(l.protocol) {
            bindings::ETH_P_IP => IPV4_HDR_LEN,
            bindings::ETH_P_IPV6 => IPV6_HDR_LEN,
            _ => return None,
        };
        // SAFETY: `network <= tail` and `head + tail` is the end of the linear data, so
        // the range lies in the skb's buffer; it holds the received packet (initialised)
        // and is not written while the skb is borrowed.
        let linear = unsafe {
            core::slice::from_raw_parts(l.head.add(network).cast_const(), tail - network)
        };
        let (ip, rest) = linear.split_at(transport - network);
        if ip.len() < min_ip {
            return None;
        }
        let udp = rest.get(..UDP_HDR_LEN)?;
        let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
        let len = udp_len.checked_sub(UDP_HDR_LEN)?;
        // The payload starts at `offset` from data; the skb has `l.len` bytes from there.
        let offset = transport - data + UDP_HDR_LEN;
        if offset + len > l.len as usize {
            return None;
        }
        let head = rest.get(UDP_HDR_LEN..)?;
        let head = head.get(..len.min(head.len()))?;
        // INVARIANT: Checked just above.
        Some(RxView {
            ip,
            udp,
            head,
            len,
            skb: self,
            offset,
        })
    }

    /// Frees the skb as delivered (`consume_skb`): its packet reached its end. Dropping an
    /// `SkBuff` frees it as a dropped packet (`kfree_skb`), which the kernel's drop
    /// tracepoint (`skb:kfree_skb`, what dropwatch and drop_monitor report) sees.
    pub fn consume(self) {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is not dropped, nor used after.
        unsafe { this.free(true) };
    }

    /// Gives up the skb and its device reference, as consumed or as dropped.
    ///
    /// # Safety
    ///
    /// The wrapper must not be used nor dropped afterwards (one call, from
    /// [`Self::consume`] or `drop`).
    unsafe fn free(&mut self, consumed: bool) {
        // SAFETY: We own the skb's reference and, if `skb->dev` is set, the device's (type
        // invariant); the helper gives up both.
        unsafe { bindings::skb_free_put_dev(self.as_raw(), consumed) };
    }
}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // SAFETY: The wrapper is being dropped: nothing uses it after.
        unsafe { self.free(false) };
    }
}

/// A queue of skbs (`struct sk_buff_head`) with its own IRQ-safe lock; usable from any
/// context. Dropping it frees the skbs still queued.
#[pin_data(PinnedDrop)]
pub struct SkbQueue {
    #[pin]
    head: Opaque<bindings::sk_buff_head>,
}

// SAFETY: The queue only holds owned skbs (`SkBuff: Send`), under its own lock.
unsafe impl Send for SkbQueue {}
// SAFETY: Every operation takes the queue's lock (or, for `len`, reads one word).
unsafe impl Sync for SkbQueue {}

impl SkbQueue {
    /// An empty queue (`skb_queue_head_init`).
    pub fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `p` points to the pinned, not yet initialised `sk_buff_head`.
            head <- Opaque::ffi_init(|p| unsafe { bindings::skb_queue_head_init(p) }),
        })
    }

    /// Appends `skb` at the tail (`skb_queue_tail`).
    pub fn push(&self, skb: SkBuff) {
        // SAFETY: The queue is initialised and pinned; it takes over the skb with the
        // references of `SkBuff`'s type invariant, which `pop` hands back.
        unsafe { bindings::skb_queue_tail(self.head.get(), skb.into_raw()) }
    }

    /// Removes the skb at the head (`skb_dequeue`). An empty queue is seen without taking
    /// its lock (most pops of a pass find nothing): an skb queued meanwhile is the pusher's
    /// to announce, as one queued just after the lock was dropped would be.
    pub fn pop(&self) -> Option<SkBuff> {
        if self.is_empty() {
            return None;
        }
        // SAFETY: The queue is initialised.
        let skb = unsafe { bindings::skb_dequeue(self.head.get()) };
        // Every queued skb came from `push`, with the references `SkBuff` owns.
        NonNull::new(skb).map(SkBuff)
    }

    /// Removes the skb at the head if `take` accepts it, deciding under the queue's lock, so
    /// that no other pop takes it meanwhile. `take` runs under the queue's spinlock (IRQs
    /// off, except on PREEMPT_RT): it must be short and must not use this queue.
    pub fn pop_if(&self, take: impl FnOnce(&SkBuff) -> bool) -> Option<SkBuff> {
        if self.is_empty() {
            return None;
        }
        let mut flags = 0usize;
        // SAFETY: The queue is initialised; the lock is dropped below, on every path.
        let head = unsafe { bindings::skb_queue_lock_peek(self.head.get(), &mut flags) };
        let taken = NonNull::new(head).filter(|skb| {
            // A view of the queued skb, never dropped: the queue keeps its references, and
            // the lock keeps it queued while `take` looks at it.
            let view = ManuallyDrop::new(SkBuff(*skb));
            take(&view)
        });
        let unlink = taken.map_or(core::ptr::null_mut(), NonNull::as_ptr);
        // SAFETY: The lock taken above, with its flags; `unlink` is null or the head skb,
        // still queued under that lock.
        unsafe { bindings::skb_queue_unlink_unlock(self.head.get(), unlink, flags) };
        // Every queued skb came from `push`, with the references `SkBuff` owns.
        taken.map(SkBuff)
    }

    /// The number of queued skbs (a snapshot, read without the lock).
    #[inline]
    pub fn len(&self) -> usize {
        // SAFETY: The queue is initialised and lives as long as `self`, so its `qlen` is
        // valid for reads. The volatile read is `skb_queue_len_lockless`'s `READ_ONCE`: it
        // races only with writers under the queue's lock, which use `WRITE_ONCE`.
        unsafe { ptr::read_volatile(ptr::addr_of!((*self.head.get()).qlen)) as usize }
    }

    /// Whether the queue is empty (a snapshot, read without the lock).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Frees every queued skb.
    pub fn purge(&self) {
        while let Some(skb) = self.pop() {
            drop(skb);
        }
    }
}

#[pinned_drop]
impl PinnedDrop for SkbQueue {
    fn drop(self: Pin<&mut Self>) {
        self.purge();
    }
}
