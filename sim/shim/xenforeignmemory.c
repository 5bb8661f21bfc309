// SPDX-License-Identifier: GPL-2.0
/* libxenforeignmemory.so.1 on xensim: frames of the simulated machine. */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <xenforeignmemory.h>

#include "xsim-client.h"
#include "xsim.h"

struct xenforeignmemory_handle {
	struct xsim_conn conn;
};

xenforeignmemory_handle *xenforeignmemory_open(struct xentoollog_logger *logger,
					       unsigned int open_flags)
{
	xenforeignmemory_handle *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	if (xsim_conn_open(&h->conn, XSIM_KIND_FMEM)) {
		free(h);
		return NULL;
	}
	return h;
}

int xenforeignmemory_close(xenforeignmemory_handle *fmem)
{
	if (!fmem)
		return 0;
	xsim_conn_close(&fmem->conn);
	free(fmem);
	return 0;
}

void *xenforeignmemory_map2(xenforeignmemory_handle *fmem, uint32_t dom,
			    void *addr, int prot, int flags, size_t pages,
			    const xen_pfn_t arr[], int err[])
{
	uint64_t *mfns;
	void *p;

	/* A placement hint is not supported: say so rather than ignore it. */
	if (addr || (flags & ~MAP_SHARED)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	mfns = malloc(pages * sizeof(*mfns));
	if (!mfns)
		return NULL;
	for (size_t i = 0; i < pages; i++)
		mfns[i] = arr[i];
	p = xsim_map(&fmem->conn, dom, prot, pages, mfns, err);
	free(mfns);
	return p;
}

void *xenforeignmemory_map(xenforeignmemory_handle *fmem, uint32_t dom,
			   int prot, size_t pages, const xen_pfn_t arr[],
			   int err[])
{
	return xenforeignmemory_map2(fmem, dom, NULL, prot, 0, pages, arr, err);
}

int xenforeignmemory_unmap(xenforeignmemory_handle *fmem, void *addr,
			   size_t pages)
{
	return munmap(addr, pages * XSIM_PAGE_SIZE);
}

int xenforeignmemory_restrict(xenforeignmemory_handle *fmem, domid_t domid)
{
	errno = EOPNOTSUPP;
	return -1;
}

xenforeignmemory_resource_handle *xenforeignmemory_map_resource(
	xenforeignmemory_handle *fmem, domid_t domid, unsigned int type,
	unsigned int id, unsigned long frame, unsigned long nr_frames,
	void **paddr, int prot, int flags)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int xenforeignmemory_unmap_resource(xenforeignmemory_handle *fmem,
				    xenforeignmemory_resource_handle *fres)
{
	return 0;
}

int xenforeignmemory_resource_size(xenforeignmemory_handle *fmem,
				   domid_t domid, unsigned int type,
				   unsigned int id, size_t *size)
{
	errno = EOPNOTSUPP;
	return -1;
}
