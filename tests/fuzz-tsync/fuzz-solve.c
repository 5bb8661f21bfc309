// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the solvers (tsync/tsync-solve.c, and the ptp
 * side: tsync_solution_from_samples(), tsync_ptp_sample_ok()) fed
 * arbitrary rounds, pairs and samples. The first byte picks the solver.
 * Beyond no crash and no UB: a result only when the input allows one, and
 * every result keeps check_solution()'s invariants.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-tsync-check.h"

#define MAXN	256
#define NCPU	4

struct in {
	const uint8_t	*p;
	size_t		n;
};

static uint64_t take(struct in *in, size_t bytes)
{
	uint64_t v = 0;

	if (bytes > in->n)
		bytes = in->n;
	memcpy(&v, in->p, bytes);
	in->p += bytes;
	in->n -= bytes;
	return v;
}

/* A time: mostly near the last one, sometimes anything. */
static uint64_t stamp(struct in *in, uint64_t *last)
{
	uint8_t k = (uint8_t)take(in, 1);

	*last = k & 0x80 ? take(in, 8) : *last + take(in, 2);
	return *last;
}

static void solve_rounds(struct in *in)
{
	static struct tsync_gmark g[MAXN];
	static struct tsync_hmark h[MAXN];
	struct tsync_solve_opts o = { .nvcpu = 1 + (uint32_t)take(in, 1) % NCPU };
	struct tsync_solution s;
	size_t ng = take(in, 1) % MAXN, nh = take(in, 1) % MAXN;
	uint64_t t = 1000000, u = 1000000;
	bool pair = false;
	uint8_t f = (uint8_t)take(in, 1);

	o.pv = f & 1;
	o.keep_first = f & 2;
	o.scale.ratio = f & 4 ? take(in, 8) : 0;
	o.scale.frac = f & 4 ? (unsigned int)take(in, 1) % 64 : 0;
	o.g_start = f & 8 ? take(in, 8) : 0;
	o.g_end = f & 8 ? take(in, 8) : 0;
	for (size_t i = 0; i < ng; i++) {
		g[i].seq = (uint32_t)take(in, 1) % 32;
		g[i].vcpu = (uint32_t)take(in, 1) % (NCPU + 1);
		g[i].a = stamp(in, &t);
		g[i].b = stamp(in, &t);
	}
	for (size_t i = 0; i < nh; i++) {
		h[i].seq = (uint32_t)take(in, 1) % 32;
		h[i].vcpu = (uint32_t)take(in, 1) % (NCPU + 1);
		h[i].dom = 1;
		h[i].kind = (enum tsync_kind)(take(in, 1) % 3);
		h[i].h_exit = stamp(in, &u);
		h[i].h_entry = stamp(in, &u);
	}
	for (size_t i = 0; i < ng && !pair; i++)
		for (size_t j = 0; j < nh && !pair; j++)
			pair = g[i].seq == h[j].seq && g[i].vcpu == h[j].vcpu;
	memset(&s, 0, sizeof(s));
	if (tsync_solve(&o, g, ng, h, nh, &s) == 0) {
		if (!pair)
			abort();	/* an answer from nothing */
		check_solution(&s, o.nvcpu);
	}
	tsync_solution_free(&s);
}

static void solve_vtsc(struct in *in)
{
	static struct tsync_vpair p[MAXN];
	struct tsync_solve_opts o = { .nvcpu = 1 + (uint32_t)take(in, 1) % NCPU };
	struct tsync_solution s;
	size_t n = take(in, 2) % MAXN;
	uint64_t t = 1000000, u = 5000000;

	for (size_t i = 0; i < n; i++) {
		p[i].dom = 1;
		p[i].vcpu = (uint32_t)take(in, 1) % (NCPU + 1);
		p[i].h_exit = stamp(in, &t);
		p[i].h_entry = stamp(in, &t);
		p[i].guest = stamp(in, &u);
	}
	memset(&s, 0, sizeof(s));
	if (tsync_solve_vtsc(&o, p, n, &s) == 0) {
		if (!n)
			abort();
		check_solution(&s, o.nvcpu);
	}
	tsync_solution_free(&s);
}

static void from_samples(struct in *in)
{
	static uint64_t ts[NCPU][MAXN];
	static int64_t off[NCPU][MAXN];
	const uint64_t *tp[NCPU];
	const int64_t *op[NCPU];
	uint32_t ncpu = 1 + (uint32_t)take(in, 1) % NCPU, n[NCPU], total = 0;
	struct tsync_solution s;

	for (uint32_t c = 0; c < ncpu; c++) {
		uint64_t t = 1000;

		n[c] = (uint32_t)take(in, 1) % MAXN;
		for (uint32_t i = 0; i < n[c]; i++) {
			ts[c][i] = stamp(in, &t);
			off[c][i] = (int64_t)take(in, take(in, 1) % 9);
			if (take(in, 1) & 1)
				off[c][i] = -off[c][i];
		}
		tp[c] = ts[c];
		op[c] = off[c];
		total += n[c];
	}
	memset(&s, 0, sizeof(s));
	if (tsync_solution_from_samples(ncpu, n, tp, op, &s) == 0) {
		if (!total || s.count < 2)
			abort();
		check_solution(&s, ncpu);
	}
	tsync_solution_free(&s);
}

static void sample_ok(struct in *in)
{
	int64_t ts = (int64_t)take(in, 8), off = (int64_t)take(in, 8);
	uint64_t sent = take(in, 8), back = take(in, 8);

	if (tsync_ptp_sample_ok(ts, off, sent, back) &&
	    (off > TSYNC_OFFSET_MAX || off < -TSYNC_OFFSET_MAX || sent > back))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };

	switch (take(&in, 1) % 4) {
	case 0:
		solve_rounds(&in);
		break;
	case 1:
		solve_vtsc(&in);
		break;
	case 2:
		from_samples(&in);
		break;
	default:
		sample_ok(&in);
		break;
	}
	return 0;
}
