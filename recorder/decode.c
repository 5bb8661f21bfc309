// SPDX-License-Identifier: GPL-2.0
/*
 * The record stream: raw per-pCPU ring bytes are parsed into records as
 * they arrive and queued per pCPU; a binary heap over the queue heads
 * emits them in TSC order once no pCPU that may still send data can send
 * an older one (or once the queued bytes pass the bound).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "recorder.h"

#define TRC_GEN_LOST	0x0001f001u
#define TRC_GEN_WRAP	0x0001f002u

#define DEFAULT_BOUND	(64u << 20)

struct cpu_q {
	struct rec_record	*q;	/* ring of queued records */
	size_t			head, count, cap;
	size_t			pending;	/* trailing records still without TSC */
	uint64_t		last_tsc;	/* TSC of the newest record fed */
	bool			has_tsc;
	bool			seen;		/* sent data or was announced */
	bool			data;		/* sent data */
	int			heap_pos;	/* -1: not in the heap */
	uint8_t			carry[40];	/* a record split between two feeds */
	uint8_t			carry_len;
};

struct rec_stream {
	struct rec_stream_params p;
	rec_emit_fn		emit;
	void			*ctx;
	struct cpu_q		*cpus;
	int			*heap;		/* pCPU ids ordered by head TSC */
	int			nheap;
	int			max_seen;	/* highest pCPU seen or expected */
	size_t			queued;		/* records queued in total */
	uint64_t		barrier;
	int			waiting;	/* pCPUs seen or expected, without a TSC yet */
	uint64_t		last_emitted;
	bool			emitted_any;
	struct rec_stream_stats	st;
};

static inline uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

struct rec_stream *rec_stream_new(const struct rec_stream_params *p,
				  rec_emit_fn emit, void *ctx)
{
	struct rec_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (p)
		s->p = *p;
	if (s->p.max_cpus <= 0 || s->p.max_cpus > REC_MAX_CPUS)
		s->p.max_cpus = REC_MAX_CPUS;
	if (!s->p.max_buffered)
		s->p.max_buffered = DEFAULT_BOUND;
	s->emit = emit;
	s->ctx = ctx;
	s->cpus = calloc(s->p.max_cpus, sizeof(*s->cpus));
	s->heap = calloc(s->p.max_cpus, sizeof(*s->heap));
	if (!s->cpus || !s->heap) {
		rec_stream_free(s);
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < s->p.max_cpus; i++)
		s->cpus[i].heap_pos = -1;
	s->st.max_cpu = -1;
	return s;
}

void rec_stream_free(struct rec_stream *s)
{
	if (!s)
		return;
	if (s->cpus)
		for (int i = 0; i < s->p.max_cpus; i++)
			free(s->cpus[i].q);
	free(s->cpus);
	free(s->heap);
	free(s);
}

void rec_stream_get_stats(const struct rec_stream *s, struct rec_stream_stats *st)
{
	*st = s->st;
}

/* ---- heap of pCPUs keyed by the TSC of their queue head ---- */

static inline uint64_t head_tsc(const struct rec_stream *s, int cpu)
{
	const struct cpu_q *c = &s->cpus[cpu];

	return c->q[c->head].tsc;
}

static inline bool heap_less(const struct rec_stream *s, int a, int b)
{
	uint64_t ta = head_tsc(s, a), tb = head_tsc(s, b);

	return ta < tb || (ta == tb && a < b);
}

static void heap_set(struct rec_stream *s, int pos, int cpu)
{
	s->heap[pos] = cpu;
	s->cpus[cpu].heap_pos = pos;
}

static void heap_up(struct rec_stream *s, int pos)
{
	int cpu = s->heap[pos];

	while (pos > 0) {
		int parent = (pos - 1) / 2;

		if (!heap_less(s, cpu, s->heap[parent]))
			break;
		heap_set(s, pos, s->heap[parent]);
		pos = parent;
	}
	heap_set(s, pos, cpu);
}

static void heap_down(struct rec_stream *s, int pos)
{
	int cpu = s->heap[pos];

	for (;;) {
		int l = 2 * pos + 1, m = l;

		if (l >= s->nheap)
			break;
		if (l + 1 < s->nheap && heap_less(s, s->heap[l + 1], s->heap[l]))
			m = l + 1;
		if (!heap_less(s, s->heap[m], cpu))
			break;
		heap_set(s, pos, s->heap[m]);
		pos = m;
	}
	heap_set(s, pos, cpu);
}

static void heap_push(struct rec_stream *s, int cpu)
{
	heap_set(s, s->nheap++, cpu);
	heap_up(s, s->nheap - 1);
}

static void heap_pop(struct rec_stream *s)
{
	s->cpus[s->heap[0]].heap_pos = -1;
	if (--s->nheap > 0) {
		heap_set(s, 0, s->heap[s->nheap]);
		heap_down(s, 0);
	}
}

/* ---- emission ---- */

static void emit_one(struct rec_stream *s, struct rec_record *r)
{
	if (s->emitted_any && r->tsc < s->last_emitted) {
		r->flags |= REC_F_LATE;
		s->st.late++;
	}
	if (!s->emitted_any || r->tsc < s->st.first_tsc)
		s->st.first_tsc = r->tsc;
	if (!s->emitted_any || r->tsc > s->st.last_tsc)
		s->st.last_tsc = r->tsc;
	if (!s->emitted_any || r->tsc > s->last_emitted)
		s->last_emitted = r->tsc;
	s->emitted_any = true;
	s->st.records++;
	if (r->event == TRC_GEN_LOST) {
		s->st.lost_records++;
		if (r->nr >= 1)
			s->st.lost += r->w[0];
	}
	s->emit(s->ctx, r);
}

/* Emit the oldest queued record. */
static void emit_top(struct rec_stream *s)
{
	int cpu = s->heap[0];
	struct cpu_q *c = &s->cpus[cpu];
	struct rec_record r = c->q[c->head];

	c->head = (c->head + 1) % c->cap;
	c->count--;
	s->queued--;
	if (c->count > c->pending)
		heap_down(s, 0);
	else
		heap_pop(s);
	emit_one(s, &r);
}

/* The TSC up to which every pCPU that sent data has delivered. */
static uint64_t watermark(const struct rec_stream *s)
{
	uint64_t wm = UINT64_MAX;

	if (s->waiting)
		return s->barrier;
	for (int i = 0; i <= s->max_seen; i++) {
		const struct cpu_q *c = &s->cpus[i];

		if (c->seen && c->last_tsc < wm)
			wm = c->last_tsc;
	}
	return wm > s->barrier ? wm : s->barrier;
}

static void drain(struct rec_stream *s, bool all)
{
	uint64_t wm = all ? UINT64_MAX : watermark(s);
	size_t bound = s->p.max_buffered / sizeof(struct rec_record);

	while (s->nheap && head_tsc(s, s->heap[0]) <= wm)
		emit_top(s);
	/* A pCPU that stays silent must not hold everything: past the
	 * bound the oldest go out and stragglers are counted as late. */
	if (s->queued > bound)
		while (s->nheap && s->queued > bound / 4 * 3)
			emit_top(s);
}

/* ---- parsing ---- */

static int grow(struct cpu_q *c)
{
	size_t ncap = c->cap ? c->cap * 2 : 256;
	struct rec_record *nq = malloc(ncap * sizeof(*nq));

	if (!nq)
		return -ENOMEM;
	for (size_t i = 0; i < c->count; i++)
		nq[i] = c->q[(c->head + i) % c->cap];
	free(c->q);
	c->q = nq;
	c->head = 0;
	c->cap = ncap;
	return 0;
}

/* Parse one complete record of @size bytes at @p. */
static int take(struct rec_stream *s, int cpu, const uint8_t *p)
{
	struct cpu_q *c = &s->cpus[cpu];
	uint32_t hdr = rd32(p);
	struct rec_record r;
	unsigned int off = 4;

	r.event = hdr & 0x0fffffff;
	r.nr = (hdr >> 28) & 7;
	r.cpu = cpu;
	r.flags = 0;
	if (hdr & 0x80000000u) {
		r.tsc = rd32(p + 4) | ((uint64_t)rd32(p + 8) << 32);
		r.flags = REC_F_TSC;
		off = 12;
	}
	if (r.event == TRC_GEN_WRAP) {
		s->st.fillers++;
		return 0;
	}
	memcpy(r.w, p + off, r.nr * 4u);
	memset(r.w + r.nr, 0, (7u - r.nr) * 4u);

	if (r.flags & REC_F_TSC) {
		if (c->has_tsc && r.tsc < c->last_tsc) {
			/* Kept in pCPU order, never moved: clamp and count. */
			uint64_t d = c->last_tsc - r.tsc;

			s->st.skew++;
			if (d > s->st.max_skew)
				s->st.max_skew = d;
			r.tsc = c->last_tsc;
			r.flags |= REC_F_SKEW;
		}
		if (!c->has_tsc && c->pending) {
			/* Records before the pCPU's first TSC take that TSC. */
			for (size_t i = 0; i < c->pending; i++)
				c->q[(c->head + c->count - 1 - i) % c->cap].tsc = r.tsc;
			c->pending = 0;
		}
		if (!c->has_tsc)
			s->waiting--;
		c->has_tsc = true;
		c->last_tsc = r.tsc;
	} else if (c->has_tsc) {
		r.tsc = c->last_tsc;
		s->st.no_tsc++;
	} else {
		r.tsc = 0;
		s->st.no_tsc++;
	}

	if (s->p.unordered) {
		emit_one(s, &r);
		return 0;
	}
	if (c->count == c->cap && grow(c))
		return -ENOMEM;
	c->q[(c->head + c->count) % c->cap] = r;
	c->count++;
	s->queued++;
	if (!c->has_tsc)
		c->pending++;
	else if (c->heap_pos < 0)
		heap_push(s, cpu);
	if (s->queued * sizeof(r) > s->st.peak_buffered)
		s->st.peak_buffered = s->queued * sizeof(r);
	if (s->queued * sizeof(r) > s->p.max_buffered)
		drain(s, false);
	return 0;
}

static void mark_seen(struct rec_stream *s, int cpu)
{
	struct cpu_q *c = &s->cpus[cpu];

	if (c->seen)
		return;
	c->seen = true;
	s->waiting++;
	if (cpu > s->max_seen)
		s->max_seen = cpu;
}

int rec_stream_expect(struct rec_stream *s, int cpu)
{
	if (cpu < 0 || cpu >= s->p.max_cpus)
		return -EINVAL;
	mark_seen(s, cpu);
	return 0;
}

static inline unsigned int rec_size(uint32_t hdr)
{
	return 4 + ((hdr >> 31) ? 8 : 0) + ((hdr >> 28) & 7) * 4;
}

int rec_stream_feed(struct rec_stream *s, int cpu, const void *data, size_t len)
{
	const uint8_t *p = data;
	struct cpu_q *c;
	int ret;

	if (cpu < 0 || cpu >= s->p.max_cpus)
		return -EINVAL;
	c = &s->cpus[cpu];
	mark_seen(s, cpu);
	if (!c->data) {
		c->data = true;
		s->st.cpus++;
		if (cpu > s->st.max_cpu)
			s->st.max_cpu = cpu;
	}
	/* Finish a record split by the previous feed. */
	while (c->carry_len && len) {
		unsigned int need = c->carry_len < 4 ? 4 : rec_size(rd32(c->carry));
		unsigned int n = need - c->carry_len;

		if (n > len)
			n = len;
		memcpy(c->carry + c->carry_len, p, n);
		c->carry_len += n;
		p += n;
		len -= n;
		if (c->carry_len >= 4 && c->carry_len == rec_size(rd32(c->carry))) {
			c->carry_len = 0;
			ret = take(s, cpu, c->carry);
			if (ret)
				return ret;
		}
	}
	while (len >= 4) {
		unsigned int size = rec_size(rd32(p));

		if (size > len)
			break;
		ret = take(s, cpu, p);
		if (ret)
			return ret;
		p += size;
		len -= size;
	}
	if (len) {
		memcpy(c->carry, p, len);
		c->carry_len = len;
	}
	return 0;
}

int rec_stream_end_window(struct rec_stream *s, int cpu)
{
	if (cpu < 0 || cpu >= s->p.max_cpus)
		return -EINVAL;
	s->st.cut_bytes += s->cpus[cpu].carry_len;
	s->cpus[cpu].carry_len = 0;
	s->st.windows++;
	if (!s->p.unordered)
		drain(s, false);
	return 0;
}

int rec_stream_barrier(struct rec_stream *s, uint64_t tsc)
{
	if (tsc > s->barrier)
		s->barrier = tsc;
	if (!s->p.unordered)
		drain(s, false);
	return 0;
}

int rec_stream_finish(struct rec_stream *s)
{
	/* pCPUs that never showed a TSC: their records take the latest one. */
	for (int i = 0; i <= s->max_seen; i++) {
		struct cpu_q *c = &s->cpus[i];

		s->st.cut_bytes += c->carry_len;
		c->carry_len = 0;
		if (!c->seen || c->has_tsc)
			continue;
		s->waiting--;
		for (size_t k = 0; k < c->count; k++)
			c->q[(c->head + k) % c->cap].tsc = s->last_emitted;
		c->pending = 0;
		c->has_tsc = true;
		c->last_tsc = s->last_emitted;
		if (c->count && c->heap_pos < 0)
			heap_push(s, i);
	}
	drain(s, true);
	return 0;
}
