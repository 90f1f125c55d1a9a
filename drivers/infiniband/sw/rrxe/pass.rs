// SPDX-License-Identifier: GPL-2.0

//! The context the stages of an engine pass share (the pass itself:
//! [`crate::qp::QpShared::process`]).

use crate::{
    counters::Counter,
    device::RrxeDev,
    eng::Outbox,
    ext::rdma::{device::Device, types::QpState},
    qp::{Inner, QpShared},
    tx::Egress,
};

/// What every stage of a pass works with: the QP, its device, what it sends through, the
/// state under the QP lock, and what to do once the lock is dropped.
pub(crate) struct Pass<'a> {
    pub(crate) qp: &'a QpShared,
    pub(crate) dev: &'a Device<RrxeDev>,
    pub(crate) link: Egress<'a>,
    pub(crate) inner: &'a mut Inner,
    pub(crate) out: Outbox,
}

impl Pass<'_> {
    /// Counts an event on the device.
    pub(crate) fn count(&self, c: Counter) {
        self.dev.data().count(c);
    }

    /// Moves the QP to the error state.
    pub(crate) fn set_error(&mut self) {
        self.inner.set_error(self.qp, &mut self.out);
    }

    /// Whether the QP is in the error state.
    pub(crate) fn in_error(&self) -> bool {
        self.inner.state == QpState::Err
    }
}
