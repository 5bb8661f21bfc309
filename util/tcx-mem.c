// SPDX-License-Identifier: GPL-2.0
/*
 * Buffers of whole pages, faulted in ahead. In a paravirtualised dom0 a
 * page's first touch traps to Xen for its page-table update: a fault per
 * 4 KiB page costs dom0 far more than asking the kernel to fill a range
 * at once (MADV_POPULATE_WRITE) or than one 2 MiB page (MADV_HUGEPAGE,
 * where the kernel has it). Kernels without them ignore the advice and
 * the pages fault in as they are touched, as before.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#include "tcx-util.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

#define HUGE_SIZE	(2u << 20)

static size_t page_up(size_t n)
{
	return (n + 4095) & ~(size_t)4095;
}

void *tcx_pages_alloc(size_t len, size_t populate, bool huge)
{
	size_t size = page_up(len), map = size;
	uint8_t *p, *a;

	if (!len) {
		errno = EINVAL;
		return NULL;
	}
	/* a huge page needs 2 MiB alignment: map more, give the ends back */
	if (huge && size >= HUGE_SIZE)
		map = size + HUGE_SIZE;
	else
		huge = false;
	p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	a = p;
	if (huge) {
		a = (uint8_t *)(((uintptr_t)p + HUGE_SIZE - 1) & ~(uintptr_t)(HUGE_SIZE - 1));
		if (a > p)
			munmap(p, a - p);
		if (map - (a - p) > size)
			munmap(a + size, map - (a - p) - size);
		(void)madvise(a, size, MADV_HUGEPAGE);
	}
	tcx_pages_populate(a, 0, populate < size ? populate : size);
	return a;
}

void tcx_pages_populate(void *p, size_t off, size_t len)
{
	size_t start = off & ~(size_t)4095;

	len = page_up(off + len) - start;
	if (len)
		(void)madvise((uint8_t *)p + start, len, MADV_POPULATE_WRITE);
}

void tcx_mem_populate(void *p, size_t len)
{
	uintptr_t start = (uintptr_t)p & ~(uintptr_t)4095;

	if (len)
		(void)madvise((void *)start, page_up((uintptr_t)p + len - start),
			      MADV_POPULATE_WRITE);
}

void tcx_pages_free(void *p, size_t len)
{
	if (p)
		munmap(p, page_up(len));
}
