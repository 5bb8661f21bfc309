// SPDX-License-Identifier: GPL-2.0
/*
 * record -A, the recorder's side (recorder/rec-guest.c), end to end:
 * - our agent (the trace-cmd-xen binary, TCP, a simulated guest kernel)
 *   into trace-<name>.dat, checked with the stock `trace-cmd report` and
 *   `dump --options`, and the GUEST entry of a host file through
 *   libtracecmd's public tracecmd_get_guest_cpumap();
 * - an agent killed mid-capture, and a fake agent that dies mid-page and
 *   sends a malformed page: valid files, the summary says so;
 * - errors: no agent, an agent that refuses, unknown/dead Xen guests,
 *   a guest with no agent;
 * - the same session over vchan, with the agent in Xen mode on
 *   tests/protocol/mock-xen.c (libxenvchan/libxenstore stand-in).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <trace-cmd/trace-cmd.h>
#include <xenstore.h>

#include "agent-internal.h"
#include "mock-xen.h"
#include "recorder-internal.h"
#include "tcx-util.h"
#include "tlib.h"
#include "simkernel.h"
#include "tdat.h"
#include "tmsg.h"

static const char *tcx_bin;
/*
 * ptp's offset between two ends on one TSC: its error, the asymmetry of
 * the fastest probe (µs here; tens of k ticks with the stock agent's
 * marker stamps); 20 ms at 2.5 GHz is a failure whatever the load
 */
#define PTP_MAX_OFF	50000000ll
static char dir[64];
static const char *const tick_ev[] = { "tcx:tick" };

/* ---- helpers ---- */

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The stock report of @file: cpus line and the number of tick events. */
static void check_report(const char *file, int cpus, int events)
{
	static char out[1 << 16];
	char want[32];

	assert_int_equal(tlib_capture(out, sizeof(out), "trace-cmd report -i '%s' 2>&1", file), 0);
	snprintf(want, sizeof(want), "cpus=%d", cpus);
	if (!strstr(out, want) || count(out, " n=") != events)
		fail_msg("%s: want %s and %d events:\n%.2000s", file, want, events, out);
}

/* `trace-cmd dump --options` shows the TRACEID */
static void check_traceid(const char *file, uint64_t id)
{
	static char out[1 << 16];
	char want[64];

	assert_int_equal(tlib_dump_options(out, sizeof(out), file), 0);
	snprintf(want, sizeof(want), "0x%llX", (unsigned long long)id);
	if (!strstr(out, "TRACEID") || !strstr(out, want))
		fail_msg("%s: no TRACEID %s:\n%.2000s", file, want, out);
}

/*
 * `trace-cmd dump --options` of @file: with @want, a TIME_SHIFT for the
 * host trace id @peer whose samples (one TSC on both ends here: the truth
 * is 0) all lie within @max_off ticks, and returns their number; without,
 * none at all.
 */
static int check_time_shift(const char *file, bool want, uint64_t peer, int64_t max_off)
{
	static char out[1 << 16];
	static struct tlib_shift sh[4096];
	int n;

	if (!want) {
		assert_int_equal(tlib_dump_options(out, sizeof(out), file), 0);
		if (strstr(out, "TimeShift"))
			fail_msg("%s: a TIME_SHIFT without time sync:\n%.2000s", file, out);
		return 0;
	}
	n = tlib_time_shift(file, peer, sh, 4096, out, sizeof(out));
	assert_int_not_equal(n, -1);
	if (n == -2)
		fail_msg("%s: no TIME_SHIFT for 0x%llx [peer:\n%.2000s", file,
			 (unsigned long long)peer, out);
	assert_true(n <= 4096);
	for (int i = 0; i < n; i++)
		if (llabs(sh[i].offset) > max_off)
			fail_msg("%s: TIME_SHIFT offset %lld ticks on one TSC", file,
				 (long long)sh[i].offset);
	return n;
}

/* A small host trace.dat with a GUEST entry for @g, checked through libtracecmd. */
static void check_host_entry(struct rec_guest *g, const char *host, const int *want_pids)
{
	struct tdat_params p = { .version = 7, .cpus = 1, .clock = "x86-tsc" };
	struct tdat_writer *w = tdat_open(host, &p);
	uint8_t ev[12] = { 0x84, 0x03, 0, 0, 1, 0, 0, 0, 7 };
	struct tracecmd_input *h;
	const int *pids;
	const char *name;
	int n;

	assert_non_null(w);
	assert_int_equal(tdat_add_event_format(w, "tcx", tlib_tick_format), 0);
	assert_int_equal(tdat_set_traceid(w, 0x1234), 0);
	assert_int_equal(tdat_start_data(w), 0);
	assert_int_equal(tdat_write_event(w, 0, 1000, ev, sizeof(ev)), 0);
	assert_int_equal(rec_guest_add_host_entry(g, w), 0);
	assert_int_equal(tdat_close(w), 0);

	h = tracecmd_open(host, 0);
	assert_non_null(h);
	assert_int_equal(tracecmd_get_guest_cpumap(h, rec_guest_id(g), &name, &n, &pids), 0);
	assert_string_equal(name, rec_guest_name(g));
	assert_int_equal(n, rec_guest_cpus(g));
	for (int i = 0; i < n; i++)
		assert_int_equal(pids[i], want_pids[i]);
	tracecmd_close(h);

	/* the guest file's TRACEID is the one the host entry names */
	h = tracecmd_open(rec_guest_output(g), 0);
	assert_non_null(h);
	assert_true(tracecmd_get_traceid(h) == rec_guest_id(g));
	tracecmd_close(h);
}

struct agent_proc {
	pid_t pid;
	int port;
	char simk[128];
	struct simk_pages pages;
};

/* Our agent, the binary, on a fresh simulated guest kernel; @auth is
 * "--insecure" or "--secret-file=FILE" */
static void start_agent_auth(struct agent_proc *a, const char *tag, const char *auth)
{
	char port[16], log[160];
	char *argv[] = { (char *)tcx_bin, "agent", "-N", "127.0.0.1", "-p", port, (char *)auth,
			 "--tracing-dir", a->simk, NULL };
	struct tlib_spawn_opts so = { .out = log, .err = log };
	int fd;

	snprintf(a->simk, sizeof(a->simk), "%s/simk-%s", dir, tag);
	assert_int_equal(simk_create(a->simk, &a->pages), 0);
	a->port = tlib_free_port();
	assert_true(a->port > 0);
	snprintf(port, sizeof(port), "%d", a->port);
	snprintf(log, sizeof(log), "%s/agent-%s.log", dir, tag);
	a->pid = tlib_spawn(argv, &so);
	assert_true(a->pid > 0);
	fd = tlib_connect_wait(a->port, 5000);
	if (fd < 0)
		fail_msg("the agent does not listen on %d (see %s)", a->port, log);
	/* a silent first connection: the agent drops it */
	close(fd);
}

static void start_agent(struct agent_proc *a, const char *tag)
{
	start_agent_auth(a, tag, "--insecure");
}

static void stop_agent(struct agent_proc *a, int sig)
{
	tlib_kill(a->pid, sig);
	a->pid = 0;
	simk_free(&a->pages);
}

/* Until @g has written @pages pages (or 10 s). */
static void wait_pages(struct rec_guest *g, uint64_t pages)
{
	struct rec_guest_summary s;
	struct timespec t = { 0, 20 * 1000000 };

	for (int i = 0; i < 500; i++) {
		rec_guest_stats(g, &s);
		if (s.pages >= pages)
			return;
		nanosleep(&t, NULL);
	}
	fail_msg("%s: %llu pages of %llu", rec_guest_name(g),
		 (unsigned long long)s.pages, (unsigned long long)pages);
}

static struct rec_guest_opts opts(const char *spec, const char *out)
{
	return (struct rec_guest_opts){
		.spec = spec, .output = out, .events = tick_ev, .nr_events = 1,
		.host_traceid = 0x1234, .timeout_ms = 2000, .close_timeout_ms = 5000,
		.log = stderr,
	};
}

/* ---- the -A argument ---- */

static void test_spec(void **state)
{
	struct rec_guest_spec s;
	char *p;

	assert_int_equal(rec_guest_parse_spec("guest1", &s), 0);
	assert_int_equal(s.kind, REC_GUEST_XEN);
	assert_false(s.by_domid);
	assert_string_equal(s.name, "guest1");
	assert_string_equal(s.xen_name, "guest1");

	assert_int_equal(rec_guest_parse_spec("7", &s), 0);
	assert_int_equal(s.kind, REC_GUEST_XEN);
	assert_true(s.by_domid);
	assert_int_equal(s.domid, 7);

	assert_int_equal(rec_guest_parse_spec("10.0.0.2:8823", &s), 0);
	assert_int_equal(s.kind, REC_GUEST_TCP);
	assert_string_equal(s.host, "10.0.0.2");
	assert_int_equal(s.port, 8823);
	assert_string_equal(s.name, "10.0.0.2");	/* as trace-cmd */

	assert_int_equal(rec_guest_parse_spec("10.0.0.2", &s), 0);
	assert_int_equal(s.kind, REC_GUEST_TCP);
	assert_int_equal(s.port, TMSG_AGENT_PORT);

	assert_int_equal(rec_guest_parse_spec("[::1]:900", &s), 0);
	assert_int_equal(s.kind, REC_GUEST_TCP);
	assert_string_equal(s.host, "::1");
	assert_int_equal(s.port, 900);

	assert_int_equal(rec_guest_parse_spec("localhost:900", &s), 0);
	assert_int_equal(s.kind, REC_GUEST_TCP);

	assert_int_equal(rec_guest_parse_spec("3:823", &s), 0);
	assert_int_equal(s.kind, REC_GUEST_VSOCK);
	assert_int_equal(s.cid, 3);
	assert_int_equal(s.port, 823);

	assert_int_equal(rec_guest_parse_spec("vm1@4", &s), 0);
	assert_int_equal(s.kind, REC_GUEST_VSOCK);
	assert_string_equal(s.name, "vm1");
	assert_int_equal(s.cid, 4);
	assert_int_equal(s.port, TMSG_AGENT_PORT);

	/* a name never becomes a path outside the output's directory */
	assert_int_equal(rec_guest_parse_spec("../x@4:1", &s), 0);
	assert_null(strchr(s.name, '/'));
	assert_true(s.name[0] != '.');

	assert_int_equal(rec_guest_parse_spec("", &s), -EINVAL);
	assert_int_equal(rec_guest_parse_spec("a.b:99999", &s), -EINVAL);
	assert_non_null(strstr(tcx_error(), "bad port"));
	assert_int_equal(rec_guest_parse_spec("@4", &s), -EINVAL);
	assert_int_equal(rec_guest_parse_spec("vm@x", &s), -EINVAL);
	assert_int_equal(rec_guest_parse_spec("99999999", &s), -EINVAL);

	p = rec_guest_file_path("trace.dat", "guest1");
	assert_string_equal(p, "trace-guest1.dat");
	free(p);
	p = rec_guest_file_path("/a.b/out", "g");
	assert_string_equal(p, "/a.b/out-g");
	free(p);
	p = rec_guest_file_path("d/x.y.dat", "g");
	assert_string_equal(p, "d/x.y-g.dat");
	free(p);
}

/* ---- TCP, our agent ---- */

static void test_tcp_session(void **state)
{
	struct agent_proc a = { 0 };
	struct rec_guest_summary sum;
	struct rec_guest_opts o;
	struct rec_guest *g;
	char spec[64], out[128], gfile[160], host[128];
	const int pids[SIMK_CPUS] = { -1, -1 };

	start_agent(&a, "tcp");
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", a.port);
	snprintf(out, sizeof(out), "%s/trace.dat", dir);
	o = opts(spec, out);
	if (rec_guest_open(&g, &o))
		fail_msg("%s", tcx_error());
	snprintf(gfile, sizeof(gfile), "%s/trace-127.0.0.1.dat", dir);
	assert_string_equal(rec_guest_output(g), gfile);
	assert_int_equal(rec_guest_cpus(g), SIMK_CPUS);
	assert_true(rec_guest_id(g) != 0);
	wait_pages(g, SIMK_CPUS);
	/* the file is readable while the capture runs: the pages are on
	 * disk once the streams are quiet (at once, or within a second) */
	{
		static char rep[1 << 16];

		for (int i = 0; i < 30; i++) {
			tlib_capture(rep, sizeof(rep), "trace-cmd report -i '%s' 2>&1", gfile);
			if (count(rep, " n=") == SIMK_CPUS * SIMK_PER_CPU)
				break;
			usleep(50 * 1000);
		}
		check_report(gfile, SIMK_CPUS, SIMK_CPUS * SIMK_PER_CPU);
	}

	assert_int_equal(rec_guest_stop(g), 0);
	assert_int_equal(rec_guest_set_tsc2nsec(g, 1 << 22, 23), 0);
	snprintf(host, sizeof(host), "%s/host.dat", dir);
	check_host_entry(g, host, pids);
	assert_int_equal(rec_guest_close(g, &sum), 0);
	assert_false(sum.died);
	assert_int_equal(sum.events, SIMK_CPUS * SIMK_PER_CPU);
	assert_int_equal(sum.bad_pages, 0);
	assert_string_equal(sum.note, "");
	rec_guest_summary_print(&sum, stderr);

	check_report(gfile, SIMK_CPUS, SIMK_CPUS * SIMK_PER_CPU);
	check_traceid(gfile, sum.traceid);
	/*
	 * time sync: over TCP only ptp is offered; our agent answers it,
	 * sampled before the metadata and before CLOSE, one TSC both ends
	 */
	assert_string_equal(sum.tsync_proto, "ptp");
	assert_true(sum.tsync_shift);
	assert_int_equal(sum.tsync_samples, 2);
	assert_int_equal(sum.tsync_rounds, 2);
	assert_int_equal(sum.tsync_bound_ns, -1);
	assert_non_null(strstr(sum.tsync_note, "tsync ptp: 2 samples per vCPU"));
	fprintf(stderr, "# %d TIME_SHIFT samples\n",
		check_time_shift(gfile, true, 0x1234, PTP_MAX_OFF));
	{
		static char rep[1 << 16];

		/* both files together, the guest's TSC2NSEC applied */
		assert_int_equal(tlib_capture(rep, sizeof(rep), "trace-cmd report -i '%s' -i '%s' "
					   "2>&1", host, gfile), 0);
		assert_int_equal(count(rep, " n="), SIMK_CPUS * SIMK_PER_CPU + 1);
	}
	stop_agent(&a, SIGTERM);
}

/* The agent is killed: the guest file stays valid, the summary says so. */
static void test_agent_killed(void **state)
{
	struct agent_proc a = { 0 };
	struct rec_guest_summary sum;
	struct rec_guest_opts o;
	struct rec_guest *g;
	char spec[64], out[128];

	start_agent(&a, "kill");
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", a.port);
	snprintf(out, sizeof(out), "%s/killed.dat", dir);
	o = opts(spec, out);
	if (rec_guest_open(&g, &o))
		fail_msg("%s", tcx_error());
	wait_pages(g, SIMK_CPUS);
	stop_agent(&a, SIGKILL);
	assert_int_equal(rec_guest_close(g, &sum), 0);
	assert_true(sum.died);
	assert_true(sum.note[0] != 0);
	rec_guest_summary_print(&sum, stderr);
	check_report(sum.path, SIMK_CPUS, SIMK_CPUS * SIMK_PER_CPU);
}

/* ---- a fake agent that dies mid-page ---- */

enum fake_mode { FAKE_DIES, FAKE_CUT_META, FAKE_V7_META, FAKE_WRONG_CPUS };

struct fake {
	int lfd;
	unsigned int port;
	struct simk_pages pages;
	uint64_t id;
	enum fake_mode mode;
};

/* v6 metadata of the tick kernel, as our agent sends it */
static uint8_t *fake_meta(uint64_t id, int cpus, size_t *len)
{
	struct tdat_params p = { .version = 6, .cpus = cpus, .max_cpus = cpus,
				 .clock = "x86-tsc" };
	char path[160];
	struct tdat_writer *w;
	struct stat st;
	uint8_t *b;
	int fd;

	snprintf(path, sizeof(path), "%s/fake-meta.dat", dir);
	w = tdat_open(path, &p);
	assert_non_null(w);
	assert_int_equal(tdat_add_event_format(w, "tcx", tlib_tick_format), 0);
	assert_int_equal(tdat_add_cmdline(w, 9, "ticker"), 0);
	assert_int_equal(tdat_set_traceid(w, id), 0);
	assert_int_equal(tdat_set_uname(w, "Linux fake 6.1 x86_64"), 0);
	assert_int_equal(tdat_start_data(w), 0);
	assert_int_equal(tdat_close(w), 0);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	b = malloc(st.st_size);
	assert_int_equal(read(fd, b, st.st_size), st.st_size);
	close(fd);
	assert_int_equal(agent_meta_length(b, st.st_size, 6, len), 0);
	return b;
}

static void *fake_agent(void *arg)
{
	struct fake *f = arg;
	struct tmsg *m = malloc(sizeof(*m));
	struct tmsg_trace_resp resp = { .cpus = SIMK_CPUS, .page_size = 4096,
					.trace_id = f->id };
	struct tmsg_transport *ctl, *d[SIMK_CPUS];
	int lfd[SIMK_CPUS];
	uint32_t ports[SIMK_CPUS];
	uint8_t bad[4096] = { 0 };
	size_t mlen;
	uint8_t *meta = fake_meta(f->id, f->mode == FAKE_WRONG_CPUS ? 3 : SIMK_CPUS, &mlen);
	int fd = tmsg_accept(f->lfd, 5000, NULL, NULL);

	ctl = tmsg_fd_transport(fd, "fake ctl");
	tmsg_recv(ctl, m, 5000);			/* TRACE_REQ */
	for (int c = 0; c < SIMK_CPUS; c++)
		lfd[c] = tmsg_tcp_listen("127.0.0.1", 0, &ports[c]);
	resp.ports = ports;
	tmsg_make_trace_resp(m, &resp);
	tmsg_send(ctl, m);
	for (int c = 0; c < SIMK_CPUS; c++) {
		d[c] = tmsg_fd_transport(tmsg_accept(lfd[c], 5000, NULL, NULL), "fake data");
		close(lfd[c]);
	}
	if (f->mode == FAKE_CUT_META)
		mlen = 300;			/* inside the event formats */
	if (f->mode == FAKE_V7_META)
		meta[10] = '7';
	tmsg_send_data(ctl, meta, mlen);
	tmsg_send_cmd(ctl, TMSG_FIN_DATA);
	if (f->mode != FAKE_DIES) {
		/* the recorder gives up: wait for it to close */
		tmsg_recv(ctl, m, 5000);
		goto out;
	}
	/* cpu1: a malformed page (commit past the page), then its good one */
	bad[8] = 0xff;
	bad[9] = 0xff;
	tmsg_write_full(d[1], bad, sizeof(bad));
	tmsg_write_full(d[1], f->pages.data[1], 4096);
	/* cpu0: its page, then half of another, and the agent is gone */
	tmsg_write_full(d[0], f->pages.data[0], 4096);
	tmsg_write_full(d[0], f->pages.data[0], 2048);
out:
	for (int c = 0; c < SIMK_CPUS; c++)
		tmsg_close(d[c]);
	tmsg_close(ctl);
	free(meta);
	free(m);
	return NULL;
}

static void test_dies_mid_page(void **state)
{
	struct fake f = { .id = 0xfeedf00d12345678ull };
	struct rec_guest_summary sum;
	struct rec_guest_opts o;
	struct rec_guest *g;
	char spec[64], out[128], simk[128];
	pthread_t th;

	snprintf(simk, sizeof(simk), "%s/simk-fake", dir);
	assert_int_equal(simk_create(simk, &f.pages), 0);
	f.lfd = tmsg_tcp_listen("127.0.0.1", 0, &f.port);
	assert_true(f.lfd >= 0);
	assert_int_equal(pthread_create(&th, NULL, fake_agent, &f), 0);
	snprintf(spec, sizeof(spec), "127.0.0.1:%u", f.port);
	snprintf(out, sizeof(out), "%s/fake.dat", dir);
	o = opts(spec, out);
	if (rec_guest_open(&g, &o))
		fail_msg("%s", tcx_error());
	assert_true(rec_guest_id(g) == f.id);
	pthread_join(th, NULL);
	assert_int_equal(rec_guest_close(g, &sum), 0);
	rec_guest_summary_print(&sum, stderr);
	assert_true(sum.died);
	{
		char *js = NULL;
		size_t jlen = 0;
		FILE *m = open_memstream(&js, &jlen);

		rec_guest_summary_json(&sum, m);
		fclose(m);
		assert_non_null(strstr(js, "\"transport\": \"tcp\""));
		assert_non_null(strstr(js, "\"died\": true"));
		assert_non_null(strstr(js, "\"cut_bytes\": 2048"));
		assert_non_null(strstr(js, "\"bad_pages\": 1,"));
		free(js);
	}
	assert_int_equal(sum.cut_bytes, 2048);
	assert_int_equal(sum.bad_pages, 1);
	assert_int_equal(sum.pages, 2);
	check_report(sum.path, SIMK_CPUS, SIMK_CPUS * SIMK_PER_CPU);
	check_traceid(sum.path, f.id);
	{
		static char rep[1 << 14];

		/* cmdlines and UNAME came through the metadata */
		assert_int_equal(tlib_capture(rep, sizeof(rep), "trace-cmd report -i '%s' 2>&1 | "
					   "head -3", sum.path), 0);
		assert_non_null(strstr(rep, "ticker"));
		assert_int_equal(tlib_dump_options(rep, sizeof(rep), sum.path), 0);
		assert_non_null(strstr(rep, "Linux fake 6.1"));
	}
	close(f.lfd);
	simk_free(&f.pages);
}

/* Malformed metadata: a clear error, nothing left on disk. */
static void test_bad_metadata(void **state)
{
	static const struct {
		enum fake_mode mode;
		const char *want;
	} cases[] = {
		{ FAKE_CUT_META, "cut or malformed" },
		{ FAKE_V7_META, "only 6 is understood" },
		{ FAKE_WRONG_CPUS, "the metadata says 3 CPUs" },
	};
	char simk[128], spec[64], out[128], path[160];
	struct simk_pages pages;

	snprintf(simk, sizeof(simk), "%s/simk-badmeta", dir);
	assert_int_equal(simk_create(simk, &pages), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fake f = { .id = 42, .mode = cases[i].mode, .pages = pages };
		struct rec_guest_opts o;
		struct rec_guest *g;
		pthread_t th;

		f.lfd = tmsg_tcp_listen("127.0.0.1", 0, &f.port);
		assert_true(f.lfd >= 0);
		assert_int_equal(pthread_create(&th, NULL, fake_agent, &f), 0);
		snprintf(spec, sizeof(spec), "127.0.0.1:%u", f.port);
		snprintf(out, sizeof(out), "%s/badmeta.dat", dir);
		o = opts(spec, out);
		assert_true(rec_guest_open(&g, &o) < 0);
		assert_null(g);
		if (!strstr(tcx_error(), cases[i].want))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, tcx_error(), cases[i].want);
		pthread_join(th, NULL);
		close(f.lfd);
		snprintf(path, sizeof(path), "%s/badmeta-127.0.0.1.dat", dir);
		assert_int_not_equal(access(path, F_OK), 0);
	}
	simk_free(&pages);
}

/* ---- errors ---- */

static void test_errors(void **state)
{
	struct agent_proc a = { 0 };
	struct rec_guest_opts o;
	struct rec_guest *g;
	const char *const bad_ev[] = { "nosuch:event" };
	char spec[64], out[128], path[160];
	int ret;

	snprintf(out, sizeof(out), "%s/err.dat", dir);
	/* nobody listens */
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", tlib_free_port());
	o = opts(spec, out);
	ret = rec_guest_open(&g, &o);
	assert_true(ret < 0);
	assert_null(g);
	assert_non_null(strstr(tcx_error(), "cannot connect to its agent"));

	/* the agent refuses an event its kernel lacks, and says why */
	start_agent(&a, "refuse");
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", a.port);
	o = opts(spec, out);
	o.events = bad_ev;
	ret = rec_guest_open(&g, &o);
	/* the guest's alone: record --xen leaves it out and goes on */
	assert_int_equal(ret, -ENOMSG);
	assert_non_null(strstr(tcx_error(), "lacks an event it was given"));
	assert_non_null(strstr(tcx_error(), "refused"));
	assert_non_null(strstr(tcx_error(), "nosuch"));
	snprintf(path, sizeof(path), "%s/err-127.0.0.1.dat", dir);
	assert_int_not_equal(access(path, F_OK), 0);	/* nothing left behind */
	stop_agent(&a, SIGTERM);

	/* Xen guests, over the xenstore stand-in */
	mock_xen_reset();
	o = opts("nosuch", out);
	assert_int_equal(rec_guest_open(&g, &o), -ENOENT);
	assert_non_null(strstr(tcx_error(), "no running domain is named \"nosuch\""));
	o = opts("9", out);
	assert_int_equal(rec_guest_open(&g, &o), -ENOENT);
	assert_non_null(strstr(tcx_error(), "no domain 9 is running"));
	{
		struct xs_handle *xs = xs_open(0);

		xs_write(xs, XBT_NULL, "/local/domain/7/name", "quiet", 5);
		xs_write(xs, XBT_NULL, "/local/domain/8/name", "gone", 4);
		xs_write(xs, XBT_NULL, "/local/domain/8/data/trace-cmd-xen/state", "stopped", 7);
		xs_write(xs, XBT_NULL, "/local/domain/6/name", "stale", 5);
		xs_write(xs, XBT_NULL, "/local/domain/6/data/trace-cmd-xen/state", "ready", 5);
		xs_write(xs, XBT_NULL, "/local/domain/6/data/trace-cmd-xen/port", "0", 1);
		xs_close(xs);
	}
	o = opts("quiet", out);
	assert_int_equal(rec_guest_open(&g, &o), -ENOENT);
	assert_non_null(strstr(tcx_error(), "runs no agent"));
	o = opts("gone", out);
	assert_int_equal(rec_guest_open(&g, &o), -ENOTCONN);
	assert_non_null(strstr(tcx_error(), "not ready"));
	/* advertised, but nobody serves the vchan (a killed agent) */
	o = opts("6", out);
	o.timeout_ms = 200;
	assert_int_equal(rec_guest_open(&g, &o), -ECONNREFUSED);
	assert_non_null(strstr(tcx_error(), "does not answer"));
	mock_xen_reset();
}

/* An agent that requires a secret: ours proves it knows it; no secret, or
 * a wrong one, is refused. */
static void test_secret(void **state)
{
	struct agent_proc a = { 0 };
	struct rec_guest_summary sum;
	struct rec_guest_opts o;
	struct rec_guest *g;
	char spec[64], out[128], auth[160];
	const uint8_t secret[] = "s3cr3t-of-the-day";
	FILE *f;

	snprintf(auth, sizeof(auth), "%s/secret", dir);
	f = fopen(auth, "w");
	assert_non_null(f);
	fputs("s3cr3t-of-the-day\n", f);
	fclose(f);
	assert_int_equal(chmod(auth, 0600), 0);	/* else the agent refuses it */
	snprintf(auth, sizeof(auth), "--secret-file=%s/secret", dir);
	start_agent_auth(&a, "secret", auth);
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", a.port);
	snprintf(out, sizeof(out), "%s/secret.dat", dir);
	o = opts(spec, out);
	assert_int_equal(rec_guest_open(&g, &o), -EPERM);
	assert_non_null(strstr(tcx_error(), "requires a secret"));
	o.secret = secret;
	o.secret_len = 5;
	/* a wrong one: the agent's proof fails here first */
	assert_int_equal(rec_guest_open(&g, &o), -EACCES);
	assert_non_null(strstr(tcx_error(), "could not prove that it knows the secret"));
	o.secret_len = sizeof(secret) - 1;
	if (rec_guest_open(&g, &o))
		fail_msg("%s", tcx_error());
	wait_pages(g, SIMK_CPUS);
	assert_int_equal(rec_guest_close(g, &sum), 0);
	assert_false(sum.died);
	check_report(sum.path, SIMK_CPUS, SIMK_CPUS * SIMK_PER_CPU);
	stop_agent(&a, SIGTERM);
}

/* Whether a TCP socket listens on @port (from /proc/net/tcp and tcp6). */
static bool listening(int port)
{
	static const char *const files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	char line[512], want[16];
	bool found = false;

	snprintf(want, sizeof(want), ":%04X ", port);
	for (int i = 0; i < 2 && !found; i++) {
		FILE *f = fopen(files[i], "r");

		while (f && !found && fgets(line, sizeof(line), f)) {
			const char *local = strchr(line, ':');

			/* "sl: local rem st": the local address, then state 0A */
			if (local && (local = strchr(local + 1, ':')) &&
			    !strncmp(local, want, strlen(want)) && strstr(line, " 0A "))
				found = true;
		}
		if (f)
			fclose(f);
	}
	return found;
}

/*
 * The stock trace-cmd 3.1.6 agent: on these machines it needs -d
 * --no-filter and dies at its teardown before CLOSE_RESP (research
 * §1.7), so it cannot be a clean peer; but it sends trace-cmd's own v6
 * metadata and real pages, which our recorder must turn into a valid file.
 */
static void test_stock_agent(void **state)
{
	const char *const ev[] = { "sched:sched_switch" };
	const char *const extra[] = { "-d", "--no-filter" };
	struct rec_guest_summary sum;
	struct rec_guest_opts o;
	struct rec_guest *g;
	char spec[64], out[128], port[16];
	static char rep[1 << 16];
	char *argv[] = { "trace-cmd", "agent", "-N", "127.0.0.1", "-p", port, NULL };
	struct tlib_spawn_opts so = { .out = "/dev/null", .err = "/dev/null" };
	int p = tlib_free_port();
	pid_t pid;

	assert_true(p > 0);
	snprintf(port, sizeof(port), "%d", p);
	pid = tlib_spawn(argv, &so);
	assert_true(pid > 0);
	/* listening? (a probe connection would take its one session slot) */
	for (int i = 0; i < 250 && !listening(p); i++)
		usleep(20 * 1000);
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", p);
	snprintf(out, sizeof(out), "%s/stock.dat", dir);
	o = opts(spec, out);
	o.events = ev;
	o.extra_args = extra;
	o.nr_extra_args = 2;
	if (rec_guest_open(&g, &o)) {
		tlib_kill(pid, SIGTERM);
		fail_msg("%s", tcx_error());
	}
	usleep(1000 * 1000);
	assert_int_equal(rec_guest_close(g, &sum), 0);
	rec_guest_summary_print(&sum, stderr);
	tlib_kill(pid, SIGTERM);
	assert_true(sum.events > 0);
	assert_int_equal(sum.bad_pages, 0);
	assert_int_equal(tlib_capture(rep, sizeof(rep), "trace-cmd report -i '%s' 2>&1 | "
				   "grep -c ' sched_switch: '", sum.path), 0);
	assert_int_equal(atoi(rep), (int)sum.events);
	check_traceid(sum.path, sum.traceid);
	/* trace-cmd's own ptp: its first round before the metadata, as it wants */
	assert_string_equal(sum.tsync_proto, "ptp");
	assert_true(sum.tsync_samples >= 1);
	assert_true(sum.tsync_shift);
	assert_true(check_time_shift(sum.path, true, 0x1234, PTP_MAX_OFF) >= 2);
}

/* --tsync: none, a protocol the guest cannot have, a version 6 file, a wrong name */
static void test_tsync_choice(void **state)
{
	struct agent_proc a = { 0 };
	struct rec_guest_summary sum;
	struct rec_guest_opts o;
	struct rec_guest *g;
	char spec[64], out[128];
	static const char *const none[] = { "none", "xen" };

	start_agent(&a, "tsync");
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", a.port);
	for (int i = 0; i < 2; i++) {
		snprintf(out, sizeof(out), "%s/tsync-%s.dat", dir, none[i]);
		o = opts(spec, out);
		o.tsync = none[i];
		if (rec_guest_open(&g, &o))
			fail_msg("%s", tcx_error());
		wait_pages(g, SIMK_CPUS);
		assert_int_equal(rec_guest_close(g, &sum), 0);
		rec_guest_summary_print(&sum, stderr);
		assert_false(sum.died);
		/* nothing offered: nothing chosen, no TIME_SHIFT, and why */
		assert_string_equal(sum.tsync_proto, "");
		assert_false(sum.tsync_shift);
		assert_int_equal(sum.tsync_samples, 0);
		assert_non_null(strstr(sum.tsync_note, i ? "protocol xen needs a Xen guest" :
					"none asked"));
		check_report(sum.path, SIMK_CPUS, SIMK_CPUS * SIMK_PER_CPU);
		check_time_shift(sum.path, false, 0, 0);
	}
	/* a version 6 file takes no option after its data: synced, not written */
	snprintf(out, sizeof(out), "%s/tsync-v6.dat", dir);
	o = opts(spec, out);
	o.file_version = 6;
	if (rec_guest_open(&g, &o))
		fail_msg("%s", tcx_error());
	wait_pages(g, SIMK_CPUS);
	assert_int_equal(rec_guest_close(g, &sum), 0);
	rec_guest_summary_print(&sum, stderr);
	assert_string_equal(sum.tsync_proto, "ptp");
	assert_int_equal(sum.tsync_samples, 2);
	assert_false(sum.tsync_shift);
	assert_non_null(strstr(sum.tsync_note, "no TIME_SHIFT: a version 6 file"));
	check_report(sum.path, SIMK_CPUS, SIMK_CPUS * SIMK_PER_CPU);
	check_time_shift(sum.path, false, 0, 0);

	o = opts(spec, out);
	o.tsync = "ptp,kvm";
	assert_int_equal(rec_guest_open(&g, &o), -EINVAL);
	assert_null(g);
	assert_non_null(strstr(tcx_error(), "\"kvm\" is not a time sync protocol"));
	stop_agent(&a, SIGTERM);
}

/* ---- vchan, our agent in Xen mode on the stand-in ---- */

struct agent_run {
	struct agent_config cfg;
	pthread_t th;
	int ret;
};

static void *agent_main(void *arg)
{
	struct agent_run *r = arg;

	r->ret = agent_serve_xen(&r->cfg);
	return NULL;
}

static void test_vchan_session(void **state)
{
	struct agent_run r = { 0 };
	struct simk_pages pages;
	struct rec_guest_summary sum;
	struct rec_guest_opts o;
	struct rec_guest *g;
	struct tmsg_xs_agent ad = { 0 };
	char simk[128], out[128], host[128], log[128];
	int pids[SIMK_CPUS];
	FILE *lf;

	mock_xen_reset();
	snprintf(simk, sizeof(simk), "%s/simk-xen", dir);
	assert_int_equal(simk_create(simk, &pages), 0);
	{
		struct xs_handle *xs = xs_open(0);

		xs_write(xs, XBT_NULL, "/local/domain/0/name", "Domain-0", 8);
		xs_write(xs, XBT_NULL, "/local/domain/" MOCK_DOMID_STR "/name", "guest5", 6);
		xs_close(xs);
	}
	snprintf(log, sizeof(log), "%s/agent-xen.log", dir);
	lf = fopen(log, "w");
	assert_non_null(lf);
	setvbuf(lf, NULL, _IOLBF, 0);
	r.cfg = (struct agent_config){ .domid = MOCK_DOMID, .peer_domid = 0, .sessions = 1,
				       .tracing_dir = simk, .log = lf };
	assert_int_equal(pthread_create(&r.th, NULL, agent_main, &r), 0);
	assert_true(tlib_agent_ready(MOCK_DOMID, &ad));

	snprintf(out, sizeof(out), "%s/xen.dat", dir);
	o = opts("guest5", out);
	if (rec_guest_open(&g, &o))
		fail_msg("%s", tcx_error());
	assert_string_equal(rec_guest_name(g), "guest5");
	wait_pages(g, SIMK_CPUS);
	assert_int_equal(rec_guest_stop(g), 0);
	for (int c = 0; c < SIMK_CPUS; c++)
		pids[c] = rec_vcpu_pid(MOCK_DOMID, (uint32_t)c);
	assert_int_equal(pids[1], (MOCK_DOMID << 16 | 1) + 1);
	snprintf(host, sizeof(host), "%s/xen-host.dat", dir);
	check_host_entry(g, host, pids);
	assert_int_equal(rec_guest_close(g, &sum), 0);
	rec_guest_summary_print(&sum, stderr);
	assert_false(sum.died);
	assert_int_equal(sum.domid, MOCK_DOMID);
	check_report(sum.path, SIMK_CPUS, SIMK_CPUS * SIMK_PER_CPU);
	/*
	 * no libxenctrl on the stand-in: xen is not offered (and why), the
	 * agent in Xen mode takes ptp, over its tsync vchan
	 */
	assert_string_equal(sum.tsync_proto, "ptp");
	assert_true(sum.tsync_shift);
	assert_non_null(strstr(sum.tsync_note, "xen not offered: "));
	check_time_shift(sum.path, true, 0x1234, PTP_MAX_OFF);
	pthread_join(r.th, NULL);
	assert_int_equal(r.ret, 0);
	fclose(lf);
	simk_free(&pages);
	mock_xen_reset();
}

/* The directory listing mock-xen.c lacks: the domains with a name node. */
char **xs_directory(struct xs_handle *h, xs_transaction_t t, const char *path,
		    unsigned int *num)
{
	char ids[64][8], node[64];
	unsigned int n = 0;
	char **out, *s;

	if (strcmp(path, "/local/domain")) {
		errno = ENOENT;
		return NULL;
	}
	for (unsigned int d = 0; d < 64; d++) {
		unsigned int len;
		void *v;

		snprintf(node, sizeof(node), "/local/domain/%u/name", d);
		v = xs_read(h, t, node, &len);
		if (v)
			snprintf(ids[n++], sizeof(ids[0]), "%u", d);
		free(v);
	}
	out = malloc(n * (sizeof(char *) + 8) + 1);
	if (!out)
		return NULL;
	s = (char *)(out + n);
	for (unsigned int i = 0; i < n; i++, s += 8) {
		memcpy(s, ids[i], 8);
		out[i] = s;
	}
	*num = n;
	return out;
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/tcx-guest-XXXXXX");
	signal(SIGPIPE, SIG_IGN);
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	if (getenv("TCX_KEEP"))
		return 0;
	return tlib_rmtree(dir);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec),
		cmocka_unit_test(test_tcp_session),
		cmocka_unit_test(test_agent_killed),
		cmocka_unit_test(test_dies_mid_page),
		cmocka_unit_test(test_bad_metadata),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_secret),
		cmocka_unit_test(test_stock_agent),
		cmocka_unit_test(test_tsync_choice),
		cmocka_unit_test(test_vchan_session),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s TRACE-CMD-XEN\n", argv[0]);
		return 2;
	}
	tcx_bin = argv[1];
	return cmocka_run_group_tests_name("record-guest", tests, setup, teardown);
}
