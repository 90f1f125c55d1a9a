// SPDX-License-Identifier: GPL-2.0

//! Address handles. Userspace UD sends name their AH by number (`ah_num`, returned at
//! creation), which the send path looks up.

use crate::{
    device::RrxeDev,
    ext::{
        rdma::{
            ah::{AhAttrs, RoceAv},
            device::Device,
            mr::PdId,
            rxe_abi::CreateAhResp,
            types::AhAttrType,
            udata::Udata,
        },
        xarray::IdTable,
    },
    params,
};
use kernel::{prelude::*, sync::Arc};

/// What the send path finds by AH number.
pub(crate) struct AhShared {
    attr: AhAttrs,
    /// The AH's PD: only QPs of the same PD may send with it.
    pd: PdId,
}

impl AhShared {
    /// The RoCE addressing, if the vector had a source GID.
    pub(crate) fn roce(&self) -> Option<RoceAv> {
        self.attr.roce()
    }

    /// The AH's PD.
    pub(crate) fn pd(&self) -> PdId {
        self.pd
    }
}

/// The AHs of a device by number.
pub(crate) type AhTable = IdTable<AhShared>;

/// An address handle (the driver data of an `ib_ah`).
pub(crate) struct Ah {
    shared: Arc<AhShared>,
    /// The AH's number and table; none for AHs of kernel consumers created where they
    /// cannot sleep (kernel requests carry their address, not a number).
    entry: Option<(u32, Arc<AhTable>)>,
}

impl Drop for Ah {
    fn drop(&mut self) {
        if let Some((num, table)) = self.entry.as_ref() {
            table.remove(*num);
        }
    }
}

/// Checks an address vector: RoCE, port 1, a GID index in the table.
pub(crate) fn check_av(attr: &AhAttrs) -> Result {
    if attr.port_num() != 1
        || attr.ah_type() != AhAttrType::Roce.raw()
        || attr.sgid_index() >= params::GID_TBL_LEN
    {
        return Err(EINVAL);
    }
    Ok(())
}

impl Ah {
    /// Creates an AH; for userspace, reports its number when the provider asks for it.
    pub(crate) fn new(
        dev: &Device<RrxeDev>,
        pd: PdId,
        attr: AhAttrs,
        sleepable: bool,
        udata: &mut Udata<'_>,
    ) -> Result<Self> {
        check_av(&attr)?;
        if !sleepable {
            // Possibly with interrupts disabled: no number (the table's lock is a BH lock).
            if udata.is_user() {
                return Err(EINVAL);
            }
            let shared = Arc::new(AhShared { attr, pd }, GFP_ATOMIC)?;
            return Ok(Self {
                shared,
                entry: None,
            });
        }
        let table = dev.data().ahs().clone();
        let num = table.reserve(params::MIN_AH_NUM, params::MAX_AH_NUM)?;
        let shared = match Arc::new(AhShared { attr, pd }, GFP_KERNEL) {
            Ok(shared) => shared,
            Err(e) => {
                table.unreserve(num);
                return Err(e.into());
            }
        };
        table.fill(num, shared.clone());
        let ah = Self {
            shared,
            entry: Some((num, table)),
        };
        // Old providers pass no response buffer and resolve the address themselves.
        if udata.out_len() >= core::mem::size_of::<CreateAhResp>() {
            udata.write_response(&CreateAhResp {
                ah_num: num,
                reserved: 0,
            })?;
        }
        Ok(ah)
    }

    /// The RoCE addressing.
    pub(crate) fn roce(&self) -> Option<RoceAv> {
        self.shared.roce()
    }

    /// The address vector.
    pub(crate) fn attr(&self) -> AhAttrs {
        AhAttrs::new(&self.shared.attr.get())
    }
}
