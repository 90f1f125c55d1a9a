// SPDX-License-Identifier: GPL-2.0

//! QP attributes: their bounds, and the values the engine uses decoded from them.

use crate::{
    ah::check_av,
    ext::rdma::{
        ah::AhAttrs,
        qp::QpAttr,
        types::{Flags, Mtu as IbMtu, QpAttrMask},
    },
    params,
    proto::{
        mtu::Mtu,
        verbs::{Access, QpType},
    },
    qp::{QpShared, GSI_QKEY},
};
use kernel::prelude::*;

/// Upper bounds of QP attributes (IBTA field widths and device limits).
const MAX_RETRY: u8 = 7;
const MAX_TIMER: u8 = 31;

/// The attributes the engine uses, decoded from the `modify_qp` attributes.
#[derive(Clone, Copy)]
pub(crate) struct Params {
    pub(crate) mtu: Mtu,
    pub(crate) access: Access,
    pub(crate) qkey: u32,
    pub(crate) dest_qpn: u32,
    pub(crate) retry_cnt: u8,
    pub(crate) rnr_retry: u8,
    pub(crate) min_rnr_timer: u8,
    pub(crate) max_rd_atomic: u32,
    pub(crate) max_dest_rd_atomic: u32,
    /// Retransmission timeout in microseconds, if any.
    pub(crate) timeout_us: Option<u64>,
}

impl Params {
    pub(crate) fn of(a: &QpAttr, qp: &QpShared) -> Self {
        Params {
            mtu: Mtu::from_ib(a.path_mtu).unwrap_or(Mtu::Mtu1024),
            access: Access(a.qp_access_flags as u32),
            qkey: if qp.qp_type == QpType::Gsi {
                GSI_QKEY
            } else {
                a.qkey
            },
            dest_qpn: a.dest_qp_num,
            retry_cnt: a.retry_cnt,
            rnr_retry: a.rnr_retry,
            min_rnr_timer: a.min_rnr_timer,
            max_rd_atomic: a.max_rd_atomic.into(),
            max_dest_rd_atomic: a.max_dest_rd_atomic.into(),
            timeout_us: crate::proto::timers::local_ack_timeout_ns(a.timeout)
                .map(|ns| ns.div_ceil(1000)),
        }
    }

    pub(crate) const fn initial() -> Self {
        Params {
            mtu: Mtu::Mtu1024,
            access: Access(0),
            qkey: 0,
            dest_qpn: 0,
            retry_cnt: 0,
            rnr_retry: 0,
            min_rnr_timer: 0,
            max_rd_atomic: 0,
            max_dest_rd_atomic: 0,
            timeout_us: None,
        }
    }
}

/// Checks attribute values against the device's limits; `EINVAL` otherwise.
pub(crate) fn check_attr(attr: &QpAttr, mask: QpAttrMask) -> Result {
    let set = |bit| mask.contains(bit);
    let ok = (!set(QpAttrMask::PORT) || attr.port_num == 1)
        && (!set(QpAttrMask::PKEY_INDEX) || attr.pkey_index < params::PKEY_TBL_LEN)
        && (!set(QpAttrMask::MAX_QP_RD_ATOMIC)
            || u32::from(attr.max_rd_atomic) <= params::MAX_QP_RD_ATOM)
        && (!set(QpAttrMask::MAX_DEST_RD_ATOMIC)
            || u32::from(attr.max_dest_rd_atomic) <= params::MAX_QP_RD_ATOM)
        && (!set(QpAttrMask::PATH_MTU) || IbMtu::try_from(attr.path_mtu).is_ok())
        && (!set(QpAttrMask::TIMEOUT) || attr.timeout <= MAX_TIMER)
        && (!set(QpAttrMask::RETRY_CNT) || attr.retry_cnt <= MAX_RETRY)
        && (!set(QpAttrMask::RNR_RETRY) || attr.rnr_retry <= MAX_RETRY)
        && (!set(QpAttrMask::MIN_RNR_TIMER) || attr.min_rnr_timer <= MAX_TIMER)
        && (!set(QpAttrMask::ALT_PATH) || attr.alt_port_num == 1);
    if !ok {
        return Err(EINVAL);
    }
    if set(QpAttrMask::AV) {
        check_av(&AhAttrs::new(&attr.ah_attr))?;
    }
    Ok(())
}
