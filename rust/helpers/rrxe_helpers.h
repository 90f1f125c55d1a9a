/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for rrxe: out-of-line wrappers for static inline functions and
 * macros that bindgen cannot bind. Rust calls `rrxe_helper_NAME` as `NAME`
 * (Kbuild renames them with #[link_name]).
 */
#ifndef RRXE_HELPERS_H
#define RRXE_HELPERS_H

#include <linux/types.h>

/* Layout probes: C's view of the structures Rust shares with the core. */
size_t rrxe_helper_sizeof_ib_device(void);
size_t rrxe_helper_sizeof_ib_device_ops(void);
size_t rrxe_helper_sizeof_ib_qp_attr(void);
size_t rrxe_helper_sizeof_ib_ucontext(void);
size_t rrxe_helper_offsetof_ib_device_name(void);

#endif /* RRXE_HELPERS_H */
