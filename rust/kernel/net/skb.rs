// SPDX-License-Identifier: GPL-2.0

//! Socket buffers (`struct sk_buff`).

use crate::bindings;
use core::ptr::NonNull;

/// An owned socket buffer; freed when dropped.
pub struct SkBuff(NonNull<bindings::sk_buff>);

// SAFETY: An owned skb may be passed to and freed from any context.
unsafe impl Send for SkBuff {}

impl SkBuff {
    /// Takes ownership of `skb`, if non-null.
    ///
    /// # Safety
    ///
    /// `skb` must be null or a valid skb whose reference the caller gives up.
    pub(crate) unsafe fn from_raw(skb: *mut bindings::sk_buff) -> Option<Self> {
        NonNull::new(skb).map(Self)
    }
}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // SAFETY: We own the reference.
        unsafe { bindings::kfree_skb(self.0.as_ptr()) };
    }
}
