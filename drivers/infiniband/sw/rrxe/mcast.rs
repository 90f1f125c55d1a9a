// SPDX-License-Identifier: GPL-2.0

//! Multicast groups: which UD QPs receive a group's datagrams, and the net device's
//! multicast filter kept in step (the group's MAC is added with its first QP and removed
//! with its last).

use crate::{
    device::RrxeDev,
    ext::{rdma::device::Device, vec::swap_remove},
    params::{MAX_MCAST_GRP, MAX_MCAST_QP_ATTACH},
};
use kernel::prelude::*;

/// A group and its QPs.
struct Group {
    mgid: [u8; 16],
    qpns: KVec<u32>,
}

/// The groups of a device.
pub(crate) struct Groups(KVec<Group>);

impl Groups {
    /// No groups.
    pub(crate) fn new() -> Self {
        Self(KVec::new())
    }
}

/// The Ethernet multicast MAC of an IPv6 (or IPv4-mapped) group GID: 33:33 and its last
/// 32 bits (RFC 2464).
fn mac_of(mgid: &[u8; 16]) -> [u8; 6] {
    [0x33, 0x33, mgid[12], mgid[13], mgid[14], mgid[15]]
}

/// Attaches QP `qpn` to group `mgid`.
pub(crate) fn attach(dev: &Device<RrxeDev>, qpn: u32, mgid: &[u8; 16]) -> Result {
    let mut groups = dev.data().mcast().lock();
    if let Some(g) = groups.0.iter_mut().find(|g| g.mgid == *mgid) {
        if g.qpns.contains(&qpn) {
            return Ok(());
        }
        if g.qpns.len() >= MAX_MCAST_QP_ATTACH as usize {
            return Err(ENOMEM);
        }
        g.qpns.push(qpn, GFP_KERNEL)?;
        return Ok(());
    }
    if groups.0.len() >= MAX_MCAST_GRP as usize {
        return Err(ENOMEM);
    }
    let ndev = dev.netdev().ok_or(ENODEV)?;
    let mut qpns = KVec::new();
    qpns.push(qpn, GFP_KERNEL)?;
    groups.0.push(Group { mgid: *mgid, qpns }, GFP_KERNEL)?;
    if let Err(e) = ndev.mc_add(&mac_of(mgid)) {
        let last = groups.0.len() - 1;
        swap_remove(&mut groups.0, last);
        return Err(e);
    }
    Ok(())
}

/// Detaches QP `qpn` from group `mgid`; `EINVAL` if it is not attached.
pub(crate) fn detach(dev: &Device<RrxeDev>, qpn: u32, mgid: &[u8; 16]) -> Result {
    let mut groups = dev.data().mcast().lock();
    let gi = groups
        .0
        .iter()
        .position(|g| g.mgid == *mgid)
        .ok_or(EINVAL)?;
    let g = groups.0.get_mut(gi).ok_or(EINVAL)?;
    let qi = g.qpns.iter().position(|q| *q == qpn).ok_or(EINVAL)?;
    swap_remove(&mut g.qpns, qi);
    if g.qpns.is_empty() {
        swap_remove(&mut groups.0, gi);
        if let Some(ndev) = dev.netdev() {
            // The filter entry may be gone with the device already.
            let _ = ndev.mc_del(&mac_of(mgid));
        }
    }
    Ok(())
}
