// SPDX-License-Identifier: GPL-2.0
/*
 * Where the metadata of a version 6 trace.dat ends: the agent sends a
 * trace.dat without its CPU data (everything before "flyrecord"), and the
 * host appends the pages it receives. Walks the sections, bounds-checked.
 */
#include <errno.h>
#include <string.h>

#include "agent-internal.h"

struct rd {
	const uint8_t *b;
	size_t len, pos;
	bool big;
	bool bad;
};

static uint64_t num(struct rd *r, int n)
{
	uint64_t v = 0;

	if (r->bad || r->len - r->pos < (size_t)n) {
		r->bad = true;
		return 0;
	}
	for (int i = 0; i < n; i++) {
		int k = r->big ? i : n - 1 - i;

		v = v << 8 | r->b[r->pos + k];
	}
	r->pos += n;
	return v;
}

static void skip(struct rd *r, uint64_t n)
{
	if (r->bad || r->len - r->pos < n)
		r->bad = true;
	else
		r->pos += n;
}

static void expect(struct rd *r, const char *s, size_t n)
{
	if (r->bad || r->len - r->pos < n || memcmp(r->b + r->pos, s, n))
		r->bad = true;
	else
		r->pos += n;
}

static void skip_cstr(struct rd *r)
{
	const uint8_t *nul;

	if (r->bad || r->pos >= r->len ||
	    !(nul = memchr(r->b + r->pos, 0, r->len - r->pos)))
		r->bad = true;
	else
		r->pos = nul - r->b + 1;
}

int agent_meta_length(const uint8_t *buf, size_t len, int version,
		      size_t *meta_len)
{
	struct rd r = { .b = buf, .len = len };
	uint64_t n;

	if (version != 6 || len < 20)
		return -EINVAL;
	expect(&r, "\x17\x08\x44tracing6", 12);
	r.big = r.pos < len && buf[r.pos];
	skip(&r, 1 + 1 + 4);			/* endian, long size, page */
	expect(&r, "header_page", 12);
	skip(&r, num(&r, 8));
	expect(&r, "header_event", 13);
	skip(&r, num(&r, 8));
	for (n = num(&r, 4); n && !r.bad; n--)	/* ftrace formats */
		skip(&r, num(&r, 8));
	for (n = num(&r, 4); n && !r.bad; n--) {	/* event systems */
		skip_cstr(&r);
		for (uint64_t e = num(&r, 4); e && !r.bad; e--)
			skip(&r, num(&r, 8));
	}
	skip(&r, num(&r, 4));			/* kallsyms */
	skip(&r, num(&r, 4));			/* printk */
	skip(&r, num(&r, 8));			/* cmdlines */
	num(&r, 4);				/* cpus */
	expect(&r, "options  ", 10);
	/* options: {u16 id, u32 size, data} until id 0 */
	while (!r.bad) {
		uint64_t id = num(&r, 2);

		if (!id)
			break;
		skip(&r, num(&r, 4));
	}
	if (r.bad || r.len - r.pos < 10 ||
	    (memcmp(buf + r.pos, "flyrecord", 10) &&
	     memcmp(buf + r.pos, "latency  ", 10)))
		return -EBADMSG;
	*meta_len = r.pos;
	return 0;
}
