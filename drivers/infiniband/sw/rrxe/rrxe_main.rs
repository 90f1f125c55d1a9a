// SPDX-License-Identifier: GPL-2.0

//! rrxe: a soft-RoCE (RoCEv2) RDMA provider written in Rust.
//!
//! rrxe registers InfiniBand devices with the RDMA core on top of Ethernet netdevs
//! and carries the InfiniBand transport in UDP (port 4791), wire-compatible with the C
//! `rdma_rxe` driver and bound by rdma-core's unmodified rxe provider. Devices are
//! created with `rdma link add NAME type rrxe netdev NETDEV`.
//!
//! See `Documentation/infiniband/rrxe.rst`.

use kernel::prelude::*;

#[path = "../../../../rust/bindings/mod.rs"]
mod bindings;
// The abstractions are written as the `kernel` crate would have them (public API), but
// compiled into this crate: their `pub` items are crate-internal here, and unused ones
// still show up as dead code.
#[allow(unreachable_pub)]
#[path = "../../../../rust/kernel/mod.rs"]
mod ext;

module! {
    type: Rrxe,
    name: "rrxe",
    author: "The rrxe developers",
    description: "Soft-RoCE (RoCEv2) RDMA provider in Rust",
    license: "GPL",
    alias: ["rdma-link-rrxe"],
}

/// The module: holds the driver-wide registrations for as long as it is loaded.
struct Rrxe;

impl kernel::Module for Rrxe {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        ext::layout::check()?;
        pr_info!("loaded\n");
        Ok(Rrxe)
    }
}

impl Drop for Rrxe {
    fn drop(&mut self) {
        pr_info!("unloaded\n");
    }
}
