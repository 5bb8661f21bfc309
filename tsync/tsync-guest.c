// SPDX-License-Identifier: GPL-2.0
/*
 * The guest's side of protocol xen: numbered ftrace markers around a
 * trapping marker, pinned to each vCPU in turn. cpuid with a reserved leaf
 * traps in every HVM/PVH guest and needs no privilege; HVMOP_xentrace needs
 * root and a privcmd that lets domU hypercalls through, which current
 * kernels refuse by default (xen_privcmd.unrestricted=1 enables it).
 *
 * A kernel stamps a marker in the buffer of the CPU its writer runs on. A
 * simulated kernel (xensim) cannot tell who wrote to its trace_marker FIFO,
 * so it also offers per_cpu/cpuN/trace_marker FIFOs, which no real tracefs
 * has: when they are there, the rounds pinned to CPU N write to that one.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xencall.h>
#include <xen/xen.h>
#include <xen/hvm/hvm_op.h>

#include "tsync-internal.h"

#define PREFIX	"tcx-tsync "

struct tsync_guest {
	int			fd;
	int			cpu_fd;		/* the pinned CPU's marker, or fd */
	char			*sim_dir;	/* has per_cpu/cpuN/trace_marker */
	FILE			*log;
	xencall_handle		*xc;
	xen_hvm_xentrace_t	*buf;
	bool			hvmop;		/* still worth trying */
	bool			hvmop_ok;	/* worked at least once */
	volatile uint8_t	*pv_pages;	/* page fault markers, or NULL */
	uint32_t		seq;
};

int tsync_marker_text(char *buf, size_t len, uint32_t seq, bool before)
{
	return snprintf(buf, len, PREFIX "%u %c\n", seq, before ? 'a' : 'b');
}

int tsync_marker_parse(const char *text, size_t len, uint32_t *seq, bool *before)
{
	size_t n = sizeof(PREFIX) - 1, i;
	uint64_t v = 0;

	if (len < n + 3 || memcmp(text, PREFIX, n))
		return 0;
	for (i = n; i < len && text[i] >= '0' && text[i] <= '9'; i++) {
		v = v * 10 + (uint64_t)(text[i] - '0');
		if (v > UINT32_MAX)
			return 0;
	}
	if (i == n || i + 2 > len || text[i] != ' ' || (text[i + 1] != 'a' && text[i + 1] != 'b'))
		return 0;
	if (i + 2 < len && text[i + 2] != '\n' && text[i + 2] != '\0')
		return 0;
	*seq = (uint32_t)v;
	*before = text[i + 1] == 'a';
	return 1;
}

void tsync_cpuid_marker(uint32_t seq)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t a = TSYNC_CPUID_LEAF, b, c = seq, d;

	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d) : : "memory");
#else
	(void)seq;
#endif
}

/*
 * The tracing directory of @marker_path (".../trace_marker") if it is a
 * simulated kernel's, whose per_cpu/cpu0/trace_marker is a FIFO; else NULL.
 */
static char *sim_markers(const char *marker_path)
{
	const char *slash = strrchr(marker_path, '/');
	char *dir, *p;
	struct stat st;
	bool fifo;

	if (!slash || strcmp(slash + 1, "trace_marker"))
		return NULL;
	dir = strndup(marker_path, (size_t)(slash - marker_path));
	if (!dir || asprintf(&p, "%s/per_cpu/cpu0/trace_marker", dir) < 0) {
		free(dir);
		return NULL;
	}
	fifo = !stat(p, &st) && S_ISFIFO(st.st_mode);
	free(p);
	if (!fifo) {
		free(dir);
		return NULL;
	}
	return dir;
}

/* A simulated kernel: the marker of @cpu, else the shared one. */
static int cpu_marker(const struct tsync_guest *g, int cpu)
{
	char *p;
	int fd;

	if (!g->sim_dir || asprintf(&p, "%s/per_cpu/cpu%d/trace_marker", g->sim_dir, cpu) < 0)
		return g->fd;
	/* O_NONBLOCK: a FIFO without its reader fails rather than blocks */
	fd = open(p, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	free(p);
	if (fd < 0)
		return g->fd;
	fcntl(fd, F_SETFL, 0);
	return fd;
}

/* What Linux says it runs as under Xen ("PV", "PVH", "HVM"). */
static bool guest_is_pv(void)
{
	char buf[8] = "";
	FILE *f = fopen("/sys/hypervisor/guest_type", "re");

	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return !strcmp(buf, "PV\n") || !strcmp(buf, "PV");
}

/*
 * The pages of the PV markers: read-only, never written, reserved only as
 * they are read (each read of a new page maps the zero page: one fault).
 * At a fixed address, so that the recorder knows them without being told.
 */
static volatile uint8_t *pv_pages(FILE *log)
{
	size_t len = (size_t)TSYNC_PV_FAULT_PAGES * 4096;
	void *p = mmap((void *)(uintptr_t)TSYNC_PV_FAULT_BASE, len, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED || p != (void *)(uintptr_t)TSYNC_PV_FAULT_BASE) {
		if (p != MAP_FAILED)
			munmap(p, len);	/* an old kernel put it elsewhere */
		if (log)
			fprintf(log, "tsync: cannot map the PV marker pages at %#llx: PV rounds "
				"without a trap (offset 0 is then assumed)\n", TSYNC_PV_FAULT_BASE);
		return NULL;
	}
	return p;
}

int tsync_guest_open(struct tsync_guest **out, const struct tsync_guest_opts *o)
{
	struct tsync_guest *g;

	if (!out || !o || !o->marker_path)
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->log = o->log;
	g->seq = o->first_seq ? o->first_seq : 1;
	g->fd = open(o->marker_path, O_WRONLY | O_CLOEXEC);
	if (g->fd < 0) {
		int err = -errno;

		free(g);
		return err;
	}
	g->cpu_fd = g->fd;
	g->sim_dir = sim_markers(o->marker_path);
	if (o->hvmop) {
		g->xc = xencall_open(NULL, XENCALL_OPENFLAG_NON_REENTRANT);
		if (g->xc)
			g->buf = xencall_alloc_buffer(g->xc, sizeof(*g->buf));
		g->hvmop = g->xc && g->buf;
		if (!g->hvmop && g->log)
			fprintf(g->log, "tsync: no libxencall here (%s): cpuid markers only\n",
				strerror(errno));
	}
	if (o->pv_faults > 0 || (o->pv_faults < 0 && guest_is_pv()))
		g->pv_pages = pv_pages(g->log);
	*out = g;
	return 0;
}

static void mark(struct tsync_guest *g, uint32_t seq, bool before)
{
	char buf[48];
	int n = tsync_marker_text(buf, sizeof(buf), seq, before);

	/* a lost marker only loses its round */
	if (write(g->cpu_fd, buf, (size_t)n) < 0)
		return;
}

static void hvmop_round(struct tsync_guest *g, uint32_t seq)
{
	int rc;

	memset(g->buf, 0, sizeof(*g->buf));
	g->buf->event = TSYNC_GUEST_EVENT;
	g->buf->extra_bytes = 4;
	memcpy(g->buf->extra, &seq, 4);
	mark(g, seq, true);
	rc = xencall2(g->xc, __HYPERVISOR_hvm_op, HVMOP_xentrace,
		      (uint64_t)(uintptr_t)g->buf);
	mark(g, seq, false);
	if (!rc) {
		g->hvmop_ok = true;
		return;
	}
	g->hvmop = false;
	if (g->log)
		fprintf(g->log, "tsync: HVMOP_xentrace refused (%s): this kernel's privcmd blocks "
			"domU hypercalls; load it with xen_privcmd.unrestricted=1 to use it "
			"(cpuid markers are used either way)\n", strerror(errno));
}

int tsync_guest_rounds(struct tsync_guest *g, int ncpu, int rounds)
{
	cpu_set_t old, one;
	bool pinned = !sched_getaffinity(0, sizeof(old), &old);
	int done = 0;

	if (!g || ncpu <= 0 || rounds <= 0)
		return -EINVAL;
	for (int c = 0; c < ncpu; c++) {
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		/* markers and trap must share one vCPU: skip a CPU we cannot pin */
		if (sched_setaffinity(0, sizeof(one), &one))
			continue;
		g->cpu_fd = cpu_marker(g, c);
		/* one extra round first: the warm-up the recorder discards */
		for (int r = 0; r <= rounds; r++) {
			uint32_t seq = g->seq++;

			mark(g, seq, true);
			tsync_cpuid_marker(seq);
			/* the first read of the round's page: Xen traces the fault */
			if (g->pv_pages && seq < TSYNC_PV_FAULT_PAGES)
				(void)g->pv_pages[(size_t)seq * 4096];
			mark(g, seq, false);
			if (g->hvmop)
				hvmop_round(g, g->seq++);
			done++;
		}
		if (g->cpu_fd != g->fd)
			close(g->cpu_fd);
		g->cpu_fd = g->fd;
	}
	if (pinned)
		sched_setaffinity(0, sizeof(old), &old);
	return done;
}

uint32_t tsync_guest_next_seq(const struct tsync_guest *g)
{
	return g->seq;
}

bool tsync_guest_hvmop_ok(const struct tsync_guest *g)
{
	return g && g->hvmop_ok;
}

void tsync_guest_close(struct tsync_guest *g)
{
	if (!g)
		return;
	if (g->pv_pages)
		munmap((void *)g->pv_pages, (size_t)TSYNC_PV_FAULT_PAGES * 4096);
	if (g->buf)
		xencall_free_buffer(g->xc, g->buf);
	if (g->xc)
		xencall_close(g->xc);
	if (g->fd >= 0)
		close(g->fd);
	free(g->sim_dir);
	free(g);
}
