// SPDX-License-Identifier: GPL-2.0

//! Acknowledges between two connected QPs of this device without a packet. A responder's
//! positive ACK to a loopback peer is left in the peer's [`AckBox`], one word, where its
//! completer takes it as it would take the ACK's packet; no skb is allocated, built,
//! looped back, queued, parsed or freed for it. A ping-pong's message needs an ACK before
//! its completion (its WQE is signalled), so each of its messages sent a second packet
//! for it: about a fifth of a small message's engine time (2026-11-30).
//!
//! Only the ACK the responder owes goes so ([`crate::eng::Resp::owed_ack`]: coalesced, or
//! at once for a packet that asks for one within its message; [`leave`]), and only to the
//! QP it is connected to, as that QP is to it ([`crate::task::SentBy::peers`]), the only
//! QP allowed to leave one. Admission's address checks are not made: they do not tell
//! local senders apart (any local QP may choose its source among the device's GIDs, and
//! any local process may send a datagram to the RoCE port), and the P_Key is the default
//! one on both. NAKs, READ responses and atomic acknowledges stay packets.
//!
//! Order: a completer takes responses in the order they were sent. The responder leaves
//! an ACK only when none of its skbs is in flight, and the completer looks into its box
//! after each response it takes from its queue and before it handles it. So every packet
//! the responder sent before the ACK was taken first (its skb leaves the responder's
//! count only when the completer frees it, after taking it: nothing orphans, clones or
//! requeues a loopback skb, and the pass is the one place that takes responses, one at a
//! time, [`crate::qp::QpShared::resp_q`]); and a packet sent after it was queued after
//! the box was written, so the completer that takes that packet sees the ACK and handles
//! it first (`data-check`'s mixed batches). A packet lost meanwhile (a full queue) is
//! lost as before.
//!
//! A later ACK replaces one not taken yet, which it covers for completion (an ACK
//! acknowledges every PSN before its own), counted as coalesced; so ACKs left while a
//! READ or atomic answer is missing count as one toward the implicit NAK, and a lost
//! answer may wait for the retransmission timer instead. A QP's reset empties its box,
//! but its peer may leave one again until the QP is connected anew: as a packet queued
//! then, which the reset does not purge either, it is judged against the PSNs
//! outstanding when it is taken.

use crate::{
    counters::Counter,
    pass::Pass,
    proto::{aeth::MSN_MASK, bth::QPN_MASK, psn::Psn},
    qp::NO_PEER,
    tx,
};
use core::sync::atomic::{AtomicU64, Ordering};

/// An acknowledge (PSN and MSN) left for a QP's completer, or none.
pub(crate) struct AckBox(AtomicU64);

/// The bit of a box that holds an acknowledge (which tells PSN 0 and MSN 0 from none).
const FULL: u64 = 1 << 63;

impl AckBox {
    /// An empty box.
    pub(crate) const fn new() -> Self {
        AckBox(AtomicU64::new(0))
    }

    /// Leaves the acknowledge of `psn` with MSN `msn`; true if it replaced one not taken
    /// yet.
    fn put(&self, psn: Psn, msn: u32) -> bool {
        let word = FULL | u64::from(msn & MSN_MASK) << 24 | u64::from(psn.value());
        // Release: whoever sees the completion this ACK makes sees the data the responder
        // placed for the requests it acknowledges (the order against later packets comes
        // from the queue's lock).
        self.0.swap(word, Ordering::Release) != 0
    }

    /// Takes the acknowledge left, if any: its PSN and MSN.
    pub(crate) fn take(&self) -> Option<(Psn, u32)> {
        // A load first: a box is mostly empty, and a swap is a locked instruction.
        if self.0.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let word = self.0.swap(0, Ordering::Acquire);
        if word & FULL == 0 {
            return None;
        }
        let msn = (word >> 24) as u32 & MSN_MASK;
        Some((Psn::new(word as u32), msn))
    }

    /// Whether an acknowledge is left.
    pub(crate) fn is_full(&self) -> bool {
        self.0.load(Ordering::Relaxed) != 0
    }

    /// Empties the box (the QP is reset; see the module's documentation).
    pub(crate) fn clear(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

/// Leaves the ACK of `psn` (MSN `msn`) that the pass's responder owes in the box of the
/// QP it is connected to, and hands that QP to the pass's caller as its packet would
/// ([`crate::task::SentBy::wake`]); false if it must go as a packet: no loopback peer
/// connected to it (only userspace RC and UC QPs have one, and only RC QPs owe ACKs), or
/// some of its skbs still in flight (see the order above).
pub(crate) fn leave(p: &Pass<'_>, psn: Psn, msn: u32) -> bool {
    if p.qp.peer.load(Ordering::Relaxed) == NO_PEER {
        return false;
    }
    let Some(owner) = p.inner.tx.as_ref() else {
        return false;
    };
    if owner.in_flight() != 0 || !tx::loops_back(&p.link, &p.inner.path) {
        return false;
    }
    let qpn = p.inner.params.dest_qpn & QPN_MASK;
    let by = p.link.by;
    let Some(peer) = by.lookup(p.dev.data(), qpn) else {
        return false;
    };
    if !by.peers(&peer) {
        return false;
    }
    let replaced = peer.ack_box.put(psn, msn);
    // Counted as its packet would be, sent and received.
    let data = p.dev.data();
    data.count(Counter::SentPkts);
    data.count(Counter::RcvdPkts);
    data.count(Counter::AckDirect);
    if replaced {
        data.count(Counter::AckCoalesced);
    }
    by.wake(peer);
    true
}
