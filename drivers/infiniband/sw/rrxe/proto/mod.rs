// SPDX-License-Identifier: GPL-2.0

//! rrxe protocol core: the InfiniBand transport (IBTA Vol 1 ch. 9) as carried by RoCEv2
//! (Annex A17), written as plain `no_std` Rust without `alloc` or kernel dependencies.
//!
//! The driver compiles this directory in as a module; a host crate
//! (`tools/host/rrxe-proto`) compiles the very same files for `cargo test`, property tests
//! and fuzzing.
//!
//! Layout:
//! - wire formats, one header per file: [`bth`], [`reth`], [`aeth`], [`atomic`] (AtomicETH
//!   and AtomicAckETH), [`deth`], [`immdt`], [`ieth`], [`flush`] (FETH and the ATOMIC WRITE
//!   payload);
//! - [`opcode`]: the opcode table (which headers each opcode carries, their total length);
//! - [`packet`]: whole-packet parse and build over borrowed buffers;
//! - [`icrc`]: the RoCEv2 invariant CRC over the masked pseudo-header;
//! - [`psn`], [`mtu`], [`timers`], [`verbs`]: arithmetic, sizes and verbs-level values;
//! - decision logic: [`admit`] (which packets a QP takes), [`requester`], [`responder`],
//!   [`completer`], [`readholes`] (the selective retry of an RDMA READ) and [`burst`]
//!   (several packets of a message between two QPs of one device as one datagram).
//!
//! Everything that looks at packet or user data is total: decoding returns
//! `Result<_, ProtoError>`, slices are taken with `get`, and sequence numbers and lengths use
//! wrapping or checked arithmetic. Wire fields are big-endian.

#![forbid(unsafe_code)]

pub mod admit;
pub mod aeth;
pub mod atomic;
pub mod bth;
pub mod burst;
pub mod completer;
pub mod deth;
pub mod flush;
pub mod grh;
pub mod icrc;
pub mod ieth;
pub mod immdt;
pub mod mtu;
pub mod opcode;
pub mod packet;
pub mod psn;
pub mod readholes;
pub mod requester;
pub mod responder;
pub mod reth;
pub mod timers;
pub mod verbs;
mod wire;

/// Why a packet or header could not be decoded or encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtoError {
    /// The input is shorter than the headers (plus pad and ICRC) it must hold.
    Truncated,
    /// The output buffer is too small for what is to be written.
    BufferTooSmall,
    /// The BTH opcode is not one this transport implements (RD, CNP, reserved values).
    UnknownOpcode(u8),
    /// The BTH transport header version is not 0.
    BadTransportVersion(u8),
    /// The payload is longer than the largest IBA MTU (4096 bytes).
    PayloadTooLong,
    /// Payload or pad bytes follow the headers of an opcode that carries no payload.
    UnexpectedPayload,
    /// The packet length is not a multiple of four bytes: the pad count does not round the
    /// payload up to a 4-byte boundary.
    Misaligned,
    /// A field value does not fit its wire width (for example a QPN above 2^24 - 1).
    FieldOutOfRange,
    /// The extension headers supplied for encoding are not the opcode's header set.
    HeaderMismatch,
    /// The IP or UDP header given for the ICRC is not a plain IPv4 (20 bytes), IPv6 (40 bytes)
    /// or UDP (8 bytes) header.
    BadNetworkHeader,
    /// The ICRC stored in the packet differs from the computed one.
    BadIcrc,
}

/// Result type of the protocol core.
pub type Result<T> = core::result::Result<T, ProtoError>;
