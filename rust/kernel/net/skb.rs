// SPDX-License-Identifier: GPL-2.0

//! Socket buffers (`struct sk_buff`): owned skbs, a read-only view of received UDP
//! datagrams, and queues of skbs.

// Until the driver's data path uses all of it; remove then (the expectation warns).

use super::device::NetDevice;
use crate::bindings;
use core::{mem::ManuallyDrop, ptr::NonNull};
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
// SAFETY: Shared access only reads the skb, whose data nobody else writes while we own it.
unsafe impl Sync for SkBuff {}

/// The headers and payload of a received UDP datagram, see [`SkBuff::rx_view`].
#[derive(Clone, Copy)]
pub struct RxView<'a> {
    /// The network header up to the transport header: 20 bytes for IPv4 without
    /// options, 40 for IPv6 without extension headers; longer otherwise (the caller
    /// checks the version and length it accepts).
    pub ip: &'a [u8],
    /// The 8-byte UDP header.
    pub udp: &'a [u8],
    /// The UDP payload: the UDP length field minus the header.
    pub payload: &'a [u8],
}

impl SkBuff {
    /// Takes ownership of `skb`, if non-null, and takes a reference on `skb->dev`.
    ///
    /// # Safety
    ///
    /// `skb` must be null or a valid skb whose reference the caller gives up, whose data
    /// nobody else writes any more, and whose `skb->dev`, if set, is valid for the call
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

    /// Pulls all paged data into the linear part (`skb_linearize`), as [`Self::rx_view`]
    /// needs. May allocate (`GFP_ATOMIC`).
    pub fn linearize(&mut self) -> Result {
        // SAFETY: The skb is valid and ours.
        kernel::error::to_result(unsafe { bindings::skb_linearize(self.as_raw()) })
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
    /// at the UDP header), after [`Self::linearize`].
    ///
    /// `None` if the skb is not linear, its headers are not set or out of order, the IP
    /// header is shorter than the minimum of its family (by `skb->protocol`), or the UDP
    /// length field is below 8 or beyond the skb's data.
    pub fn rx_view(&self) -> Option<RxView<'_>> {
        let mut l = bindings::rrxe_skb_layout::default();
        // SAFETY: The skb is valid; `l` is a valid out-pointer.
        unsafe { bindings::skb_layout(self.as_raw(), &mut l) };
        if l.nonlinear || !l.transport_set {
            return None;
        }
        let (network, transport, tail) =
            (l.network as usize, l.transport as usize, l.tail as usize);
        if network > transport || transport > tail {
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
        let packet = unsafe {
            core::slice::from_raw_parts(l.head.add(network).cast_const(), tail - network)
        };
        let (ip, rest) = packet.split_at(transport - network);
        if ip.len() < min_ip {
            return None;
        }
        let udp = rest.get(..UDP_HDR_LEN)?;
        let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
        let payload = rest.get(UDP_HDR_LEN..udp_len)?;
        Some(RxView { ip, udp, payload })
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
        // SAFETY: The skb is valid.
        let dev = unsafe { bindings::skb_dev(self.as_raw()) };
        if consumed {
            // SAFETY: We own the reference.
            unsafe { bindings::consume_skb(self.as_raw()) };
        } else {
            // SAFETY: We own the reference.
            unsafe { bindings::kfree_skb(self.as_raw()) };
        }
        if !dev.is_null() {
            // SAFETY: The type invariant's reference on the device, given up here.
            unsafe { bindings::dev_put(dev) };
        }
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
    pub fn len(&self) -> usize {
        // SAFETY: The queue is initialised; the length is read with `READ_ONCE`.
        unsafe { bindings::skb_queue_len_lockless(self.head.get()) as usize }
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
