// SPDX-License-Identifier: GPL-2.0

//! The BTH opcode table (IBA Vol 1 ch. 9 and the IBA 1.5 FLUSH / ATOMIC WRITE extension).
//!
//! An opcode is a transport (top three bits: RC `000`, UC `001`, UD `011`) plus an operation.
//! The opcode fixes which extension headers follow the BTH, in which order, and so the total
//! header length. Only the opcodes of RC, UC and UD that rxe speaks are known here: RD,
//! CNP and reserved values decode as [`ProtoError::UnknownOpcode`].

use super::{ProtoError, Result};

/// Length of the base transport header.
pub const BTH_LEN: usize = 12;

/// A set of extension headers (and whether a payload may follow).
///
/// On the wire the headers present follow the BTH in this order: FETH, RETH, DETH,
/// AtomicETH, AETH, AtomicAckETH, ImmDt, IETH (no opcode has both RETH and DETH, or both
/// ImmDt and IETH).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HeaderSet(u16);

impl HeaderSet {
    /// No extension header.
    pub const NONE: HeaderSet = HeaderSet(0);
    /// FLUSH extended transport header (4 bytes).
    pub const FETH: HeaderSet = HeaderSet(1 << 0);
    /// RDMA extended transport header (16 bytes).
    pub const RETH: HeaderSet = HeaderSet(1 << 1);
    /// Datagram extended transport header (8 bytes).
    pub const DETH: HeaderSet = HeaderSet(1 << 2);
    /// Atomic extended transport header (28 bytes).
    pub const ATOMIC_ETH: HeaderSet = HeaderSet(1 << 3);
    /// ACK extended transport header (4 bytes).
    pub const AETH: HeaderSet = HeaderSet(1 << 4);
    /// Atomic acknowledge extended transport header (8 bytes).
    pub const ATOMIC_ACK_ETH: HeaderSet = HeaderSet(1 << 5);
    /// Immediate data (4 bytes).
    pub const IMMDT: HeaderSet = HeaderSet(1 << 6);
    /// Invalidate extended transport header (4 bytes).
    pub const IETH: HeaderSet = HeaderSet(1 << 7);
    /// Not a header: the opcode carries a payload (possibly empty).
    pub const PAYLOAD: HeaderSet = HeaderSet(1 << 8);

    /// The union of two sets.
    pub const fn with(self, other: HeaderSet) -> HeaderSet {
        HeaderSet(self.0 | other.0)
    }

    /// True when every member of `other` is in `self`.
    pub const fn contains(self, other: HeaderSet) -> bool {
        self.0 & other.0 == other.0
    }

    /// Total length of the extension headers in the set.
    pub const fn ext_len(self) -> usize {
        let mut len = 0;
        if self.contains(HeaderSet::FETH) {
            len += 4;
        }
        if self.contains(HeaderSet::RETH) {
            len += 16;
        }
        if self.contains(HeaderSet::DETH) {
            len += 8;
        }
        if self.contains(HeaderSet::ATOMIC_ETH) {
            len += 28;
        }
        if self.contains(HeaderSet::AETH) {
            len += 4;
        }
        if self.contains(HeaderSet::ATOMIC_ACK_ETH) {
            len += 8;
        }
        if self.contains(HeaderSet::IMMDT) {
            len += 4;
        }
        if self.contains(HeaderSet::IETH) {
            len += 4;
        }
        len
    }
}

/// The transport service of an opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Reliable connection.
    Rc,
    /// Unreliable connection.
    Uc,
    /// Unreliable datagram.
    Ud,
}

/// The operation an opcode belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// SEND (with or without immediate data or invalidate).
    Send,
    /// RDMA WRITE (with or without immediate data).
    Write,
    /// RDMA READ request.
    ReadRequest,
    /// RDMA READ response (also the reply to FLUSH and ATOMIC WRITE).
    ReadResponse,
    /// Acknowledge (ACK or NAK).
    Ack,
    /// Atomic acknowledge.
    AtomicAck,
    /// CMP SWAP atomic.
    CompareSwap,
    /// FETCH ADD atomic.
    FetchAdd,
    /// FLUSH (IBA 1.5).
    Flush,
    /// ATOMIC WRITE (IBA 1.5).
    AtomicWrite,
}

/// Where a packet sits in its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Position {
    /// First packet of a multi-packet message.
    First,
    /// Middle packet of a multi-packet message.
    Middle,
    /// Last packet of a multi-packet message.
    Last,
    /// The only packet of a message.
    Only,
}

/// The BTH opcodes of RC, UC and UD that rrxe sends and accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Opcode {
    /// RC SEND First.
    RcSendFirst = 0x00,
    /// RC SEND Middle.
    RcSendMiddle = 0x01,
    /// RC SEND Last.
    RcSendLast = 0x02,
    /// RC SEND Last with Immediate.
    RcSendLastImm = 0x03,
    /// RC SEND Only.
    RcSendOnly = 0x04,
    /// RC SEND Only with Immediate.
    RcSendOnlyImm = 0x05,
    /// RC RDMA WRITE First.
    RcWriteFirst = 0x06,
    /// RC RDMA WRITE Middle.
    RcWriteMiddle = 0x07,
    /// RC RDMA WRITE Last.
    RcWriteLast = 0x08,
    /// RC RDMA WRITE Last with Immediate.
    RcWriteLastImm = 0x09,
    /// RC RDMA WRITE Only.
    RcWriteOnly = 0x0a,
    /// RC RDMA WRITE Only with Immediate.
    RcWriteOnlyImm = 0x0b,
    /// RC RDMA READ Request.
    RcReadRequest = 0x0c,
    /// RC RDMA READ Response First.
    RcReadResponseFirst = 0x0d,
    /// RC RDMA READ Response Middle.
    RcReadResponseMiddle = 0x0e,
    /// RC RDMA READ Response Last.
    RcReadResponseLast = 0x0f,
    /// RC RDMA READ Response Only.
    RcReadResponseOnly = 0x10,
    /// RC Acknowledge.
    RcAck = 0x11,
    /// RC ATOMIC Acknowledge.
    RcAtomicAck = 0x12,
    /// RC CmpSwap.
    RcCompareSwap = 0x13,
    /// RC FetchAdd.
    RcFetchAdd = 0x14,
    /// RC SEND Last with Invalidate.
    RcSendLastInv = 0x16,
    /// RC SEND Only with Invalidate.
    RcSendOnlyInv = 0x17,
    /// RC FLUSH.
    RcFlush = 0x1c,
    /// RC ATOMIC WRITE.
    RcAtomicWrite = 0x1d,
    /// UC SEND First.
    UcSendFirst = 0x20,
    /// UC SEND Middle.
    UcSendMiddle = 0x21,
    /// UC SEND Last.
    UcSendLast = 0x22,
    /// UC SEND Last with Immediate.
    UcSendLastImm = 0x23,
    /// UC SEND Only.
    UcSendOnly = 0x24,
    /// UC SEND Only with Immediate.
    UcSendOnlyImm = 0x25,
    /// UC RDMA WRITE First.
    UcWriteFirst = 0x26,
    /// UC RDMA WRITE Middle.
    UcWriteMiddle = 0x27,
    /// UC RDMA WRITE Last.
    UcWriteLast = 0x28,
    /// UC RDMA WRITE Last with Immediate.
    UcWriteLastImm = 0x29,
    /// UC RDMA WRITE Only.
    UcWriteOnly = 0x2a,
    /// UC RDMA WRITE Only with Immediate.
    UcWriteOnlyImm = 0x2b,
    /// UD SEND Only.
    UdSendOnly = 0x64,
    /// UD SEND Only with Immediate.
    UdSendOnlyImm = 0x65,
}

/// The longest BTH and extension headers of any opcode: a receiver that has this many
/// bytes of a packet (or all of it, if shorter) can decode its headers.
pub const MAX_HEADER_LEN: usize = {
    let (mut max, mut i) = (0, 0);
    while i < Opcode::ALL.len() {
        let len = Opcode::ALL[i].header_len();
        if len > max {
            max = len;
        }
        i += 1;
    }
    max
};

/// An opcode's operation, position in its message and extension headers.
type Shape = (Operation, Position, HeaderSet);

/// [`Opcode::decode_shape`] of every opcode, indexed by its byte (the bytes no opcode has
/// hold a filler that no [`Opcode`] can reach). A `static`: a `const` array indexed at run
/// time may be copied whole to the stack first (1 KiB, a `memcpy` per lookup, as in the
/// responder's checks).
static SHAPES: [Shape; 256] = {
    let mut t = [(Operation::Send, Position::Only, HeaderSet::NONE); 256];
    let mut i = 0;
    while i < Opcode::ALL.len() {
        let op = Opcode::ALL[i];
        t[op as u8 as usize] = op.decode_shape();
        i += 1;
    }
    t
};

/// [`Opcode::header_len`] of every opcode, indexed by its byte (0 where no opcode is),
/// from [`SHAPES`]: a load, not a sum over the extension headers, per packet.
static HEADER_LENS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < Opcode::ALL.len() {
        let op = Opcode::ALL[i] as u8 as usize;
        let len = BTH_LEN + SHAPES[op].2.ext_len();
        assert!(len <= u8::MAX as usize);
        t[op] = len as u8;
        i += 1;
    }
    t
};

// `ALL` is every opcode `from_u8` knows, so that `SHAPES` has each one's entry: as many,
// in strictly increasing order.
const _: () = {
    let (mut b, mut known) = (0, 0);
    while b < 256 {
        if Opcode::from_u8(b as u8).is_ok() {
            known += 1;
        }
        b += 1;
    }
    assert!(known == Opcode::ALL.len());
    let mut i = 1;
    while i < Opcode::ALL.len() {
        assert!((Opcode::ALL[i - 1] as u8) < Opcode::ALL[i] as u8);
        i += 1;
    }
};

impl Opcode {
    /// Every known opcode, in numeric order.
    pub const ALL: [Opcode; 39] = [
        Opcode::RcSendFirst,
        Opcode::RcSendMiddle,
        Opcode::RcSendLast,
        Opcode::RcSendLastImm,
        Opcode::RcSendOnly,
        Opcode::RcSendOnlyImm,
        Opcode::RcWriteFirst,
        Opcode::RcWriteMiddle,
        Opcode::RcWriteLast,
        Opcode::RcWriteLastImm,
        Opcode::RcWriteOnly,
        Opcode::RcWriteOnlyImm,
        Opcode::RcReadRequest,
        Opcode::RcReadResponseFirst,
        Opcode::RcReadResponseMiddle,
        Opcode::RcReadResponseLast,
        Opcode::RcReadResponseOnly,
        Opcode::RcAck,
        Opcode::RcAtomicAck,
        Opcode::RcCompareSwap,
        Opcode::RcFetchAdd,
        Opcode::RcSendLastInv,
        Opcode::RcSendOnlyInv,
        Opcode::RcFlush,
        Opcode::RcAtomicWrite,
        Opcode::UcSendFirst,
        Opcode::UcSendMiddle,
        Opcode::UcSendLast,
        Opcode::UcSendLastImm,
        Opcode::UcSendOnly,
        Opcode::UcSendOnlyImm,
        Opcode::UcWriteFirst,
        Opcode::UcWriteMiddle,
        Opcode::UcWriteLast,
        Opcode::UcWriteLastImm,
        Opcode::UcWriteOnly,
        Opcode::UcWriteOnlyImm,
        Opcode::UdSendOnly,
        Opcode::UdSendOnlyImm,
    ];

    /// Decodes a BTH opcode byte.
    pub const fn from_u8(v: u8) -> Result<Opcode> {
        Ok(match v {
            0x00 => Opcode::RcSendFirst,
            0x01 => Opcode::RcSendMiddle,
            0x02 => Opcode::RcSendLast,
            0x03 => Opcode::RcSendLastImm,
            0x04 => Opcode::RcSendOnly,
            0x05 => Opcode::RcSendOnlyImm,
            0x06 => Opcode::RcWriteFirst,
            0x07 => Opcode::RcWriteMiddle,
            0x08 => Opcode::RcWriteLast,
            0x09 => Opcode::RcWriteLastImm,
            0x0a => Opcode::RcWriteOnly,
            0x0b => Opcode::RcWriteOnlyImm,
            0x0c => Opcode::RcReadRequest,
            0x0d => Opcode::RcReadResponseFirst,
            0x0e => Opcode::RcReadResponseMiddle,
            0x0f => Opcode::RcReadResponseLast,
            0x10 => Opcode::RcReadResponseOnly,
            0x11 => Opcode::RcAck,
            0x12 => Opcode::RcAtomicAck,
            0x13 => Opcode::RcCompareSwap,
            0x14 => Opcode::RcFetchAdd,
            0x16 => Opcode::RcSendLastInv,
            0x17 => Opcode::RcSendOnlyInv,
            0x1c => Opcode::RcFlush,
            0x1d => Opcode::RcAtomicWrite,
            0x20 => Opcode::UcSendFirst,
            0x21 => Opcode::UcSendMiddle,
            0x22 => Opcode::UcSendLast,
            0x23 => Opcode::UcSendLastImm,
            0x24 => Opcode::UcSendOnly,
            0x25 => Opcode::UcSendOnlyImm,
            0x26 => Opcode::UcWriteFirst,
            0x27 => Opcode::UcWriteMiddle,
            0x28 => Opcode::UcWriteLast,
            0x29 => Opcode::UcWriteLastImm,
            0x2a => Opcode::UcWriteOnly,
            0x2b => Opcode::UcWriteOnlyImm,
            0x64 => Opcode::UdSendOnly,
            0x65 => Opcode::UdSendOnlyImm,
            _ => return Err(ProtoError::UnknownOpcode(v)),
        })
    }

    /// The opcode byte.
    pub const fn to_u8(self) -> u8 {
        self as u8
    }

    /// The transport service.
    pub const fn transport(self) -> Transport {
        match self.to_u8() >> 5 {
            0 => Transport::Rc,
            1 => Transport::Uc,
            _ => Transport::Ud,
        }
    }

    /// The operation, position in the message and extension headers of the opcode: a
    /// load from [`SHAPES`], which the per-packet paths ask for many times.
    const fn shape(self) -> Shape {
        SHAPES[self as u8 as usize]
    }

    /// What [`Opcode::shape`] gives, decided by a match (to build [`SHAPES`]).
    const fn decode_shape(self) -> Shape {
        use HeaderSet as H;
        use Operation as O;
        use Position as P;
        let p = H::PAYLOAD;
        let imm = H::PAYLOAD.with(H::IMMDT);
        match self {
            Opcode::RcSendFirst | Opcode::UcSendFirst => (O::Send, P::First, p),
            Opcode::RcSendMiddle | Opcode::UcSendMiddle => (O::Send, P::Middle, p),
            Opcode::RcSendLast | Opcode::UcSendLast => (O::Send, P::Last, p),
            Opcode::RcSendLastImm | Opcode::UcSendLastImm => (O::Send, P::Last, imm),
            Opcode::RcSendOnly | Opcode::UcSendOnly => (O::Send, P::Only, p),
            Opcode::RcSendOnlyImm | Opcode::UcSendOnlyImm => (O::Send, P::Only, imm),
            Opcode::RcSendLastInv => (O::Send, P::Last, p.with(H::IETH)),
            Opcode::RcSendOnlyInv => (O::Send, P::Only, p.with(H::IETH)),
            Opcode::RcWriteFirst | Opcode::UcWriteFirst => (O::Write, P::First, p.with(H::RETH)),
            Opcode::RcWriteMiddle | Opcode::UcWriteMiddle => (O::Write, P::Middle, p),
            Opcode::RcWriteLast | Opcode::UcWriteLast => (O::Write, P::Last, p),
            Opcode::RcWriteLastImm | Opcode::UcWriteLastImm => (O::Write, P::Last, imm),
            Opcode::RcWriteOnly | Opcode::UcWriteOnly => (O::Write, P::Only, p.with(H::RETH)),
            Opcode::RcWriteOnlyImm | Opcode::UcWriteOnlyImm => {
                (O::Write, P::Only, imm.with(H::RETH))
            }
            Opcode::RcReadRequest => (O::ReadRequest, P::Only, H::RETH),
            Opcode::RcReadResponseFirst => (O::ReadResponse, P::First, p.with(H::AETH)),
            Opcode::RcReadResponseMiddle => (O::ReadResponse, P::Middle, p),
            Opcode::RcReadResponseLast => (O::ReadResponse, P::Last, p.with(H::AETH)),
            Opcode::RcReadResponseOnly => (O::ReadResponse, P::Only, p.with(H::AETH)),
            Opcode::RcAck => (O::Ack, P::Only, H::AETH),
            Opcode::RcAtomicAck => (O::AtomicAck, P::Only, H::AETH.with(H::ATOMIC_ACK_ETH)),
            Opcode::RcCompareSwap => (O::CompareSwap, P::Only, H::ATOMIC_ETH),
            Opcode::RcFetchAdd => (O::FetchAdd, P::Only, H::ATOMIC_ETH),
            Opcode::RcFlush => (O::Flush, P::Only, H::FETH.with(H::RETH)),
            Opcode::RcAtomicWrite => (O::AtomicWrite, P::Only, p.with(H::RETH)),
            Opcode::UdSendOnly => (O::Send, P::Only, p.with(H::DETH)),
            Opcode::UdSendOnlyImm => (O::Send, P::Only, imm.with(H::DETH)),
        }
    }

    /// The operation.
    pub const fn operation(self) -> Operation {
        self.shape().0
    }

    /// The position of the packet in its message.
    pub const fn position(self) -> Position {
        self.shape().1
    }

    /// The extension headers (and [`HeaderSet::PAYLOAD`] when a payload may follow).
    pub const fn headers(self) -> HeaderSet {
        self.shape().2
    }

    /// Length of BTH plus extension headers.
    pub const fn header_len(self) -> usize {
        HEADER_LENS[self as u8 as usize] as usize
    }

    /// True when the opcode may carry a payload.
    pub const fn has_payload(self) -> bool {
        self.headers().contains(HeaderSet::PAYLOAD)
    }

    /// True when the opcode carries immediate data.
    pub const fn has_immediate(self) -> bool {
        self.headers().contains(HeaderSet::IMMDT)
    }

    /// True when the opcode carries an IETH (SEND with invalidate).
    pub const fn has_invalidate(self) -> bool {
        self.headers().contains(HeaderSet::IETH)
    }

    /// True for the first or only packet of a message.
    pub const fn is_start(self) -> bool {
        matches!(self.position(), Position::First | Position::Only)
    }

    /// True for the last or only packet of a message.
    pub const fn is_end(self) -> bool {
        matches!(self.position(), Position::Last | Position::Only)
    }

    /// True for packets sent by a requester (as opposed to responses: read responses and
    /// acknowledges).
    pub const fn is_request(self) -> bool {
        !matches!(
            self.operation(),
            Operation::ReadResponse | Operation::Ack | Operation::AtomicAck
        )
    }

    /// True when the packet consumes a receive WQE at the responder: the first (or only)
    /// packet of a SEND, and the last (or only) packet of an RDMA WRITE with immediate data.
    pub const fn consumes_recv_wqe(self) -> bool {
        match self.operation() {
            Operation::Send => self.is_start(),
            Operation::Write => self.has_immediate(),
            _ => false,
        }
    }

    /// True when the packet completes a receive WQE at the responder: the last (or only)
    /// packet of a SEND, and an RDMA WRITE with immediate data.
    pub const fn completes_recv_wqe(self) -> bool {
        match self.operation() {
            Operation::Send => self.is_end(),
            Operation::Write => self.has_immediate(),
            _ => false,
        }
    }
}
