// SPDX-License-Identifier: GPL-2.0

//! Requests between two connected QPs of this device without a packet
//! ([`crate::direct`]: who may leave them, and the order). A requester's packet of at most
//! [`direct::MAX_BOXED`] bytes of payload, not part of a loopback burst, to its loopback
//! peer is left in the peer's [`ReqBox`], headers and payload, which its responder takes
//! and handles as it would the packets: after admission, which their sender stands in
//! for, the same checks (PSN, opcode sequence, access, keys, lengths) and the same
//! execution ([`take`]).
//!
//! The responder takes the requests in hand (a batch it took from its box) and then those
//! of its box before it pops one from its queue, and pops one only while its box is empty,
//! which it checks under the queue's lock. A packet its peer sends after a request it left
//! is queued, under the queue's lock, after the box was written, so the responder that
//! finds the packet there finds the box's requests too and takes them first.

use crate::{
    counters::Counter,
    direct::{self, Batch, Mailbox},
    mem::Bytes,
    pass::Pass,
    proto::packet::{pad_len, Headers, Packet},
    recv::RxPacket,
    tx::Sender,
};
use kernel::{new_spinlock, prelude::*};

/// Requests a loopback peer left for a QP's responder ([`crate::reqbox`]): their headers.
pub(crate) type ReqBox = Mailbox<Headers>;

/// An empty request box.
pub(crate) fn new_box() -> impl PinInit<ReqBox> {
    Mailbox::new(new_spinlock!(Batch::new(), "rrxe:req_box"))
}

/// Hands the oldest request the pass's responder has in hand, or else in its box, to `f`
/// as its packet, if `want` says so of its headers, and takes it; `f`'s result, or `None`
/// if none was taken (none left, or not wanted).
pub(crate) fn take<R>(
    p: &mut Pass<'_>,
    want: impl FnOnce(&Headers) -> bool,
    f: impl FnOnce(&mut Pass<'_>, &RxPacket<'_>) -> R,
) -> Option<R> {
    if p.qp.boxes.req.is_empty() && !p.inner.requests_in_hand() {
        return None;
    }
    let mut hands = p.inner.hands.take()?;
    let hand = &mut hands.req;
    p.qp.boxes.req.swap(hand);
    let r = match hand.front() {
        Some((hdr, payload)) if want(hdr) => {
            let pkt = Packet {
                hdr: *hdr,
                payload: Bytes::Slice(payload),
            };
            let r = f(p, &pkt);
            hand.advance();
            Some(r)
        }
        _ => None,
    };
    p.inner.hands = Some(hands);
    r
}

/// Leaves the packet that `s` would send, headers `hdr` and `len` bytes of payload that
/// `fill` writes, in the box of the loopback peer it goes to: `Ok(false)` if it must go as
/// a packet ([`direct::peer`], a longer payload, or a full box), `fill`'s error if it
/// failed (nothing left).
pub(crate) fn leave<E>(
    s: &Sender<'_>,
    hdr: &Headers,
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> Result<(), E>,
) -> Result<bool, E> {
    if len > direct::MAX_BOXED {
        return Ok(false);
    }
    let Some(peer) = direct::peer(s, hdr.bth.dest_qpn) else {
        return Ok(false);
    };
    let mut hdr = *hdr;
    // As its packet's, which carries it on the wire.
    hdr.bth.pad = pad_len(len) as u8;
    if !peer
        .boxes
        .req
        .put(hdr, len, fill, || direct::still(s, &peer))?
    {
        return Ok(false);
    }
    direct::delivered(s, peer, Counter::ReqDirect);
    Ok(true)
}
