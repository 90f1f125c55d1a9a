// SPDX-License-Identifier: GPL-2.0

//! Acknowledges between two connected QPs of this device without a packet. A responder's
//! positive ACK to a loopback peer is left in the peer's [`AckBox`], one word, where its
//! completer takes it as it would take the ACK's packet; no skb is allocated, built,
//! looped back, queued, parsed or freed for it. A ping-pong's message needs an ACK before
//! its completion (its WQE is signalled), so each of its messages sent a second packet
//! for it: a fifth of a small message's engine time (2026-11-30).
//!
//! Only the responder's coalesced ACK goes so ([`leave`]), and only to the QP it is
//! connected to, as that QP is to it ([`SentBy::peers`]): the QP that alone could send it
//! that ACK as a packet (any local QP may choose its source address among the device's
//! GIDs, so the address checks a packet would pass tell nothing more). NAKs, READ
//! responses and atomic acknowledges stay packets.
//!
//! Order: a completer takes responses in the order they were sent. The responder leaves
//! an ACK only when none of its skbs is in flight (every packet it sent before has been
//! taken and freed), and the completer looks into its box after each response it takes
//! from its queue and before it handles it: a packet the responder sent after the ACK
//! was queued after the ACK was left, so the completer that takes that packet sees the
//! ACK and handles it first. A later ACK replaces one not taken yet, which it covers (an
//! ACK acknowledges every PSN before its own).

use crate::{
    counters::Counter,
    pass::Pass,
    proto::{bth::QPN_MASK, psn::Psn, verbs::QpType},
    qp::NO_PEER,
    tx,
};
use core::sync::atomic::{AtomicU64, Ordering};

/// An acknowledge (PSN and MSN) left for a QP's completer, or none.
pub(crate) struct AckBox(AtomicU64);

/// The bit of a box that holds an acknowledge.
const FULL: u64 = 1 << 63;
/// The bits of an MSN (as of a PSN).
const MSN_MASK: u32 = 0x00ff_ffff;

impl AckBox {
    /// An empty box.
    pub(crate) const fn new() -> Self {
        AckBox(AtomicU64::new(0))
    }

    /// Leaves the acknowledge of `psn` with MSN `msn`, in place of one not taken yet.
    fn put(&self, psn: Psn, msn: u32) {
        let word = FULL | u64::from(msn & MSN_MASK) << 24 | u64::from(psn.value());
        // Release: the completer that takes it sees what the responder did before.
        self.0.store(word, Ordering::Release);
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

    /// Empties the box (the QP is reset).
    pub(crate) fn clear(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

/// Leaves the ACK of `psn` (MSN `msn`) that the pass's responder owes in the box of the
/// QP it is connected to, and hands that QP to the pass's caller as its packet would
/// ([`crate::task::SentBy::wake`]); false if it must go as a packet: not an RC QP with a
/// loopback peer connected to it, or some of its skbs still in flight (see the order
/// above).
pub(crate) fn leave(p: &Pass<'_>, psn: Psn, msn: u32) -> bool {
    let qp = p.qp;
    if qp.qp_type != QpType::Rc || qp.peer.load(Ordering::Relaxed) == NO_PEER {
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
    let Some(peer) = by.woken.find(qpn).or_else(|| p.dev.data().qps().get(qpn)) else {
        return false;
    };
    if !by.peers(&peer) {
        return false;
    }
    peer.acks.put(psn, msn);
    // Counted as its packet would be, sent and received.
    let data = p.dev.data();
    data.count(Counter::SentPkts);
    data.count(Counter::RcvdPkts);
    data.count(Counter::AckDirect);
    by.wake(peer);
    true
}
