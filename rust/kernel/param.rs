// SPDX-License-Identifier: GPL-2.0

//! rrxe's module parameters, declared by the C helpers (6.12's `module!` declares none)
//! and writable at run time (`/sys/module/rrxe/parameters/`).

use crate::bindings;

/// `zero_copy`: whether a request's payload may go by reference to its pages (zero-copy
/// transmit); read at each packet, so a change applies from the next one.
pub fn zero_copy() -> bool {
    // SAFETY: Reads the parameter's current value once; no requirement.
    unsafe { bindings::param_zero_copy() }
}

/// `bursts`: whether consecutive packets of one message between QPs of this device may go
/// as one datagram (loopback bursts); read when a request starts and at each READ
/// response, so a change applies from the next one.
pub fn bursts() -> bool {
    // SAFETY: Reads the parameter's current value once; no requirement.
    unsafe { bindings::param_bursts() }
}
