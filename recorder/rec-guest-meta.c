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

/* One walk over the metadata: the cursor, where it goes, what it found. */
struct walk {
	struct rd		r;
	struct tdat_writer	*w;	/* NULL: only collect @mo */
	struct meta_opts	*mo;
	bool			keep_tsc2nsec;
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
	if (!r->bad)
		k->mo->long_size = (int)(el >> 8);
	k->mo->page_size = (uint32_t)rd_num(r, 4, "the page size");
	return 0;
}

/* A section of @lenbytes' length then its text: to @set when writing. */
static void walk_blob(struct walk *k, int lenbytes, const char *what,
		      int (*set)(struct tdat_writer *, const char *, size_t))
{
	uint64_t n = rd_num(&k->r, lenbytes, what);
	char *s = rd_text(&k->r, n, what);

	if (s && k->w && !k->ret && set)
		k->ret = set(k->w, s, n);
	free(s);
}

static int add_cmdlines(struct tdat_writer *w, const char *s, size_t n)
{
	tdat_add_cmdlines(w, s, n);
	return 0;	/* a bad line is skipped, not fatal */
}

/* The header page, ftrace's formats, every system's event formats. */
static void walk_formats(struct walk *k)
{
	struct rd *r = &k->r;
	uint64_t n, m;
	char *s, *sys;

	rd_expect(r, "header_page", 12, "header_page");
	walk_blob(k, 8, "header_page", tdat_set_header_page);
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

/* One option of the metadata's list. */
static void walk_option(struct walk *k, uint16_t id, const uint8_t *d, uint32_t sz)
{
	struct tdat_writer *w = k->w;

	switch (id) {
	case TDAT_OPT_TRACECLOCK:
		clock_name(d, sz, k->mo->clock, sizeof(k->mo->clock));
		break;
	case TDAT_OPT_TRACEID:
		if (sz >= 8)
			memcpy(&k->mo->traceid, d, 8);
		break;
	case TDAT_OPT_CPUCOUNT:
	case TDAT_OPT_BUFFER:	/* instances: the agent sends none */
		break;
	case TDAT_OPT_UNAME:
	case TDAT_OPT_VERSION:
		if (w && sz && !d[sz - 1])
			k->ret = id == TDAT_OPT_UNAME ? tdat_set_uname(w, (const char *)d)
						      : tdat_set_version(w, (const char *)d);
		break;
	case TDAT_OPT_TSC2NSEC:
		if (w && sz >= 16 && k->keep_tsc2nsec) {
			uint32_t mult, shift;
			uint64_t off;

			memcpy(&mult, d, 4);
			memcpy(&shift, d + 4, 4);
			memcpy(&off, d + 8, 8);
			k->ret = tdat_set_tsc2nsec(w, mult, shift, off);
		}
		break;
	default:
		/* v7 section ids cannot be in v6 metadata; the rest as is */
		if (w && (id < 15 || id > 22))
			k->ret = tdat_add_option(w, id, d, sz);
		break;
	}
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

int rec_guest_meta_sink(void *arg, const void *buf, size_t len)
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

int rec_guest_make_file(struct rec_guest *g, const struct rec_guest_opts *o,
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
