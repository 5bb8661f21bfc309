// SPDX-License-Identifier: GPL-2.0
/*
 * The record stream. Each pCPU has a queue of its raw window bytes (whole
 * records only; a record split between two feeds waits in a carry buffer).
 * Feeding only walks the record headers, to learn the newest TSC each pCPU
 * has delivered; records are decoded when they reach the head of their
 * queue. A binary heap over the queue heads emits them in TSC order once
 * no pCPU that may still send data can send an older one, or once the
 * queued bytes pass the bound. Raw bytes are about half the size of
 * decoded records, which is what keeps the merge cheap.
 *
 * convert and record use neither queue nor heap (per_cpu): each record is
 * decoded and emitted as it is fed, only those before their pCPU's first
 * TSC wait in its queue for it.
 *
 * In both modes at most REC_NO_TSC_HOLD records wait for a pCPU's first
 * TSC; the ones past that are dropped (no_tsc_dropped). Without the cap a
 * pCPU that never sends a TSC would have its queue grow with the input,
 * and in the merge it would hold everything it sent until the end.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "recorder-internal.h"

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

#define TRC_GEN_LOST	0x0001f001u
#define TRC_GEN_WRAP	0x0001f002u

#define DEFAULT_BOUND	(64u << 20)
#define FEED_SLICE	(64u << 10)	/* bytes queued between bound checks */

struct cpu_q {
	uint8_t		*buf;		/* queued raw records: [start, end) */
	size_t		start, end, cap;
	struct rec_record head;		/* decoded head record, if has_head */
	bool		has_head;
	uint64_t	cur_tsc;	/* TSC of the last record decoded */
	bool		has_cur;
	uint64_t	first_fed;	/* first TSC ever fed (for records before it) */
	uint64_t	last_fed;	/* newest TSC fed */
	bool		fed_tsc;
	uint32_t	held;		/* records queued before the first TSC */
	bool		seen;		/* sent data or was announced */
	bool		data;		/* sent data */
	bool		in_heap;
	uint8_t		carry[40];	/* a record split between two feeds */
	uint8_t		carry_len;
};

struct hent {
	uint64_t	key;		/* TSC of the pCPU's head record */
	int		cpu;
};

struct rec_stream {
	struct rec_stream_params p;
	rec_emit_fn		emit;
	rec_emit_batch_fn	emit_batch;	/* set: emit is not */
	rec_emit_raw_fn		emit_raw;	/* per_cpu and batched only */
	void			*ctx;
	/* records decoded, not yet handed over (batched); slot nbatch is the next */
	struct rec_record	batch[REC_EMIT_BATCH];
	unsigned int		nbatch;
	struct cpu_q		*cpus;
	struct hent		*heap;		/* pCPUs by the TSC of their head */
	int			nheap;
	int			max_seen;	/* highest pCPU seen or expected */
	size_t			queued;		/* raw bytes queued in total */
	int			waiting;	/* pCPUs seen or expected, no TSC fed yet */
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

static struct rec_stream *stream_new(const struct rec_stream_params *p, rec_emit_fn emit,
				     rec_emit_batch_fn emit_batch, void *ctx)
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
	if (s->p.per_cpu) {
		/* per pCPU: the unordered path, every record */
		s->p.unordered = true;
		s->p.class_mask = 0;
	}
	if (!s->p.unordered)
		s->p.class_mask = 0;
	s->emit = emit;
	s->emit_batch = emit_batch;
	s->ctx = ctx;
	s->cpus = calloc(s->p.max_cpus, sizeof(*s->cpus));
	s->heap = calloc(s->p.max_cpus, sizeof(*s->heap));
	if (!s->cpus || !s->heap) {
		rec_stream_free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->st.max_cpu = -1;
	s->st.first_tsc = UINT64_MAX;
	return s;
}

struct rec_stream *rec_stream_new(const struct rec_stream_params *p,
				  rec_emit_fn emit, void *ctx)
{
	return stream_new(p, emit, NULL, ctx);
}

struct rec_stream *rec_stream_new_batched(const struct rec_stream_params *p,
					  rec_emit_batch_fn emit, void *ctx)
{
	return stream_new(p, NULL, emit, ctx);
}

void rec_stream_set_raw(struct rec_stream *s, rec_emit_raw_fn raw, rec_emit_fn one)
{
	if (s->p.per_cpu && s->emit_batch) {
		s->emit_raw = raw;
		/* emit_one() batches whenever emit_batch is set: only pass_stopped() calls it */
		s->emit = one;
	}
}

void rec_stream_free(struct rec_stream *s)
{
	if (!s)
		return;
	if (s->cpus)
		for (int i = 0; i < s->p.max_cpus; i++)
			free(s->cpus[i].buf);
	free(s->cpus);
	free(s->heap);
	free(s);
}

bool rec_stream_has_data(const struct rec_stream *s, int cpu)
{
	return cpu >= 0 && cpu < s->p.max_cpus && s->cpus[cpu].data;
}

void rec_stream_get_stats(const struct rec_stream *s, struct rec_stream_stats *st)
{
	*st = s->st;
	if (!s->emitted_any)
		st->first_tsc = 0;
	st->last_tsc = s->last_emitted;
}

/* ---- decoding ---- */

/* Decode the complete record at @p, without its time rules. */
static inline void decode(const uint8_t *p, int cpu, struct rec_record *r)
{
	uint32_t hdr = rd32(p);
	unsigned int off = 4;

	r->event = hdr & 0x0fffffff;
	r->nr = (hdr >> 28) & 7;
	r->cpu = cpu;
	r->flags = 0;
	r->tsc = 0;
	if (hdr & 0x80000000u) {
		r->tsc = rd32(p + 4) | ((uint64_t)rd32(p + 8) << 32);
		r->flags = REC_F_TSC;
		off = 12;
	}
	/* word by word: a memcpy of a run-time size costs more for 0..7 words */
	for (unsigned int i = 0; i < 7; i++)
		r->w[i] = i < r->nr ? rd32(p + off + 4 * i) : 0;
}

/*
 * The time rules, in pCPU order: a record without TSC takes the previous
 * one of its pCPU (or, before the first, that first TSC); a record older
 * than its predecessor is counted as skew and clamped, never moved.
 */
static inline void stamp(struct rec_stream *s, struct cpu_q *c, struct rec_record *r)
{
	if (r->flags & REC_F_TSC) {
		/* cur_tsc is 0 until the first: nothing is older than that */
		if (r->tsc < c->cur_tsc) {
			uint64_t d = c->cur_tsc - r->tsc;

			s->st.skew++;
			if (d > s->st.max_skew)
				s->st.max_skew = d;
			r->tsc = c->cur_tsc;
			r->flags |= REC_F_SKEW;
		}
		c->cur_tsc = r->tsc;
		c->has_cur = true;
		return;
	}
	s->st.no_tsc++;
	r->tsc = c->has_cur ? c->cur_tsc : c->first_fed;
}

/* ---- heap of pCPUs keyed by the TSC of their head record ---- */

/* Ties go to the lower pCPU, so equal TSCs come out in a stable order. */
static inline bool hless(const struct hent *a, const struct hent *b)
{
	return a->key < b->key || (a->key == b->key && a->cpu < b->cpu);
}

static void heap_up(struct rec_stream *s, int pos)
{
	struct hent e = s->heap[pos];

	while (pos > 0) {
		int parent = (pos - 1) / 2;

		if (!hless(&e, &s->heap[parent]))
			break;
		s->heap[pos] = s->heap[parent];
		pos = parent;
	}
	s->heap[pos] = e;
}

static void heap_down(struct rec_stream *s, int pos)
{
	struct hent e = s->heap[pos];

	for (;;) {
		int l = 2 * pos + 1, m = l;

		if (l >= s->nheap)
			break;
		if (l + 1 < s->nheap && hless(&s->heap[l + 1], &s->heap[l]))
			m = l + 1;
		if (!hless(&s->heap[m], &e))
			break;
		s->heap[pos] = s->heap[m];
		pos = m;
	}
	s->heap[pos] = e;
}

static void heap_pop(struct rec_stream *s)
{
	s->cpus[s->heap[0].cpu].in_heap = false;
	if (--s->nheap > 0) {
		s->heap[0] = s->heap[s->nheap];
		heap_down(s, 0);
	}
}

/*
 * Decode the next head record of @c, skipping wrap fillers. False when
 * nothing is queued, or when the records cannot be timed yet (no TSC fed).
 */
static bool load_head(struct rec_stream *s, int cpu)
{
	struct cpu_q *c = &s->cpus[cpu];

	if (!c->fed_tsc)
		return false;
	while (c->start < c->end) {
		const uint8_t *p = c->buf + c->start;
		unsigned int size = rec_record_size(rd32(p));

		c->start += size;
		s->queued -= size;
		if ((rd32(p) & 0x0fffffff) == TRC_GEN_WRAP) {
			s->st.fillers++;
			continue;
		}
		decode(p, cpu, &c->head);
		stamp(s, c, &c->head);
		c->has_head = true;
		return true;
	}
	c->has_head = false;
	return false;
}

static void heap_add(struct rec_stream *s, int cpu)
{
	struct cpu_q *c = &s->cpus[cpu];

	if (c->in_heap || (!c->has_head && !load_head(s, cpu)))
		return;
	c->in_heap = true;
	s->heap[s->nheap].cpu = cpu;
	s->heap[s->nheap].key = c->head.tsc;
	s->nheap++;
	heap_up(s, s->nheap - 1);
}

/* ---- emission ---- */

/* The batched records to the consumer. */
static void hand_over(struct rec_stream *s)
{
	unsigned int n = s->nbatch;

	if (n) {
		s->nbatch = 0;
		s->emit_batch(s->ctx, s->batch, n);
	}
}

/*
 * Per record: keep it short. last_emitted starts at 0 and st.first_tsc at
 * UINT64_MAX (reported as 0 while nothing was emitted), so no test of
 * "anything emitted yet" is needed; last_tsc is last_emitted.
 */
static inline void count_one(struct rec_stream *s, struct rec_record *r)
{
	if (unlikely(r->tsc < s->last_emitted)) {
		/* only a merge can be late; unordered streams interleave freely */
		if (!s->p.unordered) {
			r->flags |= REC_F_LATE;
			s->st.late++;
		}
	} else {
		s->last_emitted = r->tsc;
	}
	if (unlikely(r->tsc < s->st.first_tsc))
		s->st.first_tsc = r->tsc;
	s->emitted_any = true;
	s->st.records++;
	if (unlikely(r->event == TRC_GEN_LOST)) {
		s->st.lost_records++;
		if (r->nr >= 1)
			s->st.lost += r->w[0];
	}
}

static inline void emit_one(struct rec_stream *s, struct rec_record *r)
{
	count_one(s, r);
	if (!s->emit_batch) {
		s->emit(s->ctx, r);
		return;
	}
	s->batch[s->nbatch] = *r;
	if (unlikely(++s->nbatch == REC_EMIT_BATCH))
		hand_over(s);
}

/*
 * Emit the top pCPU's records while they stay before @wm and before the
 * runner-up's head (ties to the lower pCPU), then fix the heap once.
 */
static void emit_run(struct rec_stream *s, uint64_t wm, bool one)
{
	int cpu = s->heap[0].cpu;
	struct cpu_q *c = &s->cpus[cpu];
	struct hent lim = { UINT64_MAX, INT_MAX };

	if (s->nheap > 1) {
		lim = s->heap[1];
		if (s->nheap > 2 && hless(&s->heap[2], &lim))
			lim = s->heap[2];
	}
	for (;;) {
		uint64_t t;

		emit_one(s, &c->head);
		if (!load_head(s, cpu))
			break;
		t = c->head.tsc;
		if (one || t > wm || t > lim.key || (t == lim.key && cpu > lim.cpu)) {
			s->heap[0].key = t;
			heap_down(s, 0);
			return;
		}
	}
	heap_pop(s);
}

/* The TSC up to which every pCPU that sent data has delivered. */
static uint64_t watermark(const struct rec_stream *s)
{
	uint64_t wm = UINT64_MAX;

	if (s->waiting)
		return 0;
	for (int i = 0; i <= s->max_seen; i++) {
		const struct cpu_q *c = &s->cpus[i];

		if (c->seen && c->last_fed < wm)
			wm = c->last_fed;
	}
	return wm;
}

static void drain(struct rec_stream *s, bool all)
{
	uint64_t wm = all ? UINT64_MAX : watermark(s);

	while (s->nheap && s->heap[0].key <= wm)
		emit_run(s, wm, false);
	/* A pCPU that stays silent must not hold everything: past the
	 * bound the oldest go out and stragglers are counted as late. */
	while (s->nheap && s->queued > s->p.max_buffered / 4 * 3)
		emit_run(s, UINT64_MAX, true);
}

/* ---- feeding ---- */

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

/* Room for @n more bytes at the end of @c's queue. */
static int reserve(struct cpu_q *c, size_t n)
{
	if (c->end + n <= c->cap)
		return 0;
	if (c->start) {
		memmove(c->buf, c->buf + c->start, c->end - c->start);
		c->end -= c->start;
		c->start = 0;
	}
	if (c->end + n > c->cap) {
		size_t ncap = c->cap ? c->cap : 65536;
		uint8_t *nb;

		while (ncap < c->end + n)
			ncap *= 2;
		nb = realloc(c->buf, ncap);
		if (!nb)
			return -ENOMEM;
		c->buf = nb;
		c->cap = ncap;
	}
	return 0;
}

/* A record at @p (@avail bytes readable) decoded, with its pCPU's time rules. */
static inline __attribute__((always_inline)) void
decode_stamped(struct rec_stream *s, int cpu, const uint8_t *p, size_t avail,
	       struct rec_record *r)
{
	if (likely(avail >= REC_DECODE_FAST_READ))
		rec_decode_fast(p, cpu, r);
	else
		decode(p, cpu, r);
	stamp(s, &s->cpus[cpu], r);
}

/*
 * Unordered (a scan, or per_cpu): decode and emit at once. Records before
 * the first TSC of their pCPU wait in its queue until that TSC comes (they
 * take it, as the merge gives them) or until rec_stream_finish(). @avail:
 * the bytes readable from @p; @masked: s->p.class_mask is set. Inline: it
 * runs once per record.
 */
static inline __attribute__((always_inline)) void
pass_through(struct rec_stream *s, int cpu, const uint8_t *p, size_t avail, bool masked)
{
	struct cpu_q *c = &s->cpus[cpu];
	uint32_t hdr = rd32(p);
	struct rec_record r;

	if (masked && !((hdr >> 16) & s->p.class_mask))
		return;
	if (unlikely((hdr & 0x0fffffff) == TRC_GEN_WRAP)) {
		s->st.fillers++;
		return;
	}
	if (unlikely(!c->fed_tsc)) {
		unsigned int size = rec_record_size(hdr);

		if (!(hdr >> 31)) {
			if (c->held >= REC_NO_TSC_HOLD) {
				s->st.no_tsc_dropped++;
				return;
			}
			if (reserve(c, size))
				return;	/* no memory: the record is lost, not misplaced */
			memcpy(c->buf + c->end, p, size);
			c->end += size;
			c->held++;
			s->queued += size;
			if (s->queued > s->st.peak_buffered)
				s->st.peak_buffered = s->queued;
			return;
		}
		c->first_fed = rd32(p + 4) | ((uint64_t)rd32(p + 8) << 32);
		c->fed_tsc = true;
		s->waiting--;
		while (load_head(s, cpu))
			emit_one(s, &c->head);
	}
	decode_stamped(s, cpu, p, avail, &r);
	emit_one(s, &r);
}

/*
 * pass_through() of the record a raw consumer stopped at (its pCPU has had
 * its first TSC), handed to the consumer's one-record call at once, where
 * it has one: one record through the batch cost more than its emission.
 */
static inline __attribute__((always_inline)) void
pass_stopped(struct rec_stream *s, int cpu, const uint8_t *p, size_t avail)
{
	struct rec_record r;

	if (!s->emit) {
		pass_through(s, cpu, p, avail, false);
		return;
	}
	if (unlikely((rd32(p) & 0x0fffffff) == TRC_GEN_WRAP)) {
		s->st.fillers++;
		return;
	}
	decode_stamped(s, cpu, p, avail, &r);
	count_one(s, &r);
	/* in order: nothing batched may wait behind it */
	hand_over(s);
	s->emit(s->ctx, &r);
}

/* pass_through() the whole records of @p[0..len); returns their bytes. */
static inline __attribute__((always_inline)) size_t
pass_all(struct rec_stream *s, int cpu, const uint8_t *p, size_t len, bool masked)
{
	size_t off = 0;

	while (len - off >= 4) {
		unsigned int size = rec_record_size(rd32(p + off));

		if (size > len - off)
			break;
		pass_through(s, cpu, p + off, len - off, masked);
		off += size;
	}
	return off;
}

/*
 * pass_all() of a per_cpu stream with a raw consumer: the records of a
 * pCPU past its first TSC go to it as they lie in @p, with the time rules
 * lent in a struct rec_time; the one it stops at takes pass_through(),
 * with no second call to learn again that it stops there (on a quiet
 * host every other record is one: a third of the calls were that).
 */
static size_t pass_raw(struct rec_stream *s, int cpu, const uint8_t *p, size_t len)
{
	struct cpu_q *c = &s->cpus[cpu];
	bool stopped = false;
	size_t off = 0;

	while (len - off >= 4) {
		unsigned int size = rec_record_size(rd32(p + off));

		if (size > len - off)
			break;
		if (c->fed_tsc && !stopped) {
			struct rec_time t = {
				.cur_tsc = c->cur_tsc, .first_fed = c->first_fed,
				.has_cur = c->has_cur, .first_tsc = s->st.first_tsc,
				.last_tsc = s->last_emitted,
			};
			size_t n;

			/* in order: what is batched before what is written now */
			hand_over(s);
			n = s->emit_raw(s->ctx, cpu, p + off, len - off, &t);
			c->cur_tsc = t.cur_tsc;
			c->has_cur = t.has_cur;
			s->st.first_tsc = t.first_tsc;
			s->last_emitted = t.last_tsc;
			s->st.records += t.records;
			s->st.no_tsc += t.no_tsc;
			if (t.records)
				s->emitted_any = true;
			off += n;
			stopped = true;
			continue;
		}
		if (stopped)
			pass_stopped(s, cpu, p + off, len - off);
		else
			pass_through(s, cpu, p + off, len - off, false);
		off += size;
		stopped = false;
	}
	return off;
}

static int append(struct rec_stream *s, struct cpu_q *c, const uint8_t *p, size_t len)
{
	int ret = reserve(c, len);

	if (ret)
		return ret;
	memcpy(c->buf + c->end, p, len);
	c->end += len;
	s->queued += len;
	if (s->queued > s->st.peak_buffered)
		s->st.peak_buffered = s->queued;
	return 0;
}

/*
 * The merge's share of the hold before a pCPU's first TSC: of the records
 * @p[0..len) that come before the first one with a TSC, those past
 * REC_NO_TSC_HOLD are dropped (fillers among them count as fillers, as
 * they would once skipped). Returns where the dropped run ends; @keep is
 * where it starts, what comes before is queued.
 */
static size_t hold_no_tsc(struct rec_stream *s, struct cpu_q *c, const uint8_t *p,
			  size_t len, size_t *keep)
{
	size_t off;

	*keep = SIZE_MAX;
	for (off = 0; off < len; off += rec_record_size(rd32(p + off))) {
		uint32_t hdr = rd32(p + off);
		bool wrap = (hdr & 0x0fffffff) == TRC_GEN_WRAP;

		if ((hdr >> 31) && !wrap)
			break;
		if (c->held < REC_NO_TSC_HOLD) {
			c->held++;
			continue;
		}
		/* held only grows until the first TSC: the dropped run is one */
		if (*keep == SIZE_MAX)
			*keep = off;
		if (wrap)
			s->st.fillers++;
		else
			s->st.no_tsc_dropped++;
	}
	if (*keep == SIZE_MAX)
		*keep = off;
	return off;
}

/*
 * Queue complete records @p[0..len); @tsc_first and @tsc_max are the first
 * and the largest TSC they carry (@has_tsc false: none).
 */
static int queue(struct rec_stream *s, int cpu, const uint8_t *p, size_t len,
		 bool has_tsc, uint64_t tsc_first, uint64_t tsc_max)
{
	struct cpu_q *c = &s->cpus[cpu];
	int ret;

	if (s->p.unordered) {
		for (size_t off = 0; off < len; off += rec_record_size(rd32(p + off)))
			pass_through(s, cpu, p + off, len - off, s->p.class_mask != 0);
		return 0;
	}
	if (!c->fed_tsc) {
		size_t keep = 0, end = hold_no_tsc(s, c, p, len, &keep);

		if (end > keep) {
			ret = append(s, c, p, keep);
			if (ret)
				return ret;
			p += end;
			len -= end;
		}
	}
	if (has_tsc) {
		if (!c->fed_tsc) {
			c->fed_tsc = true;
			c->first_fed = tsc_first;
			s->waiting--;
		}
		if (tsc_max > c->last_fed)
			c->last_fed = tsc_max;
	}
	ret = append(s, c, p, len);
	if (ret)
		return ret;
	heap_add(s, cpu);
	if (s->queued > s->p.max_buffered)
		drain(s, false);
	return 0;
}

/* Walk whole records from @p (at most @len bytes, about FEED_SLICE), then queue them. */
static int queue_walk(struct rec_stream *s, int cpu, const uint8_t *p, size_t len, size_t *used)
{
	size_t slice = s->p.max_buffered / 4 < FEED_SLICE ? s->p.max_buffered / 4 : FEED_SLICE;
	uint64_t first = 0, max = 0;
	bool has = false;
	size_t n = 0;

	while (n + 4 <= len && n < slice) {
		uint32_t hdr = rd32(p + n);
		unsigned int size = rec_record_size(hdr);

		if (n + size > len)
			break;
		if ((hdr >> 31) && (hdr & 0x0fffffff) != TRC_GEN_WRAP) {
			uint64_t t = rd32(p + n + 4) | ((uint64_t)rd32(p + n + 8) << 32);

			if (!has)
				first = t;
			has = true;
			if (t > max)
				max = t;
		}
		n += size;
	}
	*used = n;
	return n ? queue(s, cpu, p, n, has, first, max) : 0;
}

static int feed(struct rec_stream *s, int cpu, const void *data, size_t len)
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
		unsigned int need = c->carry_len < 4 ? 4 : rec_record_size(rd32(c->carry));
		unsigned int n = need - c->carry_len;

		if (n > len)
			n = len;
		memcpy(c->carry + c->carry_len, p, n);
		c->carry_len += n;
		p += n;
		len -= n;
		if (c->carry_len >= 4 && c->carry_len == rec_record_size(rd32(c->carry))) {
			size_t used;

			ret = queue_walk(s, cpu, c->carry, c->carry_len, &used);
			c->carry_len = 0;
			if (ret)
				return ret;
		}
	}
	if (s->p.unordered) {
		/* one walk, nothing queued */
		size_t n = s->p.class_mask ? pass_all(s, cpu, p, len, true) :
			   s->emit_raw ? pass_raw(s, cpu, p, len) :
			   pass_all(s, cpu, p, len, false);

		p += n;
		len -= n;
	}
	/* Whole records, in slices so the bound is checked as we go. */
	while (len >= 4) {
		size_t n;

		ret = queue_walk(s, cpu, p, len, &n);
		if (ret)
			return ret;
		if (!n)
			break;
		p += n;
		len -= n;
	}
	if (len) {
		memcpy(c->carry, p, len);
		c->carry_len = len;
	}
	return 0;
}

int rec_stream_feed(struct rec_stream *s, int cpu, const void *data, size_t len)
{
	int ret = feed(s, cpu, data, len);

	hand_over(s);
	return ret;
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
	hand_over(s);
	return 0;
}

void rec_stream_raise_last(struct rec_stream *s, uint64_t tsc)
{
	if (tsc > s->last_emitted)
		s->last_emitted = tsc;
}

int rec_stream_finish(struct rec_stream *s)
{
	uint64_t latest = s->last_emitted;

	/* the merge may not have emitted the newest yet: what was fed */
	for (int i = 0; i <= s->max_seen; i++)
		if (s->cpus[i].fed_tsc && s->cpus[i].last_fed > latest)
			latest = s->cpus[i].last_fed;
	for (int i = 0; i <= s->max_seen; i++) {
		struct cpu_q *c = &s->cpus[i];

		s->st.cut_bytes += c->carry_len;
		c->carry_len = 0;
		if (!c->seen || c->fed_tsc)
			continue;
		/* never a TSC on this pCPU: what it holds takes the latest one */
		s->waiting--;
		c->fed_tsc = true;
		c->first_fed = c->last_fed = latest;
		heap_add(s, i);
	}
	drain(s, true);
	hand_over(s);
	return 0;
}
