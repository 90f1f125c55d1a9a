// SPDX-License-Identifier: GPL-2.0

//! CPUs.

use crate::bindings;

/// How many CPUs are online now (a CPU may come or go right after).
pub fn num_online() -> u32 {
    // SAFETY: Reads the weight of `cpu_online_mask`; no requirement.
    unsafe { bindings::num_online_cpus() }
}

/// One more than the highest CPU number there can be (`nr_cpu_ids`): every CPU's number is
/// below it.
pub fn nr_ids() -> u32 {
    // SAFETY: Reads a variable set at boot; no requirement.
    unsafe { bindings::nr_cpu_ids() }
}

/// The number of the CPU the caller runs on now, below [`nr_ids`]: a hint in preemptible
/// context, where the caller may run on another CPU right after.
pub fn current_hint() -> u32 {
    // SAFETY: `raw_smp_processor_id` reads the per-CPU number; it has no requirement (the
    // plain `smp_processor_id` checks that preemption is off, which a hint does not need).
    unsafe { bindings::raw_smp_processor_id() }
}
