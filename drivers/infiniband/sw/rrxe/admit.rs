// SPDX-License-Identifier: GPL-2.0

//! Admission of a received packet to its QP, under the QP lock at the start of its
//! processing (where the address vector and the attributes are stable): the protocol
//! core's transport, address, P_Key and Q_Key checks (`proto::admit`), every refusal
//! counted.

use crate::{
    counters::Counter,
    device::RrxeDev,
    ext::rdma::device::Device,
    proto::{
        admit::{admit, QpKeys, Refusal},
        packet::Packet,
    },
    qp::{Inner, QpShared},
};

/// Whether `pkt`, received with IP header `ip` and UDP header `udp`, may reach `qp`;
/// counts it if not.
pub(crate) fn accept(
    qp: &QpShared,
    dev: &Device<RrxeDev>,
    inner: &Inner,
    ip: &[u8],
    udp: &[u8],
    pkt: &Packet<'_>,
) -> bool {
    let keys = QpKeys {
        qp_type: qp.qp_type,
        sgid: inner.path.av.sgid,
        dgid: inner.path.av.dgid,
        qkey: inner.params.qkey,
    };
    let Err(r) = admit(&keys, ip, udp, pkt) else {
        return true;
    };
    dev.data().count(match r {
        Refusal::Transport => Counter::RcvdBadTypeState,
        Refusal::Address => Counter::RcvdBadAddr,
        Refusal::PKey => Counter::RcvdBadPkey,
        Refusal::QKey => Counter::RcvdBadQkey,
    });
    false
}
