/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for rrxe, mem area: memory regions (see rrxe_helpers.h for the conventions).
 */
#ifndef RRXE_HELPERS_MEM_H
#define RRXE_HELPERS_MEM_H

#include <linux/types.h>

struct ib_umem;
struct page;

/* The number of pages a umem pins, and the offset of its first byte in the first. */
size_t rrxe_helper_umem_num_pages(struct ib_umem *umem);
unsigned long rrxe_helper_umem_offset(struct ib_umem *umem);
/* Stores the umem's pages (at most max) in pages; returns how many, or -E2BIG. */
long rrxe_helper_umem_pages(struct ib_umem *umem, struct page **pages, size_t max);
/* Takes a reference on the umem's ib_device, so that a release deferred past the device's
 * deallocation still finds it; umem_release releases the umem and drops it. */
void rrxe_helper_umem_hold_dev(struct ib_umem *umem);
void rrxe_helper_umem_release(struct ib_umem *umem);
/* Whether the umem's pages were pinned for writing (its access flags allow writes). */
bool rrxe_helper_umem_writable(struct ib_umem *umem);
/* Copies len bytes between buf and page at off (off + len <= PAGE_SIZE). Any context. */
void rrxe_helper_page_copy(struct page *page, size_t off, void *buf, size_t len, bool to_page);
void *rrxe_helper_kmap_local_page(struct page *page);
void rrxe_helper_kunmap_local(const void *addr);
/* Copies len bytes between buf and the kernel virtual address addr. */
void rrxe_helper_kva_copy(u64 addr, void *buf, size_t len, bool to_mem);

#endif
