// SPDX-License-Identifier: GPL-2.0

//! rrxe: a soft-RoCE (RoCEv2) RDMA provider written in Rust.
//!
//! rrxe registers InfiniBand devices with the RDMA core on top of Ethernet netdevs
//! and carries the InfiniBand transport in UDP (port 4791), wire-compatible with the C
//! `rdma_rxe` driver and bound by rdma-core's unmodified rxe provider. Devices are
//! created with `rdma link add NAME type rrxe netdev NETDEV`.
//!
//! See `Documentation/infiniband/rrxe.rst`.

#![recursion_limit = "256"]
// Driver code is safe Rust: `unsafe` lives in the bindings and the abstractions only.
#![deny(unsafe_code)]

use kernel::{prelude::*, sync::Arc};

#[allow(unsafe_code)]
#[path = "../../../../rust/bindings/mod.rs"]
mod bindings;
// The abstractions are written as the `kernel` crate would have them (public API), but
// compiled into this crate: their `pub` items are crate-internal here, and unused ones
// still show up as dead code.
#[allow(unreachable_pub, unsafe_code)]
#[path = "../../../../rust/kernel/mod.rs"]
mod ext;

mod abi;
mod admit;
mod ah;
mod comp;
mod counters;
mod cq;
mod device;
mod direct;
mod eng;
mod icrc;
mod keys;
mod link;
mod mcast;
mod mem;
mod mr;
mod mw;
mod net;
mod params;
mod pass;
mod pd;
mod posters;
// The protocol core is a complete, host-tested library; the driver uses part of its API.
#[allow(dead_code, unreachable_pub)]
mod proto;
mod qp;
mod qp_attr;
mod qp_error;
mod queue;
mod recv;
mod req;
mod reqbox;
mod resp;
mod respbox;
mod sgl;
mod srq;
mod task;
mod tx;
mod verbs;
mod wqe;

use ext::{
    net::notifier,
    rdma::{device::Registry, link as rdma_link},
    workqueue::{OwnedQueue, WQ_MEM_RECLAIM, WQ_UNBOUND},
};

module! {
    type: Rrxe,
    name: "rrxe",
    author: "The rrxe developers",
    description: "Soft-RoCE (RoCEv2) RDMA provider in Rust",
    license: "GPL",
    alias: ["rdma-link-rrxe"],
}

/// The module: holds the driver-wide registrations for as long as it is loaded.
struct Rrxe {
    /// `rdma link` type `rrxe`; `None` once unregistered during unload.
    link: Option<Pin<KBox<rdma_link::Registration<link::Link>>>>,
    registry: Arc<Registry<device::RrxeDev>>,
    _notifier: Pin<KBox<notifier::Registration<link::Notifier>>>,
}

impl kernel::Module for Rrxe {
    fn init(module: &'static ThisModule) -> Result<Self> {
        ext::layout::check()?;
        let nets = Arc::new(net::Nets::register()?, GFP_KERNEL)?;
        let registry = Registry::new()?;
        let wq = Arc::new(
            // Storage (NVMe over RDMA) runs on it: it must progress under memory pressure.
            OwnedQueue::new(kernel::c_str!("rrxe"), WQ_UNBOUND | WQ_MEM_RECLAIM, 0)?,
            GFP_KERNEL,
        )?;
        let rx = Arc::new(
            net::Rx {
                registry: registry.clone(),
            },
            GFP_KERNEL,
        )?;
        let notifier = notifier::Registration::register(Arc::new(
            link::Notifier {
                registry: registry.clone(),
            },
            GFP_KERNEL,
        )?)?;
        let link = link::Link::new(module, registry.clone(), nets, rx, wq)?;
        let link = rdma_link::Registration::register(link)?;
        pr_info!("loaded\n");
        Ok(Rrxe {
            link: Some(link),
            registry,
            _notifier: notifier,
        })
    }
}

impl Drop for Rrxe {
    fn drop(&mut self) {
        // No new devices, then none left; the notifier and (with the link type's last
        // reference) the sockets go afterwards.
        drop(self.link.take());
        self.registry.unregister_all();
        pr_info!("unloaded\n");
    }
}
