// SPDX-License-Identifier: GPL-2.0
/*
 * The guest's side of the rounds, read from its ring-buffer pages as they
 * stream in: the stamps of the numbered markers on each CPU.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tdat.h"
#include "tsync-internal.h"

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
	uint64_t		dropped;	/* rounds past TSYNC_MARKS_MAX or the budget */
	size_t			budget;		/* rounds dom0 asked for so far */
	bool			budgeted;
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

	if (c) {
		c->g_min = UINT64_MAX;
		c->budget = SIZE_MAX;
	}
	return c;
}

void tsync_gcollect_allow(struct tsync_gcollect *c, size_t n)
{
	/* unbounded until the first call: tools and tests that scan a whole capture */
	if (!c->budgeted)
		c->budget = 0;
	c->budgeted = true;
	c->budget = n > SIZE_MAX - c->budget ? SIZE_MAX : c->budget + n;
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
	/* the guest decides how many markers it writes: bounded by what dom0
	 * asked, counted */
	if (c->nm >= TSYNC_MARKS_MAX || c->nm >= c->budget) {
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

int tsync_gcollect_page(struct tsync_gcollect *c, const void *page, size_t size,
			int long_size, uint32_t cpu, uint16_t print_id)
{
	struct tdat_page_walk pw;
	struct tdat_page_event ev;
	int found = 0, ret;

	if (!c || !page)
		return -EINVAL;
	/*
	 * The page as readers see it, or nothing of it: a page the guest's
	 * file refuses lends no marker to time sync.
	 */
	ret = tdat_page_check(page, size, long_size, NULL, NULL);
	if (ret)
		return ret;
	tdat_page_walk_init(&pw, page, size, long_size);
	while ((ret = tdat_page_walk_next(&pw, &ev)) == 1) {
		uint16_t id;

		if (ev.ts < c->g_min)
			c->g_min = ev.ts;
		if (ev.ts > c->g_max)
			c->g_max = ev.ts;
		if (ev.len < 2)
			continue;
		id = (uint16_t)(ev.data[0] | ev.data[1] << 8);
		if (c->hook)
			c->hook(c->hook_ctx, cpu, ev.ts, id);
		/* ftrace/print: common header (8), ip (8), the text */
		if (ev.len > 16 && id == print_id) {
			const char *text = (const char *)ev.data + 16;

			ret = marker(c, cpu, ev.ts, text, strnlen(text, ev.len - 16));
			if (ret < 0)
				return ret;
			found += ret;
		}
	}
	return ret < 0 ? ret : found;
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
