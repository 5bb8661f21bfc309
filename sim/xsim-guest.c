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
 *
 * The kernel's settings are honoured as libtracefs writes them: each event's
 * enable and filter (field comparisons with &&, ||, parentheses), and
 * current_tracer: function and function_graph produce ftrace's function,
 * funcgraph_entry and funcgraph_exit records of a small call tree (the
 * symbols in tracing/kallsyms, not in a real tracefs), within
 * set_ftrace_filter, set_ftrace_notrace, set_graph_function and
 * max_graph_depth.
 *
 * buffer_size_kb: at boot each CPU's buffer is its FIFO (1 MiB), which
 * drops the newest page when full. Once buffer_size_kb is written with
 * another size, each CPU's buffer is a ring of that size, as the kernel's
 * in overwrite mode: the FIFO is sized to hold it, and a page that would
 * make the unread ones exceed it first takes the oldest unread page out
 * (per_cpu/cpuN/stats "overrun:" counts its events, and a truth line says
 * when the size changed). Writing the boot size back returns to the FIFO.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xsim-internal.h"

#define PAGE		4096u
#define PAGE_HDR	16u		/* u64 timestamp, u64 commit */
#define MISSED_EVENTS	(1ull << 31)	/* commit flag: pages were lost */
#define TS_BITS		27
#define FLUSH_AFTER_MS	50		/* partial pages reach readers this late */
#define BOOT_BUFFER_KB	"1408"		/* buffer_size_kb as booted: the FIFO */
#define FIFO_SIZE	(1 << 20)	/* the FIFO as booted */

/* Event ids of the simulated guest kernel, as its format files say. */
enum {
	ID_FUNC = 1, ID_PRINT = 5, ID_GRAPH_EXIT = 10, ID_GRAPH_ENTRY = 11,
	ID_RAW = 19, ID_SWITCH = 316, ID_WAKEUP = 318
};

#define MAX_FILTER_NODES	32
#define MAX_FUNC_GLOBS		32

/* A compiled event filter: leaves compare a field with a number. */
struct fnode {
	enum { F_CMP, F_AND, F_OR } kind;
	int op;				/* F_CMP: '=', '!', '<', '>', 'l' (<=), 'g' (>=) */
	unsigned int off, size;		/* F_CMP: the field */
	bool sign;
	int64_t val;
	int l, r;			/* F_AND, F_OR: node indices */
};

struct filter {
	struct fnode n[MAX_FILTER_NODES];
	int nr, root;			/* root < 0: none */
	char text[256];			/* as last read */
};

/* Globs of one function list file (set_ftrace_filter, ...). */
struct globs {
	char g[MAX_FUNC_GLOBS][64];
	int nr;
};

enum { TR_NOP, TR_FUNCTION, TR_GRAPH };

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
	unsigned int ring_pages;	/* 0: the FIFO; else its ring's size */
	uint64_t overrun, overrun_pages;	/* the ring overwrote */
	uint64_t overrun_shown;		/* in per_cpu/cpuN/stats */
	uint64_t filtered;		/* events a filter rejected */
	uint64_t funcs;			/* function tracer records */
	bool in_task;			/* the guest task (not idle) runs */
	bool woken;			/* another vCPU woke its task (atomic) */
	bool late_in;			/* so its switch in waits for an exit */
	uint64_t kick_at;		/* host TSC of that wake */
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
	pthread_mutex_t flock;		/* the filters, tracer and lists */
	struct filter filter[4];	/* by index in events[] */
	int tracer;			/* TR_*, atomically */
	unsigned int func_mask;		/* funcs[] traced, atomically */
	unsigned int graph_mask;	/* funcs[] a graph starts at */
	int graph_depth;		/* 0: no limit */
	unsigned int filtered_on;	/* events[] bits with a filter */
	char lists[4][1024];		/* the function files, as last read */
	pthread_mutex_t qlock;
	struct xsim_action q[64];
	unsigned int qhead, qlen;
	uint64_t markers_lost;
	char buffer_kb[32];		/* buffer_size_kb as last read */
	struct gcpu cpu[XSIM_MAX_VCPUS];
};

enum { EV_SWITCH = 1, EV_WAKEUP = 2, EV_PRINT = 4, EV_RAW = 8 };

static const char common_fields[] =
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

/* A numeric field a filter may name. */
struct ffield {
	const char *name;
	unsigned int off, size;
	bool sign;
};

static const struct ffield common_ffields[] = {
	{ "common_type", 0, 2, false }, { "common_flags", 2, 1, false },
	{ "common_preempt_count", 3, 1, false }, { "common_pid", 4, 4, true },
};

static const struct ffield switch_ffields[] = {
	{ "prev_pid", 24, 4, true }, { "prev_prio", 28, 4, true },
	{ "prev_state", 32, 8, true }, { "next_pid", 56, 4, true },
	{ "next_prio", 60, 4, true }, { NULL, 0, 0, false },
};

static const struct ffield wakeup_ffields[] = {
	{ "pid", 24, 4, true }, { "prio", 28, 4, true },
	{ "target_cpu", 32, 4, true }, { NULL, 0, 0, false },
};

static const struct ffield no_ffields[] = { { NULL, 0, 0, false } };

static const struct {
	const char *sys, *name;
	int id, bit;
	const char *fields, *fmt;
	const struct ffield *ff;
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
	  "REC->next_comm, REC->next_pid, REC->next_prio", switch_ffields },
	{ "sched", "sched_wakeup", ID_WAKEUP, EV_WAKEUP,
	  "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	  "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	  "\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	  "\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n",
	  "\"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu",
	  wakeup_ffields },
	{ "ftrace", "print", ID_PRINT, EV_PRINT,
	  "\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;\n",
	  "\"%ps: %s\", (void *)REC->ip, REC->buf", no_ffields },
	{ "ftrace", "raw_data", ID_RAW, EV_RAW,
	  "\tfield:unsigned int id;\toffset:8;\tsize:4;\tsigned:0;\n"
	  "\tfield:char buf[];\toffset:12;\tsize:0;\tsigned:0;\n",
	  "\"id:%04x %08x\", REC->id, (int)REC->buf[0]", no_ffields },
};

/* ftrace's own records of the function tracers: formats only, no enable
 * or filter file (as in the kernel), produced by current_tracer alone. */
static const struct {
	const char *name;
	int id;
	const char *fields, *fmt;
} tracer_events[] = {
	{ "function", ID_FUNC,
	  "\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:unsigned long parent_ip;\toffset:16;\tsize:8;\tsigned:0;\n",
	  "\" %ps <-- %ps\", (void *)REC->ip, (void *)REC->parent_ip" },
	{ "funcgraph_entry", ID_GRAPH_ENTRY,
	  "\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:int depth;\toffset:16;\tsize:4;\tsigned:1;\n",
	  "\"--> %ps (%d)\", (void *)REC->func, REC->depth" },
	{ "funcgraph_exit", ID_GRAPH_EXIT,
	  "\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:int depth;\toffset:16;\tsize:4;\tsigned:1;\n"
	  "\tfield:unsigned int overrun;\toffset:20;\tsize:4;\tsigned:0;\n"
	  "\tfield:unsigned long long calltime;\toffset:24;\tsize:8;\tsigned:0;\n"
	  "\tfield:unsigned long long rettime;\toffset:32;\tsize:8;\tsigned:0;\n",
	  "\"<-- %ps (%d) (start: %llx  end: %llx) over: %d\", (void *)REC->func, "
	  "REC->depth, REC->calltime, REC->rettime, REC->depth" },
};

/*
 * The simulated kernel's functions and the call trees its tasks run
 * (parent index, -1 for a root, in call order). Roots are called from
 * CALLER, which is no traceable function.
 */
#define CALLER	0xffffffff81000100ull
static const struct {
	const char *name;
	uint64_t addr;
	int parent;
} funcs[] = {
	{ "schedule", 0xffffffff81100000ull, -1 },
	{ "__schedule", 0xffffffff81100100ull, 0 },
	{ "pick_next_task_fair", 0xffffffff81100200ull, 1 },
	{ "update_curr", 0xffffffff81100300ull, 2 },
	{ "finish_task_switch", 0xffffffff81100400ull, 1 },
	{ "vfs_read", 0xffffffff81200000ull, -1 },
	{ "rw_verify_area", 0xffffffff81200100ull, 5 },
	{ "vfs_write", 0xffffffff81200200ull, -1 },
	{ "rw_verify_area", 0xffffffff81200100ull, 7 },
	{ "__fsnotify_parent", 0xffffffff81200300ull, 7 },
};
#define NR_FUNCS	(int)(sizeof(funcs) / sizeof(funcs[0]))

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
		fcntl(fd, F_SETPIPE_SZ, FIFO_SIZE);
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

/* What "trace" shows; emptying it (O_TRUNC, as tracefs takes a write) resets
 * the ring buffers, and the text comes back once they are empty. */
#define TRACE_TEXT	"# xensim: read trace_pipe_raw\n"

/* The fixed files of a guest's tracefs. */
static const struct {
	const char *name, *text;
} tree_files[] = {
	{ "events/header_page", header_page },
	{ "events/header_event", header_event },
	{ "events/enable", "0\n" },
	{ "tracing_on", "1\n" },
	{ "trace_clock", "[local] global counter uptime perf mono mono_raw boot tai x86-tsc\n" },
	{ "buffer_size_kb", BOOT_BUFFER_KB "\n" },
	{ "buffer_total_size_kb", "1408\n" },
	{ "buffer_percent", "50\n" },
	{ "current_tracer", "nop\n" },
	{ "available_tracers", "function_graph function nop\n" },
	{ "set_ftrace_filter", "#### all functions enabled ####\n" },
	{ "set_ftrace_notrace", "" },
	{ "set_graph_function", "#### all functions enabled ####\n" },
	{ "max_graph_depth", "0\n" },
	{ "set_event", "" },
	{ "saved_cmdlines", "1 init\n" },
	{ "printk_formats", "" },
	{ "README", "xensim: a simulated guest kernel's tracefs\n" },
	{ "trace", TRACE_TEXT },
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
	for (size_t i = 0; i < sizeof(tracer_events) / sizeof(tracer_events[0]); i++) {
		char fmt[4096];

		snprintf(name, sizeof(name), "events/ftrace/%s", tracer_events[i].name);
		if ((ret = mkdirs(g->dir, name)))
			return ret;
		snprintf(fmt, sizeof(fmt), "name: %s\nID: %d\nformat:\n%s%s\nprint fmt: %s\n",
			 tracer_events[i].name, tracer_events[i].id, common_fields,
			 tracer_events[i].fields, tracer_events[i].fmt);
		snprintf(name, sizeof(name), "events/ftrace/%s/format",
			 tracer_events[i].name);
		if ((ret = xsim_put_file(g->dir, name, fmt)))
			return ret;
	}
	/* the guest's /proc/kallsyms, for the host's report */
	text[0] = '\0';
	for (int i = 0; i < NR_FUNCS; i++)
		if (!strstr(text, funcs[i].name))
			snprintf(text + strlen(text), sizeof(text) - strlen(text),
				 "%016llx T %s\n", (unsigned long long)funcs[i].addr,
				 funcs[i].name);
	if ((ret = xsim_put_file(g->dir, "kallsyms", text)))
		return ret;
	for (unsigned int c = 0; c < g->nvcpus; c++) {
		snprintf(name, sizeof(name), "per_cpu/cpu%u", c);
		if ((ret = mkdirs(g->dir, name)))
			return ret;
		snprintf(name, sizeof(name), "per_cpu/cpu%u/buffer_size_kb", c);
		if ((ret = xsim_put_file(g->dir, name, "1408\n")))
			return ret;
		snprintf(name, sizeof(name), "per_cpu/cpu%u/stats", c);
		if ((ret = xsim_put_file(g->dir, name, "entries: 0\noverrun: 0\n")))
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
	snprintf(g->buffer_kb, sizeof(g->buffer_kb), "%s", BOOT_BUFFER_KB);
	pthread_mutex_init(&g->qlock, NULL);
	pthread_mutex_init(&g->flock, NULL);
	for (size_t i = 0; i < sizeof(g->filter) / sizeof(g->filter[0]); i++)
		g->filter[i].root = -1;
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
	/* a kernel whose instances offer fewer tracers than its top one */
	if (d->instance_tracers[0]) {
		char text[160];

		snprintf(text, sizeof(text), "%s\n", d->instance_tracers);
		if ((ret = xsim_put_file(g->dir, "instance_tracers", text)))
			goto fail;
	}
	g->on = 1;
	g->enabled = EV_PRINT | EV_RAW;
	return g;
fail:
	xsim_guest_free(g);
	errno = -ret;
	return NULL;
}

/* ---- event filters ---- */

struct lexer {
	const char *p;
	const struct ffield *ff;	/* the event's, then common_ffields */
	struct filter *f;
	bool bad;
};

static void skip_ws(struct lexer *lx)
{
	while (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\n')
		lx->p++;
}

static bool accept(struct lexer *lx, const char *tok)
{
	skip_ws(lx);
	if (strncmp(lx->p, tok, strlen(tok)))
		return false;
	lx->p += strlen(tok);
	return true;
}

static int new_node(struct lexer *lx)
{
	if (lx->f->nr >= MAX_FILTER_NODES) {
		lx->bad = true;
		return 0;
	}
	memset(&lx->f->n[lx->f->nr], 0, sizeof(lx->f->n[0]));
	return lx->f->nr++;
}

static const struct ffield *find_field(const struct ffield *ff, const char *name,
				       size_t n)
{
	for (int i = 0; ff[i].name; i++)
		if (strlen(ff[i].name) == n && !strncmp(ff[i].name, name, n))
			return &ff[i];
	for (size_t i = 0; i < sizeof(common_ffields) / sizeof(common_ffields[0]); i++)
		if (strlen(common_ffields[i].name) == n &&
		    !strncmp(common_ffields[i].name, name, n))
			return &common_ffields[i];
	return NULL;
}

static int parse_or(struct lexer *lx);

/* FIELD OP NUMBER, or ( EXPR ) */
static int parse_cmp(struct lexer *lx)
{
	static const struct { const char *tok; int op; } ops[] = {
		{ "==", '=' }, { "!=", '!' }, { "<=", 'l' }, { ">=", 'g' },
		{ "<", '<' }, { ">", '>' },
	};
	const struct ffield *fld;
	const char *name;
	char *end;
	int i, k;

	if (accept(lx, "(")) {
		k = parse_or(lx);
		if (!accept(lx, ")"))
			lx->bad = true;
		return k;
	}
	skip_ws(lx);
	name = lx->p;
	while ((*lx->p >= 'a' && *lx->p <= 'z') || (*lx->p >= '0' && *lx->p <= '9') ||
	       *lx->p == '_')
		lx->p++;
	fld = find_field(lx->ff, name, (size_t)(lx->p - name));
	if (!fld) {
		lx->bad = true;
		return 0;
	}
	for (i = 0; i < 6 && !accept(lx, ops[i].tok); i++)
		;
	if (i == 6) {
		lx->bad = true;
		return 0;
	}
	k = new_node(lx);
	if (lx->bad)
		return 0;
	skip_ws(lx);
	lx->f->n[k].kind = F_CMP;
	lx->f->n[k].op = ops[i].op;
	lx->f->n[k].off = fld->off;
	lx->f->n[k].size = fld->size;
	lx->f->n[k].sign = fld->sign;
	errno = 0;
	lx->f->n[k].val = strtoll(lx->p, &end, 0);
	if (end == lx->p || errno)
		lx->bad = true;
	lx->p = end;
	return k;
}

static int parse_and(struct lexer *lx)
{
	int l = parse_cmp(lx);

	while (!lx->bad && accept(lx, "&&")) {
		int r = parse_cmp(lx), k = new_node(lx);

		if (lx->bad)
			break;
		lx->f->n[k] = (struct fnode){ .kind = F_AND, .l = l, .r = r };
		l = k;
	}
	return l;
}

static int parse_or(struct lexer *lx)
{
	int l = parse_and(lx);

	while (!lx->bad && accept(lx, "||")) {
		int r = parse_and(lx), k = new_node(lx);

		if (lx->bad)
			break;
		lx->f->n[k] = (struct fnode){ .kind = F_OR, .l = l, .r = r };
		l = k;
	}
	return l;
}

/* @text into @f; "none", "0" or nothing: no filter. False if it does not
 * parse (then no filter either). */
static bool compile_filter(struct filter *f, const struct ffield *ff, const char *text)
{
	struct lexer lx = { .p = text, .ff = ff, .f = f };

	f->nr = 0;
	f->root = -1;
	skip_ws(&lx);
	if (!*lx.p || !strncmp(lx.p, "none", 4) || !strcmp(lx.p, "0") ||
	    !strcmp(lx.p, "0\n"))
		return true;
	f->root = parse_or(&lx);
	skip_ws(&lx);
	if (lx.bad || *lx.p) {
		f->root = -1;
		return false;
	}
	return true;
}

static int64_t field_val(const uint8_t *e, const struct fnode *n)
{
	int64_t v = 0;

	switch (n->size) {
	case 1: { uint8_t x; memcpy(&x, e + n->off, 1); v = n->sign ? (int64_t)(int8_t)x : (int64_t)x; break; }
	case 2: { uint16_t x; memcpy(&x, e + n->off, 2); v = n->sign ? (int64_t)(int16_t)x : (int64_t)x; break; }
	case 4: { uint32_t x; memcpy(&x, e + n->off, 4); v = n->sign ? (int64_t)(int32_t)x : (int64_t)x; break; }
	default: memcpy(&v, e + n->off, 8); break;
	}
	return v;
}

static bool eval(const struct filter *f, int k, const uint8_t *e)
{
	const struct fnode *n = &f->n[k];
	int64_t v;

	if (n->kind == F_AND)
		return eval(f, n->l, e) && eval(f, n->r, e);
	if (n->kind == F_OR)
		return eval(f, n->l, e) || eval(f, n->r, e);
	v = field_val(e, n);
	switch (n->op) {
	case '=': return v == n->val;
	case '!': return v != n->val;
	case '<': return v < n->val;
	case '>': return v > n->val;
	case 'l': return v <= n->val;
	default:  return v >= n->val;
	}
}

/* Whether event @idx of events[] with payload @e passes its filter. */
static bool passes(struct xsim_guest *g, int idx, const uint8_t *e)
{
	bool ok = true;

	if (!(__atomic_load_n(&g->filtered_on, __ATOMIC_RELAXED) & (1u << idx)))
		return true;
	pthread_mutex_lock(&g->flock);
	if (g->filter[idx].root >= 0)
		ok = eval(&g->filter[idx], g->filter[idx].root, e);
	pthread_mutex_unlock(&g->flock);
	return ok;
}

static int event_index(int bit)
{
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if (events[i].bit == bit)
			return (int)i;
	return 0;
}

/* ---- the function tracers ---- */

/* Whether @name matches a word of the function list @list. */
static bool in_list(const char *list, const char *name, bool *empty)
{
	char buf[1024], *save = NULL;

	*empty = true;
	/* the kernel shows "#### all functions enabled ####" for none */
	snprintf(buf, sizeof(buf), "%s", list[0] == '#' ? "" : list);
	for (char *w = strtok_r(buf, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
		*empty = false;
		if (!fnmatch(w, name, 0))
			return true;
	}
	return false;
}

/* The tracer and its function lists, into masks over funcs[]. */
static void refresh_tracer(struct xsim_guest *g)
{
	static const char *const files[] = {
		"set_ftrace_filter", "set_ftrace_notrace", "set_graph_function",
		"max_graph_depth",
	};
	char buf[1024];
	unsigned int fmask = 0, gmask = 0;
	int tracer = TR_NOP;
	bool changed = false;

	get_file(g->dir, "current_tracer", buf, sizeof(buf));
	if (!strncmp(buf, "function_graph", 14))
		tracer = TR_GRAPH;
	else if (!strncmp(buf, "function", 8))
		tracer = TR_FUNCTION;
	for (int i = 0; i < 4; i++) {
		get_file(g->dir, files[i], buf, sizeof(buf));
		if (strcmp(buf, g->lists[i])) {
			changed = true;
			memcpy(g->lists[i], buf, sizeof(buf));
		}
	}
	if (changed || tracer != g->tracer) {
		for (int i = 0; i < NR_FUNCS; i++) {
			bool e1, e2, e3;
			bool in = in_list(g->lists[0], funcs[i].name, &e1);
			bool out = in_list(g->lists[1], funcs[i].name, &e2);
			bool root = in_list(g->lists[2], funcs[i].name, &e3);

			if ((e1 || in) && !out)
				fmask |= 1u << i;
			if (!e3 ? root : funcs[i].parent < 0)
				gmask |= 1u << i;
		}
		__atomic_store_n(&g->func_mask, fmask, __ATOMIC_RELAXED);
		__atomic_store_n(&g->graph_mask, gmask, __ATOMIC_RELAXED);
		__atomic_store_n(&g->graph_depth, atoi(g->lists[3]), __ATOMIC_RELAXED);
	}
	if (tracer != __atomic_load_n(&g->tracer, __ATOMIC_RELAXED)) {
		__atomic_store_n(&g->tracer, tracer, __ATOMIC_RELAXED);
		xsim_truth(g->h, "gtracer domid=%u tracer=%s\n", g->domid,
			   tracer == TR_GRAPH ? "function_graph" :
			   tracer == TR_FUNCTION ? "function" : "nop");
	}
}

static void refresh_filters(struct xsim_guest *g)
{
	char buf[256], name[160];
	unsigned int on = 0;

	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		struct filter *f = &g->filter[i];

		snprintf(name, sizeof(name), "events/%s/%s/filter", events[i].sys,
			 events[i].name);
		get_file(g->dir, name, buf, sizeof(buf));
		buf[strcspn(buf, "\n")] = '\0';
		if (strcmp(buf, f->text)) {
			bool ok;

			pthread_mutex_lock(&g->flock);
			ok = compile_filter(f, events[i].ff, buf);
			pthread_mutex_unlock(&g->flock);
			snprintf(f->text, sizeof(f->text), "%s", buf);
			xsim_truth(g->h, "gfilter domid=%u event=%s:%s %s %s\n",
				   g->domid, events[i].sys, events[i].name,
				   ok ? "filter" : "error", buf[0] ? buf : "none");
		}
		if (f->root >= 0)
			on |= 1u << i;
	}
	__atomic_store_n(&g->filtered_on, on, __ATOMIC_RELAXED);
}

/* Guest TSC of vCPU @c at host TSC @t. */
static uint64_t gtsc(const struct xsim_guest *g, unsigned int c, uint64_t t)
{
	return xsim_host_gtsc(g->h, g->dom, c, t);
}

static uint64_t page_events(const uint8_t *data, unsigned int len);

/*
 * A ring: the oldest unread page out if the new one would exceed it, as
 * the kernel's writer overwrites (a reader that took it first wins).
 */
static void overwrite_locked(struct gcpu *gc)
{
	uint8_t old[PAGE];
	uint64_t commit;
	int unread = 0;

	if (!gc->ring_pages || ioctl(gc->fd, FIONREAD, &unread) ||
	    (unsigned int)unread < gc->ring_pages * PAGE)
		return;
	if (read(gc->fd, old, PAGE) != PAGE)
		return;
	memcpy(&commit, old + 8, 8);
	commit = page_events(old + PAGE_HDR, (unsigned int)(commit & 0xffff));
	/* events and pages count what readers got: this one they never do */
	gc->events -= commit;
	gc->overrun += commit;
	gc->overrun_pages++;
	if (gc->pages)
		gc->pages--;
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
	overwrite_locked(gc);
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

/* sched_wakeup of @pid (@comm) for CPU @target into vCPU @c's buffer, @cur
 * running there; takes @c's lock. True if it was written. */
static bool put_wakeup(struct xsim_guest *g, unsigned int c, uint64_t host,
		       int32_t cur, int32_t pid, const char *comm, int32_t target)
{
	struct gcpu *gc = &g->cpu[c];
	uint8_t e[36] = { 0 };
	int32_t prio = 120;
	bool put = false;

	common(e, ID_WAKEUP, cur);
	snprintf((char *)e + 8, 16, "%s", comm);
	memcpy(e + 24, &pid, 4);
	memcpy(e + 28, &prio, 4);
	memcpy(e + 32, &target, 4);
	pthread_mutex_lock(&gc->lock);
	if (passes(g, event_index(EV_WAKEUP), e)) {
		append(gc, gtsc(g, c, host), host, e, sizeof(e));
		put = true;
	} else {
		gc->filtered++;
	}
	pthread_mutex_unlock(&gc->lock);
	if (put)
		xsim_truth(g->h, "gwakeup %u %u %lu %d\n", g->domid, c,
			   (unsigned long)host, pid);
	return put;
}

/* sched_switch between the task and idle on vCPU @c at @host. */
static void put_switch(struct xsim_guest *g, unsigned int c, uint64_t host,
		       bool to_task)
{
	struct gcpu *gc = &g->cpu[c];
	uint8_t e[64] = { 0 };
	int32_t idle = 0, task = task_pid(g, c), prio = 120;
	int64_t state = to_task ? 0 : 1;	/* the task sleeps (S) */
	char idle_comm[16], task_comm[16] = "app";
	bool put = false;

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
	if (passes(g, event_index(EV_SWITCH), e)) {
		append(gc, gtsc(g, c, host), host, e, 64);
		put = true;
	} else {
		gc->filtered++;
	}
	pthread_mutex_unlock(&gc->lock);
	if (put)
		xsim_truth(g->h, "gswitch %u %u %lu %d %d\n", g->domid, c,
			   (unsigned long)host, to_task ? idle : task,
			   to_task ? task : idle);
}

/* A task woken from another vCPU may run now: its wake's stamp has come. */
static bool late_due(struct gcpu *gc, uint64_t host)
{
	if (!gc->late_in || host < gc->kick_at)
		return false;
	gc->late_in = false;
	return true;
}

void xsim_guest_switch(struct xsim_guest *g, unsigned int c, uint64_t host,
		       bool to_task)
{
	struct gcpu *gc = &g->cpu[c];

	if (!to_task) {
		/*
		 * A late switch in that no exit came for: the task runs, then
		 * sleeps; unless the wake's stamp is still ahead (the waker's
		 * pCPU runs ahead of this one by up to the allowed lag), then
		 * it runs in a later run of this vCPU.
		 */
		if (late_due(gc, host))
			put_switch(g, c, host, true);
		if (gc->in_task)
			put_switch(g, c, host, false);
		return;
	}
	if (gc->in_task || gc->late_in)
		return;
	/*
	 * The task slept. Woken from another vCPU, it runs at this vCPU's
	 * next exit (the guest handles that vCPU's IPI first); otherwise its
	 * timer wakes it and it runs at once.
	 */
	if (__atomic_exchange_n(&gc->woken, false, __ATOMIC_RELAXED)) {
		gc->late_in = true;
		return;
	}
	if (wants(g, EV_WAKEUP))
		put_wakeup(g, c, host, 0, task_pid(g, c), "app", (int32_t)c);
	put_switch(g, c, host, true);
}

void xsim_guest_kick(struct xsim_guest *g, unsigned int c, unsigned int target,
		     uint64_t host)
{
	struct gcpu *gc = &g->cpu[target];

	if (target == c || target >= g->nvcpus || gc->in_task || gc->late_in)
		return;
	gc->kick_at = host;
	__atomic_store_n(&gc->woken, true, __ATOMIC_RELAXED);
	if (wants(g, EV_WAKEUP))
		put_wakeup(g, c, host, g->cpu[c].in_task ? task_pid(g, c) : 0,
			   task_pid(g, target), "app", (int32_t)target);
}

/* ftrace's step between two records of one call tree, in guest TSC ticks */
#define FUNC_STEP	40

struct fwalk {
	struct gcpu *gc;
	uint64_t host, ts;
	unsigned int fmask;
	int depth_max, pid;
};

static void put_func(struct fwalk *w, int i)
{
	uint8_t e[24];
	uint64_t parent = funcs[i].parent < 0 ? CALLER : funcs[funcs[i].parent].addr;

	common(e, ID_FUNC, w->pid);
	memcpy(e + 8, &funcs[i].addr, 8);
	memcpy(e + 16, &parent, 8);
	append(w->gc, w->ts, w->host, e, sizeof(e));
	w->ts += FUNC_STEP;
	w->gc->funcs++;
}

/* funcgraph_entry, the children, funcgraph_exit: what the kernel's graph
 * tracer writes for a call of funcs[@i] at graph depth @d. */
static void put_graph(struct fwalk *w, int i, int d)
{
	uint8_t e[40] = { 0 };
	uint64_t call = w->ts;
	uint32_t overrun = 0;
	int32_t depth = d;
	bool traced = (w->fmask & (1u << i)) && (!w->depth_max || d < w->depth_max);

	if (traced) {
		common(e, ID_GRAPH_ENTRY, w->pid);
		memcpy(e + 8, &funcs[i].addr, 8);
		memcpy(e + 16, &depth, 4);
		append(w->gc, w->ts, w->host, e, 20);
		w->ts += FUNC_STEP;
		w->gc->funcs++;
	}
	for (int j = i + 1; j < NR_FUNCS; j++)
		if (funcs[j].parent == i)
			put_graph(w, j, traced ? d + 1 : d);
	if (traced) {
		common(e, ID_GRAPH_EXIT, w->pid);
		memcpy(e + 8, &funcs[i].addr, 8);
		memcpy(e + 16, &depth, 4);
		memcpy(e + 20, &overrun, 4);
		memcpy(e + 24, &call, 8);
		memcpy(e + 32, &w->ts, 8);
		append(w->gc, w->ts, w->host, e, 40);
		w->ts += FUNC_STEP;
		w->gc->funcs++;
	}
}

/* The graph of funcs[@i], or of the descendants set_graph_function names. */
static void graph_from(struct fwalk *w, int i, unsigned int gmask)
{
	if (gmask & (1u << i)) {
		put_graph(w, i, 0);
		return;
	}
	for (int j = i + 1; j < NR_FUNCS; j++)
		if (funcs[j].parent == i)
			graph_from(w, j, gmask);
}

/* current_tracer: one call tree of the running task, a root in turn. */
static void trace_functions(struct xsim_guest *g, unsigned int c, uint64_t host)
{
	int tracer = __atomic_load_n(&g->tracer, __ATOMIC_RELAXED);
	struct gcpu *gc = &g->cpu[c];
	struct fwalk w = {
		.gc = gc, .host = host, .pid = task_pid(g, c),
		.fmask = __atomic_load_n(&g->func_mask, __ATOMIC_RELAXED),
		.depth_max = __atomic_load_n(&g->graph_depth, __ATOMIC_RELAXED),
	};
	int root, nroots = 0, pick;

	if (tracer == TR_NOP || !__atomic_load_n(&g->on, __ATOMIC_RELAXED))
		return;
	for (int i = 0; i < NR_FUNCS; i++)
		nroots += funcs[i].parent < 0;
	pick = (int)((gc->events + host / 4096) % (uint64_t)nroots);
	for (root = 0; root < NR_FUNCS; root++)
		if (funcs[root].parent < 0 && !pick--)
			break;
	pthread_mutex_lock(&gc->lock);
	w.ts = gtsc(g, c, host);
	if (tracer == TR_FUNCTION) {
		for (int i = root; i < NR_FUNCS; i++) {
			if (i > root && funcs[i].parent < 0)
				break;
			if (w.fmask & (1u << i))
				put_func(&w, i);
		}
	} else {
		graph_from(&w, root, __atomic_load_n(&g->graph_mask, __ATOMIC_RELAXED));
	}
	pthread_mutex_unlock(&gc->lock);
}

void xsim_guest_activity(struct xsim_guest *g, unsigned int c, uint64_t host)
{
	int32_t pid = 2000 + (int32_t)(host % 64);
	char comm[16];

	if (late_due(&g->cpu[c], host))
		put_switch(g, c, host, true);
	trace_functions(g, c, host);
	if (!wants(g, EV_WAKEUP))
		return;
	snprintf(comm, sizeof(comm), "kworker/%u", pid % 8);
	put_wakeup(g, c, host, task_pid(g, c), pid, comm, (int32_t)c);
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

/* Records in @len bytes of a page's data, as append() wrote them. */
static uint64_t page_events(const uint8_t *data, unsigned int len)
{
	uint64_t n = 0;

	for (unsigned int off = 0; off + 4 <= len;) {
		uint32_t h, type;

		memcpy(&h, data + off, 4);
		type = h & 31;
		if (type == 30) {		/* TIME_EXTEND: 8 bytes, no record */
			off += 8;
			continue;
		}
		if (!type || type > 28)
			break;			/* append() writes no other kind */
		off += 4 + type * 4;
		n++;
	}
	return n;
}

/* The trace file was emptied: drop every page the readers have not taken,
 * as the kernel's ring-buffer reset does, then say so by its text. */
static void reset_rings(struct xsim_guest *g)
{
	uint8_t page[PAGE];

	for (unsigned int c = 0; c < g->nvcpus; c++) {
		struct gcpu *gc = &g->cpu[c];

		pthread_mutex_lock(&gc->lock);
		/* events and pages count what readers got: these never did */
		if (gc->open)
			gc->events -= page_events(gc->page + PAGE_HDR, gc->len);
		gc->open = false;
		gc->len = 0;
		gc->missed = false;
		while (read(gc->fd, page, PAGE) == PAGE) {
			uint64_t commit;

			memcpy(&commit, page + 8, 8);
			gc->events -= page_events(page + PAGE_HDR,
						  (unsigned int)(commit & 0xffff));
			if (gc->pages)
				gc->pages--;
		}
		pthread_mutex_unlock(&gc->lock);
	}
	xsim_truth(g->h, "greset domid=%u\n", g->domid);
	xsim_put_file(g->dir, "trace", TRACE_TEXT);
}

/* buffer_size_kb: the FIFO as booted, else a ring of its size per CPU. */
static void refresh_buffer(struct xsim_guest *g)
{
	char buf[32];
	unsigned long kb;
	unsigned int pages = 0, got = 0;

	get_file(g->dir, "buffer_size_kb", buf, sizeof(buf));
	buf[strcspn(buf, "\n")] = '\0';
	/* empty: libtracefs truncated it and is about to write the size */
	if (!buf[0] || !strcmp(buf, g->buffer_kb))
		return;
	snprintf(g->buffer_kb, sizeof(g->buffer_kb), "%s", buf);
	kb = strtoul(buf, NULL, 10);
	if (strcmp(buf, BOOT_BUFFER_KB) && kb) {
		/* the kernel's ring has two pages at least */
		pages = (unsigned int)((kb * 1024 + PAGE - 1) / PAGE);
		pages = pages < 2 ? 2 : pages;
	}
	for (unsigned int c = 0; c < g->nvcpus; c++) {
		struct gcpu *gc = &g->cpu[c];
		int sz;

		pthread_mutex_lock(&gc->lock);
		/* the FIFO holds the ring: it cannot shrink below what it has */
		fcntl(gc->fd, F_SETPIPE_SZ, pages ? pages * PAGE : FIFO_SIZE);
		sz = fcntl(gc->fd, F_GETPIPE_SZ);
		gc->ring_pages = pages && sz > 0 && (unsigned int)sz / PAGE < pages ?
				 (unsigned int)sz / PAGE : pages;
		got = gc->ring_pages;
		pthread_mutex_unlock(&gc->lock);
	}
	xsim_truth(g->h, "gbuffer domid=%u size_kb=%s ring_pages=%u%s\n", g->domid, buf,
		   got, pages ? (got == pages ? "" : " (the FIFO could not hold more)") :
		   " (the boot FIFO: drops the newest when full)");
}

/* per_cpu/cpuN/stats "overrun:", when it changed. */
static void show_overrun(struct xsim_guest *g)
{
	for (unsigned int c = 0; c < g->nvcpus; c++) {
		struct gcpu *gc = &g->cpu[c];
		char name[64], text[96];
		uint64_t n;

		pthread_mutex_lock(&gc->lock);
		n = gc->overrun;
		pthread_mutex_unlock(&gc->lock);
		if (n == gc->overrun_shown)
			continue;
		gc->overrun_shown = n;
		snprintf(name, sizeof(name), "per_cpu/cpu%u/stats", c);
		snprintf(text, sizeof(text), "entries: 0\noverrun: %lu\n", (unsigned long)n);
		xsim_put_file(g->dir, name, text);
	}
}

/* Re-read what libtracefs may have written. */
static void refresh(struct xsim_guest *g)
{
	char buf[256], name[128];
	unsigned int en = 0;
	bool all;

	refresh_buffer(g);

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
	/* filters first: an event enabled with its filter is never
	 * produced without it */
	refresh_filters(g);
	__atomic_store_n(&g->enabled, en, __ATOMIC_RELAXED);
	refresh_tracer(g);
	get_file(g->dir, "trace", buf, sizeof(buf));
	if (!buf[0])
		reset_rings(g);
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
	show_overrun(g);
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
		xsim_truth(g->h, "gstats domid=%u vcpu=%u events=%lu pages=%lu dropped_pages=%lu "
			   "filtered=%lu functions=%lu overrun=%lu overrun_pages=%lu\n",
			   g->domid, c, (unsigned long)gc->events,
			   (unsigned long)gc->pages, (unsigned long)gc->dropped,
			   (unsigned long)gc->filtered, (unsigned long)gc->funcs,
			   (unsigned long)gc->overrun, (unsigned long)gc->overrun_pages);
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
	pthread_mutex_destroy(&g->flock);
	free(g->dir);
	free(g);
}
