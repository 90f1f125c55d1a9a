// SPDX-License-Identifier: GPL-2.0

//! Protection domains.

/// A protection domain. The RDMA core keeps its context and use count; objects refer to
/// it by their `ib_pd`.
pub(crate) struct Pd;
