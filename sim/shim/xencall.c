// SPDX-License-Identifier: GPL-2.0
/*
 * libxencall.so.1 on xensim. Hypercall buffers are plain page-aligned
 * memory; hypercalls the simulator does not model fail with ENOSYS, as an
 * unknown hypercall does on Xen. One symbol Xen's library lacks,
 * xensim_guest_rdtsc(): the RDTSC of the simulated guest the process runs in.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <xencall.h>
#include <xen/xen.h>
#include <xen/hvm/hvm_op.h>

#include "xsim-client.h"
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
	/* privcmd's buffers are allocated at the mmap: no faults on first use */
	void *p = mmap(NULL, nr_pages * XSIM_PAGE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

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

/* ---- xensim_guest_rdtsc: what RDTSC returns in the simulated guest ---- */

/* One vCPU's clock as XSIM_OP_GTSC gives it; @until 0: not fetched yet. */
struct gclock {
	uint64_t ratio, s0, until;
	int64_t off;
	int32_t drift_ppm;
	unsigned int frac;
};

static pthread_mutex_t gconn_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xsim_conn gconn = { .fd = -1 };
static pid_t gconn_pid;		/* the process that opened gconn */
static bool gconn_failed;
/* per thread: no lock on the read path */
static __thread struct gclock gcache[XSIM_MAX_VCPUS];

static uint64_t host_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
#endif
}

/* The daemon's connection of this process (a forked child opens its own). */
static struct xsim_conn *gtsc_conn(void)
{
	struct xsim_conn *c = NULL;

	pthread_mutex_lock(&gconn_lock);
	if (gconn_pid != getpid() && !gconn_failed) {
		if (gconn_pid)
			xsim_conn_close(&gconn);
		gconn_pid = 0;
		if (xsim_conn_open(&gconn, XSIM_KIND_CALL))
			gconn_failed = true;	/* no daemon: do not ask per read */
		else
			gconn_pid = getpid();
	}
	if (gconn_pid == getpid())
		c = &gconn;
	pthread_mutex_unlock(&gconn_lock);
	return c;
}

/* vCPU @vcpu's clock at host TSC @at, valid until the next offset change. */
static void gtsc_fetch(unsigned int vcpu, uint64_t at, struct gclock *g)
{
	struct xsim_conn *c = gtsc_conn();
	struct xsim_msg m = { .op = XSIM_OP_GTSC };

	if (c) {
		m.a[0] = c->domid;
		m.a[1] = vcpu;
		m.a[2] = at;
	}
	if (!c || xsim_call(c, &m, NULL, 0, NULL, 0) < 0) {
		/* keep what we had; never fetched: the host TSC (a PV guest's) */
		if (!g->until)
			*g = (struct gclock){ .ratio = 1 };
		g->until = UINT64_MAX;
		return;
	}
	*g = (struct gclock){ .ratio = m.a[0], .frac = (unsigned int)m.a[1],
			      .s0 = m.a[2], .drift_ppm = (int32_t)(int64_t)m.a[3],
			      .off = (int64_t)m.a[4], .until = m.a[5] };
}

/* xsim_host_gtsc() of the daemon, from the cached parameters. */
static uint64_t gtsc_at(const struct gclock *g, uint64_t h)
{
	uint64_t s = (uint64_t)(((unsigned __int128)h * g->ratio) >> g->frac);
	int64_t off = g->off;

	if (g->drift_ppm) {
		__int128 el = (int64_t)(s - g->s0);

		off += (int64_t)(el * g->drift_ppm / 1000000);
	}
	return s + (uint64_t)off;
}

/**
 * xensim_guest_rdtsc - RDTSC in the simulated guest: $XENSIM_DOMID's TSC on
 * the vCPU of the CPU the calling thread runs on (the one it is pinned to,
 * as for markers and HVMOP_xentrace; a CPU the guest lacks reads vCPU 0),
 * ((host · ratio) >> frac) + offset + drift, as the guest's trace stamps.
 * Not in Xen's libxencall: tsync's ptp agent finds it with dlsym().
 *
 * One daemon round trip per vCPU and thread, and again after each offset
 * change; otherwise a local computation: a round trip per read is what ptp
 * would measure. Without a daemon: this machine's TSC.
 *
 * Returns the guest TSC now.
 */
uint64_t xensim_guest_rdtsc(void);

uint64_t xensim_guest_rdtsc(void)
{
	int cpu = sched_getcpu();
	unsigned int v = cpu > 0 && cpu < (int)XSIM_MAX_VCPUS ? (unsigned int)cpu : 0;
	struct gclock *g = &gcache[v];
	uint64_t h = host_tsc();

	/* a change can pass during the round trip: then fetch again */
	for (int i = 0; i < 4 && h >= g->until; i++) {
		gtsc_fetch(v, h, g);
		h = host_tsc();		/* the round trip is not the caller's read */
	}
	return gtsc_at(g, h);
}
