// SPDX-License-Identifier: GPL-2.0

//! Multicast groups: which UD QPs receive a group's datagrams, and the net device's
//! multicast filter kept in step (the group's MAC is added with its first QP and removed
//! with its last).
//!
//! Anyone may send a datagram to the multicast QPN, so its cost must not grow with what
//! local users attached (up to 8,192 groups of 56 QPs) more than logarithmically: the
//! groups are kept in the order of their GIDs, and the receive path finds a group's QPs
//! among the (group, QP) pairs by binary search.

use crate::{
    counters::Counter,
    device::RrxeDev,
    ext::{net::skb::SkBuff, rdma::device::Device, sync::SpinLockBh, vec::swap_remove},
    params::{MAX_MCAST_GRP, MAX_MCAST_QP_ATTACH},
    proto::icrc::{IPV4_HDR_LEN, IPV6_HDR_LEN},
};
use kernel::prelude::*;

/// A group and its QPs.
struct Group {
    mgid: [u8; 16],
    qpns: KVec<u32>,
}

/// The groups of a device (the control path's view, under a mutex), in the order of their
/// GIDs.
pub(crate) struct Groups(KVec<Group>);

impl Groups {
    /// No groups.
    pub(crate) fn new() -> Self {
        Self(KVec::new())
    }

    /// The number of (group, QP) pairs.
    fn pairs(&self) -> usize {
        self.0.iter().map(|g| g.qpns.len()).sum()
    }

    /// Every (group, QP) pair, in the order of the groups, for the receive path's copy.
    fn members(&self) -> Result<Members> {
        let mut v = KVVec::with_capacity(self.pairs(), GFP_KERNEL)?;
        for g in self.0.iter() {
            for q in g.qpns.iter() {
                v.push((g.mgid, *q), GFP_KERNEL)?;
            }
        }
        Ok(v)
    }

    /// The group `mgid`'s index, or where it would go.
    fn find(&self, mgid: &[u8; 16]) -> core::result::Result<usize, usize> {
        self.0.binary_search_by(|g| g.mgid.cmp(mgid))
    }

    /// Inserts `g` at index `at` (from [`Self::find`]).
    fn insert(&mut self, at: usize, g: Group) -> Result {
        self.0.push(g, GFP_KERNEL)?;
        if let Some(tail) = self.0.get_mut(at..) {
            tail.rotate_right(1);
        }
        Ok(())
    }

    /// Removes the group at index `at`, keeping the order.
    fn remove(&mut self, at: usize) {
        if at >= self.0.len() {
            return;
        }
        if let Some(tail) = self.0.get_mut(at..) {
            tail.rotate_left(1);
        }
        if let Some(last) = self.0.len().checked_sub(1) {
            swap_remove(&mut self.0, last);
        }
    }
}

/// (Group, QP) pairs: up to 8,192 groups of 56 QPs, 9 MB, more than one allocation from
/// the slab may take (`KVVec`).
type Members = KVVec<([u8; 16], u32)>;

/// The QP number of a pair the receive path's copy keeps for a QP detached from its group
/// when no memory was left for a new copy: no QP's (RoCE has no QP0).
const NO_QP: u32 = 0;

/// The (group, QP) pairs the receive path looks up, in the order of the groups; replaced as
/// a whole on each change (allocated outside the spinlock).
pub(crate) type RxMembers = SpinLockBh<Members>;

/// Publishes the groups' current members to the receive path.
fn publish(dev: &Device<RrxeDev>, groups: &Groups) -> Result {
    let members = groups.members()?;
    let old = core::mem::replace(&mut *dev.data().mcast_rx().lock(), members);
    // Freed outside the spinlock.
    drop(old);
    Ok(())
}

/// The multicast group GID a datagram is addressed to: its destination IP as a GID.
fn dest_gid(ip: &[u8]) -> Option<[u8; 16]> {
    let mut gid = [0u8; 16];
    match ip.len() {
        IPV4_HDR_LEN => {
            gid[10] = 0xff;
            gid[11] = 0xff;
            gid.get_mut(12..)?.copy_from_slice(ip.get(16..20)?);
        }
        IPV6_HDR_LEN => gid.copy_from_slice(ip.get(24..40)?),
        _ => return None,
    }
    Some(gid)
}

/// Delivers a datagram sent to the multicast QPN (from the wire if `wire`) to every QP
/// attached to its group that admits it.
pub(crate) fn deliver(dev: &RrxeDev, skb: SkBuff, wire: bool) {
    let Some(gid) = skb.rx_view().and_then(|v| dest_gid(v.ip)) else {
        dev.count(Counter::RcvdBadPkt);
        return;
    };
    let mut qpns = [0u32; MAX_MCAST_QP_ATTACH as usize];
    let mut n = 0;
    {
        let members = dev.mcast_rx().lock();
        let first = members.partition_point(|(g, _)| *g < gid);
        let group = members.get(first..).unwrap_or_default();
        for ((_, q), slot) in group
            .iter()
            .take_while(|(g, _)| *g == gid)
            .filter(|(_, q)| *q != NO_QP)
            .zip(qpns.iter_mut())
        {
            *slot = *q;
            n += 1;
        }
    }
    let mut skb = Some(skb);
    let mut reached = false;
    let mut taken = false;
    for (i, qpn) in qpns.iter().take(n).enumerate() {
        let Some(qp) = dev.qps().get(*qpn) else {
            continue;
        };
        reached = true;
        if !skb
            .as_ref()
            .is_some_and(|skb| crate::recv::admitted(&qp, skb, true, wire))
        {
            continue;
        }
        let copy = if i + 1 == n {
            skb.take()
        } else {
            skb.as_ref().and_then(SkBuff::try_clone)
        };
        if let Some(copy) = copy {
            dev.count(Counter::RcvdPkts);
            qp.enqueue(copy, true, None);
            taken = true;
        }
    }
    // No QP here took it: the group has no member here (or it is not a group address), or
    // none admitted it (each refusal counted).
    if !taken {
        if !reached {
            dev.count(Counter::RcvdBadPkt);
        }
        return;
    }
    // The original is left when the last member was gone or refused it: its copies were
    // delivered.
    if let Some(skb) = skb {
        skb.consume();
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
    let at = match groups.find(mgid) {
        Ok(i) => i,
        Err(at) => return add_group(dev, &mut groups, at, qpn, mgid),
    };
    let g = groups.0.get_mut(at).ok_or(EINVAL)?;
    if g.qpns.contains(&qpn) {
        return Ok(());
    }
    if g.qpns.len() >= MAX_MCAST_QP_ATTACH as usize {
        return Err(ENOMEM);
    }
    g.qpns.push(qpn, GFP_KERNEL)?;
    let published = publish(dev, &groups);
    if published.is_err() {
        // Not attached: the receive path's copy did not change.
        if let Some(g) = groups.0.get_mut(at) {
            if let Some(last) = g.qpns.len().checked_sub(1) {
                swap_remove(&mut g.qpns, last);
            }
        }
    }
    published
}

/// Adds group `mgid` at index `at` of `groups`, with QP `qpn`.
fn add_group(
    dev: &Device<RrxeDev>,
    groups: &mut Groups,
    at: usize,
    qpn: u32,
    mgid: &[u8; 16],
) -> Result {
    if groups.0.len() >= MAX_MCAST_GRP as usize {
        return Err(ENOMEM);
    }
    let ndev = dev.netdev().ok_or(ENODEV)?;
    let mut qpns = KVec::new();
    qpns.push(qpn, GFP_KERNEL)?;
    groups.insert(at, Group { mgid: *mgid, qpns })?;
    if let Err(e) = ndev
        .mc_add(&mac_of(mgid))
        .and_then(|()| publish(dev, groups))
    {
        groups.remove(at);
        let _ = ndev.mc_del(&mac_of(mgid));
        return Err(e);
    }
    Ok(())
}

/// Detaches QP `qpn` from group `mgid`; `EINVAL` if it is not attached.
pub(crate) fn detach(dev: &Device<RrxeDev>, qpn: u32, mgid: &[u8; 16]) -> Result {
    let mut groups = dev.data().mcast().lock();
    let gi = groups.find(mgid).map_err(|_| EINVAL)?;
    let g = groups.0.get_mut(gi).ok_or(EINVAL)?;
    let qi = g.qpns.iter().position(|q| *q == qpn).ok_or(EINVAL)?;
    swap_remove(&mut g.qpns, qi);
    if g.qpns.is_empty() {
        groups.remove(gi);
        if let Some(ndev) = dev.netdev() {
            // The filter entry may be gone with the device already.
            let _ = ndev.mc_del(&mac_of(mgid));
        }
    }
    // A detach must not fail once the QP is out of the groups: the RDMA core forgets the
    // attachment before it asks, and a QP it still counts attached cannot be destroyed.
    if publish(dev, &groups).is_err() {
        unpublish(dev, qpn, mgid);
    }
    Ok(())
}

/// Takes QP `qpn` out of group `mgid` in the receive path's copy, in place (no memory
/// for a new copy): its pair names [`NO_QP`] until the next change publishes a new one.
fn unpublish(dev: &Device<RrxeDev>, qpn: u32, mgid: &[u8; 16]) {
    let mut members = dev.data().mcast_rx().lock();
    let first = members.partition_point(|(g, _)| g < mgid);
    if let Some(pair) = members
        .get_mut(first..)
        .unwrap_or_default()
        .iter_mut()
        .take_while(|(g, _)| g == mgid)
        .find(|(_, q)| *q == qpn)
    {
        pair.1 = NO_QP;
    }
}
