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
use core::mem::{offset_of, size_of};
use kernel::types::{AsBytes, FromBytes};

/// Where a queue's memory is mapped (`struct mminfo`), for userspace to `mmap`.
pub type MmInfo = bindings::mminfo;
/// The response of `create_cq` (`struct rxe_create_cq_resp`).
pub type CreateCqResp = bindings::rxe_create_cq_resp;
/// The response of `resize_cq` (`struct rxe_resize_cq_resp`).
pub type ResizeCqResp = bindings::rxe_resize_cq_resp;
/// The response of `create_qp` (`struct rxe_create_qp_resp`).
pub type CreateQpResp = bindings::rxe_create_qp_resp;
/// The response of `create_ah` (`struct rxe_create_ah_resp`).
pub type CreateAhResp = bindings::rxe_create_ah_resp;
/// The response of `create_srq` (`struct rxe_create_srq_resp`).
pub type CreateSrqResp = bindings::rxe_create_srq_resp;
/// The command data of `modify_srq` (`struct rxe_modify_srq_cmd`).
pub type ModifySrqCmd = bindings::rxe_modify_srq_cmd;
/// A scatter/gather element of a WQE (`struct rxe_sge`).
pub type Sge = bindings::rxe_sge;

/// The size of a send WQE without its SGEs or inline data (`struct rxe_send_wqe`).
pub const SEND_WQE_SIZE: usize = size_of::<bindings::rxe_send_wqe>();
/// The size of a receive WQE without its SGEs (`struct rxe_recv_wqe`).
pub const RECV_WQE_SIZE: usize = size_of::<bindings::rxe_recv_wqe>();
/// The size of one SGE.
pub const SGE_SIZE: usize = size_of::<Sge>();
/// The size of an address vector (`struct rxe_av`).
pub const AV_SIZE: usize = size_of::<bindings::rxe_av>();

/// Offsets in the header of a shared queue (`struct rxe_queue_buf`), which its elements
/// follow.
pub mod queue_buf {
    use super::*;

    /// `log2_elem_size`.
    pub const LOG2_ELEM_SIZE: usize = offset_of!(bindings::rxe_queue_buf, log2_elem_size);
    /// `index_mask`.
    pub const INDEX_MASK: usize = offset_of!(bindings::rxe_queue_buf, index_mask);
    /// `producer_index`.
    pub const PRODUCER: usize = offset_of!(bindings::rxe_queue_buf, producer_index);
    /// `consumer_index`.
    pub const CONSUMER: usize = offset_of!(bindings::rxe_queue_buf, consumer_index);
    /// Where the elements start (the size of the header).
    pub const DATA: usize = size_of::<bindings::rxe_queue_buf>();
}

/// Offsets of the fields of send and receive WQEs (`struct rxe_send_wqe`,
/// `struct rxe_recv_wqe`).
pub mod wqe_off {
    use super::*;
    use bindings::{
        rxe_dma_info as Dma, rxe_send_wr as Wr, rxe_send_wr__bindgen_ty_2__bindgen_ty_2 as Rdma,
        rxe_send_wr__bindgen_ty_2__bindgen_ty_3 as Atomic,
        rxe_send_wr__bindgen_ty_2__bindgen_ty_4 as Ud,
        rxe_send_wr__bindgen_ty_2__bindgen_ty_5 as Mw,
    };

    const WR: usize = offset_of!(bindings::rxe_send_wqe, wr);
    /// `wr.wr_id`.
    pub const WR_ID: usize = WR + offset_of!(Wr, wr_id);
    /// `wr.opcode`.
    pub const OPCODE: usize = WR + offset_of!(Wr, opcode);
    /// `wr.send_flags`.
    pub const FLAGS: usize = WR + offset_of!(Wr, send_flags);
    /// `wr.ex` (immediate data or the rkey to invalidate).
    pub const EX: usize = WR + offset_of!(Wr, ex);
    /// The union of operation fields, `wr.wr`.
    const U: usize = WR + offset_of!(Wr, wr);
    const DMA: usize = offset_of!(bindings::rxe_send_wqe, dma);
    /// `dma.length`.
    pub const DMA_LEN: usize = DMA + offset_of!(Dma, length);
    /// `dma.num_sge`.
    pub const DMA_NUM_SGE: usize = DMA + offset_of!(Dma, num_sge);
    /// Where the SGEs (or inline data) of a send WQE start.
    pub const SEND_SGES: usize = DMA + offset_of!(Dma, __bindgen_anon_1);
    /// `wr.wr.rdma.remote_addr` (also that of atomics and flushes).
    pub const REMOTE_ADDR: usize = U + offset_of!(Rdma, remote_addr);
    /// `wr.wr.rdma.rkey`.
    pub const RDMA_RKEY: usize = U + offset_of!(Rdma, rkey);
    /// `wr.wr.atomic.compare_add`.
    pub const ATOMIC_COMPARE: usize = U + offset_of!(Atomic, compare_add);
    /// `wr.wr.atomic.swap`.
    pub const ATOMIC_SWAP: usize = U + offset_of!(Atomic, swap);
    /// `wr.wr.atomic.rkey`.
    pub const ATOMIC_RKEY: usize = U + offset_of!(Atomic, rkey);
    /// `wr.wr.ud.remote_qpn`.
    pub const UD_QPN: usize = U + offset_of!(Ud, remote_qpn);
    /// `wr.wr.ud.remote_qkey`.
    pub const UD_QKEY: usize = U + offset_of!(Ud, remote_qkey);
    /// `wr.wr.ud.ah_num`.
    pub const UD_AH: usize = U + offset_of!(Ud, ah_num);
    /// `wr.wr.ud.av`.
    pub const UD_AV: usize = U + offset_of!(Ud, av);
    /// `wr.wr.mw.addr`.
    pub const MW_ADDR: usize = U + offset_of!(Mw, addr);
    /// `wr.wr.mw.mr_lkey`.
    pub const MW_MR_LKEY: usize = U + offset_of!(Mw, mr_lkey);
    /// `wr.wr.mw.rkey`.
    pub const MW_RKEY: usize = U + offset_of!(Mw, rkey);
    /// `wr.wr.mw.access`.
    pub const MW_ACCESS: usize = U + offset_of!(Mw, access);
    const RECV_DMA: usize = offset_of!(bindings::rxe_recv_wqe, dma);
    /// `wr_id` of a receive WQE.
    pub const RECV_WR_ID: usize = offset_of!(bindings::rxe_recv_wqe, wr_id);
    /// `dma.num_sge` of a receive WQE.
    pub const RECV_NUM_SGE: usize = RECV_DMA + offset_of!(Dma, num_sge);
    /// `dma.length` of a receive WQE.
    pub const RECV_LEN: usize = RECV_DMA + offset_of!(Dma, length);
    /// Where the SGEs of a receive WQE start.
    pub const RECV_SGES: usize = RECV_DMA + offset_of!(Dma, __bindgen_anon_1);
}

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
#[derive(Clone, Copy, Default, Debug)]
pub struct UdFields {
    /// Destination QP.
    pub remote_qpn: u32,
    /// Q_Key.
    pub remote_qkey: u32,
    /// Address handle number.
    pub ah_num: u32,
}

/// The memory window bind part of a send WQE.
#[derive(Clone, Copy, Default, Debug)]
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
