/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for rrxe, mem area (see rrxe_helpers.h for the conventions).
 */
#ifndef RRXE_HELPERS_MEM_H
#define RRXE_HELPERS_MEM_H

#include <linux/types.h>

struct ib_umem;

/* Interim memory access for the data path (copies through the umem's pages or kernel
 * virtual addresses, and 8-byte atomics on them). */
int rrxe_helper_umem_copy(struct ib_umem *umem, u64 offset, void *buf, size_t len, bool to_umem);
int rrxe_helper_umem_atomic(struct ib_umem *umem, u64 offset, int op, u64 a, u64 b, u64 *orig);
void rrxe_helper_kva_copy(u64 addr, void *buf, size_t len, bool to_mem);
u64 rrxe_helper_kva_atomic(u64 addr, int op, u64 a, u64 b);

#endif
