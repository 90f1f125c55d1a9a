// SPDX-License-Identifier: GPL-2.0

//! Memory regions: pinned user memory (`ib_umem`) and the driver-allocated `ib_mr`.

use super::device::{Device, DeviceOps};
use crate::bindings;
use core::ptr::NonNull;
use kernel::prelude::*;

/// Pinned user memory (`struct ib_umem`); unpinned when dropped.
pub struct Umem(NonNull<bindings::ib_umem>);

// SAFETY: A pinned region may be used and released from any process context.
unsafe impl Send for Umem {}
// SAFETY: Shared access does not mutate the umem.
unsafe impl Sync for Umem {}

impl Umem {
    /// Pins `length` bytes of the caller's memory at `addr` for `access` (`IB_ACCESS_*`).
    pub fn get<T: DeviceOps>(dev: &Device<T>, addr: u64, length: u64, access: u32) -> Result<Self> {
        let length = usize::try_from(length).map_err(|_| EINVAL)?;
        // SAFETY: The device is valid; the core checks the range and the caller's limits.
        let p = unsafe { bindings::ib_umem_get(dev.as_raw(), addr as _, length, access as i32) };
        // The core returns an error pointer or a valid umem.
        let errno = p as isize;
        if (-4095..0).contains(&errno) {
            return Err(Error::from_errno(errno as i32));
        }
        NonNull::new(p).map(Self).ok_or(ENOMEM)
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: Owned.
        unsafe { bindings::ib_umem_release(self.0.as_ptr()) };
    }
}
