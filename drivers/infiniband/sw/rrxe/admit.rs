// SPDX-License-Identifier: GPL-2.0

//! Admission of a received packet to its QP, where it arrives and before it is queued (as
//! rxe's `hdr_check` in `rxe_rcv`): the QP's state, then the protocol core's transport,
//! address, P_Key and Q_Key checks (`proto::admit`) against the QP's keys as its last
//! modify left them ([`QpShared::admit_keys`]; the GID table says which addresses are the
//! device's), every refusal counted. So a packet from a wrong source, with a wrong key or
//! for a QP that takes none never takes a place in a QP's queue.

use crate::{
    counters::Counter,
    device::PORT,
    ext::{
        net::{device::NetDevice, skb::RxView},
        rdma::types::QpState,
    },
    proto::admit::{admit, Refusal},
    qp::QpShared,
};
use core::sync::atomic::Ordering;

/// Whether the packet in the datagram of `view` (a request if `request`; from the wire on
/// net device `on`, else looped back) may reach `qp`; counts it if not.
pub(crate) fn accept(
    qp: &QpShared,
    view: &RxView<'_>,
    request: bool,
    on: Option<&NetDevice>,
) -> bool {
    // The QP's state must take it (rxe's `check_type_state`): a QP before RTR has no
    // keys to check it against. The stage that takes it checks again, under the QP lock.
    let state = QpState::try_from(qp.state.load(Ordering::Acquire));
    let takes = match state {
        Ok(QpState::Rts | QpState::Sqd) => true,
        Ok(QpState::Rtr | QpState::Sqe) => request,
        _ => false,
    };
    let keys = *qp.admit_keys.lock();
    // A datagram from the wire must be for an address of the net device it arrived on
    // (as rxe's `rxe_chk_dgid`); a loopback one, for any of the device's, also those of
    // the upper devices sharing its MAC address (a VLAN's, say).
    let ours = |gid: &[u8; 16]| qp.dev.has_roce_gid(PORT, gid, on);
    let r = if takes {
        match admit(&keys, view.ip, view.udp, view.head(), ours) {
            Ok(()) => return true,
            Err(r) => r,
        }
    } else {
        Refusal::Transport
    };
    qp.dev.data().count(match r {
        Refusal::Transport => Counter::RcvdBadTypeState,
        Refusal::Address => Counter::RcvdBadAddr,
        Refusal::PKey => Counter::RcvdBadPkey,
        Refusal::QKey => Counter::RcvdBadQkey,
        Refusal::Header => Counter::RcvdBadPkt,
    });
    false
}
