// SPDX-License-Identifier: GPL-2.0

//! Load-time check that the generated bindings agree with the C compiler.
//!
//! The bindings are generated without layout tests; rrxe hands structures such as
//! `ib_device` and `ib_device_ops` to the RDMA core, so a mismatch between bindgen's and
//! clang's view of them would corrupt memory. The module refuses to load instead.

use crate::bindings;
use core::mem::{offset_of, size_of};
use kernel::prelude::*;

/// Compares a Rust layout figure with the C compiler's, logging a mismatch.
fn same(what: &str, rust: usize, c: usize) -> bool {
    if rust != c {
        pr_err!(
            "layout mismatch: {} is {} in Rust, {} in C\n",
            what,
            rust,
            c
        );
    }
    rust == c
}

/// Checks the layouts of the structures shared with the RDMA core.
///
/// Returns `EINVAL` (after logging every mismatch) if any differs.
pub fn check() -> Result {
    // SAFETY: The layout probes have no preconditions; they only return constants.
    let c = unsafe {
        [
            bindings::sizeof_ib_device(),
            bindings::sizeof_ib_device_ops(),
            bindings::sizeof_ib_qp_attr(),
            bindings::sizeof_ib_ucontext(),
            bindings::offsetof_ib_device_name(),
        ]
    };
    let checks = [
        same("ib_device", size_of::<bindings::ib_device>(), c[0]),
        same("ib_device_ops", size_of::<bindings::ib_device_ops>(), c[1]),
        same("ib_qp_attr", size_of::<bindings::ib_qp_attr>(), c[2]),
        same("ib_ucontext", size_of::<bindings::ib_ucontext>(), c[3]),
        same(
            "ib_device.name",
            offset_of!(bindings::ib_device, name),
            c[4],
        ),
    ];
    if checks.iter().all(|ok| *ok) {
        Ok(())
    } else {
        Err(EINVAL)
    }
}
