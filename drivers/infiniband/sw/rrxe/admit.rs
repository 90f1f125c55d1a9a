// SPDX-License-Identifier: GPL-2.0

//! Admission of a received packet to its QP, under the QP lock at the start of its
//! processing (where the address vector and the attributes are stable): the protocol
//! core's transport, address, P_Key and Q_Key checks (`proto::admit`; the GID table says
//! which addresses are the device's), every refusal counted.

use crate::{
    counters::Counter,
    device::PORT,
    pass::Pass,
    proto::{
        admit::{admit, QpKeys, Refusal},
        packet::Packet,
    },
};

/// Whether `pkt`, received with IP header `ip` and UDP header `udp`, may reach the pass's
/// QP; counts it if not.
pub(crate) fn accept<P>(p: &Pass<'_>, ip: &[u8], udp: &[u8], pkt: &Packet<P>) -> bool {
    let keys = QpKeys {
        qp_type: p.qp.qp_type,
        sgid: p.inner.path.av().sgid,
        dgid: p.inner.path.av().dgid,
        qkey: p.inner.params.qkey,
    };
    let ours = |gid: &[u8; 16]| p.dev.has_roce_gid(PORT, gid);
    let Err(r) = admit(&keys, ip, udp, pkt, ours) else {
        return true;
    };
    p.count(match r {
        Refusal::Transport => Counter::RcvdBadTypeState,
        Refusal::Address => Counter::RcvdBadAddr,
        Refusal::PKey => Counter::RcvdBadPkey,
        Refusal::QKey => Counter::RcvdBadQkey,
    });
    false
}
