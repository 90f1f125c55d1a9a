// SPDX-License-Identifier: GPL-2.0

//! Driver data of verbs requests (`struct ib_udata`): the provider-specific command and
//! response of a request from userspace. Kernel callers have none.

use crate::bindings;
use core::{marker::PhantomData, mem::size_of, ptr::NonNull};
use kernel::{
    prelude::*,
    types::{AsBytes, FromBytes},
    uaccess::UserSlice,
};

// SAFETY: 48 bytes of naturally aligned integer fields (u64, u32s, u16s, u8s) and a union of
// two `__u32`: no implicit padding, so no uninitialised byte; no interior mutability.
unsafe impl AsBytes for bindings::ib_uverbs_wc {}

/// The driver data of one verbs request.
pub struct Udata<'a> {
    raw: Option<NonNull<bindings::ib_udata>>,
    _p: PhantomData<&'a mut bindings::ib_udata>,
}

impl Udata<'_> {
    /// Wraps the request's `udata` (null for kernel callers).
    ///
    /// # Safety
    ///
    /// `raw` must be null or valid for the lifetime of the wrapper, and belong to a request
    /// of a user context (uverbs embeds it in the request's attribute bundle).
    pub(crate) unsafe fn from_raw(raw: *mut bindings::ib_udata) -> Self {
        Self {
            raw: NonNull::new(raw),
            _p: PhantomData,
        }
    }

    /// Whether the request comes from userspace.
    pub fn is_user(&self) -> bool {
        self.raw.is_some()
    }

    /// Copies the response `resp` to userspace. Fails with `EINVAL` if the user's response
    /// buffer is shorter than `T`, `EFAULT` if it is not writable. No-op for kernel callers.
    pub fn write_response<T: AsBytes>(&mut self, resp: &T) -> Result {
        let Some(raw) = self.raw else {
            return Ok(());
        };
        // SAFETY: `raw` is valid (type invariant).
        let udata = unsafe { raw.as_ref() };
        if udata.outlen < size_of::<T>() {
            return Err(EINVAL);
        }
        UserSlice::new(udata.outbuf as usize, size_of::<T>())
            .writer()
            .write(resp)
    }

    /// Reads the user's command data as a `T`; `EINVAL` if it is shorter, `EFAULT` if it is
    /// not readable. Kernel callers have none (`EINVAL`).
    pub fn read_command<T: FromBytes>(&self) -> Result<T> {
        let raw = self.raw.ok_or(EINVAL)?;
        // SAFETY: `raw` is valid (type invariant).
        let udata = unsafe { raw.as_ref() };
        if udata.inlen < size_of::<T>() {
            return Err(EINVAL);
        }
        UserSlice::new(udata.inbuf as usize, size_of::<T>())
            .reader()
            .read()
    }

    /// Writes `v` to the user address `addr` (a response location given in the command).
    pub fn write_to_user<T: AsBytes>(&self, addr: u64, v: &T) -> Result {
        if !self.is_user() {
            return Err(EINVAL);
        }
        let addr = usize::try_from(addr).map_err(|_| EFAULT)?;
        UserSlice::new(addr, size_of::<T>()).writer().write(v)
    }

    /// The length of the user's response buffer.
    pub fn out_len(&self) -> usize {
        // SAFETY: `raw` is valid (type invariant).
        self.raw.map_or(0, |raw| unsafe { raw.as_ref().outlen })
    }

    /// The length of the user's command data.
    pub fn in_len(&self) -> usize {
        // SAFETY: `raw` is valid (type invariant).
        self.raw.map_or(0, |raw| unsafe { raw.as_ref().inlen })
    }

    /// The user context of the request, for the abstractions.
    pub(crate) fn ucontext_raw(&self) -> Option<NonNull<bindings::ib_ucontext>> {
        let raw = self.raw?;
        // SAFETY: `raw` is embedded in a uverbs attribute bundle (type invariant).
        NonNull::new(unsafe { bindings::udata_to_ucontext(raw.as_ptr()) })
    }
}
