// SPDX-License-Identifier: GPL-2.0

//! Memory windows, types 1 and 2B: remote access to part of an MR, bound by a verb (type 1)
//! or a work request (type 2B, binding is part of the data path). Keys come from the upper
//! half of the index space, as rxe makes them.

use crate::{
    bindings as b,
    device::RrxeDev,
    ext::{rdma::device::Device, xarray::IdTable},
};
use kernel::{prelude::*, sync::Arc};

const MIN_INDEX: u32 = (1 << 19) + 1;
const MAX_INDEX: u32 = (1 << 20) - 1;

/// What the data path finds by rkey.
pub(crate) struct MwShared {
    /// `IB_MW_TYPE_1` or `IB_MW_TYPE_2`.
    _mw_type: u32,
}

/// The MWs of a device by index.
pub(crate) type MwTable = IdTable<MwShared>;

/// A memory window (the driver data of an `ib_mw`).
pub(crate) struct Mw {
    index: u32,
    table: Arc<MwTable>,
}

impl Drop for Mw {
    fn drop(&mut self) {
        self.table.remove(self.index);
    }
}

impl Mw {
    /// Allocates a window; returns it and its rkey.
    pub(crate) fn new(dev: &Device<RrxeDev>, mw_type: u32) -> Result<(Self, u32)> {
        if mw_type != b::ib_mw_type_IB_MW_TYPE_1 && mw_type != b::ib_mw_type_IB_MW_TYPE_2 {
            return Err(EINVAL);
        }
        let table = dev.data().mws().clone();
        let index = table.reserve(MIN_INDEX, MAX_INDEX)?;
        match Arc::new(MwShared { _mw_type: mw_type }, GFP_KERNEL) {
            Ok(shared) => table.fill(index, shared),
            Err(e) => {
                table.unreserve(index);
                return Err(e.into());
            }
        }
        let rkey = index << 8 | u32::from(dev.data().keys().next());
        Ok((Self { index, table }, rkey))
    }
}
