// SPDX-License-Identifier: GPL-2.0
/*
 * record -A: the agent's metadata (a version 6 trace.dat without data),
 * read once to learn what the file needs and once more into the guest's
 * file through tdat. Every read is bounds-checked: the bytes are the
 * guest's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tdat.h"
#include "rec-guest-local.h"
#include "tcx-util.h"

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
	int long_size;
	uint16_t print_id;		/* ftrace/print: the markers' event */
	bool has_print;
	uint32_t dropped;		/* options not written (second walk) */
	bool header_page_differs;	/* the guest's text is not dom0's */
};

/* Clocks trace-cmd and the kernel know (trace_clock's names). */
static const char *const known_clocks[] = {
	"local", "global", "counter", "uptime", "perf", "mono", "mono_raw",
	"boot", "tai", "x86-tsc",
};

static bool known_clock(const char *c)
{
	for (size_t i = 0; i < sizeof(known_clocks) / sizeof(known_clocks[0]); i++)
		if (!strcmp(c, known_clocks[i]))
			return true;
	return false;
}

#define TEXT_MAX	1024		/* UNAME, VERSION */
#define CPUSTAT_MAX	4096		/* one CPU's stats */
#define PROCMAPS_MAX	(1u << 20)

/*
 * Text an option may carry into dom0's file: at most @max bytes, printable
 * or whitespace, no NUL but a last one (required when @nul).
 */
static bool opt_text(const uint8_t *d, uint32_t sz, uint32_t max, bool nul)
{
	uint32_t n = sz;

	if (!sz || sz > max)
		return false;
	if (!d[sz - 1])
		n--;
	else if (nul)
		return false;
	if (!n)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (!((d[i] >= 0x20 && d[i] < 0x7f) || d[i] == '\n' || d[i] == '\t'))
			return false;
	return true;
}

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

/* One walk over the metadata: the cursor, where it goes, what it found. */
struct walk {
	struct rd		r;
	struct tdat_writer	*w;	/* NULL: only collect @mo */
	struct meta_opts	*mo;
	bool			keep_tsc2nsec;
	int			cpustats;	/* CPUSTAT options written */
	int			ret;	/* the writer's first error */
};

/* Magic, version, endianness, long size, page size. */
static int walk_head(struct walk *k)
{
	struct rd *r = &k->r;
	uint64_t el;

	rd_expect(r, "\x17\x08\x44tracing", 10, "the trace.dat magic");
	if (!r->bad && r->len - r->pos >= 2 && memcmp(r->b + r->pos, "6", 2))
		return tcx_fail(-EPROTO, "the agent sent trace.dat version \"%.2s\" "
				"metadata; only 6 is understood", r->b + r->pos);
	rd_expect(r, "6", 2, "the version");
	/* byte 0: big endian or not, byte 1: the long size */
	el = rd_num(r, 2, "the endianness and long size");
	if (!r->bad && (el & 0xff))
		return tcx_fail(-EPROTO, "the agent's metadata is big endian: not supported");
	if (!r->bad) {
		k->mo->long_size = (int)(el >> 8);
		if (k->mo->long_size != 4 && k->mo->long_size != 8)
			return tcx_fail(-EPROTO, "the agent's metadata says longs are "
					"%d bytes: not 4 or 8", k->mo->long_size);
	}
	k->mo->page_size = (uint32_t)rd_num(r, 4, "the page size");
	return 0;
}

/*
 * A section of @lenbytes' length then its text: to @set when writing,
 * straight from the received bytes (kallsyms may be tens of MiB: no copy
 * of our own).
 */
static void walk_blob(struct walk *k, int lenbytes, const char *what,
		      int (*set)(struct tdat_writer *, const char *, size_t))
{
	struct rd *r = &k->r;
	uint64_t n = rd_num(r, lenbytes, what);

	if (r->bad)
		return;
	if (r->len - r->pos < n) {
		r->bad = what;
		return;
	}
	if (k->w && !k->ret && set)
		k->ret = set(k->w, (const char *)r->b + r->pos, (size_t)n);
	r->pos += (size_t)n;
}

static int add_cmdlines(struct tdat_writer *w, const char *s, size_t n)
{
	tdat_add_cmdlines(w, s, n);
	return 0;	/* a bad line is skipped, not fatal */
}

/*
 * The header page is dom0's own for the long size and page size the
 * metadata's head gave (checked against TRACE_RESP): the guest's text is
 * only compared, never written.
 */
static void walk_header_page(struct walk *k)
{
	struct rd *r = &k->r;
	uint64_t n = rd_num(r, 8, "header_page");
	size_t mlen = 0;
	char *mine;

	if (r->bad || r->len - r->pos < n) {
		r->bad = "header_page";
		return;
	}
	if (!k->w) {
		r->pos += n;
		return;
	}
	mine = tdat_header_page_text(k->mo->page_size, k->mo->long_size, &mlen);
	if (!mine) {
		k->ret = tcx_fail(errno == ENOMEM ? -ENOMEM : -EPROTO,
				  "no header page for %u-byte pages", k->mo->page_size);
	} else {
		if (n != mlen || memcmp(r->b + r->pos, mine, mlen))
			k->mo->header_page_differs = true;
		if (!k->ret)
			k->ret = tdat_set_header_page(k->w, mine, mlen);
	}
	free(mine);
	r->pos += n;
}

/* The header page, ftrace's formats, every system's event formats. */
static void walk_formats(struct walk *k)
{
	struct rd *r = &k->r;
	uint64_t n, m;
	char *s, *sys;

	rd_expect(r, "header_page", 12, "header_page");
	walk_header_page(k);
	rd_expect(r, "header_event", 13, "header_event");
	walk_blob(k, 8, "header_event", NULL);	/* readers ignore it too */
	for (n = rd_num(r, 4, "ftrace formats"); n && !r->bad && !k->ret; n--) {
		m = rd_num(r, 8, "an ftrace format");
		s = rd_text(r, m, "an ftrace format");
		if (s)
			print_format(s, k->mo);
		if (s && k->w)
			k->ret = tdat_add_ftrace_format(k->w, s);
		free(s);
	}
	for (n = rd_num(r, 4, "event systems"); n && !r->bad && !k->ret; n--) {
		const uint8_t *nul = memchr(r->b + r->pos, 0, r->len - r->pos);

		if (!nul) {
			r->bad = "a system name";
			break;
		}
		sys = rd_text(r, (size_t)(nul - (r->b + r->pos)), "a system name");
		rd_expect(r, "", 1, "a system name");
		for (m = rd_num(r, 4, "event formats"); m && !r->bad && !k->ret; m--) {
			uint64_t flen = rd_num(r, 8, "an event format");

			s = rd_text(r, flen, "an event format");
			if (s && k->w) {
				k->ret = tdat_add_event_format(k->w, sys, s);
				if (k->ret == -EEXIST)
					k->ret = 0;	/* the first of a duplicate id wins */
			}
			free(s);
		}
		free(sys);
	}
}

/*
 * One option of the metadata's list. dom0 writes only an allow-list,
 * each checked: UNAME, VERSION, CPUSTAT, PROCMAPS as bounded text, the
 * clock by name (tdat writes TRACECLOCK). TSC2NSEC's mult and shift only
 * when dom0 has none of its own, never its offset. Everything else (DATE,
 * OFFSET, TRACEID, TIME_SHIFT, GUEST, HOOK, BUFFER, CPUCOUNT, unknown
 * ids) is dropped and counted: dom0 writes its own TRACEID and CPU count,
 * time sync its TIME_SHIFT.
 */
static void walk_option(struct walk *k, uint16_t id, const uint8_t *d, uint32_t sz)
{
	struct tdat_writer *w = k->w;
	bool keep = false, own = false;

	switch (id) {
	case TDAT_OPT_TRACEID:
	case TDAT_OPT_CPUCOUNT:
		own = true;	/* dom0 writes its own: replaced, not dropped */
		break;
	case TDAT_OPT_TRACECLOCK: {
		char c[sizeof(k->mo->clock)] = "";

		clock_name(d, sz, c, sizeof(c));
		keep = c[0] && known_clock(c);
		if (keep && !w)
			memcpy(k->mo->clock, c, sizeof(c));
		break;
	}
	case TDAT_OPT_UNAME:
	case TDAT_OPT_VERSION:
		keep = opt_text(d, sz, TEXT_MAX, true);
		if (w && keep)
			k->ret = id == TDAT_OPT_UNAME ? tdat_set_uname(w, (const char *)d)
						      : tdat_set_version(w, (const char *)d);
		break;
	case TDAT_OPT_CPUSTAT:
		keep = k->cpustats < k->mo->cpus && opt_text(d, sz, CPUSTAT_MAX, false);
		if (keep && w) {
			k->cpustats++;
			k->ret = tdat_add_option(w, id, d, sz);
		}
		break;
	case TDAT_OPT_PROCMAPS:
		keep = opt_text(d, sz, PROCMAPS_MAX, false);
		if (keep && w)
			k->ret = tdat_add_option(w, id, d, sz);
		break;
	case TDAT_OPT_TSC2NSEC:
		own = !k->keep_tsc2nsec;
		if (sz >= 8 && k->keep_tsc2nsec) {
			uint32_t mult, shift;

			memcpy(&mult, d, 4);
			memcpy(&shift, d + 4, 4);
			keep = mult && shift <= 32;
			if (keep && w)
				k->ret = tdat_set_tsc2nsec(w, mult, shift, 0);
		}
		break;
	default:
		break;
	}
	if (!keep && !own && w)
		k->mo->dropped++;
}

/* kallsyms, printk, cmdlines, the CPU count, the options. */
static void walk_tail(struct walk *k)
{
	struct rd *r = &k->r;

	walk_blob(k, 4, "kallsyms", tdat_set_kallsyms);
	walk_blob(k, 4, "printk formats", tdat_set_printk);
	walk_blob(k, 8, "cmdlines", add_cmdlines);
	k->mo->cpus = (int)rd_num(r, 4, "the CPU count");
	rd_expect(r, "options  ", 10, "the options");
	while (!r->bad && !k->ret) {
		uint16_t id = (uint16_t)rd_num(r, 2, "an option");
		uint32_t sz;

		if (!id || r->bad)
			break;
		sz = (uint32_t)rd_num(r, 4, "an option");
		if (r->bad || r->len - r->pos < sz) {
			r->bad = "an option";
			break;
		}
		walk_option(k, id, r->b + r->pos, sz);
		r->pos += sz;
	}
}

/*
 * Walk the metadata once. With @w NULL only collect what tdat_open()
 * needs (@mo); with @w feed everything to the writer.
 */
static int meta_walk(const uint8_t *b, size_t len, struct tdat_writer *w,
		     struct meta_opts *mo, bool keep_tsc2nsec)
{
	struct walk k = { .r = { .b = b, .len = len }, .w = w, .mo = mo,
			  .keep_tsc2nsec = keep_tsc2nsec };
	int ret = walk_head(&k);

	if (ret)
		return ret;
	walk_formats(&k);
	if (!k.r.bad && !k.ret)
		walk_tail(&k);
	if (k.r.bad)
		return tcx_fail(-EPROTO, "the agent's metadata is cut or malformed "
				"at %s (offset %zu of %zu bytes)", k.r.bad, k.r.pos, len);
	if (k.ret)
		return tcx_fail(k.ret, "the agent's metadata: %s", tcx_error());
	return 0;
}

int rec_guest_meta_check(const void *buf, size_t len, struct tdat_writer *w,
			 struct rec_guest_meta_info *info)
{
	struct meta_opts mo = { .clock = "" };
	int ret = meta_walk(buf, len, NULL, &mo, true);

	if (!ret && w)
		ret = meta_walk(buf, len, w, &mo, true);
	if (info) {
		*info = (struct rec_guest_meta_info){ .cpus = mo.cpus,
			.page_size = mo.page_size, .long_size = mo.long_size,
			.dropped = mo.dropped,
			.header_page_differs = mo.header_page_differs };
		memcpy(info->clock, mo.clock, sizeof(info->clock));
	}
	return ret;
}

int rec_guest_meta_sink(void *arg, const void *buf, size_t len)
{
	struct meta_buf *m = arg;

	if (m->len + len > m->cap) {
		size_t cap = m->cap ? m->cap : 1 << 16;
		uint8_t *b;

		while (cap < m->len + len)
			cap *= 2;
		/* never more room than the limit allows */
		if (m->max && cap > m->max && m->len + len <= m->max)
			cap = m->max;
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

int rec_guest_make_file(struct rec_guest *g, const struct rec_guest_opts *o,
		     struct meta_buf *mb)
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
	/*
	 * The file's TRACEID is TRACE_RESP's, the id the host's GUEST option
	 * and TIME_SHIFT name; the metadata's own is never used.
	 */
	if (!g->traceid || g->traceid == g->host_traceid)
		return tcx_fail(-EPROTO, "guest %s: the agent's trace id %#" PRIx64
				" is %s: refusing the guest", g->sp.name, g->traceid,
				g->traceid ? "the host's own" : "zero");
	g->print_id = mo.print_id;
	g->has_print = mo.has_print;
	g->long_size = mo.long_size == 4 ? 4 : 8;
	tp.version = o->file_version ? o->file_version : 7;
	tp.page_size = g->page_size;
	tp.cpus = g->cpus;
	tp.max_cpus = g->cpus;
	tp.clock = mo.clock[0] ? mo.clock : NULL;
	g->w = tdat_open(g->wpath, &tp);
	if (!g->w)
		return tcx_fail(errno ? -errno : -EIO, "%s", tcx_error());
	ret = meta_walk(mb->b, mb->len, g->w, &mo, !o->mult);
	/* the writer holds what it needs: the received bytes go before it writes */
	free(mb->b);
	*mb = (struct meta_buf){ 0 };
	g->sum.options_dropped = mo.dropped;
	g->sum.header_page_differs = mo.header_page_differs;
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
