// SPDX-License-Identifier: GPL-2.0

//! The RDMA core: devices, their verbs operations and `rdma link` types.

pub mod ah;
mod callbacks;
pub mod cq;
pub mod device;
pub mod event;
pub mod link;
pub mod mmap;
pub mod mr;
mod object;
pub mod ops;
pub mod qp;
pub mod qp_event;
pub mod registry;
mod revocable;
pub mod roce_xmit;
pub mod rxe_abi;
pub mod shared;
pub mod stats;
pub mod types;
pub mod udata;
pub mod wr;
