// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the recorder library: frequency parsing and TSC2NSEC, the
 * streaming merge and its edges, the event catalogue (every format must
 * parse in libtraceevent), the vCPU model, the copy for xenalyze.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event-parse.h>
#include <xen/trace.h>

#include "recorder-internal.h"

/* ---- time ---- */

static void test_parse_hz(void **state)
{
	static const struct { const char *s; uint64_t hz; } ok[] = {
		{ "2.4G", 2400000000ull }, { "2400M", 2400000000ull },
		{ "2400000000", 2400000000ull }, { "2.4GHz", 2400000000ull },
		{ "3.192003G", 3192003000ull }, { "1000k", 1000000ull },
		{ "2593.906M", 2593906000ull }, { "1", 1 },
	};
	static const char *const bad[] = {
		"", "G", "2.4X", "-1", "0", "1.5", "2.4.1G", "1e9", "99999999999999999999999",
		"2.4G ", "0.0000000001G",
	};
	uint64_t hz;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		hz = 0;
		assert_int_equal(rec_parse_hz(ok[i].s, &hz), 0);
		assert_int_equal(hz, ok[i].hz);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_not_equal(rec_parse_hz(bad[i], &hz), 0);
}

/* trace-cmd's conversion: two 32-bit halves, shift <= 32 */
static uint64_t tc_convert(uint64_t ts, uint32_t mult, uint32_t shift)
{
	return (uint64_t)(((unsigned __int128)ts * mult) >> shift);
}

static void test_tsc2nsec_bound(void **state)
{
	static const uint64_t hzs[] = {
		2400000000ull, 3192003000ull, 1000000000ull, 2593906000ull, 4294967295ull,
		100000000ull, 1234567891ull,
	};

	for (size_t i = 0; i < sizeof(hzs) / sizeof(hzs[0]); i++) {
		uint32_t mult, shift;
		uint64_t hz = hzs[i];

		assert_int_equal(rec_tsc2nsec(hz, &mult, &shift), 0);
		assert_true(shift <= 32);
		/* an hour of TSC ticks: error < 0.5 ns per second + 1 ns */
		for (uint64_t secs = 1; secs <= 3600; secs *= 60) {
			uint64_t ticks = hz * secs;
			uint64_t got = tc_convert(ticks, mult, shift);
			uint64_t want = secs * 1000000000ull;
			uint64_t err = got > want ? got - want : want - got;

			assert_true(err * 2 <= secs + 2);
		}
		/* against exact 128-bit arithmetic at an odd tick count */
		uint64_t t = 123456789012345ull;
		uint64_t exact = (uint64_t)(((unsigned __int128)t * 1000000000u) / hz);
		uint64_t got = tc_convert(t, mult, shift);
		uint64_t secs = t / hz + 1;

		assert_true((got > exact ? got - exact : exact - got) * 2 <= secs + 2);
	}
}

/* ---- the stream ---- */

struct sink {
	struct rec_record	r[4096];
	int			n;
};

static void collect(void *ctx, const struct rec_record *r)
{
	struct sink *k = ctx;

	if (k->n < 4096)
		k->r[k->n++] = *r;
}

struct buf {
	uint8_t	b[65536];
	size_t	len;
};

static void rec(struct buf *b, uint32_t id, bool tsc, uint64_t t, int n, ...)
{
	va_list ap;
	uint32_t h = id | (uint32_t)n << 28 | (tsc ? 0x80000000u : 0);

	memcpy(b->b + b->len, &h, 4);
	b->len += 4;
	if (tsc) {
		memcpy(b->b + b->len, &t, 8);
		b->len += 8;
	}
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		uint32_t w = va_arg(ap, uint32_t);

		memcpy(b->b + b->len, &w, 4);
		b->len += 4;
	}
	va_end(ap);
}

static void test_stream_merge(void **state)
{
	struct sink *k = calloc(1, sizeof(*k));
	struct rec_stream *s = rec_stream_new(NULL, collect, k);
	struct buf a = { 0 }, b = { 0 };

	/* cpu0: 10, 30 (+ one without TSC), 50; cpu1: 20, 40 */
	rec(&a, TRC_PM_FREQ_CHANGE, true, 10, 2, 1, 2);
	rec(&a, TRC_PM_FREQ_CHANGE, true, 30, 2, 3, 4);
	rec(&a, TRC_HVM_CPUID, false, 0, 6, 1, 2, 3, 4, 5, 6);
	rec(&a, TRC_PM_FREQ_CHANGE, true, 50, 2, 5, 6);
	rec(&b, TRC_PM_FREQ_CHANGE, true, 20, 2, 7, 8);
	rec(&b, TRC_PM_FREQ_CHANGE, true, 40, 0);
	rec_stream_expect(s, 0);
	rec_stream_expect(s, 1);
	/* feed cpu0 byte by byte: records split anywhere are joined */
	for (size_t i = 0; i < a.len; i++)
		assert_int_equal(rec_stream_feed(s, 0, a.b + i, 1), 0);
	rec_stream_end_window(s, 0);
	assert_int_equal(k->n, 0);	/* cpu1 may still send older ones */
	rec_stream_feed(s, 1, b.b, b.len);
	rec_stream_end_window(s, 1);
	assert_true(k->n >= 3);
	rec_stream_finish(s);
	assert_int_equal(k->n, 6);
	for (int i = 1; i < k->n; i++)
		assert_true(k->r[i].tsc >= k->r[i - 1].tsc);
	assert_int_equal(k->r[3].event, TRC_HVM_CPUID);
	assert_int_equal(k->r[3].tsc, 30);
	assert_int_equal(k->r[3].nr, 6);
	assert_int_equal(k->r[3].w[5], 6);
	assert_int_equal(k->r[1].cpu, 1);
	struct rec_stream_stats st;

	rec_stream_get_stats(s, &st);
	assert_int_equal(st.records, 6);
	assert_int_equal(st.no_tsc, 1);
	assert_int_equal(st.late, 0);
	assert_int_equal(st.cpus, 2);
	rec_stream_free(s);
	free(k);
}

static void test_stream_edges(void **state)
{
	struct sink *k = calloc(1, sizeof(*k));
	struct rec_stream *s = rec_stream_new(NULL, collect, k);
	struct rec_stream_stats st;
	struct buf a = { 0 };

	/* no TSC yet: takes the first one that comes */
	rec(&a, TRC_HVM_INTR, false, 0, 1, 32);
	rec(&a, TRC_LOST_RECORDS, true, 100, 4, 77, 0, 90, 0);
	rec(&a, TRC_TRACE_WRAP_BUFFER, false, 0, 3, 0, 0, 0);
	rec(&a, TRC_PM_FREQ_CHANGE, true, 90, 2, 1, 2);	/* skew: older */
	rec(&a, TRC_PM_FREQ_CHANGE, true, 200, 2, 1, 2);
	rec(&a, TRC_PM_FREQ_CHANGE, true, 300, 5, 1, 2);	/* cut at window end */
	rec_stream_feed(s, 3, a.b, a.len - 8);
	rec_stream_end_window(s, 3);
	assert_int_equal(rec_stream_feed(s, REC_MAX_CPUS, a.b, 4), -EINVAL);
	rec_stream_finish(s);
	rec_stream_get_stats(s, &st);
	assert_int_equal(k->n, 4);
	assert_int_equal(k->r[0].tsc, 100);
	assert_int_equal(k->r[0].event, TRC_HVM_INTR);
	assert_int_equal(k->r[2].tsc, 100);	/* clamped, kept in order */
	assert_true(k->r[2].flags & REC_F_SKEW);
	assert_int_equal(st.skew, 1);
	assert_int_equal(st.max_skew, 10);
	assert_int_equal(st.fillers, 1);
	assert_int_equal(st.lost_records, 1);
	assert_int_equal(st.lost, 77);
	assert_int_equal(st.cut_bytes, 32 - 8);
	rec_stream_free(s);
	free(k);
}

/* per_cpu: each pCPU's records at once, in its own order, never late */
static void test_stream_per_cpu(void **state)
{
	struct rec_stream_params p = { .per_cpu = true };
	struct sink *k = calloc(1, sizeof(*k));
	struct rec_stream *s = rec_stream_new(&p, collect, k);
	struct rec_stream_stats st;
	struct buf a = { 0 }, b = { 0 };

	/* cpu0 starts without a TSC: it takes the first one of the piece */
	rec(&a, TRC_HVM_INTR, false, 0, 1, 32);
	rec(&a, TRC_PM_FREQ_CHANGE, true, 50, 2, 1, 2);
	rec(&a, TRC_TRACE_WRAP_BUFFER, false, 0, 3, 0, 0, 0);
	rec(&a, TRC_PM_FREQ_CHANGE, true, 40, 2, 3, 4);	/* skew: older */
	rec(&a, TRC_LOST_RECORDS, true, 60, 4, 5, 0, 60, 0);
	rec(&b, TRC_PM_FREQ_CHANGE, true, 10, 2, 7, 8);	/* older than cpu0's */
	rec(&b, TRC_HVM_CPUID, false, 0, 6, 1, 2, 3, 4, 5, 6);
	/* split anywhere, still joined */
	for (size_t i = 0; i < a.len; i += 5)
		rec_stream_feed(s, 0, a.b + i, a.len - i < 5 ? a.len - i : 5);
	rec_stream_end_window(s, 0);
	assert_int_equal(k->n, 4);	/* emitted without waiting for cpu1 */
	rec_stream_feed(s, 1, b.b, b.len);
	rec_stream_end_window(s, 1);
	rec_stream_finish(s);
	assert_int_equal(k->n, 6);
	assert_int_equal(k->r[0].event, TRC_HVM_INTR);
	assert_int_equal(k->r[0].tsc, 50);
	assert_int_equal(k->r[2].tsc, 50);	/* clamped, kept in order */
	assert_true(k->r[2].flags & REC_F_SKEW);
	assert_int_equal(k->r[4].cpu, 1);
	assert_int_equal(k->r[4].tsc, 10);
	assert_false(k->r[4].flags & REC_F_LATE);
	assert_int_equal(k->r[5].tsc, 10);
	assert_int_equal(k->r[5].nr, 6);
	assert_int_equal(k->r[5].w[5], 6);
	assert_int_equal(k->r[5].w[0], 1);
	rec_stream_get_stats(s, &st);
	assert_int_equal(st.records, 6);
	assert_int_equal(st.late, 0);
	assert_int_equal(st.skew, 1);
	assert_int_equal(st.fillers, 1);
	assert_int_equal(st.lost, 5);
	assert_int_equal(st.no_tsc, 2);
	assert_int_equal(st.first_tsc, 10);
	assert_int_equal(st.last_tsc, 60);
	rec_stream_free(s);
	free(k);
}

static void test_stream_bound(void **state)
{
	struct rec_stream_params p = { .max_buffered = 64 * sizeof(struct rec_record) };
	struct sink *k = calloc(1, sizeof(*k));
	struct rec_stream *s = rec_stream_new(&p, collect, k);
	struct rec_stream_stats st;
	struct buf a = { 0 }, b = { 0 };

	/* cpu1 is announced but silent: the bound lets cpu0 out anyway */
	rec_stream_expect(s, 1);
	for (int i = 0; i < 1000; i++)
		rec(&a, TRC_PM_FREQ_CHANGE, true, 1000 + i, 0);
	rec_stream_feed(s, 0, a.b, a.len);
	rec_stream_end_window(s, 0);
	rec_stream_get_stats(s, &st);
	assert_true(k->n >= 1000 - (int)(p.max_buffered / 12));
	assert_true(st.peak_buffered <= 2 * p.max_buffered);
	rec(&b, TRC_PM_FREQ_CHANGE, true, 5, 0);	/* older than what went out */
	rec_stream_feed(s, 1, b.b, b.len);
	rec_stream_finish(s);
	rec_stream_get_stats(s, &st);
	assert_int_equal(k->n, 1001);
	assert_int_equal(st.late, 1);
	rec_stream_free(s);
	free(k);
}

/* records counted per pCPU (0 and 1), with their first and last TSC */
struct tally {
	uint64_t	n[2], first[2], last[2];
};

static void tally(void *ctx, const struct rec_record *r)
{
	struct tally *t = ctx;
	int c = r->cpu & 1;

	if (!t->n[c])
		t->first[c] = r->tsc;
	t->last[c] = r->tsc;
	t->n[c]++;
}

/*
 * pCPU 1 sends a million records without a TSC before any with one (or
 * none at all): REC_NO_TSC_HOLD of them wait, the rest are dropped and
 * counted, and what is queued stays bounded all along.
 */
static void no_tsc_run(bool per_cpu, bool tsc_later)
{
	struct rec_stream_params p = { .per_cpu = per_cpu };
	struct tally *k = calloc(1, sizeof(*k));
	struct rec_stream *s = rec_stream_new(&p, tally, k);
	struct buf *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	const uint64_t n = 1000000, per = sizeof(b->b) / 8;
	struct rec_stream_stats st;
	size_t bound;

	for (int i = 0; i < 1000; i++)
		rec(a, TRC_PM_FREQ_CHANGE, true, 1000 + i, 2, 1, 2);
	rec_stream_feed(s, 0, a->b, a->len);
	rec_stream_end_window(s, 0);
	/* what may be queued: pCPU 0's (the merge waits for pCPU 1's time), the
	 * hold, and pCPU 1's last window */
	bound = (per_cpu ? 0 : a->len) + REC_NO_TSC_HOLD * 8 + 20;
	for (uint64_t i = 0; i < per; i++)
		rec(b, TRC_HVM_INTR, false, 0, 1, 32);
	for (uint64_t fed = 0; fed < n; fed += per) {
		uint64_t m = n - fed < per ? n - fed : per;

		assert_int_equal(rec_stream_feed(s, 1, b->b, m * 8), 0);
		rec_stream_end_window(s, 1);
		rec_stream_get_stats(s, &st);
		assert_true(st.peak_buffered <= bound);
	}
	assert_int_equal(st.no_tsc_dropped, n - REC_NO_TSC_HOLD);
	if (tsc_later) {
		b->len = 0;
		rec(b, TRC_PM_FREQ_CHANGE, true, 5000, 0);
		rec(b, TRC_HVM_INTR, false, 0, 1, 32);	/* after a TSC: kept */
		rec_stream_feed(s, 1, b->b, b->len);
		rec_stream_end_window(s, 1);
	}
	rec_stream_finish(s);
	rec_stream_get_stats(s, &st);
	assert_int_equal(st.no_tsc_dropped, n - REC_NO_TSC_HOLD);
	assert_int_equal(k->n[0], 1000);
	assert_int_equal(k->n[1], REC_NO_TSC_HOLD + (tsc_later ? 2 : 0));
	assert_int_equal(st.records, 1000 + k->n[1]);
	assert_int_equal(st.no_tsc, REC_NO_TSC_HOLD + (tsc_later ? 1 : 0));
	assert_int_equal(st.late, 0);
	assert_true(st.peak_buffered <= bound);
	/* the held ones take the pCPU's first TSC, or without one the latest of all */
	assert_int_equal(k->first[1], tsc_later ? 5000 : 1999);
	assert_int_equal(k->last[1], tsc_later ? 5000 : 1999);
	rec_stream_free(s);
	free(a);
	free(b);
	free(k);
}

static void test_stream_no_tsc_merge(void **state)
{
	no_tsc_run(false, false);
	no_tsc_run(false, true);
}

static void test_stream_no_tsc_per_cpu(void **state)
{
	no_tsc_run(true, false);
	no_tsc_run(true, true);
}

/*
 * A batched stream hands over the records an unbatched one emits, in the
 * same order and with the same stats, each run before the call that
 * decoded it returns, in per_cpu and merge mode, with and without a raw
 * consumer that takes some of them (per_cpu only), with and without its
 * one-record call for the records it stops at: random records of two
 * pCPUs (TSC or not, skewed, fillers, LOST_RECORDS, held before the first
 * TSC) fed in random pieces, records split between pieces.
 */
struct batched {
	struct rec_record	r[4096];
	int			n;
	int			runs;
	int			raw;		/* records the raw consumer took */
	int			raw_calls;
	int			ones;		/* records its one-record call took */
	unsigned int		raw_seed;
};

/* The raw consumer's one-record call: the record it stopped at. */
static void collect_one(void *ctx, const struct rec_record *r)
{
	struct batched *k = ctx;

	k->ones++;
	if (k->n < 4096)
		k->r[k->n++] = *r;
}

static void collect_run(void *ctx, const struct rec_record *r, unsigned int n)
{
	struct batched *k = ctx;

	assert_true(n >= 1 && n <= REC_EMIT_BATCH);
	k->runs++;
	for (unsigned int i = 0; i < n && k->n < 4096; i++)
		k->r[k->n++] = r[i];
}

/*
 * A raw consumer that takes 0 to 4 records a call, as a sink's fast lane
 * would: never the GEN class, a skewed record or one too near the end.
 */
static size_t take_raw(void *ctx, int cpu, const uint8_t *p, size_t len, struct rec_time *t)
{
	struct batched *k = ctx;
	size_t off = 0;
	int most = k->raw_seed++ % 5;

	k->raw_calls++;
	while (most-- > 0 && len - off >= REC_DECODE_FAST_READ && k->n < 4096) {
		struct rec_record r;
		uint32_t hdr;

		memcpy(&hdr, p + off, 4);
		if ((hdr & 0x0ffff000) == TRC_GEN)
			break;
		rec_decode_fast(p + off, cpu, &r);
		if (r.flags & REC_F_TSC) {
			if (r.tsc < t->cur_tsc)
				break;
			t->cur_tsc = r.tsc;
			t->has_cur = true;
		} else {
			r.tsc = t->has_cur ? t->cur_tsc : t->first_fed;
			t->no_tsc++;
		}
		if (r.tsc > t->last_tsc)
			t->last_tsc = r.tsc;
		if (r.tsc < t->first_tsc)
			t->first_tsc = r.tsc;
		t->records++;
		k->r[k->n++] = r;
		k->raw++;
		off += rec_record_size(hdr);
	}
	return off;
}

static void batched_run(bool per_cpu, bool raw, bool one)
{
	struct rec_stream_params p = { .per_cpu = per_cpu };
	struct sink *k = calloc(1, sizeof(*k));
	struct batched *kb = calloc(1, sizeof(*kb));
	struct rec_stream *s = rec_stream_new(&p, collect, k);
	struct rec_stream *sb = rec_stream_new_batched(&p, collect_run, kb);
	struct buf *b[2] = { calloc(1, sizeof(struct buf)), calloc(1, sizeof(struct buf)) };
	struct rec_stream_stats st, stb;
	uint64_t seed = 7, t[2] = { 1000, 1000 };

	if (raw)
		rec_stream_set_raw(sb, take_raw, one ? collect_one : NULL);
	for (int i = 0; i < 3000; i++) {
		int cpu, r;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		r = (int)(seed >> 33);
		cpu = r & 1;
		t[cpu] += (r >> 1) % 50;
		if (i < 6)
			rec(b[cpu], TRC_HVM_INTR, false, 0, 1, i);	/* before the first TSC */
		else if ((r >> 8) % 97 == 0)
			rec(b[cpu], TRC_TRACE_WRAP_BUFFER, false, 0, 3, 0, 0, 0);
		else if ((r >> 8) % 89 == 0)
			rec(b[cpu], TRC_LOST_RECORDS, true, t[cpu], 4, 3, 0, 0, 0);
		else if ((r >> 8) % 83 == 0)
			rec(b[cpu], TRC_PM_FREQ_CHANGE, true, t[cpu] - 40, 2, i, 0);	/* skew */
		else if ((r >> 8) % 3 == 0)
			rec(b[cpu], TRC_HVM_CPUID, false, 0, (r >> 12) % 7, 1, 2, 3, 4, 5, 6);
		else
			rec(b[cpu], TRC_HVM_VMEXIT, true, t[cpu], (r >> 12) % 4, i, 2, 3);
	}
	for (int cpu = 0; cpu < 2; cpu++) {
		for (size_t off = 0; off < b[cpu]->len;) {
			size_t n;

			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			n = 1 + (seed >> 33) % 700;
			if (n > b[cpu]->len - off)
				n = b[cpu]->len - off;
			assert_int_equal(rec_stream_feed(s, cpu, b[cpu]->b + off, n), 0);
			assert_int_equal(rec_stream_feed(sb, cpu, b[cpu]->b + off, n), 0);
			assert_int_equal(kb->n, k->n);
			off += n;
			if ((seed >> 40) % 5 == 0) {
				rec_stream_end_window(s, cpu);
				rec_stream_end_window(sb, cpu);
				assert_int_equal(kb->n, k->n);
			}
		}
		rec_stream_end_window(s, cpu);
		rec_stream_end_window(sb, cpu);
	}
	rec_stream_finish(s);
	rec_stream_finish(sb);
	assert_true(k->n > 2900);
	assert_int_equal(kb->n, k->n);
	/* runs of more than one record: not a call per record (a raw lane cuts them) */
	if (!raw)
		assert_true(kb->runs * 4 < kb->n);
	/* only a per_cpu stream has a raw lane, and it took a share there */
	if (raw && per_cpu)
		assert_true(kb->raw > kb->n / 4 && kb->raw < kb->n);
	else
		assert_int_equal(kb->raw_calls, 0);
	/* what the lane stops at goes to the one-record call, where there is one */
	if (raw && per_cpu && one)
		assert_true(kb->ones > 0);
	else
		assert_int_equal(kb->ones, 0);
	assert_memory_equal(kb->r, k->r, k->n * sizeof(k->r[0]));
	rec_stream_get_stats(s, &st);
	rec_stream_get_stats(sb, &stb);
	assert_true(st.skew > 0 && st.fillers > 0 && st.lost_records > 0 && st.no_tsc > 0);
	assert_memory_equal(&st, &stb, sizeof(st));
	rec_stream_free(s);
	rec_stream_free(sb);
	free(b[0]);
	free(b[1]);
	free(k);
	free(kb);
}

static void test_stream_batched(void **state)
{
	batched_run(true, false, false);
	batched_run(false, false, false);
	batched_run(true, true, false);
	batched_run(false, true, false);
	batched_run(true, true, true);
	batched_run(false, true, true);
}

/* ---- the catalogue ---- */

static void test_catalogue_formats(void **state)
{
	struct tep_handle *tep = tep_alloc();
	char text[4096];
	int n = rec_events_count();

	assert_true(n > 150);
	for (int i = 0; i < n; i++) {
		const struct rec_event *e = rec_event_at(i);
		struct tep_event *ev;
		int len = rec_event_format(e, text, sizeof(text));

		assert_true(len > 0);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(rec_event_at(j)->id, e->id);
		assert_int_equal(tep_parse_event(tep, text, len, e->system), 0);
		ev = tep_find_event(tep, e->id);
		assert_non_null(ev);
		assert_string_equal(ev->name, e->name);
		/* every field lies within the payload the encoder writes */
		for (struct tep_format_field *fd = ev->format.fields; fd; fd = fd->next)
			assert_true(fd->offset + fd->size <= 8 + (int)e->size);
		assert_true(8u + e->size <= REC_MAX_PAYLOAD);
	}
	tep_free(tep);
}

/* A buffer too small: -ENOSPC and a NUL-terminated prefix, as snprintf() would. */
static void test_catalogue_format_space(void **state)
{
	const struct rec_event *e = rec_event_at(0);
	char full[4096], small[4096];
	int len = rec_event_format(e, full, sizeof(full));

	assert_true(len > 0);
	assert_int_equal(strlen(full), len);
	assert_int_equal(rec_event_format(e, small, (size_t)len + 1), len);
	assert_string_equal(small, full);
	for (size_t size = 1; size <= (size_t)len; size = size < 64 ? size + 1 :
	     size < (size_t)len - 1 ? (size_t)len - 1 : size + 1) {
		memset(small, 'z', sizeof(small));
		assert_int_equal(rec_event_format(e, small, size), -ENOSPC);
		assert_int_equal(strlen(small), size - 1);
		assert_memory_equal(small, full, size - 1);
		assert_int_equal(small[size], 'z');
	}
}

/* The pseudo task names of vCPUs, at the ends of their ranges. */
static void test_vcpu_comm(void **state)
{
	static const struct { uint32_t dom, vcpu; const char *comm; } want[] = {
		{ 0, 0, "d0v0" }, { 1, 7, "d1v7" }, { 10, 10, "d10v10" },
		{ 65535, 65535, "d65535v65535" }, { 0x12345, 0x10001, "d9029v1" },
		{ REC_DOMID_IDLE, 3, "<idle>" },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char comm[16];

		memset(comm, 'z', sizeof(comm));
		rec_vcpu_comm(want[i].dom, want[i].vcpu, comm);
		assert_string_equal(comm, want[i].comm);
	}
}

static void test_catalogue_lookup(void **state)
{
	static const struct { uint32_t id; const char *name; } want[] = {
		{ TRC_SCHED_RUNSTATE_CHANGE | 0x010, "runstate_change" },
		{ TRC_SCHED_RUNSTATE_CHANGE | 0x320, "runstate_change" },
		{ TRC_SCHED_SWITCH, "switch" },
		{ TRC_HVM_VMENTRY, "kvm_entry" },
		{ TRC_HVM_VMENTRY | TRC_HVM_NESTEDFLAG, "kvm_entry" },
		{ TRC_HVM_VMEXIT, "kvm_exit" }, { TRC_HVM_VMEXIT64, "kvm_exit" },
		{ TRC_HVM_ENTRYEXIT + 0x03, "kvm_exit" }, { TRC_HVM_ENTRYEXIT + 0x103, "kvm_exit" },
		{ TRC_PV_HYPERCALL_V2, "pv_hypercall_v2" },
		{ TRC_SHADOW_FIXUP | 0x200, "shadow_fixup" },
		{ TRC_GUEST | 0x42, "guest" },
		{ 0x00022213, "csched2_picked_cpu" }, { 0x00022212, "unknown" },
		{ 0x00022a04, "snull_migrate" }, { 0x00022806, "rtds_schedule" },
		{ 0x00041001, "dom0_dom_add" }, { 0x00802008, "irq_handled" },
		{ 0x0fffffff, "unknown" }, { 0, "unknown" },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_string_equal(rec_event_lookup(want[i].id)->name, want[i].name);
	assert_int_equal(rec_event_class(TRC_GUEST | 1), REC_CLASS_GUEST);
	assert_int_equal(rec_event_class(TRC_MEM_POD_POPULATE), REC_CLASS_MEM);
}

static void test_encode(void **state)
{
	struct rec_record r = { .tsc = 5, .cpu = 0 };
	uint8_t b[REC_MAX_PAYLOAD];
	const struct rec_event *e;
	uint64_t a1;
	uint32_t v;
	size_t len;

	/* hypercall v2: op 29, a0 32-bit, a1 64-bit */
	r.event = TRC_PV_HYPERCALL_V2;
	r.nr = 4;
	r.w[0] = 29 | TRC_PV_HYPERCALL_V2_ARG_32(0) | TRC_PV_HYPERCALL_V2_ARG_64(1);
	r.w[1] = 7;
	r.w[2] = 0x1000;
	r.w[3] = 0xffff8000;
	e = rec_event_lookup(r.event);
	len = rec_event_encode(e, &r, 65537, 0, b);
	assert_int_equal(len, 8 + e->size);
	memcpy(&v, b + 8, 4);
	assert_int_equal(v, 29);
	memcpy(&a1, b + 24, 8);
	assert_int_equal(a1, 0xffff800000001000ull);
	memcpy(&v, b + 4, 4);
	assert_int_equal(v, 65537);
	/* too many words for a format: caller falls back to xen/unknown */
	r.event = TRC_SCHED_WAKE;
	r.nr = 7;
	assert_int_equal(rec_event_encode(rec_event_lookup(r.event), &r, 0, 0, b), 0);
	/* SVM exit: isa 2 */
	r.event = TRC_HVM_ENTRYEXIT + 0x103;
	r.nr = 3;
	r.w[0] = 0x7b;
	len = rec_event_encode(rec_event_lookup(r.event), &r, 2, 0, b);
	assert_int_equal(len, REC_KVM_EXIT_SIZE);
	memcpy(&v, b + 12, 4);
	assert_int_equal(v, 2);	/* isa: SVM */
	memcpy(&v, b + 24, 4);
	assert_int_equal(v, 1);	/* vcpu_id of pid 2 = d0v1 */
}

/*
 * The sink's wide encoding of a record's words (all 8 read from its raw
 * bytes, 8 stored) gives the event's bytes the word-by-word one gives, for
 * every word count that fits every small catalogue entry, whatever follows
 * the record; what it stores past the event is zeros.
 */
static void test_encode_words_wide(void **state)
{
	uint8_t raw[REC_DECODE_FAST_READ], want[8 + 32], got[REC_WORDS_WIDE];
	int checked = 0;

	for (size_t i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)(0xa5 ^ (i * 37));
	for (int i = 0; i < rec_events_count(); i++) {
		const struct rec_event *e = rec_event_at(i);

		if (e->enc != REC_ENC_WORDS || e->size < 4 || e->size > 32)
			continue;
		for (unsigned int nr = 0; nr <= (e->size - 4u) / 4; nr++) {
			/* after the header and the TSC, as the sink's raw lane reads them */
			const uint8_t *words = raw + 12;

			memset(want, 0, sizeof(want));
			memset(got, 0xee, sizeof(got));
			rec_encode_words(want, e->id, e->size, 42, words, nr);
			rec_encode_words_wide(got, e->id, 42, words, nr);
			assert_memory_equal(got, want, 8 + e->size);
			for (size_t b = 8 + e->size; b < sizeof(got); b++)
				assert_int_equal(got[b], 0);
			checked++;
		}
	}
	/* the catalogue has small word events with 0 to 7 words */
	assert_true(checked > 100);
}

/* ---- the vCPU model ---- */

static void test_vcpus(void **state)
{
	struct rec_vcpus *m = rec_vcpus_new(2, false);
	struct rec_record r = { .cpu = 1, .nr = 1 };
	struct rec_switch sw;
	uint32_t d, v;

	assert_false(rec_vcpus_current(m, 1, &d, &v));
	/* d3v1 comes in on pCPU 1 */
	r.event = TRC_SCHED_RUNSTATE_CHANGE | 1 << 8 | 0 << 4;
	r.w[0] = 3 << 16 | 1;
	assert_int_equal(rec_vcpus_update(m, &r, &sw), 1);
	assert_int_equal(sw.prev_dom, REC_DOMID_IDLE);
	assert_int_equal(sw.next_dom, 3);
	assert_int_equal(sw.next_vcpu, 1);
	assert_true(rec_vcpus_current(m, 1, &d, &v));
	assert_int_equal(d, 3);
	/* it blocks, idle comes in: prev_state S */
	r.event = TRC_SCHED_RUNSTATE_CHANGE | 0 << 8 | 2 << 4;
	assert_int_equal(rec_vcpus_update(m, &r, &sw), 0);
	r.event = TRC_SCHED_RUNSTATE_CHANGE | 1 << 8 | 0 << 4;
	r.w[0] = REC_DOMID_IDLE << 16 | 1;
	assert_int_equal(rec_vcpus_update(m, &r, &sw), 1);
	assert_int_equal(sw.prev_state, REC_STATE_BLOCKED);
	assert_int_equal(sw.prev_dom, 3);
	assert_false(rec_vcpus_current(m, 1, &d, &v));
	/* a wakeup logged here does not move anything */
	r.event = TRC_SCHED_RUNSTATE_CHANGE | 2 << 8 | 1 << 4;
	r.w[0] = 5 << 16;
	assert_int_equal(rec_vcpus_update(m, &r, &sw), 0);
	/* preemption: R */
	r.event = TRC_SCHED_RUNSTATE_CHANGE | 1 << 8 | 0 << 4;
	assert_int_equal(rec_vcpus_update(m, &r, &sw), 1);
	r.event = TRC_SCHED_RUNSTATE_CHANGE | 0 << 8 | 1 << 4;
	assert_int_equal(rec_vcpus_update(m, &r, &sw), 0);
	r.event = TRC_SCHED_RUNSTATE_CHANGE | 1 << 8 | 0 << 4;
	r.w[0] = 3 << 16 | 1;
	assert_int_equal(rec_vcpus_update(m, &r, &sw), 1);
	assert_int_equal(sw.prev_state, REC_STATE_RUNNING);
	assert_int_equal(sw.prev_dom, 5);
	/* SWITCH is ignored in runstate mode */
	r.event = TRC_SCHED_SWITCH;
	r.nr = 4;
	r.w[0] = 3, r.w[1] = 1, r.w[2] = 7, r.w[3] = 0;
	assert_int_equal(rec_vcpus_update(m, &r, &sw), 0);
	rec_vcpus_free(m);

	m = rec_vcpus_new(2, true);
	assert_int_equal(rec_vcpus_update(m, &r, &sw), 1);
	assert_int_equal(sw.next_dom, 7);
	assert_int_equal(rec_vcpu_pid(7, 0), (7 << 16) + 1);
	assert_int_equal(rec_vcpu_pid(REC_DOMID_IDLE, 3), 0);
	rec_vcpus_free(m);
}

/* ---- the copy for xenalyze ---- */

/* A byte buffer that grows, for captures built by hand. */
struct cap {
	uint8_t	*b;
	size_t	len;
};

static void cap_put(struct cap *c, const void *p, size_t n)
{
	c->b = realloc(c->b, c->len + n);
	assert_non_null(c->b);
	memcpy(c->b + c->len, p, n);
	c->len += n;
}

static void cap_window(struct cap *c, int cpu, const void *p, size_t n)
{
	uint32_t hdr[3] = { 0x0001f003u | (2u << 28), (uint32_t)cpu, (uint32_t)n };

	cap_put(c, hdr, sizeof(hdr));
	cap_put(c, p, n);
}

/* @in through rec_xenalyze_copy(); the output's records per pCPU in @per. */
static void xa_run(const struct cap *in, struct cap per[2], struct rec_xa_stats *st,
		   uint64_t *windows)
{
	FILE *fi = tmpfile(), *fo = tmpfile();
	uint8_t *out;
	long n;

	assert_non_null(fi);
	assert_non_null(fo);
	assert_int_equal(fwrite(in->b, 1, in->len, fi), in->len);
	fflush(fi);
	rewind(fi);
	assert_int_equal(rec_xenalyze_copy(fileno(fi), fileno(fo), "out", st), 0);
	n = lseek(fileno(fo), 0, SEEK_END);
	assert_true(n > 0);
	out = malloc(n);
	assert_int_equal(pread(fileno(fo), out, n, 0), n);
	*windows = 0;
	for (uint64_t off = 0; off + 12 <= (uint64_t)n; (*windows)++) {
		uint32_t h[3];

		memcpy(h, out + off, 12);
		assert_int_equal(h[0], 0x0001f003u | (2u << 28));
		assert_true(h[1] < 2);
		assert_true(off + 12 + h[2] <= (uint64_t)n);
		cap_put(&per[h[1]], out + off + 12, h[2]);
		off += 12 + h[2];
	}
	free(out);
	fclose(fi);
	fclose(fo);
}

/*
 * A record that a window boundary cuts is completed from its pCPU's next
 * window, with another pCPU's window between; TRC_GUEST records go.
 */
static void test_xenalyze_cut_record(void **state)
{
	/* A: no TSC, 1 word; B: TSC and 2 words; G: TRC_GUEST; C: 0 words */
	uint32_t a[2] = { 0x00021011u | (1u << 28), 7 };
	uint32_t b[5] = { 0x0002800eu | (2u << 28) | (1u << 31), 1, 2, 3, 4 };
	uint32_t g[2] = { 0x0800f5c5u | (1u << 28), 9 };
	uint32_t c1[1] = { 0x00081001u };
	struct cap in = { 0 }, per[2] = { 0 }, want = { 0 };
	uint8_t w[64];
	struct rec_xa_stats st;
	uint64_t windows;

	memcpy(w, a, 8);
	memcpy(w + 8, b, 6);
	cap_window(&in, 0, w, 14);
	memcpy(w, g, 8);
	memcpy(w + 8, c1, 4);
	cap_window(&in, 1, w, 12);
	memcpy(w, (uint8_t *)b + 6, 14);
	memcpy(w + 14, g, 8);
	cap_window(&in, 0, w, 22);
	xa_run(&in, per, &st, &windows);
	cap_put(&want, a, 8);
	cap_put(&want, b, 20);
	assert_int_equal(per[0].len, want.len);
	assert_memory_equal(per[0].b, want.b, want.len);
	assert_int_equal(per[1].len, 4);
	assert_memory_equal(per[1].b, c1, 4);
	assert_int_equal(st.records, 3);
	assert_int_equal(st.dropped, 2);
	assert_false(st.truncated);
	free(in.b);
	free(per[0].b);
	free(per[1].b);
	free(want.b);
}

/* A window longer than the output's is split; no record is cut. */
static void test_xenalyze_long_window(void **state)
{
	size_t n = 3u << 19;	/* 1.5 MiB of 8-byte records */
	uint32_t *w = malloc(n);
	struct cap in = { 0 }, per[2] = { 0 };
	struct rec_xa_stats st;
	uint64_t windows;

	assert_non_null(w);
	for (size_t i = 0; i < n / 4; i += 2) {
		w[i] = 0x00021011u | (1u << 28);
		w[i + 1] = (uint32_t)i;
	}
	cap_window(&in, 1, w, n);
	xa_run(&in, per, &st, &windows);
	assert_int_equal(windows, 2);
	assert_int_equal(per[1].len, n);
	assert_memory_equal(per[1].b, w, n);
	assert_int_equal(st.records, n / 8);
	free(w);
	free(in.b);
	free(per[1].b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_hz),
		cmocka_unit_test(test_tsc2nsec_bound),
		cmocka_unit_test(test_stream_merge),
		cmocka_unit_test(test_stream_edges),
		cmocka_unit_test(test_stream_per_cpu),
		cmocka_unit_test(test_stream_bound),
		cmocka_unit_test(test_stream_no_tsc_merge),
		cmocka_unit_test(test_stream_no_tsc_per_cpu),
		cmocka_unit_test(test_stream_batched),
		cmocka_unit_test(test_catalogue_formats),
		cmocka_unit_test(test_catalogue_format_space),
		cmocka_unit_test(test_vcpu_comm),
		cmocka_unit_test(test_catalogue_lookup),
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_encode_words_wide),
		cmocka_unit_test(test_vcpus),
		cmocka_unit_test(test_xenalyze_cut_record),
		cmocka_unit_test(test_xenalyze_long_window),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
