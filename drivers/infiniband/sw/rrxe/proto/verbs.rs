// SPDX-License-Identifier: GPL-2.0

//! Verbs-level values the transport logic works with, as plain enums whose discriminants are
//! those of Linux 6.12 `include/rdma/ib_verbs.h` (and the uverbs ABI they alias), so the
//! driver converts with a cast one way and `from_*` the other.

use super::opcode::Transport;

/// Queue pair types rrxe implements (`enum ib_qp_type` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum QpType {
    /// General services interface QP (QP1), a UD QP.
    Gsi = 1,
    /// Reliable connection.
    Rc = 2,
    /// Unreliable connection.
    Uc = 3,
    /// Unreliable datagram.
    Ud = 4,
}

impl QpType {
    /// Decodes an `enum ib_qp_type` value.
    pub const fn from_u32(v: u32) -> Option<QpType> {
        Some(match v {
            1 => QpType::Gsi,
            2 => QpType::Rc,
            3 => QpType::Uc,
            4 => QpType::Ud,
            _ => return None,
        })
    }

    /// The transport whose opcodes this QP type sends and accepts.
    pub const fn transport(self) -> Transport {
        match self {
            QpType::Rc => Transport::Rc,
            QpType::Uc => Transport::Uc,
            QpType::Ud | QpType::Gsi => Transport::Ud,
        }
    }

    /// True for the datagram types (UD and GSI).
    pub const fn is_datagram(self) -> bool {
        matches!(self, QpType::Ud | QpType::Gsi)
    }
}

/// Send work request opcodes (`enum ib_wr_opcode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum WrOpcode {
    /// `IB_WR_RDMA_WRITE`.
    RdmaWrite = 0,
    /// `IB_WR_RDMA_WRITE_WITH_IMM`.
    RdmaWriteImm = 1,
    /// `IB_WR_SEND`.
    Send = 2,
    /// `IB_WR_SEND_WITH_IMM`.
    SendImm = 3,
    /// `IB_WR_RDMA_READ`.
    RdmaRead = 4,
    /// `IB_WR_ATOMIC_CMP_AND_SWP`.
    AtomicCmpSwp = 5,
    /// `IB_WR_ATOMIC_FETCH_AND_ADD`.
    AtomicFetchAdd = 6,
    /// `IB_WR_LOCAL_INV`.
    LocalInv = 7,
    /// `IB_WR_BIND_MW`.
    BindMw = 8,
    /// `IB_WR_SEND_WITH_INV`.
    SendInv = 9,
    /// `IB_WR_LSO` (not supported by rxe).
    Lso = 10,
    /// `IB_WR_RDMA_READ_WITH_INV` (accepted by rxe's table, never sent).
    RdmaReadInv = 11,
    /// `IB_WR_MASKED_ATOMIC_CMP_AND_SWP` (not supported).
    MaskedAtomicCmpSwp = 12,
    /// `IB_WR_MASKED_ATOMIC_FETCH_AND_ADD` (not supported).
    MaskedAtomicFetchAdd = 13,
    /// `IB_WR_FLUSH`.
    Flush = 14,
    /// `IB_WR_ATOMIC_WRITE`.
    AtomicWrite = 15,
    /// `IB_WR_REG_MR` (kernel only).
    RegMr = 0x20,
}

impl WrOpcode {
    /// Decodes an `enum ib_wr_opcode` value.
    pub const fn from_u32(v: u32) -> Option<WrOpcode> {
        Some(match v {
            0 => WrOpcode::RdmaWrite,
            1 => WrOpcode::RdmaWriteImm,
            2 => WrOpcode::Send,
            3 => WrOpcode::SendImm,
            4 => WrOpcode::RdmaRead,
            5 => WrOpcode::AtomicCmpSwp,
            6 => WrOpcode::AtomicFetchAdd,
            7 => WrOpcode::LocalInv,
            8 => WrOpcode::BindMw,
            9 => WrOpcode::SendInv,
            10 => WrOpcode::Lso,
            11 => WrOpcode::RdmaReadInv,
            12 => WrOpcode::MaskedAtomicCmpSwp,
            13 => WrOpcode::MaskedAtomicFetchAdd,
            14 => WrOpcode::Flush,
            15 => WrOpcode::AtomicWrite,
            0x20 => WrOpcode::RegMr,
            _ => return None,
        })
    }

    /// True for the operations executed locally without sending packets.
    pub const fn is_local(self) -> bool {
        matches!(
            self,
            WrOpcode::LocalInv | WrOpcode::BindMw | WrOpcode::RegMr
        )
    }

    /// True for the operations whose responses carry data back (RDMA READ and the two
    /// atomics), which must not be completed by a later acknowledge alone.
    pub const fn needs_response_data(self) -> bool {
        matches!(
            self,
            WrOpcode::RdmaRead
                | WrOpcode::RdmaReadInv
                | WrOpcode::AtomicCmpSwp
                | WrOpcode::AtomicFetchAdd
        )
    }

    /// True for the operations that take one of the QP's `max_rd_atomic` slots (RDMA READ,
    /// atomics, ATOMIC WRITE).
    pub const fn uses_rd_atomic(self) -> bool {
        self.needs_response_data() || matches!(self, WrOpcode::AtomicWrite)
    }

    /// The work completion opcode reported for this work request.
    pub const fn wc_opcode(self) -> WcOpcode {
        match self {
            WrOpcode::RdmaWrite | WrOpcode::RdmaWriteImm => WcOpcode::RdmaWrite,
            WrOpcode::Send | WrOpcode::SendImm | WrOpcode::SendInv => WcOpcode::Send,
            WrOpcode::RdmaRead | WrOpcode::RdmaReadInv => WcOpcode::RdmaRead,
            WrOpcode::AtomicCmpSwp => WcOpcode::CompSwap,
            WrOpcode::AtomicFetchAdd => WcOpcode::FetchAdd,
            WrOpcode::LocalInv => WcOpcode::LocalInv,
            WrOpcode::BindMw => WcOpcode::BindMw,
            WrOpcode::Lso => WcOpcode::Lso,
            WrOpcode::MaskedAtomicCmpSwp => WcOpcode::MaskedCompSwap,
            WrOpcode::MaskedAtomicFetchAdd => WcOpcode::MaskedFetchAdd,
            WrOpcode::Flush => WcOpcode::Flush,
            WrOpcode::AtomicWrite => WcOpcode::AtomicWrite,
            WrOpcode::RegMr => WcOpcode::RegMr,
        }
    }
}

/// Work completion status (`enum ib_wc_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum WcStatus {
    /// `IB_WC_SUCCESS`.
    Success = 0,
    /// `IB_WC_LOC_LEN_ERR`.
    LocLenErr = 1,
    /// `IB_WC_LOC_QP_OP_ERR`.
    LocQpOpErr = 2,
    /// `IB_WC_LOC_EEC_OP_ERR`.
    LocEecOpErr = 3,
    /// `IB_WC_LOC_PROT_ERR`.
    LocProtErr = 4,
    /// `IB_WC_WR_FLUSH_ERR`.
    WrFlushErr = 5,
    /// `IB_WC_MW_BIND_ERR`.
    MwBindErr = 6,
    /// `IB_WC_BAD_RESP_ERR`.
    BadRespErr = 7,
    /// `IB_WC_LOC_ACCESS_ERR`.
    LocAccessErr = 8,
    /// `IB_WC_REM_INV_REQ_ERR`.
    RemInvReqErr = 9,
    /// `IB_WC_REM_ACCESS_ERR`.
    RemAccessErr = 10,
    /// `IB_WC_REM_OP_ERR`.
    RemOpErr = 11,
    /// `IB_WC_RETRY_EXC_ERR`.
    RetryExcErr = 12,
    /// `IB_WC_RNR_RETRY_EXC_ERR`.
    RnrRetryExcErr = 13,
    /// `IB_WC_LOC_RDD_VIOL_ERR`.
    LocRddViolErr = 14,
    /// `IB_WC_REM_INV_RD_REQ_ERR`.
    RemInvRdReqErr = 15,
    /// `IB_WC_REM_ABORT_ERR`.
    RemAbortErr = 16,
    /// `IB_WC_INV_EECN_ERR`.
    InvEecnErr = 17,
    /// `IB_WC_INV_EEC_STATE_ERR`.
    InvEecStateErr = 18,
    /// `IB_WC_FATAL_ERR`.
    FatalErr = 19,
    /// `IB_WC_RESP_TIMEOUT_ERR`.
    RespTimeoutErr = 20,
    /// `IB_WC_GENERAL_ERR`.
    GeneralErr = 21,
}

/// Work completion opcodes (`enum ib_wc_opcode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum WcOpcode {
    /// `IB_WC_SEND`.
    Send = 0,
    /// `IB_WC_RDMA_WRITE`.
    RdmaWrite = 1,
    /// `IB_WC_RDMA_READ`.
    RdmaRead = 2,
    /// `IB_WC_COMP_SWAP`.
    CompSwap = 3,
    /// `IB_WC_FETCH_ADD`.
    FetchAdd = 4,
    /// `IB_WC_BIND_MW`.
    BindMw = 5,
    /// `IB_WC_LOCAL_INV`.
    LocalInv = 6,
    /// `IB_WC_LSO`.
    Lso = 7,
    /// `IB_WC_FLUSH`.
    Flush = 8,
    /// `IB_WC_ATOMIC_WRITE`.
    AtomicWrite = 9,
    /// `IB_WC_REG_MR`.
    RegMr = 10,
    /// `IB_WC_MASKED_COMP_SWAP`.
    MaskedCompSwap = 11,
    /// `IB_WC_MASKED_FETCH_ADD`.
    MaskedFetchAdd = 12,
    /// `IB_WC_RECV`.
    Recv = 128,
    /// `IB_WC_RECV_RDMA_WITH_IMM`.
    RecvRdmaWithImm = 129,
}

/// QP and MR access flags (`enum ib_access_flags`), as a bit set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Access(pub u32);

impl Access {
    /// `IB_ACCESS_LOCAL_WRITE`.
    pub const LOCAL_WRITE: Access = Access(1 << 0);
    /// `IB_ACCESS_REMOTE_WRITE`.
    pub const REMOTE_WRITE: Access = Access(1 << 1);
    /// `IB_ACCESS_REMOTE_READ`.
    pub const REMOTE_READ: Access = Access(1 << 2);
    /// `IB_ACCESS_REMOTE_ATOMIC`.
    pub const REMOTE_ATOMIC: Access = Access(1 << 3);
    /// `IB_ACCESS_FLUSH_GLOBAL`.
    pub const FLUSH_GLOBAL: Access = Access(1 << 8);
    /// `IB_ACCESS_FLUSH_PERSISTENT`.
    pub const FLUSH_PERSISTENT: Access = Access(1 << 9);

    /// The union of two sets.
    pub const fn with(self, other: Access) -> Access {
        Access(self.0 | other.0)
    }

    /// True when every flag of `other` is set in `self`.
    pub const fn allows(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }
}
