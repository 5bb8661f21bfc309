// SPDX-License-Identifier: GPL-2.0
/*
 * record -A on xensim: dom0 (this process, on the simulator's libxenstore
 * and libxenvchan) and two guests, each running our agent in Xen mode on
 * its simulated kernel (`agent --xen --tracing-dir DIR/dom<id>/tracing`,
 * XENSIM_DOMID=<id>). Guests are found by name and by domid through
 * xenstore, every page arrives over the simulated vchans, the files read
 * back with the stock trace-cmd, the GUEST entries map each vCPU to its
 * pseudo task, the pages match the simulator's own count, and the
 * recording threads of two light guests stay far from a core.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <trace-cmd/trace-cmd.h>

#include "recorder-internal.h"
#include "tcx-util.h"
#include "tlib.h"
#include "tdat.h"

static struct tlib_sim sim;

/* pages the simulator produced for @dom (all vCPUs), from the truth */
static uint64_t truth_pages(unsigned int dom, uint64_t *dropped)
{
	struct tlib_gstats g;
	uint64_t pages = 0;

	assert_int_equal(tlib_truth_gstats(sim.dir, dom, &g), 0);
	for (unsigned int v = 0; v < g.vcpus; v++)
		pages += g.pages[v];
	*dropped = g.dropped;
	return pages;
}

static int report_events(const char *file, int *cpus)
{
	static char text[1 << 24];
	char *line, *save;
	int n = 0;

	assert_int_equal(tlib_capture(text, sizeof(text), "trace-cmd report -i '%s' 2>&1",
				      file), 0);
	assert_true(strlen(text) < sizeof(text) - 1);
	*cpus = -1;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "cpus=", 5))
			*cpus = atoi(line + 5);
		else if (strstr(line, "sched_switch:") || strstr(line, "sched_wakeup:") ||
			 strstr(line, "tcx-tsync "))
			n++;	/* the events, and time sync's markers */
	}
	return n;
}

/* This process's CPU time (all its threads), in seconds. */
static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_two_guests(void **state)
{
	const char *const ev[] = { "sched" };
	struct rec_guest *g[2];
	struct rec_guest_summary sum[2];
	const char *spec[2] = { "guest1", "2" };
	const unsigned int dom[2] = { 1, 2 }, vcpus[2] = { 2, 1 };
	char out[400], host[400];
	double cpu0, cpu;
	pid_t agent[2];

	assert_int_equal(tlib_sim_start(&sim, tlib_conf_path("../../sim/hosts/two-guests.conf")), 0);
	setenv("XENSIM_HOST", sim.dir, 1);
	/* the agents advertise themselves in xenstore */
	for (int i = 0; i < 2; i++) {
		agent[i] = tlib_sim_guest(&sim, dom[i], "sched", NULL);
		assert_true(agent[i] > 0);
	}
	usleep(100 * 1000);	/* the daemon rewrites trace_clock every 20 ms */
	snprintf(out, sizeof(out), "%s/trace.dat", sim.tmp);
	for (int i = 0; i < 2; i++) {
		struct rec_guest_opts o = {
			.spec = spec[i], .output = out, .events = ev, .nr_events = 1,
			.host_traceid = REC_HOST_TRACEID, .log = stderr,
		};

		if (rec_guest_open(&g[i], &o))
			fail_msg("%s", tcx_error());
		assert_int_equal(rec_guest_cpus(g[i]), vcpus[i]);
	}
	assert_string_equal(rec_guest_name(g[1]), "guest2");	/* by domid, named */
	/*
	 * light guests cost their threads little: a drain thread that
	 * spins on an event it never acknowledges takes a whole core
	 */
	cpu0 = cpu_s();
	sleep(2);
	cpu = cpu_s() - cpu0;
	fprintf(stderr, "# recording threads: %.3f s of CPU in 2 s\n", cpu);
	/* tracing off in the guests; their last partial pages follow (50 ms) */
	for (int i = 0; i < 2; i++)
		assert_int_equal(tlib_sim_put(&sim, dom[i], "tracing_on", "0\n"), 0);
	usleep(400 * 1000);
	for (int i = 0; i < 2; i++)
		rec_guest_request_stop(g[i]);
	for (int i = 0; i < 2; i++)
		assert_int_equal(rec_guest_stop(g[i]), 0);

	/* the host file: one GUEST entry per guest, vCPU -> pseudo task */
	{
		struct tdat_params p = { .version = 7, .cpus = 2, .clock = "x86-tsc" };
		struct tdat_writer *w;
		struct tracecmd_input *h;

		snprintf(host, sizeof(host), "%s/host.dat", sim.tmp);
		w = tdat_open(host, &p);
		assert_non_null(w);
		assert_int_equal(tdat_set_traceid(w, REC_HOST_TRACEID), 0);
		assert_int_equal(tdat_start_data(w), 0);
		for (int i = 0; i < 2; i++)
			assert_int_equal(rec_guest_add_host_entry(g[i], w), 0);
		assert_int_equal(tdat_close(w), 0);
		h = tracecmd_open(host, 0);
		assert_non_null(h);
		for (int i = 0; i < 2; i++) {
			const char *name;
			const int *pids;
			int n;

			assert_int_equal(tracecmd_get_guest_cpumap(h, rec_guest_id(g[i]), &name,
								   &n, &pids), 0);
			assert_string_equal(name, i ? "guest2" : "guest1");
			assert_int_equal(n, vcpus[i]);
			for (int v = 0; v < n; v++)
				assert_int_equal(pids[v], rec_vcpu_pid(dom[i], (uint32_t)v));
		}
		tracecmd_close(h);
	}
	for (int i = 0; i < 2; i++) {
		assert_int_equal(rec_guest_close(g[i], &sum[i]), 0);
		rec_guest_summary_print(&sum[i], stderr);
		assert_false(sum[i].died);
		assert_int_equal(sum[i].bad_pages, 0);
		/*
		 * protocol xen chosen and sampled at the start and the end, but
		 * no hypervisor record reached rec_guest_hv_record() here: no
		 * TIME_SHIFT, said so, and the file is whole (checked below)
		 */
		assert_string_equal(sum[i].tsync_proto, "xen");
		assert_int_equal(sum[i].tsync_samples, 2);
		assert_false(sum[i].tsync_shift);
		assert_int_equal(sum[i].tsync_bound_ns, -1);
		assert_non_null(strstr(sum[i].tsync_note, "no marker round"));
	}
	for (int i = 0; i < 2; i++) {
		tlib_kill(agent[i], SIGTERM);
	}
	assert_int_equal(tlib_sim_stop(&sim), 0);
	assert_true(cpu < 0.5);	/* checked once the guests are stopped */

	for (int i = 0; i < 2; i++) {
		uint64_t dropped, pages = truth_pages(dom[i], &dropped);
		int cpus, n = report_events(sum[i].path, &cpus);

		fprintf(stderr, "# guest%u: %llu pages, %llu events in the file; simulator "
			"%llu pages, %llu dropped\n", dom[i], (unsigned long long)sum[i].pages,
			(unsigned long long)sum[i].events, (unsigned long long)pages,
			(unsigned long long)dropped);
		assert_int_equal(cpus, vcpus[i]);
		assert_true(n > 0);
		assert_int_equal((uint64_t)n, sum[i].events);
		/* every page the guest kernel produced while traced arrived */
		assert_int_equal(dropped, 0);
		assert_int_equal(sum[i].pages, pages);
	}
	tlib_sim_cleanup(&sim);
}

/* One guest's agent is killed mid-capture: its file ends there, valid; the other goes on. */
static void test_guest_dies(void **state)
{
	const char *const ev[] = { "sched" };
	const unsigned int dom[2] = { 1, 2 };
	struct rec_guest *g[2];
	struct rec_guest_summary sum[2], mid;
	char out[400];
	pid_t agent[2];

	assert_int_equal(tlib_sim_start(&sim, tlib_conf_path("../../sim/hosts/two-guests.conf")), 0);
	setenv("XENSIM_HOST", sim.dir, 1);
	for (int i = 0; i < 2; i++) {
		agent[i] = tlib_sim_guest(&sim, dom[i], "sched", NULL);
		assert_true(agent[i] > 0);
	}
	snprintf(out, sizeof(out), "%s/dies.dat", sim.tmp);
	for (int i = 0; i < 2; i++) {
		/* no time sync: its last sample would only lengthen the stop */
		struct rec_guest_opts o = {
			.spec = i ? "guest2" : "guest1", .output = out, .events = ev,
			.nr_events = 1, .log = stderr, .tsync = "none",
		};

		if (rec_guest_open(&g[i], &o))
			fail_msg("%s", tcx_error());
	}
	usleep(800 * 1000);
	tlib_kill(agent[1], SIGKILL);
	/* seen while the other runs (how soon depends on the machine's load) */
	for (int t = 0; t < 200; t++) {
		rec_guest_stats(g[1], &mid);
		if (mid.died)
			break;
		usleep(50 * 1000);
	}
	assert_true(mid.died);
	rec_guest_stats(g[0], &mid);
	assert_false(mid.died);
	for (int i = 0; i < 2; i++)
		assert_int_equal(tlib_sim_put(&sim, dom[i], "tracing_on", "0\n"), 0);
	usleep(400 * 1000);
	for (int i = 0; i < 2; i++)
		assert_int_equal(rec_guest_close(g[i], &sum[i]), 0);
	for (int i = 0; i < 2; i++)
		rec_guest_summary_print(&sum[i], stderr);
	assert_false(sum[0].died);
	assert_true(sum[1].died);
	assert_non_null(strstr(sum[1].note, "went away"));
	tlib_kill(agent[0], SIGTERM);
	assert_int_equal(tlib_sim_stop(&sim), 0);
	{
		uint64_t dropped, pages = truth_pages(1, &dropped);
		int cpus, n = report_events(sum[0].path, &cpus);

		/* the survivor got everything */
		assert_int_equal(sum[0].pages, pages);
		assert_int_equal((uint64_t)n, sum[0].events);
		/* the dead one: valid up to where it ended */
		n = report_events(sum[1].path, &cpus);
		assert_int_equal(cpus, 1);
		assert_true(n > 0);
		assert_int_equal((uint64_t)n, sum[1].events);
		assert_true(sum[1].pages < truth_pages(2, &dropped));
	}
	tlib_sim_cleanup(&sim);
}

static int teardown(void **state)
{
	tlib_sim_cleanup(&sim);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_guests),
		cmocka_unit_test(test_guest_dies),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("record-guest-xensim", tests, NULL, teardown);
}
