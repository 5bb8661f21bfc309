// SPDX-License-Identifier: GPL-2.0
/*
 * A guest whose TSC drifts 30 ppm, through `trace-cmd-xen record --xen -A 1`
 * on xensim (tests/tsync/tsync-drift.conf) against the simulator's ground
 * truth: synced every second, and at the default interval (the start and
 * the end only). Each capture is read back with the stock trace-cmd (its
 * TIME_SHIFT samples; the merged report for the span of the guest's
 * events), and the reader's correction, interpolated between the samples
 * and extrapolated past the first and the last as trace-cmd does, is
 * compared with the truth all over that span: the worst error must stay
 * within the bound the summary claims, and the drift over the span must be
 * many times that bound (a constant offset could not pass).
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
#include <unistd.h>

#include <cmocka.h>

#include "tlib.h"
#include "tsync-internal.h"

#define DOMID		1
#define NAME		"drift30"
#define PPM		30
#define DURATION	"6"
/*
 * The sync interval of the first capture, as --tsync-interval takes it:
 * in milliseconds.
 */
#define INTERVAL_1S	"1000"
#define GRID		4000	/* guest times checked over the events' span */

static struct tlib_sim sim;
static uint64_t t0;		/* the truth's host t0 (drift starts there) */
static unsigned int frac;
static uint64_t ratio;
static int64_t off0;
static int32_t ppm;
static pid_t agent;

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

static uint64_t scale(uint64_t h)
{
	return (uint64_t)(((unsigned __int128)h * ratio) >> frac);
}

/* The guest's TSC at host TSC @h, as xensim makes it (xsim_host_gtsc). */
static uint64_t truth_gtsc(uint64_t h)
{
	__int128 el = (int64_t)(scale(h) - scale(t0));

	return scale(h) + (uint64_t)(off0 + (int64_t)(el * ppm / 1000000));
}

/* The guest's clock from the truth file's header lines. */
static int load_clock(void)
{
	char path[400], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/truth", sim.dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "host ", 5)) {
			t0 = kv64(line, " t0=");
			frac = (unsigned int)kv64(line, " frac=");
		} else if (kv64(line, "domid=") != DOMID) {
			continue;
		} else if (!strncmp(line, "domain ", 7)) {
			ratio = kv64(line, " ratio=");
			ppm = (int32_t)kvs64(line, " drift_ppm=");
		} else if (!strncmp(line, "vcpu ", 5) && strstr(line, " vcpu=0 ")) {
			off0 = kvs64(line, " offset=");
		}
	}
	fclose(f);
	return t0 && ratio && (frac == 32 || frac == 48) ? 0 : -1;
}

static int setup(void **state)
{
	(void)state;
	if (!getenv("TCX_BIN") || tlib_sim_start(&sim, tlib_conf_path("../tsync/tsync-drift.conf")))
		return -1;
	setenv("XENSIM_HOST", sim.dir, 1);
	agent = tlib_sim_guest(&sim, DOMID, "sched", NULL);
	if (agent <= 0 || load_clock()) {
		tlib_kill(agent, SIGTERM);
		tlib_sim_stop(&sim);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	int ret;

	(void)state;
	tlib_kill(agent, SIGTERM);
	ret = tlib_sim_stop(&sim);
	tlib_sim_cleanup(&sim);
	return ret;
}

/* record -A with @interval (NULL: the default), into @tag's files. */
static void capture(const char *tag, const char *interval, char *json, size_t len)
{
	static char text[1 << 16];
	char out[400], js[400], log[400];
	char *argv[20] = { (char *)tlib_tcx(), "record", "--xen", "--no-dom0",
			   "-A", "1", "-e", "sched", "--duration", DURATION, "-o", out, "--summary-json", js };
	int n = 14, st;

	if (interval) {
		argv[n++] = "--tsync-interval";
		argv[n++] = (char *)interval;
	}
	argv[n] = NULL;
	snprintf(out, sizeof(out), "%s/%s.dat", sim.tmp, tag);
	snprintf(js, sizeof(js), "%s/%s.json", sim.tmp, tag);
	snprintf(log, sizeof(log), "%s/%s.log", sim.tmp, tag);
	st = tlib_wait(tlib_sim_spawn(&sim, argv, -1, "/dev/null", log));
	tlib_capture(text, sizeof(text), "cat '%s'", log);
	fprintf(stderr, "%s", text);
	assert_int_equal(st, 0);
	assert_int_equal(tlib_capture(json, len, "cat '%s'", js), 0);
}

/* The guest events' span in the merged stock report, in host ns. */
static void event_span(const char *tag, uint64_t *first, uint64_t *last, size_t *n)
{
	static char line[4096];
	char base[64], rep[460];
	uint64_t ns;
	FILE *f;

	snprintf(base, sizeof(base), "%s-" NAME ".dat", tag);
	snprintf(rep, sizeof(rep), "%s/%s-report.txt", sim.tmp, tag);
	assert_int_equal(tlib_capture(line, sizeof(line), "cd '%s' && trace-cmd report -t -i "
				   "'%s.dat' -i '%s' >'%s' 2>&1", sim.tmp, tag, base, rep), 0);
	*first = UINT64_MAX;
	*last = 0;
	*n = 0;
	f = fopen(rep, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (!tlib_report_ts(line, base, &ns))
			continue;
		(*n)++;
		if (ns < *first)
			*first = ns;
		if (ns > *last)
			*last = ns;
	}
	fclose(f);
	assert_true(*n > 100);
}

/* One capture, checked against the truth all over its guest's events. */
static void check_capture(const char *tag, const char *interval, size_t min_samples)
{
	static char json[1 << 15], text[1 << 16];
	static struct tlib_shift sh[4096];
	uint64_t ts[4096], first_ns, last_ns, h0, h1, worst = 0, worst_smp = 0;
	int64_t off[4096], bound_ns, acc;
	struct tsync_solution sol;
	struct tsync_clock c = { 0 };
	const uint64_t *tp[1] = { ts };
	const int64_t *op[1] = { off };
	char file[460];
	uint32_t n;
	size_t nev;
	int k;

	capture(tag, interval, json, sizeof(json));
	assert_non_null(strstr(json, "\"tsync\": {\"protocol\": \"xen\", \"time_shift\": true"));
	bound_ns = tlib_json_num(strstr(json, "\"guests\""), "\"bound_ns\"");
	c.mult = (uint32_t)tlib_json_num(json, "\"tsc2nsec_mult\"");
	c.shift = (uint32_t)tlib_json_num(json, "\"tsc2nsec_shift\"");
	assert_true(c.mult && c.shift <= 32 && bound_ns >= 0);
	snprintf(file, sizeof(file), "%s/%s-" NAME ".dat", sim.tmp, tag);
	k = tlib_time_shift(file, 0, sh, 4096, text, sizeof(text));
	assert_true(k >= 0 && k <= 4096);
	for (int i = 0; i < k; i++) {
		assert_int_equal(sh[i].fields, 4);
		assert_int_equal(sh[i].scaling, 1);
		ts[i] = sh[i].ts;
		off[i] = sh[i].offset;
	}
	/* the sampling points; without the last one the end of the capture
	 * would be extrapolated (at 1 s) or held (at the default): checked
	 * below against the truth */
	assert_true((size_t)k >= min_samples);
	n = (uint32_t)k;
	assert_int_equal(tsync_solution_from_samples(1, &n, tp, op, &sol), 0);
	event_span(tag, &first_ns, &last_ns, &nev);
	/* ns to host ticks: the inverse of the host's tsc2nsec */
	h0 = (uint64_t)(((unsigned __int128)first_ns << c.shift) / c.mult);
	h1 = (uint64_t)(((unsigned __int128)last_ns << c.shift) / c.mult);
	assert_true(h1 > h0);
	for (uint32_t i = 0; i <= GRID; i++) {
		uint64_t h = h0 + (uint64_t)((unsigned __int128)(h1 - h0) * i / GRID);
		uint64_t e = (uint64_t)llabs((long long)(tsync_apply(&sol, 0, truth_gtsc(h)) - h));

		if (e > worst)
			worst = e;
	}
	for (uint32_t i = 0; i < n; i++) {
		/* the sample's own error: at its guest time, against the truth */
		uint64_t lo = t0, hi = h1 + (1ull << 36), e;

		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2;

			if (truth_gtsc(mid) >= ts[i])
				hi = mid;
			else
				lo = mid + 1;
		}
		e = (uint64_t)llabs((long long)(ts[i] + (uint64_t)off[i] - lo));
		if (e > worst_smp)
			worst_smp = e;
	}
	acc = (int64_t)(truth_gtsc(h1) - truth_gtsc(h0)) - (int64_t)(scale(h1) - scale(h0));
	fprintf(stderr, "# %s: %u samples, %zu guest events over %.2f s, %" PRId64 " ns of drift; "
		"worst error %" PRIu64 " ns over the span (%" PRIu64 " ns at the samples), bound %"
		PRId64 " ns\n", tag, n, nev, (last_ns - first_ns) / 1e9,
		(int64_t)tsync_clock_ticks_to_ns(&c, (uint64_t)llabs(acc)),
		tsync_clock_ticks_to_ns(&c, worst), tsync_clock_ticks_to_ns(&c, worst_smp), bound_ns);
	assert_int_equal(ppm, PPM);
	assert_true(tsync_clock_ticks_to_ns(&c, worst_smp) <= (uint64_t)bound_ns);
	assert_true(tsync_clock_ticks_to_ns(&c, worst) <= (uint64_t)bound_ns);
	/* 30 ppm over 4 s or more: a constant offset would be far off */
	assert_true(tsync_clock_ticks_to_ns(&c, (uint64_t)llabs(acc)) >= 4 * (uint64_t)bound_ns);
	tsync_solution_free(&sol);
}

static void test_drift_every_second(void **state)
{
	(void)state;
	/* a sample at the start, one a second, one at the end */
	check_capture("every-second", INTERVAL_1S, 5);
}

static void test_drift_default_interval(void **state)
{
	(void)state;
	check_capture("default", NULL, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drift_every_second),
		cmocka_unit_test(test_drift_default_interval),
	};

	return cmocka_run_group_tests_name("time sync of a drifting guest", tests, setup,
					   teardown);
}
