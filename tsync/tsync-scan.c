// SPDX-License-Identifier: GPL-2.0
/*
 * The guest's side of the rounds, read from its ring-buffer pages as they
 * stream in: the stamps of the numbered markers on each CPU.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tsync-internal.h"

#define TYPE_PADDING	29
#define TYPE_EXTEND	30
#define TYPE_STAMP	31
#define COMMIT_MASK	((1u << 27) - 1)

struct pend {
	uint32_t	seq;
	uint64_t	a;
	bool		open;
};

struct tsync_gcollect {
	struct pend		*p;	/* one open "a" per CPU */
	uint32_t		np;
	struct tsync_gmark	*m;
	size_t			nm, maxm;
	uint64_t		dropped;	/* rounds past TSYNC_MARKS_MAX */
	uint64_t		g_min, g_max;
	tsync_event_fn		hook;
	void			*hook_ctx;
};

void tsync_gcollect_set_hook(struct tsync_gcollect *c, tsync_event_fn fn, void *ctx)
{
	c->hook = fn;
	c->hook_ctx = ctx;
}

struct tsync_gcollect *tsync_gcollect_new(void)
{
	struct tsync_gcollect *c = calloc(1, sizeof(*c));

	if (c)
		c->g_min = UINT64_MAX;
	return c;
}

void tsync_gcollect_free(struct tsync_gcollect *c)
{
	if (!c)
		return;
	free(c->p);
	free(c->m);
	free(c);
}

static int marker(struct tsync_gcollect *c, uint32_t cpu, uint64_t ts,
		  const char *text, size_t len)
{
	uint32_t seq;
	bool before;

	if (!tsync_marker_parse(text, len, &seq, &before))
		return 0;
	if (cpu >= c->np) {
		struct pend *q = realloc(c->p, (cpu + 1) * sizeof(*q));

		if (!q)
			return -ENOMEM;
		memset(q + c->np, 0, (cpu + 1 - c->np) * sizeof(*q));
		c->p = q;
		c->np = cpu + 1;
	}
	if (before) {
		c->p[cpu] = (struct pend){ .seq = seq, .a = ts, .open = true };
		return 1;
	}
	/* a "b" without its "a" on this CPU: the process moved, no round */
	if (!c->p[cpu].open || c->p[cpu].seq != seq)
		return 1;
	c->p[cpu].open = false;
	/* the guest decides how many markers it writes: bounded, counted */
	if (c->nm >= TSYNC_MARKS_MAX) {
		c->dropped++;
		return 1;
	}
	if (c->nm == c->maxm) {
		size_t n = c->maxm ? c->maxm * 2 : 64;
		struct tsync_gmark *q = realloc(c->m, n * sizeof(*q));

		if (!q)
			return -ENOMEM;
		c->m = q;
		c->maxm = n;
	}
	c->m[c->nm++] = (struct tsync_gmark){ .seq = seq, .vcpu = cpu, .a = c->p[cpu].a,
					      .b = ts };
	return 1;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

int tsync_gcollect_page(struct tsync_gcollect *c, const void *page, size_t size,
			int long_size, uint32_t cpu, uint16_t print_id)
{
	const uint8_t *pg = page, *d, *end;
	uint64_t ts, commit = 0;
	int found = 0, ret;

	if (!c || !page || (long_size != 4 && long_size != 8) || size < 8u + long_size)
		return -EINVAL;
	memcpy(&ts, pg, 8);
	memcpy(&commit, pg + 8, (size_t)long_size);
	commit &= COMMIT_MASK;
	d = pg + 8 + long_size;
	if (commit > size - 8 - (size_t)long_size)
		return -EBADMSG;
	end = d + commit;
	while (d + 4 <= end) {
		uint32_t h = rd32(d), type = h & 31, delta = h >> 5;
		size_t len;

		d += 4;
		switch (type) {
		case TYPE_PADDING:
			if (!delta)
				return found;	/* the rest of the page is padding */
			if (d + 4 > end)
				return -EBADMSG;
			len = rd32(d);
			d += len;	/* the length counts its own word */
			continue;
		case TYPE_EXTEND:
			if (d + 4 > end)
				return -EBADMSG;
			ts += ((uint64_t)rd32(d) << 27) + delta;
			d += 4;
			continue;
		case TYPE_STAMP:
			if (d + 4 > end)
				return -EBADMSG;
			/* absolute: the low 59 bits, the top kept */
			ts = (ts & ~((1ull << 59) - 1)) |
			     (((uint64_t)rd32(d) << 27) | delta);
			d += 4;
			continue;
		case 0:
			if (d + 4 > end)
				return -EBADMSG;
			len = rd32(d) - 4;
			d += 4;
			break;
		default:
			len = (size_t)type * 4;
			break;
		}
		ts += delta;
		if (len > (size_t)(end - d))
			return -EBADMSG;
		if (ts < c->g_min)
			c->g_min = ts;
		if (ts > c->g_max)
			c->g_max = ts;
		if (c->hook && len >= 2)
			c->hook(c->hook_ctx, cpu, ts, (uint16_t)(d[0] | d[1] << 8));
		/* ftrace/print: common header (8), ip (8), the text */
		if (len > 16 && (uint16_t)(d[0] | d[1] << 8) == print_id) {
			const char *text = (const char *)d + 16;
			size_t n = strnlen(text, len - 16);

			ret = marker(c, cpu, ts, text, n);
			if (ret < 0)
				return ret;
			found += ret;
		}
		d += len;
	}
	return found;
}

size_t tsync_gcollect_marks(const struct tsync_gcollect *c, const struct tsync_gmark **out,
			    uint64_t *g_min, uint64_t *g_max)
{
	if (out)
		*out = c->m;
	if (g_min)
		*g_min = c->g_min;
	if (g_max)
		*g_max = c->g_max;
	return c->nm;
}

uint64_t tsync_gcollect_dropped(const struct tsync_gcollect *c)
{
	return c->dropped;
}
