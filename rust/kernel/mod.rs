// SPDX-License-Identifier: GPL-2.0

//! Safe abstractions that the 6.12 `kernel` crate lacks and rrxe needs.
//!
//! Every `unsafe` block of rrxe lives below this module, behind safe types; the driver
//! in `drivers/infiniband/sw/rrxe/` is safe Rust.

pub mod bytes;
pub mod cpu;
pub mod crc;
pub mod delay;
pub mod error;
pub mod layout;
pub mod net;
pub mod param;
pub mod rdma;
pub mod sched;
pub mod sync;
pub mod timer;
pub mod transmute;
pub mod vec;
pub mod workqueue;
pub mod xarray;
