// SPDX-License-Identifier: GPL-2.0

//! Raw bindings to the RDMA core, the UDP tunnel API, netdev and the rxe uapi.
//!
//! Generated at build time by bindgen with the kernel's own parameters (see `Kbuild`).
//! Types that the kernel's `bindings` crate already defines are not generated again
//! but re-exported from it, so that e.g. `ib_device.dev` is a `kernel::bindings::device`.
//! Only the safe abstractions in `rust/kernel/` use this module.

#![allow(
    dead_code,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    missing_docs,
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    unknown_lints,
    unnecessary_transmutes
)]

pub use kernel::bindings::*;
use kernel::ffi;

// Blocklisted by `rust/bindgen_parameters`; defined exactly as the kernel crate does.
type __kernel_size_t = usize;
type __kernel_ssize_t = isize;
type __kernel_ptrdiff_t = isize;

include!("rrxe_bindings_generated.rs");
