// SPDX-License-Identifier: GPL-2.0

//! What a QP's data path checks keys with ([`Keys`]): the device's tables, the QP as the
//! owner of its accesses, and the MRs it found by key last ([`MrCache`]), where an MR is
//! looked for before the device's table.

use crate::{
    device::RrxeDev,
    mr::{MrShared, Owner},
};
use core::cell::Cell;
use kernel::sync::Arc;

/// Whom an access is for and where its key is looked up: a pass's, for its QP (the cache
/// is in the QP's state, under its lock).
#[derive(Clone, Copy)]
pub(crate) struct Keys<'a> {
    /// The device, whose tables hold every MR and window.
    pub(crate) dev: &'a RrxeDev,
    /// The QP, as the owner of the access.
    pub(crate) who: Owner,
    /// The QP's cache, lent to its pass.
    pub(crate) mrs: &'a MrCache,
}

impl<'a> Keys<'a> {
    /// The keys of the QP `who` of `dev`, whose cache is `mrs`.
    pub(crate) fn new(dev: &'a RrxeDev, who: Owner, mrs: &'a MrCache) -> Self {
        Self { dev, who, mrs }
    }
}

/// The MRs a QP found by key last, most recent first: a message's local and remote memory
/// are two, and a QP keeps using them. Only a shortcut to the MR the device's table holds
/// under the key's index: every use checks the key, the state, the PD and the rights under
/// the MR's lock as a lookup's does, and an MR that fails them is looked up in the table
/// again (a stale entry: invalidated, re-keyed or deregistered). An entry keeps the MR's
/// [`MrShared`] allocated but not its memory: deregistration unpins user memory whoever
/// holds the MR ([`crate::mr`]). So an entry may be dropped under a lock, and a QP may
/// keep one after the MR is gone.
#[derive(Default)]
pub(crate) struct MrCache {
    slots: [Cell<Option<Entry>>; 2],
}

/// A cached MR and the key it was found by.
type Entry = (u32, Arc<MrShared>);

impl MrCache {
    /// Takes the MR cached for `key` out of the cache, if any (back with [`Self::keep`]).
    pub(crate) fn take(&self, key: u32) -> Option<Arc<MrShared>> {
        for slot in &self.slots {
            match slot.take() {
                Some((k, mr)) if k == key => return Some(mr),
                other => slot.set(other),
            }
        }
        None
    }

    /// Keeps `mr`, found by `key`, as the most recent entry; the least recent one goes if
    /// both slots are full.
    pub(crate) fn keep(&self, key: u32, mr: Arc<MrShared>) {
        let [first, second] = &self.slots;
        if let Some(older) = first.replace(Some((key, mr))) {
            second.set(Some(older));
        }
    }
}
