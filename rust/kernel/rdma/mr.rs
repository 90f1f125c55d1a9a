// SPDX-License-Identifier: GPL-2.0

//! Memory regions: the memory the data path reads and writes on behalf of keys.
//!
//! - [`Umem`]: user memory pinned by the core (`struct ib_umem`).
//! - [`UserPages`]: a pinned region with its page list, copied to and from page by page
//!   (`kmap_local_page`) from any context; its release is deferred to process context
//!   when the last user drops it elsewhere.
//! - [`KernelMem`]: the memory of kernel consumers, named by kernel virtual address (the
//!   device uses virtual DMA: the core hands kernel consumers their buffers' virtual
//!   addresses as DMA addresses).
//!
//! C header: [`include/rdma/ib_umem.h`](srctree/include/rdma/ib_umem.h)

use super::device::{Device, DeviceOps};
use crate::{
    bindings,
    ext::{bytes::Bytes, net::page_piece::PagePiece, workqueue::OwnedQueue},
};
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
};
use kernel::{
    alloc::KVVec,
    new_work,
    page::{PAGE_SHIFT, PAGE_SIZE},
    prelude::*,
    sync::Arc,
    workqueue::{Work, WorkItem},
};

/// The identity of a protection domain: the address of its `ib_pd`, which is stable for
/// the PD's lifetime. Only compared, never dereferenced.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PdId(usize);

impl PdId {
    /// The identity of the PD `pd` (a callback's `ib_pd`).
    pub fn from_raw(pd: *const bindings::ib_pd) -> Self {
        Self(pd as usize)
    }
}

/// An 8-byte atomic operation on memory; each returns the value found before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    /// Stores `swap` if the value equals `compare`.
    CmpSwap {
        /// The value expected.
        compare: u64,
        /// The value stored if it is found.
        swap: u64,
    },
    /// Adds (wrapping).
    FetchAdd(u64),
    /// Stores (ATOMIC WRITE).
    Write(u64),
}

impl AtomicOp {
    /// Performs the operation on `target`, fully ordered like the C `atomic64_*` operations
    /// that return a value.
    fn apply(self, target: &AtomicU64) -> u64 {
        match self {
            AtomicOp::CmpSwap { compare, swap } => {
                match target.compare_exchange(compare, swap, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(v) | Err(v) => v,
                }
            }
            AtomicOp::FetchAdd(a) => target.fetch_add(a, Ordering::SeqCst),
            AtomicOp::Write(v) => target.swap(v, Ordering::SeqCst),
        }
    }
}

/// Pinned user memory (`struct ib_umem`), holding a reference on its device; unpinned when
/// dropped, which may sleep.
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
        let p = NonNull::new(p).ok_or(ENOMEM)?;
        // SAFETY: `p` is a valid umem; the reference is dropped in `drop`.
        unsafe { bindings::umem_hold_dev(p.as_ptr()) };
        Ok(Self(p))
    }

    /// Whether the region allows a re-registration with `flags` (`IB_MR_REREG_*`) and the
    /// new `access` (`ib_umem_check_rereg`).
    pub fn check_rereg(&self, flags: u32, access: u32) -> Result {
        // SAFETY: The umem is valid.
        kernel::error::to_result(unsafe {
            bindings::ib_umem_check_rereg(self.0.as_ptr(), flags as i32, access as i32)
        })
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: Owned; the helper releases it, then drops the device reference.
        unsafe { bindings::umem_release(self.0.as_ptr()) };
    }
}

/// A `struct page` pointer of a pinned region.
#[repr(transparent)]
struct PagePtr(NonNull<bindings::page>);

// SAFETY: Pinned pages may be accessed from any context; the pointer is only read.
unsafe impl Send for PagePtr {}
// SAFETY: See `Send`.
unsafe impl Sync for PagePtr {}

/// The pinned region and its pages, in a box that doubles as the work item releasing it.
#[pin_data]
struct Pinned {
    #[pin]
    work: Work<Pinned>,
    /// The pages of `umem`, in order.
    pages: KVVec<PagePtr>,
    /// Offset of the region's first byte in the first page.
    first: usize,
    /// The region's length in bytes.
    len: u64,
    /// The pages were pinned for writing (`umem->writable`, from the access flags): only
    /// then may they be written, else they may be shared copy-on-write.
    writable: bool,
    /// Declared last: dropped (unpinned) after the page list.
    umem: Umem,
}

kernel::impl_has_work! {
    impl HasWork<Pinned> for Pinned { self.work }
}

impl WorkItem for Pinned {
    type Pointer = Pin<KBox<Pinned>>;

    fn run(this: Pin<KBox<Pinned>>) {
        // Process context: unpinning may sleep.
        drop(this);
    }
}

/// A pinned user region with its page list: copies and atomics at byte offsets into the
/// region, from any context (they neither sleep nor allocate).
///
/// Dropping it unpins the memory, which may sleep. Unless [`UserPages::release_in_place`]
/// was called, the drop instead queues the release on the workqueue given at creation,
/// so the last reference may be dropped in any context (softirq, under a spinlock). A
/// device reference held by the [`Umem`] keeps the `ib_device` alive until then; the
/// queue must be drained (destroyed) before the module goes away.
pub struct UserPages {
    /// Always `Some` until dropped.
    pinned: Option<Pin<KBox<Pinned>>>,
    wq: Arc<OwnedQueue>,
    in_place: AtomicBool,
}

/// Why an access to memory failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessError {
    /// Outside the memory.
    Range,
    /// An atomic target is not 8-byte aligned.
    Align,
    /// A write to memory pinned for reading only.
    ReadOnly,
}

impl UserPages {
    /// Collects the pages of `umem` of `len` bytes; `wq` runs a deferred release. Process
    /// context.
    pub fn new(umem: Umem, len: u64, wq: Arc<OwnedQueue>) -> Result<Self> {
        // SAFETY: The umem is valid.
        let (count, first, writable) = unsafe {
            (
                bindings::umem_num_pages(umem.0.as_ptr()),
                bindings::umem_offset(umem.0.as_ptr()) as usize,
                bindings::umem_writable(umem.0.as_ptr()),
            )
        };
        let mut pages = KVVec::<PagePtr>::with_capacity(count, GFP_KERNEL)?;
        // SAFETY: The vector has room for `count` pointers, which the helper writes (at
        // most that many) and we then own.
        let n = unsafe { bindings::umem_pages(umem.0.as_ptr(), pages.as_mut_ptr().cast(), count) };
        let n = usize::try_from(n).map_err(|_| EINVAL)?;
        if n > count {
            return Err(EINVAL);
        }
        // SAFETY: The helper initialised the first `n` elements, all non-null page pointers
        // (`NonNull` and `*mut page` have the same layout).
        unsafe { pages.set_len(n) };
        // The region must fit in its pages.
        let span = (first as u64).checked_add(len).ok_or(EINVAL)?;
        if span > (n as u64) << PAGE_SHIFT {
            return Err(EINVAL);
        }
        let pinned = KBox::pin_init(
            pin_init!(Pinned {
                work <- new_work!("rrxe:umem_release"),
                pages,
                first,
                len,
                writable,
                umem,
            }),
            GFP_KERNEL,
        )?;
        Ok(Self {
            pinned: Some(pinned),
            wq,
            in_place: AtomicBool::new(false),
        })
    }

    /// The pinned umem.
    pub fn umem(&self) -> Option<&Umem> {
        self.pinned.as_ref().map(|p| &p.umem)
    }

    /// Makes the drop release the memory itself instead of deferring it: for an owner that
    /// knows it drops the last reference in process context.
    pub fn release_in_place(&self) {
        self.in_place.store(true, Ordering::Relaxed);
    }

    /// Calls `f(page, offset in the page, range in the buffer)` for each page piece of the
    /// `len` bytes at `offset`, until it fails.
    fn walk(
        &self,
        offset: u64,
        len: usize,
        mut f: impl FnMut(&PagePtr, usize, core::ops::Range<usize>) -> Result<(), AccessError>,
    ) -> Result<(), AccessError> {
        let p = self.pinned.as_ref().ok_or(AccessError::Range)?;
        let end = offset.checked_add(len as u64).ok_or(AccessError::Range)?;
        if end > p.len {
            return Err(AccessError::Range);
        }
        // In bounds of the pages: checked at creation.
        let mut pos = usize::try_from(offset).map_err(|_| AccessError::Range)? + p.first;
        let mut done = 0;
        while done < len {
            let page = p.pages.get(pos >> PAGE_SHIFT).ok_or(AccessError::Range)?;
            let in_page = pos & (PAGE_SIZE - 1);
            let n = (len - done).min(PAGE_SIZE - in_page);
            f(page, in_page, done..done + n)?;
            done += n;
            pos += n;
        }
        Ok(())
    }

    /// Copies `dst.len()` bytes at `offset` into `dst`.
    pub fn read_at(&self, offset: u64, dst: &mut [u8]) -> Result<(), AccessError> {
        let buf = dst.as_mut_ptr();
        self.walk(offset, dst.len(), |page, off, r| {
            // SAFETY: The page is pinned while `self` lives; `off + r.len() <= PAGE_SIZE`;
            // `r` lies in `dst`.
            unsafe {
                bindings::page_copy(
                    page.0.as_ptr(),
                    off,
                    buf.add(r.start).cast(),
                    r.len(),
                    false,
                )
            };
            Ok(())
        })
    }

    /// Whether the pages may be written (see [`AccessError::ReadOnly`]).
    fn check_writable(&self) -> Result<(), AccessError> {
        match &self.pinned {
            Some(p) if p.writable => Ok(()),
            _ => Err(AccessError::ReadOnly),
        }
    }

    /// Copies `src` to `offset`.
    pub fn write_at(&self, offset: u64, src: Bytes<'_>) -> Result<(), AccessError> {
        self.check_writable()?;
        self.walk(offset, src.len(), |page, off, r| {
            let piece = src.get(r).ok_or(AccessError::Range)?;
            // SAFETY: The page is pinned for writing (checked above) while `self` lives;
            // `off + r.len() <= PAGE_SIZE`.
            unsafe { piece.copy_to_page(page.0.as_ptr(), off) }.map_err(|_| AccessError::Range)
        })
    }

    /// Calls `take` with a reference on each page piece of the `len` bytes at `offset`, in
    /// order, until it refuses one (returns `false`); returns whether it took them all. The
    /// pages then stay allocated as long as the pieces live, whether or not the region is
    /// still pinned.
    pub fn pieces_at(
        &self,
        offset: u64,
        len: usize,
        mut take: impl FnMut(PagePiece) -> bool,
    ) -> Result<bool, AccessError> {
        let mut all = true;
        self.walk(offset, len, |page, off, r| {
            if all {
                // SAFETY: The page is pinned while `self` lives.
                all = unsafe { PagePiece::get(page.0, off, r.len()) }.is_some_and(&mut take);
            }
            Ok(())
        })?;
        Ok(all)
    }

    /// Performs `op` on the 8 bytes at `offset` (8-byte aligned in memory); returns the
    /// value found.
    pub fn atomic_at(&self, offset: u64, op: AtomicOp) -> Result<u64, AccessError> {
        self.check_writable()?;
        let p = self.pinned.as_ref().ok_or(AccessError::Range)?;
        if (offset + p.first as u64) % 8 != 0 {
            return Err(AccessError::Align);
        }
        let mut orig = 0;
        // Aligned, so the 8 bytes are in one page.
        self.walk(offset, 8, |page, off, _| {
            // SAFETY: The page is pinned for writing (checked above); the mapping is
            // released below, in this context.
            let va = unsafe { bindings::kmap_local_page(page.0.as_ptr()) };
            // SAFETY: `va + off` is 8-byte aligned and its 8 bytes lie in the mapped page,
            // accessed only atomically here (as C atomics do elsewhere).
            let target = unsafe { AtomicU64::from_ptr(va.cast::<u8>().add(off).cast()) };
            orig = op.apply(target);
            // SAFETY: Mapped above.
            unsafe { bindings::kunmap_local(va) };
            Ok(())
        })?;
        Ok(orig)
    }
}

impl Drop for UserPages {
    fn drop(&mut self) {
        let Some(pinned) = self.pinned.take() else {
            return;
        };
        if self.in_place.load(Ordering::Relaxed) {
            drop(pinned);
        } else {
            self.wq.enqueue(pinned);
        }
    }
}

/// Access to kernel memory by kernel virtual address, for the memory regions of kernel
/// consumers (the DMA MR and fast-registration MRs).
///
/// Only the callbacks of verbs that exist for kernel consumers alone (`get_dma_mr`,
/// `alloc_mr`) hand one out: their addresses come from kernel code (mapped with the
/// virtual-DMA `ib_dma_map_*`) and the driver checks each key against its PD and bounds
/// before use. A remote key to such memory exists only if the kernel consumer granted it
/// (`IB_PD_UNSAFE_GLOBAL_RKEY` for the DMA MR).
#[derive(Clone, Copy, Debug)]
pub struct KernelMem(());

impl KernelMem {
    /// # Safety
    ///
    /// Only for the memory regions of kernel consumers (see the type's documentation).
    pub(super) unsafe fn new() -> Self {
        Self(())
    }

    fn check(addr: u64, len: usize) -> Result<(), AccessError> {
        if len != 0 && (addr == 0 || addr.checked_add(len as u64).is_none()) {
            return Err(AccessError::Range);
        }
        Ok(())
    }

    /// Copies `dst.len()` bytes at `addr` into `dst`.
    pub fn read_at(&self, addr: u64, dst: &mut [u8]) -> Result<(), AccessError> {
        Self::check(addr, dst.len())?;
        // SAFETY: See the type's documentation: the kernel consumer vouches for `addr`.
        unsafe { bindings::kva_copy(addr, dst.as_mut_ptr().cast(), dst.len(), false) };
        Ok(())
    }

    /// Copies `src` to `addr`.
    pub fn write_at(&self, addr: u64, src: Bytes<'_>) -> Result<(), AccessError> {
        Self::check(addr, src.len())?;
        // SAFETY: As in `read_at`.
        unsafe { src.copy_to_kva(addr) }.map_err(|_| AccessError::Range)
    }

    /// Performs `op` on the 8 bytes at `addr` (8-byte aligned); returns the value found.
    pub fn atomic_at(&self, addr: u64, op: AtomicOp) -> Result<u64, AccessError> {
        Self::check(addr, 8)?;
        if addr % 8 != 0 {
            return Err(AccessError::Align);
        }
        // SAFETY: As in `read_at`; aligned, and accessed atomically.
        let target = unsafe { AtomicU64::from_ptr(addr as usize as *mut u64) };
        Ok(op.apply(target))
    }
}

/// A scatterlist to map onto a fast-registration MR (the arguments of `map_mr_sg`).
pub struct SgMap<'a> {
    mr: *mut bindings::ib_mr,
    sg: *mut bindings::scatterlist,
    nents: i32,
    offset: *mut u32,
    set_page: unsafe extern "C" fn(*mut bindings::ib_mr, u64) -> i32,
    _call: core::marker::PhantomData<&'a mut bindings::ib_mr>,
}

/// The result of [`SgMap::map`].
#[derive(Clone, Copy, Debug)]
pub struct SgMapped {
    /// How many scatterlist elements were mapped.
    pub count: i32,
    /// The I/O virtual address of the region's first byte.
    pub iova: u64,
    /// The region's length in bytes.
    pub length: u64,
}

impl SgMap<'_> {
    /// # Safety
    ///
    /// The arguments must be those of a `map_mr_sg` call on `mr`, valid for `'a`, and
    /// `set_page` must be safe to call from `ib_sg_to_pages` on `mr`.
    pub(super) unsafe fn new(
        mr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        nents: i32,
        offset: *mut u32,
        set_page: unsafe extern "C" fn(*mut bindings::ib_mr, u64) -> i32,
    ) -> Self {
        Self {
            mr,
            sg,
            nents,
            offset,
            set_page,
            _call: core::marker::PhantomData,
        }
    }

    /// The page size the consumer chose (`ib_map_mr_sg`'s argument).
    pub fn page_size(&self) -> u32 {
        // SAFETY: Valid for the call; the core set it before calling the driver.
        unsafe { (*self.mr).page_size }
    }

    /// Splits the scatterlist into pages of [`SgMap::page_size`] (`ib_sg_to_pages`), each
    /// handed to the device's `mr_set_page` in order; the mapping stops at the first page
    /// that one refuses.
    pub fn map(self) -> Result<SgMapped> {
        // SAFETY: By the type invariant the arguments are those of the call; the core sets
        // the MR's iova and length.
        let n = unsafe {
            bindings::ib_sg_to_pages(
                self.mr,
                self.sg,
                self.nents,
                self.offset,
                Some(self.set_page),
            )
        };
        if n < 0 {
            return Err(Error::from_errno(n));
        }
        // SAFETY: Valid for the call.
        let (iova, length) = unsafe { ((*self.mr).iova, (*self.mr).length) };
        Ok(SgMapped {
            count: n,
            iova,
            length,
        })
    }
}
