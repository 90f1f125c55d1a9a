// SPDX-License-Identifier: GPL-2.0

//! What 6.12's `KVec` lacks.

use kernel::prelude::*;

/// Removes the element at `index`, replacing it with the last one; `None` if out of bounds.
pub fn swap_remove<T>(v: &mut KVec<T>, index: usize) -> Option<T> {
    let last = v.len().checked_sub(1)?;
    if index > last {
        return None;
    }
    v.swap(index, last);
    // SAFETY: `last < len`: the element is initialised; the length is shortened right after,
    // so it is read out exactly once.
    let item = unsafe { core::ptr::read(v.as_ptr().add(last)) };
    // SAFETY: Shrinking; the removed element was moved out above.
    unsafe { v.set_len(last) };
    Some(item)
}
