// SPDX-License-Identifier: GPL-2.0
/*
 * From marker rounds to TIME_SHIFT samples.
 *
 * A round gives off in [a - scale(h_exit), b - scale(h_entry)]: marker a
 * was stamped before the exit, marker b after the entry. Rounds of one vCPU
 * are intersected in time order; an empty intersection means the offset
 * moved (restore, TSC write) and starts a new epoch.
 *
 * The samples are written for trace-cmd's reader as it is: INTERPOLATE,
 * host = g + off_i + ((g - t_i) * (off_i+1 - off_i) + d/2) / d, with the
 * pair chosen by binary search and the first/last pair extrapolated. A step
 * is two samples one tick apart; a scaled guest gets samples close enough
 * that the reader's 64-bit product cannot overflow.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcx-util.h"
#include "tdat.h"
#include "tsync-internal.h"

typedef __int128 s128;

#define MAX_POINTS	100000

struct round {
	uint32_t	vcpu;
	uint64_t	a;
	int64_t		lo, hi;
};

struct pts {
	uint64_t	*t;
	int64_t		*o;
	uint32_t	n, max;
};

static int cmp_hmark(const void *x, const void *y)
{
	const struct tsync_hmark *a = x, *b = y;

	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return a->vcpu < b->vcpu ? -1 : a->vcpu > b->vcpu;
}

static int cmp_round(const void *x, const void *y)
{
	const struct round *a = x, *b = y;

	if (a->vcpu != b->vcpu)
		return a->vcpu < b->vcpu ? -1 : 1;
	return a->a < b->a ? -1 : a->a > b->a;
}

static const struct tsync_hmark *find_hmark(const struct tsync_hmark *h, size_t nh,
					    uint32_t seq, uint32_t vcpu)
{
	size_t lo = 0, hi = nh;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (h[mid].seq < seq || (h[mid].seq == seq && h[mid].vcpu < vcpu))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < nh && h[lo].seq == seq && h[lo].vcpu == vcpu)
		return &h[lo];
	return NULL;
}

static int pts_reserve(struct pts *p, uint32_t need)
{
	uint32_t n = p->max ? p->max : 16;
	uint64_t *t2;
	int64_t *o2;

	if (need <= p->max)
		return 0;
	while (n < need)
		n *= 2;
	if (n > MAX_POINTS)
		return -E2BIG;
	t2 = realloc(p->t, n * sizeof(*t2));
	if (!t2)
		return -ENOMEM;
	p->t = t2;
	o2 = realloc(p->o, n * sizeof(*o2));
	if (!o2)
		return -ENOMEM;
	p->o = o2;
	p->max = n;
	return 0;
}

static int pts_add(struct pts *p, uint64_t t, int64_t o)
{
	int ret;

	if (p->n && t <= p->t[p->n - 1])
		return 0;	/* readers keep one sample per ts */
	ret = pts_reserve(p, p->n + 1);
	if (ret)
		return ret;
	p->t[p->n] = t;
	p->o[p->n++] = o;
	return 0;
}

/* |a| of a 128-bit value, as unsigned (no overflow at the minimum) */
static unsigned __int128 mag(s128 a)
{
	return a < 0 ? -(unsigned __int128)a : (unsigned __int128)a;
}

/*
 * trace-cmd's correction between samples i and i+1, in 128 bits: the same
 * result wherever the reader's 64-bit arithmetic does not overflow, and
 * saturated (never undefined) where guest-supplied samples would make it.
 * |g - t| and |o' - o| are under 2^64, so their product's magnitude fits
 * an unsigned 128-bit integer; the sign is handled apart.
 */
static int64_t interp(const uint64_t *t, const int64_t *o, uint32_t i, uint64_t g)
{
	unsigned __int128 d = (unsigned __int128)t[i + 1] - t[i];
	s128 dg = (s128)g - t[i], dof = (s128)o[i + 1] - o[i];
	unsigned __int128 p = mag(dg) * mag(dof), q;
	bool neg = (dg < 0) != (dof < 0);
	s128 r;

	if (t[i + 1] <= t[i])
		return o[i];
	/* (prod + d/2) / d, truncated toward zero as C divides */
	if (!neg)
		q = (p + d / 2) / d;
	else
		q = p > d / 2 ? (p - d / 2) / d : 0;
	if (q > (unsigned __int128)INT64_MAX + 1)
		return neg ? INT64_MIN : INT64_MAX;
	r = (s128)o[i] + (neg ? -(s128)q : (s128)q);
	if (r > INT64_MAX)
		return INT64_MAX;
	if (r < INT64_MIN)
		return INT64_MIN;
	return (int64_t)r;
}

static int64_t eval(const uint64_t *t, const int64_t *o, uint32_t n, uint64_t g)
{
	uint32_t lo = 0, hi = n;

	if (n == 1)
		return o[0];
	/* the largest i with t[i] <= g, kept in [0, n - 2] */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t[mid] <= g)
			lo = mid + 1;
		else
			hi = mid;
	}
	lo = lo ? lo - 1 : 0;
	if (lo > n - 2)
		lo = n - 2;
	return interp(t, o, lo, g);
}

uint64_t tsync_apply(const struct tsync_solution *s, uint32_t cpu, uint64_t g)
{
	const uint64_t *t;
	const int64_t *o;

	if (cpu >= s->ncpu || !s->count)
		return g;
	tsync_solution_cpu(s, cpu, &t, &o);
	return g + (uint64_t)eval(t, o, s->count, g);
}

void tsync_solution_cpu(const struct tsync_solution *s, uint32_t cpu,
			const uint64_t **ts, const int64_t **off)
{
	*ts = s->ts + (size_t)cpu * s->count;
	*off = s->offset + (size_t)cpu * s->count;
}

void tsync_solution_free(struct tsync_solution *s)
{
	if (!s)
		return;
	free(s->epochs);
	free(s->ts);
	free(s->offset);
	memset(s, 0, sizeof(*s));
}

/* host - guest at guest time g with offset off */
static int64_t shift_at(const struct tsync_scale *sc, int64_t off, uint64_t g)
{
	return (int64_t)(tsync_host_of(sc, off, g) - g);
}

/* Guest ticks between samples of a scaled segment: the reader's
 * (g - t) * (o' - o) must stay far from 2^63. */
static uint64_t scaled_step(const struct tsync_scale *sc)
{
	long double r = (long double)sc->ratio / powl(2.0L, sc->frac);
	long double k = fabsl(1.0L / r - 1.0L);
	long double s;

	if (k == 0)
		return UINT64_MAX;
	s = sqrtl(powl(2.0L, 60) / k);
	if (s > (long double)(1ull << 40))
		return 1ull << 40;
	if (s < 1024)
		return 1024;
	return (uint64_t)s;
}

/* One segment [t0, t1] of constant offset into the points. */
static int segment(struct pts *p, const struct tsync_scale *sc, int64_t off,
		   uint64_t t0, uint64_t t1)
{
	int ret;

	if (tsync_scale_identity(sc)) {
		ret = pts_add(p, t0, -off);
		if (!ret && t1 > t0)
			ret = pts_add(p, t1, -off);
		return ret;
	}
	{
		uint64_t step = scaled_step(sc), t = t0;

		for (;;) {
			ret = pts_add(p, t, shift_at(sc, off, t));
			if (ret || t >= t1)
				return ret;
			t = t1 - t > step ? t + step : t1;
		}
	}
}

/* A point before the first one (pts_add only appends). */
static int pts_prepend(struct pts *p, uint64_t t, int64_t o)
{
	int ret = pts_reserve(p, p->n + 1);

	if (ret)
		return ret;
	memmove(p->t + 1, p->t, p->n * sizeof(*p->t));
	memmove(p->o + 1, p->o, p->n * sizeof(*p->o));
	p->t[0] = t;
	p->o[0] = o;
	p->n++;
	return 0;
}

/*
 * One more point a tick after the last, or before the first when the last
 * is at UINT64_MAX (t + 1 would wrap, pts_add would refuse it and the
 * caller's loop would never end).
 */
static int pad_end(struct pts *p)
{
	if (p->t[p->n - 1] < UINT64_MAX)
		return pts_add(p, p->t[p->n - 1] + 1, p->o[p->n - 1]);
	if (p->t[0] > 0)
		return pts_prepend(p, p->t[0] - 1, p->o[0]);
	return -ERANGE;	/* every time taken: cannot happen under MAX_POINTS */
}

/* Split the longest segment in two, exactly where the reader already is. */
static int pad(struct pts *p)
{
	uint32_t best = 0;
	uint64_t len = 0, mid;

	if (p->n < 2) {
		/* one point: a second one a tick away, same offset */
		return pad_end(p);
	}
	for (uint32_t i = 0; i + 1 < p->n; i++) {
		if (p->t[i + 1] - p->t[i] > len) {
			len = p->t[i + 1] - p->t[i];
			best = i;
		}
	}
	if (len < 2)
		return pad_end(p);
	mid = p->t[best] + len / 2;
	{
		int64_t o = interp(p->t, p->o, best, mid);
		int ret = pts_reserve(p, p->n + 1);

		if (ret)
			return ret;
		memmove(p->t + best + 2, p->t + best + 1, (p->n - best - 1) * sizeof(*p->t));
		memmove(p->o + best + 2, p->o + best + 1, (p->n - best - 1) * sizeof(*p->o));
		p->t[best + 1] = mid;
		p->o[best + 1] = o;
		p->n++;
	}
	return 0;
}

/* hi - lo for lo <= hi, without signed overflow */
static uint64_t width(int64_t lo, int64_t hi)
{
	return (uint64_t)hi - (uint64_t)lo;
}

/* the middle of [lo, hi], lo <= hi, without signed overflow */
static int64_t middle(int64_t lo, int64_t hi)
{
	return (int64_t)((uint64_t)lo + width(lo, hi) / 2);
}

static int add_epoch(struct tsync_solution *s, uint32_t *max, const struct tsync_epoch *e)
{
	if (s->nepochs == *max) {
		uint32_t n = *max ? *max * 2 : 8;
		struct tsync_epoch *q = realloc(s->epochs, n * sizeof(*q));

		if (!q)
			return -ENOMEM;
		s->epochs = q;
		*max = n;
	}
	s->epochs[s->nepochs++] = *e;
	return 0;
}

/*
 * Drift, not a jump: a step within the brackets that measured it, or one
 * under 1000 ppm of the time between the epochs (a rate error: the ratio
 * assumed is not quite the guest's). A restore or a TSC write moves the
 * offset by far more than that.
 */
static bool drifted(const struct tsync_epoch *prev, const struct tsync_epoch *e)
{
	s128 d = (s128)e->off - prev->off;
	s128 dt = (s128)e->g_first - prev->g_last;

	if (d < 0)
		d = -d;
	/* the intersections, not the widest round: a round that straddles a
	 * jump (marker a before it, b after) spans both offsets */
	return d <= ((s128)prev->hi - prev->lo) + ((s128)e->hi - e->lo) || d * 1000 <= dt;
}

#define WIDE_MIN_ROUNDS	8	/* rounds of a vCPU before outliers are dropped */
#define WIDE_FACTOR	8	/* an outlier: wider than this times the median */

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/*
 * The widest bracket kept among the @n rounds of one vCPU whose offset
 * drifts: WIDE_FACTOR times their median width (UINT64_MAX for fewer than
 * WIDE_MIN_ROUNDS). A round far wider than the vCPU's usual had a marker
 * stamped late (the guest's process descheduled inside it) or straddles
 * an offset change; with a drifting offset its width would be the bound.
 */
static int wide_cut(const struct round *r, size_t n, uint64_t *cut)
{
	uint64_t *w, med;

	*cut = UINT64_MAX;
	if (n < WIDE_MIN_ROUNDS)
		return 0;
	w = malloc(n * sizeof(*w));
	if (!w)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		w[i] = width(r[i].lo, r[i].hi);
	qsort(w, n, sizeof(*w), cmp_u64);
	med = w[n / 2] ? w[n / 2] : 1;
	*cut = med > UINT64_MAX / WIDE_FACTOR ? UINT64_MAX : med * WIDE_FACTOR;
	free(w);
	return 0;
}

/*
 * The guest time where epoch @e hands over to @next. The change happened
 * at some host time between their rounds; after a forward jump of d ticks,
 * old-epoch stamps end below (host of next's first round) + e->off and
 * new-epoch stamps start above (host of e's last round) + next->off: the
 * middle of those two is right for any change time when the jump exceeds
 * the gap between the rounds. After a backward jump the guest's times
 * overlap; stamps before next's first round stay with the old epoch.
 */
static uint64_t boundary(const struct tsync_epoch *e, const struct tsync_epoch *next)
{
	s128 b = next->g_first;

	if (next->off > e->off) {
		s128 d = (s128)next->off - e->off;
		s128 lo = (s128)next->g_first - d, hi = (s128)e->g_last + d;

		b = lo + (hi - lo) / 2;
	}
	if (b <= (s128)e->g_last)
		b = (s128)e->g_last + 1;
	if (b > (s128)next->g_first)
		b = next->g_first;
	return (uint64_t)b;
}

/* The guest time a drifting epoch's offset stands for: the middle of its rounds. */
static uint64_t mid_time(const struct tsync_epoch *e)
{
	return e->g_first + (e->g_last - e->g_first) / 2;
}

/*
 * Points of vCPU @v from its epochs (those of @src_v when it has none). A
 * drifting offset gets one point per epoch, where it was measured: the
 * reader interpolates between them, and past the first and last pairs it
 * extrapolates along the rate they measured. Holding an offset over its
 * epoch's rounds, or past the last one, would add the drift over that time
 * to the error, beyond any round's bracket.
 */
static int build_points(const struct tsync_solve_opts *o, const struct tsync_solution *s,
			uint32_t src_v, struct pts *p)
{
	bool jumped = false;	/* nb: the handover after a jump */
	uint64_t nb = 0;
	int ret = 0;

	for (uint32_t i = 0, k = 0; i < s->nepochs && !ret; i++) {
		const struct tsync_epoch *e = &s->epochs[i], *next = NULL;
		bool drift_next, moving;
		uint64_t t0, t1;

		if (e->vcpu != src_v)
			continue;
		for (uint32_t j = i + 1; j < s->nepochs; j++)
			if (s->epochs[j].vcpu == src_v) {
				next = &s->epochs[j];
				break;
			}
		drift_next = next && next->drift;
		moving = e->drift || drift_next;
		if (k == 0)
			t0 = moving ? mid_time(e) :
			     o->g_start < e->g_first ? o->g_start : e->g_first;
		else if (jumped)
			t0 = nb;
		else
			t0 = mid_time(e);	/* drifted here from the last epoch */
		jumped = false;
		if (drift_next || (!next && e->drift)) {
			t1 = mid_time(e) > t0 ? mid_time(e) : t0;
		} else if (next) {
			nb = boundary(e, next);
			t1 = nb ? nb - 1 : 0;
			if (t1 < t0)
				t1 = t0;
			jumped = true;
		} else {
			t1 = o->g_end > e->g_last ? o->g_end : e->g_last;
		}
		ret = segment(p, &o->scale, e->off, t0, t1);
		k++;
	}
	return ret;
}

/*
 * What the reader's extrapolation adds before the first and after the
 * last point of a drifting vCPU, up to its events' range: the line through
 * two points each within its bound b_a (the nearer) and b_b, @d apart, is
 * off by at most b_a + (b_a + b_b) * x / d at x past the nearer.
 */
static uint64_t extrap_bound(const struct tsync_solve_opts *o, const struct tsync_solution *s,
			     uint32_t v)
{
	const struct tsync_epoch *f[2] = { NULL, NULL }, *l[2] = { NULL, NULL };
	long double worst = 0;

	for (uint32_t i = 0; i < s->nepochs; i++) {
		const struct tsync_epoch *e = &s->epochs[i];

		if (e->vcpu != v)
			continue;
		if (!f[0])
			f[0] = e;
		else if (!f[1])
			f[1] = e;
		l[1] = l[0];
		l[0] = e;
	}
	/* only where the points are the epochs' middles */
	if (f[1] && f[1]->drift) {
		uint64_t a = mid_time(f[0]), d = mid_time(f[1]) - a;

		if (o->g_start < a && d)
			worst = f[0]->widest + (long double)(f[0]->widest + f[1]->widest) *
				(a - o->g_start) / d;
	}
	if (l[1] && l[0]->drift) {
		uint64_t a = mid_time(l[0]), d = a - mid_time(l[1]);
		long double w;

		if (o->g_end > a && d) {
			w = l[0]->widest + (long double)(l[0]->widest + l[1]->widest) *
			    (o->g_end - a) / d;
			if (w > worst)
				worst = w;
		}
	}
	return worst >= (long double)UINT64_MAX ? UINT64_MAX : (uint64_t)ceill(worst);
}

static int finish(const struct tsync_solve_opts *o, struct tsync_solution *s,
		  const int32_t *src)
{
	struct pts *p = calloc(o->nvcpu, sizeof(*p));
	uint32_t count = 0;
	int ret = 0;

	if (!p)
		return -ENOMEM;
	for (uint32_t v = 0; v < o->nvcpu && !ret; v++) {
		ret = build_points(o, s, (uint32_t)src[v], &p[v]);
		if (!ret && p[v].n < 2)
			ret = pad(&p[v]);
		if (!ret && p[v].n > count)
			count = p[v].n;
	}
	for (uint32_t v = 0; v < o->nvcpu && !ret; v++)
		while (!ret && p[v].n < count)
			ret = pad(&p[v]);
	if (!ret) {
		s->ncpu = o->nvcpu;
		s->count = count;
		s->flags = 1;	/* INTERPOLATE */
		s->ts = calloc((size_t)count * o->nvcpu, sizeof(*s->ts));
		s->offset = calloc((size_t)count * o->nvcpu, sizeof(*s->offset));
		if (!s->ts || !s->offset)
			ret = -ENOMEM;
	}
	for (uint32_t v = 0; v < o->nvcpu && !ret; v++) {
		memcpy(s->ts + (size_t)v * count, p[v].t, count * sizeof(*s->ts));
		memcpy(s->offset + (size_t)v * count, p[v].o, count * sizeof(*s->offset));
	}
	for (uint32_t v = 0; v < o->nvcpu; v++) {
		free(p[v].t);
		free(p[v].o);
	}
	free(p);
	return ret;
}

/* Which vCPU's epochs each vCPU uses: its own, else the first that has some. */
static int sources(const struct tsync_solve_opts *o, const struct tsync_solution *s,
		   int32_t *src)
{
	int32_t any = -1;

	for (uint32_t v = 0; v < o->nvcpu; v++)
		src[v] = -1;
	for (uint32_t i = 0; i < s->nepochs; i++) {
		src[s->epochs[i].vcpu] = (int32_t)s->epochs[i].vcpu;
		if (any < 0 || (int32_t)s->epochs[i].vcpu < any)
			any = (int32_t)s->epochs[i].vcpu;
	}
	if (any < 0)
		return -ENODATA;
	for (uint32_t v = 0; v < o->nvcpu; v++)
		if (src[v] < 0)
			src[v] = any;
	return 0;
}

/*
 * The epochs of one vCPU from its rounds @r[0..@n) in time order, leaving
 * out those wider than @cut: intersect while the brackets meet, a new
 * epoch when they do not (a drift or a jump).
 */
static int vcpu_epochs(const struct round *r, size_t n, uint64_t cut,
		       struct tsync_solution *out, uint32_t *maxe)
{
	struct tsync_epoch e;
	size_t j = 0;
	int ret = 0;

	/* the median is kept, so some round is */
	while (j + 1 < n && width(r[j].lo, r[j].hi) > cut) {
		out->rounds_wide++;
		j++;
	}
	e = (struct tsync_epoch){ .vcpu = r[j].vcpu, .lo = r[j].lo, .hi = r[j].hi,
				  .g_first = r[j].a, .g_last = r[j].a, .rounds = 1,
				  .widest = width(r[j].lo, r[j].hi) };
	for (j++; j < n && !ret; j++) {
		int64_t lo = r[j].lo > e.lo ? r[j].lo : e.lo;
		int64_t hi = r[j].hi < e.hi ? r[j].hi : e.hi;
		uint64_t w = width(r[j].lo, r[j].hi);

		if (w > cut) {
			out->rounds_wide++;
			continue;
		}
		if (lo <= hi) {
			e.lo = lo;
			e.hi = hi;
			e.g_last = r[j].a;
			e.rounds++;
			if (w > e.widest)
				e.widest = w;
			continue;
		}
		e.off = middle(e.lo, e.hi);
		out->rounds_used += e.rounds;
		ret = add_epoch(out, maxe, &e);
		e = (struct tsync_epoch){ .vcpu = r[j].vcpu, .lo = r[j].lo, .hi = r[j].hi,
					  .g_first = r[j].a, .g_last = r[j].a,
					  .rounds = 1, .widest = w };
		e.off = middle(e.lo, e.hi);
		if (!ret)
			e.drift = drifted(&out->epochs[out->nepochs - 1], &e);
	}
	if (!ret) {
		e.off = middle(e.lo, e.hi);
		out->rounds_used += e.rounds;
		ret = add_epoch(out, maxe, &e);
	}
	return ret;
}

int tsync_solve(const struct tsync_solve_opts *o, const struct tsync_gmark *g, size_t ng,
		const struct tsync_hmark *h, size_t nh, struct tsync_solution *out)
{
	struct tsync_hmark *hs = NULL;
	struct round *r = NULL;
	int32_t *src = NULL;
	uint32_t maxe = 0;
	size_t nr = 0;
	int ret = 0;

	if (!o || !out || !o->nvcpu || (ng && !g) || (nh && !h))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	hs = malloc((nh ? nh : 1) * sizeof(*hs));
	r = malloc((ng ? ng : 1) * sizeof(*r));
	src = malloc(o->nvcpu * sizeof(*src));
	if (!hs || !r || !src) {
		ret = -ENOMEM;
		goto out;
	}
	if (nh)
		memcpy(hs, h, nh * sizeof(*hs));
	qsort(hs, nh, sizeof(*hs), cmp_hmark);
	for (size_t i = 0; i < ng; i++) {
		const struct tsync_hmark *m = find_hmark(hs, nh, g[i].seq, g[i].vcpu);
		s128 lo, hi;

		if (!m || g[i].vcpu >= o->nvcpu || g[i].b < g[i].a) {
			out->rounds_unmatched++;
			continue;
		}
		lo = (s128)g[i].a - tsync_scale_fwd(&o->scale, m->h_exit);
		hi = (s128)g[i].b - tsync_scale_fwd(&o->scale, m->h_entry);
		if (lo > hi) {
			out->rounds_unmatched++;
			continue;
		}
		/* an offset beyond 2^62 is no clock: the reader would overflow */
		if (lo < -TSYNC_OFFSET_MAX || hi > TSYNC_OFFSET_MAX) {
			out->samples_refused++;
			continue;
		}
		r[nr++] = (struct round){ .vcpu = g[i].vcpu, .a = g[i].a,
					  .lo = (int64_t)lo, .hi = (int64_t)hi };
	}
	qsort(r, nr, sizeof(*r), cmp_round);
	for (size_t i = 0; i < nr && !ret; ) {
		uint32_t v = r[i].vcpu, first = out->nepochs, used = out->rounds_used;
		size_t j = i, end = i;
		bool drift = false;
		uint64_t cut;

		while (end < nr && r[end].vcpu == v)
			end++;
		/* the first round of a vCPU warms caches and TLBs: never used */
		if (!o->keep_first && end - i >= 2) {
			out->rounds_discarded++;
			j++;
		}
		ret = vcpu_epochs(r + j, end - j, UINT64_MAX, out, &maxe);
		for (uint32_t k = first; !ret && k < out->nepochs; k++)
			drift |= out->epochs[k].drift;
		/*
		 * A drifting offset cannot be intersected across rounds: its
		 * bound is the widest round, so the outliers go (a constant one
		 * keeps them all: they can only narrow its intersection).
		 */
		if (drift)
			ret = wide_cut(r + j, end - j, &cut);
		if (drift && !ret && cut != UINT64_MAX) {
			out->nepochs = first;
			out->rounds_used = used;
			ret = vcpu_epochs(r + j, end - j, cut, out, &maxe);
		}
		i = end;
	}
	if (ret)
		goto out;
	if (o->pv) {
		/* a PV guest reads the host TSC: confirm 0 rather than assume it */
		bool ok = out->nepochs > 0;

		for (uint32_t i = 0; i < out->nepochs; i++)
			ok &= out->epochs[i].lo <= 0 && out->epochs[i].hi >= 0;
		out->pv_confirmed = ok;
		if (ok)
			for (uint32_t i = 0; i < out->nepochs; i++)
				out->epochs[i].off = 0;
	}
	for (uint32_t i = 0; i < out->nepochs; i++) {
		const struct tsync_epoch *e = &out->epochs[i];
		bool moving = e->drift || (i + 1 < out->nepochs && out->epochs[i + 1].drift &&
					   out->epochs[i + 1].vcpu == e->vcpu);
		/* constant: half the intersection; drifting: the truth may sit
		 * anywhere in each round's own bracket */
		uint64_t b = moving ? e->widest : width(e->lo, e->hi) / 2 +
				    (width(e->lo, e->hi) & 1);

		if (out->pv_confirmed)
			b = 0;
		if (b > out->bound)
			out->bound = b;
	}
	for (uint32_t v = 0; v < o->nvcpu && !out->pv_confirmed; v++) {
		uint64_t b = extrap_bound(o, out, v);

		if (b > out->bound)
			out->bound = b;
	}
	out->scale = o->scale;
	ret = sources(o, out, src);
	if (!ret)
		ret = finish(o, out, src);
out:
	free(hs);
	free(r);
	free(src);
	if (ret)
		tsync_solution_free(out);
	return ret;
}

/* ---- emulated TSC ---- */

struct vp {
	uint64_t	g;
	int64_t		o;	/* host - guest, host taken mid-exit */
};

static int cmp_vp_g(const void *x, const void *y)
{
	const struct vp *a = x, *b = y;

	return a->g < b->g ? -1 : a->g > b->g;
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return a < b ? -1 : a > b;
}

#define VTSC_GROUP	32

int tsync_solve_vtsc(const struct tsync_solve_opts *o, const struct tsync_vpair *p, size_t n,
		     struct tsync_solution *out)
{
	struct pts *pt;
	struct vp *v = NULL;
	int64_t *tmp = NULL;
	uint32_t count = 0;
	int ret = 0;
	bool any = false;

	if (!o || !out || !o->nvcpu || (n && !p))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	pt = calloc(o->nvcpu, sizeof(*pt));
	v = malloc((n ? n : 1) * sizeof(*v));
	tmp = malloc(VTSC_GROUP * sizeof(*tmp));
	if (!pt || !v || !tmp) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t c = 0; c < o->nvcpu && !ret; c++) {
		size_t k = 0;

		for (size_t i = 0; i < n; i++) {
			uint64_t hm;
			int64_t off;

			if (p[i].vcpu != c)
				continue;
			hm = p[i].h_exit + (p[i].h_entry - p[i].h_exit) / 2;
			off = (int64_t)(hm - p[i].guest);
			/* no clock: a reader's interpolation of it would overflow */
			if (off > TSYNC_OFFSET_MAX || off < -TSYNC_OFFSET_MAX) {
				out->samples_refused++;
				continue;
			}
			v[k++] = (struct vp){ .g = p[i].guest, .o = off };
		}
		if (!k)
			continue;
		any = true;
		qsort(v, k, sizeof(*v), cmp_vp_g);
		/* a median per group: outliers (a deschedule in the exit) drop out */
		for (size_t i = 0; i < k && !ret; i += VTSC_GROUP) {
			size_t m = k - i < VTSC_GROUP ? k - i : VTSC_GROUP;
			uint64_t b;

			for (size_t j = 0; j < m; j++)
				tmp[j] = v[i + j].o;
			qsort(tmp, m, sizeof(*tmp), cmp_i64);
			b = width(tmp[m / 10], tmp[m * 9 / 10 >= m ? m - 1 : m * 9 / 10]) / 2;
			if (b > out->bound)
				out->bound = b;
			ret = pts_add(&pt[c], v[i + m / 2].g, tmp[m / 2]);
			out->rounds_used += (uint32_t)m;
		}
	}
	if (!ret && !any)
		ret = -ENODATA;
	for (uint32_t c = 0; c < o->nvcpu && !ret; c++) {
		if (!pt[c].n) {
			/* a vCPU without pairs takes vCPU 0's (or the first) map */
			for (uint32_t d = 0; d < o->nvcpu && !ret; d++) {
				if (!pt[d].n || d == c)
					continue;
				for (uint32_t i = 0; i < pt[d].n && !ret; i++)
					ret = pts_add(&pt[c], pt[d].t[i], pt[d].o[i]);
				break;
			}
		}
		while (!ret && pt[c].n < 2)
			ret = pad(&pt[c]);
		if (pt[c].n > count)
			count = pt[c].n;
	}
	for (uint32_t c = 0; c < o->nvcpu && !ret; c++)
		while (!ret && pt[c].n < count)
			ret = pad(&pt[c]);
	if (!ret) {
		out->scale = o->scale;
		out->ncpu = o->nvcpu;
		out->count = count;
		out->flags = 1;
		out->ts = calloc((size_t)count * o->nvcpu, sizeof(*out->ts));
		out->offset = calloc((size_t)count * o->nvcpu, sizeof(*out->offset));
		if (!out->ts || !out->offset)
			ret = -ENOMEM;
	}
	for (uint32_t c = 0; c < o->nvcpu && !ret; c++) {
		memcpy(out->ts + (size_t)c * count, pt[c].t, count * sizeof(*out->ts));
		memcpy(out->offset + (size_t)c * count, pt[c].o, count * sizeof(*out->offset));
	}
out:
	for (uint32_t c = 0; pt && c < o->nvcpu; c++) {
		free(pt[c].t);
		free(pt[c].o);
	}
	free(pt);
	free(v);
	free(tmp);
	if (ret)
		tsync_solution_free(out);
	return ret;
}

uint64_t tsync_bound_host(const struct tsync_solution *s)
{
	unsigned __int128 h;

	if (!s->scale.ratio || tsync_scale_identity(&s->scale))
		return s->bound;
	h = (((unsigned __int128)s->bound << s->scale.frac) + s->scale.ratio - 1) /
	    s->scale.ratio;
	return h > UINT64_MAX ? UINT64_MAX : (uint64_t)h;
}

void tsync_summary_line(const struct tsync_solution *s, const char *proto,
			const struct tsync_clock *c, char *buf, size_t len)
{
	uint64_t ns = c ? tsync_clock_ticks_to_ns(c, tsync_bound_host(s)) :
		      tsync_bound_host(s);

	char wide[96] = "";
	int k = 0;

	if (s->rounds_wide)
		k = snprintf(wide, sizeof(wide), ", %u too wide", s->rounds_wide);
	if (s->samples_refused)
		k += snprintf(wide + k, sizeof(wide) - k, ", %u refused", s->samples_refused);
	if (s->marks_dropped && k < (int)sizeof(wide))
		snprintf(wide + k, sizeof(wide) - k, ", %" PRIu64 " marks dropped",
			 s->marks_dropped);
	snprintf(buf, len, "tsync %s: %u rounds used (%u unmatched, %u warm-up%s), %u epoch%s, "
		 "bound %" PRIu64 " %s%s", proto, s->rounds_used, s->rounds_unmatched,
		 s->rounds_discarded, wide, s->nepochs, s->nepochs == 1 ? "" : "s", ns,
		 c ? "ns" : "ticks", s->pv_confirmed ? " (PV: offset 0 confirmed)" : "");
}

struct sample {
	uint64_t	t;
	int64_t		o;
	uint32_t	i;	/* input order: of equal times the first is kept */
};

static int cmp_sample(const void *x, const void *y)
{
	const struct sample *a = x, *b = y;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

/*
 * The longest run of @v (sorted by guest time, distinct times) whose host
 * times t + o also rise: a stock reader interpolates between neighbours, so
 * one sample whose host time is not after its predecessor's (a probe answered
 * from another vCPU's clock, or noise larger than the gap) would map later
 * guest events before earlier ones. Keeps the survivors in place in @v;
 * returns their count. Patience sorting: O(n log n).
 */
static int64_t host_time(const struct sample *v)
{
	return (int64_t)(v->t + (uint64_t)v->o);
}

static uint32_t keep_rising(struct sample *v, uint32_t n)
{
	uint32_t *tail = malloc(n * sizeof(*tail));
	uint32_t *prev = malloc(n * sizeof(*prev));
	uint32_t len = 0, k;

	if (!tail || !prev) {
		free(tail);
		free(prev);
		return UINT32_MAX;
	}
	for (uint32_t i = 0; i < n; i++) {
		int64_t h = host_time(&v[i]);
		uint32_t lo = 0, hi = len;

		while (lo < hi) {
			uint32_t mid = (lo + hi) / 2;

			if (host_time(&v[tail[mid]]) < h)
				lo = mid + 1;
			else
				hi = mid;
		}
		prev[i] = lo ? tail[lo - 1] : UINT32_MAX;
		tail[lo] = i;
		if (lo == len)
			len++;
	}
	/* walk back from the end of the longest run, then compact in order */
	k = len ? tail[len - 1] : UINT32_MAX;
	for (uint32_t i = len; i-- > 0; k = prev[k])
		tail[i] = k;
	for (uint32_t i = 0; i < len; i++)
		v[i] = v[tail[i]];
	free(tail);
	free(prev);
	return len;
}

/*
 * The longest run of @v (sorted, distinct times) spanning at most
 * TSYNC_SAMPLE_SPAN_MAX ticks, moved to the front; returns its length. The
 * reader divides by the gap between neighbours as a signed 64-bit number:
 * a gap of 2^63 or more turns negative.
 */
static uint32_t keep_span(struct sample *v, uint32_t n)
{
	uint32_t best = 0, len = 0;

	for (uint32_t i = 0, j = 0; j < n; j++) {
		while (v[j].t - v[i].t > TSYNC_SAMPLE_SPAN_MAX)
			i++;
		if (j - i + 1 > len) {
			len = j - i + 1;
			best = i;
		}
	}
	if (best)
		memmove(v, v + best, len * sizeof(*v));
	return len;
}

int tsync_solution_from_samples(uint32_t ncpu, const uint32_t *n, const uint64_t *const *ts,
				const int64_t *const *off, struct tsync_solution *out)
{
	struct pts *pt;
	int32_t any = -1;
	uint32_t count = 0;
	int ret = 0;

	if (!ncpu || !n || !ts || !off || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	pt = calloc(ncpu, sizeof(*pt));
	if (!pt)
		return -ENOMEM;
	/* each CPU's own samples, less those refused or out of order */
	for (uint32_t c = 0; c < ncpu && !ret; c++) {
		struct sample *v;
		uint32_t nv = 0, k = 0, kept;

		if (!n[c])
			continue;
		v = malloc(n[c] * sizeof(*v));
		if (!v) {
			ret = -ENOMEM;
			break;
		}
		for (uint32_t i = 0; i < n[c]; i++) {
			/* an offset beyond 2^62 is no clock (and -INT64_MIN none at all) */
			if (off[c][i] < -TSYNC_OFFSET_MAX || off[c][i] > TSYNC_OFFSET_MAX) {
				out->samples_refused++;
				continue;
			}
			v[nv++] = (struct sample){ .t = ts[c][i], .o = off[c][i], .i = i };
		}
		qsort(v, nv, sizeof(*v), cmp_sample);
		/* readers keep one sample per ts: the first taken */
		for (uint32_t i = 0; i < nv; i++)
			if (!k || v[i].t != v[k - 1].t)
				v[k++] = v[i];
		nv = k;
		k = keep_span(v, nv);
		out->samples_refused += nv - k;
		nv = k;
		kept = nv ? keep_rising(v, nv) : 0;
		if (kept == UINT32_MAX)
			ret = -ENOMEM;
		else
			out->samples_dropped += nv - kept;
		for (uint32_t i = 0; i < kept && !ret; i++)
			ret = pts_add(&pt[c], v[i].t, v[i].o);
		free(v);
		if (!ret && pt[c].n && any < 0)
			any = (int32_t)c;
	}
	if (!ret && any < 0)
		ret = -ENODATA;
	/* CPUs without samples take the first CPU's that has some */
	for (uint32_t c = 0; c < ncpu && !ret; c++) {
		if (!pt[c].n)
			for (uint32_t i = 0; i < pt[any].n && !ret; i++)
				ret = pts_add(&pt[c], pt[any].t[i], pt[any].o[i]);
		while (!ret && pt[c].n < 2)
			ret = pad(&pt[c]);
		if (pt[c].n > count)
			count = pt[c].n;
	}
	for (uint32_t c = 0; c < ncpu && !ret; c++)
		while (!ret && pt[c].n < count)
			ret = pad(&pt[c]);
	if (!ret) {
		out->scale = (struct tsync_scale){ .ratio = 1, .frac = 0 };
		out->ncpu = ncpu;
		out->count = count;
		out->flags = 1;
		out->ts = calloc((size_t)count * ncpu, sizeof(*out->ts));
		out->offset = calloc((size_t)count * ncpu, sizeof(*out->offset));
		if (!out->ts || !out->offset)
			ret = -ENOMEM;
	}
	for (uint32_t c = 0; c < ncpu && !ret; c++) {
		memcpy(out->ts + (size_t)c * count, pt[c].t, count * sizeof(*out->ts));
		memcpy(out->offset + (size_t)c * count, pt[c].o, count * sizeof(*out->offset));
	}
	for (uint32_t c = 0; c < ncpu; c++) {
		free(pt[c].t);
		free(pt[c].o);
	}
	free(pt);
	if (ret)
		tsync_solution_free(out);
	return ret;
}

/*
 * Readers interpolate between TIME_SHIFT points with 64-bit products: an
 * offset past TSYNC_OFFSET_MAX (a solve in an odd scale can make one from
 * brackets that are each in range) is not written at all.
 */
static int shift_in_range(const struct tsync_solution *s)
{
	for (uint32_t i = 0; i < s->ncpu; i++) {
		const uint64_t *t;
		const int64_t *o;

		tsync_solution_cpu(s, i, &t, &o);
		for (uint32_t k = 0; k < s->count; k++)
			if (o[k] < -TSYNC_OFFSET_MAX || o[k] > TSYNC_OFFSET_MAX)
				return tcx_fail(-ERANGE, "a TIME_SHIFT offset of %lld is "
						"beyond 2^62: not written", (long long)o[k]);
	}
	return 0;
}

int tsync_write_time_shift(const char *path, uint64_t peer_id, const struct tsync_solution *s)
{
	struct tdat_time_shift_cpu *c;
	struct tdat_appender *a;
	int ret;

	if (!path || !s || !s->ncpu || !s->count)
		return -EINVAL;
	ret = shift_in_range(s);
	if (ret)
		return ret;
	c = calloc(s->ncpu, sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->ncpu; i++) {
		const uint64_t *t;
		const int64_t *o;

		tsync_solution_cpu(s, i, &t, &o);
		c[i] = (struct tdat_time_shift_cpu){ .count = s->count, .ts = t, .offset = o };
	}
	a = tdat_append_open(path);
	if (!a) {
		ret = errno ? -errno : -EIO;
		free(c);
		return ret;
	}
	ret = tdat_append_time_shift(a, peer_id, s->flags, s->ncpu, c);
	{
		int r2 = tdat_append_close(a);

		if (!ret)
			ret = r2;
	}
	free(c);
	return ret;
}

/*
 * Into a live file: all the samples if they fit its slot, else every
 * k-th one (the first and the last kept), k doubling until they do.
 */
int tsync_publish_time_shift(struct tdat_writer *w, uint64_t peer_id,
			     const struct tsync_solution *s)
{
	struct tdat_time_shift_cpu *c;
	uint64_t *ts = NULL;
	int64_t *off = NULL;
	uint32_t step = 1, n = 0;
	int ret = -ENOSPC;

	if (!w || !s || !s->ncpu || !s->count)
		return -EINVAL;
	if (shift_in_range(s))
		return -ERANGE;
	c = calloc(s->ncpu, sizeof(*c));
	ts = calloc((size_t)s->ncpu * s->count, sizeof(*ts));
	off = calloc((size_t)s->ncpu * s->count, sizeof(*off));
	if (!c || !ts || !off)
		ret = -ENOMEM;
	while (ret == -ENOSPC && step < 2 * s->count) {
		n = 0;
		for (uint32_t k = 0; k < s->count; k += step)
			n++;
		if ((s->count - 1) % step)
			n++;		/* the last one too */
		for (uint32_t i = 0; i < s->ncpu; i++) {
			const uint64_t *t;
			const int64_t *o;
			uint32_t j = 0;

			tsync_solution_cpu(s, i, &t, &o);
			for (uint32_t k = 0; k < s->count; k += step, j++) {
				ts[(size_t)i * n + j] = t[k];
				off[(size_t)i * n + j] = o[k];
			}
			if (j < n) {
				ts[(size_t)i * n + j] = t[s->count - 1];
				off[(size_t)i * n + j] = o[s->count - 1];
			}
			c[i] = (struct tdat_time_shift_cpu){ .count = n, .ts = ts + (size_t)i * n,
							     .offset = off + (size_t)i * n };
		}
		ret = tdat_publish_time_shift(w, peer_id, s->flags, s->ncpu, c);
		step *= 2;
	}
	free(c);
	free(ts);
	free(off);
	return ret;
}
