// SPDX-License-Identifier: GPL-2.0
/*
 * record --xen -A with a hostile guest, end to end on xensim: guest2 runs
 * our agent (the good guest), guest1 runs hostile-agent in one of its
 * modes, over vchan (-A guest1) or TCP (-A 127.0.0.1:PORT). For each case
 * the recorder's own account is checked:
 *  - it ends (a safety kill stands behind it, asserted as a failure) with
 *    the status the case expects;
 *  - the hypervisor's and dom0's files open, the good guest's file is read
 *    by the stock trace-cmd report and holds every event its simulated
 *    kernel produced (the simulator's truth: tracing is turned off in it
 *    before the stop);
 *  - the hostile guest's file, if any, is read by the stock report, holds
 *    the good pages the agent sent and no others, and `trace-cmd dump
 *    --options` shows no injected option and the TRACEID dom0 vouches for;
 *  - the summary JSON's counters say what was refused;
 *  - the recorder's peak RSS stays within 1.5 times that of the same run
 *    with a well-behaved agent, plus 16 MiB (ASan's allocator keeps freed
 *    memory in quarantine and the good run's own peak moves by a few MiB
 *    from run to run; what is refused here is tens to hundreds of MiB).
 * A case that fails to open fails the whole recording at the start with an
 * error naming the guest, and leaves nothing on disk.
 */
#include <dirent.h>
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <trace-cmd/trace-cmd.h>

#include "tlib.h"

#define SAFETY_S	90	/* the safety kill: a recorder that hangs fails */
#define RSS_SLACK_KB	(16 * 1024)

enum expect { E_OK, E_FAIL };

/*
 * One case. @key/@min: a JSON counter of the hostile guest that must be at
 * least @min (NULL: none); @tnote: text its tsync note must hold; @events:
 * the hostile file must hold exactly the agent's good pages.
 */
struct hcase {
	const char *mode;
	bool tcp;
	enum expect expect;
	const char *err;		/* E_FAIL: in the recorder's stderr */
	const char *key;
	int64_t min;
	const char *tnote;
	const char *abandoned, *limit;	/* the JSON's "abandoned", "limit" */
	bool events;
	const char *agent_args[4];
	const char *rec_args[8];
	const char *name;		/* the test's name, if not MODE-TRANSPORT */
	int held_mib;			/* metadata dom0 must hold: twice that more RSS */
};

static struct tlib_sim sim;
static char outdir[400];
static pid_t good_pid, bad_pid;
static long base_rss_kb;

static int setup(void **state)
{
	(void)state;
	good_pid = bad_pid = 0;
	if (tlib_sim_start(&sim, tlib_conf_path("../../sim/hosts/two-guests.conf")))
		return -1;
	setenv("XENSIM_HOST", sim.dir, 1);
	snprintf(outdir, sizeof(outdir), "%s/out", sim.tmp);
	return mkdir(outdir, 0755);
}

static int teardown(void **state)
{
	(void)state;
	tlib_kill(good_pid, SIGKILL);
	tlib_kill(bad_pid, SIGKILL);
	good_pid = bad_pid = 0;
	tlib_sim_cleanup(&sim);
	return 0;
}

/* ---- the summary JSON ---- */

/* The text from guest @name's object on, or NULL. */
static const char *jguest(const char *js, const char *name)
{
	char key[96];

	snprintf(key, sizeof(key), "{\"name\": \"%s\"", name);
	return strstr(js, key);
}

/* The string value of @key after @from into @out ("" if absent or null). */
static void jstr(const char *from, const char *key, char *out, size_t len)
{
	char k[64];
	const char *p;
	size_t n = 0;

	out[0] = 0;
	snprintf(k, sizeof(k), "\"%s\": \"", key);
	p = from ? strstr(from, k) : NULL;
	if (!p)
		return;
	for (p += strlen(k); *p && *p != '"' && n + 1 < len; p++)
		out[n++] = *p == '\\' && p[1] ? *++p : *p;
	out[n] = 0;
}

static int64_t jnum(const char *from, const char *key)
{
	char k[64];

	snprintf(k, sizeof(k), "\"%s\"", key);
	return from ? tlib_json_num(from, k) : -1;
}

/* ---- files ---- */

static int outdir_count(void)
{
	DIR *d = opendir(outdir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			print_message("# on disk: %s\n", e->d_name);
			n++;
		}
	closedir(d);
	return n;
}

static char text[1 << 22];

/* `trace-cmd report` of @file: 0, and the lines holding @needle in *@n. */
static int report_count(const char *file, const char *needle, int *n)
{
	char *lines = tlib_path(outdir, "../report.txt");
	int rc = tlib_sh("trace-cmd report -i '%s' > '%s' 2>&1", file, lines);

	*n = tlib_count_lines(lines, needle);
	if (rc)
		tlib_show(lines);
	return rc;
}

/* The hostile file's options: nothing injected survives, dom0's TRACEID. */
static void check_options(const char *file, uint64_t traceid)
{
	static const char *const injected[] = {
		"[Option DATE", "[Option OFFSET", "[Option GUEST", "[Option TIME_SHIFT",
		"evil", "1badd00d", "5555555555", "12345 7 ", "7777777777",
	};
	char want[64];

	assert_int_equal(tlib_dump_options(text, sizeof(text), file), 0);
	for (size_t i = 0; i < sizeof(injected) / sizeof(injected[0]); i++)
		if (strstr(text, injected[i]))
			fail_msg("%s holds \"%s\":\n%s", file, injected[i], text);
	snprintf(want, sizeof(want), "0x%" PRIX64 "\n", traceid);
	if (!strstr(text, want))
		fail_msg("%s: no TRACEID %s (dom0's):\n%s", file, want, text);
}

/* A number the agent printed: "hostile: ... @key N". */
static int64_t agent_said(const char *out, const char *key)
{
	char *t = tlib_slurp(out, NULL), k[64];
	const char *p;
	int64_t v = -1;

	snprintf(k, sizeof(k), " %s ", key);
	p = t ? strstr(t, k) : NULL;
	if (p)
		v = strtoll(p + strlen(k), NULL, 10);
	free(t);
	return v;
}

/* ---- one case ---- */

static pid_t start_hostile(const struct hcase *c, const char *out, int port)
{
	char *argv[16], pstr[16];
	int n = 0;

	argv[n++] = getenv("HOSTILE_BIN") ? getenv("HOSTILE_BIN") : "hostile-agent";
	argv[n++] = "--mode";
	argv[n++] = (char *)c->mode;
	if (c->tcp) {
		snprintf(pstr, sizeof(pstr), "%d", port);
		argv[n++] = "--tcp";
		argv[n++] = pstr;
	} else {
		argv[n++] = "--xen";
	}
	argv[n++] = "--tmp";
	argv[n++] = sim.tmp;
	for (int i = 0; i < 4 && c->agent_args[i]; i++)
		argv[n++] = (char *)c->agent_args[i];
	argv[n] = NULL;
	return tlib_sim_spawn(&sim, argv, 1, out, tlib_path(sim.tmp, "hostile.err"));
}

static bool wait_line(const char *file, const char *needle)
{
	for (int i = 0; i < 500; i++) {
		char *t = tlib_slurp(file, NULL);
		bool ok = t && strstr(t, needle);

		free(t);
		if (ok)
			return true;
		usleep(10 * 1000);
	}
	return false;
}

/* Runs the case; returns the recorder's peak RSS in KiB. */
static long run_case(const struct hcase *c)
{
	char *err = tlib_path(sim.tmp, "record.err"), *js = tlib_path(outdir, "sum.json");
	char *hout = tlib_path(sim.tmp, "hostile.out"), spec[64], script[1200], s[512];
	char *gfile = tlib_path(outdir, "trace-guest2.dat");
	char *argv[40];
	const char *bad_name = c->tcp ? "127.0.0.1" : "guest1", *g, *jsg;
	struct tlib_gstats truth;
	char *json;
	bool killed;
	long rss = 0;
	int n = 0, rc, port = 0, lines;

	print_message("# case %s over %s\n", c->mode, c->tcp ? "tcp" : "vchan");
	good_pid = tlib_sim_guest(&sim, 2, "sched/sched_switch", NULL);
	if (good_pid < 0)
		fail_msg("guest2's agent does not start (%s/agent2.log)", sim.tmp);
	if (c->tcp) {
		port = tlib_free_port();
		assert_true(port > 0);
	}
	bad_pid = start_hostile(c, hout, port);
	assert_true(bad_pid > 0);
	if (!wait_line(hout, c->tcp ? "hostile: listening" : "hostile: advertised"))
		fail_msg("the hostile agent does not start (%s)",
			 tlib_show(tlib_path(sim.tmp, "hostile.err")));
	snprintf(spec, sizeof(spec), c->tcp ? "127.0.0.1:%d" : "guest1", port);
	/* guest2's kernel stops producing before the stop: its file must
	 * then hold every event the simulator counts */
	snprintf(script, sizeof(script), "sleep 1.5; echo 0 > %s/dom2/tracing/tracing_on; "
		 "sleep 0.5", sim.dir);
	argv[n++] = (char *)tlib_tcx();
	argv[n++] = "record";
	argv[n++] = "--xen";
	argv[n++] = "-q";
	argv[n++] = "-e";
	argv[n++] = "sched:sched_switch";
	argv[n++] = "-A";
	argv[n++] = "guest2";
	argv[n++] = "-e";
	argv[n++] = "sched:sched_switch";
	argv[n++] = "-A";
	argv[n++] = spec;
	argv[n++] = "-e";
	argv[n++] = "sched:sched_switch";
	argv[n++] = "-o";
	argv[n++] = tlib_path(outdir, "trace.dat");
	argv[n++] = "--summary-json";
	argv[n++] = js;
	for (int i = 0; i < 8 && c->rec_args[i]; i++)
		argv[n++] = (char *)c->rec_args[i];
	argv[n++] = "--";
	argv[n++] = "/bin/sh";
	argv[n++] = "-c";
	argv[n++] = script;
	argv[n] = NULL;
	rc = tlib_wait_bounded(tlib_sim_spawn(&sim, argv, -1, "/dev/null", err), SAFETY_S,
			       &rss, &killed);
	print_message("# %s: status %d, peak RSS %ld KiB\n", c->mode, rc, rss);
	if (killed)
		fail_msg("record did not end: safety kill (%s)", tlib_show(err));
	tlib_kill(bad_pid, SIGKILL);
	tlib_kill(good_pid, SIGKILL);
	bad_pid = good_pid = 0;
	tlib_show(hout);
	tlib_show(tlib_path(sim.tmp, "hostile.err"));

	if (c->expect == E_FAIL) {
		if (rc != 1)
			fail_msg("record: status %d, not 1 (%s)", rc, tlib_show(err));
		snprintf(s, sizeof(s), "guest %s", bad_name);
		assert_true(tlib_file_has(err, s));
		if (c->err)
			assert_true(tlib_file_has(err, c->err));
		/* nothing on disk but the summary, which says why */
		json = tlib_slurp(js, NULL);
		assert_non_null(json);
		jstr(json, "error", s, sizeof(s));
		print_message("# error: %s\n", s);
		assert_non_null(strstr(s, bad_name));
		assert_int_equal(outdir_count(), 1);
		free(json);
		return rss;
	}
	if (rc)
		fail_msg("record: status %d (%s)", rc, tlib_show(err));
	assert_int_equal(tlib_sim_stop(&sim), 0);
	json = tlib_slurp(js, NULL);
	assert_non_null(json);

	/* the host's files */
	{
		struct tracecmd_input *h = tracecmd_open(tlib_path(outdir, "trace.dat"), 0);

		assert_non_null(h);
		tracecmd_close(h);
		h = tracecmd_open(tlib_path(outdir, "trace-dom0.dat"), 0);
		assert_non_null(h);
		tracecmd_close(h);
	}

	/* the good guest: every event of its kernel */
	g = jguest(json, "guest2");
	assert_non_null(g);
	assert_int_equal(tlib_truth_gstats(sim.dir, 2, &truth), 0);
	assert_int_equal(report_count(gfile, "[000]", &lines), 0);
	print_message("# guest2: report %d events, JSON %" PRId64 ", simulator %" PRIu64
		      "\n", lines, jnum(g, "events"), truth.events[0]);
	assert_true(truth.events[0] > 0);
	assert_int_equal(lines, truth.events[0]);
	assert_int_equal(jnum(g, "events"), truth.events[0]);
	assert_int_equal(jnum(g, "lost"), 0);
	assert_int_equal(jnum(g, "bad_pages"), 0);

	/* the hostile guest */
	jsg = jguest(json, bad_name);
	if (!jsg)
		fail_msg("the summary has no guest %s:\n%s", bad_name, json);
	snprintf(s, sizeof(s), "%s/trace-%s.dat", outdir, bad_name);
	if (!access(s, F_OK)) {
		uint64_t id = (uint64_t)jnum(jsg, "traceid");

		assert_int_equal(report_count(s, " tick: ", &lines), 0);
		print_message("# %s: report %d tick, JSON %" PRId64 " events, agent sent %"
			      PRId64 "\n", bad_name, lines, jnum(jsg, "events"),
			      agent_said(hout, "events"));
		assert_int_equal(lines, jnum(jsg, "events"));
		if (c->events)
			assert_int_equal(lines, agent_said(hout, "events"));
		/* the id in TRACE_RESP, which the host's GUEST entry names */
		assert_true(id == (uint64_t)agent_said(hout, "trace_id"));
		check_options(s, id);
	}
	if (c->key) {
		int64_t v = jnum(jsg, c->key);

		print_message("# %s: %s = %" PRId64 "\n", bad_name, c->key, v);
		assert_true(v >= c->min);
	}
	if (c->abandoned) {
		jstr(jsg, "abandoned", s, sizeof(s));
		print_message("# %s: abandoned \"%s\"\n", bad_name, s);
		assert_string_equal(s, c->abandoned);
	}
	if (c->limit) {
		jstr(jsg, "limit", s, sizeof(s));
		print_message("# %s: limit \"%s\", %" PRId64 " bytes\n", bad_name, s,
			      jnum(jsg, "bytes"));
		assert_string_equal(s, c->limit);
	}
	if (c->tnote) {
		jstr(strstr(jsg, "\"tsync\""), "note", s, sizeof(s));
		print_message("# %s tsync: %s\n", bad_name, s);
		if (!strstr(s, c->tnote))
			fail_msg("the tsync note lacks \"%s\"", c->tnote);
		/* absurd samples are refused and counted, not merely lost */
		if (!strncmp(c->mode, "times-", 6) && jnum(strstr(jsg, "\"tsync\""), "refused") < 1)
			fail_msg("no refused sample counted in the tsync summary");
	}
	free(json);
	return rss;
}

static void check_rss(const struct hcase *c, long rss)
{
	/* a metadata section is held twice at most: received, then written */
	long bound = base_rss_kb * 3 / 2 + RSS_SLACK_KB + 2048L * c->held_mib;

	print_message("# %s: peak RSS %ld KiB, bound %ld KiB (good run %ld KiB)\n", c->mode,
		      rss, bound, base_rss_kb);
	assert_true(base_rss_kb > 0);
	assert_true(rss <= bound);
}

/* ---- the cases ---- */

/* The well-behaved run every other one is measured against. */
static const struct hcase good_case = {
	.mode = "good", .events = true, .key = "options_dropped", .min = 0,
};

#define OPEN_1S		"--guest-open-timeout", "1"
#define STOP_1S		"--guest-stop-timeout", "1"

static const struct hcase cases[] = {
	{ .mode = "options", .events = true, .key = "options_dropped", .min = 4 },
	{ .mode = "options", .tcp = true, .events = true, .key = "options_dropped", .min = 4 },
	{ .mode = "pages-bad", .events = true, .key = "bad_pages", .min = 6 },
	{ .mode = "pages-bad", .tcp = true, .events = true, .key = "bad_pages", .min = 6 },
	{ .mode = "pages-flood", .events = true, .agent_args = { "--pages", "16" } },
	{ .mode = "pages-flood", .limit = "max-bytes", .agent_args = { "--pages", "16" },
	  .rec_args = { "--guest-max-bytes", "1M" } },
	{ .mode = "times-window", .tnote = "no sample went through" },
	{ .mode = "times-big", .tnote = "no sample went through" },
	{ .mode = "times-min", .tnote = "no sample went through" },
	{ .mode = "times-ts", .tnote = "no sample went through" },
	{ .mode = "times-big", .tcp = true, .tnote = "no sample went through" },
	{ .mode = "probes", .tnote = "failed (Protocol error)" },
	{ .mode = "flood" },
	{ .mode = "meta-12", .expect = E_FAIL },
	{ .mode = "meta-wrap", .expect = E_FAIL },
	{ .mode = "meta-past", .expect = E_FAIL },
	{ .mode = "meta-past", .tcp = true, .expect = E_FAIL },
	{ .mode = "meta-big", .expect = E_FAIL, .rec_args = { "--guest-max-meta", "4M" } },
	/* 24 MiB of kallsyms within the limit: held twice at most, briefly */
	{ .mode = "meta-big", .name = "meta-24m-vchan", .held_mib = 24,
	  .agent_args = { "--meta-mib", "24" } },
	{ .mode = "cpus-4096", .expect = E_FAIL },
	{ .mode = "cpus-2g", .expect = E_FAIL },
	{ .mode = "cpus-vcpus", .expect = E_FAIL },
	{ .mode = "cpus-1000", .tcp = true, .expect = E_FAIL },
	{ .mode = "dribble-resp", .expect = E_FAIL, .rec_args = { OPEN_1S } },
	{ .mode = "dribble-resp", .tcp = true, .expect = E_FAIL, .rec_args = { OPEN_1S } },
	{ .mode = "dribble-meta", .expect = E_FAIL, .rec_args = { OPEN_1S } },
	/* CLOSE_RESP dribbled past the stop's deadline: abandoned, its pages all there */
	{ .mode = "dribble-close", .events = true, .abandoned = "stop",
	  .agent_args = { "--delay-ms", "500" }, .rec_args = { STOP_1S } },
	{ .mode = "dribble-meta", .tcp = true, .expect = E_FAIL, .rec_args = { OPEN_1S } },
	{ .mode = "dribble-close", .tcp = true, .events = true, .abandoned = "stop",
	  .agent_args = { "--delay-ms", "500" }, .rec_args = { STOP_1S } },
	{ .mode = "probes", .tcp = true, .tnote = "failed (Protocol error)" },
	{ .mode = "meta-wrap", .tcp = true, .expect = E_FAIL },
	{ .mode = "cpus-4096", .tcp = true, .expect = E_FAIL },
	{ .mode = "pages-flood", .tcp = true, .limit = "max-bytes", .agent_args = { "--pages", "16" },
	  .rec_args = { "--guest-max-bytes", "1M" } },
	{ .mode = "mute-page", .tcp = true, .abandoned = "stop", .rec_args = { STOP_1S } },
	{ .mode = "mute-resp", .expect = E_FAIL, .rec_args = { OPEN_1S } },
	{ .mode = "mute-meta", .expect = E_FAIL, .rec_args = { OPEN_1S } },
	{ .mode = "mute-after-meta", .abandoned = "stop", .rec_args = { STOP_1S } },
	{ .mode = "mute-page", .abandoned = "stop", .rec_args = { STOP_1S } },
	{ .mode = "mute-close", .abandoned = "stop", .rec_args = { STOP_1S } },
	{ .mode = "mute-close", .tcp = true, .abandoned = "stop", .rec_args = { STOP_1S } },
};

static void test_good(void **state)
{
	(void)state;
	base_rss_kb = run_case(&good_case);
}

static void test_case(void **state)
{
	const struct hcase *c = *state;

	if (!base_rss_kb) {
		/* run alone (HOSTILE_CASES): the good run first, on its own host */
		base_rss_kb = run_case(&good_case);
		teardown(state);
		assert_int_equal(setup(state), 0);
	}
	check_rss(c, run_case(c));
}

int main(void)
{
	enum { N = sizeof(cases) / sizeof(cases[0]) };
	struct CMUnitTest tests[N + 1];
	char names[N][48];

	tests[0] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_good, setup, teardown);
	for (int i = 0; i < N; i++) {
		if (cases[i].name)
			snprintf(names[i], sizeof(names[i]), "%s", cases[i].name);
		else
			snprintf(names[i], sizeof(names[i]), "%s-%s", cases[i].mode,
				 cases[i].tcp ? "tcp" : "vchan");
		tests[i + 1] = (struct CMUnitTest){ names[i], test_case, setup, teardown,
						    (void *)&cases[i] };
	}
	/*
	 * The recorder's peak RSS is what it holds, not what ASan keeps of
	 * what it freed (its quarantine would hide a bounded buffer's reuse).
	 */
	{
		const char *a = getenv("ASAN_OPTIONS");
		char opts[512];

		snprintf(opts, sizeof(opts), "%s%squarantine_size_mb=0", a ? a : "",
			 a && *a ? ":" : "");
		setenv("ASAN_OPTIONS", opts, 1);
	}
	/* HOSTILE_CASES=pattern: only those cases (the good run always) */
	if (getenv("HOSTILE_CASES"))
		cmocka_set_test_filter(getenv("HOSTILE_CASES"));
	signal(SIGPIPE, SIG_IGN);
	tracecmd_set_loglevel(TEP_LOG_NONE);
	return cmocka_run_group_tests_name("hostile", tests, NULL, NULL);
}
