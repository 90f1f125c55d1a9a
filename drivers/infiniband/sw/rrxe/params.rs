// SPDX-License-Identifier: GPL-2.0

//! Device and port limits.
//!
//! Every limit is at least the C rxe driver's, so that what runs on rxe runs on rrxe.

use crate::bindings as b;
use crate::ext::rdma::device::{DeviceAttr, PortAttr};

/// IBTA vendor id: none assigned (as rxe).
const VENDOR_ID: u32 = 0xff_ffff;
/// Most objects of a kind: the index space (2^20).
const MAX_OBJECTS: i32 = 1 << 20;
/// Work requests per send or receive queue.
pub(crate) const MAX_QP_WR: i32 = MAX_OBJECTS;
/// First QP number of a regular QP (QP0/QP1 and a reserved range come before it).
const MIN_QP_INDEX: i32 = 16;
/// First SRQ index.
const MIN_SRQ_INDEX: i32 = 0x0002_0001;
/// MR indices take the lower half of the index space, MWs the upper half.
const MAX_MR_INDEX: i32 = MAX_OBJECTS >> 1;
/// Scatter/gather entries per send or receive WQE.
pub(crate) const MAX_SGE: i32 = 32;
/// Scatter/gather entries per SRQ WQE.
pub(crate) const MAX_SRQ_SGE: i32 = 27;
/// Work requests per SRQ.
pub(crate) const MAX_SRQ_WR: i32 = MAX_OBJECTS;
/// Most CQEs per CQ (2^15 - 1).
const MAX_CQE: i32 = (1 << 15) - 1;
/// RDMA read and atomic operations outstanding per QP, as initiator and responder.
const MAX_QP_RD_ATOM: i32 = 128;
/// RDMA read and atomic resources of the whole device.
const MAX_RES_RD_ATOM: i32 = 0x3f000;
/// Most address handles.
const MAX_AH: i32 = (1 << 15) - 1;
/// Multicast groups, QPs per group and attachments in all.
pub(crate) const MAX_MCAST_GRP: i32 = 8192;
pub(crate) const MAX_MCAST_QP_ATTACH: i32 = 56;
const MAX_TOTAL_MCAST_QP_ATTACH: i32 = 0x70000;
/// Pages in a fast-registration list.
const MAX_FAST_REG_PAGE_LIST_LEN: u32 = 512;
/// P_Keys (the table has one entry; the figure is the capability rxe reports).
const MAX_PKEYS: u16 = 64;
/// Local CA ACK delay exponent.
const LOCAL_CA_ACK_DELAY: u8 = 15;
/// Page sizes MRs may use.
const PAGE_SIZE_CAP: u64 = 0xffff_f000;

/// GID table entries per port.
pub(crate) const GID_TBL_LEN: u32 = 1024;
/// P_Key table entries per port.
pub(crate) const PKEY_TBL_LEN: u16 = 1;
/// The one P_Key: the default, full-membership partition.
pub(crate) const DEFAULT_PKEY: u16 = 0xffff;
/// Largest message.
pub(crate) const MAX_MSG_SZ: u32 = 1 << 31;
/// RoCE headers that must fit in the netdev MTU beside the IB payload.
const MAX_HDR_LENGTH: u32 = 80;

/// Fills the device attributes.
pub(crate) fn device_attr(attr: &mut DeviceAttr, sys_image_guid: [u8; 8]) {
    let cap = b::ib_device_cap_flags_IB_DEVICE_BAD_PKEY_CNTR
        | b::ib_device_cap_flags_IB_DEVICE_BAD_QKEY_CNTR
        | b::ib_device_cap_flags_IB_DEVICE_AUTO_PATH_MIG
        | b::ib_device_cap_flags_IB_DEVICE_CHANGE_PHY_PORT
        | b::ib_device_cap_flags_IB_DEVICE_UD_AV_PORT_ENFORCE
        | b::ib_device_cap_flags_IB_DEVICE_PORT_ACTIVE_EVENT
        | b::ib_device_cap_flags_IB_DEVICE_SYS_IMAGE_GUID
        | b::ib_device_cap_flags_IB_DEVICE_RC_RNR_NAK_GEN
        | b::ib_device_cap_flags_IB_DEVICE_SRQ_RESIZE
        | b::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS
        | b::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW
        | b::ib_device_cap_flags_IB_DEVICE_FLUSH_GLOBAL
        | b::ib_device_cap_flags_IB_DEVICE_FLUSH_PERSISTENT
        | b::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW_TYPE_2B
        | b::ib_device_cap_flags_IB_DEVICE_ATOMIC_WRITE;
    attr.vendor_id = VENDOR_ID;
    attr.sys_image_guid = u64::from_ne_bytes(sys_image_guid);
    attr.max_mr_size = u64::MAX;
    attr.page_size_cap = PAGE_SIZE_CAP;
    attr.max_qp = MAX_OBJECTS - MIN_QP_INDEX;
    attr.max_qp_wr = MAX_QP_WR;
    attr.device_cap_flags = cap as u64;
    // `rdma link delete` needs the device to allow unregistration from userspace.
    attr.kernel_cap_flags = b::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG as u64;
    attr.max_send_sge = MAX_SGE;
    attr.max_recv_sge = MAX_SGE;
    attr.max_sge_rd = MAX_SGE;
    attr.max_cq = MAX_OBJECTS;
    attr.max_cqe = MAX_CQE;
    attr.max_mr = MAX_MR_INDEX - 1;
    attr.max_mw = MAX_OBJECTS - (MAX_MR_INDEX + 1);
    attr.max_pd = MAX_OBJECTS;
    attr.max_qp_rd_atom = MAX_QP_RD_ATOM;
    attr.max_res_rd_atom = MAX_RES_RD_ATOM;
    attr.max_qp_init_rd_atom = MAX_QP_RD_ATOM;
    attr.atomic_cap = b::ib_atomic_cap_IB_ATOMIC_HCA;
    attr.max_mcast_grp = MAX_MCAST_GRP;
    attr.max_mcast_qp_attach = MAX_MCAST_QP_ATTACH;
    attr.max_total_mcast_qp_attach = MAX_TOTAL_MCAST_QP_ATTACH;
    attr.max_ah = MAX_AH;
    attr.max_srq = MAX_OBJECTS - MIN_SRQ_INDEX;
    attr.max_srq_wr = MAX_SRQ_WR;
    attr.max_srq_sge = MAX_SRQ_SGE;
    attr.max_fast_reg_page_list_len = MAX_FAST_REG_PAGE_LIST_LEN;
    attr.max_pkeys = MAX_PKEYS;
    attr.local_ca_ack_delay = LOCAL_CA_ACK_DELAY;
}

/// The IB MTU enum for payloads that fit a netdev MTU of `netdev_mtu` bytes beside the
/// RoCE headers, capped at 4096 (1500 gives 1024, 9000 gives 4096).
pub(crate) fn ib_mtu_for_netdev(netdev_mtu: u32) -> b::ib_mtu {
    match netdev_mtu.saturating_sub(MAX_HDR_LENGTH) {
        4096.. => b::ib_mtu_IB_MTU_4096,
        2048.. => b::ib_mtu_IB_MTU_2048,
        1024.. => b::ib_mtu_IB_MTU_1024,
        512.. => b::ib_mtu_IB_MTU_512,
        _ => b::ib_mtu_IB_MTU_256,
    }
}

/// Fills the port attributes that do not depend on the netdev's state.
pub(crate) fn port_attr(attr: &mut PortAttr) {
    attr.max_mtu = b::ib_mtu_IB_MTU_4096;
    attr.gid_tbl_len = GID_TBL_LEN as i32;
    attr.port_cap_flags = b::ib_port_capability_mask_bits_IB_PORT_CM_SUP;
    attr.max_msg_sz = MAX_MSG_SZ;
    attr.pkey_tbl_len = PKEY_TBL_LEN;
    attr.max_vl_num = 1;
    attr.active_width = b::ib_port_width_IB_WIDTH_1X as u8;
    attr.active_speed = 1;
}
