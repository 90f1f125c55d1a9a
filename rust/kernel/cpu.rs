// SPDX-License-Identifier: GPL-2.0

//! CPUs.

use crate::bindings;

/// How many CPUs are online now (a CPU may come or go right after).
pub fn num_online() -> u32 {
    // SAFETY: Reads the weight of `cpu_online_mask`; no requirement.
    unsafe { bindings::num_online_cpus() }
}
