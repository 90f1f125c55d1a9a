// SPDX-License-Identifier: GPL-2.0

//! The verbs' enumerations and flag sets (`include/rdma/ib_verbs.h`) as Rust types, so
//! that drivers name them without the bindings: QP states, MTUs, port states, access,
//! send, completion and notification flags, device capabilities. Every value is the
//! kernel's, taken from the bindings.

use crate::bindings;
use core::ops::{BitAnd, BitOr};
use kernel::error::{code::EINVAL, Error};

/// Tests on a set of flags.
pub trait Flags: Copy {
    /// Whether every flag of `other` is in `self`.
    fn contains(self, other: Self) -> bool;
}

/// Defines a set of flags: a newtype over the raw integer with the named flags as
/// associated constants.
macro_rules! flags {
    (
        $(#[$meta:meta])*
        $name:ident: $raw:ty {
            $(
                $(#[$fmeta:meta])*
                $flag:ident = $value:expr;
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        #[repr(transparent)]
        pub struct $name($raw);

        impl $name {
            $(
                $(#[$fmeta])*
                pub const $flag: Self = Self($value as $raw);
            )*

            /// The raw value, as the kernel passes it.
            pub const fn bits(self) -> $raw {
                self.0
            }

            /// The set `bits` is, unknown bits included.
            pub const fn from_bits(bits: $raw) -> Self {
                Self(bits)
            }

            /// The union of `self` and `other` (usable in constants).
            pub const fn union(self, other: Self) -> Self {
                Self(self.0 | other.0)
            }
        }

        impl Flags for $name {
            fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }
        }

        impl BitOr for $name {
            type Output = Self;

            fn bitor(self, other: Self) -> Self {
                self.union(other)
            }
        }

        impl BitAnd for $name {
            type Output = Self;

            fn bitand(self, other: Self) -> Self {
                Self(self.0 & other.0)
            }
        }

        impl From<$raw> for $name {
            fn from(bits: $raw) -> Self {
                Self::from_bits(bits)
            }
        }

        impl From<$name> for $raw {
            fn from(v: $name) -> $raw {
                v.bits()
            }
        }
    };
}

/// Defines a C enumeration as a Rust enum whose discriminants are the kernel's values,
/// with the conversion to the raw value and the fallible one from it.
macro_rules! c_enum {
    (
        $(#[$meta:meta])*
        $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $value:expr,
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u32)]
        pub enum $name {
            $(
                $(#[$vmeta])*
                $variant = $value,
            )*
        }

        impl $name {
            /// The raw value, as the kernel passes it.
            pub const fn raw(self) -> u32 {
                self as u32
            }
        }

        impl From<$name> for u32 {
            fn from(v: $name) -> u32 {
                v.raw()
            }
        }

        impl TryFrom<u32> for $name {
            type Error = Error;

            /// The value `raw` stands for; `EINVAL` if it is none of the known ones.
            fn try_from(raw: u32) -> Result<Self, Error> {
                $(
                    if raw == $value {
                        return Ok(Self::$variant);
                    }
                )*
                Err(EINVAL)
            }
        }
    };
}

c_enum! {
    /// The state of a QP (`enum ib_qp_state`).
    QpState {
        /// Reset.
        Reset = bindings::ib_qp_state_IB_QPS_RESET,
        /// Initialised.
        Init = bindings::ib_qp_state_IB_QPS_INIT,
        /// Ready to receive.
        Rtr = bindings::ib_qp_state_IB_QPS_RTR,
        /// Ready to send.
        Rts = bindings::ib_qp_state_IB_QPS_RTS,
        /// Send queue drained.
        Sqd = bindings::ib_qp_state_IB_QPS_SQD,
        /// Send queue error.
        Sqe = bindings::ib_qp_state_IB_QPS_SQE,
        /// Error.
        Err = bindings::ib_qp_state_IB_QPS_ERR,
    }
}

c_enum! {
    /// A path MTU (`enum ib_mtu`).
    Mtu {
        /// 256 bytes.
        Mtu256 = bindings::ib_mtu_IB_MTU_256,
        /// 512 bytes.
        Mtu512 = bindings::ib_mtu_IB_MTU_512,
        /// 1024 bytes.
        Mtu1024 = bindings::ib_mtu_IB_MTU_1024,
        /// 2048 bytes.
        Mtu2048 = bindings::ib_mtu_IB_MTU_2048,
        /// 4096 bytes.
        Mtu4096 = bindings::ib_mtu_IB_MTU_4096,
    }
}

c_enum! {
    /// The logical state of a port (`enum ib_port_state`).
    PortState {
        /// Down.
        Down = bindings::ib_port_state_IB_PORT_DOWN,
        /// Active.
        Active = bindings::ib_port_state_IB_PORT_ACTIVE,
    }
}

c_enum! {
    /// The physical state of a port (`enum ib_port_phys_state`).
    PortPhysState {
        /// Polling for a link.
        Polling = bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_POLLING,
        /// Disabled.
        Disabled = bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_DISABLED,
        /// Link up.
        LinkUp = bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP,
    }
}

c_enum! {
    /// Which send work requests complete (`enum ib_sig_type`).
    SigType {
        /// Every one.
        AllWr = bindings::ib_sig_type_IB_SIGNAL_ALL_WR,
        /// Those posted with `IB_SEND_SIGNALED`.
        ReqWr = bindings::ib_sig_type_IB_SIGNAL_REQ_WR,
    }
}

c_enum! {
    /// The type of an MR `alloc_mr` allocates (`enum ib_mr_type`).
    MrType {
        /// For fast registration (`IB_WR_REG_MR`).
        MemReg = bindings::ib_mr_type_IB_MR_TYPE_MEM_REG,
    }
}

c_enum! {
    /// The type of a memory window (`enum ib_mw_type`).
    MwType {
        /// Type 1: bound by a verb, PD-scoped.
        Type1 = bindings::ib_mw_type_IB_MW_TYPE_1,
        /// Type 2: bound by a work request, QP-scoped.
        Type2 = bindings::ib_mw_type_IB_MW_TYPE_2,
    }
}

c_enum! {
    /// The type of an SRQ (`enum ib_srq_type`).
    SrqType {
        /// A basic SRQ.
        Basic = bindings::ib_srq_type_IB_SRQT_BASIC,
    }
}

c_enum! {
    /// The network header of a RoCE v2 packet (`enum rdma_network_type`).
    NetworkType {
        /// IPv4.
        Ipv4 = bindings::rdma_network_type_RDMA_NETWORK_IPV4,
        /// IPv6.
        Ipv6 = bindings::rdma_network_type_RDMA_NETWORK_IPV6,
    }
}

c_enum! {
    /// The type of an address handle's attributes (`enum rdma_ah_attr_type`).
    AhAttrType {
        /// RoCE.
        Roce = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE,
    }
}

/// The driver id of rxe and of its drop-in replacements (`RDMA_DRIVER_RXE`), which
/// selects the userspace provider.
pub const DRIVER_ID_RXE: u32 = bindings::rdma_driver_id_RDMA_DRIVER_RXE;
/// A port's core capabilities for RoCE v2 (`RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP`).
pub const CORE_PORT_IBA_ROCE_UDP_ENCAP: u32 = bindings::RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
/// The size of a MAD (`IB_MGMT_MAD_SIZE`).
pub const MGMT_MAD_SIZE: u32 = bindings::IB_MGMT_MAD_SIZE;
/// Atomic operations are atomic with respect to the HCA only (`IB_ATOMIC_HCA`).
pub const ATOMIC_HCA: u32 = bindings::ib_atomic_cap_IB_ATOMIC_HCA;
/// The port width 1x (`IB_WIDTH_1X`).
pub const WIDTH_1X: u8 = bindings::ib_port_width_IB_WIDTH_1X as u8;

flags! {
    /// Memory access rights (`enum ib_access_flags`).
    AccessFlags: u32 {
        /// Local write.
        LOCAL_WRITE = bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE;
        /// Remote write.
        REMOTE_WRITE = bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE;
        /// Remote read.
        REMOTE_READ = bindings::ib_access_flags_IB_ACCESS_REMOTE_READ;
        /// Remote atomic operations.
        REMOTE_ATOMIC = bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC;
        /// Binding memory windows.
        MW_BIND = bindings::ib_access_flags_IB_ACCESS_MW_BIND;
        /// Offsets from the start of the region rather than addresses.
        ZERO_BASED = bindings::ib_access_flags_IB_ZERO_BASED;
        /// On-demand paging.
        ON_DEMAND = bindings::ib_access_flags_IB_ACCESS_ON_DEMAND;
        /// Global visibility flushes.
        FLUSH_GLOBAL = bindings::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL;
        /// Persistence flushes.
        FLUSH_PERSISTENT = bindings::ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT;
        /// The optional flags, which a device may ignore (`IB_ACCESS_OPTIONAL`).
        OPTIONAL = bindings::ib_access_flags_IB_ACCESS_OPTIONAL;
    }
}

flags! {
    /// Flags of a send work request (`enum ib_send_flags`).
    SendFlags: u32 {
        /// Waits for earlier reads and atomics.
        FENCE = bindings::ib_send_flags_IB_SEND_FENCE;
        /// Completes with a completion.
        SIGNALED = bindings::ib_send_flags_IB_SEND_SIGNALED;
        /// Solicits an event at the receiver.
        SOLICITED = bindings::ib_send_flags_IB_SEND_SOLICITED;
        /// The data is in the work request.
        INLINE = bindings::ib_send_flags_IB_SEND_INLINE;
    }
}

flags! {
    /// Flags of a work completion (`enum ib_wc_flags`).
    WcFlags: u32 {
        /// A GRH precedes the data.
        GRH = bindings::ib_wc_flags_IB_WC_GRH;
        /// With immediate data.
        WITH_IMM = bindings::ib_wc_flags_IB_WC_WITH_IMM;
        /// With an invalidated rkey.
        WITH_INVALIDATE = bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE;
        /// `network_hdr_type` is valid.
        WITH_NETWORK_HDR_TYPE = bindings::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE;
    }
}

flags! {
    /// What `req_notify_cq` asks for (`enum ib_cq_notify_flags`).
    CqNotifyFlags: u32 {
        /// The next solicited completion.
        SOLICITED = bindings::ib_cq_notify_flags_IB_CQ_SOLICITED;
        /// The next completion.
        NEXT_COMP = bindings::ib_cq_notify_flags_IB_CQ_NEXT_COMP;
        /// The bits that say which of the two.
        SOLICITED_MASK = bindings::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK;
        /// Report whether completions are already queued.
        REPORT_MISSED_EVENTS = bindings::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS;
    }
}

flags! {
    /// The attributes `modify_qp` sets (`enum ib_qp_attr_mask`).
    QpAttrMask: u32 {
        /// The state.
        STATE = bindings::ib_qp_attr_mask_IB_QP_STATE;
        /// The current state, as the caller believes it.
        CUR_STATE = bindings::ib_qp_attr_mask_IB_QP_CUR_STATE;
        /// Whether the SQD state raises an event.
        EN_SQD_ASYNC_NOTIFY = bindings::ib_qp_attr_mask_IB_QP_EN_SQD_ASYNC_NOTIFY;
        /// The access flags.
        ACCESS_FLAGS = bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS;
        /// The P_Key index.
        PKEY_INDEX = bindings::ib_qp_attr_mask_IB_QP_PKEY_INDEX;
        /// The port.
        PORT = bindings::ib_qp_attr_mask_IB_QP_PORT;
        /// The Q_Key.
        QKEY = bindings::ib_qp_attr_mask_IB_QP_QKEY;
        /// The address vector.
        AV = bindings::ib_qp_attr_mask_IB_QP_AV;
        /// The path MTU.
        PATH_MTU = bindings::ib_qp_attr_mask_IB_QP_PATH_MTU;
        /// The local ACK timeout.
        TIMEOUT = bindings::ib_qp_attr_mask_IB_QP_TIMEOUT;
        /// The retry count.
        RETRY_CNT = bindings::ib_qp_attr_mask_IB_QP_RETRY_CNT;
        /// The RNR retry count.
        RNR_RETRY = bindings::ib_qp_attr_mask_IB_QP_RNR_RETRY;
        /// The receive PSN.
        RQ_PSN = bindings::ib_qp_attr_mask_IB_QP_RQ_PSN;
        /// Outstanding reads and atomics as requester.
        MAX_QP_RD_ATOMIC = bindings::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC;
        /// The alternate path.
        ALT_PATH = bindings::ib_qp_attr_mask_IB_QP_ALT_PATH;
        /// The minimum RNR NAK timer.
        MIN_RNR_TIMER = bindings::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER;
        /// The send PSN.
        SQ_PSN = bindings::ib_qp_attr_mask_IB_QP_SQ_PSN;
        /// Outstanding reads and atomics as responder.
        MAX_DEST_RD_ATOMIC = bindings::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC;
        /// The path migration state.
        PATH_MIG_STATE = bindings::ib_qp_attr_mask_IB_QP_PATH_MIG_STATE;
        /// The destination QP number.
        DEST_QPN = bindings::ib_qp_attr_mask_IB_QP_DEST_QPN;
    }
}

flags! {
    /// The attributes `modify_srq` sets (`enum ib_srq_attr_mask`).
    SrqAttrMask: u32 {
        /// The number of work requests.
        MAX_WR = bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR;
        /// The limit event's threshold.
        LIMIT = bindings::ib_srq_attr_mask_IB_SRQ_LIMIT;
    }
}

flags! {
    /// What `rereg_user_mr` changes (`enum ib_mr_rereg_flags`).
    MrReregFlags: u32 {
        /// The PD.
        PD = bindings::ib_mr_rereg_flags_IB_MR_REREG_PD;
        /// The access flags.
        ACCESS = bindings::ib_mr_rereg_flags_IB_MR_REREG_ACCESS;
    }
}

flags! {
    /// Device capabilities (`enum ib_device_cap_flags`).
    DeviceCapFlags: u64 {
        /// Counts bad P_Keys.
        BAD_PKEY_CNTR = bindings::ib_device_cap_flags_IB_DEVICE_BAD_PKEY_CNTR;
        /// Counts bad Q_Keys.
        BAD_QKEY_CNTR = bindings::ib_device_cap_flags_IB_DEVICE_BAD_QKEY_CNTR;
        /// Automatic path migration.
        AUTO_PATH_MIG = bindings::ib_device_cap_flags_IB_DEVICE_AUTO_PATH_MIG;
        /// Changing the physical port of a QP.
        CHANGE_PHY_PORT = bindings::ib_device_cap_flags_IB_DEVICE_CHANGE_PHY_PORT;
        /// UD address vectors checked against the QP's port.
        UD_AV_PORT_ENFORCE = bindings::ib_device_cap_flags_IB_DEVICE_UD_AV_PORT_ENFORCE;
        /// Port active events.
        PORT_ACTIVE_EVENT = bindings::ib_device_cap_flags_IB_DEVICE_PORT_ACTIVE_EVENT;
        /// A system image GUID.
        SYS_IMAGE_GUID = bindings::ib_device_cap_flags_IB_DEVICE_SYS_IMAGE_GUID;
        /// RNR NAKs on RC QPs.
        RC_RNR_NAK_GEN = bindings::ib_device_cap_flags_IB_DEVICE_RC_RNR_NAK_GEN;
        /// Resizing SRQs.
        SRQ_RESIZE = bindings::ib_device_cap_flags_IB_DEVICE_SRQ_RESIZE;
        /// Memory management extensions (fast registration, local invalidation).
        MEM_MGT_EXTENSIONS = bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS;
        /// Memory windows.
        MEM_WINDOW = bindings::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW;
        /// Global visibility flushes.
        FLUSH_GLOBAL = bindings::ib_device_cap_flags_IB_DEVICE_FLUSH_GLOBAL;
        /// Persistence flushes.
        FLUSH_PERSISTENT = bindings::ib_device_cap_flags_IB_DEVICE_FLUSH_PERSISTENT;
        /// Type 2B memory windows.
        MEM_WINDOW_TYPE_2B = bindings::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW_TYPE_2B;
        /// Atomic writes.
        ATOMIC_WRITE = bindings::ib_device_cap_flags_IB_DEVICE_ATOMIC_WRITE;
    }
}

flags! {
    /// Capabilities of a device towards the kernel (`enum ib_kernel_cap_flags`).
    KernelCapFlags: u64 {
        /// Userspace may unregister the device (`rdma link delete`).
        ALLOW_USER_UNREG = bindings::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG;
    }
}

flags! {
    /// Port capabilities (`enum ib_port_capability_mask_bits`).
    PortCapFlags: u32 {
        /// Supports the communication manager.
        CM_SUP = bindings::ib_port_capability_mask_bits_IB_PORT_CM_SUP;
    }
}

flags! {
    /// Legacy uverbs write commands a driver implements beyond the core's defaults
    /// (bits of `uverbs_cmd_mask`, numbered by `enum ib_uverbs_write_cmds`).
    UverbsCmdMask: u64 {
        /// `IB_USER_VERBS_CMD_POST_SEND`.
        POST_SEND = 1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND;
        /// `IB_USER_VERBS_CMD_REQ_NOTIFY_CQ`.
        REQ_NOTIFY_CQ = 1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REQ_NOTIFY_CQ;
    }
}
