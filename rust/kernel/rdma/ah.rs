// SPDX-License-Identifier: GPL-2.0

//! Address vectors (`struct rdma_ah_attr`) as address handles and QPs keep them.

use super::qp::copy;
use crate::bindings;

/// The RoCEv2 addressing of an address vector, as the send path needs it.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct RoceAv {
    /// Source GID (from the GID table entry the vector names).
    pub sgid: [u8; 16],
    /// Destination GID.
    pub dgid: [u8; 16],
    /// Destination MAC address, resolved by the core.
    pub dmac: [u8; 6],
    /// IPv6 traffic class or IPv4 TOS.
    pub traffic_class: u8,
    /// Hop limit or TTL.
    pub hop_limit: u8,
    /// IPv6 flow label.
    pub flow_label: u32,
}

/// An address vector without its pointers (the GID attribute reference is the core's,
/// valid only during a call), and its RoCE addressing when it had a GID attribute.
#[derive(Default)]
pub struct AhAttrs(bindings::rdma_ah_attr, Option<RoceAv>);

// SAFETY: The pointers of the copy are always null; the rest is plain data.
unsafe impl Send for AhAttrs {}
// SAFETY: See `Send`.
unsafe impl Sync for AhAttrs {}

impl AhAttrs {
    /// A pointer-free copy of `attr`.
    ///
    /// `attr` comes from the core in a verb call, so its GID attribute (if any) is valid.
    pub fn new(attr: &bindings::rdma_ah_attr) -> Self {
        // SAFETY: The core holds a reference on the GID attribute for the call's duration.
        let sgid = unsafe { attr.grh.sgid_attr.as_ref() }.map(|g| {
            // SAFETY: `raw` is the plain byte view of the GID union.
            unsafe { *g.gid.raw.as_ref() }
        });
        let mut a = copy(attr);
        a.grh.sgid_attr = core::ptr::null();
        let av = sgid.map(|sgid| RoceAv {
            sgid,
            // SAFETY: As above.
            dgid: unsafe { *attr.grh.dgid.raw.as_ref() },
            // SAFETY: RoCE vectors use the `roce` member of the union.
            dmac: unsafe { attr.__bindgen_anon_1.roce.as_ref().dmac },
            traffic_class: attr.grh.traffic_class,
            hop_limit: attr.grh.hop_limit,
            flow_label: attr.grh.flow_label,
        });
        Self(a, av)
    }

    /// A copy for the core (without GID attribute).
    pub fn get(&self) -> bindings::rdma_ah_attr {
        copy(&self.0)
    }

    /// The RoCE addressing, if the vector had a source GID.
    pub fn roce(&self) -> Option<RoceAv> {
        self.1
    }

    /// The port.
    pub fn port_num(&self) -> u32 {
        self.0.port_num
    }

    /// The address type (`RDMA_AH_ATTR_TYPE_*`).
    pub fn ah_type(&self) -> u32 {
        self.0.type_
    }

    /// The source GID index.
    pub fn sgid_index(&self) -> u32 {
        self.0.grh.sgid_index.into()
    }
}
