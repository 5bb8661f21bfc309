// SPDX-License-Identifier: GPL-2.0
/*
 * Guest clocks that move, through the record command on xensim against its
 * ground truth (tests/tsync/tsync-clock.conf): `trace-cmd-xen record --xen
 * -A 1 -A 2 -A 3 --tsync-interval 0.5` with the real agents, for 10 s, then
 * per guest the stock `trace-cmd dump --options` (the TIME_SHIFT samples)
 * and `trace-cmd report -t -i trace.dat -i trace-<guest>.dat` (every guest
 * event on the host's time line):
 *
 *  - moved: a PVH guest whose offset jumps 23 s forward 4 s into the run,
 *    as a restore or a migration does (incarnation 0 -> 1): two epochs, the
 *    note says the domain moved, every sample within the bound of the
 *    offset in force at its guest time, events on both sides of the jump;
 *  - drift: an HVM guest 60 ppm fast for 10 s, the accumulated drift of
 *    60 s at 10 ppm (600 us, compressed for CI): every sample within the
 *    bound of the drifting truth, and that drift many times the bound;
 *  - vtsc: an HVM guest with an emulated TSC (tsc_mode 1): the solution
 *    comes from the RDTSC records (thousands of pairs, no epochs), every
 *    sample within the bound.
 *
 * In all three every guest event lies in a run interval of its vCPU in the
 * truth, or within the bound the summary claims.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "recorder.h"
#include "tlib.h"
#include "tsync.h"

#define NG		3
#define DURATION	"10"
/* on a loaded 2-CPU machine xensim may stamp rounds late: the bound says
 * so, and it is accepted up to this (the offsets move by 23 s and 600 us) */
#define BOUND_MAX_NS	5000000
#define MAX_CHANGES	8

static const unsigned int gdom[NG] = { 1, 2, 3 };
static const char *const gname[NG] = { "moved", "drift", "vtsc" };

/* One domain's clock as the truth gives it (sim/xsim-host.c: xsim_host_gtsc). */
struct tclock {
	uint64_t ratio;
	int64_t off;
	int32_t ppm;
	uint32_t tsc_mode;
	unsigned int nchg;
	uint64_t chg_at[MAX_CHANGES];
	int64_t chg_off[MAX_CHANGES];
};

static struct {
	bool ok;
	struct tlib_sim sim;
	struct tlib_truth tr;
	uint64_t t0, end;
	unsigned int frac;
	struct tclock clk[NG];
	uint64_t rdtsc[NG];
	char json[1 << 15];
	struct tsync_clock c;
} cap;

static pid_t child[NG + 1];

static uint64_t scale(uint64_t h, uint64_t ratio, unsigned int frac)
{
	return (uint64_t)(((unsigned __int128)h * ratio) >> frac);
}

/* The guest TSC of vCPU 0 of guest @i at host TSC @h, as xensim makes it. */
static uint64_t truth_gtsc(unsigned int i, uint64_t h)
{
	const struct tclock *k = &cap.clk[i];
	uint64_t s = scale(h, k->ratio, cap.frac);
	int64_t off = k->off;

	for (unsigned int j = 0; j < k->nchg; j++)
		if (h >= k->chg_at[j])
			off = k->chg_off[j];
	if (k->ppm) {
		__int128 el = (int64_t)(s - scale(cap.t0, k->ratio, cap.frac));

		off += (int64_t)(el * k->ppm / 1000000);
	}
	return s + (uint64_t)off;
}

/* The smallest host TSC at which guest @i reads at least @g (monotone). */
static uint64_t truth_host(unsigned int i, uint64_t g)
{
	/* every sample lies between the host's start and its end */
	uint64_t lo = cap.t0, hi = cap.end + (1ull << 36);

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (truth_gtsc(i, mid) >= g)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static uint64_t kv64(const char *line, const char *key)
{
	const char *p = strstr(line, key);

	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

static int64_t kvs64(const char *line, const char *key)
{
	const char *p = strstr(line, key);

	return p ? strtoll(p + strlen(key), NULL, 10) : 0;
}

static int gidx(unsigned int dom)
{
	for (int i = 0; i < NG; i++)
		if (gdom[i] == dom)
			return i;
	return -1;
}

static void load_clocks(void)
{
	char path[400], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/truth", cap.sim.dir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		int i = gidx((unsigned int)kv64(line, "domid="));

		if (!strncmp(line, "host ", 5)) {
			cap.t0 = kv64(line, " t0=");
			cap.frac = (unsigned int)kv64(line, " frac=");
		} else if (!strncmp(line, "end ", 4)) {
			cap.end = kv64(line, " at=");
		} else if (i < 0) {
			continue;
		} else if (!strncmp(line, "domain ", 7)) {
			cap.clk[i].ratio = kv64(line, " ratio=");
			cap.clk[i].ppm = (int32_t)kvs64(line, " drift_ppm=");
			cap.clk[i].tsc_mode = (uint32_t)kv64(line, " tsc_mode=");
			assert_non_null(strstr(line, " drift_ppm="));
		} else if (!strncmp(line, "vcpu ", 5) && strstr(line, " vcpu=0 ")) {
			cap.clk[i].off = kvs64(line, " offset=");
		} else if (!strncmp(line, "offset_change ", 14) && strstr(line, " vcpu=0 ")) {
			struct tclock *k = &cap.clk[i];

			assert_true(k->nchg < MAX_CHANGES);
			assert_int_equal(kv64(line, " incarnation="), k->nchg + 1);
			k->chg_at[k->nchg] = kv64(line, " at=");
			k->chg_off[k->nchg++] = kvs64(line, " offset=");
		} else if (!strncmp(line, "vtsc ", 5) && strstr(line, " vcpu=0 ")) {
			cap.rdtsc[i] = kv64(line, " rdtsc=");
		}
	}
	fclose(f);
	assert_true(cap.t0 && cap.end > cap.t0 && (cap.frac == 32 || cap.frac == 48));
}

static void stop_children(void)
{
	for (int i = 0; i <= NG; i++) {
		tlib_kill(child[i], SIGTERM);
		child[i] = 0;
	}
}

/* The capture all three cases read: made once. */
static int capture(void **state)
{
	static char text[1 << 16];
	char out[400], js[400], log[400];
	char *argv[] = { (char *)tlib_tcx(), "record", "--xen", "--no-dom0", "-A", "1", "-e", "sched",
			 "-A", "2", "-e", "sched", "-A", "3", "-e", "sched", "--tsync-interval", "500",
			 "--duration",
			 DURATION, "-o", out, "--summary-json", js, NULL };
	int st;

	(void)state;
	memset(&cap, 0, sizeof(cap));
	if (!getenv("TCX_BIN") ||
	    tlib_sim_start(&cap.sim, tlib_conf_path("../tsync/tsync-clock.conf")))
		return -1;
	setenv("XENSIM_HOST", cap.sim.dir, 1);
	for (int i = 0; i < NG; i++) {
		child[i] = tlib_sim_guest(&cap.sim, gdom[i], "sched", NULL);
		if (child[i] <= 0)
			goto fail;
	}
	snprintf(out, sizeof(out), "%s/trace.dat", cap.sim.tmp);
	snprintf(js, sizeof(js), "%s/summary.json", cap.sim.tmp);
	snprintf(log, sizeof(log), "%s/record.log", cap.sim.tmp);
	child[NG] = tlib_sim_spawn(&cap.sim, argv, -1, "/dev/null", log);
	st = tlib_wait(child[NG]);
	child[NG] = 0;
	stop_children();
	if (tlib_sim_stop(&cap.sim))
		goto fail;
	tlib_capture(text, sizeof(text), "cat '%s'", log);
	fprintf(stderr, "%s", text);
	if (st)
		goto fail;
	if (tlib_capture(cap.json, sizeof(cap.json), "cat '%s'", js) ||
	    tlib_truth_load(cap.sim.dir, &cap.tr))
		goto fail;
	cap.c.mult = (uint32_t)tlib_json_num(cap.json, "\"tsc2nsec_mult\"");
	cap.c.shift = (uint32_t)tlib_json_num(cap.json, "\"tsc2nsec_shift\"");
	if (!cap.c.mult || cap.c.shift > 32)
		goto fail;
	load_clocks();
	cap.ok = true;
	return 0;
fail:
	stop_children();
	if (cap.sim.pid > 0)
		tlib_sim_stop(&cap.sim);
	return -1;
}

static int cleanup(void **state)
{
	(void)state;
	stop_children();
	if (cap.ok)
		tlib_truth_free(&cap.tr);
	tlib_sim_cleanup(&cap.sim);
	return 0;
}

/* One guest's summary in the JSON, and its bound. */
struct gsum {
	const char *json;	/* from the guest's "name" on */
	int64_t bound_ns, rounds, events;
	char note[400];
};

static void guest_summary(int i, struct gsum *s)
{
	char pat[80];
	const char *n, *e;

	snprintf(pat, sizeof(pat), "\"name\": \"%s\"", gname[i]);
	s->json = strstr(cap.json, pat);
	assert_non_null(s->json);
	assert_non_null(strstr(s->json, "\"tsync\": {\"protocol\": \"xen\", \"time_shift\": true"));
	s->bound_ns = tlib_json_num(s->json, "\"bound_ns\"");
	s->rounds = tlib_json_num(s->json, "\"rounds\"");
	s->events = tlib_json_num(s->json, "\"events\"");
	n = strstr(strstr(s->json, "\"tsync\""), "\"note\": \"");
	assert_non_null(n);
	n += 9;
	e = strchr(n, '"');
	assert_non_null(e);
	snprintf(s->note, sizeof(s->note), "%.*s", (int)(e - n), n);
	fprintf(stderr, "# %s (dom%u): %s\n", gname[i], gdom[i], s->note);
	assert_true(s->bound_ns >= 0 && s->bound_ns <= BOUND_MAX_NS);
	assert_true(s->events > 0);
}

/* One TIME_SHIFT sample of CPU 0: at guest @t the reader adds @o. */
struct sample {
	uint64_t t;
	int64_t o;
};

/* The guest file's TIME_SHIFT samples, through the stock trace-cmd. */
static size_t samples(int i, struct sample *s, size_t max)
{
	static char text[1 << 16];
	static struct tlib_shift sh[4096];
	char file[460];
	int n;

	snprintf(file, sizeof(file), "%s/trace-%s.dat", cap.sim.tmp, gname[i]);
	n = tlib_time_shift(file, 0, sh, 4096, text, sizeof(text));
	assert_int_not_equal(n, -1);
	assert_int_not_equal(n, -2);	/* no "Option TimeShift" */
	assert_true(n <= 4096);
	for (int k = 0; k < n; k++) {
		assert_int_equal(sh[k].fields, 4);
		assert_int_equal(sh[k].scaling, 1);
		assert_int_equal(sh[k].frac, 0);
		assert_true((size_t)k < max);
		s[k] = (struct sample){ .t = sh[k].ts, .o = sh[k].offset };
	}
	assert_true(n >= 2);
	return (size_t)n;
}

/*
 * Sample errors against the truth in host ticks: the reader's host time
 * for the sample's guest time against the first host tick at which the
 * guest's clock reads it. A forward jump skips guest times (no event has
 * them): samples there are counted in @in_gap, not measured. Returns the
 * worst |error|.
 */
static uint64_t sample_errors(int i, const struct sample *s, size_t n, size_t *in_gap)
{
	uint64_t worst = 0;

	*in_gap = 0;
	for (size_t k = 0; k < n; k++) {
		uint64_t h = truth_host(i, s[k].t), e;

		/* drift or scaling skip a tick now and then; a jump skips many */
		if (truth_gtsc(i, h) > s[k].t + 2) {
			(*in_gap)++;
			continue;
		}
		e = (uint64_t)llabs((long long)(s[k].t + (uint64_t)s[k].o - h));
		if (e > worst)
			worst = e;
	}
	return worst;
}

static int cmp_run(const void *x, const void *y)
{
	const struct tlib_truth_run *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* What the merged report shows of one guest's events. */
struct placed {
	size_t n, out, far;
	uint64_t worst_ns;
	size_t before, after;	/* events before / after host ns @split_ns */
};

/*
 * Every event of guest @i in the stock merged report, on the host's time
 * line: inside a run interval of its vCPU in the truth (the guest kernel
 * stamps only while it runs), or within @slack_ns of one.
 */
static void place_events(int i, uint64_t slack_ns, uint64_t split_ns, struct placed *pl)
{
	static char line[4096];
	char base[64], rep[460];
	struct tlib_truth_run *r = calloc(cap.tr.nrun + 1, sizeof(*r));
	size_t nr = 0;
	FILE *f;

	assert_non_null(r);
	for (size_t k = 0; k < cap.tr.nrun; k++)
		if (cap.tr.run[k].dom == gdom[i] && cap.tr.run[k].vcpu == 0)
			r[nr++] = cap.tr.run[k];
	qsort(r, nr, sizeof(*r), cmp_run);
	snprintf(base, sizeof(base), "trace-%s.dat", gname[i]);
	snprintf(rep, sizeof(rep), "%s/report-%s.txt", cap.sim.tmp, gname[i]);
	assert_int_equal(tlib_capture(line, sizeof(line), "cd '%s' && trace-cmd report -t -i "
				   "trace.dat -i '%s' >'%s' 2>&1", cap.sim.tmp, base, rep), 0);
	memset(pl, 0, sizeof(*pl));
	f = fopen(rep, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		uint64_t ns, best = UINT64_MAX;
		size_t lo = 0, hi = nr;

		if (!tlib_report_ts(line, base, &ns))
			continue;
		/* the last run starting at or before ns, and the next one */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (tsync_clock_ns(&cap.c, r[mid].start) <= ns)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo ? lo - 1 : 0; k <= lo && k < nr; k++) {
			uint64_t s = tsync_clock_ns(&cap.c, r[k].start);
			uint64_t e = r[k].end ? tsync_clock_ns(&cap.c, r[k].end) : UINT64_MAX;
			uint64_t d = ns < s ? s - ns : ns > e ? ns - e : 0;

			if (d < best)
				best = d;
		}
		pl->n++;
		pl->out += best > 0;
		pl->far += best > slack_ns;
		if (best > pl->worst_ns)
			pl->worst_ns = best;
		if (ns < split_ns)
			pl->before++;
		else
			pl->after++;
	}
	fclose(f);
	free(r);
	fprintf(stderr, "# %s: %zu guest events in the merged report, %zu outside a run of "
		"their vCPU, %zu by more than the bound; worst %" PRIu64 " ns\n", gname[i], pl->n,
		pl->out, pl->far, pl->worst_ns);
}

static uint64_t ns_of(uint64_t ticks)
{
	return tsync_clock_ticks_to_ns(&cap.c, ticks);
}

/*
 * (a) The offset changes mid-capture (restore, migration): two epochs, the
 * note names the incarnation change, each sample within the bound of the
 * offset in force at its time, the events of both sides in their runs.
 */
static void test_offset_change(void **state)
{
	const int i = 0;
	static struct sample s[4096];
	const struct tclock *k;
	struct gsum g;
	struct placed pl;
	size_t n, gap, n_old = 0, n_new = 0;
	uint64_t worst, g_old_end, g_new_start;

	(void)state;
	assert_true(cap.ok);
	k = &cap.clk[i];
	assert_int_equal(k->nchg, 1);
	guest_summary(i, &g);
	assert_non_null(strstr(g.note, ", 2 epochs,"));
	assert_non_null(strstr(g.note, "(incarnation 0 -> 1)"));
	assert_true(g.rounds >= 20);

	/* the guest times on each side: old ones end, new ones start, there */
	g_old_end = truth_gtsc(i, k->chg_at[0] - 1);
	g_new_start = truth_gtsc(i, k->chg_at[0]);
	assert_true(g_new_start > g_old_end);
	n = samples(i, s, sizeof(s) / sizeof(s[0]));
	for (size_t j = 0; j < n; j++) {
		n_old += s[j].t <= g_old_end;
		n_new += s[j].t >= g_new_start;
	}
	worst = sample_errors(i, s, n, &gap);
	fprintf(stderr, "# moved: jump %+" PRId64 " ticks at host %" PRIu64 "; %zu samples "
		"(%zu before, %zu after, %zu in the skipped guest times): worst error %" PRIu64
		" ticks (%" PRIu64 " ns), bound %" PRId64 " ns\n", k->chg_off[0] - k->off,
		k->chg_at[0], n, n_old, n_new, gap, worst, ns_of(worst), g.bound_ns);
	assert_true(n_old >= 1 && n_new >= 1);
	assert_true(ns_of(worst) <= (uint64_t)g.bound_ns);

	place_events(i, (uint64_t)g.bound_ns + 1, tsync_clock_ns(&cap.c, k->chg_at[0]), &pl);
	fprintf(stderr, "# moved: %zu events before the jump, %zu after\n", pl.before, pl.after);
	assert_int_equal(pl.n, (size_t)g.events);
	assert_true(pl.before > 100 && pl.after > 100);
	assert_int_equal(pl.far, 0);
}

/*
 * (b) Drift: 60 ppm for 10 s, as much as 10 ppm for 60 s. Each sample
 * within the bound of the drifting truth, the drift over the capture many
 * times that bound (a constant offset would fail), the events in their runs.
 */
static void test_drift(void **state)
{
	const int i = 1;
	static struct sample s[4096];
	struct gsum g;
	struct placed pl;
	size_t n, gap;
	uint64_t worst, h0, h1;
	int64_t acc;

	(void)state;
	assert_true(cap.ok);
	assert_int_equal(cap.clk[i].ppm, 60);
	guest_summary(i, &g);
	assert_true(g.rounds >= 50);
	n = samples(i, s, sizeof(s) / sizeof(s[0]));
	worst = sample_errors(i, s, n, &gap);
	assert_int_equal(gap, 0);
	/* the drift accumulated between the first and the last sample */
	h0 = truth_host(i, s[0].t);
	h1 = truth_host(i, s[n - 1].t);
	acc = (int64_t)(truth_gtsc(i, h1) - truth_gtsc(i, h0)) - (int64_t)(h1 - h0);
	fprintf(stderr, "# drift: %d ppm, %zu samples over %.2f s: %" PRId64 " ticks (%" PRIu64
		" ns) of drift; worst sample error %" PRIu64 " ticks (%" PRIu64 " ns), bound %"
		PRId64 " ns\n", cap.clk[i].ppm, n, (double)(h1 - h0) / (cap.tr.cpu_khz * 1e3), acc,
		ns_of((uint64_t)acc), worst, ns_of(worst), g.bound_ns);
	assert_true(ns_of(worst) <= (uint64_t)g.bound_ns);
	/*
	 * 6 s or more of the 10: at least 360 us of drift, and at least 4
	 * times the bound, so that a constant offset could not pass (about
	 * 100 ns when xensim stamps most rounds back to back; more on a
	 * loaded machine)
	 */
	assert_true(ns_of((uint64_t)acc) >= 360000);
	assert_true((uint64_t)g.bound_ns * 4 <= ns_of((uint64_t)acc));

	place_events(i, (uint64_t)g.bound_ns + 1, 0, &pl);
	assert_int_equal(pl.n, (size_t)g.events);
	assert_int_equal(pl.far, 0);
}

/*
 * (c) An emulated TSC: Xen's RDTSC records are the pairs (thousands, where
 * marker rounds are tens; the vtsc map has no epochs), every sample within
 * the bound, the events in their runs.
 */
static void test_vtsc(void **state)
{
	const int i = 2;
	static struct sample s[4096];
	struct gsum g;
	struct placed pl;
	size_t n, gap;
	uint64_t worst;

	(void)state;
	assert_true(cap.ok);
	assert_int_equal(cap.clk[i].tsc_mode, 1);
	guest_summary(i, &g);
	fprintf(stderr, "# vtsc: %" PRId64 " RDTSC pairs used of %" PRIu64 " emulated RDTSC "
		"exits in the whole run\n", g.rounds, cap.rdtsc[i]);
	assert_non_null(strstr(g.note, ", 0 epochs,"));
	assert_true(g.rounds >= 1000);
	assert_true((uint64_t)g.rounds <= cap.rdtsc[i]);
	n = samples(i, s, sizeof(s) / sizeof(s[0]));
	worst = sample_errors(i, s, n, &gap);
	fprintf(stderr, "# vtsc: %zu samples, worst error %" PRIu64 " ticks (%" PRIu64 " ns), "
		"bound %" PRId64 " ns\n", n, worst, ns_of(worst), g.bound_ns);
	assert_int_equal(gap, 0);
	assert_true(ns_of(worst) <= (uint64_t)g.bound_ns);

	place_events(i, (uint64_t)g.bound_ns + 1, 0, &pl);
	assert_int_equal(pl.n, (size_t)g.events);
	assert_int_equal(pl.far, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offset_change),
		cmocka_unit_test(test_drift),
		cmocka_unit_test(test_vtsc),
	};

	return cmocka_run_group_tests(tests, capture, cleanup);
}
