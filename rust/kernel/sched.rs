// SPDX-License-Identifier: GPL-2.0

//! The calling task, as the scheduler sees it.

use crate::bindings;

/// The ID of the calling task (its thread's, in the initial PID namespace); never 0 outside
/// the idle tasks. Process context: in an interrupt it names the interrupted task.
pub fn current_pid() -> i32 {
    kernel::current!().pid()
}

/// How many times the calling task has slept (its voluntary context switches, `nvcsw`):
/// unchanged between two calls if it kept running, or was only preempted, in between.
/// Process context.
pub fn voluntary_switches() -> u64 {
    // SAFETY: `current` is always a valid task; the helper reads one of its counters.
    let n = unsafe { bindings::current_nvcsw() };
    n as u64
}
