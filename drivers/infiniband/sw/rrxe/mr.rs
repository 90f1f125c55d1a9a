// SPDX-License-Identifier: GPL-2.0

//! Memory regions: user memory pinned for the device, and the DMA MR of kernel consumers.
//! Keys are the MR's index shifted left by 8 with an 8-bit key, as rxe makes them.

use crate::{
    bindings as b,
    device::RrxeDev,
    ext::{
        error::eopnotsupp,
        rdma::{device::Device, mr::Umem},
        xarray::IdTable,
    },
};
use core::sync::atomic::{AtomicU8, Ordering};
use kernel::{prelude::*, sync::Arc};

/// MR indices: the lower half of the 20-bit index space (memory windows take the upper).
const MIN_INDEX: u32 = 1;
const MAX_INDEX: u32 = (1 << 19) - 1;

/// What the data path finds by key.
pub(crate) struct MrShared {
    /// Access rights (`IB_ACCESS_*`).
    _access: u32,
    /// The I/O virtual address of the first byte and the length.
    _iova: u64,
    _length: u64,
    /// The pinned user memory; none for the DMA MR (all kernel memory).
    _umem: Option<Umem>,
}

/// The MRs of a device by index.
pub(crate) type MrTable = IdTable<MrShared>;

/// A memory region (the driver data of an `ib_mr`).
pub(crate) struct Mr {
    index: u32,
    table: Arc<MrTable>,
}

impl Drop for Mr {
    fn drop(&mut self) {
        self.table.remove(self.index);
    }
}

/// Hands out the 8-bit key parts, so that a reused index gets a new key.
pub(crate) struct KeyGen(AtomicU8);

impl KeyGen {
    /// A new generator.
    pub(crate) const fn new() -> Self {
        Self(AtomicU8::new(0))
    }

    /// The next key part.
    pub(crate) fn next(&self) -> u8 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}

impl Mr {
    fn add(dev: &Device<RrxeDev>, shared: MrShared) -> Result<(Self, u32, u32)> {
        let table = dev.data().mrs().clone();
        let index = table.reserve(MIN_INDEX, MAX_INDEX)?;
        match Arc::new(shared, GFP_KERNEL) {
            Ok(shared) => table.fill(index, shared),
            Err(e) => {
                table.unreserve(index);
                return Err(e.into());
            }
        }
        let key = index << 8 | u32::from(dev.data().keys().next());
        Ok((Self { index, table }, key, key))
    }

    /// Registers user memory.
    pub(crate) fn new_user(
        dev: &Device<RrxeDev>,
        start: u64,
        length: u64,
        iova: u64,
        access: u32,
    ) -> Result<(Self, u32, u32)> {
        if access & b::ib_access_flags_IB_ACCESS_ON_DEMAND != 0 {
            return Err(eopnotsupp());
        }
        let umem = Umem::get(dev, start, length, access)?;
        Self::add(
            dev,
            MrShared {
                _access: access,
                _iova: iova,
                _length: length,
                _umem: Some(umem),
            },
        )
    }

    /// The DMA MR.
    pub(crate) fn new_dma(dev: &Device<RrxeDev>, access: u32) -> Result<(Self, u32, u32)> {
        Self::add(
            dev,
            MrShared {
                _access: access,
                _iova: 0,
                _length: u64::MAX,
                _umem: None,
            },
        )
    }
}
