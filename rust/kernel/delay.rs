// SPDX-License-Identifier: GPL-2.0

//! Sleeping delays.

use crate::bindings;

/// Sleeps for at least `ms` milliseconds. Process context only.
pub fn msleep(ms: u32) {
    // SAFETY: A plain sleep; the caller is in process context (documented requirement,
    // checked by `might_sleep` in the callee).
    unsafe { bindings::msleep(ms) }
}
