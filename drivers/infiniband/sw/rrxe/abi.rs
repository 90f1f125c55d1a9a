// SPDX-License-Identifier: GPL-2.0

//! Where the protocol core's values meet the kernel's: the core (`proto`, built and
//! tested on the host without the kernel's headers) writes the verbs' enumerations out by
//! value; these assertions make the build fail if one differs from the kernel's.

use crate::{
    bindings as b,
    ext::rdma::types::{AccessFlags, Mtu as IbMtu},
    proto::{
        mtu::Mtu,
        verbs::{Access, QpType, WcOpcode, WcStatus, WrOpcode},
    },
};

/// Asserts at build time that each value on the left equals the one on the right.
macro_rules! same {
    ($($ours:expr => $kernel:expr),* $(,)?) => {
        $(const _: () = assert!($ours as u64 == $kernel as u64);)*
    };
}

same! {
    QpType::Gsi => b::ib_qp_type_IB_QPT_GSI,
    QpType::Rc => b::ib_qp_type_IB_QPT_RC,
    QpType::Uc => b::ib_qp_type_IB_QPT_UC,
    QpType::Ud => b::ib_qp_type_IB_QPT_UD,
}

same! {
    WrOpcode::RdmaWrite => b::ib_wr_opcode_IB_WR_RDMA_WRITE,
    WrOpcode::RdmaWriteImm => b::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM,
    WrOpcode::Send => b::ib_wr_opcode_IB_WR_SEND,
    WrOpcode::SendImm => b::ib_wr_opcode_IB_WR_SEND_WITH_IMM,
    WrOpcode::RdmaRead => b::ib_wr_opcode_IB_WR_RDMA_READ,
    WrOpcode::AtomicCmpSwp => b::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP,
    WrOpcode::AtomicFetchAdd => b::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD,
    WrOpcode::LocalInv => b::ib_wr_opcode_IB_WR_LOCAL_INV,
    WrOpcode::BindMw => b::ib_wr_opcode_IB_WR_BIND_MW,
    WrOpcode::SendInv => b::ib_wr_opcode_IB_WR_SEND_WITH_INV,
    WrOpcode::Lso => b::ib_wr_opcode_IB_WR_LSO,
    WrOpcode::RdmaReadInv => b::ib_wr_opcode_IB_WR_RDMA_READ_WITH_INV,
    WrOpcode::MaskedAtomicCmpSwp => b::ib_wr_opcode_IB_WR_MASKED_ATOMIC_CMP_AND_SWP,
    WrOpcode::MaskedAtomicFetchAdd => b::ib_wr_opcode_IB_WR_MASKED_ATOMIC_FETCH_AND_ADD,
    WrOpcode::Flush => b::ib_wr_opcode_IB_WR_FLUSH,
    WrOpcode::AtomicWrite => b::ib_wr_opcode_IB_WR_ATOMIC_WRITE,
    WrOpcode::RegMr => b::ib_wr_opcode_IB_WR_REG_MR,
}

same! {
    WcStatus::Success => b::ib_wc_status_IB_WC_SUCCESS,
    WcStatus::LocLenErr => b::ib_wc_status_IB_WC_LOC_LEN_ERR,
    WcStatus::LocQpOpErr => b::ib_wc_status_IB_WC_LOC_QP_OP_ERR,
    WcStatus::LocEecOpErr => b::ib_wc_status_IB_WC_LOC_EEC_OP_ERR,
    WcStatus::LocProtErr => b::ib_wc_status_IB_WC_LOC_PROT_ERR,
    WcStatus::WrFlushErr => b::ib_wc_status_IB_WC_WR_FLUSH_ERR,
    WcStatus::MwBindErr => b::ib_wc_status_IB_WC_MW_BIND_ERR,
    WcStatus::BadRespErr => b::ib_wc_status_IB_WC_BAD_RESP_ERR,
    WcStatus::LocAccessErr => b::ib_wc_status_IB_WC_LOC_ACCESS_ERR,
    WcStatus::RemInvReqErr => b::ib_wc_status_IB_WC_REM_INV_REQ_ERR,
    WcStatus::RemAccessErr => b::ib_wc_status_IB_WC_REM_ACCESS_ERR,
    WcStatus::RemOpErr => b::ib_wc_status_IB_WC_REM_OP_ERR,
    WcStatus::RetryExcErr => b::ib_wc_status_IB_WC_RETRY_EXC_ERR,
    WcStatus::RnrRetryExcErr => b::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR,
    WcStatus::LocRddViolErr => b::ib_wc_status_IB_WC_LOC_RDD_VIOL_ERR,
    WcStatus::RemInvRdReqErr => b::ib_wc_status_IB_WC_REM_INV_RD_REQ_ERR,
    WcStatus::RemAbortErr => b::ib_wc_status_IB_WC_REM_ABORT_ERR,
    WcStatus::InvEecnErr => b::ib_wc_status_IB_WC_INV_EECN_ERR,
    WcStatus::InvEecStateErr => b::ib_wc_status_IB_WC_INV_EEC_STATE_ERR,
    WcStatus::FatalErr => b::ib_wc_status_IB_WC_FATAL_ERR,
    WcStatus::RespTimeoutErr => b::ib_wc_status_IB_WC_RESP_TIMEOUT_ERR,
    WcStatus::GeneralErr => b::ib_wc_status_IB_WC_GENERAL_ERR,
}

same! {
    WcOpcode::Send => b::ib_wc_opcode_IB_WC_SEND,
    WcOpcode::RdmaWrite => b::ib_wc_opcode_IB_WC_RDMA_WRITE,
    WcOpcode::RdmaRead => b::ib_wc_opcode_IB_WC_RDMA_READ,
    WcOpcode::CompSwap => b::ib_wc_opcode_IB_WC_COMP_SWAP,
    WcOpcode::FetchAdd => b::ib_wc_opcode_IB_WC_FETCH_ADD,
    WcOpcode::BindMw => b::ib_wc_opcode_IB_WC_BIND_MW,
    WcOpcode::LocalInv => b::ib_wc_opcode_IB_WC_LOCAL_INV,
    WcOpcode::Lso => b::ib_wc_opcode_IB_WC_LSO,
    WcOpcode::Flush => b::ib_wc_opcode_IB_WC_FLUSH,
    WcOpcode::AtomicWrite => b::ib_wc_opcode_IB_WC_ATOMIC_WRITE,
    WcOpcode::RegMr => b::ib_wc_opcode_IB_WC_REG_MR,
    WcOpcode::MaskedCompSwap => b::ib_wc_opcode_IB_WC_MASKED_COMP_SWAP,
    WcOpcode::MaskedFetchAdd => b::ib_wc_opcode_IB_WC_MASKED_FETCH_ADD,
    WcOpcode::Recv => b::ib_wc_opcode_IB_WC_RECV,
    WcOpcode::RecvRdmaWithImm => b::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM,
    // Userspace completions use the uverbs values: the same where both exist.
    WcOpcode::Send => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_SEND,
    WcOpcode::RdmaWrite => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_RDMA_WRITE,
    WcOpcode::RdmaRead => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_RDMA_READ,
    WcOpcode::CompSwap => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_COMP_SWAP,
    WcOpcode::FetchAdd => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_FETCH_ADD,
    WcOpcode::BindMw => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_BIND_MW,
    WcOpcode::LocalInv => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_LOCAL_INV,
    WcOpcode::Lso => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_TSO,
    WcOpcode::Flush => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_FLUSH,
    WcOpcode::AtomicWrite => b::ib_uverbs_wc_opcode_IB_UVERBS_WC_ATOMIC_WRITE,
}

same! {
    Access::LOCAL_WRITE.0 => AccessFlags::LOCAL_WRITE.bits(),
    Access::REMOTE_WRITE.0 => AccessFlags::REMOTE_WRITE.bits(),
    Access::REMOTE_READ.0 => AccessFlags::REMOTE_READ.bits(),
    Access::REMOTE_ATOMIC.0 => AccessFlags::REMOTE_ATOMIC.bits(),
    Access::FLUSH_GLOBAL.0 => AccessFlags::FLUSH_GLOBAL.bits(),
    Access::FLUSH_PERSISTENT.0 => AccessFlags::FLUSH_PERSISTENT.bits(),
}

same! {
    Mtu::Mtu256 => IbMtu::Mtu256,
    Mtu::Mtu512 => IbMtu::Mtu512,
    Mtu::Mtu1024 => IbMtu::Mtu1024,
    Mtu::Mtu2048 => IbMtu::Mtu2048,
    Mtu::Mtu4096 => IbMtu::Mtu4096,
}
