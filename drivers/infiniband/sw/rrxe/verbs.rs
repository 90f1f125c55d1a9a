// SPDX-License-Identifier: GPL-2.0

//! The verbs: the device operations the RDMA core calls ([`DeviceOps`]), each handed to the
//! object it concerns (device and port queries here, the rest in the objects' modules).

use crate::{
    ah::Ah,
    counters::{Counter, Counters},
    cq::Cq,
    device::{RrxeDev, PORT},
    ext::rdma::{
        ah::AhAttrs,
        device::{CqInitAttr, Device, DeviceAttr, DeviceOps, PortAttr, PortImmutable, SrqAttr},
        event::SrqEvents,
        mr::{KernelMem, PdId, SgMap},
        qp::{QpAttr, QpInit, QpInitAttr},
        stats::HwStats,
        types::{
            CqNotifyFlags, Mtu, PortPhysState, PortState, QpAttrMask, CORE_PORT_IBA_ROCE_UDP_ENCAP,
            DRIVER_ID_RXE, MGMT_MAD_SIZE,
        },
        udata::Udata,
        wr::{RecvWrs, SendWrs, WcArray},
    },
    mcast,
    mr::Mr,
    mw::Mw,
    params,
    pd::Pd,
    proto::bth::DEFAULT_PKEY,
    qp::Qp,
    srq::Srq,
};
use kernel::prelude::*;

/// The userspace provider ABI version of rdma-core's rxe provider.
const UVERBS_ABI_VERSION: u32 = 2;

/// A user context. Nothing per context yet beyond what the core keeps.
pub(crate) struct UserContext;

#[vtable]
impl DeviceOps for RrxeDev {
    const DRIVER_ID: u32 = DRIVER_ID_RXE;
    const UVERBS_ABI_VER: u32 = UVERBS_ABI_VERSION;

    type Ucontext = UserContext;
    type Pd = Pd;
    type Cq = Cq;
    type Qp = Qp;
    type Mr = Mr;
    type Ah = Ah;
    type Srq = Srq;
    type Mw = Mw;

    fn query_device(dev: &Device<Self>, attr: &mut DeviceAttr, udata: (usize, usize)) -> Result {
        // The rxe ABI carries no driver data for this verb.
        if udata != (0, 0) {
            return Err(EINVAL);
        }
        params::device_attr(attr, dev.data().guid());
        Ok(())
    }

    fn query_port(dev: &Device<Self>, port: u32, attr: &mut PortAttr) -> Result {
        if port != PORT {
            return Err(EINVAL);
        }
        params::port_attr(attr);
        // The port's 16-bit violation counters (as rxe, saturating).
        let data = dev.data();
        attr.bad_pkey_cntr = data.counters().get(Counter::RcvdBadPkey).min(0xffff) as u32;
        attr.qkey_viol_cntr = data.counters().get(Counter::RcvdBadQkey).min(0xffff) as u32;
        // Without a netdev (it is going away) the port is down, like a link without cable.
        let Some(ndev) = dev.netdev() else {
            attr.state = PortState::Down.raw();
            attr.phys_state = PortPhysState::Disabled.raw() as u8;
            attr.active_mtu = Mtu::Mtu256.raw();
            return Ok(());
        };
        if ndev.is_running_with_carrier() {
            attr.state = PortState::Active.raw();
            attr.phys_state = PortPhysState::LinkUp.raw() as u8;
        } else {
            attr.state = PortState::Down.raw();
            attr.phys_state = if ndev.is_up() {
                PortPhysState::Polling
            } else {
                PortPhysState::Disabled
            }
            .raw() as u8;
        }
        attr.active_mtu = params::ib_mtu_for_netdev(ndev.mtu()).raw();
        // The netdev may vanish meanwhile: keep the default speed then.
        if let Ok((speed, width)) = dev.eth_speed(port) {
            attr.active_speed = speed;
            attr.active_width = width;
        }
        Ok(())
    }

    fn get_port_immutable(_dev: &Device<Self>, port: u32, imm: &mut PortImmutable) -> Result {
        if port != PORT {
            return Err(EINVAL);
        }
        imm.core_cap_flags = CORE_PORT_IBA_ROCE_UDP_ENCAP;
        imm.gid_tbl_len = params::GID_TBL_LEN as i32;
        imm.pkey_tbl_len = params::PKEY_TBL_LEN as i32;
        imm.max_mad_size = MGMT_MAD_SIZE;
        Ok(())
    }

    fn query_pkey(_dev: &Device<Self>, port: u32, index: u16) -> Result<u16> {
        if port != PORT || index >= params::PKEY_TBL_LEN {
            return Err(EINVAL);
        }
        Ok(DEFAULT_PKEY)
    }

    fn alloc_ucontext(_dev: &Device<Self>, _udata: (usize, usize)) -> Result<UserContext> {
        // librxe sends and expects no driver data; like rxe, ignore any.
        Ok(UserContext)
    }

    fn alloc_pd(_dev: &Device<Self>, _udata: &mut Udata<'_>) -> Result<Pd> {
        Ok(Pd)
    }

    fn create_cq(
        dev: &Device<Self>,
        attr: &CqInitAttr,
        udata: &mut Udata<'_>,
    ) -> Result<(Cq, u32)> {
        Cq::new(dev, attr, udata)
    }

    fn resize_cq(cq: &Cq, cqe: u32, udata: &mut Udata<'_>) -> Result<u32> {
        cq.resize(cqe, udata)
    }

    fn req_notify_cq(cq: &Cq, flags: CqNotifyFlags) -> Result<bool> {
        cq.req_notify(flags)
    }

    fn create_qp(
        dev: &Device<Self>,
        init: &mut QpInit<'_, Self>,
        udata: &mut Udata<'_>,
    ) -> Result<(Qp, u32)> {
        Qp::new(dev, init, udata)
    }

    fn post_send(qp: &Qp, wrs: &mut SendWrs<'_, Self>) -> Result {
        qp.post_send(wrs)
    }

    fn post_recv(qp: &Qp, wrs: &mut RecvWrs<'_>) -> Result {
        qp.post_recv(wrs)
    }

    fn post_srq_recv(srq: &Srq, wrs: &mut RecvWrs<'_>) -> Result {
        srq.post(wrs)
    }

    fn poll_cq(cq: &Cq, wcs: &mut WcArray<'_>) -> Result<usize> {
        cq.poll(wcs)
    }

    fn peek_cq(cq: &Cq, max: usize) -> usize {
        cq.peek(max)
    }

    fn post_send_doorbell(qp: &Qp) -> Result {
        qp.doorbell()
    }

    fn modify_qp(qp: &Qp, attr: &QpAttr, mask: QpAttrMask, _udata: &mut Udata<'_>) -> Result {
        qp.modify(attr, mask)
    }

    fn query_qp(qp: &Qp, attr: &mut QpAttr, init: &mut QpInitAttr) -> Result {
        qp.query(attr, init)
    }

    fn reg_user_mr(
        dev: &Device<Self>,
        pd: PdId,
        start: u64,
        length: u64,
        iova: u64,
        access: u32,
        _udata: &mut Udata<'_>,
    ) -> Result<(Mr, u32, u32)> {
        Mr::new_user(dev, pd, start, length, iova, access)
    }

    fn get_dma_mr(
        dev: &Device<Self>,
        pd: PdId,
        access: u32,
        mem: KernelMem,
    ) -> Result<(Mr, u32, u32)> {
        Mr::new_dma(dev, pd, access, mem)
    }

    fn rereg_user_mr(
        _dev: &Device<Self>,
        mr: &Mr,
        flags: u32,
        access: u32,
        pd: Option<PdId>,
    ) -> Result {
        mr.rereg(flags, access, pd)
    }

    fn retire_mr(mr: &Mr) -> Result {
        mr.retire()
    }

    fn alloc_mr(
        dev: &Device<Self>,
        pd: PdId,
        mr_type: u32,
        max_num_sg: u32,
        mem: KernelMem,
    ) -> Result<(Mr, u32, u32)> {
        Mr::new_fast(dev, pd, mr_type, max_num_sg, mem)
    }

    fn map_mr_sg(mr: &Mr, map: SgMap<'_>) -> Result<i32> {
        mr.map_sg(map)
    }

    fn mr_set_page(mr: &Mr, addr: u64) -> Result {
        mr.set_page(addr)
    }

    fn create_ah(
        dev: &Device<Self>,
        pd: PdId,
        attr: AhAttrs,
        sleepable: bool,
        udata: &mut Udata<'_>,
    ) -> Result<Ah> {
        Ah::new(dev, pd, attr, sleepable, udata)
    }

    fn query_ah(ah: &Ah) -> Result<AhAttrs> {
        Ok(ah.attr())
    }

    fn create_srq(
        dev: &Device<Self>,
        events: SrqEvents,
        attr: &mut SrqAttr,
        srq_type: u32,
        udata: &mut Udata<'_>,
    ) -> Result<Srq> {
        Srq::new(dev, events, attr, srq_type, udata)
    }

    fn modify_srq(srq: &Srq, attr: &SrqAttr, mask: u32, udata: &mut Udata<'_>) -> Result {
        srq.modify(attr, mask, udata)
    }

    fn query_srq(srq: &Srq, attr: &mut SrqAttr) -> Result {
        srq.query(attr)
    }

    fn attach_mcast(dev: &Device<Self>, qp: &Qp, gid: &[u8; 16]) -> Result {
        mcast::attach(dev, qp.qpn(), gid)
    }

    fn detach_mcast(dev: &Device<Self>, qp: &Qp, gid: &[u8; 16]) -> Result {
        mcast::detach(dev, qp.qpn(), gid)
    }

    fn alloc_mw(
        dev: &Device<Self>,
        pd: PdId,
        mw_type: u32,
        _udata: &mut Udata<'_>,
    ) -> Result<(Mw, u32)> {
        Mw::new(dev, pd, mw_type)
    }

    fn hw_stats() -> &'static HwStats {
        Counters::names()
    }

    fn get_hw_stats(dev: &Device<Self>, port: u32, values: &mut [u64]) -> Result {
        if port != PORT {
            return Err(EINVAL);
        }
        dev.data().counters().read(values);
        Ok(())
    }
}
