// SPDX-License-Identifier: GPL-2.0
/*
 * A guest's kernel as a directory shaped like tracefs, DIR/dom<ID>/tracing:
 * format files, control files libtracefs writes, and per-CPU trace_pipe_raw
 * FIFOs fed with kernel ring-buffer pages stamped in the guest's TSC (the
 * x86-tsc clock), only while that vCPU runs on some pCPU. trace_marker and
 * trace_marker_raw are FIFOs the daemon reads; a marker is stamped by the
 * next pCPU thread that runs one of the guest's vCPUs. A FIFO knows no
 * writer, so each vCPU also has its own pair, per_cpu/cpuN/trace_marker and
 * per_cpu/cpuN/trace_marker_raw (not in a real tracefs): a marker written
 * there is stamped when vCPU N runs, into its buffer, as the kernel does
 * for a writer running on CPU N.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xsim-internal.h"

#define PAGE		4096u
#define PAGE_HDR	16u		/* u64 timestamp, u64 commit */
#define MISSED_EVENTS	(1ull << 31)	/* commit flag: pages were lost */
#define TS_BITS		27
#define FLUSH_AFTER_MS	50		/* partial pages reach readers this late */

/* Event ids of the simulated guest kernel, as its format files say. */
enum { ID_PRINT = 5, ID_RAW = 19, ID_SWITCH = 316, ID_WAKEUP = 318 };

struct gcpu {
	pthread_mutex_t lock;
	int fd;				/* trace_pipe_raw, O_RDWR|O_NONBLOCK */
	int mfd[2];			/* its trace_marker, trace_marker_raw */
	uint8_t page[PAGE];
	unsigned int len;		/* event bytes after the header */
	bool open, missed;
	uint64_t page_ts, last_ts;	/* guest TSC */
	uint64_t opened_host;		/* host TSC when the page was opened */
	uint64_t events, pages, dropped;
	bool in_task;			/* the guest task (not idle) runs */
};

struct xsim_guest {
	struct xsim_host *h;
	unsigned int dom, nvcpus;
	uint32_t domid;
	char *dir;			/* .../tracing */
	uint64_t ratio;
	unsigned int frac;
	int marker_fd, raw_fd;
	int on;				/* tracing_on, atomically */
	unsigned int enabled;		/* EV_* bits, atomically */
	pthread_mutex_t qlock;
	struct xsim_action q[64];
	unsigned int qhead, qlen;
	uint64_t markers_lost;
	struct gcpu cpu[XSIM_MAX_VCPUS];
};

enum { EV_SWITCH = 1, EV_WAKEUP = 2, EV_PRINT = 4, EV_RAW = 8 };

static const char common_fields[] =
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

static const struct {
	const char *sys, *name;
	int id, bit;
	const char *fields, *fmt;
} events[] = {
	{ "sched", "sched_switch", ID_SWITCH, EV_SWITCH,
	  "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	  "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	  "\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	  "\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	  "\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	  "\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	  "\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n",
	  "\"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s ==> next_comm=%s next_pid=%d next_prio=%d\", "
	  "REC->prev_comm, REC->prev_pid, REC->prev_prio, REC->prev_state ? __print_flags(REC->prev_state, \"|\", { 0x01, \"S\" }, { 0x02, \"D\" }) : \"R\", "
	  "REC->next_comm, REC->next_pid, REC->next_prio" },
	{ "sched", "sched_wakeup", ID_WAKEUP, EV_WAKEUP,
	  "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	  "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	  "\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	  "\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n",
	  "\"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu" },
	{ "ftrace", "print", ID_PRINT, EV_PRINT,
	  "\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;\n",
	  "\"%ps: %s\", (void *)REC->ip, REC->buf" },
	{ "ftrace", "raw_data", ID_RAW, EV_RAW,
	  "\tfield:unsigned int id;\toffset:8;\tsize:4;\tsigned:0;\n"
	  "\tfield:char buf[];\toffset:12;\tsize:0;\tsigned:0;\n",
	  "\"id:%04x %08x\", REC->id, (int)REC->buf[0]" },
};

static const char header_page[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

static const char header_event[] =
	"# compressed entry header\n"
	"\ttype_len    :    5 bits\n"
	"\ttime_delta  :   27 bits\n"
	"\tarray       :   32 bits\n\n"
	"\tpadding     : type == 29\n"
	"\ttime_extend : type == 30\n"
	"\ttime_stamp : type == 31\n"
	"\tdata max type_len  == 28\n";

static const char clocks[] =
	"local global counter uptime perf mono mono_raw boot tai x86-tsc";

int xsim_put_file(const char *dir, const char *name, const char *text)
{
	size_t len = strlen(text);
	char *p;
	ssize_t n;
	int fd;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return -ENOMEM;
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	free(p);
	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EIO;
}

/* Read a small control file; "" if missing. */
static void get_file(const char *dir, const char *name, char *buf, size_t len)
{
	char *p;
	int fd;
	ssize_t n = 0;

	buf[0] = '\0';
	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	free(p);
	if (fd < 0)
		return;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
}

/* mkdir @base/@rel; an existing one will do. Returns 0 or -errno. */
static int mkdirs(const char *base, const char *rel)
{
	char *p;
	int ret = 0;

	if (asprintf(&p, "%s/%s", base, rel) < 0)
		return -ENOMEM;
	if (mkdir(p, 0755) && errno != EEXIST)
		ret = -errno;
	free(p);
	return ret;
}

/* A fresh FIFO @dir/@name, opened. Returns the fd, or -errno. */
static int open_fifo(const char *dir, const char *name)
{
	char *p;
	int fd;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return -ENOMEM;
	unlink(p);
	/* O_RDWR: opening never blocks and a reader never sees EOF */
	if (mkfifo(p, 0666))
		fd = -errno;
	else if ((fd = open(p, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0)
		fd = -errno;
	if (fd >= 0)
		fcntl(fd, F_SETPIPE_SZ, 1 << 20);
	else
		unlink(p);	/* no FIFO nobody reads */
	free(p);
	return fd;
}

/* An optional FIFO: its fd, or -1 without it. */
static int open_fifo_opt(const char *dir, const char *name)
{
	int fd = open_fifo(dir, name);

	return fd < 0 ? -1 : fd;
}

/* The fixed files of a guest's tracefs. */
static const struct {
	const char *name, *text;
} tree_files[] = {
	{ "events/header_page", header_page },
	{ "events/header_event", header_event },
	{ "events/enable", "0\n" },
	{ "tracing_on", "1\n" },
	{ "trace_clock", "[local] global counter uptime perf mono mono_raw boot tai x86-tsc\n" },
	{ "buffer_size_kb", "1408\n" },
	{ "buffer_total_size_kb", "1408\n" },
	{ "buffer_percent", "50\n" },
	{ "current_tracer", "nop\n" },
	{ "available_tracers", "nop\n" },
	{ "set_event", "" },
	{ "saved_cmdlines", "1 init\n" },
	{ "printk_formats", "" },
	{ "README", "xensim: a simulated guest kernel's tracefs\n" },
};

/* The tracefs files and FIFOs under g->dir. Returns 0 or -errno. */
static int make_tree(struct xsim_guest *g)
{
	char name[128], text[4096];
	int ret;

	if ((ret = mkdirs(g->dir, "events")) ||
	    (ret = mkdirs(g->dir, "per_cpu")))
		return ret;
	for (size_t i = 0; i < sizeof(tree_files) / sizeof(tree_files[0]); i++)
		if ((ret = xsim_put_file(g->dir, tree_files[i].name,
				    tree_files[i].text)))
			return ret;
	text[0] = '\0';
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		char fmt[4096];

		snprintf(name, sizeof(name), "events/%s", events[i].sys);
		if ((ret = mkdirs(g->dir, name)))
			return ret;
		snprintf(name, sizeof(name), "events/%s/%s", events[i].sys,
			 events[i].name);
		if ((ret = mkdirs(g->dir, name)))
			return ret;
		snprintf(fmt, sizeof(fmt), "name: %s\nID: %d\nformat:\n%s%s\nprint fmt: %s\n",
			 events[i].name, events[i].id, common_fields,
			 events[i].fields, events[i].fmt);
		snprintf(name, sizeof(name), "events/%s/%s/format",
			 events[i].sys, events[i].name);
		if ((ret = xsim_put_file(g->dir, name, fmt)))
			return ret;
		snprintf(name, sizeof(name), "events/%s/%s/enable",
			 events[i].sys, events[i].name);
		/* ftrace's own events are always on, as in the kernel */
		if ((ret = xsim_put_file(g->dir, name,
				    strcmp(events[i].sys, "ftrace") ? "0\n" : "1\n")))
			return ret;
		snprintf(name, sizeof(name), "events/%s/%s/filter",
			 events[i].sys, events[i].name);
		if ((ret = xsim_put_file(g->dir, name, "none\n")))
			return ret;
		snprintf(name, sizeof(name), "events/%s/enable", events[i].sys);
		if ((ret = xsim_put_file(g->dir, name, "0\n")))
			return ret;
		snprintf(text + strlen(text), sizeof(text) - strlen(text),
			 "%s:%s\n", events[i].sys, events[i].name);
	}
	if ((ret = xsim_put_file(g->dir, "available_events", text)))
		return ret;
	for (unsigned int c = 0; c < g->nvcpus; c++) {
		snprintf(name, sizeof(name), "per_cpu/cpu%u", c);
		if ((ret = mkdirs(g->dir, name)))
			return ret;
		snprintf(name, sizeof(name), "per_cpu/cpu%u/buffer_size_kb", c);
		if ((ret = xsim_put_file(g->dir, name, "1408\n")))
			return ret;
		snprintf(name, sizeof(name), "per_cpu/cpu%u/trace_pipe_raw", c);
		ret = open_fifo(g->dir, name);
		if (ret < 0)
			return ret;
		g->cpu[c].fd = ret;
		/* optional: without them, writers use the shared pair */
		snprintf(name, sizeof(name), "per_cpu/cpu%u/trace_marker", c);
		g->cpu[c].mfd[0] = open_fifo_opt(g->dir, name);
		snprintf(name, sizeof(name), "per_cpu/cpu%u/trace_marker_raw", c);
		g->cpu[c].mfd[1] = open_fifo_opt(g->dir, name);
	}
	ret = open_fifo(g->dir, "trace_marker");
	if (ret < 0)
		return ret;
	g->marker_fd = ret;
	ret = open_fifo(g->dir, "trace_marker_raw");
	if (ret < 0)
		return ret;
	g->raw_fd = ret;
	return 0;
}

struct xsim_guest *xsim_guest_new(struct xsim_host *h, unsigned int dom,
				  bool tracefs)
{
	const struct xsim_dom_conf *d = &h->conf.dom[dom];
	struct xsim_guest *g = calloc(1, sizeof(*g));
	int ret = -ENOMEM;

	if (!g)
		return NULL;
	g->h = h;
	g->dom = dom;
	g->domid = d->domid;
	g->nvcpus = d->vcpus;
	g->ratio = xsim_tsc_ratio(&h->conf, d);
	g->frac = xsim_frac_bits(h->conf.vendor);
	g->marker_fd = g->raw_fd = -1;
	pthread_mutex_init(&g->qlock, NULL);
	for (unsigned int c = 0; c < XSIM_MAX_VCPUS; c++) {
		g->cpu[c].fd = g->cpu[c].mfd[0] = g->cpu[c].mfd[1] = -1;
		pthread_mutex_init(&g->cpu[c].lock, NULL);
	}
	if (!tracefs)
		return g;	/* nothing traced, nothing read: on stays 0 */
	if (asprintf(&g->dir, "%s/dom%u", h->dir, d->domid) < 0) {
		g->dir = NULL;
		goto fail;
	}
	if (mkdir(g->dir, 0755) && errno != EEXIST) {
		ret = -errno;
		goto fail;
	}
	free(g->dir);
	if (asprintf(&g->dir, "%s/dom%u/tracing", h->dir, d->domid) < 0) {
		g->dir = NULL;
		goto fail;
	}
	if (mkdir(g->dir, 0755) && errno != EEXIST) {
		ret = -errno;
		goto fail;
	}
	if ((ret = make_tree(g)))
		goto fail;
	g->on = 1;
	g->enabled = EV_PRINT | EV_RAW;
	return g;
fail:
	xsim_guest_free(g);
	errno = -ret;
	return NULL;
}

/* Guest TSC of vCPU @c at host TSC @t. */
static uint64_t gtsc(const struct xsim_guest *g, unsigned int c, uint64_t t)
{
	return xsim_host_gtsc(g->h, g->dom, c, t);
}

/* Hand the page to readers; a full FIFO loses it, as an overrun would. */
static void flush_locked(struct gcpu *gc)
{
	uint64_t commit = gc->len | (gc->missed ? MISSED_EVENTS : 0);

	if (!gc->open)
		return;
	memcpy(gc->page, &gc->page_ts, 8);
	memcpy(gc->page + 8, &commit, 8);
	memset(gc->page + PAGE_HDR + gc->len, 0, PAGE - PAGE_HDR - gc->len);
	if (write(gc->fd, gc->page, PAGE) == PAGE) {
		gc->pages++;
		gc->missed = false;
	} else {
		gc->dropped++;
		gc->missed = true;
	}
	gc->open = false;
	gc->len = 0;
}

static void put32(struct gcpu *gc, uint32_t v)
{
	memcpy(gc->page + PAGE_HDR + gc->len, &v, 4);
	gc->len += 4;
}

/* Append one event (payload <= 112 bytes) at guest time @ts. */
static void append(struct gcpu *gc, uint64_t ts, uint64_t host,
		   const void *payload, unsigned int len)
{
	unsigned int plen = (len + 3) & ~3u, need;
	uint64_t delta;

	if (gc->open && ts < gc->last_ts)
		ts = gc->last_ts;	/* never backwards within a CPU */
	delta = gc->open ? ts - gc->last_ts : 0;
	need = 4 + plen + (delta >> TS_BITS ? 8 : 0);
	if (gc->open && PAGE_HDR + gc->len + need > PAGE)
		flush_locked(gc);
	if (!gc->open) {
		gc->open = true;
		gc->page_ts = ts;
		gc->opened_host = host;
		delta = 0;
	}
	if (delta >> TS_BITS) {
		/* TIME_EXTEND: low 27 bits in the header, the rest after */
		put32(gc, 30 | (uint32_t)(delta & ((1u << TS_BITS) - 1)) << 5);
		put32(gc, (uint32_t)(delta >> TS_BITS));
		delta = 0;
	}
	put32(gc, plen / 4 | (uint32_t)delta << 5);
	memset(gc->page + PAGE_HDR + gc->len, 0, plen);
	memcpy(gc->page + PAGE_HDR + gc->len, payload, len);
	gc->len += plen;
	gc->last_ts = ts;
	gc->events++;
}

static void common(uint8_t *p, uint16_t id, int32_t pid)
{
	memcpy(p, &id, 2);
	p[2] = 0;
	p[3] = 0;
	memcpy(p + 4, &pid, 4);
}

static bool wants(struct xsim_guest *g, int bit)
{
	return __atomic_load_n(&g->on, __ATOMIC_RELAXED) &&
	       (__atomic_load_n(&g->enabled, __ATOMIC_RELAXED) & bit);
}

static int32_t task_pid(const struct xsim_guest *g, unsigned int c)
{
	return 1000 + (int32_t)c;
}

void xsim_guest_switch(struct xsim_guest *g, unsigned int c, uint64_t host,
		       bool to_task)
{
	struct gcpu *gc = &g->cpu[c];
	uint8_t e[64] = { 0 };
	int32_t idle = 0, task = task_pid(g, c), prio = 120;
	int64_t state = to_task ? 0 : 1;	/* the task sleeps (S) */
	char idle_comm[16], task_comm[16] = "app";

	if (gc->in_task == to_task)
		return;
	gc->in_task = to_task;
	if (!wants(g, EV_SWITCH))
		return;
	snprintf(idle_comm, sizeof(idle_comm), "swapper/%u", c);
	common(e, ID_SWITCH, to_task ? idle : task);
	memcpy(e + 8, to_task ? idle_comm : task_comm, 16);
	memcpy(e + 24, to_task ? &idle : &task, 4);
	memcpy(e + 28, &prio, 4);
	memcpy(e + 32, &state, 8);
	memcpy(e + 40, to_task ? task_comm : idle_comm, 16);
	memcpy(e + 56, to_task ? &task : &idle, 4);
	memcpy(e + 60, &prio, 4);
	pthread_mutex_lock(&gc->lock);
	append(gc, gtsc(g, c, host), host, e, 64);
	pthread_mutex_unlock(&gc->lock);
}

void xsim_guest_activity(struct xsim_guest *g, unsigned int c, uint64_t host)
{
	struct gcpu *gc = &g->cpu[c];
	uint8_t e[36] = { 0 };
	int32_t pid = 2000 + (int32_t)(host % 64), prio = 120, cpu = c;

	if (!wants(g, EV_WAKEUP))
		return;
	common(e, ID_WAKEUP, task_pid(g, c));
	snprintf((char *)e + 8, 16, "kworker/%u", pid % 8);
	memcpy(e + 24, &pid, 4);
	memcpy(e + 28, &prio, 4);
	memcpy(e + 32, &cpu, 4);
	pthread_mutex_lock(&gc->lock);
	append(gc, gtsc(g, c, host), host, e, sizeof(e));
	pthread_mutex_unlock(&gc->lock);
}

bool xsim_guest_pop(struct xsim_guest *g, unsigned int c,
		    struct xsim_action *a, uint64_t *now)
{
	unsigned int i;

	pthread_mutex_lock(&g->qlock);
	/* the oldest for @c or any vCPU; those for other vCPUs wait for them */
	for (i = 0; i < g->qlen; i++) {
		const struct xsim_action *q = &g->q[(g->qhead + i) % 64];

		if (q->vcpu < 0 || (unsigned int)q->vcpu == c)
			break;
	}
	if (i == g->qlen) {
		pthread_mutex_unlock(&g->qlock);
		return false;
	}
	/* time taken under the lock: actions keep their order across pCPUs */
	*now = xsim_rdtsc();
	*a = g->q[(g->qhead + i) % 64];
	if (!i) {
		g->qhead = (g->qhead + 1) % 64;
	} else {
		/* close the gap: the others keep their order */
		for (; i + 1 < g->qlen; i++)
			g->q[(g->qhead + i) % 64] = g->q[(g->qhead + i + 1) % 64];
	}
	__atomic_sub_fetch(&g->qlen, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&g->qlock);
	return true;
}

bool xsim_guest_push(struct xsim_guest *g, const struct xsim_action *a)
{
	bool ok = false;

	pthread_mutex_lock(&g->qlock);
	if (g->qlen < 64) {
		g->q[(g->qhead + g->qlen) % 64] = *a;
		__atomic_add_fetch(&g->qlen, 1, __ATOMIC_RELEASE);
		ok = true;
	}
	pthread_mutex_unlock(&g->qlock);
	return ok;
}

void xsim_guest_mark(struct xsim_guest *g, unsigned int c, uint64_t host,
		     const struct xsim_action *a)
{
	struct gcpu *gc = &g->cpu[c];
	uint8_t e[16 + XSIM_MARKER_MAX + 1] = { 0 };
	unsigned int len;
	uint64_t ts;

	if (!__atomic_load_n(&g->on, __ATOMIC_RELAXED))
		return;
	if (a->kind == XA_RAW) {
		common(e, ID_RAW, task_pid(g, c));
		memcpy(e + 8, a->data, a->len);	/* u32 id, then data */
		len = 8 + a->len;
	} else {
		uint64_t ip = 0xffffffff81000000ull;

		common(e, ID_PRINT, task_pid(g, c));
		memcpy(e + 8, &ip, 8);
		memcpy(e + 16, a->data, a->len);
		len = 16 + a->len + 1;	/* NUL-terminated */
	}
	ts = gtsc(g, c, host);
	pthread_mutex_lock(&gc->lock);
	append(gc, ts, host, e, len);
	pthread_mutex_unlock(&gc->lock);
	xsim_truth(g->h, "marker %u %u %lu %lu %s %u\n", g->domid, c,
		   (unsigned long)host, (unsigned long)ts,
		   a->kind == XA_RAW ? "raw" : "text", a->len);
}

bool xsim_guest_pending(struct xsim_guest *g)
{
	return __atomic_load_n(&g->qlen, __ATOMIC_ACQUIRE) != 0;
}

/*
 * A FIFO keeps no write boundaries: writes that arrive before the daemon
 * reads them come out as one. Text markers are split again at newlines
 * (the kernel ends each with one); raw markers written back to back may
 * merge (docs/xensim.md).
 */
static void read_markers(struct xsim_guest *g, int fd, bool raw, int vcpu)
{
	struct xsim_action a = { .kind = raw ? XA_RAW : XA_TEXT, .vcpu = vcpu };
	uint8_t buf[4096];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			ssize_t len = n - off;

			if (!raw) {
				uint8_t *nl = memchr(buf + off, '\n', len);

				if (nl)
					len = nl - (buf + off) + 1;
			}
			if (len > XSIM_MARKER_MAX)
				len = XSIM_MARKER_MAX;	/* truncated, as large ones */
			a.len = len;
			memcpy(a.data, buf + off, len);
			off += raw ? n - off : len;
			if (raw && a.len < 4)
				continue;	/* the kernel wants an id */
			if (!xsim_guest_push(g, &a))
				g->markers_lost++;
		}
	}
}

int xsim_guest_fds(struct xsim_guest *g, int *fds)
{
	int n = 0;

	if (g->marker_fd >= 0)
		fds[n++] = g->marker_fd;
	if (g->raw_fd >= 0)
		fds[n++] = g->raw_fd;
	for (unsigned int c = 0; c < g->nvcpus; c++)
		for (int k = 0; k < 2; k++)
			if (g->cpu[c].mfd[k] >= 0)
				fds[n++] = g->cpu[c].mfd[k];
	return n;
}

void xsim_guest_input(struct xsim_guest *g, int fd)
{
	if (fd == g->marker_fd || fd == g->raw_fd) {
		read_markers(g, fd, fd == g->raw_fd, -1);
		return;
	}
	for (unsigned int c = 0; c < g->nvcpus; c++)
		for (int k = 0; k < 2; k++)
			if (fd == g->cpu[c].mfd[k])
				read_markers(g, fd, k == 1, (int)c);
}

/* Re-read what libtracefs may have written. */
static void refresh(struct xsim_guest *g)
{
	char buf[256], name[128];
	unsigned int en = 0;
	bool all;

	get_file(g->dir, "tracing_on", buf, sizeof(buf));
	__atomic_store_n(&g->on, buf[0] != '0', __ATOMIC_RELAXED);
	get_file(g->dir, "events/enable", buf, sizeof(buf));
	all = buf[0] == '1';
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		snprintf(name, sizeof(name), "events/%s/%s/enable",
			 events[i].sys, events[i].name);
		get_file(g->dir, name, buf, sizeof(buf));
		if (all || buf[0] == '1')
			en |= events[i].bit;
		snprintf(name, sizeof(name), "events/%s/enable", events[i].sys);
		get_file(g->dir, name, buf, sizeof(buf));
		if (buf[0] == '1')
			en |= events[i].bit;
	}
	__atomic_store_n(&g->enabled, en, __ATOMIC_RELAXED);
	/* a written clock name becomes the bracketed list again */
	get_file(g->dir, "trace_clock", buf, sizeof(buf));
	/* empty: libtracefs truncated it and is about to write the name */
	if (buf[0] && !strchr(buf, '[')) {
		char *nl = strchr(buf, '\n'), out[256], *w = out;
		const char *p = clocks;

		if (nl)
			*nl = '\0';
		while (*p) {
			size_t l = strcspn(p, " ");
			bool sel = strlen(buf) == l && !strncmp(p, buf, l);

			w += snprintf(w, out + sizeof(out) - w, "%s%.*s%s ",
				      sel ? "[" : "", (int)l, p, sel ? "]" : "");
			p += l + (p[l] == ' ');
		}
		w[-1] = '\n';
		xsim_put_file(g->dir, "trace_clock", out);
	}
}

void xsim_guest_tick(struct xsim_guest *g, bool final)
{
	uint64_t now = xsim_rdtsc();
	uint64_t age = (uint64_t)FLUSH_AFTER_MS * g->h->conf.cpu_khz;

	if (!g->dir)
		return;
	refresh(g);
	for (unsigned int c = 0; c < g->nvcpus; c++) {
		struct gcpu *gc = &g->cpu[c];

		pthread_mutex_lock(&gc->lock);
		if (gc->open && (final || now - gc->opened_host > age))
			flush_locked(gc);
		pthread_mutex_unlock(&gc->lock);
	}
}

void xsim_guest_stats(struct xsim_guest *g)
{
	if (!g->dir)
		return;
	for (unsigned int c = 0; c < g->nvcpus; c++) {
		struct gcpu *gc = &g->cpu[c];

		pthread_mutex_lock(&gc->lock);
		xsim_truth(g->h, "gstats domid=%u vcpu=%u events=%lu pages=%lu dropped_pages=%lu\n",
			   g->domid, c, (unsigned long)gc->events,
			   (unsigned long)gc->pages, (unsigned long)gc->dropped);
		pthread_mutex_unlock(&gc->lock);
	}
}

void xsim_guest_free(struct xsim_guest *g)
{
	if (!g)
		return;
	for (unsigned int c = 0; c < XSIM_MAX_VCPUS; c++) {
		if (g->cpu[c].fd >= 0)
			close(g->cpu[c].fd);
		for (int k = 0; k < 2; k++)
			if (g->cpu[c].mfd[k] >= 0)
				close(g->cpu[c].mfd[k]);
		pthread_mutex_destroy(&g->cpu[c].lock);
	}
	if (g->marker_fd >= 0)
		close(g->marker_fd);
	if (g->raw_fd >= 0)
		close(g->raw_fd);
	pthread_mutex_destroy(&g->qlock);
	free(g->dir);
	free(g);
}
