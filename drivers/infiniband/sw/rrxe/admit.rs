// SPDX-License-Identifier: GPL-2.0

//! Admission of a received packet to its QP, under the QP lock at the start of its
//! processing (where the address vector and the attributes are stable): the protocol
//! core's transport, address, P_Key and Q_Key checks (`proto::admit`; the GID table says
//! which addresses are the device's), every refusal counted.

use crate::{
    counters::Counter,
    device::PORT,
    ext::net::{device::NetDevice, skb::RxView},
    pass::Pass,
    proto::{
        admit::{admit, QpKeys, Refusal},
        packet::Packet,
    },
};

/// Whether `pkt`, received in the datagram of `view` (from the wire on net device `on`,
/// else looped back), may reach the pass's QP; counts it if not.
pub(crate) fn accept<P>(
    p: &Pass<'_>,
    view: &RxView<'_>,
    on: Option<&NetDevice>,
    pkt: &Packet<P>,
) -> bool {
    let keys = QpKeys {
        qp_type: p.qp.qp_type,
        sgid: p.inner.path.av().sgid,
        dgid: p.inner.path.av().dgid,
        qkey: p.inner.params.qkey,
    };
    // A datagram from the wire must be for an address of the net device it arrived on
    // (as rxe's `rxe_chk_dgid`); a loopback one, for any of the device's, also those of
    // the upper devices sharing its MAC address (a VLAN's, say).
    let ours = |gid: &[u8; 16]| p.qp.dev.has_roce_gid(PORT, gid, on);
    let Err(r) = admit(&keys, view.ip, view.udp, pkt, ours) else {
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
