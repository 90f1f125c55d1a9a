// SPDX-License-Identifier: GPL-2.0

//! Loopback bursts: consecutive packets of one SEND or RDMA WRITE message, or consecutive
//! responses of one RDMA READ, that go from a QP to a QP of the same device as one
//! datagram, which never reaches a wire. A burst has the headers its first packet would
//! have, the opcode of the part of the message it covers (*First* if it starts the message,
//! *Last* if it ends it, *Only* both, *Middle* neither), and the payload of all its
//! packets; it takes as many PSNs as it has packets.
//!
//! The responder checks a burst as each of its packets would be checked ([`check_burst`],
//! [`check_burst_write`]), with the path MTU the sender cut it by, which the datagram's
//! receive path carries beside it (only the loopback transmit path sets it): a burst
//! whose sender's MTU is not the responder's fails as its first packet would, on its
//! length. The completer takes a burst of READ responses only where it would take each of
//! them in turn, at the PSN it expects ([`check_read_burst`]); anywhere else it drops it,
//! and the read's retry asks for the responses again (a replay goes packet by packet).

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

/// Most payload bytes a burst of RDMA READ responses carries: 7 pages. The responder copies
/// the data into the datagram (memory that a remote key names is never sent by reference,
/// as for single responses: the copy is the data at the time of the response), which with
/// its headers stays within one allocation of 32 KiB.
pub const MAX_READ_BURST_PAYLOAD: usize = 7 * 4096;

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

/// The PSN of the last packet of a burst of `k` packets from `psn`: the one its acknowledge
/// names; the responder expects the PSN after it next.
pub const fn last_psn(psn: Psn, k: u32) -> Psn {
    psn.wrapping_add(k.saturating_sub(1))
}

/// The packets a burst of `payload_len` bytes with `opcode` (and RETH `reth`) stands for
/// at the responder of a `qp` QP (RC: request bursts are sent by reference, which only RC
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
    {
        return Err(RespError::Length);
    }
    if let Some(r) = reth {
        if r.dma_len > MAX_MSG_SIZE {
            return Err(RespError::Length);
        }
    }
    match shape(opcode, payload_len, sender_mtu, mtu, MAX_BURST_PAYLOAD) {
        Some(k) => Ok(k),
        None => Err(RespError::Length),
    }
}

/// The packets a burst with `opcode` and `payload_len` bytes stands for, cut by path MTU
/// `mtu` (and by its sender's, `sender_mtu`, which must be the same): one that does not
/// end its message carries a whole number of MTUs, one that ends it the rest; two or more
/// packets, at most [`MAX_BURST`], and at most `max_payload` bytes.
const fn shape(
    opcode: Opcode,
    payload_len: u32,
    sender_mtu: Mtu,
    mtu: Mtu,
    max_payload: usize,
) -> Option<u32> {
    if sender_mtu.bytes() != mtu.bytes() {
        return None;
    }
    let mtu = mtu.bytes();
    let (whole, rest) = (payload_len / mtu, payload_len % mtu);
    let k = match opcode.position() {
        // A First or Middle burst is of whole packets.
        Position::First | Position::Middle if rest == 0 => whole,
        Position::Last | Position::Only => payload_len.div_ceil(mtu),
        _ => return None,
    };
    if k < 2 || k > MAX_BURST || payload_len as usize > max_payload {
        return None;
    }
    Some(k)
}

/// A burst of RDMA READ responses taken by the completer: where its data goes and the PSN
/// of its last response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReadBurst {
    /// Offset of its data in the read.
    pub offset: u32,
    /// PSN of its last response.
    pub last_psn: Psn,
}

/// Checks a burst of RDMA READ responses with `opcode`, first PSN `psn` and `payload_len`
/// bytes, cut by its sender's path MTU `sender_mtu`, that the completer judged to be the
/// data it expects next ([`super::completer::Verdict::ReadData`]) of an RDMA READ of
/// `byte_len` bytes whose responses are `first_psn` to `read_last`, with path MTU `mtu`:
/// each of its responses must be what the completer takes there one by one, a whole MTU
/// for every response but the read's last, whose opcode ends the read and which carries
/// the rest (whatever the opcode before it: the answer to a range asked for again ends
/// with *Last* where the range does); and it must not reach past the read. `None` if not.
#[allow(clippy::too_many_arguments)]
pub const fn check_read_burst(
    opcode: Opcode,
    psn: Psn,
    payload_len: u32,
    sender_mtu: Mtu,
    mtu: Mtu,
    first_psn: Psn,
    read_last: Psn,
    byte_len: u32,
) -> Option<ReadBurst> {
    if !matches!(opcode.operation(), Operation::ReadResponse) {
        return None;
    }
    let Some(k) = shape(opcode, payload_len, sender_mtu, mtu, MAX_READ_BURST_PAYLOAD) else {
        return None;
    };
    let (at, span) = (
        psn.distance_from(first_psn),
        read_last.distance_from(first_psn),
    );
    let Some(end) = at.checked_add(k - 1) else {
        return None;
    };
    if end > span {
        return None;
    }
    let offset = at as u64 * mtu.bytes() as u64;
    if offset > byte_len as u64 {
        return None;
    }
    let rest = byte_len as u64 - offset;
    let fits = if end == span {
        opcode.is_end() && payload_len as u64 == rest
    } else {
        payload_len as u64 == k as u64 * mtu.bytes() as u64
    };
    if !fits {
        return None;
    }
    Some(ReadBurst {
        offset: offset as u32,
        last_psn: last_psn(psn, k),
    })
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
