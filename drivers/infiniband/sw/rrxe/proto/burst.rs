// SPDX-License-Identifier: GPL-2.0

//! Loopback bursts: consecutive packets of one SEND or RDMA WRITE message that go from a QP
//! to a QP of the same device as one datagram, which never reaches a wire. A burst has the
//! headers its first packet would have, the opcode of the part of the message it covers
//! (*First* if it starts the message, *Last* if it ends it, *Only* both, *Middle* neither),
//! and the payload of all its packets; it takes as many PSNs as it has packets.
//!
//! The responder checks a burst as each of its packets would be checked ([`check_burst`],
//! [`check_burst_write`]), with the path MTU the sender cut it by, which the datagram's
//! receive path carries beside it (only the loopback transmit path sets it): a burst
//! whose sender's MTU is not the responder's fails as its first packet would, on its
//! length.

use super::mtu::Mtu;
use super::opcode::{Opcode, Operation, Position};
use super::packet::pad_len;
use super::psn::Psn;
use super::requester::{Segment, MAX_MSG_SIZE};
use super::responder::RespError;
use super::reth::Reth;
use super::verbs::QpType;

/// Most packets a burst stands for.
pub const MAX_BURST: u32 = 64;

/// Most payload bytes a burst carries: 15 pages, which an skb holds as page fragments
/// (with one fragment left for the pad and ICRC) from any offset.
pub const MAX_BURST_PAYLOAD: usize = 15 * 4096;

/// Packets of a message sent as one burst ([`super::requester::Segmenter::next_burst`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Burst {
    /// The burst as one packet: its first packet's PSN and offset, the burst's opcode, all
    /// its payload, the message's bytes from its start.
    pub seg: Segment,
    /// Packets (and PSNs) it stands for: 1 for a single packet.
    pub k: u32,
}

impl Burst {
    /// The PSN of its last packet.
    pub const fn last_psn(&self) -> Psn {
        last_psn(self.seg.psn, self.k)
    }
}

/// The packets a burst of `payload_len` bytes cut by path MTU `mtu` stands for (for the
/// counters of the receive path, before [`check_burst`] checks it).
pub const fn packets(payload_len: u32, mtu: Mtu) -> u32 {
    payload_len.div_ceil(mtu.bytes())
}

/// The PSN of the last packet of a burst of `k` packets from `psn`: the one its acknowledge
/// names; the responder expects the PSN after it next.
pub const fn last_psn(psn: Psn, k: u32) -> Psn {
    psn.wrapping_add(k.saturating_sub(1))
}

/// The packets a burst of `payload_len` bytes with `opcode` (and RETH `reth`) stands for
/// at the responder of a `qp` QP (RC: bursts are sent by reference, which only RC
/// requesters do), whose path MTU is `mtu`, from a sender whose path MTU was
/// `sender_mtu`, with the lengths each of them would have to have (IBA C9-92,
/// [`super::responder::check_length`]): a burst that does not end its message carries a
/// whole number (two or more) of MTUs, one that ends it more than one MTU; at most
/// [`MAX_BURST`] packets and
/// [`MAX_BURST_PAYLOAD`] bytes; a RETH length of at most 2^31. Only SEND and RDMA WRITE
/// messages burst, and not the last packet of an RDMA WRITE with immediate data (which
/// takes a receive WQE: the packets before it land whether or not it finds one). A burst
/// whose sender's MTU differs fails as its first packet would: [`RespError::Length`].
pub const fn check_burst(
    qp: QpType,
    opcode: Opcode,
    payload_len: u32,
    reth: Option<Reth>,
    sender_mtu: Mtu,
    mtu: Mtu,
) -> Result<u32, RespError> {
    let write_imm = matches!(opcode.operation(), Operation::Write) && opcode.has_immediate();
    if !matches!(qp, QpType::Rc)
        || !matches!(opcode.operation(), Operation::Send | Operation::Write)
        || write_imm
        || sender_mtu.bytes() != mtu.bytes()
    {
        return Err(RespError::Length);
    }
    if let Some(r) = reth {
        if r.dma_len > MAX_MSG_SIZE {
            return Err(RespError::Length);
        }
    }
    let mtu = mtu.bytes();
    let (whole, rest) = (payload_len / mtu, payload_len % mtu);
    let k = match opcode.position() {
        // A First or Middle burst is of whole packets.
        Position::First | Position::Middle if rest == 0 => whole,
        Position::Last | Position::Only => payload_len.div_ceil(mtu),
        _ => return Err(RespError::Length),
    };
    if k < 2 || k > MAX_BURST || payload_len as usize > MAX_BURST_PAYLOAD {
        return Err(RespError::Length);
    }
    Ok(k)
}

/// Checks the payload of an RDMA WRITE burst of `k` packets (checked by [`check_burst`])
/// given `resid`, the bytes of the message not written yet, as
/// [`super::responder::check_write_payload`] checks each of its packets: every packet but
/// the last carries an MTU while more than an MTU remains; the last carries an MTU and no
/// pad while more than one remains after it, else exactly what remains and the pad that
/// rounds it to four.
pub const fn check_burst_write(
    resid: u32,
    payload_len: u32,
    pad: u8,
    k: u32,
    mtu: Mtu,
) -> Result<(), RespError> {
    let mtu = mtu.bytes();
    let before = k.saturating_sub(1).saturating_mul(mtu);
    // Each packet before the last met a residue above one MTU: the last of them saw
    // `resid - (k - 2) * mtu > mtu`.
    if resid <= before || payload_len <= before {
        return Err(RespError::Length);
    }
    let (resid, payload_len) = (resid - before, payload_len - before);
    let ok = if resid > mtu {
        payload_len == mtu && pad == 0
    } else {
        payload_len == resid && pad as usize == pad_len(resid as usize)
    };
    if ok {
        Ok(())
    } else {
        Err(RespError::Length)
    }
}
