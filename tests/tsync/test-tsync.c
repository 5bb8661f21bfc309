// SPDX-License-Identifier: GPL-2.0
/*
 * tsync unit tests: the clock model, Xen's ratio, the marker matcher on
 * synthetic record streams, brackets and epochs, TIME_SHIFT samples as a
 * stock reader applies them (checked again through libtracecmd), ptp.
 */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <trace-cmd.h>

#include "tdat.h"
#include "tmsg.h"
#include "tcx-util.h"
#include "tsync-internal.h"

typedef unsigned __int128 u128;

/* ---- ratio and conversions ---- */

static void test_ratio(void **state)
{
	struct tsync_scale s;

	(void)state;
	/* hand-computed floor((g << frac) / cpu) */
	assert_int_equal(tsync_xen_ratio(2596150, 1000000, TSYNC_INTEL, true, &s), 0);
	assert_int_equal(s.frac, 48);
	assert_true(s.ratio == 108420151651736ull);
	assert_int_equal(tsync_xen_ratio(2596150, 3000000, TSYNC_INTEL, true, &s), 0);
	assert_true(s.ratio == 325260454955209ull);
	assert_int_equal(tsync_xen_ratio(2000000, 1000000, TSYNC_AMD, true, &s), 0);
	assert_int_equal(s.frac, 32);
	assert_true(s.ratio == 2147483648ull);
	assert_int_equal(tsync_xen_ratio(1000000, 2500000, TSYNC_AMD, true, &s), 0);
	assert_true(s.ratio == 10737418240ull);
	/* identity: libxl's 0, equal rates, with or without scaling */
	assert_int_equal(tsync_xen_ratio(2596150, 0, TSYNC_INTEL, false, &s), 0);
	assert_true(tsync_scale_identity(&s) && s.ratio == 1ull << 48);
	assert_int_equal(tsync_xen_ratio(2596150, 2596150, TSYNC_AMD, true, &s), 0);
	assert_true(tsync_scale_identity(&s) && s.ratio == 1ull << 32);
	/* no usable ratio: Xen emulates (vtsc) */
	assert_int_equal(tsync_xen_ratio(1000000, 256000000, TSYNC_AMD, true, &s), -ERANGE);
	assert_int_equal(tsync_xen_ratio(2596150, 1000000, TSYNC_INTEL, false, &s), -ERANGE);
	assert_int_equal(tsync_xen_ratio(1, 70000, TSYNC_INTEL, true, &s), -ERANGE);
}

static void test_conversions(void **state)
{
	static const uint64_t hosts[] = { 0, 1, 2596150, 1ull << 40, (1ull << 62) + 12345,
					  UINT64_MAX / 3, UINT64_MAX };
	struct tsync_scale s;

	(void)state;
	assert_int_equal(tsync_xen_ratio(2596150, 1000000, TSYNC_INTEL, true, &s), 0);
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		uint64_t h = hosts[i], g = tsync_scale_fwd(&s, h), back;

		assert_true(g == (uint64_t)(((u128)h * s.ratio) >> 48));
		back = tsync_scale_inv(&s, g);
		/* the smallest host reading g: at or before h, and exact */
		assert_true(back <= h);
		assert_true(tsync_scale_fwd(&s, back) >= g);
		if (back)
			assert_true(tsync_scale_fwd(&s, back - 1) < g);
	}
	/* faster guest (AMD 2.5x): the product needs 128 bits */
	assert_int_equal(tsync_xen_ratio(1000000, 2500000, TSYNC_AMD, true, &s), 0);
	assert_true(tsync_scale_fwd(&s, 1ull << 62) == (uint64_t)(((u128)1 << 62) * 5 / 2));
	assert_true(tsync_scale_inv(&s, UINT64_MAX) < UINT64_MAX);
	/* guest <-> host with a large negative offset */
	{
		int64_t off = -40000000000ll;
		uint64_t h = 123456789012345ull, g = tsync_guest_of(&s, off, h);

		assert_true(tsync_host_of(&s, off, g) <= h);
		assert_true(tsync_guest_of(&s, off, tsync_host_of(&s, off, g)) >= g);
		assert_true(h - tsync_host_of(&s, off, g) <= 1);
	}
}

/* ---- the clock model ---- */

static void test_clock(void **state)
{
	struct tsync_pair p[16];
	struct tsync_clock c;
	/* true rate: 2.6 GHz + 37 ppm; cpu_khz says 2600000 */
	const long double ns_per_tick = 1e6L / 2600096.2L;

	(void)state;
	for (int i = 0; i < 16; i++) {
		/* 8 pairs at the start, 8 after 60 s, jitter of a few ns */
		uint64_t tsc = 1000000000ull + (i < 8 ? i * 5000ull : 156000000000ull + i * 5000ull);

		p[i].tsc = tsc;
		p[i].ns = (uint64_t)(tsc * ns_per_tick) + (i % 3);
	}
	assert_int_equal(tsync_clock_init(&c, 2600000, p, 16), 0);
	assert_true(c.fitted);
	assert_true(c.shift <= 32 && c.mult > (1u << 30));
	assert_true(c.ppb > -37500 && c.ppb < -36500);
	assert_true(c.resid_ns <= 3);
	/* over 60 s the model stays within quantisation + residual of the truth */
	for (uint64_t t = p[0].tsc; t < p[15].tsc; t += 7777777777ull) {
		long double want = t * ns_per_tick;
		long double got = tsync_clock_ns(&c, t);
		long double bound = t * (c.quant_ppb * 1e-9L) + c.resid_ns + 2;

		assert_true(got - want < bound && want - got < bound);
	}
	/* bogus pairs (a PVH dom0's own TSC): cpu_khz alone */
	p[15].ns /= 2;
	assert_int_equal(tsync_clock_init(&c, 2600000, p, 16), 0);
	assert_false(c.fitted);
	assert_true(llabs((long long)tsync_clock_ns(&c, 2600000000ull) - 1000000000ll) <= 1);
	/* too short a span */
	assert_int_equal(tsync_clock_init(&c, 2600000, p, 8), 0);
	assert_false(c.fitted);
	assert_int_equal(tsync_clock_init(&c, 0, NULL, 0), -EINVAL);
}

/* ---- the matcher ---- */

static struct tsync_hvrec rec(uint64_t tsc, bool t, uint32_t ev, uint32_t dom, uint32_t vcpu,
			      int nr, ...)
{
	struct tsync_hvrec r = { .tsc = tsc, .has_tsc = t, .event = ev, .dom = dom,
				 .vcpu = vcpu, .known = true, .nr = (uint8_t)nr };
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < nr; i++)
		r.w[i] = va_arg(ap, uint32_t);
	va_end(ap);
	return r;
}

static void feed(struct tsync_match *m, struct tsync_hvrec r)
{
	assert_int_equal(tsync_match_feed(m, &r), 0);
}

static void test_match(void **state)
{
	struct tsync_match *m = tsync_match_new(1);
	const struct tsync_hmark *h;
	const struct tsync_vpair *vp;
	struct tsync_hvrec r;

	(void)state;
	assert_non_null(m);
	/* HVM cpuid: EMUL [T] before VMENTRY must not close the bracket */
	feed(m, rec(1000, true, TSYNC_TRC_VMEXIT64, 1, 0, 3, 0x72, 0, 0));
	feed(m, rec(1000, false, TSYNC_TRC_CPUID, 1, 0, 6, TSYNC_CPUID_LEAF, 7, 0, 0, 0, 0));
	feed(m, rec(1100, true, 0x00084011, 1, 0, 2, 0, 0));
	feed(m, rec(1200, true, TSYNC_TRC_VMENTRY, 1, 0, 0));
	assert_int_equal(tsync_match_marks(m, &h), 1);
	assert_true(h[0].seq == 7 && h[0].h_exit == 1000 && h[0].h_entry == 1200);
	assert_int_equal(h[0].kind, TSYNC_K_CPUID);
	/* descheduled inside the exit: other domains' records in between */
	feed(m, rec(2000, true, TSYNC_TRC_VMEXIT64, 1, 1, 3, 0x72, 0, 0));
	feed(m, rec(2000, false, TSYNC_TRC_CPUID, 1, 1, 6, TSYNC_CPUID_LEAF, 8, 0, 0, 0, 0));
	feed(m, rec(2100, true, 0x00022006, 2, 0, 1, 0));		/* runstate */
	feed(m, rec(2200, true, TSYNC_TRC_VMEXIT64, 2, 0, 3, 0x60, 0, 0));
	feed(m, rec(2300, true, TSYNC_TRC_VMENTRY, 2, 0, 0));
	feed(m, rec(2400, true, TSYNC_TRC_VMENTRY, 1, 1, 0));
	assert_int_equal(tsync_match_marks(m, &h), 2);
	assert_true(h[1].seq == 8 && h[1].vcpu == 1 && h[1].h_exit == 2000 && h[1].h_entry == 2400);
	/* another leaf is not ours */
	feed(m, rec(3000, true, TSYNC_TRC_VMEXIT64, 1, 0, 3, 0x72, 0, 0));
	feed(m, rec(3000, false, TSYNC_TRC_CPUID, 1, 0, 6, 0x40000000, 9, 0, 0, 0, 0));
	feed(m, rec(3100, true, TSYNC_TRC_VMENTRY, 1, 0, 0));
	assert_int_equal(tsync_match_marks(m, &h), 2);
	/* HVMOP: VMEXIT(VMMCALL) -> VMMCALL -> GUEST(seq) -> INJ_VIRQ -> VMENTRY */
	feed(m, rec(4000, true, TSYNC_TRC_VMEXIT64, 1, 0, 3, 0x81, 0, 0));
	feed(m, rec(4000, false, TSYNC_TRC_VMMCALL, 1, 0, 1, 34));
	feed(m, rec(4000, false, TSYNC_TRC_GUEST | TSYNC_GUEST_EVENT, 1, 0, 1, 10));
	feed(m, rec(4000, false, 0x00082011, 1, 0, 1, 0xf3));
	feed(m, rec(4500, true, TSYNC_TRC_VMENTRY, 1, 0, 0));
	assert_int_equal(tsync_match_marks(m, &h), 3);
	assert_true(h[2].seq == 10 && h[2].kind == TSYNC_K_HVMOP && h[2].h_entry == 4500);
	/* PV: HYPERCALL_V2(hvm_op) [T] -> GUEST: both ends the hypercall's TSC */
	feed(m, rec(5000, true, TSYNC_TRC_PV_HCALL_V2, 1, 0, 1, 34));
	feed(m, rec(5000, false, TSYNC_TRC_GUEST | TSYNC_GUEST_EVENT, 1, 0, 1, 11));
	assert_int_equal(tsync_match_marks(m, &h), 4);
	assert_true(h[3].seq == 11 && h[3].kind == TSYNC_K_PV && h[3].h_exit == 5000 &&
		    h[3].h_entry == 5000);
	/* emulated rdtsc: a (host, guest) pair */
	feed(m, rec(6000, true, TSYNC_TRC_VMEXIT64, 1, 0, 3, 0x6e, 0, 0));
	feed(m, rec(6000, false, TSYNC_TRC_RDTSC, 1, 0, 2, 0x89abcdef, 0x1));
	feed(m, rec(6040, true, TSYNC_TRC_VMENTRY, 1, 0, 0));
	assert_int_equal(tsync_match_vpairs(m, &vp), 1);
	assert_true(vp[0].guest == 0x189abcdefull && vp[0].h_exit == 6000 && vp[0].h_entry == 6040);
	/* Xen 4.19+: SVM exits have their own id; a nested guest's flag */
	feed(m, rec(6500, true, TSYNC_TRC_SVM_EXIT64 | TSYNC_TRC_NESTEDFLAG, 1, 0, 3, 0x72, 0, 0));
	feed(m, rec(6500, false, TSYNC_TRC_CPUID, 1, 0, 6, TSYNC_CPUID_LEAF, 13, 0, 0, 0, 0));
	feed(m, rec(6600, true, TSYNC_TRC_VMENTRY | TSYNC_TRC_NESTEDFLAG, 1, 0, 0));
	assert_int_equal(tsync_match_marks(m, &h), 5);
	assert_true(h[4].seq == 13 && h[4].h_exit == 6500 && h[4].h_entry == 6600);
	/* records lost between an exit and a marked exit: the older exit must
	 * not open the bracket */
	feed(m, rec(6700, true, TSYNC_TRC_VMEXIT64, 1, 0, 3, 0x60, 0, 0));
	feed(m, (struct tsync_hvrec){ .tsc = 6900, .has_tsc = true, .event = TSYNC_TRC_LOST,
				      .nr = 4 });
	feed(m, rec(7000, false, TSYNC_TRC_VMMCALL, 1, 0, 1, 34));
	feed(m, rec(7000, false, TSYNC_TRC_GUEST | TSYNC_GUEST_EVENT, 1, 0, 1, 14));
	feed(m, rec(7050, true, TSYNC_TRC_VMENTRY, 1, 0, 0));
	assert_int_equal(tsync_match_marks(m, &h), 5);
	/* PV page fault marker: the round's page; rip, addr, error code */
	feed(m, rec(7200, true, TSYNC_TRC_PV_FAULT64, 1, 1, 5, 0x401000, 0,
		    (uint32_t)(TSYNC_PV_FAULT_BASE + 15 * 4096), (uint32_t)(TSYNC_PV_FAULT_BASE >> 32),
		    4));
	assert_int_equal(tsync_match_marks(m, &h), 6);
	assert_true(h[5].seq == 15 && h[5].kind == TSYNC_K_PV && h[5].vcpu == 1 &&
		    h[5].h_exit == 7200 && h[5].h_entry == 7200);
	/* not a round's page: inside one, below the area, above it, no TSC */
	feed(m, rec(7300, true, TSYNC_TRC_PV_FAULT64, 1, 1, 5, 0x401000, 0,
		    (uint32_t)(TSYNC_PV_FAULT_BASE + 16 * 4096 + 8), (uint32_t)(TSYNC_PV_FAULT_BASE >> 32),
		    4));
	feed(m, rec(7300, true, TSYNC_TRC_PV_FAULT64, 1, 1, 5, 0x401000, 0,
		    0xfffff000u, (uint32_t)(TSYNC_PV_FAULT_BASE >> 32) - 1, 4));
	feed(m, rec(7300, true, TSYNC_TRC_PV_FAULT64, 1, 1, 5, 0x401000, 0,
		    0, (uint32_t)((TSYNC_PV_FAULT_BASE + (uint64_t)TSYNC_PV_FAULT_PAGES * 4096) >> 32),
		    4));
	feed(m, rec(7300, false, TSYNC_TRC_PV_FAULT64, 1, 1, 5, 0x401000, 0,
		    (uint32_t)(TSYNC_PV_FAULT_BASE + 17 * 4096), (uint32_t)(TSYNC_PV_FAULT_BASE >> 32),
		    4));
	assert_int_equal(tsync_match_marks(m, &h), 6);
	/* other domains are ignored */
	feed(m, rec(7000, true, TSYNC_TRC_VMEXIT64, 3, 0, 3, 0x72, 0, 0));
	feed(m, rec(7000, false, TSYNC_TRC_CPUID, 3, 0, 6, TSYNC_CPUID_LEAF, 12, 0, 0, 0, 0));
	feed(m, rec(7100, true, TSYNC_TRC_VMENTRY, 3, 0, 0));
	assert_int_equal(tsync_match_marks(m, &h), 6);
	/* fed per pCPU: a bracket closes in its own run only */
	r = rec(8000, true, TSYNC_TRC_VMEXIT64, 1, 0, 3, 0x72, 0, 0);
	r.run = 5;
	feed(m, r);
	r = rec(8000, false, TSYNC_TRC_CPUID, 1, 0, 6, TSYNC_CPUID_LEAF, 16, 0, 0, 0, 0);
	r.run = 5;
	feed(m, r);
	r = rec(8100, true, TSYNC_TRC_VMENTRY, 1, 0, 0);
	r.run = 6;	/* the vCPU left its pCPU in between */
	feed(m, r);
	assert_int_equal(tsync_match_marks(m, &h), 6);
	r = rec(8200, true, TSYNC_TRC_VMEXIT64, 1, 0, 3, 0x72, 0, 0);
	r.run = 6;
	feed(m, r);
	r = rec(8200, false, TSYNC_TRC_CPUID, 1, 0, 6, TSYNC_CPUID_LEAF, 17, 0, 0, 0, 0);
	r.run = 6;
	feed(m, r);
	r = rec(8300, true, TSYNC_TRC_VMENTRY, 1, 0, 0);
	r.run = 6;
	feed(m, r);
	assert_int_equal(tsync_match_marks(m, &h), 7);
	assert_true(h[6].seq == 17 && h[6].h_exit == 8200 && h[6].h_entry == 8300);
	tsync_match_free(m);
}

/*
 * A PV guest's rounds read one new page each, at the address the matcher
 * knows: after the rounds those pages are mapped (the faults happened),
 * the next one is not; without PV faults nothing is mapped there.
 */
static void test_guest_pv_faults(void **state)
{
	char path[] = "/tmp/tcx-marker-XXXXXX";
	int fd = mkstemp(path);
	struct tsync_guest *g;
	unsigned char v;
	uintptr_t base = (uintptr_t)TSYNC_PV_FAULT_BASE;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	for (int pv = 0; pv <= 1; pv++) {
		struct tsync_guest_opts o = { .marker_path = path, .pv_faults = pv,
					      .first_seq = 3 };
		uint32_t first;

		assert_int_equal(tsync_guest_open(&g, &o), 0);
		first = tsync_guest_next_seq(g);
		assert_int_equal(tsync_guest_rounds(g, 1, 4), 5);
		for (uint32_t seq = first; seq < first + 5; seq++) {
			int r = mincore((void *)(base + seq * 4096ul), 4096, &v);

			/* ENOMEM: nothing mapped there at all */
			if (pv)
				assert_true(r == 0 && (v & 1));
			else
				assert_true(r < 0 && errno == ENOMEM);
		}
		if (pv)
			assert_true(mincore((void *)(base + (first + 5) * 4096ul), 4096, &v) == 0 &&
				    !(v & 1));
		tsync_guest_close(g);
		assert_true(mincore((void *)base, 4096, &v) < 0 && errno == ENOMEM);
	}
	unlink(path);
}

/* ---- synthetic rounds against a known truth ---- */

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct truth {
	struct tsync_scale	s;
	int64_t			off[2];		/* before and after @change */
	uint64_t		change;		/* host TSC of an offset change */
	uint64_t		drift_div;	/* off grows by 1 every so many ticks */
};

static int64_t off_at(const struct truth *t, uint64_t h)
{
	int64_t d = t->drift_div ? (int64_t)(h / t->drift_div) : 0;

	return (h < t->change ? t->off[0] : t->off[1]) + d;
}

/* Rounds every @every host ticks on @nv vCPUs from @h0; exits take 200..2000 ticks,
 * the markers 50..400 ticks either side. */
static size_t make_rounds(const struct truth *t, uint32_t nv, uint64_t h0, uint64_t every,
			  size_t n, struct tsync_gmark *g, struct tsync_hmark *hm)
{
	uint32_t seq = 1;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		for (uint32_t v = 0; v < nv; v++, k++) {
			uint64_t hx = h0 + i * every + v * 10000 + rnd() % 1000;
			uint64_t hn = hx + 200 + rnd() % 1800;
			uint64_t ha = hx - 50 - rnd() % 350, hb = hn + 50 + rnd() % 350;

			if (i == 0)	/* a cold warm-up, still a valid bracket */
				hb += 1000000;
			g[k] = (struct tsync_gmark){ .seq = seq, .vcpu = v,
				.a = tsync_guest_of(&t->s, off_at(t, ha), ha),
				.b = tsync_guest_of(&t->s, off_at(t, hb), hb) };
			hm[k] = (struct tsync_hmark){ .seq = seq++, .dom = 1, .vcpu = v,
				.h_exit = hx, .h_entry = hn, .kind = TSYNC_K_CPUID };
		}
	}
	return k;
}

/* Every guest time maps back to its host time within the bound (+1 rounding). */
static void check_map(const struct truth *t, const struct tsync_solution *s, uint32_t nv,
		      uint64_t h0, uint64_t h1)
{
	for (uint32_t v = 0; v < nv; v++) {
		for (uint64_t h = h0; h < h1; h += (h1 - h0) / 997) {
			/* stay clear of the change: guest time is ambiguous there */
			if (h + 5000000 > t->change && h < t->change + 5000000)
				continue;
			uint64_t g = tsync_guest_of(&t->s, off_at(t, h), h);
			uint64_t got = tsync_apply(s, v, g);
			int64_t err = (int64_t)(got - h);
			uint64_t lim = tsync_scale_identity(&t->s) ? s->bound + 1 :
				       s->bound * 3 + 2;

			if ((uint64_t)llabs(err) > lim)
				fail_msg("vcpu %u host %llu: got %llu, err %lld > %llu", v,
					 (unsigned long long)h, (unsigned long long)got,
					 (long long)err, (unsigned long long)lim);
		}
	}
}

static void test_solve_identity(void **state)
{
	struct truth t = { .off = { -39958960000ll, -39958960000ll }, .change = UINT64_MAX };
	struct tsync_gmark g[200];
	struct tsync_hmark h[200];
	struct tsync_solution s;
	struct tsync_solve_opts o = { .nvcpu = 2 };
	size_t n;

	(void)state;
	assert_int_equal(tsync_xen_ratio(2600000, 0, TSYNC_INTEL, true, &t.s), 0);
	o.scale = t.s;
	n = make_rounds(&t, 2, 50000000000ull, 2600000000ull, 100, g, h);
	o.g_start = tsync_guest_of(&t.s, t.off[0], 49000000000ull);
	o.g_end = tsync_guest_of(&t.s, t.off[0], 320000000000ull);
	assert_int_equal(tsync_solve(&o, g, n, h, n, &s), 0);
	assert_int_equal(s.nepochs, 2);
	assert_int_equal(s.rounds_discarded, 2);
	assert_int_equal(s.rounds_used, 198);
	assert_int_equal(s.rounds_unmatched, 0);
	/* 99 intersected brackets of >= 300 ticks: the bound is well under 100 */
	assert_true(s.bound < 100);
	for (uint32_t i = 0; i < s.nepochs; i++) {
		assert_true(s.epochs[i].lo <= t.off[0] && s.epochs[i].hi >= t.off[0]);
		assert_true((uint64_t)llabs(s.epochs[i].off - t.off[0]) <= s.bound);
	}
	/* TIME_SHIFT: equal counts, at least two, distinct increasing ts */
	assert_true(s.ncpu == 2 && s.count >= 2 && s.flags == TDAT_TSHIFT_INTERPOLATE);
	for (uint32_t v = 0; v < 2; v++) {
		const uint64_t *ts;
		const int64_t *off;

		tsync_solution_cpu(&s, v, &ts, &off);
		for (uint32_t i = 1; i < s.count; i++)
			assert_true(ts[i] > ts[i - 1]);
		assert_true(ts[0] != 0);
	}
	check_map(&t, &s, 2, 49000000000ull, 320000000000ull);
	/* a round of the hypervisor on another vCPU does not count */
	h[5].vcpu ^= 1;
	tsync_solution_free(&s);
	assert_int_equal(tsync_solve(&o, g, n, h, n, &s), 0);
	assert_int_equal(s.rounds_unmatched, 1);
	tsync_solution_free(&s);
	/* nothing matched */
	assert_int_equal(tsync_solve(&o, g, n, h, 0, &s), -ENODATA);
}

static void test_solve_change(void **state)
{
	struct truth t = { .off = { -5000000000ll, 7000000000ll }, .change = 200000000000ull };
	struct tsync_gmark g[300];
	struct tsync_hmark h[300];
	struct tsync_solution s;
	struct tsync_solve_opts o = { .nvcpu = 3 };
	size_t n;

	(void)state;
	assert_int_equal(tsync_xen_ratio(2600000, 0, TSYNC_AMD, true, &t.s), 0);
	o.scale = t.s;
	n = make_rounds(&t, 3, 100000000000ull, 2600000000ull, 80, g, h);
	/* vCPU 2 has no rounds: it takes vCPU 0's epochs */
	for (size_t i = 0; i < n; i++)
		if (g[i].vcpu == 2)
			g[i].vcpu = 99;
	o.g_start = tsync_guest_of(&t.s, t.off[0], 99000000000ull);
	o.g_end = tsync_guest_of(&t.s, t.off[1], 320000000000ull);
	assert_int_equal(tsync_solve(&o, g, n, h, n, &s), 0);
	/* two epochs per measured vCPU: the offset moved, both found */
	assert_int_equal(s.nepochs, 4);
	assert_true(s.epochs[0].off - t.off[0] <= (int64_t)s.bound &&
		    t.off[0] - s.epochs[0].off <= (int64_t)s.bound);
	assert_true(s.epochs[1].off - t.off[1] <= (int64_t)s.bound &&
		    t.off[1] - s.epochs[1].off <= (int64_t)s.bound);
	check_map(&t, &s, 3, 100000000000ull, 300000000000ull);
	tsync_solution_free(&s);
}

static void test_solve_drift(void **state)
{
	/* the guest runs 10 ppm fast against the ratio assumed: 60 s of drift,
	 * rounds every second */
	struct truth t = { .off = { -777777777, -777777777 }, .change = UINT64_MAX,
			   .drift_div = 100000 };
	struct tsync_gmark g[200];
	struct tsync_hmark h[200];
	struct tsync_solution s;
	struct tsync_solve_opts o = { .nvcpu = 2 };
	size_t n;

	(void)state;
	assert_int_equal(tsync_xen_ratio(2600000, 0, TSYNC_INTEL, true, &t.s), 0);
	o.scale = t.s;
	n = make_rounds(&t, 2, 10000000000ull, 2600000000ull, 61, g, h);
	o.g_start = tsync_guest_of(&t.s, off_at(&t, 9000000000ull), 9000000000ull);
	o.g_end = tsync_guest_of(&t.s, off_at(&t, 170000000000ull), 170000000000ull);
	assert_int_equal(tsync_solve(&o, g, n, h, n, &s), 0);
	/* the offset moved 26k ticks per second: many epochs, all drift */
	assert_true(s.nepochs > 20);
	for (uint32_t i = 1; i < s.nepochs; i++)
		if (s.epochs[i].vcpu == s.epochs[i - 1].vcpu)
			assert_true(s.epochs[i].drift);
	/* the bound is then a whole bracket, and it holds over the 60 s */
	assert_true(s.bound < 3000);
	check_map(&t, &s, 2, 13000000000ull, 165000000000ull);
	tsync_solution_free(&s);
}

/*
 * Outliers: a round whose marker b came 5 ms late, and one that straddles
 * the offset change (a before it, b after). The straddler joins the old
 * epoch; it used to make the jump look like drift (the epochs were
 * compared by their widest rounds) and its width (the jump) the bound. A
 * drifting offset's bound is its widest round: one late round was the
 * bound until the outliers were dropped.
 */
static void test_solve_outliers(void **state)
{
	struct truth t = { .off = { -5000000000ll, 55000000000ll }, .change = 15000000000ull };
	struct truth d = { .off = { -777777777, -777777777 }, .change = UINT64_MAX,
			   .drift_div = 100000 };
	struct tsync_gmark g[200];
	struct tsync_hmark h[200];
	struct tsync_solution s;
	struct tsync_solve_opts o = { .nvcpu = 1 };
	size_t n, k;

	(void)state;
	assert_int_equal(tsync_xen_ratio(2600000, 0, TSYNC_INTEL, true, &t.s), 0);
	d.s = o.scale = t.s;
	/* a round every 0.1 s for 4 s; the change after 2 s */
	n = make_rounds(&t, 1, 10000000000ull, 260000000ull, 40, g, h);
	for (k = 0; k < n && h[k].h_exit < t.change; k++)
		;
	/* round k - 1 began before the change; its b comes after it */
	k--;
	g[k].b = tsync_guest_of(&t.s, t.off[1], t.change + 1000);
	g[k / 2].b += 13000000;
	o.g_start = tsync_guest_of(&t.s, t.off[0], 9000000000ull);
	o.g_end = tsync_guest_of(&t.s, t.off[1], 21000000000ull);
	assert_int_equal(tsync_solve(&o, g, n, h, n, &s), 0);
	/* a constant offset keeps every round: they only narrow it */
	assert_int_equal(s.rounds_wide, 0);
	assert_int_equal(s.nepochs, 2);
	assert_false(s.epochs[1].drift);
	assert_true(s.bound < 1000);
	assert_true((uint64_t)llabs(s.epochs[0].off - t.off[0]) <= s.bound);
	assert_true((uint64_t)llabs(s.epochs[1].off - t.off[1]) <= s.bound);
	check_map(&t, &s, 1, 10000000000ull, 20000000000ull);
	tsync_solution_free(&s);

	/* drift: 60 rounds, 5 of them with b 5 ms late */
	n = make_rounds(&d, 1, 10000000000ull, 2600000000ull, 61, g, h);
	for (k = 5; k < n; k += 12)
		g[k].b += 13000000;
	o.g_start = tsync_guest_of(&d.s, off_at(&d, 9000000000ull), 9000000000ull);
	o.g_end = tsync_guest_of(&d.s, off_at(&d, 170000000000ull), 170000000000ull);
	assert_int_equal(tsync_solve(&o, g, n, h, n, &s), 0);
	assert_int_equal(s.rounds_wide, 5);
	assert_true(s.bound < 3000);
	check_map(&d, &s, 1, 13000000000ull, 165000000000ull);
	tsync_solution_free(&s);
}

static void test_solve_scaled(void **state)
{
	/* Intel host at 2.596 GHz, guest restored from a 1 GHz host */
	struct truth t = { .off = { 123456789, 123456789 }, .change = UINT64_MAX };
	struct tsync_gmark g[200];
	struct tsync_hmark h[200];
	struct tsync_solution s;
	struct tsync_solve_opts o = { .nvcpu = 2 };
	size_t n;

	(void)state;
	assert_int_equal(tsync_xen_ratio(2596150, 1000000, TSYNC_INTEL, true, &t.s), 0);
	o.scale = t.s;
	n = make_rounds(&t, 2, 10000000000ull, 2596150000ull, 60, g, h);
	o.g_start = tsync_guest_of(&t.s, t.off[0], 9000000000ull);
	o.g_end = tsync_guest_of(&t.s, t.off[0], 170000000000ull);
	assert_int_equal(tsync_solve(&o, g, n, h, n, &s), 0);
	assert_int_equal(s.nepochs, 2);
	/* samples dense enough for the reader's 64-bit product */
	assert_true(s.count > 2);
	check_map(&t, &s, 2, 9000000000ull, 170000000000ull);
	tsync_solution_free(&s);
}

static void test_solve_pv(void **state)
{
	struct truth t = { .off = { 0, 0 }, .change = UINT64_MAX };
	struct tsync_gmark g[40];
	struct tsync_hmark h[40];
	struct tsync_solution s;
	struct tsync_solve_opts o = { .nvcpu = 1, .pv = true };
	size_t n;

	(void)state;
	assert_int_equal(tsync_xen_ratio(2600000, 0, TSYNC_INTEL, false, &t.s), 0);
	o.scale = t.s;
	n = make_rounds(&t, 1, 1000000000ull, 26000000ull, 20, g, h);
	for (size_t i = 0; i < n; i++)
		h[i].h_entry = h[i].h_exit;	/* no return record */
	assert_int_equal(tsync_solve(&o, g, n, h, n, &s), 0);
	assert_true(s.pv_confirmed);
	assert_true(s.bound == 0 && s.epochs[0].off == 0);
	assert_true(tsync_apply(&s, 0, 5555555555ull) == 5555555555ull);
	tsync_solution_free(&s);
	/* a "PV" guest whose TSC is not the host's is reported, not assumed */
	t.off[0] = t.off[1] = 1000000;
	n = make_rounds(&t, 1, 1000000000ull, 26000000ull, 20, g, h);
	assert_int_equal(tsync_solve(&o, g, n, h, n, &s), 0);
	assert_false(s.pv_confirmed);
	tsync_solution_free(&s);
}

static void test_solve_vtsc(void **state)
{
	struct tsync_vpair p[2000];
	struct tsync_solution s;
	struct tsync_solve_opts o = { .nvcpu = 2 };
	size_t n = 0;

	(void)state;
	assert_int_equal(tsync_xen_ratio(2600000, 0, TSYNC_INTEL, true, &o.scale), 0);
	/* guest - host drifts linearly by 30 ppm from -1e9; a few wild outliers */
	for (uint32_t v = 0; v < 2; v++)
		for (int i = 0; i < 1000; i++, n++) {
			uint64_t hx = 1000000000ull + (uint64_t)i * 26000000ull + v * 1000;
			uint64_t hn = hx + 400 + rnd() % 400;
			uint64_t hm = hx + (hn - hx) / 2;
			int64_t off = -1000000000ll + (int64_t)((hm - 1000000000ull) * 3 / 100000);

			p[n] = (struct tsync_vpair){ .dom = 1, .vcpu = v, .h_exit = hx,
				.h_entry = hn, .guest = hm + (uint64_t)off + rnd() % 100 };
			if (i % 97 == 5)
				p[n].guest += 17000000;
		}
	o.g_start = 1;
	o.g_end = 30000000000ull;
	assert_int_equal(tsync_solve_vtsc(&o, p, n, &s), 0);
	assert_true(s.count >= 2 && s.flags == TDAT_TSHIFT_INTERPOLATE);
	for (size_t i = 0; i < n; i += 37) {
		uint64_t hm = p[i].h_exit + (p[i].h_entry - p[i].h_exit) / 2;
		int64_t err;

		if (i % 1000 % 97 == 5)
			continue;
		err = (int64_t)(tsync_apply(&s, p[i].vcpu, p[i].guest) - hm);
		/* the medians keep within the jitter (100) plus the drift inside a group */
		if (llabs(err) > 1000)
			fail_msg("pair %zu err %lld", i, (long long)err);
	}
	tsync_solution_free(&s);
}

static void test_from_samples(void **state)
{
	const uint64_t t0[] = { 3000, 1000, 2000, 2000 };
	const int64_t o0[] = { -30, -10, -20, -99 };
	const uint64_t *ts[3] = { t0, NULL, t0 };
	const int64_t *off[3] = { o0, NULL, o0 };
	const uint32_t n[3] = { 4, 0, 1 };
	struct tsync_solution s;

	(void)state;
	assert_int_equal(tsync_solution_from_samples(3, n, ts, off, &s), 0);
	/* sorted, the repeated time dropped, CPU 1 took CPU 0's, CPU 2 padded */
	assert_true(s.ncpu == 3 && s.count == 3 && s.flags == TDAT_TSHIFT_INTERPOLATE);
	/* the reader's rounding: (d * -10 + 500) / 1000 truncates toward 0 */
	assert_true(tsync_apply(&s, 0, 1500) == 1500 - 14);
	assert_true(tsync_apply(&s, 1, 2500) == 2500 - 24);
	assert_true(tsync_apply(&s, 2, 2500) == 2500 - 30);	/* one sample: flat */
	assert_true(tsync_apply(&s, 0, 4000) == 4000 - 39);	/* extrapolated */
	tsync_solution_free(&s);
	{
		const uint32_t z[1] = { 0 };

		assert_int_equal(tsync_solution_from_samples(1, z, ts, off, &s), -ENODATA);
	}
}

/*
 * A sample whose host time is not after its predecessor's would make the
 * reader map later guest events before earlier ones: it is dropped, the
 * mapping stays rising everywhere, and the count says so.
 */
static void test_from_samples_rising(void **state)
{
	/* vCPU 0: the sample at 2000 was read from a clock 5000 behind */
	const uint64_t t0[] = { 1000, 2000, 3000, 4000, 5000 };
	const int64_t o0[] = { 100, 9000, 100, 100, 100 };
	/* vCPU 1: noise larger than the gap between two close samples */
	const uint64_t t1[] = { 1000, 1010, 3000 };
	const int64_t o1[] = { 100, 50, 100 };
	const uint64_t *ts[2] = { t0, t1 };
	const int64_t *off[2] = { o0, o1 };
	const uint32_t n[2] = { 5, 3 };
	struct tsync_solution s;
	uint64_t last[2] = { 0, 0 };

	(void)state;
	assert_int_equal(tsync_solution_from_samples(2, n, ts, off, &s), 0);
	assert_int_equal(s.samples_dropped, 2);
	for (uint64_t g = 0; g < 8000; g++) {
		for (uint32_t c = 0; c < 2; c++) {
			uint64_t h = tsync_apply(&s, c, g);

			if (h < last[c])
				fail_msg("cpu %u: guest %llu maps to %llu, before %llu", c,
					 (unsigned long long)g, (unsigned long long)h,
					 (unsigned long long)last[c]);
			last[c] = h;
		}
	}
	assert_true(tsync_apply(&s, 0, 2000) == 2100);
	assert_true(tsync_apply(&s, 1, 3000) == 3100);	/* either close one may go */
	tsync_solution_free(&s);
}

static void test_marker_text(void **state)
{
	char buf[64];
	uint32_t seq;
	bool before;
	int n;

	(void)state;
	n = tsync_marker_text(buf, sizeof(buf), 4294967295u, true);
	assert_int_equal(tsync_marker_parse(buf, (size_t)n, &seq, &before), 1);
	assert_true(seq == 4294967295u && before);
	n = tsync_marker_text(buf, sizeof(buf), 12, false);
	assert_int_equal(tsync_marker_parse(buf, (size_t)n - 1, &seq, &before), 1);
	assert_true(seq == 12 && !before);
	assert_int_equal(tsync_marker_parse("tcx-tsync 4294967296 a", 22, &seq, &before), 0);
	assert_int_equal(tsync_marker_parse("tcx-tsync x a", 13, &seq, &before), 0);
	assert_int_equal(tsync_marker_parse("tcx-tsync 1 c", 13, &seq, &before), 0);
	assert_int_equal(tsync_marker_parse("hello", 5, &seq, &before), 0);
}

/* ---- guest pages ---- */

struct pgbuf {
	uint8_t		p[4096];
	size_t		len;	/* data bytes after the 16-byte header */
	uint64_t	last;
};

static void pg_event(struct pgbuf *b, uint64_t ts, uint16_t id, const char *text)
{
	uint8_t *d = b->p + 16 + b->len;
	uint64_t delta = ts - b->last;
	size_t n = text ? strlen(text) + 1 : 0, dl = (16 + n + 3) & ~3ul;
	uint32_t h;

	if (delta >= (1u << 27)) {
		h = 30 | (uint32_t)(delta & ((1u << 27) - 1)) << 5;
		memcpy(d, &h, 4);
		h = (uint32_t)(delta >> 27);
		memcpy(d + 4, &h, 4);
		d += 8;
		b->len += 8;
		delta = 0;
	}
	h = (uint32_t)(dl / 4) | (uint32_t)delta << 5;
	memcpy(d, &h, 4);
	memset(d + 4, 0, dl);
	memcpy(d + 4, &id, 2);
	if (text)
		memcpy(d + 4 + 16, text, n);
	b->len += 4 + dl;
	b->last = ts;
}

static void test_gcollect(void **state)
{
	struct tsync_gcollect *c = tsync_gcollect_new();
	const struct tsync_gmark *m;
	struct pgbuf b = { .last = 1000000 };
	uint64_t commit, gmin, gmax;
	char t[64];

	(void)state;
	memcpy(b.p, &b.last, 8);
	tsync_marker_text(t, sizeof(t), 7, true);
	pg_event(&b, 1000100, 5, t);
	pg_event(&b, 1000200, 316, NULL);		/* not a print */
	tsync_marker_text(t, sizeof(t), 7, false);
	pg_event(&b, 1000300, 5, t);
	tsync_marker_text(t, sizeof(t), 9, false);	/* b without a */
	pg_event(&b, 1000400, 5, t);
	tsync_marker_text(t, sizeof(t), 8, true);
	pg_event(&b, 1000000000ull, 5, t);		/* TIME_EXTEND first */
	tsync_marker_text(t, sizeof(t), 8, false);
	pg_event(&b, 1000000050ull, 5, t);
	pg_event(&b, 1000000060ull, 5, "hello");
	commit = b.len;
	memcpy(b.p + 8, &commit, 8);
	assert_int_equal(tsync_gcollect_page(c, b.p, sizeof(b.p), 8, 1, 5), 5);
	assert_int_equal(tsync_gcollect_marks(c, &m, &gmin, &gmax), 2);
	assert_true(m[0].seq == 7 && m[0].vcpu == 1 && m[0].a == 1000100 && m[0].b == 1000300);
	assert_true(m[1].seq == 8 && m[1].a == 1000000000ull && m[1].b == 1000000050ull);
	assert_true(gmin == 1000100 && gmax == 1000000060ull);
	/* a commit past the page */
	commit = 5000;
	memcpy(b.p + 8, &commit, 8);
	assert_int_equal(tsync_gcollect_page(c, b.p, sizeof(b.p), 8, 1, 5), -EBADMSG);
	tsync_gcollect_free(c);
}

/* ---- the TIME_SHIFT through libtracecmd, to the ns ---- */

#define COMMON \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
static const char fmt_val[] =
	"name: tsync_val\nID: 5001\nformat:\n" COMMON
	"\tfield:u64 val;\toffset:8;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"val=%llu\", REC->val\n";

#define NEV 400

struct readback {
	uint64_t	ts[NEV];
	uint64_t	val[NEV];
	int		n;
};

static int collect(struct tracecmd_input *hdl, struct tep_record *r, int cpu, void *data)
{
	struct readback *rb = data;

	(void)hdl;
	(void)cpu;
	if (rb->n < NEV && r->size >= 16) {
		rb->ts[rb->n] = r->ts;
		memcpy(&rb->val[rb->n], (char *)r->data + 8, 8);
		rb->n++;
	}
	return 0;
}

static void write_ev(struct tdat_writer *w, int cpu, uint64_t ts, uint64_t val)
{
	uint8_t p[16] = { 0 };
	uint16_t type = 5001;
	int32_t pid = 1;

	memcpy(p, &type, 2);
	memcpy(p + 4, &pid, 4);
	memcpy(p + 8, &val, 8);
	assert_int_equal(tdat_write_event(w, cpu, ts, p, 16), 0);
}

static void test_readback(void **state)
{
	struct truth t = { .off = { -3000000000ll, 4000000000ll }, .change = 80000000000ull };
	struct tdat_params pa = { .version = 7, .cpus = 2, .clock = "x86-tsc" };
	struct tsync_gmark g[120];
	struct tsync_hmark h[120];
	struct tsync_solve_opts o = { .nvcpu = 2 };
	struct tdat_time_shift_cpu tc[2];
	struct tsync_solution s;
	struct tsync_clock c;
	struct tracecmd_input *in;
	struct tdat_writer *w;
	struct readback *rb = calloc(1, sizeof(*rb));
	char path[] = "/tmp/tsync-guest-XXXXXX";
	uint64_t gts[NEV], hts[NEV];
	size_t n;
	int fd, nw = 0;

	(void)state;
	assert_non_null(rb);
	assert_int_equal(tsync_clock_init(&c, 2596150, NULL, 0), 0);
	assert_int_equal(tsync_xen_ratio(2596150, 0, TSYNC_INTEL, true, &t.s), 0);
	o.scale = t.s;
	n = make_rounds(&t, 2, 20000000000ull, 2596150000ull, 50, g, h);
	o.g_start = tsync_guest_of(&t.s, t.off[0], 19000000000ull);
	o.g_end = tsync_guest_of(&t.s, t.off[1], 160000000000ull);
	assert_int_equal(tsync_solve(&o, g, n, h, n, &s), 0);
	assert_int_equal(s.nepochs, 4);

	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	w = tdat_open(path, &pa);
	assert_non_null(w);
	assert_int_equal(tdat_add_event_format(w, "tsync", fmt_val), 0);
	assert_int_equal(tdat_set_traceid(w, 0x1234), 0);
	assert_int_equal(tdat_set_tsc2nsec(w, c.mult, c.shift, 0), 0);
	(void)tc;
	assert_int_equal(tdat_start_data(w), 0);
	/* events spread over both epochs, away from the change */
	for (int i = 0; i < NEV; i++) {
		uint64_t hh = 20000000000ull + (uint64_t)i * 350000000ull + rnd() % 1000;
		int v = i & 1;

		hts[i] = hh;
		gts[i] = tsync_guest_of(&t.s, off_at(&t, hh), hh);
		if (hh > t.change - 3000000000ull && hh < t.change + 3000000000ull)
			continue;
		write_ev(w, v, gts[i], (uint64_t)i);
		nw++;
	}
	assert_int_equal(tdat_close(w), 0);
	/* as the recorder does after the stop: appended to the finished file */
	assert_int_equal(tsync_write_time_shift(path, 0x5678, &s), 0);

	tracecmd_set_loglevel(TEP_LOG_WARNING);
	in = tracecmd_open(path, 0);
	assert_non_null(in);
	tracecmd_iterate_events(in, NULL, 0, collect, rb);
	assert_int_equal(rb->n, nw);
	for (int k = 0; k < rb->n; k++) {
		int i = (int)rb->val[k], v = i & 1;
		uint64_t want = tsync_clock_ns(&c, tsync_apply(&s, (uint32_t)v, gts[i]));
		uint64_t truth = tsync_clock_ns(&c, hts[i]);
		uint64_t bound = tsync_clock_ticks_to_ns(&c, s.bound) + 1;

		/* what we predict is what the stock reader does, to the ns */
		if (rb->ts[k] != want)
			fail_msg("event %d: reader %llu, predicted %llu", i,
				 (unsigned long long)rb->ts[k], (unsigned long long)want);
		/* and it is within the claimed bound of the truth */
		if ((uint64_t)llabs((long long)(rb->ts[k] - truth)) > bound)
			fail_msg("event %d: %llu vs truth %llu, bound %llu", i,
				 (unsigned long long)rb->ts[k], (unsigned long long)truth,
				 (unsigned long long)bound);
	}
	tracecmd_close(in);
	unlink(path);
	tsync_solution_free(&s);
	free(rb);
}

/* ---- ptp over a socket pair ---- */

#define PTP_SHIFT	1000000000ll

static uint64_t clk_host(void *ctx)
{
	(void)ctx;
	return tsync_rdtsc();
}

static uint64_t clk_guest(void *ctx)
{
	(void)ctx;
	return tsync_rdtsc() - PTP_SHIFT;
}

struct ptp_side {
	struct tmsg_transport	*t;
	int64_t			off, ts;
	uint64_t		rtt;
	int			ret;
	uint16_t		cpu;
};

static void *server_main(void *arg)
{
	struct ptp_side *p = arg;

	p->ret = tsync_none_wait(p->t, 5000, &p->cpu);
	if (p->ret == 1)
		p->ret = tsync_ptp_server(p->t, 1, clk_guest, NULL, &p->off, &p->ts, &p->rtt);
	if (!p->ret)
		p->ret = tsync_none_wait(p->t, 5000, &p->cpu);	/* STOP: 0 */
	return NULL;
}

static void test_ptp(void **state)
{
	struct ptp_side srv = { 0 }, cli = { 0 };
	pthread_t th;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	srv.t = tmsg_fd_transport(sv[0], "guest");
	cli.t = tmsg_fd_transport(sv[1], "host");
	assert_true(srv.t && cli.t);
	assert_int_equal(pthread_create(&th, NULL, server_main, &srv), 0);
	assert_int_equal(tsync_none_probe(cli.t, 3), 0);
	cli.ret = tsync_ptp_client(cli.t, clk_host, NULL, &cli.off, &cli.ts);
	assert_int_equal(tsync_none_stop(cli.t), 0);
	pthread_join(th, NULL);
	assert_int_equal(cli.ret, 0);
	assert_int_equal(srv.ret, 0);
	assert_int_equal(srv.cpu, 3);
	/* both sides agree; host - guest within the fastest round trip */
	assert_true(cli.off == srv.off && cli.ts == srv.ts);
	assert_true(llabs(cli.off - PTP_SHIFT) <= (long long)srv.rtt);
	tmsg_close(srv.t);
	tmsg_close(cli.t);
}

/* ---- the agent's loop: protocol xen and ptp ---- */

struct agent_side {
	struct tmsg_transport	*t;
	struct tsync_agent_opts	o;
	int			ret;
};

static void *agent_main(void *arg)
{
	struct agent_side *a = arg;

	a->ret = tsync_agent_serve(a->t, &a->o);
	return NULL;
}

static void test_pick(void **state)
{
	const char *both[] = { "ptp", "xen" }, *kvm[] = { "kvm" }, *ptp[] = { "kvm", "ptp" };

	(void)state;
	assert_string_equal(tsync_pick(both, 2, true), "xen");
	assert_string_equal(tsync_pick(both, 2, false), "ptp");
	assert_string_equal(tsync_pick(ptp, 2, true), "ptp");
	assert_null(tsync_pick(kvm, 1, true));
	assert_null(tsync_pick(NULL, 0, true));
}

static void test_agent_xen(void **state)
{
	char path[] = "/tmp/tsync-marker-XXXXXX", line[128];
	struct agent_side a = { 0 };
	struct tmsg_transport *host;
	struct tsync_xen_done d;
	uint32_t na = 0, nb = 0, seq, last_a = 0;
	bool before, paired = true;
	pthread_t th;
	FILE *f;
	int sv[2], fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	a.t = tmsg_fd_transport(sv[0], "guest");
	host = tmsg_fd_transport(sv[1], "host");
	a.o = (struct tsync_agent_opts){ .proto = TSYNC_XEN_NAME, .marker_path = path };
	assert_int_equal(pthread_create(&th, NULL, agent_main, &a), 0);
	{
		struct timespec t0, t1;
		double ms;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(tsync_xen_ask(host, 10, 5000, &d), 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
		/* session setup cost of protocol xen: 10 rounds + warm-up per CPU */
		printf("# xen: %u rounds on %u CPUs in %.2f ms (%.3f ms per CPU)\n", d.rounds,
		       d.rounds / 11, ms, ms / (d.rounds / 11));
	}
	assert_int_equal(tsync_xen_ask(host, 3, 5000, &d), 0);
	/* 3 rounds and a warm-up on every CPU we may run on */
	assert_true(d.rounds >= 4 && d.rounds % 4 == 0);
	assert_true(d.last - d.first + 1 == d.rounds && !(d.flags & TSYNC_XEN_F_HVMOP));
	assert_int_equal(tsync_xen_ask(host, 2, 5000, &d), 0);
	assert_true(d.first > 1 && d.last - d.first + 1 == d.rounds);
	assert_int_equal(tsync_xen_stop(host), 0);
	pthread_join(th, NULL);
	assert_int_equal(a.ret, 0);
	/* every round: its "a" marker, then its "b" marker */
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		assert_int_equal(tsync_marker_parse(line, strlen(line), &seq, &before), 1);
		if (before) {
			na++;
			last_a = seq;
		} else {
			nb++;
			paired &= seq == last_a;
		}
	}
	fclose(f);
	assert_true(paired && na == nb && na == d.last);
	assert_true(na > 0);
	unlink(path);
	tmsg_close(a.t);
	tmsg_close(host);
}

static void test_agent_ptp(void **state)
{
	struct agent_side a = { 0 };
	struct tmsg_transport *host;
	int64_t off, ts;
	pthread_t th;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	a.t = tmsg_fd_transport(sv[0], "guest");
	host = tmsg_fd_transport(sv[1], "host");
	a.o = (struct tsync_agent_opts){ .proto = TSYNC_PTP_NAME };
	assert_int_equal(pthread_create(&th, NULL, agent_main, &a), 0);
	{
		int64_t tsa[2], offa[2];
		bool oka[2];
		struct timespec t0, t1;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(tsync_ptp_host(host, 2, clk_host, NULL, tsa, offa, oka), 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("# ptp: 2 CPUs x 339 probes in %.2f ms over a socket pair\n",
		       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
		/* one TSC on both sides (a constant_tsc machine): the offset is
		 * within a round trip of 0 */
		for (int c = 0; c < 2; c++)
			assert_true(llabs(offa[c]) < 2000000 && tsa[c] > 0 && oka[c]);
		off = offa[0];
		ts = tsa[0];
		(void)off;
		(void)ts;
	}
	assert_int_equal(tsync_none_stop(host), 0);
	pthread_join(th, NULL);
	assert_int_equal(a.ret, 0);
	tmsg_close(a.t);
	tmsg_close(host);
}

/* tsync_host: ptp through the agent's loop, and a PV guest without rounds */
static void test_host_ptp(void **state)
{
	struct agent_side a = { 0 };
	struct tmsg_transport *host;
	struct tsync_host_opts ho = { .proto = TSYNC_PTP_NAME, .nvcpu = 2 };
	struct tsync_solution sol;
	struct tsync_host *h;
	char line[200];
	pthread_t th;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	a.t = tmsg_fd_transport(sv[0], "guest");
	host = tmsg_fd_transport(sv[1], "host");
	a.o = (struct tsync_agent_opts){ .proto = TSYNC_PTP_NAME };
	assert_int_equal(pthread_create(&th, NULL, agent_main, &a), 0);
	ho.t = host;
	assert_int_equal(tsync_host_new(&h, &ho), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(tsync_host_sample(h), 0);
	assert_int_equal(tsync_host_finish(h, &sol, line, sizeof(line), NULL), 0);
	pthread_join(th, NULL);
	assert_int_equal(a.ret, 0);
	assert_string_equal(line, "tsync ptp: 3 samples per vCPU, 0 dropped as out of order, "
			    "0 refused (trace-cmd's protocol: no error bound)");
	assert_true(sol.ncpu == 2 && sol.count == 3);
	/* one TSC both sides: within a round trip of 0, at the samples' times */
	{
		const uint64_t *t;
		const int64_t *o;

		tsync_solution_cpu(&sol, 1, &t, &o);
		assert_true(llabs((long long)(tsync_apply(&sol, 1, t[1]) - t[1])) < 2000000);
	}
	tsync_solution_free(&sol);
	tsync_host_free(h);
	tmsg_close(a.t);
	tmsg_close(host);

	/* xen, a PV guest whose rounds never reached the hypervisor trace */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	host = tmsg_fd_transport(sv[1], "host");
	ho = (struct tsync_host_opts){ .proto = TSYNC_XEN_NAME, .t = host, .dom = 4, .nvcpu = 3,
				       .pv = true, .print_id = 5,
				       .scale = { .ratio = 1ull << 48, .frac = 48 } };
	assert_int_equal(tsync_host_new(&h, &ho), 0);
	assert_int_equal(tsync_host_finish(h, &sol, line, sizeof(line), NULL), 0);
	assert_non_null(strstr(line, "offset 0 assumed, not confirmed"));
	assert_true(sol.ncpu == 3 && sol.count >= 2);
	assert_true(tsync_apply(&sol, 2, 987654321) == 987654321);
	tsync_solution_free(&sol);
	/* an HVM guest without rounds: nothing to write */
	tsync_host_free(h);
	ho.pv = false;
	assert_int_equal(tsync_host_new(&h, &ho), 0);
	assert_int_equal(tsync_host_finish(h, &sol, line, sizeof(line), NULL), -ENODATA);
	tsync_host_free(h);
	tmsg_close(host);
	close(sv[0]);
}

/* ---- refusals of guest values ---- */

static void test_refuse_sample_max(void **state)
{
	/* a lone sample at UINT64_MAX: padded before it, not wrapped (no hang) */
	const uint64_t t0[] = { UINT64_MAX };
	const int64_t o0[] = { 5 };
	const uint64_t *ts[] = { t0 };
	const int64_t *off[] = { o0 };
	uint32_t n[] = { 1 };
	struct tsync_solution s;

	(void)state;
	assert_int_equal(tsync_solution_from_samples(1, n, ts, off, &s), 0);
	assert_int_equal(s.count, 2);
	assert_true(s.ts[0] == UINT64_MAX - 1 && s.ts[1] == UINT64_MAX);
	assert_int_equal(s.samples_refused, 0);
	tsync_solution_free(&s);
}

static void test_refuse_offset_min(void **state)
{
	/* INT64_MIN (and anything past 2^62) is refused and counted; a gap of
	 * 2^63 leaves the far sample out too */
	const uint64_t t0[] = { 1000, 2000, 3000, 3000 + (1ull << 63) };
	const int64_t o0[] = { INT64_MIN, 7, TSYNC_OFFSET_MAX + 1, 9 };
	const uint64_t *ts[] = { t0 };
	const int64_t *off[] = { o0 };
	uint32_t n[] = { 4 };
	struct tsync_solution s;
	char line[300];

	(void)state;
	assert_int_equal(tsync_solution_from_samples(1, n, ts, off, &s), 0);
	assert_int_equal(s.samples_refused, 3);
	assert_true(tsync_apply(&s, 0, 2000) == 2007);
	tsync_summary_line(&s, "xen", NULL, line, sizeof(line));
	assert_non_null(strstr(line, ", 3 refused"));
	tsync_solution_free(&s);
	/* every sample refused: nothing to measure */
	n[0] = 1;
	assert_int_equal(tsync_solution_from_samples(1, n, ts, off, &s), -ENODATA);
	/* the host's window */
	assert_true(tsync_ptp_sample_ok(100, 50, 140, 160));
	assert_false(tsync_ptp_sample_ok(100, 50, 151, 160));
	assert_false(tsync_ptp_sample_ok(100, INT64_MIN, 0, UINT64_MAX));
	assert_false(tsync_ptp_sample_ok(-1, 1, 0, 10));	/* 2^64: no wrap to 0 */
}

/* A ptp peer that never sends END: PROBE after PROBE. */
struct flood {
	struct tmsg_transport	*t;
	uint32_t		sent;
};

static void *flood_main(void *arg)
{
	struct flood *f = arg;
	struct tmsg *m = malloc(sizeof(*m));
	uint8_t buf[8] = { 0, 0, 0, 1, 0, 0, 0, 3 };

	if (tmsg_make_time_sync(m, TSYNC_PTP_NAME, TSYNC_PTP_START, buf, 8) ||
	    tmsg_send(f->t, m) || tmsg_recv(f->t, m, 5000))
		goto out;
	for (;;) {
		uint32_t be = htobe32(f->sent % TSYNC_PTP_LOOP + 1);

		if (tmsg_make_time_sync(m, TSYNC_PTP_NAME, TSYNC_PTP_PROBE, &be, 4) ||
		    tmsg_send(f->t, m))
			break;
		f->sent++;
		if (tmsg_recv(f->t, m, 5000))
			break;
	}
out:
	free(m);
	return NULL;
}

static void test_refuse_probe_flood(void **state)
{
	struct flood f = { 0 };
	struct tmsg_transport *host;
	struct timespec t0, t1;
	int64_t off, ts;
	pthread_t th;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	f.t = tmsg_fd_transport(sv[0], "guest");
	host = tmsg_fd_transport(sv[1], "host");
	assert_int_equal(pthread_create(&th, NULL, flood_main, &f), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(tsync_ptp_client(host, clk_host, NULL, &off, &ts), -EPROTO);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_non_null(strstr(tcx_error(), "PROBEs in one round"));
	tmsg_close(host);
	pthread_join(th, NULL);
	tmsg_close(f.t);
	/* stopped at the cap, not by a timeout */
	assert_int_equal(f.sent, TSYNC_PTP_LOOP + 1);
	assert_true(t1.tv_sec - t0.tv_sec < 4);
}

static void test_refuse_marker_flood(void **state)
{
	/* a guest trapping the marker cpuid in a loop: exit, CPUID, entry */
	struct tsync_match *m = tsync_match_new(3);
	const struct tsync_hmark *hm;
	const uint32_t extra = 1000;

	(void)state;
	assert_non_null(m);
	for (uint32_t i = 0; i < TSYNC_MARKS_MAX + extra; i++) {
		feed(m, rec(10ull * i, true, TSYNC_TRC_VMEXIT64, 3, 0, 3, 0x72, 0, 0));
		feed(m, rec(10ull * i, false, TSYNC_TRC_CPUID, 3, 0, 6, TSYNC_CPUID_LEAF, i + 1,
			    0, 0, 0, 0));
		feed(m, rec(10ull * i + 2, true, TSYNC_TRC_VMENTRY, 3, 0, 0));
	}
	assert_int_equal(tsync_match_marks(m, &hm), TSYNC_MARKS_MAX);
	assert_int_equal(tsync_match_dropped(m), extra);
	tsync_match_free(m);
}

/* Only the rounds dom0 asked for are kept: a marker loop between asks takes their room, no more. */
static void test_marks_budget(void **state)
{
	struct tsync_match *m = tsync_match_new(3);
	const struct tsync_hmark *hm;

	(void)state;
	assert_non_null(m);
	tsync_match_allow(m, 5);
	for (uint32_t i = 0; i < 50; i++) {
		feed(m, rec(10ull * i, true, TSYNC_TRC_VMEXIT64, 3, 0, 3, 0x72, 0, 0));
		feed(m, rec(10ull * i, false, TSYNC_TRC_CPUID, 3, 0, 6, TSYNC_CPUID_LEAF, i + 1,
			    0, 0, 0, 0));
		feed(m, rec(10ull * i + 2, true, TSYNC_TRC_VMENTRY, 3, 0, 0));
		if (i == 29)
			tsync_match_allow(m, 3);	/* the next ask */
	}
	assert_int_equal(tsync_match_marks(m, &hm), 8);
	assert_int_equal(tsync_match_dropped(m), 42);
	/* kept in arrival order: the first five, then three after the second ask */
	assert_int_equal(hm[4].seq, 5);
	assert_int_equal(hm[5].seq, 31);
	tsync_match_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ratio),
		cmocka_unit_test(test_conversions),
		cmocka_unit_test(test_clock),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_marks_budget),
		cmocka_unit_test(test_guest_pv_faults),
		cmocka_unit_test(test_solve_identity),
		cmocka_unit_test(test_solve_change),
		cmocka_unit_test(test_solve_drift),
		cmocka_unit_test(test_solve_outliers),
		cmocka_unit_test(test_solve_scaled),
		cmocka_unit_test(test_solve_pv),
		cmocka_unit_test(test_solve_vtsc),
		cmocka_unit_test(test_from_samples),
		cmocka_unit_test(test_from_samples_rising),
		cmocka_unit_test(test_marker_text),
		cmocka_unit_test(test_gcollect),
		cmocka_unit_test(test_readback),
		cmocka_unit_test(test_ptp),
		cmocka_unit_test(test_pick),
		cmocka_unit_test(test_agent_xen),
		cmocka_unit_test(test_agent_ptp),
		cmocka_unit_test(test_host_ptp),
		cmocka_unit_test(test_refuse_sample_max),
		cmocka_unit_test(test_refuse_offset_min),
		cmocka_unit_test(test_refuse_probe_flood),
		cmocka_unit_test(test_refuse_marker_flood),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
