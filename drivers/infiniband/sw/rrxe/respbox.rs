// SPDX-License-Identifier: GPL-2.0

//! Responses between two connected QPs of this device without a packet
//! ([`crate::direct`]: who may leave them, and the order). A responder's positive ACK,
//! atomic acknowledge or one-packet RDMA READ response to a loopback peer is left in the
//! peer's [`RespBox`], which its completer takes, after each response it pops from its
//! queue and before it handles it, and handles as it would the responses' packets
//! ([`crate::comp::on_left`]). A ping-pong's message needs an ACK before its completion
//! (its WQE is signalled), so each of its messages sent a second packet for it.
//!
//! Only the ACK the responder owes goes so ([`crate::eng::Resp::owed_ack`]: coalesced, or
//! at once for a packet that asks for one within its message; [`leave_ack`]), atomic
//! acknowledges, and READ responses of one packet ([`leave_atomic`], [`leave_read`]). An
//! ACK replaces one not taken yet that is the box's last response, which it covers for
//! completion (an ACK acknowledges every PSN before its own), counted as coalesced; so
//! ACKs left while a READ or atomic answer is missing count as one toward the implicit
//! NAK, and a lost answer may wait for the retransmission timer instead.

use crate::{
    counters::Counter,
    direct::{self, Batch, Mailbox},
    pass::Pass,
    proto::{opcode::Opcode, psn::Psn},
    qp::QpShared,
    tx::Sender,
};
use kernel::{new_spinlock, prelude::*, sync::Arc};

/// What a response left in a box is.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    /// A positive acknowledge.
    Ack,
    /// An RDMA READ response of one packet (its data is the payload).
    Read,
    /// An atomic acknowledge with the original value.
    Atomic(u64),
}

impl Kind {
    /// The opcode of the response's packet.
    pub(crate) fn opcode(self) -> Opcode {
        match self {
            Kind::Ack => Opcode::RcAck,
            Kind::Read => Opcode::RcReadResponseOnly,
            Kind::Atomic(_) => Opcode::RcAtomicAck,
        }
    }
}

/// A response left in a box (positive: its AETH's syndrome is an ACK).
#[derive(Clone, Copy)]
pub(crate) struct Resp {
    /// Its PSN.
    pub(crate) psn: Psn,
    /// The MSN of its AETH.
    pub(crate) msn: u32,
    /// What it is.
    pub(crate) kind: Kind,
}

/// Responses a loopback peer left for a QP's completer ([`crate::respbox`]).
pub(crate) type RespBox = Mailbox<Resp>;

/// An empty response box.
pub(crate) fn new_box() -> impl PinInit<RespBox> {
    Mailbox::new(new_spinlock!(Batch::new(), "rrxe:resp_box"))
}

/// The loopback peer of the pass's responder that may take its responses from a box
/// ([`direct::peer`]), with the responder's sender.
fn peer<'a>(p: &'a Pass<'_>) -> Option<(Sender<'a>, Arc<QpShared>)> {
    let s = Sender {
        dev: p.dev,
        link: p.link,
        owner: p.inner.tx.as_ref()?,
        path: &p.inner.path,
    };
    let peer = direct::peer(&s, p.inner.params.dest_qpn)?;
    Some((s, peer))
}

/// Leaves the ACK of `psn` (MSN `msn`) that the pass's responder owes for its loopback
/// peer; false if it must go as a packet ([`direct::peer`], or a full box).
pub(crate) fn leave_ack(p: &Pass<'_>, psn: Psn, msn: u32) -> bool {
    let Some((s, peer)) = peer(p) else {
        return false;
    };
    let ack = Resp {
        psn,
        msn,
        kind: Kind::Ack,
    };
    // A later ACK covers the last one left if it was not taken.
    let merge = |last: &mut Resp| {
        let covers = matches!(last.kind, Kind::Ack);
        if covers {
            *last = ack;
        }
        covers
    };
    let Some(merged) = peer
        .boxes
        .resp
        .put_or_merge(ack, merge, || direct::still(&s, &peer))
    else {
        return false;
    };
    if merged {
        p.count(Counter::AckCoalesced);
    }
    direct::delivered(&s, peer, Counter::AckDirect);
    true
}

/// Leaves the atomic acknowledge of `psn` (MSN `msn`, original value `orig`) for the
/// pass's loopback peer; false if it must go as a packet.
pub(crate) fn leave_atomic(p: &Pass<'_>, psn: Psn, msn: u32, orig: u64) -> bool {
    let kind = Kind::Atomic(orig);
    leave_read_or_atomic(p, Resp { psn, msn, kind }, 0, |_| Ok::<(), ()>(())) == Ok(true)
}

/// Leaves a one-packet READ response of `psn` (MSN `msn`) with `len` bytes that `fill`
/// writes for the pass's loopback peer: `Ok(false)` if it must go as a packet, `fill`'s
/// error if it failed (nothing left).
pub(crate) fn leave_read<E>(
    p: &Pass<'_>,
    psn: Psn,
    msn: u32,
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> Result<(), E>,
) -> Result<bool, E> {
    let kind = Kind::Read;
    leave_read_or_atomic(p, Resp { psn, msn, kind }, len, fill)
}

/// Leaves `r` with `len` bytes that `fill` writes for the pass's loopback peer.
fn leave_read_or_atomic<E>(
    p: &Pass<'_>,
    r: Resp,
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> Result<(), E>,
) -> Result<bool, E> {
    if len > direct::MAX_BOXED {
        return Ok(false);
    }
    let Some((s, peer)) = peer(p) else {
        return Ok(false);
    };
    if !peer
        .boxes
        .resp
        .put(r, len, fill, || direct::still(&s, &peer))?
    {
        return Ok(false);
    }
    direct::delivered(&s, peer, Counter::RespDirect);
    Ok(true)
}
