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
 */
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
#include <xenstore.h>

#include "recorder.h"
#include "tdat.h"
#include "tmsg.h"

#define META_MAX	(512u << 20)	/* kallsyms of a big kernel is ~10 MiB */
#define READ_CHUNK	(256u << 10)	/* per stream and read call */
#define ROUND_MAX	(1u << 20)	/* per stream per round: fairness */
#define POLL_MS		100
#define FLUSH_NS	1000000000ull	/* pages to disk at least every second */
#define PUBLISH_NS	100000000ull	/* counters for status lines */
#define ANSWER_MS	30000		/* TRACE_RESP: the agent sets tracing up */
#define CONNECT_MS	5000
#define CLOSE_MS	10000		/* CLOSE to the last page and CLOSE_RESP */

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
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int errf(char *err, size_t len, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return ret;
}

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

static int parse_uint(const char *s, size_t n, unsigned long max,
		      unsigned int *out)
{
	unsigned long v = 0;

	if (!all_digits(s, n) || n > 10)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (unsigned long)(s[i] - '0');
	if (v > max)
		return -EINVAL;
	*out = (unsigned int)v;
	return 0;
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

int rec_guest_parse_spec(const char *spec, struct rec_guest_spec *out,
			 char *err, size_t errlen)
{
	const char *at, *colon, *host = spec, *port = NULL;
	size_t hlen, slen;

	memset(out, 0, sizeof(*out));
	if (!spec || !*spec)
		return errf(err, errlen, -EINVAL, "-A: empty guest");
	slen = strlen(spec);
	if (slen > 255)
		return errf(err, errlen, -EINVAL, "-A: guest \"%.40s...\" is too long", spec);
	at = strrchr(spec, '@');
	if (at) {
		/* name@cid[:port]: vsock with a name, as trace-cmd */
		const char *c = at + 1, *p = strchr(c, ':');
		size_t clen = p ? (size_t)(p - c) : strlen(c);

		out->kind = REC_GUEST_VSOCK;
		out->port = TMSG_AGENT_PORT;
		if (at == spec || parse_uint(c, clen, 0xffffffffUL, &out->cid) ||
		    (p && parse_uint(p + 1, strlen(p + 1), 0xffffffffUL, &out->port)))
			return errf(err, errlen, -EINVAL,
				    "-A %s: expected name@cid[:port]", spec);
		safe_name(out->name, sizeof(out->name), spec, (size_t)(at - spec));
		return 0;
	}
	if (spec[0] == '[') {
		/* [v6 address][:port] */
		const char *end = strchr(spec, ']');

		if (!end || end == spec + 1 || (end[1] && end[1] != ':'))
			return errf(err, errlen, -EINVAL, "-A %s: expected [address]:port", spec);
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
		if (parse_uint(host, hlen, 0x7fef, &out->domid))
			return errf(err, errlen, -EINVAL, "-A %s: not a domain id", spec);
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
	if (port && parse_uint(port, strlen(port), 65535, &out->port))
		return errf(err, errlen, -EINVAL, "-A %s: bad port \"%s\"", spec, port);
	if (hlen == 0 || hlen >= sizeof(out->host))
		return errf(err, errlen, -EINVAL, "-A %s: no host", spec);
	if (all_digits(host, hlen)) {
		/* cid:port, as trace-cmd */
		out->kind = REC_GUEST_VSOCK;
		if (parse_uint(host, hlen, 0xffffffffUL, &out->cid))
			return errf(err, errlen, -EINVAL, "-A %s: bad cid", spec);
		snprintf(out->name, sizeof(out->name), "%.*s", (int)hlen, host);
		return 0;
	}
	if (!out->port)
		return errf(err, errlen, -EINVAL, "-A %s: port 0", spec);
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

static int xen_resolve(struct rec_guest_spec *sp, char *err, size_t errlen)
{
	struct xs_handle *xs = xs_open(0);
	char path[64], *v;
	int ret = 0;

	if (!xs)
		return errf(err, errlen, -EIO, "-A %s: cannot open xenstore (%s): "
			    "is this dom0 of a Xen host?", sp->name, strerror(errno));
	if (sp->by_domid) {
		snprintf(path, sizeof(path), "/local/domain/%u/name", sp->domid);
		v = xs_get(xs, path);
		if (!v) {
			ret = errf(err, errlen, -ENOENT, "-A %u: no domain %u is running "
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

			if (parse_uint(dir[i], strlen(dir[i]), 0x7fef, &id))
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
			ret = errf(err, errlen, -ENOENT, "-A %s: no running domain is named "
				   "\"%s\" (see xl list)", sp->xen_name, sp->xen_name);
	}
	xs_close(xs);
	return ret;
}

static int xen_connect(struct rec_guest *g, int timeout_ms, char *err, size_t errlen)
{
	struct tmsg_xs_agent a;
	char path[TMSG_VCHAN_PATH_MAX + 1];
	uint64_t end;
	int ret;

	ret = xen_resolve(&g->sp, err, errlen);
	if (ret)
		return ret;
	ret = tmsg_xs_lookup(g->sp.domid, &a);
	if (ret == -ENOENT)
		return errf(err, errlen, -ENOENT, "guest %s (domain %u) runs no agent: "
			    "start `trace-cmd-xen agent --xen` in it", g->sp.name, g->sp.domid);
	if (ret)
		return errf(err, errlen, ret, "guest %s: %s", g->sp.name, tmsg_error());
	if (!a.ready)
		return errf(err, errlen, -ENOTCONN, "guest %s (domain %u): its agent is "
			    "not ready (stopped, or still starting)", g->sp.name, g->sp.domid);
	ret = tmsg_vchan_path(path, sizeof(path), g->sp.domid, a.port);
	if (ret)
		return errf(err, errlen, ret, "guest %s: %s", g->sp.name, tmsg_error());
	/* Between two sessions the agent makes its control vchan anew. */
	end = now_ns() + (uint64_t)timeout_ms * 1000000ull;
	while (!(g->ctl = tmsg_vchan_client(g->sp.domid, path))) {
		if (now_ns() >= end)
			return errf(err, errlen, -ECONNREFUSED, "guest %s (domain %u): the "
				    "agent advertised in xenstore does not answer on %s (%s): "
				    "is it still running, or serving another recorder?", g->sp.name, g->sp.domid, path,
				    tmsg_error());
		usleep(50 * 1000);
	}
	return 0;
}

static int net_connect(struct rec_guest *g, int timeout_ms, char *err, size_t errlen)
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
		return errf(err, errlen, fd, "guest %s: cannot connect to its agent: %s",
			    g->sp.name, tmsg_error());
	g->ctl = tmsg_fd_transport(fd, name);
	if (!g->ctl)
		return errf(err, errlen, -ENOMEM, "out of memory");
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

/* The "pid comm\n" lines of saved_cmdlines into the writer. */
static void add_cmdlines(struct tdat_writer *w, char *text)
{
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *end;
		long pid = strtol(line, &end, 10);

		if (end != line && *end == ' ' && end[1])
			tdat_add_cmdline(w, (int)pid, end + 1);	/* odd lines: skipped */
	}
}

struct meta_opts {
	char clock[32];
	uint32_t page_size;
	int cpus;
	uint64_t traceid;
};

/*
 * Walk the metadata once. With @w NULL only collect what tdat_create()
 * needs (@mo); with @w feed everything to the writer.
 */
static int meta_walk(const uint8_t *b, size_t len, struct tdat_writer *w,
		     struct meta_opts *mo, bool keep_tsc2nsec, char *err, size_t errlen)
{
	struct rd r = { .b = b, .len = len };
	uint64_t n, m;
	char *s, *sys;
	int ret = 0;

	rd_expect(&r, "\x17\x08\x44tracing", 10, "the trace.dat magic");
	if (!r.bad && r.len - r.pos >= 2 && memcmp(b + r.pos, "6", 2))
		return errf(err, errlen, -EPROTO, "the agent sent trace.dat version \"%.2s\" "
			    "metadata; only 6 is understood", b + r.pos);
	rd_expect(&r, "6", 2, "the version");
	if (!r.bad && r.pos < len && b[r.pos])
		return errf(err, errlen, -EPROTO, "the agent's metadata is big endian: "
			    "not supported");
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
		add_cmdlines(w, s);
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
		return errf(err, errlen, -EPROTO, "the agent's metadata is cut or malformed "
			    "at %s (offset %zu of %zu bytes)", r.bad, r.pos, len);
	if (ret)
		return errf(err, errlen, ret, "the agent's metadata: %s", tdat_error(w));
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
				 g->path, tdat_error(g->w));
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

static void *drain_main(void *arg)
{
	struct rec_guest *g = arg;
	struct pollfd *pfd = calloc((size_t)g->cpus + 2, sizeof(*pfd));
	struct tmsg *m = malloc(sizeof(*m));
	uint64_t bytes = 0, bad = 0, deadline = 0;
	uint64_t next_flush = now_ns() + FLUSH_NS, next_publish = 0;
	bool closing = false, ctl_open = true, resp = false, lost = false, dirty = false;
	int nopen = g->cpus;

	if (!pfd || !m) {
		note(g, "out of memory");
		goto out;
	}
	while (nopen || (closing && ctl_open && !resp)) {
		bool progress = false;
		int np = 0, ctl_at = -1;
		uint64_t now;

		for (int c = 0; c < g->cpus; c++) {
			int r;

			if (!g->st[c].open)
				continue;
			r = pump(g, c, &bytes, &bad);
			if (r < 0) {
				nopen--;
				/* before CLOSE: the guest or its agent went away */
				lost |= !closing;
			}
			progress |= r != 0;
		}
		if (!closing && atomic_load(&g->stop)) {
			closing = true;
			deadline = now_ns() + (uint64_t)g->close_ms * 1000000ull;
			if (ctl_open && tmsg_send_cmd(g->ctl, TMSG_CLOSE)) {
				note(g, "CLOSE: %s", tmsg_error());
				ctl_open = false;
			}
		}
		now = now_ns();
		if (now >= next_flush) {
			if (!g->sum.error)
				tdat_flush(g->w);
			dirty = false;
			next_flush = now + FLUSH_NS;
		}
		if (now >= next_publish) {
			publish(g, bytes, bad);
			next_publish = now + PUBLISH_NS;
		}
		if (closing && now >= deadline) {
			note(g, "no end of data %d s after CLOSE: stopped waiting", g->close_ms / 1000);
			break;
		}
		if (progress) {
			dirty = true;
			continue;
		}
		if (dirty && !g->sum.error) {
			/* a quiet moment: what came is on disk, readable */
			tdat_flush(g->w);
			dirty = false;
			next_flush = now + FLUSH_NS;
		}
		for (int c = 0; c < g->cpus; c++)
			if (g->st[c].open)
				pfd[np++] = (struct pollfd){ .fd = g->st[c].t->ops->fd(g->st[c].t),
							     .events = POLLIN };
		if (ctl_open) {
			ctl_at = np;
			pfd[np++] = (struct pollfd){ .fd = g->ctl->ops->fd(g->ctl), .events = POLLIN };
		}
		pfd[np++] = (struct pollfd){ .fd = g->wakefd, .events = POLLIN };
		if (poll(pfd, (nfds_t)np, POLL_MS) <= 0)
			continue;
		if (pfd[np - 1].revents) {
			uint64_t v;

			if (read(g->wakefd, &v, sizeof(v)) < 0)
				v = 0;
		}
		/* vchan: an event seen but no data yet must be acknowledged */
		for (int c = 0, i = 0; c < g->cpus; c++) {
			struct tmsg_transport *t = g->st[c].t;

			if (!g->st[c].open)
				continue;
			if (pfd[i++].revents)
				t->ops->wait(t, POLLIN, 0);
		}
		if (ctl_at >= 0 && pfd[ctl_at].revents) {
			int ret = tmsg_recv(g->ctl, m, 0);

			if (!ret && m->cmd == TMSG_CLOSE_RESP && closing) {
				resp = true;
			} else if (ret && ret != -ETIMEDOUT) {
				/* the agent is gone: its streams end too */
				ctl_open = false;
				lost |= !closing;
			}
		}
	}
	if (nopen)
		for (int c = 0; c < g->cpus; c++)
			if (g->st[c].open) {
				g->st[c].open = false;
				lost = true;
			}
out:
	if (!g->sum.error)
		tdat_flush(g->w);
	publish(g, bytes, bad);
	pthread_mutex_lock(&g->lock);
	for (int c = 0; c < g->cpus; c++)
		/* a page cut short: the agent died mid-page */
		g->sum.cut_bytes += g->st[c].fill;
	g->sum.seconds = (double)(now_ns() - g->t0_ns) / 1e9;
	g->sum.died = lost || !resp;
	if (g->sum.died && !g->sum.note[0])
		snprintf(g->sum.note, sizeof(g->sum.note), "%s",
			 lost ? "the guest's agent went away before the end" :
				"no CLOSE_RESP from the agent");
	pthread_mutex_unlock(&g->lock);
	free(pfd);
	free(m);
	return NULL;
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
	if (g->w)
		tdat_close(g->w);
	if (g->wakefd >= 0)
		close(g->wakefd);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

/* TRACE_REQ: the allow-listed options, our trace id, the secret. */
static int request(struct rec_guest *g, const struct rec_guest_opts *o,
		   struct tmsg_trace_resp *resp, char *err, size_t errlen)
{
	const char **argv = calloc((size_t)o->nr_events * 2 + (size_t)o->nr_extra_args + 8,
				   sizeof(*argv));
	struct tmsg_trace_req req = { 0 };
	char bkb[16], why[TMSG_MAX_REASON];
	int argc = 0, ret;

	if (!argv)
		return errf(err, errlen, -ENOMEM, "out of memory");
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
	req.trace_id = o->host_traceid;
	while (!req.trace_id)
		if (getrandom(&req.trace_id, sizeof(req.trace_id), 0) != sizeof(req.trace_id))
			req.trace_id = (uint64_t)getpid() << 32 | (uint64_t)time(NULL);
	/* over vchan the rings are granted to dom0 alone: no secret needed */
	if (g->sp.kind != REC_GUEST_XEN && o->secret_len) {
		req.secret = o->secret;
		req.secret_len = (uint32_t)o->secret_len;
	}
	ret = tmsg_host_request(g->ctl, &req, resp, ANSWER_MS, why, sizeof(why));
	free(argv);
	if (ret == -EPERM)
		return errf(err, errlen, ret, "guest %s: the agent refused the session%s%s",
			    g->sp.name, why[0] ? ": " : "", why);
	if (ret)
		return errf(err, errlen, ret, "guest %s: %s", g->sp.name, tmsg_error());
	return 0;
}

static int make_file(struct rec_guest *g, const struct rec_guest_opts *o,
		     const struct meta_buf *mb, char *err, size_t errlen)
{
	struct meta_opts mo = { .clock = "" };
	struct tdat_params tp = { 0 };
	char msg[256];
	int ret;

	ret = meta_walk(mb->b, mb->len, NULL, &mo, false, msg, sizeof(msg));
	if (ret)
		return errf(err, errlen, ret, "guest %s: %s", g->sp.name, msg);
	if (mo.cpus != g->cpus || mo.page_size != g->page_size)
		return errf(err, errlen, -EPROTO, "guest %s: the metadata says %d CPUs of "
			    "%u-byte pages, TRACE_RESP %d of %u", g->sp.name, mo.cpus,
			    mo.page_size, g->cpus, g->page_size);
	if (!mo.traceid)
		mo.traceid = g->traceid;	/* a metadata without TRACEID */
	if (mo.traceid != g->traceid && o->log)
		fprintf(o->log, "trace-cmd-xen record: guest %s: TRACEID %#" PRIx64
			" in the metadata, %#" PRIx64 " in TRACE_RESP: keeping the "
			"metadata's\n", g->sp.name, mo.traceid, g->traceid);
	g->traceid = mo.traceid;
	tp.version = o->file_version ? o->file_version : 7;
	tp.page_size = g->page_size;
	tp.cpus = g->cpus;
	tp.max_cpus = g->cpus;
	tp.clock = mo.clock[0] ? mo.clock : NULL;
	g->w = tdat_create(g->path, &tp);
	if (!g->w)
		return errf(err, errlen, errno ? -errno : -EIO, "%s", tdat_last_error());
	ret = meta_walk(mb->b, mb->len, g->w, &mo, !o->mult, msg, sizeof(msg));
	if (!ret)
		ret = tdat_set_traceid(g->w, g->traceid);
	if (!ret && o->mult)
		ret = tdat_set_tsc2nsec(g->w, o->mult, o->shift, 0);
	if (!ret)
		ret = tdat_start_data(g->w);
	if (ret)
		return errf(err, errlen, ret, "guest %s: %s", g->sp.name,
			    msg[0] ? msg : tdat_error(g->w));
	return 0;
}

int rec_guest_open(struct rec_guest **out, const struct rec_guest_opts *o,
		   char *err, size_t errlen)
{
	struct rec_guest *g = calloc(1, sizeof(*g));
	struct tmsg_transport **ts = NULL;
	struct tmsg_trace_resp resp = { 0 };
	struct meta_buf mb = { 0 };
	int timeout = o->timeout_ms > 0 ? o->timeout_ms : CONNECT_MS;
	char *path = NULL;
	ssize_t got;
	int ret;

	*out = NULL;
	err[0] = 0;
	if (!g)
		return errf(err, errlen, -ENOMEM, "out of memory");
	g->wakefd = -1;
	pthread_mutex_init(&g->lock, NULL);
	g->log = o->log;
	g->close_ms = o->close_timeout_ms > 0 ? o->close_timeout_ms : CLOSE_MS;
	ret = rec_guest_parse_spec(o->spec, &g->sp, err, errlen);
	if (ret)
		goto fail;
	ret = g->sp.kind == REC_GUEST_XEN ? xen_connect(g, timeout, err, errlen)
					  : net_connect(g, timeout, err, errlen);
	if (ret)
		goto fail;
	path = rec_guest_file_path(o->output, g->sp.name);
	if (!path || strlen(path) >= sizeof(g->path)) {
		ret = errf(err, errlen, -ENAMETOOLONG, "%s: output name too long", o->output);
		goto fail;
	}
	snprintf(g->path, sizeof(g->path), "%s", path);
	ret = request(g, o, &resp, err, errlen);
	if (ret)
		goto fail;
	g->cpus = (int)resp.cpus;
	g->page_size = resp.page_size;
	g->traceid = resp.trace_id;
	if (g->page_size < 4096 || g->page_size > READ_CHUNK) {
		ret = errf(err, errlen, -EPROTO, "guest %s: page size %u not supported",
			   g->sp.name, g->page_size);
		goto fail;
	}
	g->st = calloc((size_t)g->cpus, sizeof(*g->st));
	ts = calloc((size_t)g->cpus, sizeof(*ts));
	if (!g->st || !ts) {
		ret = errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	ret = open_streams(g, &resp, ts);
	if (ret) {
		ret = errf(err, errlen, -EIO, "guest %s: cannot open its data streams: %s",
			   g->sp.name, tmsg_error());
		goto fail;
	}
	for (int c = 0; c < g->cpus; c++) {
		g->st[c].t = ts[c];
		g->st[c].open = true;
		g->st[c].buf = malloc(READ_CHUNK + g->page_size);
		if (!g->st[c].buf) {
			ret = errf(err, errlen, -ENOMEM, "out of memory");
			goto fail;
		}
	}
	got = tmsg_recv_data(g->ctl, meta_sink, &mb, TMSG_WAIT_MS, META_MAX);
	if (got < 0) {
		ret = errf(err, errlen, (int)got, "guest %s: receiving its metadata: %s",
			   g->sp.name, tmsg_error());
		goto fail;
	}
	ret = make_file(g, o, &mb, err, errlen);
	if (ret)
		goto fail;
	free(mb.b);
	mb.b = NULL;
	g->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (g->wakefd < 0) {
		ret = errf(err, errlen, -errno, "eventfd: %s", strerror(errno));
		goto fail;
	}
	snprintf(g->sum.name, sizeof(g->sum.name), "%s", g->sp.name);
	snprintf(g->sum.path, sizeof(g->sum.path), "%s", g->path);
	g->sum.kind = g->sp.kind;
	g->sum.domid = g->sp.domid;
	g->sum.cpus = g->cpus;
	g->sum.traceid = g->traceid;
	g->t0_ns = now_ns();
	{
		sigset_t all, old;

		/* signals stay with the record command's own thread */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		ret = -pthread_create(&g->th, NULL, drain_main, g);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (ret) {
		errf(err, errlen, ret, "cannot start a thread: %s", strerror(-ret));
		goto fail;
	}
	g->started = true;
	pthread_setname_np(g->th, "tcx-guest");	/* for top and perf */
	tmsg_trace_resp_free(&resp);
	free(ts);
	free(path);
	*out = g;
	return 0;
fail:
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
	return ret;
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

	atomic_store(&g->stop, 1);
	if (write(g->wakefd, &one, sizeof(one)) < 0)
		return;	/* the counter is full: a wakeup is pending anyway */
}

int rec_guest_stop(struct rec_guest *g)
{
	if (!g->started)
		return 0;
	rec_guest_request_stop(g);
	pthread_join(g->th, NULL);
	g->started = false;
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
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void rec_guest_summary_json(const struct rec_guest_summary *s, FILE *f)
{
	fputs("{\"name\": ", f);
	json_str(f, s->name);
	fprintf(f, ", \"transport\": \"%s\", ",
		s->kind == REC_GUEST_XEN ? "vchan" : s->kind == REC_GUEST_TCP ? "tcp" : "vsock");
	if (s->kind == REC_GUEST_XEN)
		fprintf(f, "\"domid\": %u, ", s->domid);
	fputs("\"file\": ", f);
	json_str(f, s->path);
	fprintf(f, ", \"cpus\": %d, \"traceid\": %" PRIu64 ", \"events\": %" PRIu64
		", \"pages\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"lost\": %" PRIu64
		", \"bad_pages\": %" PRIu64 ", \"cut_bytes\": %" PRIu64 ", \"seconds\": %.3f"
		", \"died\": %s, \"error\": %d, \"note\": ",
		s->cpus, s->traceid, s->events, s->pages, s->bytes, s->missed, s->bad_pages,
		s->cut_bytes, s->seconds, s->died ? "true" : "false", s->error);
	json_str(f, s->note);
	fputc('}', f);
}

void rec_guest_hv_record(struct rec_guest *g, const struct rec_record *r, bool known,
			 uint32_t dom, uint32_t vcpu)
{
	/* time sync (tsync_host_record) goes here */
	(void)g; (void)r; (void)known; (void)dom; (void)vcpu;
}
