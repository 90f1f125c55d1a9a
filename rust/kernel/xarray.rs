// SPDX-License-Identifier: GPL-2.0

//! A table of reference-counted objects by 32-bit id, allocated cyclically (or from a
//! random start) in a range:
//! an xarray (`XA_FLAGS_ALLOC`, BH-safe lock, so that the receive path can use it) of
//! `Arc<T>`.

use crate::bindings;
use core::{cell::UnsafeCell, marker::PhantomData};
use kernel::{
    ffi,
    prelude::*,
    sync::{Arc, ArcBorrow},
    types::Opaque,
};

/// Objects of type `T` by id.
pub struct IdTable<T: Send + Sync> {
    xa: Opaque<bindings::xarray>,
    /// The cyclic allocation cursor; protected by the xarray's lock.
    next: UnsafeCell<u32>,
    _t: PhantomData<Arc<T>>,
}

// SAFETY: The xarray is internally locked; entries are `Arc<T>` with `T: Send + Sync`, and
// `next` is only touched under the xarray's lock.
unsafe impl<T: Send + Sync> Send for IdTable<T> {}
// SAFETY: See `Send`.
unsafe impl<T: Send + Sync> Sync for IdTable<T> {}

impl<T: Send + Sync> IdTable<T> {
    /// An empty table.
    pub fn new() -> Result<Arc<Self>> {
        let this = Arc::new(
            Self {
                xa: Opaque::uninit(),
                next: UnsafeCell::new(0),
                _t: PhantomData,
            },
            GFP_KERNEL,
        )?;
        // SAFETY: `xa` is uninitialised, in the `Arc`'s allocation, which never moves, and
        // not yet shared.
        unsafe { bindings::xa_init_alloc_bh(this.xa.get()) };
        Ok(this)
    }

    /// Reserves a free id in `min..=max` (cyclically) for [`IdTable::fill`]; lookups do
    /// not find it meanwhile. `ENOSPC` if the range is full.
    pub fn reserve(&self, min: u32, max: u32) -> Result<u32> {
        // SAFETY: `next` is only touched by the xarray code, under the xarray's lock.
        unsafe { self.alloc(min, max, self.next.get()) }
    }

    /// Reserves a free id in `min..=max` for [`IdTable::fill`], like [`IdTable::reserve`]
    /// but unpredictably: the first free id from a random one on (wrapping to `min`). The
    /// table's cyclic cursor is neither used nor moved.
    pub fn reserve_random(&self, min: u32, max: u32) -> Result<u32> {
        if min > max {
            return Err(EINVAL);
        }
        // SAFETY: `get_random_u32` has no preconditions and may be called in any context.
        let r = unsafe { bindings::get_random_u32() };
        let span = u64::from(max - min) + 1;
        let mut next = min + (u64::from(r) % span) as u32;
        // SAFETY: The cursor is a local variable, valid for the call and not shared.
        unsafe { self.alloc(min, max, &mut next) }
    }

    /// Reserves the first free id in `min..=max` from `*next` on, wrapping, and moves
    /// `*next` past it.
    ///
    /// # Safety
    ///
    /// `next` is valid for reads and writes, and nothing else accesses it during the call.
    unsafe fn alloc(&self, min: u32, max: u32, next: *mut u32) -> Result<u32> {
        let mut id = 0u32;
        // SAFETY: The xarray is initialised and allocating (`XA_FLAGS_ALLOC`); a null
        // entry reserves the id; `next` is valid by the caller's guarantee.
        let ret = unsafe {
            bindings::xa_alloc_cyclic_bh(
                self.xa.get(),
                &mut id,
                core::ptr::null_mut(),
                min,
                max,
                next,
            )
        };
        if ret < 0 {
            return Err(Error::from_errno(if ret == -(bindings::EBUSY as i32) {
                -(bindings::ENOSPC as i32)
            } else {
                ret
            }));
        }
        Ok(id)
    }

    /// Stores `item` under the reserved `id`.
    pub fn fill(&self, id: u32, item: Arc<T>) {
        let entry = Arc::into_raw(item);
        // SAFETY: The id is reserved, so storing needs no allocation and cannot fail; the
        // table owns the reference from now on.
        unsafe {
            bindings::xa_store_reserved_bh(self.xa.get(), id as usize, entry.cast_mut().cast())
        };
    }

    /// Releases a reserved `id` that will not be filled.
    pub fn unreserve(&self, id: u32) {
        // SAFETY: Erasing a reserved (null) entry frees the id; nothing is owned.
        unsafe { bindings::xa_erase_bh(self.xa.get(), id as usize) };
    }

    /// The object with `id`, if present (a reserved id finds nothing). Any context.
    pub fn get(&self, id: u32) -> Option<Arc<T>> {
        // SAFETY: The xarray is initialised. Under its lock no entry can be removed, so the
        // table's reference keeps the object alive while we take our own.
        unsafe {
            bindings::xa_lock_bh(self.xa.get());
            let p = bindings::xa_load(self.xa.get(), id as usize);
            let item =
                (!p.is_null()).then(|| Arc::from(ArcBorrow::from_raw(p.cast::<T>().cast_const())));
            bindings::xa_unlock_bh(self.xa.get());
            item
        }
    }

    /// Removes and returns the object with `id`.
    pub fn remove(&self, id: u32) -> Option<Arc<T>> {
        // SAFETY: The xarray is initialised; the helper takes its lock.
        let p = unsafe { bindings::xa_erase_bh(self.xa.get(), id as usize) };
        // SAFETY: The table's reference on the removed entry is now ours.
        (!p.is_null()).then(|| unsafe { Arc::from_raw(p.cast::<T>()) })
    }
}

impl<T: Send + Sync> Drop for IdTable<T> {
    fn drop(&mut self) {
        let mut index: ffi::c_ulong = 0;
        loop {
            // SAFETY: The xarray is initialised and ours alone now.
            let p = unsafe { bindings::xa_find_present(self.xa.get(), &mut index) };
            if p.is_null() {
                break;
            }
            // SAFETY: As in `remove`.
            unsafe {
                bindings::xa_erase_bh(self.xa.get(), index);
                drop(Arc::from_raw(p.cast::<T>()));
            }
        }
        // SAFETY: Empty now; frees the xarray's nodes.
        unsafe { bindings::xa_destroy(self.xa.get()) };
    }
}
