// SPDX-License-Identifier: GPL-2.0

//! The userspace ABI of the rxe provider (`include/uapi/rdma/rdma_user_rxe.h`), which rrxe
//! shares with `rdma_rxe`: which of its structures may be copied to or from userspace, and
//! read access to its work queue elements (`struct rxe_send_wqe`, `struct rxe_recv_wqe`)
//! copied out of a shared queue. The unions of the ABI hold integers only, so every member
//! may be read whatever was written.
//!
//! The generic RDMA abstractions know nothing of this ABI: they take any
//! [`AsBytes`]/[`FromBytes`] type.

use crate::bindings;
use kernel::types::{AsBytes, FromBytes};

// SAFETY: Integers, integer arrays and unions of them (the `reg` member's pointer is only
// ever used as a number); no interior mutability.
unsafe impl FromBytes for bindings::rxe_send_wqe {}
// SAFETY: Integers; no interior mutability.
unsafe impl FromBytes for bindings::rxe_recv_wqe {}
// SAFETY: Integers; no interior mutability.
unsafe impl FromBytes for bindings::rxe_sge {}

// SAFETY: Two `__u64`-aligned fields of 8 + 4 + 4 bytes, no implicit padding; integers only.
unsafe impl AsBytes for bindings::mminfo {}
// SAFETY: One `mminfo`.
unsafe impl AsBytes for bindings::rxe_create_cq_resp {}
// SAFETY: One `mminfo`.
unsafe impl AsBytes for bindings::rxe_resize_cq_resp {}
// SAFETY: Two `mminfo`s.
unsafe impl AsBytes for bindings::rxe_create_qp_resp {}
// SAFETY: Two `__u32`.
unsafe impl AsBytes for bindings::rxe_create_ah_resp {}
// SAFETY: An `mminfo` and two `__u32`.
unsafe impl AsBytes for bindings::rxe_create_srq_resp {}
// SAFETY: One `__u64`: any bit pattern is valid; no interior mutability.
unsafe impl FromBytes for bindings::rxe_modify_srq_cmd {}

/// A send WQE copied out of a send queue.
#[repr(transparent)]
pub struct SendWqeRaw(pub(crate) bindings::rxe_send_wqe);

/// A receive WQE copied out of a receive queue.
#[repr(transparent)]
pub struct RecvWqeRaw(pub(crate) bindings::rxe_recv_wqe);

/// The RDMA part of a send WQE: remote address and key.
pub struct RdmaFields {
    /// Remote address.
    pub remote_addr: u64,
    /// Remote key.
    pub rkey: u32,
}

/// The atomic part of a send WQE.
pub struct AtomicFields {
    /// Remote address.
    pub remote_addr: u64,
    /// Compare (CMP_SWAP) or add (FETCH_ADD) operand.
    pub compare_add: u64,
    /// Swap operand.
    pub swap: u64,
    /// Remote key.
    pub rkey: u32,
}

/// The FLUSH part of a send WQE.
pub struct FlushFields {
    /// Remote address.
    pub remote_addr: u64,
    /// Remote key.
    pub rkey: u32,
    /// Placement type (`IB_FLUSH_GLOBAL`, `IB_FLUSH_PERSISTENT`).
    pub type_: u8,
    /// Selectivity level (`IB_FLUSH_RANGE`, `IB_FLUSH_MR`).
    pub level: u8,
}

/// The UD part of a send WQE.
pub struct UdFields {
    /// Destination QP.
    pub remote_qpn: u32,
    /// Q_Key.
    pub remote_qkey: u32,
    /// Address handle number.
    pub ah_num: u32,
}

/// The memory window bind part of a send WQE.
pub struct MwFields {
    /// Start of the window.
    pub addr: u64,
    /// Length of the window.
    pub length: u64,
    /// Key of the MR the window lies in.
    pub mr_lkey: u32,
    /// Current rkey of the window.
    pub mw_rkey: u32,
    /// New rkey of the window.
    pub rkey: u32,
    /// Access rights of the window.
    pub access: u32,
}

impl SendWqeRaw {
    /// The work request id.
    pub fn wr_id(&self) -> u64 {
        self.0.wr.wr_id
    }

    /// The opcode (`IB_WR_*`).
    pub fn opcode(&self) -> u32 {
        self.0.wr.opcode
    }

    /// The send flags (`IB_SEND_*`).
    pub fn send_flags(&self) -> u32 {
        self.0.wr.send_flags
    }

    /// Immediate data (as on the wire) or the rkey to invalidate.
    pub fn ex(&self) -> u32 {
        // SAFETY: Both members are 32-bit integers.
        unsafe { *self.0.wr.ex.invalidate_rkey.as_ref() }
    }

    /// The message length userspace gave.
    pub fn dma_length(&self) -> u32 {
        self.0.dma.length
    }

    /// The number of SGEs.
    pub fn num_sge(&self) -> u32 {
        self.0.dma.num_sge
    }

    /// The RDMA member.
    pub fn rdma(&self) -> RdmaFields {
        // SAFETY: Integer-only union member (see the module doc).
        let r = unsafe { self.0.wr.wr.rdma.as_ref() };
        RdmaFields {
            remote_addr: r.remote_addr,
            rkey: r.rkey,
        }
    }

    /// The atomic member.
    pub fn atomic(&self) -> AtomicFields {
        // SAFETY: Integer-only union member.
        let a = unsafe { self.0.wr.wr.atomic.as_ref() };
        AtomicFields {
            remote_addr: a.remote_addr,
            compare_add: a.compare_add,
            swap: a.swap,
            rkey: a.rkey,
        }
    }

    /// The FLUSH member.
    pub fn flush(&self) -> FlushFields {
        // SAFETY: Integer-only union member.
        let f = unsafe { self.0.wr.wr.flush.as_ref() };
        FlushFields {
            remote_addr: f.remote_addr,
            rkey: f.rkey,
            type_: f.type_,
            level: f.level,
        }
    }

    /// The UD member.
    pub fn ud(&self) -> UdFields {
        // SAFETY: Integer-only union member.
        let u = unsafe { self.0.wr.wr.ud.as_ref() };
        UdFields {
            remote_qpn: u.remote_qpn,
            remote_qkey: u.remote_qkey,
            ah_num: u.ah_num,
        }
    }

    /// The memory window member.
    pub fn mw(&self) -> MwFields {
        // SAFETY: Integer-only union member.
        let m = unsafe { self.0.wr.wr.mw.as_ref() };
        MwFields {
            addr: m.addr,
            length: m.length,
            mr_lkey: m.mr_lkey,
            mw_rkey: m.mw_rkey,
            rkey: m.rkey,
            access: m.access,
        }
    }
}

impl RecvWqeRaw {
    /// The work request id.
    pub fn wr_id(&self) -> u64 {
        self.0.wr_id
    }

    /// The number of SGEs.
    pub fn num_sge(&self) -> u32 {
        self.0.dma.num_sge
    }
}

// SAFETY: A transparent wrapper of a `FromBytes` type.
unsafe impl FromBytes for SendWqeRaw {}
// SAFETY: A transparent wrapper of a `FromBytes` type.
unsafe impl FromBytes for RecvWqeRaw {}
