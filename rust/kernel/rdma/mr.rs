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

/// An 8-byte atomic operation on memory.
#[derive(Clone, Copy, Debug)]
pub enum Atomic {
    /// Compare with the first value, swap in the second if equal.
    CmpSwap(u64, u64),
    /// Add.
    FetchAdd(u64),
    /// Store.
    Write(u64),
}

impl Atomic {
    fn raw(self) -> (i32, u64, u64) {
        match self {
            Atomic::CmpSwap(c, s) => (0, c, s),
            Atomic::FetchAdd(a) => (1, a, 0),
            Atomic::Write(v) => (2, v, 0),
        }
    }
}

impl Umem {
    /// Copies from the region, `offset` bytes after its start, into `dst`.
    pub fn read(&self, offset: u64, dst: &mut [u8]) -> Result {
        // SAFETY: The umem is pinned and valid; the helper bounds the copy by its pages.
        kernel::error::to_result(unsafe {
            bindings::umem_copy(
                self.0.as_ptr(),
                offset,
                dst.as_mut_ptr().cast(),
                dst.len(),
                false,
            )
        })
    }

    /// Copies `src` into the region, `offset` bytes after its start.
    pub fn write(&self, offset: u64, src: &[u8]) -> Result {
        // SAFETY: As in `read`; the helper only reads `src`.
        kernel::error::to_result(unsafe {
            bindings::umem_copy(
                self.0.as_ptr(),
                offset,
                src.as_ptr().cast_mut().cast(),
                src.len(),
                true,
            )
        })
    }

    /// Performs `op` on the 8 bytes at `offset` (8-byte aligned); returns the old value.
    pub fn atomic(&self, offset: u64, op: Atomic) -> Result<u64> {
        let (op, a, b) = op.raw();
        let mut orig = 0u64;
        // SAFETY: As in `read`; the helper checks that the 8 bytes lie in one page.
        kernel::error::to_result(unsafe {
            bindings::umem_atomic(self.0.as_ptr(), offset, op, a, b, &mut orig)
        })?;
        Ok(orig)
    }
}

/// Memory of kernel consumers, named by kernel virtual address (the device uses virtual
/// DMA: the RDMA core hands kernel consumers their buffers' virtual addresses as DMA
/// addresses).
///
/// Only kernel PDs own such regions: userspace cannot create them, and keys are checked
/// against the PD before any access, so addresses come from trusted kernel code.
pub struct KernelMem;

impl KernelMem {
    /// Copies `dst.len()` bytes at `addr` into `dst`.
    pub fn read(addr: u64, dst: &mut [u8]) {
        // SAFETY: See the type's documentation: the kernel consumer vouches for `addr`.
        unsafe { bindings::kva_copy(addr, dst.as_mut_ptr().cast(), dst.len(), false) }
    }

    /// Copies `src` to `addr`.
    pub fn write(addr: u64, src: &[u8]) {
        // SAFETY: As in `read`.
        unsafe { bindings::kva_copy(addr, src.as_ptr().cast_mut().cast(), src.len(), true) }
    }

    /// Performs `op` on the aligned 8 bytes at `addr`; returns the old value.
    pub fn atomic(addr: u64, op: Atomic) -> u64 {
        let (op, a, b) = op.raw();
        // SAFETY: As in `read`; the caller checked the alignment.
        unsafe { bindings::kva_atomic(addr, op, a, b) }
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: Owned.
        unsafe { bindings::ib_umem_release(self.0.as_ptr()) };
    }
}
