// SPDX-License-Identifier: GPL-2.0-only
/*
 * libxencall.so.1 on xensim. Hypercall buffers are plain page-aligned
 * memory; hypercalls the simulator does not model fail with ENOSYS, as an
 * unknown hypercall does on Xen.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <xencall.h>
#include <xen/xen.h>
#include <xen/hvm/hvm_op.h>

#include "client.h"
#include "xsim.h"

struct xencall_handle {
	struct xsim_conn conn;
};

xencall_handle *xencall_open(struct xentoollog_logger *logger,
			     unsigned open_flags)
{
	xencall_handle *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	if (xsim_conn_open(&h->conn, XSIM_KIND_CALL)) {
		free(h);
		return NULL;
	}
	return h;
}

int xencall_close(xencall_handle *xcall)
{
	if (!xcall)
		return 0;
	xsim_conn_close(&xcall->conn);
	free(xcall);
	return 0;
}

int xencall_fd(xencall_handle *xcall)
{
	return xcall->conn.fd;
}

int xencall_buffers_never_fault(xencall_handle *xcall)
{
	return 1;
}

void *xencall_alloc_buffer_pages(xencall_handle *xcall, size_t nr_pages)
{
	void *p = mmap(NULL, nr_pages * XSIM_PAGE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void xencall_free_buffer_pages(xencall_handle *xcall, void *p, size_t nr_pages)
{
	if (p)
		munmap(p, nr_pages * XSIM_PAGE_SIZE);
}

/* Size header in front of the buffer, so free needs no size. */
void *xencall_alloc_buffer(xencall_handle *xcall, size_t size)
{
	size_t pages = (size + 64 + XSIM_PAGE_SIZE - 1) / XSIM_PAGE_SIZE;
	uint8_t *p = xencall_alloc_buffer_pages(xcall, pages);

	if (!p)
		return NULL;
	memcpy(p, &pages, sizeof(pages));
	return p + 64;
}

void xencall_free_buffer(xencall_handle *xcall, void *p)
{
	size_t pages;

	if (!p)
		return;
	memcpy(&pages, (uint8_t *)p - 64, sizeof(pages));
	xencall_free_buffer_pages(xcall, (uint8_t *)p - 64, pages);
}

/*
 * The CPU the calling thread is pinned to, plus one; 0 if it may run on
 * several. A guest's CPU k is this machine's CPU k: on Xen the hypercall
 * traps on the vCPU the thread runs on, and a pinned thread runs there.
 */
static uint64_t pinned_cpu(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) || CPU_COUNT(&set) != 1)
		return 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			return (uint64_t)c + 1;
	return 0;
}

/*
 * The one hypercall modelled: HVMOP_xentrace, which puts a GUEST record in
 * the hypervisor trace between the VMCALL exit and the VMENTRY. It returns
 * once the caller's vCPU (the one its thread is pinned to), or any vCPU of
 * this domain if it is not pinned, has made it.
 */
static long hypercall(xencall_handle *xcall, unsigned int op, uint64_t a1,
		      uint64_t a2)
{
	struct xsim_msg m = { .op = XSIM_OP_HVM_XENTRACE };

	m.a[0] = pinned_cpu();
	if (op != __HYPERVISOR_hvm_op || a1 != HVMOP_xentrace) {
		errno = ENOSYS;
		return -1;
	}
	if (!a2) {
		errno = EFAULT;
		return -1;
	}
	return xsim_call(&xcall->conn, &m, (const void *)(uintptr_t)a2,
			 sizeof(xen_hvm_xentrace_t), NULL, 0);
}

int xencall0(xencall_handle *xcall, unsigned int op)
{
	return hypercall(xcall, op, 0, 0);
}

int xencall1(xencall_handle *xcall, unsigned int op, uint64_t arg1)
{
	return hypercall(xcall, op, arg1, 0);
}

int xencall2(xencall_handle *xcall, unsigned int op, uint64_t arg1,
	     uint64_t arg2)
{
	return hypercall(xcall, op, arg1, arg2);
}

long xencall2L(xencall_handle *xcall, unsigned int op, uint64_t arg1,
	       uint64_t arg2)
{
	return hypercall(xcall, op, arg1, arg2);
}

int xencall3(xencall_handle *xcall, unsigned int op, uint64_t arg1,
	     uint64_t arg2, uint64_t arg3)
{
	return hypercall(xcall, op, arg1, arg2);
}

int xencall4(xencall_handle *xcall, unsigned int op, uint64_t arg1,
	     uint64_t arg2, uint64_t arg3, uint64_t arg4)
{
	return hypercall(xcall, op, arg1, arg2);
}

int xencall5(xencall_handle *xcall, unsigned int op, uint64_t arg1,
	     uint64_t arg2, uint64_t arg3, uint64_t arg4, uint64_t arg5)
{
	return hypercall(xcall, op, arg1, arg2);
}
