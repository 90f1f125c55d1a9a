// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for rrxe, mem area (see mem.h).
 */
#include "mem.h"

#include <linux/device.h>
#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include <linux/string.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

size_t rrxe_helper_umem_num_pages(struct ib_umem *umem)
{
	return ib_umem_num_pages(umem);
}

unsigned long rrxe_helper_umem_offset(struct ib_umem *umem)
{
	return ib_umem_offset(umem);
}

long rrxe_helper_umem_pages(struct ib_umem *umem, struct page **pages, size_t max)
{
	struct sg_page_iter iter;
	size_t n = 0;

	for_each_sgtable_page(&umem->sgt_append.sgt, &iter, 0) {
		if (n == max)
			return -E2BIG;
		pages[n++] = sg_page_iter_page(&iter);
	}
	return n;
}

void rrxe_helper_umem_hold_dev(struct ib_umem *umem)
{
	get_device(&umem->ibdev->dev);
}

void rrxe_helper_umem_release(struct ib_umem *umem)
{
	struct ib_device *ibdev = umem->ibdev;

	ib_umem_release(umem);
	put_device(&ibdev->dev);
}

bool rrxe_helper_umem_writable(struct ib_umem *umem)
{
	return umem->writable;
}

void rrxe_helper_page_copy(struct page *page, size_t off, void *buf, size_t len, bool to_page)
{
	u8 *va = kmap_local_page(page);

	if (to_page) {
		memcpy(va + off, buf, len);
		flush_dcache_page(page);
	} else {
		memcpy(buf, va + off, len);
	}
	kunmap_local(va);
}

void *rrxe_helper_kmap_local_page(struct page *page)
{
	return kmap_local_page(page);
}

void rrxe_helper_kunmap_local(const void *addr)
{
	kunmap_local(addr);
}

void rrxe_helper_kva_copy(u64 addr, void *buf, size_t len, bool to_mem)
{
	if (to_mem)
		memcpy((void *)(uintptr_t)addr, buf, len);
	else
		memcpy(buf, (void *)(uintptr_t)addr, len);
}
