// SPDX-License-Identifier: GPL-2.0
/*
 * record -A: the host's side of a guest agent session, as trace-cmd's
 * `record -A` runs it, into a guest file written by tdat.
 *
 * The agent sends its metadata as a version 6 trace.dat without data. We
 * do not store those bytes and append the pages at the end (trace-cmd's
 * way: per-CPU temp files, assembled after CLOSE). We parse the metadata
 * and give it to a tdat writer (header page, formats, kallsyms, printk,
 * cmdlines, options), then hand every page to tdat_write_page() as it
 * arrives. So the guest file is a valid trace.dat from the first page on:
 * a guest, an agent or a recorder that dies mid-capture leaves a file
 * readable up to its last batch, nothing is copied twice, and memory stays
 * one read buffer per CPU plus tdat's batch, whatever the capture's length.
 * It also means the guest file can be version 7 while the agent sends 6.
 *
 * One thread per guest drains its per-CPU streams (poll over all of them
 * and the control stream); the record command's own loop is not slowed
 * down by guests, and a guest that stalls or dies stalls only its thread.
 *
 * Time sync (tsync_host): the protocols go out in TRACE_REQ; the one the
 * agent picks gets its own stream and, for a guest that chose one, a
 * second thread that samples (start, every interval, end) while the
 * drain thread keeps the pages flowing (protocol xen's markers arrive in
 * those pages while the agent answers). Pages go to tsync_host_page() on
 * the drain thread, hypervisor records to tsync_host_record() on the
 * record command's thread; the solve and the TIME_SHIFT come after the
 * guest file is finished, so a failed sync never costs recorded data.
 */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <xenctrl.h>
#include <xenstore.h>

#include "recorder-internal.h"
#include "tcx-util.h"
#include "tdat.h"
#include "tmsg.h"
#include "tsync.h"

#define META_MAX	(512u << 20)	/* kallsyms of a big kernel is ~10 MiB */
#define READ_CHUNK	(256u << 10)	/* per stream and read call */
#define ROUND_MAX	(1u << 20)	/* per stream per round: fairness */
#define POLL_MS		100
#define FLUSH_NS	1000000000ull	/* pages to disk at least every second */
#define PUBLISH_NS	100000000ull	/* counters for status lines */
#define ANSWER_MS	30000		/* TRACE_RESP: the agent sets tracing up */
#define CONNECT_MS	5000
#define CLOSE_MS	10000		/* CLOSE to the last page and CLOSE_RESP */
#define MAX_PROTOS	2		/* xen, ptp */
#define TSC_MODE_ALWAYS_EMULATE	1	/* xen/include/asm-x86/time.h */

struct stream {
	struct tmsg_transport *t;
	uint8_t *buf;		/* READ_CHUNK + one page */
	size_t fill;
	bool open;
	uint64_t bytes;
};

struct rec_guest {
	struct rec_guest_spec sp;
	char path[512];
	struct tmsg_transport *ctl;
	struct stream *st;
	int cpus;
	uint32_t page_size;
	uint64_t traceid;
	struct tdat_writer *w;
	FILE *log;
	int close_ms;

	pthread_t th;
	bool started;
	int wakefd;
	atomic_int stop;

	/* shared with the thread: under lock */
	pthread_mutex_t lock;
	struct rec_guest_summary sum;
	uint64_t t0_ns;

	/* time sync: set up by rec_guest_open(), then the tsync thread's */
	uint64_t host_traceid;		/* sent in TRACE_REQ: TIME_SHIFT's peer */
	const char *offer[MAX_PROTOS];
	uint32_t noffer;
	struct tmsg_transport *tst;	/* the time sync stream */
	struct tsync_host *tsh;
	bool xen_ok;			/* @tsh runs protocol xen: records wanted */
	struct tsync_scale scale;
	bool pv, vtsc;
	uint32_t incarnation;		/* Xen counts the domain's restores */
	uint32_t cpu_khz;
	uint32_t mult, shift;		/* TSC2NSEC: the bound in ns */
	uint16_t print_id;
	bool has_print;
	int long_size;
	double interval;
	bool tbroken;			/* a sample failed: no more */
	char tnote[160];		/* why not, or what went wrong */
	pthread_t tth;
	bool tstarted;
	pthread_mutex_t tlock;
	pthread_cond_t tcond;		/* CLOCK_MONOTONIC */
	bool treq_stop;			/* under tlock */
	atomic_bool gone;		/* the drain thread saw the guest go */
	atomic_bool done;		/* the drain thread (the last) finished */
};

/* ---- the -A argument ---------------------------------------------------- */

static bool all_digits(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* tcx_parse_uintn() into the unsigned int fields of a spec (max fits) */
static int parse_u32(const char *s, size_t n, unsigned long max, unsigned int *out)
{
	unsigned long v;
	int ret = tcx_parse_uintn(s, n, max, &v);

	if (!ret)
		*out = (unsigned int)v;
	return ret;
}

/* A file name part: letters, digits, '.', '_', '-', '@', ':'; no "..". */
static void safe_name(char *dst, size_t len, const char *src, size_t n)
{
	size_t i;

	if (n >= len)
		n = len - 1;
	for (i = 0; i < n; i++) {
		char c = src[i];

		dst[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '.' || c == '_' ||
			 c == '-' || c == ':' ? c : '_';
	}
	dst[i] = 0;
	if (dst[0] == '.')
		dst[0] = '_';
}

int rec_guest_parse_spec(const char *spec, struct rec_guest_spec *out)
{
	const char *at, *colon, *host = spec, *port = NULL;
	size_t hlen, slen;

	memset(out, 0, sizeof(*out));
	if (!spec || !*spec)
		return tcx_fail(-EINVAL, "-A: empty guest");
	slen = strlen(spec);
	if (slen > 255)
		return tcx_fail(-EINVAL, "-A: guest \"%.40s...\" is too long", spec);
	at = strrchr(spec, '@');
	if (at) {
		/* name@cid[:port]: vsock with a name, as trace-cmd */
		const char *c = at + 1, *p = strchr(c, ':');
		size_t clen = p ? (size_t)(p - c) : strlen(c);

		out->kind = REC_GUEST_VSOCK;
		out->port = TMSG_AGENT_PORT;
		if (at == spec || parse_u32(c, clen, 0xffffffffUL, &out->cid) ||
		    (p && parse_u32(p + 1, strlen(p + 1), 0xffffffffUL, &out->port)))
			return tcx_fail(-EINVAL,
				    "-A %s: expected name@cid[:port]", spec);
		safe_name(out->name, sizeof(out->name), spec, (size_t)(at - spec));
		return 0;
	}
	if (spec[0] == '[') {
		/* [v6 address][:port] */
		const char *end = strchr(spec, ']');

		if (!end || end == spec + 1 || (end[1] && end[1] != ':'))
			return tcx_fail(-EINVAL, "-A %s: expected [address]:port", spec);
		host = spec + 1;
		hlen = (size_t)(end - host);
		port = end[1] ? end + 2 : NULL;
	} else {
		colon = strrchr(spec, ':');
		/* two colons and no brackets: a bare IPv6 address */
		if (colon && strchr(spec, ':') != colon && !all_digits(colon + 1, strlen(colon + 1)))
			colon = NULL;
		hlen = colon ? (size_t)(colon - spec) : slen;
		port = colon ? colon + 1 : NULL;
	}
	if (!port && all_digits(host, hlen) && host == spec) {
		/* a bare number: a Xen domain id */
		out->kind = REC_GUEST_XEN;
		out->by_domid = true;
		if (parse_u32(host, hlen, 0x7fef, &out->domid))
			return tcx_fail(-EINVAL, "-A %s: not a domain id", spec);
		snprintf(out->name, sizeof(out->name), "%s", spec);
		return 0;
	}
	if (!port && host == spec && !memchr(host, '.', hlen) && !memchr(host, ':', hlen)) {
		/* a bare name: a Xen domain by name */
		out->kind = REC_GUEST_XEN;
		safe_name(out->name, sizeof(out->name), spec, slen);
		snprintf(out->xen_name, sizeof(out->xen_name), "%s", spec);
		return 0;
	}
	out->port = TMSG_AGENT_PORT;
	if (port && parse_u32(port, strlen(port), 65535, &out->port))
		return tcx_fail(-EINVAL, "-A %s: bad port \"%s\"", spec, port);
	if (hlen == 0 || hlen >= sizeof(out->host))
		return tcx_fail(-EINVAL, "-A %s: no host", spec);
	if (all_digits(host, hlen)) {
		/* cid:port, as trace-cmd */
		out->kind = REC_GUEST_VSOCK;
		if (parse_u32(host, hlen, 0xffffffffUL, &out->cid))
			return tcx_fail(-EINVAL, "-A %s: bad cid", spec);
		snprintf(out->name, sizeof(out->name), "%.*s", (int)hlen, host);
		return 0;
	}
	if (!out->port)
		return tcx_fail(-EINVAL, "-A %s: port 0", spec);
	out->kind = REC_GUEST_TCP;
	memcpy(out->host, host, hlen);
	out->host[hlen] = 0;
	/* trace-cmd names a network guest by its address */
	safe_name(out->name, sizeof(out->name), host, hlen);
	return 0;
}

char *rec_guest_file_path(const char *output, const char *name)
{
	const char *slash = strrchr(output, '/');
	const char *base = slash ? slash + 1 : output;
	const char *dot = strrchr(base, '.');
	size_t stem = dot && dot != base ? (size_t)(dot - output) : strlen(output);
	size_t len = strlen(output) + strlen(name) + 2;
	char *p = malloc(len);

	if (p)
		snprintf(p, len, "%.*s-%s%s", (int)stem, output, name, output + stem);
	return p;
}

/* ---- finding the agent ---------------------------------------------------- */

/* The value of xenstore node @path, NUL-terminated, or NULL. */
static char *xs_get(struct xs_handle *xs, const char *path)
{
	unsigned int n = 0;
	char *v = xs_read(xs, XBT_NULL, path, &n);
	char *s;

	if (!v)
		return NULL;
	s = malloc(n + 1);
	if (s) {
		memcpy(s, v, n);
		s[n] = 0;
	}
	free(v);
	return s;
}

static int xen_resolve(struct rec_guest_spec *sp)
{
	struct xs_handle *xs = xs_open(0);
	char path[64], *v;
	int ret = 0;

	if (!xs)
		return tcx_fail(-EIO, "-A %s: cannot open xenstore (%s): "
			    "is this dom0 of a Xen host?", sp->name, strerror(errno));
	if (sp->by_domid) {
		snprintf(path, sizeof(path), "/local/domain/%u/name", sp->domid);
		v = xs_get(xs, path);
		if (!v) {
			ret = tcx_fail(-ENOENT, "-A %u: no domain %u is running "
				   "(xenstore has no /local/domain/%u)", sp->domid,
				   sp->domid, sp->domid);
		} else {
			if (*v)
				safe_name(sp->name, sizeof(sp->name), v, strlen(v));
			free(v);
		}
	} else {
		unsigned int n = 0;
		char **dir = xs_directory(xs, XBT_NULL, "/local/domain", &n);
		bool found = false;

		for (unsigned int i = 0; dir && i < n && !found; i++) {
			unsigned int id;

			if (parse_u32(dir[i], strlen(dir[i]), 0x7fef, &id))
				continue;
			snprintf(path, sizeof(path), "/local/domain/%u/name", id);
			v = xs_get(xs, path);
			if (v && !strcmp(v, sp->xen_name)) {
				sp->domid = id;
				found = true;
			}
			free(v);
		}
		free(dir);
		if (!found)
			ret = tcx_fail(-ENOENT, "-A %s: no running domain is named "
				   "\"%s\" (see xl list)", sp->xen_name, sp->xen_name);
	}
	xs_close(xs);
	return ret;
}

static int xen_connect(struct rec_guest *g, int timeout_ms)
{
	struct tmsg_xs_agent a;
	char path[TMSG_VCHAN_PATH_MAX + 1];
	uint64_t end;
	int ret;

	ret = xen_resolve(&g->sp);
	if (ret)
		return ret;
	ret = tmsg_xs_lookup(g->sp.domid, &a);
	if (ret == -ENOENT)
		return tcx_fail(-ENOENT, "guest %s (domain %u) runs no agent: "
			    "start `trace-cmd-xen agent --xen` in it", g->sp.name, g->sp.domid);
	if (ret)
		return tcx_fail(ret, "guest %s: %s", g->sp.name, tcx_error());
	if (!a.ready)
		return tcx_fail(-ENOTCONN, "guest %s (domain %u): its agent is "
			    "not ready (stopped, or still starting)", g->sp.name, g->sp.domid);
	ret = tmsg_vchan_path(path, sizeof(path), g->sp.domid, a.port);
	if (ret)
		return tcx_fail(ret, "guest %s: %s", g->sp.name, tcx_error());
	/* Between two sessions the agent makes its control vchan anew. */
	end = tcx_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	while (!(g->ctl = tmsg_vchan_client(g->sp.domid, path))) {
		if (tcx_now_ns() >= end)
			return tcx_fail(-ECONNREFUSED, "guest %s (domain %u): the "
				    "agent advertised in xenstore does not answer on %s (%s): "
				    "is it still running, or serving another recorder?", g->sp.name, g->sp.domid, path,
				    tcx_error());
		usleep(50 * 1000);
	}
	return 0;
}

static int net_connect(struct rec_guest *g, int timeout_ms)
{
	char port[16], name[64];
	int fd;

	snprintf(port, sizeof(port), "%u", g->sp.port);
	if (g->sp.kind == REC_GUEST_VSOCK) {
		fd = tmsg_vsock_connect(g->sp.cid, g->sp.port);
		snprintf(name, sizeof(name), "vsock %u:%u", g->sp.cid, g->sp.port);
	} else {
		fd = tmsg_tcp_connect(g->sp.host, port, timeout_ms);
		snprintf(name, sizeof(name), "tcp %.40s:%u", g->sp.host, g->sp.port);
	}
	if (fd < 0)
		return tcx_fail(fd, "guest %s: cannot connect to its agent: %s",
			    g->sp.name, tcx_error());
	g->ctl = tmsg_fd_transport(fd, name);
	if (!g->ctl)
		return tcx_fail(-ENOMEM, "out of memory");
	return 0;
}

static int open_streams(struct rec_guest *g, const struct tmsg_trace_resp *r,
			struct tmsg_transport **t)
{
	if (g->sp.kind == REC_GUEST_XEN)
		return tmsg_host_open_streams(NULL, g->sp.domid, r, t);
	if (g->sp.kind == REC_GUEST_TCP)
		return tmsg_host_open_streams(g->sp.host, 0, r, t);
	for (uint32_t c = 0; c < r->cpus; c++) {
		char name[64];
		int fd = tmsg_vsock_connect(g->sp.cid, r->ports[c]);

		snprintf(name, sizeof(name), "vsock %u:%u cpu%u", g->sp.cid, r->ports[c], c);
		t[c] = fd < 0 ? NULL : tmsg_fd_transport(fd, name);
		if (!t[c]) {
			while (c--) {
				tmsg_close(t[c]);
				t[c] = NULL;
			}
			return -EIO;
		}
	}
	return 0;
}

/* ---- the metadata: a version 6 trace.dat without data ------------------- */

struct meta_buf {
	uint8_t *b;
	size_t len, cap;
};

static int meta_sink(void *arg, const void *buf, size_t len)
{
	struct meta_buf *m = arg;

	if (m->len + len > m->cap) {
		size_t cap = m->cap ? m->cap : 1 << 16;
		uint8_t *b;

		while (cap < m->len + len)
			cap *= 2;
		b = realloc(m->b, cap);
		if (!b)
			return -ENOMEM;
		m->b = b;
		m->cap = cap;
	}
	memcpy(m->b + m->len, buf, len);
	m->len += len;
	return 0;
}

struct rd {
	const uint8_t *b;
	size_t len, pos;
	const char *bad;	/* what was cut or malformed */
};

static uint64_t rd_num(struct rd *r, int n, const char *what)
{
	uint64_t v = 0;

	if (r->bad)
		return 0;
	if (r->len - r->pos < (size_t)n) {
		r->bad = what;
		return 0;
	}
	/* little endian only: checked at the start */
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | r->b[r->pos + i];
	r->pos += n;
	return v;
}

/* @n bytes at the cursor, copied NUL-terminated (malloc'ed), or NULL. */
static char *rd_text(struct rd *r, uint64_t n, const char *what)
{
	char *s;

	if (r->bad)
		return NULL;
	if (r->len - r->pos < n) {
		r->bad = what;
		return NULL;
	}
	s = malloc(n + 1);
	if (!s) {
		r->bad = "out of memory";
		return NULL;
	}
	memcpy(s, r->b + r->pos, n);
	s[n] = 0;
	r->pos += n;
	return s;
}

static void rd_expect(struct rd *r, const char *s, size_t n, const char *what)
{
	if (r->bad)
		return;
	if (r->len - r->pos < n || memcmp(r->b + r->pos, s, n))
		r->bad = what;
	else
		r->pos += n;
}

/* "[clock]" out of a trace_clock text, into @clock. */
static void clock_name(const uint8_t *d, size_t n, char *clock, size_t len)
{
	const uint8_t *o = memchr(d, '[', n), *c;

	if (!o)
		return;
	c = memchr(o, ']', n - (size_t)(o - d));
	if (c && c > o + 1 && (size_t)(c - o - 1) < len) {
		memcpy(clock, o + 1, (size_t)(c - o - 1));
		clock[c - o - 1] = 0;
	}
}

struct meta_opts {
	char clock[32];
	uint32_t page_size;
	int cpus;
	uint64_t traceid;
	int long_size;
	uint16_t print_id;		/* ftrace/print: the markers' event */
	bool has_print;
};

/* The id of ftrace's print event (trace_marker writes), from its format. */
static void print_format(const char *fmt, struct meta_opts *mo)
{
	const char *id;
	char *end;
	unsigned long v;

	if (strncmp(fmt, "name: print\n", 12))
		return;
	id = strstr(fmt, "\nID: ");
	if (!id)
		return;
	v = strtoul(id + 5, &end, 10);
	if (end != id + 5 && v && v <= UINT16_MAX) {
		mo->print_id = (uint16_t)v;
		mo->has_print = true;
	}
}

/*
 * Walk the metadata once. With @w NULL only collect what tdat_open()
 * needs (@mo); with @w feed everything to the writer.
 */
static int meta_walk(const uint8_t *b, size_t len, struct tdat_writer *w,
		     struct meta_opts *mo, bool keep_tsc2nsec)
{
	struct rd r = { .b = b, .len = len };
	uint64_t n, m;
	char *s, *sys;
	int ret = 0;

	rd_expect(&r, "\x17\x08\x44tracing", 10, "the trace.dat magic");
	if (!r.bad && r.len - r.pos >= 2 && memcmp(b + r.pos, "6", 2))
		return tcx_fail(-EPROTO, "the agent sent trace.dat version \"%.2s\" "
			    "metadata; only 6 is understood", b + r.pos);
	rd_expect(&r, "6", 2, "the version");
	if (!r.bad && r.pos < len && b[r.pos])
		return tcx_fail(-EPROTO, "the agent's metadata is big endian: "
			    "not supported");
	if (!r.bad && r.len - r.pos >= 2)
		mo->long_size = b[r.pos + 1];
	r.pos += r.bad ? 0 : 2;			/* endian, long size */
	mo->page_size = (uint32_t)rd_num(&r, 4, "the page size");
	rd_expect(&r, "header_page", 12, "header_page");
	n = rd_num(&r, 8, "header_page");
	s = rd_text(&r, n, "header_page");
	if (s && w)
		ret = tdat_set_header_page(w, s, n);
	free(s);
	rd_expect(&r, "header_event", 13, "header_event");
	n = rd_num(&r, 8, "header_event");
	free(rd_text(&r, n, "header_event"));	/* readers ignore it too */
	for (n = rd_num(&r, 4, "ftrace formats"); n && !r.bad && !ret; n--) {
		m = rd_num(&r, 8, "an ftrace format");
		s = rd_text(&r, m, "an ftrace format");
		if (s)
			print_format(s, mo);
		if (s && w)
			ret = tdat_add_ftrace_format(w, s);
		free(s);
	}
	for (n = rd_num(&r, 4, "event systems"); n && !r.bad && !ret; n--) {
		const uint8_t *nul = memchr(b + r.pos, 0, len - r.pos);

		if (!nul) {
			r.bad = "a system name";
			break;
		}
		sys = rd_text(&r, (size_t)(nul - (b + r.pos)), "a system name");
		r.pos++;
		for (m = rd_num(&r, 4, "event formats"); m && !r.bad && !ret; m--) {
			uint64_t flen = rd_num(&r, 8, "an event format");

			s = rd_text(&r, flen, "an event format");
			if (s && w) {
				ret = tdat_add_event_format(w, sys, s);
				if (ret == -EEXIST)
					ret = 0;	/* the first of a duplicate id wins */
			}
			free(s);
		}
		free(sys);
	}
	n = rd_num(&r, 4, "kallsyms");
	s = rd_text(&r, n, "kallsyms");
	if (s && w && !ret)
		ret = tdat_set_kallsyms(w, s, n);
	free(s);
	n = rd_num(&r, 4, "printk formats");
	s = rd_text(&r, n, "printk formats");
	if (s && w && !ret)
		ret = tdat_set_printk(w, s, n);
	free(s);
	n = rd_num(&r, 8, "cmdlines");
	s = rd_text(&r, n, "cmdlines");
	if (s && w && !ret)
		tdat_add_cmdlines(w, s, n);
	free(s);
	mo->cpus = (int)rd_num(&r, 4, "the CPU count");
	rd_expect(&r, "options  ", 10, "the options");
	while (!r.bad && !ret) {
		uint16_t id = (uint16_t)rd_num(&r, 2, "an option");
		uint32_t sz;
		const uint8_t *d;

		if (!id || r.bad)
			break;
		sz = (uint32_t)rd_num(&r, 4, "an option");
		if (r.bad || r.len - r.pos < sz) {
			r.bad = "an option";
			break;
		}
		d = b + r.pos;
		r.pos += sz;
		switch (id) {
		case TDAT_OPT_TRACECLOCK:
			clock_name(d, sz, mo->clock, sizeof(mo->clock));
			break;
		case TDAT_OPT_TRACEID:
			if (sz >= 8)
				memcpy(&mo->traceid, d, 8);
			break;
		case TDAT_OPT_CPUCOUNT:
		case TDAT_OPT_BUFFER:	/* instances: the agent sends none */
			break;
		case TDAT_OPT_UNAME:
		case TDAT_OPT_VERSION:
			if (w && sz && !d[sz - 1])
				ret = id == TDAT_OPT_UNAME ? tdat_set_uname(w, (const char *)d)
							   : tdat_set_version(w, (const char *)d);
			break;
		case TDAT_OPT_TSC2NSEC:
			if (w && sz >= 16 && keep_tsc2nsec) {
				uint32_t mult, shift;
				uint64_t off;

				memcpy(&mult, d, 4);
				memcpy(&shift, d + 4, 4);
				memcpy(&off, d + 8, 8);
				ret = tdat_set_tsc2nsec(w, mult, shift, off);
			}
			break;
		default:
			/* v7 section ids cannot be in v6 metadata; the rest as is */
			if (w && (id < 15 || id > 22))
				ret = tdat_add_option(w, id, d, sz);
			break;
		}
	}
	if (r.bad)
		return tcx_fail(-EPROTO, "the agent's metadata is cut or malformed "
			    "at %s (offset %zu of %zu bytes)", r.bad, r.pos, len);
	if (ret)
		return tcx_fail(ret, "the agent's metadata: %s", tcx_error());
	return 0;
}

/* ---- the drain thread ----------------------------------------------------- */

static void note(struct rec_guest *g, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&g->lock);
	if (!g->sum.note[0]) {
		va_start(ap, fmt);
		vsnprintf(g->sum.note, sizeof(g->sum.note), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&g->lock);
}

/* The whole pages in the stream's buffer into the file. */
static void put_pages(struct rec_guest *g, int cpu, struct stream *s, uint64_t *bad)
{
	size_t ps = g->page_size, off = 0;

	for (; s->fill - off >= ps; off += ps) {
		int ret;

		/* a page the writer refuses may still carry markers */
		if (g->tsh)
			tsync_host_page(g->tsh, s->buf + off, ps, (uint32_t)cpu);
		if (g->sum.error)
			continue;	/* the file failed: drain, drop */
		ret = tdat_write_page(g->w, cpu, s->buf + off);
		if (ret == -EBADMSG || ret == -ERANGE) {
			/* one bad page from the guest: skip it, keep the rest */
			if (ret == -ERANGE)
				(*bad)++;
			continue;
		}
		if (ret) {
			pthread_mutex_lock(&g->lock);
			g->sum.error = ret;
			snprintf(g->sum.note, sizeof(g->sum.note), "%.120s: %.120s",
				 g->path, tcx_error());
			pthread_mutex_unlock(&g->lock);
		}
	}
	if (off) {
		s->fill -= off;
		memmove(s->buf, s->buf + off, s->fill);
	}
}

/* Read what stream @cpu has now; 1 progress, 0 nothing, -1 it ended. */
static int pump(struct rec_guest *g, int cpu, uint64_t *bytes, uint64_t *bad)
{
	struct stream *s = &g->st[cpu];
	size_t round = 0;

	while (round < ROUND_MAX) {
		ssize_t n = s->t->ops->read(s->t, s->buf + s->fill, READ_CHUNK + g->page_size - s->fill);

		if (n == -EAGAIN || n == -EINTR)
			return round > 0;
		if (n <= 0) {
			s->open = false;
			if (n < 0)
				note(g, "cpu%d: %s", cpu, strerror((int)-n));
			return -1;
		}
		s->fill += (size_t)n;
		s->bytes += (uint64_t)n;
		*bytes += (uint64_t)n;
		round += (size_t)n;
		put_pages(g, cpu, s, bad);
	}
	return 1;
}

static void publish(struct rec_guest *g, uint64_t bytes, uint64_t bad)
{
	struct tdat_stats st;

	tdat_get_stats(g->w, -1, &st);
	pthread_mutex_lock(&g->lock);
	g->sum.bytes = bytes;
	g->sum.pages = st.pages;
	g->sum.events = st.events;
	g->sum.missed = st.missed;
	g->sum.bad_pages = st.bad_pages + bad;
	pthread_mutex_unlock(&g->lock);
}

/* The drain thread's state between its steps. */
struct drain {
	struct rec_guest	*g;
	struct pollfd		*pfd;
	struct tmsg		*m;
	uint64_t		bytes, bad, deadline;
	uint64_t		next_flush, next_publish;
	bool			closing, ctl_open, resp, lost, dirty;
	int			nopen;
	int			ctl_at;
};

/* Every open stream once; whether any moved. */
static bool pump_all(struct drain *d)
{
	struct rec_guest *g = d->g;
	bool progress = false;

	for (int c = 0; c < g->cpus; c++) {
		int r;

		if (!g->st[c].open)
			continue;
		r = pump(g, c, &d->bytes, &d->bad);
		if (r < 0) {
			d->nopen--;
			/* before CLOSE: the guest or its agent went away */
			d->lost |= !d->closing;
			if (d->lost)
				atomic_store(&g->gone, true);
		}
		progress |= r != 0;
	}
	return progress;
}

/* rec_guest_stop() asked: CLOSE, then wait so long for the end of data. */
static void maybe_close(struct drain *d)
{
	struct rec_guest *g = d->g;

	if (d->closing || !atomic_load(&g->stop))
		return;
	d->closing = true;
	d->deadline = tcx_now_ns() + (uint64_t)g->close_ms * 1000000ull;
	if (d->ctl_open && tmsg_send_cmd(g->ctl, TMSG_CLOSE)) {
		note(g, "CLOSE: %s", tcx_error());
		d->ctl_open = false;
	}
}

/* The periodic flush and counters; false once the CLOSE deadline passed. */
static bool tick(struct drain *d, uint64_t now)
{
	struct rec_guest *g = d->g;

	if (now >= d->next_flush) {
		if (!g->sum.error)
			tdat_flush(g->w);
		d->dirty = false;
		d->next_flush = now + FLUSH_NS;
	}
	if (now >= d->next_publish) {
		publish(g, d->bytes, d->bad);
		d->next_publish = now + PUBLISH_NS;
	}
	if (d->closing && now >= d->deadline) {
		note(g, "no end of data %d s after CLOSE: stopped waiting", g->close_ms / 1000);
		return false;
	}
	return true;
}

/* The fds to wait on: the open streams, the control channel, the wakeup. */
static int poll_set(struct drain *d)
{
	struct rec_guest *g = d->g;
	int np = 0;

	for (int c = 0; c < g->cpus; c++)
		if (g->st[c].open)
			d->pfd[np++] = (struct pollfd){ .fd = g->st[c].t->ops->fd(g->st[c].t),
							.events = POLLIN };
	d->ctl_at = -1;
	if (d->ctl_open) {
		d->ctl_at = np;
		d->pfd[np++] = (struct pollfd){ .fd = g->ctl->ops->fd(g->ctl), .events = POLLIN };
	}
	d->pfd[np++] = (struct pollfd){ .fd = g->wakefd, .events = POLLIN };
	return np;
}

/* After the poll: the wakeup, the streams' events, the agent's answer. */
static void after_poll(struct drain *d, int np)
{
	struct rec_guest *g = d->g;

	if (d->pfd[np - 1].revents) {
		uint64_t v;

		if (read(g->wakefd, &v, sizeof(v)) < 0)
			v = 0;
	}
	/* vchan: an event seen but no data yet must be acknowledged */
	for (int c = 0, i = 0; c < g->cpus; c++) {
		struct tmsg_transport *t = g->st[c].t;

		if (!g->st[c].open)
			continue;
		if (d->pfd[i++].revents)
			t->ops->wait(t, POLLIN, 0);
	}
	if (d->ctl_at >= 0 && d->pfd[d->ctl_at].revents) {
		int ret = tmsg_recv(g->ctl, d->m, 0);

		if (!ret && d->m->cmd == TMSG_CLOSE_RESP && d->closing) {
			d->resp = true;
		} else if (ret && ret != -ETIMEDOUT) {
			/* the agent is gone: its streams end too */
			d->ctl_open = false;
			d->lost |= !d->closing;
			if (d->lost)
				atomic_store(&g->gone, true);
		}
	}
}

/* The last counters, and why the guest's side ended if it ended early. */
static void drain_done(struct drain *d)
{
	struct rec_guest *g = d->g;

	if (d->nopen)
		for (int c = 0; c < g->cpus; c++)
			if (g->st[c].open) {
				g->st[c].open = false;
				d->lost = true;
			}
	if (!g->sum.error)
		tdat_flush(g->w);
	publish(g, d->bytes, d->bad);
	pthread_mutex_lock(&g->lock);
	for (int c = 0; c < g->cpus; c++)
		/* a page cut short: the agent died mid-page */
		g->sum.cut_bytes += g->st[c].fill;
	g->sum.seconds = (double)(tcx_now_ns() - g->t0_ns) / 1e9;
	g->sum.died = d->lost || !d->resp;
	if (g->sum.died && !g->sum.note[0])
		snprintf(g->sum.note, sizeof(g->sum.note), "%s",
			 d->lost ? "the guest's agent went away before the end" :
				   "no CLOSE_RESP from the agent");
	pthread_mutex_unlock(&g->lock);
}

static void *drain_main(void *arg)
{
	struct rec_guest *g = arg;
	struct drain d = {
		.g = g, .pfd = calloc((size_t)g->cpus + 2, sizeof(*d.pfd)),
		.m = malloc(sizeof(*d.m)), .next_flush = tcx_now_ns() + FLUSH_NS,
		.ctl_open = true, .nopen = g->cpus,
	};

	if (!d.pfd || !d.m) {
		note(g, "out of memory");
		d.nopen = 0;	/* no loop: straight to the summary */
	}
	while (d.nopen || (d.closing && d.ctl_open && !d.resp)) {
		bool progress = pump_all(&d);
		uint64_t now;
		int np;

		maybe_close(&d);
		now = tcx_now_ns();
		if (!tick(&d, now))
			break;
		if (progress) {
			d.dirty = true;
			continue;
		}
		if (d.dirty && !g->sum.error) {
			/* a quiet moment: what came is on disk, readable */
			tdat_flush(g->w);
			d.dirty = false;
			d.next_flush = now + FLUSH_NS;
		}
		np = poll_set(&d);
		if (poll(d.pfd, (nfds_t)np, POLL_MS) > 0)
			after_poll(&d, np);
	}
	drain_done(&d);
	free(d.pfd);
	free(d.m);
	atomic_store(&g->done, true);
	return NULL;
}

/* ---- time sync -------------------------------------------------------------- */

static void tnote(struct rec_guest *g, const char *fmt, ...)
{
	va_list ap;

	if (g->tnote[0])
		return;		/* the first reason is the one that counts */
	va_start(ap, fmt);
	vsnprintf(g->tnote, sizeof(g->tnote), fmt, ap);
	va_end(ap);
}

/* The protocols of --tsync (all without one), or "none". */
static int parse_protos(struct rec_guest *g, const char *spec)
{
	int n = tsync_parse_offer(spec, g->offer, MAX_PROTOS);

	g->noffer = n > 0 ? (uint32_t)n : 0;
	if (n < 0)
		return tcx_fail(n, "--tsync %s: %s", spec, tcx_error());
	return 0;
}

static void drop_offer(struct rec_guest *g, const char *name)
{
	uint32_t j = 0;

	for (uint32_t i = 0; i < g->noffer; i++)
		if (strcmp(g->offer[i], name))
			g->offer[j++] = g->offer[i];
	g->noffer = j;
}

static bool offered(const struct rec_guest *g, const char *name)
{
	for (uint32_t i = 0; i < g->noffer; i++)
		if (!strcmp(g->offer[i], name))
			return true;
	return false;
}

/* libxenctrl's messages stay out of the recorder's output: we say why. */
static void quiet_vmessage(struct xentoollog_logger *l, xentoollog_level level, int errnoval,
			   const char *context, const char *format, va_list al)
{
}

static void quiet_destroy(struct xentoollog_logger *l)
{
}

static struct xentoollog_logger quiet_log = {
	.vmessage = quiet_vmessage,
	.destroy = quiet_destroy,
};

/* dom0 runs on the host's CPUs: its CPUID vendor is the host's. */
static enum tsync_vendor host_vendor(void)
{
	unsigned int a, b, c, d;

	if (__get_cpuid(0, &a, &b, &c, &d) &&
	    ((b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163) ||	/* AuthenticAMD */
	     (b == 0x6f677948 && d == 0x6e65476e && c == 0x656e6975)))	/* HygonGenuine */
		return TSYNC_AMD;
	return TSYNC_INTEL;
}

/*
 * What protocol xen needs of the domain: Xen's TSC rate, the domain's
 * (tsc_mode, gtsc_khz), HVM/PVH or PV; from that its scaling and whether
 * its TSC is emulated. 0, or -errno with tcx_error() set.
 */
static int xen_clock(struct rec_guest *g, uint32_t cpu_khz)
{
	xc_interface *xch = xc_interface_open(&quiet_log, &quiet_log, 0);
	xc_domaininfo_t di;
	xc_physinfo_t pi;
	uint32_t mode, gkhz, inc;
	uint64_t elapsed;
	bool hvm;
	int ret = 0;

	if (!xch) {
		return tcx_fail(-ENODEV, "no Xen control interface (%s)", strerror(errno));
	}
	if (!cpu_khz) {
		if (xc_physinfo(xch, &pi)) {
			ret = tcx_fail(-EIO, "xc_physinfo: %s", strerror(errno));
			goto out;
		}
		cpu_khz = pi.cpu_khz;
	}
	if (xc_domain_getinfolist(xch, g->sp.domid, 1, &di) != 1 || di.domain != g->sp.domid) {
		ret = tcx_fail(-ENOENT, "domain %u: no domain information", g->sp.domid);
		goto out;
	}
	if (xc_domain_get_tsc_info(xch, g->sp.domid, &mode, &elapsed, &gkhz, &inc)) {
		ret = tcx_fail(-EIO, "domain %u: xc_domain_get_tsc_info: %s", g->sp.domid,
			 strerror(errno));
		goto out;
	}
	if (!cpu_khz) {
		ret = tcx_fail(-EIO, "Xen gives no TSC rate");
		goto out;
	}
	hvm = di.flags & XEN_DOMINF_hvm_guest;
	g->cpu_khz = cpu_khz;
	g->incarnation = inc;
	g->pv = !hvm;
	/* always_emulate, or a rate the host cannot scale to: RDTSC exits */
	g->vtsc = mode == TSC_MODE_ALWAYS_EMULATE;
	g->scale = (struct tsync_scale){ .ratio = 1, .frac = 0 };
	if (hvm && tsync_xen_ratio(cpu_khz, gkhz, host_vendor(), true, &g->scale) == -ERANGE) {
		g->vtsc = true;
		g->scale = (struct tsync_scale){ .ratio = 1, .frac = 0 };
	}
	if (!hvm && gkhz && gkhz != cpu_khz)
		g->vtsc = true;
	if (g->vtsc)
		g->pv = false;	/* its offset is measured, never assumed */
out:
	xc_interface_close(xch);
	return ret;
}

/*
 * Whether the domain was restored or migrated since xen_clock(): its
 * offset may have jumped (the solve's epochs show where), say so.
 */
static void xen_incarnation(struct rec_guest *g, char *buf, size_t len)
{
	xc_interface *xch = xc_interface_open(&quiet_log, &quiet_log, 0);
	uint32_t mode, gkhz, inc;
	uint64_t elapsed;

	buf[0] = 0;
	if (!xch)
		return;
	if (!xc_domain_get_tsc_info(xch, g->sp.domid, &mode, &elapsed, &gkhz, &inc) &&
	    inc != g->incarnation)
		snprintf(buf, len, "; the domain was restored or migrated during the "
			 "capture (incarnation %u -> %u)", g->incarnation, inc);
	xc_interface_close(xch);
}

/* The agent's time sync stream: vchan tsync_port, or its TCP/vsock port. */
static struct tmsg_transport *tsync_connect(struct rec_guest *g, uint32_t port, int timeout_ms)
{
	struct tmsg_transport *t;
	char name[80];
	int fd;

	if (g->sp.kind == REC_GUEST_XEN) {
		char path[TMSG_VCHAN_PATH_MAX + 1];
		uint64_t end = tcx_now_ns() + (uint64_t)timeout_ms * 1000000ull;

		if (tmsg_vchan_path(path, sizeof(path), g->sp.domid, port))
			return NULL;
		while (!(t = tmsg_vchan_client(g->sp.domid, path)) && tcx_now_ns() < end)
			usleep(20 * 1000);
		return t;
	}
	if (g->sp.kind == REC_GUEST_VSOCK) {
		fd = tmsg_vsock_connect(g->sp.cid, port);
		snprintf(name, sizeof(name), "vsock %u:%u tsync", g->sp.cid, port);
	} else {
		char pstr[16];

		snprintf(pstr, sizeof(pstr), "%u", port);
		fd = tmsg_tcp_connect(g->sp.host, pstr, timeout_ms);
		snprintf(name, sizeof(name), "tcp %.40s:%u tsync", g->sp.host, port);
	}
	if (fd < 0)
		return NULL;
	t = tmsg_fd_transport(fd, name);
	if (!t)
		close(fd);
	return t;
}

static void tsync_sample(struct rec_guest *g, const char *when)
{
	int ret;

	if (!g->tsh || g->tbroken)
		return;
	ret = tsync_host_sample(g->tsh);
	pthread_mutex_lock(&g->lock);
	if (ret) {
		g->tbroken = true;
		tnote(g, "the %s sample failed (%s): no more samples", when,
		      ret == -ETIMEDOUT ? "no answer" : strerror(-ret));
	} else {
		g->sum.tsync_samples++;
	}
	pthread_mutex_unlock(&g->lock);
}

/*
 * After TRACE_RESP: the stream of the protocol the agent chose, and for
 * ptp its first sample (a stock agent sends its metadata only after it).
 * Never fails the session: a problem is noted and the guest goes unsynced.
 */
static void tsync_start(struct rec_guest *g, const struct tmsg_trace_resp *r, int timeout_ms)
{
	const char *proto = r->tsync_proto;
	int ret;

	if (!proto[0]) {
		if (g->noffer)
			tnote(g, "the agent chose no time sync protocol (offered %s%s%s)",
			      g->offer[0], g->noffer > 1 ? "," : "",
			      g->noffer > 1 ? g->offer[1] : "");
		return;
	}
	snprintf(g->sum.tsync_proto, sizeof(g->sum.tsync_proto), "%.15s", proto);
	if (!offered(g, proto)) {
		tnote(g, "the agent chose \"%.15s\", which was not offered", proto);
		return;
	}
	g->tst = tsync_connect(g, r->tsync_port, timeout_ms);
	if (!g->tst) {
		tnote(g, "cannot connect its time sync stream (port %u): %s", r->tsync_port,
		      tcx_error());
		return;
	}
	if (strcmp(proto, TSYNC_PTP_NAME))
		return;		/* xen: once the metadata is in (print id) */
	ret = tsync_host_new(&g->tsh, &(struct tsync_host_opts){
			.proto = TSYNC_PTP_NAME, .t = g->tst, .nvcpu = (uint32_t)g->cpus });
	if (ret) {
		g->tsh = NULL;
		tnote(g, "tsync_host_new: %s", strerror(-ret));
		return;
	}
	tsync_sample(g, "first");
}

/* xen, after the metadata: the guest's print id and long size are known. */
static void tsync_xen_setup(struct rec_guest *g)
{
	struct tsync_host_opts ho = {
		.proto = TSYNC_XEN_NAME, .t = g->tst, .dom = g->sp.domid,
		.nvcpu = (uint32_t)g->cpus, .scale = g->scale, .pv = g->pv, .vtsc = g->vtsc,
		.print_id = g->print_id, .long_size = g->long_size,
	};
	int ret;

	if (!g->tst || g->tsh || strcmp(g->sum.tsync_proto, TSYNC_XEN_NAME))
		return;
	if (!g->has_print) {
		tnote(g, "the guest's metadata has no ftrace/print format: its markers "
		      "cannot be read");
		return;
	}
	ret = tsync_host_new(&g->tsh, &ho);
	if (ret) {
		g->tsh = NULL;
		tnote(g, "tsync_host_new: %s", strerror(-ret));
		return;
	}
	g->xen_ok = true;
}

/*
 * The guest's tsync thread: xen's first sample, one every interval, the
 * last one when the stop is asked, STOP; then the drain thread may CLOSE.
 */
static void *tsync_main(void *arg)
{
	struct rec_guest *g = arg;
	struct timespec next;
	uint64_t step = (uint64_t)(g->interval * 1e9);

	if (!strcmp(g->sum.tsync_proto, TSYNC_XEN_NAME))
		tsync_sample(g, "first");
	clock_gettime(CLOCK_MONOTONIC, &next);
	pthread_mutex_lock(&g->tlock);
	while (!g->treq_stop) {
		if (!step) {
			pthread_cond_wait(&g->tcond, &g->tlock);
			continue;
		}
		next.tv_sec += (time_t)(step / 1000000000ull);
		next.tv_nsec += (long)(step % 1000000000ull);
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		while (!g->treq_stop &&
		       pthread_cond_timedwait(&g->tcond, &g->tlock, &next) != ETIMEDOUT)
			;
		if (g->treq_stop)
			break;
		pthread_mutex_unlock(&g->tlock);
		tsync_sample(g, "interval");
		pthread_mutex_lock(&g->tlock);
	}
	pthread_mutex_unlock(&g->tlock);
	if (atomic_load(&g->gone))
		tnote(g, "the guest went away: no last sample");
	else
		tsync_sample(g, "last");
	tsync_host_stop(g->tsh);
	/* now the session may end */
	{
		uint64_t one = 1;

		atomic_store(&g->stop, 1);
		if (write(g->wakefd, &one, sizeof(one)) < 0)
			one = 0;	/* full: a wakeup is pending anyway */
	}
	return NULL;
}

/* After the file is finished: solve, append TIME_SHIFT, the summary. */
static void tsync_finish(struct rec_guest *g, bool file_ok)
{
	struct tsync_solution sol;
	struct tsync_clock c = { .mult = g->mult, .shift = g->shift }, *cp = &c;
	bool xen = !strcmp(g->sum.tsync_proto, TSYNC_XEN_NAME);
	char line[200] = "", moved[96] = "";
	int ret;

	g->sum.tsync_bound_ns = -1;
	if (!g->tsh) {
		snprintf(g->sum.tsync_note, sizeof(g->sum.tsync_note), "no time sync: %s",
			 g->tnote[0] ? g->tnote : "none asked (the guest file keeps its "
			 "own clock)");
		return;
	}
	if (!file_ok) {
		snprintf(g->sum.tsync_note, sizeof(g->sum.tsync_note),
			 "no TIME_SHIFT: the guest file could not be finished");
		return;
	}
	if (!c.mult && (!g->cpu_khz || tsync_clock_init(&c, g->cpu_khz, NULL, 0)))
		cp = NULL;	/* the bound in ticks */
	if (xen)
		xen_incarnation(g, moved, sizeof(moved));
	memset(&sol, 0, sizeof(sol));
	ret = tsync_host_finish(g->tsh, &sol, line, sizeof(line), cp);
	if (ret) {
		const char *why = ret != -ENODATA ? strerror(-ret) : xen ?
			"no marker round of this domain was found in the hypervisor's "
			"records (the mask needs the HVM and GUEST classes; PV: GUEST "
			"and PV)" : "no sample went through";

		snprintf(g->sum.tsync_note, sizeof(g->sum.tsync_note), "no TIME_SHIFT: %s%s%s",
			 why, g->tnote[0] ? "; " : "", g->tnote);
		tsync_solution_free(&sol);
		return;
	}
	g->sum.tsync_rounds = xen ? sol.rounds_used : g->sum.tsync_samples;
	if (xen && sol.rounds_used && cp)
		g->sum.tsync_bound_ns = (int64_t)tsync_clock_ticks_to_ns(cp, tsync_bound_host(&sol));
	ret = tsync_write_time_shift(g->path, g->host_traceid, &sol);
	if (ret)
		snprintf(g->sum.tsync_note, sizeof(g->sum.tsync_note), "no TIME_SHIFT: %s "
			 "(%s)", ret == -EOPNOTSUPP ? "a version 6 file takes no option "
			 "after its data" : strerror(-ret), line);
	else
		snprintf(g->sum.tsync_note, sizeof(g->sum.tsync_note), "%s%s%s%s", line,
			 moved, g->tnote[0] ? "; " : "", g->tnote);
	g->sum.tsync_shift = !ret;
	tsync_solution_free(&sol);
}

/* ---- the public functions ------------------------------------------------ */

static void guest_free(struct rec_guest *g)
{
	if (!g)
		return;
	for (int c = 0; g->st && c < g->cpus; c++) {
		tmsg_close(g->st[c].t);
		free(g->st[c].buf);
	}
	free(g->st);
	tmsg_close(g->ctl);
	tsync_host_free(g->tsh);
	tmsg_close(g->tst);
	if (g->w)
		tdat_close(g->w);
	if (g->wakefd >= 0)
		close(g->wakefd);
	pthread_cond_destroy(&g->tcond);
	pthread_mutex_destroy(&g->tlock);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

/* TRACE_REQ: the allow-listed options, our trace id, the protocols, the secret. */
static int request(struct rec_guest *g, const struct rec_guest_opts *o,
		   struct tmsg_trace_resp *resp)
{
	const char **argv = calloc((size_t)o->nr_events * 2 + (size_t)o->nr_extra_args + 8,
				   sizeof(*argv));
	struct tmsg_trace_req req = { 0 };
	char bkb[16], why[TMSG_MAX_REASON];
	int argc = 0, ret;

	if (!argv)
		return tcx_fail(-ENOMEM, "out of memory");
	argv[argc++] = "-C";
	argv[argc++] = o->clock && *o->clock ? o->clock : "x86-tsc";
	for (int i = 0; i < o->nr_events; i++) {
		argv[argc++] = "-e";
		argv[argc++] = o->events[i];
	}
	if (o->buffer_kb) {
		snprintf(bkb, sizeof(bkb), "%u", o->buffer_kb);
		argv[argc++] = "-b";
		argv[argc++] = bkb;
	}
	/* the one version we parse; the file we write may still be 7 */
	argv[argc++] = "--file-version";
	argv[argc++] = "6";
	for (int i = 0; i < o->nr_extra_args; i++)
		argv[argc++] = o->extra_args[i];
	req.argc = (uint32_t)argc;
	req.argv = argv;
	req.nr_protos = g->noffer;
	req.protos = g->noffer ? g->offer : NULL;
	req.trace_id = o->host_traceid;
	while (!req.trace_id)
		if (getrandom(&req.trace_id, sizeof(req.trace_id), 0) != sizeof(req.trace_id))
			req.trace_id = (uint64_t)getpid() << 32 | (uint64_t)time(NULL);
	g->host_traceid = req.trace_id;
	/* over vchan the rings are granted to dom0 alone: no secret needed */
	if (g->sp.kind != REC_GUEST_XEN && o->secret_len) {
		req.secret = o->secret;
		req.secret_len = (uint32_t)o->secret_len;
	}
	ret = tmsg_host_request(g->ctl, &req, resp, ANSWER_MS, why, sizeof(why));
	free(argv);
	if (ret == -EPERM)
		return tcx_fail(ret, "guest %s: the agent refused the session%s%s",
			    g->sp.name, why[0] ? ": " : "", why);
	if (ret)
		return tcx_fail(ret, "guest %s: %s", g->sp.name, tcx_error());
	return 0;
}

static int make_file(struct rec_guest *g, const struct rec_guest_opts *o,
		     const struct meta_buf *mb)
{
	struct meta_opts mo = { .clock = "" };
	struct tdat_params tp = { 0 };
	int ret;

	ret = meta_walk(mb->b, mb->len, NULL, &mo, false);
	if (ret)
		return tcx_fail(ret, "guest %s: %s", g->sp.name, tcx_error());
	if (mo.cpus != g->cpus || mo.page_size != g->page_size)
		return tcx_fail(-EPROTO, "guest %s: the metadata says %d CPUs of "
			    "%u-byte pages, TRACE_RESP %d of %u", g->sp.name, mo.cpus,
			    mo.page_size, g->cpus, g->page_size);
	if (!mo.traceid)
		mo.traceid = g->traceid;	/* a metadata without TRACEID */
	if (mo.traceid != g->traceid && o->log)
		fprintf(o->log, "trace-cmd-xen record: guest %s: TRACEID %#" PRIx64
			" in the metadata, %#" PRIx64 " in TRACE_RESP: keeping the "
			"metadata's\n", g->sp.name, mo.traceid, g->traceid);
	g->traceid = mo.traceid;
	g->print_id = mo.print_id;
	g->has_print = mo.has_print;
	g->long_size = mo.long_size == 4 ? 4 : 8;
	tp.version = o->file_version ? o->file_version : 7;
	tp.page_size = g->page_size;
	tp.cpus = g->cpus;
	tp.max_cpus = g->cpus;
	tp.clock = mo.clock[0] ? mo.clock : NULL;
	g->w = tdat_open(g->path, &tp);
	if (!g->w)
		return tcx_fail(errno ? -errno : -EIO, "%s", tcx_error());
	ret = meta_walk(mb->b, mb->len, g->w, &mo, !o->mult);
	if (!ret)
		ret = tdat_set_traceid(g->w, g->traceid);
	if (!ret && o->mult)
		ret = tdat_set_tsc2nsec(g->w, o->mult, o->shift, 0);
	if (!ret)
		ret = tdat_start_data(g->w);
	if (ret)
		return tcx_fail(ret, "guest %s: %s", g->sp.name, tcx_error());
	return 0;
}

int rec_guest_open(struct rec_guest **out, const struct rec_guest_opts *o)
{
	struct rec_guest *g = calloc(1, sizeof(*g));
	struct tmsg_transport **ts = NULL;
	struct tmsg_trace_resp resp = { 0 };
	struct meta_buf mb = { 0 };
	int timeout = o->timeout_ms > 0 ? o->timeout_ms : CONNECT_MS;
	char *path = NULL, msg[TCX_ERROR_MAX];
	ssize_t got;
	int ret;

	*out = NULL;
	if (!g)
		return tcx_fail(-ENOMEM, "out of memory");
	g->wakefd = -1;
	pthread_mutex_init(&g->lock, NULL);
	pthread_mutex_init(&g->tlock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&g->tcond, &ca);
		pthread_condattr_destroy(&ca);
	}
	g->log = o->log;
	g->close_ms = o->close_timeout_ms > 0 ? o->close_timeout_ms : CLOSE_MS;
	g->interval = o->tsync_interval > 0 ? o->tsync_interval : 0;
	g->mult = o->mult;
	g->shift = o->shift;
	g->cpu_khz = o->cpu_khz;
	ret = rec_guest_parse_spec(o->spec, &g->sp);
	if (!ret)
		ret = parse_protos(g, o->tsync);
	if (ret)
		goto fail;
	ret = g->sp.kind == REC_GUEST_XEN ? xen_connect(g, timeout)
					  : net_connect(g, timeout);
	if (ret)
		goto fail;
	if (offered(g, TSYNC_XEN_NAME)) {
		/* xen measures against the hypervisor's records of a domain */
		if (g->sp.kind != REC_GUEST_XEN) {
			drop_offer(g, TSYNC_XEN_NAME);
			if (!g->noffer)
				tnote(g, "protocol xen needs a Xen guest reached over vchan");
		} else if (xen_clock(g, o->cpu_khz)) {
			drop_offer(g, TSYNC_XEN_NAME);
			tnote(g, "xen not offered: %s", tcx_error());
		}
	}
	path = rec_guest_file_path(o->output, g->sp.name);
	if (!path || strlen(path) >= sizeof(g->path)) {
		ret = tcx_fail(-ENAMETOOLONG, "%s: output name too long", o->output);
		goto fail;
	}
	snprintf(g->path, sizeof(g->path), "%s", path);
	ret = request(g, o, &resp);
	if (ret)
		goto fail;
	g->cpus = (int)resp.cpus;
	g->page_size = resp.page_size;
	g->traceid = resp.trace_id;
	if (g->page_size < 4096 || g->page_size > READ_CHUNK) {
		ret = tcx_fail(-EPROTO, "guest %s: page size %u not supported",
			   g->sp.name, g->page_size);
		goto fail;
	}
	g->st = calloc((size_t)g->cpus, sizeof(*g->st));
	ts = calloc((size_t)g->cpus, sizeof(*ts));
	if (!g->st || !ts) {
		ret = tcx_fail(-ENOMEM, "out of memory");
		goto fail;
	}
	ret = open_streams(g, &resp, ts);
	if (ret) {
		ret = tcx_fail(-EIO, "guest %s: cannot open its data streams: %s",
			   g->sp.name, tcx_error());
		goto fail;
	}
	tsync_start(g, &resp, timeout);
	for (int c = 0; c < g->cpus; c++) {
		g->st[c].t = ts[c];
		g->st[c].open = true;
		g->st[c].buf = malloc(READ_CHUNK + g->page_size);
		if (!g->st[c].buf) {
			ret = tcx_fail(-ENOMEM, "out of memory");
			goto fail;
		}
	}
	got = tmsg_recv_data(g->ctl, meta_sink, &mb, TMSG_WAIT_MS, META_MAX);
	if (got < 0) {
		ret = tcx_fail((int)got, "guest %s: receiving its metadata: %s",
			   g->sp.name, tcx_error());
		goto fail;
	}
	ret = make_file(g, o, &mb);
	if (ret)
		goto fail;
	free(mb.b);
	mb.b = NULL;
	tsync_xen_setup(g);
	g->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (g->wakefd < 0) {
		ret = tcx_fail(-errno, "eventfd: %s", strerror(errno));
		goto fail;
	}
	snprintf(g->sum.name, sizeof(g->sum.name), "%s", g->sp.name);
	snprintf(g->sum.path, sizeof(g->sum.path), "%s", g->path);
	g->sum.kind = g->sp.kind;
	g->sum.domid = g->sp.domid;
	g->sum.cpus = g->cpus;
	g->sum.traceid = g->traceid;
	g->t0_ns = tcx_now_ns();
	{
		sigset_t all, old;

		/* signals stay with the record command's own thread */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		ret = -pthread_create(&g->th, NULL, drain_main, g);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (ret) {
		tcx_fail(ret, "cannot start a thread: %s", strerror(-ret));
		goto fail;
	}
	g->started = true;
	pthread_setname_np(g->th, "tcx-guest");	/* for top and perf */
	if (g->tsh) {
		sigset_t all, old;
		int tret;

		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		tret = pthread_create(&g->tth, NULL, tsync_main, g);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (tret)
			tnote(g, "cannot start its time sync thread: %s", strerror(tret));
		else
			pthread_setname_np(g->tth, "tcx-tsync");
		g->tstarted = !tret;
	}
	tmsg_trace_resp_free(&resp);
	free(ts);
	free(path);
	*out = g;
	return 0;
fail:
	/* the cleanup may fail too: the message is the first failure's */
	snprintf(msg, sizeof(msg), "%s", tcx_error());
	free(mb.b);
	free(ts);
	tmsg_trace_resp_free(&resp);
	if (g->w) {
		tdat_close(g->w);
		g->w = NULL;
		unlink(g->path);	/* nothing recorded: no empty file left */
	}
	guest_free(g);
	free(path);
	return tcx_fail(ret, "%s", msg);
}

const char *rec_guest_name(const struct rec_guest *g)
{
	return g->sp.name;
}

const char *rec_guest_output(const struct rec_guest *g)
{
	return g->path;
}

uint64_t rec_guest_id(const struct rec_guest *g)
{
	return g->traceid;
}

int rec_guest_domid(const struct rec_guest *g)
{
	return g->sp.kind == REC_GUEST_XEN ? (int)g->sp.domid : -1;
}

int rec_guest_cpus(const struct rec_guest *g)
{
	return g->cpus;
}

int rec_guest_add_host_entry(const struct rec_guest *g, struct tdat_writer *host)
{
	uint32_t *pids = calloc((size_t)g->cpus, sizeof(*pids));
	int ret;

	if (!pids)
		return -ENOMEM;
	for (int c = 0; c < g->cpus; c++)
		/* Xen: the vCPU's pseudo task in the hypervisor file; the
		 * network has no such task: -1, as trace-cmd writes */
		pids[c] = g->sp.kind == REC_GUEST_XEN ?
			  (uint32_t)rec_vcpu_pid(g->sp.domid, (uint32_t)c) : UINT32_MAX;
	ret = tdat_add_guest(host, g->sp.name, g->traceid, (uint32_t)g->cpus, pids);
	free(pids);
	return ret;
}

void rec_guest_stats(struct rec_guest *g, struct rec_guest_summary *s)
{
	pthread_mutex_lock(&g->lock);
	*s = g->sum;
	pthread_mutex_unlock(&g->lock);
}

void rec_guest_request_stop(struct rec_guest *g)
{
	uint64_t one = 1;

	if (g->tstarted) {
		/* the last sample first; the tsync thread then lets CLOSE out */
		pthread_mutex_lock(&g->tlock);
		g->treq_stop = true;
		pthread_cond_signal(&g->tcond);
		pthread_mutex_unlock(&g->tlock);
		return;
	}
	atomic_store(&g->stop, 1);
	if (write(g->wakefd, &one, sizeof(one)) < 0)
		return;	/* the counter is full: a wakeup is pending anyway */
}

bool rec_guest_stopped(struct rec_guest *g)
{
	/* the drain thread ends after the tsync thread let CLOSE out */
	return !g->started || atomic_load(&g->done);
}

int rec_guest_stop(struct rec_guest *g)
{
	if (!g->started)
		return 0;
	rec_guest_request_stop(g);
	if (g->tstarted) {
		pthread_join(g->tth, NULL);
		g->tstarted = false;
	}
	pthread_join(g->th, NULL);
	g->started = false;
	/* no sample after this; the solve waits for rec_guest_close() */
	tsync_host_stop(g->tsh);
	tmsg_close(g->tst);
	g->tst = NULL;
	/* the streams and the control are done with */
	for (int c = 0; c < g->cpus; c++) {
		tmsg_close(g->st[c].t);
		g->st[c].t = NULL;
	}
	tmsg_close(g->ctl);
	g->ctl = NULL;
	return g->sum.error;
}

int rec_guest_set_tsc2nsec(struct rec_guest *g, uint32_t mult, uint32_t shift)
{
	if (g->started)
		return -EBUSY;
	g->mult = mult;
	g->shift = shift;
	return tdat_set_tsc2nsec(g->w, mult, shift, 0);
}

int rec_guest_close(struct rec_guest *g, struct rec_guest_summary *sum)
{
	int ret;

	if (!g)
		return 0;
	rec_guest_stop(g);
	ret = tdat_close(g->w);
	g->w = NULL;
	if (ret && !g->sum.error) {
		g->sum.error = ret;
		snprintf(g->sum.note, sizeof(g->sum.note), "%.160s: closing failed: %s",
			 g->path, strerror(-ret));
	}
	/* the data is safe on disk: now the solve and TIME_SHIFT */
	tsync_finish(g, !g->sum.error);
	ret = g->sum.error;
	if (sum)
		*sum = g->sum;
	guest_free(g);
	return ret;
}

void rec_guest_summary_print(const struct rec_guest_summary *s, FILE *f)
{
	fprintf(f, "guest %s", s->name);
	if (s->kind == REC_GUEST_XEN)
		fprintf(f, " (domain %u)", s->domid);
	fprintf(f, ": %s, %d CPU%s, %" PRIu64 " events in %" PRIu64 " pages "
		"(%.1f MiB received in %.1f s), %" PRIu64 " lost",
		s->path, s->cpus, s->cpus == 1 ? "" : "s", s->events, s->pages,
		(double)s->bytes / (1 << 20), s->seconds, s->missed);
	if (s->bad_pages)
		fprintf(f, ", %" PRIu64 " bad pages skipped", s->bad_pages);
	fputc('\n', f);
	if (s->error)
		fprintf(f, "  error: %s\n", s->note);
	else if (s->died)
		fprintf(f, "  %s: the file is valid and ends there%s\n", s->note,
			s->cut_bytes ? " (a page cut short was dropped)" : "");
	if (s->tsync_note[0])
		fprintf(f, "  %s\n", s->tsync_note);
}

void rec_guest_summary_json(const struct rec_guest_summary *s, FILE *f)
{
	fputs("{\"name\": ", f);
	tcx_json_str(f, s->name);
	fprintf(f, ", \"transport\": \"%s\", ",
		s->kind == REC_GUEST_XEN ? "vchan" : s->kind == REC_GUEST_TCP ? "tcp" : "vsock");
	if (s->kind == REC_GUEST_XEN)
		fprintf(f, "\"domid\": %u, ", s->domid);
	fputs("\"file\": ", f);
	tcx_json_str(f, s->path);
	fprintf(f, ", \"cpus\": %d, \"traceid\": %" PRIu64 ", \"events\": %" PRIu64
		", \"pages\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"lost\": %" PRIu64
		", \"bad_pages\": %" PRIu64 ", \"cut_bytes\": %" PRIu64 ", \"seconds\": %.3f"
		", \"died\": %s, \"error\": %d, \"note\": ",
		s->cpus, s->traceid, s->events, s->pages, s->bytes, s->missed, s->bad_pages,
		s->cut_bytes, s->seconds, s->died ? "true" : "false", s->error);
	tcx_json_str(f, s->note);
	fputs(", \"tsync\": {\"protocol\": ", f);
	if (s->tsync_proto[0])
		tcx_json_str(f, s->tsync_proto);
	else
		fputs("null", f);
	fprintf(f, ", \"time_shift\": %s, \"samples\": %u, \"rounds\": %u, \"bound_ns\": ",
		s->tsync_shift ? "true" : "false", s->tsync_samples, s->tsync_rounds);
	if (s->tsync_bound_ns >= 0)
		fprintf(f, "%" PRId64, s->tsync_bound_ns);
	else
		fputs("null", f);
	fputs(", \"note\": ", f);
	tcx_json_str(f, s->tsync_note);
	fputs("}}", f);
}

void rec_guest_hv_record(struct rec_guest *g, const struct rec_record *r, bool known,
			 uint32_t dom, uint32_t vcpu, uint64_t run)
{
	struct tsync_hvrec t;

	if (!g || !g->tsh || !g->xen_ok)
		return;
	t = (struct tsync_hvrec){ .tsc = r->tsc, .has_tsc = r->flags & REC_F_TSC,
				  .event = r->event, .nr = r->nr, .dom = dom, .vcpu = vcpu,
				  .known = known, .run = run };
	memcpy(t.w, r->w, sizeof(t.w));
	tsync_host_record(g->tsh, &t);
}
