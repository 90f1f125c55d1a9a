// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for rrxe, mem area (see mem.h).
 */
#include "mem.h"

#include <linux/scatterlist.h>
#include <linux/highmem.h>
#include <linux/atomic.h>
#include <rdma/ib_umem.h>

int rrxe_helper_umem_copy(struct ib_umem *umem, u64 offset, void *buf, size_t len, bool to_umem)
{
	struct scatterlist *sgl = umem->sgt_append.sgt.sgl;
	unsigned int nents = umem->sgt_append.sgt.orig_nents;
	size_t done;

	offset += ib_umem_offset(umem);
	if (to_umem)
		done = sg_pcopy_from_buffer(sgl, nents, buf, len, offset);
	else
		done = sg_pcopy_to_buffer(sgl, nents, buf, len, offset);
	return done == len ? 0 : -EFAULT;
}

static u64 rrxe_atomic_at(u64 *p, int op, u64 a, u64 b)
{
	switch (op) {
	case 0: /* compare and swap */
		return atomic64_cmpxchg((atomic64_t *)p, a, b);
	case 1: /* fetch and add */
		return atomic64_fetch_add(a, (atomic64_t *)p);
	default: /* write */
		return atomic64_xchg((atomic64_t *)p, a);
	}
}

int rrxe_helper_umem_atomic(struct ib_umem *umem, u64 offset, int op, u64 a, u64 b, u64 *orig)
{
	struct sg_mapping_iter miter;
	int ret = -EFAULT;

	offset += ib_umem_offset(umem);
	sg_miter_start(&miter, umem->sgt_append.sgt.sgl, umem->sgt_append.sgt.orig_nents,
		       SG_MITER_ATOMIC | SG_MITER_TO_SG | SG_MITER_FROM_SG);
	if (!sg_miter_skip(&miter, offset))
		goto out;
	if (!sg_miter_next(&miter) || miter.length < 8)
		goto out;
	*orig = rrxe_atomic_at(miter.addr, op, a, b);
	ret = 0;
out:
	sg_miter_stop(&miter);
	return ret;
}

void rrxe_helper_kva_copy(u64 addr, void *buf, size_t len, bool to_mem)
{
	if (to_mem)
		memcpy((void *)(uintptr_t)addr, buf, len);
	else
		memcpy(buf, (void *)(uintptr_t)addr, len);
}

u64 rrxe_helper_kva_atomic(u64 addr, int op, u64 a, u64 b)
{
	return rrxe_atomic_at((u64 *)(uintptr_t)addr, op, a, b);
}
