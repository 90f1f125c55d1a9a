// SPDX-License-Identifier: GPL-2.0

//! Mapping [`SharedMem`] into user contexts with the RDMA core's mmap entries
//! (`rdma_user_mmap_entry`): the driver inserts an entry and hands its offset to
//! userspace, which maps it on the verbs command fd.

use super::{shared::SharedMem, udata::Udata};
use crate::bindings;
use core::ptr::{addr_of_mut, NonNull};
use kernel::{ffi, prelude::*, sync::Arc, types::Opaque};

/// The entry the core keeps: its `rdma_user_mmap_entry` and the memory it maps.
#[repr(C)]
struct Entry {
    rdma: Opaque<bindings::rdma_user_mmap_entry>,
    mem: Arc<SharedMem>,
}

/// A driver's handle on an inserted mmap entry; removing it (on drop) stops new mappings.
/// The memory lives on while the core holds the entry and while it is mapped.
pub struct MmapEntry {
    entry: NonNull<Entry>,
    offset: u64,
}

// SAFETY: The entry is owned by the core; the handle only removes it.
unsafe impl Send for MmapEntry {}
// SAFETY: No method mutates through a shared reference.
unsafe impl Sync for MmapEntry {}

impl MmapEntry {
    /// Makes `mem` mappable in the user context of the request `udata`.
    pub fn insert(udata: &Udata<'_>, mem: Arc<SharedMem>) -> Result<Self> {
        // Before any mapping can exist.
        mem.expose();
        let uctx = udata.ucontext_raw().ok_or(EINVAL)?;
        let size = mem.size();
        let entry = KBox::new(
            Entry {
                rdma: Opaque::new(Default::default()),
                mem,
            },
            GFP_KERNEL,
        )?;
        let entry = KBox::into_raw(entry);
        // SAFETY: `entry` is a valid, zeroed entry; on success the core owns it until
        // `mmap_free`.
        let ret = unsafe {
            bindings::rdma_user_mmap_entry_insert(uctx.as_ptr(), (*entry).rdma.get(), size)
        };
        if let Err(e) = kernel::error::to_result(ret) {
            // SAFETY: Not inserted: still ours.
            drop(unsafe { KBox::from_raw(entry) });
            return Err(e);
        }
        // SAFETY: Inserted: `start_pgoff` is set and stays.
        let pgoff = unsafe { (*(*entry).rdma.get()).start_pgoff } as u64;
        let offset = pgoff << bindings::PAGE_SHIFT;
        Ok(Self {
            // SAFETY: From `KBox::into_raw`.
            entry: unsafe { NonNull::new_unchecked(entry) },
            offset,
        })
    }

    /// The offset userspace passes to `mmap`.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Maps the entry `vma` asks for (the `mmap` device operation).
    ///
    /// # Safety
    ///
    /// `uctx` and `vma` must be the valid arguments of an `mmap` device operation, for a
    /// context whose entries were all inserted by [`MmapEntry::insert`].
    pub(crate) unsafe fn mmap(
        uctx: *mut bindings::ib_ucontext,
        vma: *mut bindings::vm_area_struct,
    ) -> ffi::c_int {
        // SAFETY: Valid arguments (caller's promise); returns a referenced entry or null.
        let rdma = unsafe { bindings::rdma_user_mmap_entry_get(uctx, vma) };
        if rdma.is_null() {
            return -(bindings::EINVAL as ffi::c_int);
        }
        let entry = rdma.cast::<Entry>();
        // SAFETY: Every entry of the context is an `Entry` (caller's promise), alive while
        // referenced; `rdma_user_mmap_entry_get` checked the size against the entry's.
        let ret = unsafe { bindings::remap_vmalloc_range(vma, (*entry).mem.as_ptr().cast(), 0) };
        // SAFETY: Drops the reference taken above.
        unsafe { bindings::rdma_user_mmap_entry_put(rdma) };
        ret
    }

    /// Frees an entry (the `mmap_free` device operation).
    ///
    /// # Safety
    ///
    /// `rdma` must be an entry inserted by [`MmapEntry::insert`] whose last reference is gone.
    pub(crate) unsafe fn free(rdma: *mut bindings::rdma_user_mmap_entry) {
        // SAFETY: Allocated by `KBox` in `insert`; the core is done with it.
        drop(unsafe { KBox::from_raw(rdma.cast::<Entry>()) });
    }
}

impl Drop for MmapEntry {
    fn drop(&mut self) {
        // SAFETY: Inserted and not yet removed; the core frees it via `free` once unreferenced.
        unsafe {
            bindings::rdma_user_mmap_entry_remove(addr_of_mut!((*self.entry.as_ptr()).rdma).cast())
        };
    }
}
