// SPDX-License-Identifier: GPL-2.0
/*
 * record --xen -A: the guests' deadlines and limits, end to end on xensim
 * (sim/hosts/two-guests.conf, our agent in each guest), judged by the
 * recorder's own account (its summary JSON and exit status) and by the
 * files, never by the clock:
 *  - an agent frozen (SIGSTOP) while recording: at --guest-stop-timeout it
 *    is abandoned, the other guest's file is complete;
 *  - the same with a long stop deadline: a second SIGINT cuts it short;
 *  - a peer that accepts and never answers: --guest-open-timeout fails
 *    the start, the JSON says "abandoned": "open", nothing else on disk;
 *  - --guest-max-bytes: each guest's file stops at the limit, the
 *    recording goes on;
 *  - --guest-max-cpus: a TCP agent claiming more CPUs is refused.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <trace-cmd/trace-cmd.h>

#include "tlib.h"

#define MAXAGENTS	4

static struct tlib_sim sim;
static pid_t agents[MAXAGENTS];
static int nagents;
static char outdir[400];

static int setup(void **state)
{
	nagents = 0;
	if (tlib_sim_start(&sim, tlib_conf_path("../../sim/hosts/two-guests.conf")))
		return -1;
	setenv("XENSIM_HOST", sim.dir, 1);
	snprintf(outdir, sizeof(outdir), "%s/out", sim.tmp);
	return mkdir(outdir, 0755);
}

static int teardown(void **state)
{
	for (int i = 0; i < nagents; i++) {
		if (agents[i] <= 0)
			continue;
		kill(agents[i], SIGCONT);
		kill(agents[i], SIGKILL);
		waitpid(agents[i], NULL, 0);
	}
	nagents = 0;
	tlib_sim_cleanup(&sim);
	return 0;
}

static pid_t start_agent(unsigned int domid)
{
	pid_t pid = tlib_sim_guest(&sim, domid, "sched/sched_switch", NULL);

	if (pid < 0)
		fail_msg("the agent of domain %u does not get ready (see %s/agent%u.log)",
			 domid, sim.tmp, domid);
	agents[nagents++] = pid;
	return pid;
}

/* The JSON object of guest @name in the summary @js (a pointer into it). */
static const char *guest_json(const char *js, const char *name)
{
	char key[96];
	const char *p;

	snprintf(key, sizeof(key), "{\"name\": \"%s\"", name);
	p = strstr(js, key);
	if (!p)
		fail_msg("the summary names no guest %s: %.300s", name, js);
	return p;
}

/* Whether the guest object at @g (up to its "tsync") has @kv. */
static bool guest_has(const char *g, const char *kv)
{
	const char *end = strstr(g, "\"tsync\"");
	const char *p = strstr(g, kv);

	return p && (!end || p < end);
}

/* The stock trace-cmd reads every file of the run. */
static void stock_reads(const char *guests)
{
	char out[256];
	int rc = tlib_capture(out, sizeof(out), "trace-cmd report -i %s/trace.dat -i "
			      "%s/trace-dom0.dat %s >/dev/null 2>%s/report.err; echo $?",
			      outdir, outdir, guests, outdir);

	if (rc || atoi(out))
		fail_msg("trace-cmd report fails on the files: %s",
			 tlib_show(tlib_path(outdir, "report.err")));
}

/* Wait for @pid, SIGKILL after @s seconds (the test fails then). */
static int wait_bounded(pid_t pid, int s)
{
	for (int i = 0; i < s * 100; i++) {
		int st;

		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(10 * 1000);
	}
	kill(pid, SIGKILL);
	tlib_wait(pid);
	fail_msg("record did not end within %d s", s);
	return -1;
}

/* guest2's agent frozen mid-capture: abandoned at the stop deadline. */
static void frozen_guest(bool second_signal)
{
	char *err = tlib_path(outdir, "../err"), *js = tlib_path(outdir, "../sum.json");
	char *out = tlib_path(outdir, "trace.dat");
	char *argv[] = { (char *)tlib_tcx(), "record", "--xen", "-A", "guest1", "-A", "guest2",
			 "-o", out, "--summary-json", js, "--guest-stop-timeout",
			 second_signal ? "3600" : "1", NULL };
	const char *g1, *g2;
	char *text, g1file[600], g2file[600];
	pid_t pid, victim;

	start_agent(1);
	victim = start_agent(2);
	pid = tlib_sim_spawn(&sim, argv, -1, "/dev/null", err);
	assert_true(pid > 0);
	/*
	 * the guests open at once: both files, then both are open; one path
	 * each: tlib_path()'s buffers rotate, and err and js are two of them
	 */
	snprintf(g1file, sizeof(g1file), "%s/trace-guest1.dat", outdir);
	snprintf(g2file, sizeof(g2file), "%s/trace-guest2.dat", outdir);
	for (int t = 0; t < 3000 && (access(g1file, F_OK) || access(g2file, F_OK)); t++)
		usleep(10 * 1000);
	sleep(1);
	kill(victim, SIGSTOP);
	usleep(300 * 1000);
	kill(pid, SIGINT);
	if (second_signal) {
		sleep(2);	/* inside the stop: guest1 is done, guest2 never will be */
		kill(pid, SIGINT);
	}
	assert_int_equal(wait_bounded(pid, 120), 0);
	kill(victim, SIGCONT);
	text = tlib_slurp(js, NULL);
	assert_non_null(text);
	g1 = guest_json(text, "guest1");
	g2 = guest_json(text, "guest2");
	if (!guest_has(g2, "\"abandoned\": \"stop\""))
		fail_msg("guest2 not abandoned at the stop: %s", text);
	assert_true(guest_has(g1, "\"abandoned\": \"\""));
	assert_true(guest_has(g1, "\"died\": false"));
	assert_true(strstr(text, second_signal ? "\"guests_stop_cut\": true" :
					       "\"guests_stop_cut\": false"));
	assert_true(tlib_file_has(err, "abandoned at the stop deadline"));
	if (second_signal)
		assert_true(tlib_file_has(err, "the guests' stop is cut short"));
	assert_true(tlib_json_num(g1, "\"events\"") > 0);
	free(text);
	{
		char both[900];

		snprintf(both, sizeof(both), "-i %s/trace-guest1.dat -i %s/trace-guest2.dat",
			 outdir, outdir);
		stock_reads(both);
	}
}

static void test_stop_deadline(void **state)
{
	frozen_guest(false);
}

static void test_second_signal(void **state)
{
	frozen_guest(true);
}

/*
 * A listener that never accepts: the connect succeeds, no byte ever comes.
 * Its -A argument into @spec; returns the socket to close.
 */
static int silent_peer(char *spec, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	snprintf(spec, len, "127.0.0.1:%u", ntohs(a.sin_port));
	return fd;
}

static void test_open_deadline(void **state)
{
	char *err = tlib_path(outdir, "../err"), *js = tlib_path(outdir, "../sum.json");
	char spec[48], *text;
	int fd = silent_peer(spec, sizeof(spec)), rc;

	{
		char *argv[] = { (char *)tlib_tcx(), "record", "--xen", "-q", "--duration", "30",
				 "-o", tlib_path(outdir, "trace.dat"), "-A", spec,
				 "--guest-open-timeout", "1", "--summary-json", js, NULL };

		rc = wait_bounded(tlib_sim_spawn(&sim, argv, -1, "/dev/null", err), 60);
	}
	close(fd);
	assert_int_equal(rc, 1);
	assert_true(tlib_file_has(err, "abandoned: not open within 1.0 s (--guest-open-timeout)"));
	text = tlib_slurp(js, NULL);
	assert_non_null(text);
	if (!guest_has(guest_json(text, spec), "\"abandoned\": \"open\""))
		fail_msg("no \"abandoned\": \"open\" in %s", text);
	assert_non_null(strstr(text, "\"started\": false"));
	assert_non_null(strstr(text, "\"guest_open_timeout_s\": 1.000"));
	assert_null(strstr(text, "\"error\": \"\""));
	free(text);
	assert_int_equal(tlib_dir_entries(outdir), 0);
}

/* Every guest's file stops at the limit; the hypervisor's is whole. */
static void test_max_bytes(void **state)
{
	char *err = tlib_path(outdir, "../err"), *js = tlib_path(outdir, "../sum.json");
	char both[900], *text;
	const char *name[2] = { "guest1", "guest2" };

	start_agent(1);
	start_agent(2);
	assert_int_equal(wait_bounded(tlib_sim_spawn(&sim, (char *[]){ (char *)tlib_tcx(),
		"record", "--xen", "-A", "guest1", "-A", "guest2", "--duration", "3", "-o",
		tlib_path(outdir, "trace.dat"), "--summary-json", js, "--guest-max-bytes", "16K",
		NULL }, -1, "/dev/null", err), 120), 0);
	text = tlib_slurp(js, NULL);
	assert_non_null(text);
	for (int i = 0; i < 2; i++) {
		const char *g = guest_json(text, name[i]);

		print_message("# %s: %lld pages, %lld bytes received\n", name[i],
			      (long long)tlib_json_num(g, "\"pages\""),
			      (long long)tlib_json_num(g, "\"bytes\""));
		if (!guest_has(g, "\"limit\": \"max-bytes\""))
			fail_msg("%s did not reach the limit: %s", name[i], text);
		assert_true(tlib_json_num(g, "\"pages\"") * 4096 <= 16384);
		assert_true(tlib_json_num(g, "\"pages\"") > 0);
		assert_true(guest_has(g, "\"died\": false"));
	}
	assert_non_null(strstr(text, "\"guest_max_bytes\": 16384"));
	assert_true(tlib_json_num(text, "\"records\"") > 0);
	free(text);
	snprintf(both, sizeof(both), "-i %s/trace-guest1.dat -i %s/trace-guest2.dat", outdir,
		 outdir);
	stock_reads(both);
}

/* guest1 has 2 vCPUs: its TCP agent claims 2, one more than allowed. */
static void test_max_cpus(void **state)
{
	char port[16], spec[48], tdir[400], log[460], *err = tlib_path(outdir, "../err");
	char *argv[] = { (char *)tlib_tcx(), "agent", "-N", "127.0.0.1", "-p", port,
			 "--insecure", "--tracing-dir", tdir, NULL };
	int p, fd;

	assert_int_equal(tlib_sim_boot(&sim, 1, "sched/sched_switch"), 0);
	p = tlib_free_port();
	assert_true(p > 0);
	snprintf(port, sizeof(port), "%d", p);
	snprintf(spec, sizeof(spec), "127.0.0.1:%s", port);
	snprintf(tdir, sizeof(tdir), "%s/dom1/tracing", sim.dir);
	snprintf(log, sizeof(log), "%s/agent-tcp.log", sim.tmp);
	agents[nagents++] = tlib_sim_spawn(&sim, argv, 1, "/dev/null", log);
	fd = tlib_connect_wait(p, 5000);
	if (fd < 0)
		fail_msg("the agent does not listen on %s (see %s)", port, log);
	close(fd);
	assert_int_equal(wait_bounded(tlib_sim_spawn(&sim, (char *[]){ (char *)tlib_tcx(),
		"record", "--xen", "-q", "--duration", "1", "-o", tlib_path(outdir, "trace.dat"),
		"-A", spec, "--guest-max-cpus", "1", NULL }, -1, "/dev/null", err), 60), 1);
	assert_true(tlib_file_has(err, "the agent claims 2 CPUs, more than --guest-max-cpus 1"));
	assert_int_equal(tlib_dir_entries(outdir), 0);
}

static const char *const old_names[] = {
	"trace.dat", "trace-dom0.dat", "raw.bin", "trace-guest1.dat",
};

/* Files of an earlier run, each holding its own name. */
static void put_old_files(void)
{
	for (size_t i = 0; i < sizeof(old_names) / sizeof(old_names[0]); i++)
		assert_int_equal(tlib_write_file(tlib_path(outdir, old_names[i]), old_names[i]), 0);
}

/* The earlier run's files, untouched, and nothing else. */
static void assert_old_files(void)
{
	DIR *d = opendir(outdir);
	struct dirent *e;
	int n = 0;

	for (size_t i = 0; i < sizeof(old_names) / sizeof(old_names[0]); i++) {
		char *text = tlib_slurp(tlib_path(outdir, old_names[i]), NULL);

		if (!text || strcmp(text, old_names[i]))
			fail_msg("%s was changed or removed by a start that failed", old_names[i]);
		free(text);
	}
	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	assert_int_equal(n, (int)(sizeof(old_names) / sizeof(old_names[0])));
}

/*
 * A start that fails (dom0's event unknown, after guest1's file was made;
 * a guest that misses its open deadline) leaves the files of an earlier
 * run whole; a run that starts replaces them.
 */
static void test_failed_start_keeps_files(void **state)
{
	char *err = tlib_path(outdir, "../err"), *js = tlib_path(outdir, "../sum.json");
	char *out = tlib_path(outdir, "trace.dat"), *raw = tlib_path(outdir, "raw.bin");
	char spec[48], guests[460], *text;
	int fd;

	start_agent(1);
	put_old_files();
	assert_int_equal(wait_bounded(tlib_sim_spawn(&sim, (char *[]){ (char *)tlib_tcx(),
		"record", "--xen", "-q", "--duration", "1", "-o", out, "--raw", raw,
		"-e", "sched:no_such_event", "-A", "guest1", "--summary-json", js, NULL }, -1, "/dev/null", err),
		60), 1);
	assert_true(tlib_file_has(err, "no_such_event"));
	assert_old_files();
	text = tlib_slurp(js, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"started\": false"));
	assert_non_null(strstr(text, "no_such_event"));
	free(text);

	fd = silent_peer(spec, sizeof(spec));
	assert_int_equal(wait_bounded(tlib_sim_spawn(&sim, (char *[]){ (char *)tlib_tcx(),
		"record", "--xen", "-q", "--duration", "1", "-o", out, "--raw", raw, "-A", "guest1",
		"-A", spec, "--guest-open-timeout", "1", NULL }, -1, "/dev/null", err), 60), 1);
	close(fd);
	assert_true(tlib_file_has(err, "--guest-open-timeout"));
	assert_old_files();

	assert_int_equal(wait_bounded(tlib_sim_spawn(&sim, (char *[]){ (char *)tlib_tcx(),
		"record", "--xen", "-q", "--duration", "1", "-o", out, "--raw", raw, "-A", "guest1",
		NULL }, -1, "/dev/null", err), 60), 0);
	for (size_t i = 0; i < sizeof(old_names) / sizeof(old_names[0]); i++) {
		struct stat st;

		assert_int_equal(stat(tlib_path(outdir, old_names[i]), &st), 0);
		if (st.st_size <= (off_t)strlen(old_names[i]))
			fail_msg("%s was not replaced by the run", old_names[i]);
	}
	snprintf(guests, sizeof(guests), "-i %s/trace-guest1.dat", outdir);
	stock_reads(guests);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stop_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_second_signal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_cpus, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_start_keeps_files, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("record-limits", tests, NULL, NULL);
}
