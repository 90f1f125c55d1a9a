// SPDX-License-Identifier: GPL-2.0

//! Address vectors (`struct rdma_ah_attr`) as address handles and QPs keep them.

use super::qp::copy;
use crate::bindings;

/// An address vector without its pointers (the GID attribute reference is the core's,
/// valid only during a call).
#[derive(Default)]
pub struct AhAttrs(bindings::rdma_ah_attr);

// SAFETY: The pointers of the copy are always null; the rest is plain data.
unsafe impl Send for AhAttrs {}
// SAFETY: See `Send`.
unsafe impl Sync for AhAttrs {}

impl AhAttrs {
    /// A pointer-free copy of `attr`.
    pub fn new(attr: &bindings::rdma_ah_attr) -> Self {
        let mut a = copy(attr);
        a.grh.sgid_attr = core::ptr::null();
        Self(a)
    }

    /// A copy for the core (without GID attribute).
    pub fn get(&self) -> bindings::rdma_ah_attr {
        copy(&self.0)
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
