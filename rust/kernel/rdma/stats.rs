// SPDX-License-Identifier: GPL-2.0

//! Hardware counters shown by `rdma statistic` (`struct rdma_stat_desc`).

use crate::bindings;
use kernel::str::CStr;

/// The static descriptors of a port's counters.
#[repr(transparent)]
pub struct HwStats([bindings::rdma_stat_desc]);

/// A fixed-size table of counter descriptors, for a `static`.
#[repr(transparent)]
pub struct HwStatsTable<const N: usize>([bindings::rdma_stat_desc; N]);

// SAFETY: The descriptors are immutable and point to static strings.
unsafe impl<const N: usize> Sync for HwStatsTable<N> {}

impl<const N: usize> HwStatsTable<N> {
    /// Descriptors for counters with the given names, in that order.
    pub const fn new(names: [&'static CStr; N]) -> Self {
        let mut descs = [bindings::rdma_stat_desc {
            name: core::ptr::null(),
            flags: 0,
            priv_: core::ptr::null(),
        }; N];
        let mut i = 0;
        while i < N {
            descs[i].name = names[i].as_char_ptr();
            i += 1;
        }
        Self(descs)
    }

    /// The table as the unsized type the device operations use.
    pub const fn as_stats(&'static self) -> &'static HwStats {
        let slice: &'static [bindings::rdma_stat_desc] = &self.0;
        // SAFETY: `HwStats` is a transparent wrapper of the slice.
        unsafe { &*(slice as *const [bindings::rdma_stat_desc] as *const HwStats) }
    }
}

impl HwStats {
    /// The number of counters.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn as_raw(&self) -> *const bindings::rdma_stat_desc {
        self.0.as_ptr()
    }
}
