// SPDX-License-Identifier: GPL-2.0

//! Device and port limits.
//!
//! Every limit is at least the C rxe driver's, so that what runs on rxe runs on rrxe.

use crate::ext::rdma::{
    device::{DeviceAttr, PortAttr},
    types::{DeviceCapFlags, KernelCapFlags, Mtu, PortCapFlags, ATOMIC_HCA, WIDTH_1X},
};

/// IBTA vendor id: none assigned (as rxe).
const VENDOR_ID: u32 = 0xff_ffff;
/// Most objects of a kind: the index space (2^20).
const MAX_OBJECTS: u32 = 1 << 20;
/// The largest index of an object.
const MAX_INDEX: u32 = MAX_OBJECTS - 1;
/// Work requests per send or receive queue.
pub(crate) const MAX_QP_WR: u32 = MAX_OBJECTS;
/// The GSI QP (QP1).
pub(crate) const GSI_QPN: u32 = 1;
/// QP numbers of regular QPs: after QP0, QP1 and a reserved range.
pub(crate) const MIN_QPN: u32 = 16;
pub(crate) const MAX_QPN: u32 = MAX_INDEX;
/// SRQ numbers.
pub(crate) const MIN_SRQ_NUM: u32 = 0x0002_0001;
pub(crate) const MAX_SRQ_NUM: u32 = MAX_INDEX;
/// MR indices take the lower half of the index space, MWs the upper half.
pub(crate) const MIN_MR_INDEX: u32 = 1;
pub(crate) const MAX_MR_INDEX: u32 = (MAX_OBJECTS >> 1) - 1;
pub(crate) const MIN_MW_INDEX: u32 = (MAX_OBJECTS >> 1) + 1;
pub(crate) const MAX_MW_INDEX: u32 = MAX_INDEX;
/// Address handle numbers.
pub(crate) const MIN_AH_NUM: u32 = 1;
pub(crate) const MAX_AH_NUM: u32 = (1 << 15) - 1;
/// Scatter/gather entries per send or receive WQE (`RXE_MAX_SGE`).
pub(crate) const MAX_SGE: u32 = 32;
/// Bytes of inline data a send WQE may carry: its SGE area at [`MAX_SGE`] (16 bytes each,
/// checked in `wqe`).
pub(crate) const MAX_INLINE_DATA: u32 = MAX_SGE * 16;
/// Scatter/gather entries per SRQ WQE.
pub(crate) const MAX_SRQ_SGE: u32 = 27;
/// Work requests per SRQ.
pub(crate) const MAX_SRQ_WR: u32 = MAX_OBJECTS;
/// Most CQEs per CQ (2^15 - 1).
pub(crate) const MAX_CQE: u32 = (1 << 15) - 1;
/// RDMA read and atomic operations outstanding per QP, as initiator and responder.
pub(crate) const MAX_QP_RD_ATOM: u32 = 128;
/// RDMA read and atomic resources of the whole device.
const MAX_RES_RD_ATOM: u32 = 0x3f000;
/// Multicast groups, QPs per group and attachments in all.
pub(crate) const MAX_MCAST_GRP: u32 = 8192;
pub(crate) const MAX_MCAST_QP_ATTACH: u32 = 56;
const MAX_TOTAL_MCAST_QP_ATTACH: u32 = 0x70000;
/// Pages in a fast-registration list.
pub(crate) const MAX_FAST_REG_PAGES: u32 = 512;
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
/// Largest message.
pub(crate) const MAX_MSG_SZ: u32 = 1 << 31;
/// RoCE headers that must fit in the netdev MTU beside the IB payload.
const MAX_HDR_LENGTH: u32 = 80;

// Kernel consumers' work requests are decoded with as many SGEs as WQEs hold.
const _: () = assert!(MAX_SGE as usize == crate::ext::rdma::wr::MAX_WR_SGE);

/// How many numbers `min..=max` holds, as the core's attributes count.
const fn count(min: u32, max: u32) -> i32 {
    (max - min + 1) as i32
}

/// Fills the device attributes.
pub(crate) fn device_attr(attr: &mut DeviceAttr, sys_image_guid: [u8; 8]) {
    let cap = DeviceCapFlags::BAD_PKEY_CNTR
        | DeviceCapFlags::BAD_QKEY_CNTR
        | DeviceCapFlags::AUTO_PATH_MIG
        | DeviceCapFlags::CHANGE_PHY_PORT
        | DeviceCapFlags::UD_AV_PORT_ENFORCE
        | DeviceCapFlags::PORT_ACTIVE_EVENT
        | DeviceCapFlags::SYS_IMAGE_GUID
        | DeviceCapFlags::RC_RNR_NAK_GEN
        | DeviceCapFlags::SRQ_RESIZE
        | DeviceCapFlags::MEM_MGT_EXTENSIONS
        | DeviceCapFlags::MEM_WINDOW
        | DeviceCapFlags::FLUSH_GLOBAL
        | DeviceCapFlags::FLUSH_PERSISTENT
        | DeviceCapFlags::MEM_WINDOW_TYPE_2B
        | DeviceCapFlags::ATOMIC_WRITE;
    attr.vendor_id = VENDOR_ID;
    attr.sys_image_guid = u64::from_ne_bytes(sys_image_guid);
    attr.max_mr_size = u64::MAX;
    attr.page_size_cap = PAGE_SIZE_CAP;
    attr.max_qp = count(MIN_QPN, MAX_QPN);
    attr.max_qp_wr = MAX_QP_WR as i32;
    attr.device_cap_flags = cap.bits();
    // `rdma link delete` needs the device to allow unregistration from userspace.
    attr.kernel_cap_flags = KernelCapFlags::ALLOW_USER_UNREG.bits();
    attr.max_send_sge = MAX_SGE as i32;
    attr.max_recv_sge = MAX_SGE as i32;
    attr.max_sge_rd = MAX_SGE as i32;
    attr.max_cq = MAX_OBJECTS as i32;
    attr.max_cqe = MAX_CQE as i32;
    attr.max_mr = count(MIN_MR_INDEX, MAX_MR_INDEX);
    attr.max_mw = count(MIN_MW_INDEX, MAX_MW_INDEX);
    attr.max_pd = MAX_OBJECTS as i32;
    attr.max_qp_rd_atom = MAX_QP_RD_ATOM as i32;
    attr.max_res_rd_atom = MAX_RES_RD_ATOM as i32;
    attr.max_qp_init_rd_atom = MAX_QP_RD_ATOM as i32;
    attr.atomic_cap = ATOMIC_HCA;
    attr.max_mcast_grp = MAX_MCAST_GRP as i32;
    attr.max_mcast_qp_attach = MAX_MCAST_QP_ATTACH as i32;
    attr.max_total_mcast_qp_attach = MAX_TOTAL_MCAST_QP_ATTACH as i32;
    attr.max_ah = count(MIN_AH_NUM, MAX_AH_NUM);
    attr.max_srq = count(MIN_SRQ_NUM, MAX_SRQ_NUM);
    attr.max_srq_wr = MAX_SRQ_WR as i32;
    attr.max_srq_sge = MAX_SRQ_SGE as i32;
    attr.max_fast_reg_page_list_len = MAX_FAST_REG_PAGES;
    attr.max_pkeys = MAX_PKEYS;
    attr.local_ca_ack_delay = LOCAL_CA_ACK_DELAY;
}

/// The IB MTU enum for payloads that fit a netdev MTU of `netdev_mtu` bytes beside the
/// RoCE headers, capped at 4096 (1500 gives 1024, 9000 gives 4096).
pub(crate) fn ib_mtu_for_netdev(netdev_mtu: u32) -> Mtu {
    match netdev_mtu.saturating_sub(MAX_HDR_LENGTH) {
        4096.. => Mtu::Mtu4096,
        2048.. => Mtu::Mtu2048,
        1024.. => Mtu::Mtu1024,
        512.. => Mtu::Mtu512,
        _ => Mtu::Mtu256,
    }
}

/// Fills the port attributes that do not depend on the netdev's state.
pub(crate) fn port_attr(attr: &mut PortAttr) {
    attr.max_mtu = Mtu::Mtu4096.raw();
    attr.gid_tbl_len = GID_TBL_LEN as i32;
    attr.port_cap_flags = PortCapFlags::CM_SUP.bits();
    attr.max_msg_sz = MAX_MSG_SZ;
    attr.pkey_tbl_len = PKEY_TBL_LEN;
    attr.max_vl_num = 1;
    attr.active_width = WIDTH_1X;
    attr.active_speed = 1;
}
