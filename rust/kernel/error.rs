// SPDX-License-Identifier: GPL-2.0

//! Error codes that 6.12's `kernel::error::code` lacks.

use crate::bindings;
use kernel::error::Error;

/// `EOPNOTSUPP`: operation not supported (what userspace sees for an unsupported verb).
pub fn eopnotsupp() -> Error {
    Error::from_errno(-(bindings::EOPNOTSUPP as i32))
}
