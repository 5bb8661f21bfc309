// SPDX-License-Identifier: GPL-2.0
/*
 * The stock trace-cmd 3.1.6 host with per-guest options against our TCP
 * agent (`trace-cmd-xen agent -N 127.0.0.1 --insecure`):
 *
 *   trace-cmd record -d --no-filter --tsync-interval -1 -o X.dat \
 *	-e sched:sched_switch -A 127.0.0.1:PORT GUEST-OPTIONS
 *
 * On this machine's tracefs: a filter (-f) and an exclusion (-v) shown in
 * the stock report against the host's own unfiltered file, -T's stacks, -m's
 * limit; the function tracers where this kernel allows them, else the
 * agent's refusal naming the file (and a "# " line saying so). On a xensim
 * guest kernel: a filter that drops events (the guest file against the
 * simulator's truth, and a control session without it), function_graph
 * with -g and function with -l read by the stock report.
 *
 * Usage: test-agent-record AGENT_BINARY CONF
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
#include <unistd.h>

#include <cmocka.h>

#include "tlib.h"

#define TRACE_CMD	"/usr/bin/trace-cmd"

static const char *agent_bin, *conf;
static char dir[64];

struct agent_proc {
	pid_t pid;
	unsigned int port;
	char log[128];
};

/* what a failed test leaves running, for its teardown */
static struct agent_proc *running;
static struct tlib_sim sim;

static void start_agent(struct agent_proc *a, const char *tracing_dir)
{
	char port[16], tdir[512];
	char *argv[] = { (char *)agent_bin, "agent", "-N", "127.0.0.1", "-p", port,
			 "--insecure", tracing_dir ? "--tracing-dir" : NULL, tdir, NULL };
	struct tlib_spawn_opts so = { .cwd = dir };
	int p = tlib_free_port();

	assert_true(p > 0);
	a->port = (unsigned int)p;
	snprintf(port, sizeof(port), "%u", a->port);
	snprintf(tdir, sizeof(tdir), "%s", tracing_dir ? tracing_dir : "");
	snprintf(a->log, sizeof(a->log), "%s/agent-%u.log", dir, a->port);
	so.out = so.err = a->log;
	a->pid = tlib_spawn(argv, &so);
	assert_true(a->pid > 0);
	running = a;
	for (int i = 0; i < 200 && tlib_count_lines(a->log, "listening on port") <= 0; i++)
		usleep(50 * 1000);
	assert_int_equal(tlib_count_lines(a->log, "listening on port"), 1);
}

static void stop_agent(struct agent_proc *a)
{
	int status = -1;

	kill(a->pid, SIGTERM);
	for (int i = 0; i < 200; i++) {
		if (waitpid(a->pid, &status, WNOHANG) == a->pid)
			break;
		usleep(50 * 1000);
	}
	if (!WIFEXITED(status)) {
		kill(a->pid, SIGKILL);
		waitpid(a->pid, &status, 0);
	}
	running = NULL;
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Sessions that started tracing or were refused, from the agent's log. */
static int marks(const struct agent_proc *a)
{
	return tlib_count_lines(a->log, ": tracing ") + tlib_count_lines(a->log, " refused: ");
}

/*
 * Stock record against @a with @guest_opts for about @ms once the session
 * is up (or refused), then Ctrl-C. Returns whether the agent traced.
 */
/* run (by sh) once the agent traces, before the wait; NULL: none */
static const char *during;

static bool record(const struct agent_proc *a, const char *out, const char *guest_opts,
		   int ms)
{
	char cmd[1024], log[160];
	int seen = marks(a), traced = tlib_count_lines(a->log, ": tracing ");
	struct tlib_spawn_opts so = { .cwd = dir };
	pid_t pid;

	snprintf(log, sizeof(log), "%s/%s.log", dir, out);
	so.out = so.err = log;
	snprintf(cmd, sizeof(cmd), "exec " TRACE_CMD " record -d --no-filter "
		 "--tsync-interval -1 -o %s.dat -e sched:sched_switch "
		 "-A 127.0.0.1:%u %s", out, a->port, guest_opts);
	{
		char *argv[] = { "/bin/sh", "-c", cmd, NULL };

		pid = tlib_spawn(argv, &so);
	}
	assert_true(pid > 0);
	for (int i = 0; i < 400 && marks(a) == seen; i++)
		usleep(50 * 1000);
	assert_int_equal(marks(a), seen + 1);
	if (tlib_count_lines(a->log, ": tracing ") > traced) {
		if (during)
			assert_int_equal(tlib_sh("%s", during), 0);
		usleep(ms * 1000);
	}
	kill(pid, SIGINT);
	tlib_wait(pid);
	return tlib_count_lines(a->log, ": tracing ") > traced;
}

/* The stock report of @file into @out (in dir); 0 if it read it. */
static int report(const char *file, const char *out)
{
	return tlib_sh("cd %s && " TRACE_CMD " report -i %s > %s 2>&1", dir, file, out);
}

static int count(const char *file, const char *needle)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return tlib_count_lines(path, needle);
}

/* Lines of @file matching the extended regex @re. */
static int count_re(const char *file, const char *re)
{
	char out[32];

	if (tlib_capture(out, sizeof(out), "grep -cE '%s' %s/%s || true", re, dir, file))
		return -1;
	return atoi(out);
}

/* sched_switch away from an idle task (prev_pid 0), as the stock report
 * prints it: "swapper/N:0 [prio] R ==> ..." */
#define FROM_IDLE	"sched_switch: +swapper/[0-9]+:0 \\["

/* The last line of @a's log with "refused", into @why. */
static void refusal(const struct agent_proc *a, char *why, size_t len)
{
	char line[1024];
	FILE *f = fopen(a->log, "r");

	why[0] = 0;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " refused: "))
			snprintf(why, len, "%s", strstr(line, " refused: ") + 10);
	fclose(f);
	why[strcspn(why, "\n")] = 0;
}

/* ---- this machine's tracefs ---- */

static void test_filter_exclude_stack(void **state)
{
	struct agent_proc a;

	char *loop[] = { "/bin/sh", "-c", "while :; do sleep 0.01; done", NULL };
	char opts[128], re[64], cmd[400];
	pid_t sleeper = tlib_spawn(loop, NULL);

	assert_true(sleeper > 0);
	start_agent(&a, NULL);
	/* -f: no switch away from a shell that sleeps 100 times a second
	 * reaches the file, while the host's own file of the same kernel has
	 * them */
	snprintf(opts, sizeof(opts), "-e sched:sched_switch -f 'prev_pid!=%d' -T",
		 (int)sleeper);
	snprintf(re, sizeof(re), "sched_switch: +[^ ]*:%d \\[", (int)sleeper);
	assert_true(record(&a, "f", opts, 1500));
	kill(sleeper, SIGKILL);
	tlib_wait(sleeper);
	/* the filter arrived as one word */
	snprintf(opts, sizeof(opts), "-f prev_pid!=%d -T", (int)sleeper);
	assert_int_equal(tlib_count_lines(a.log, opts), 1);
	assert_int_equal(report("f-127.0.0.1.dat", "f-guest.txt"), 0);
	assert_int_equal(report("f.dat", "f-host.txt"), 0);
	assert_true(count("f-guest.txt", "sched_switch:") > 0);
	assert_int_equal(count_re("f-guest.txt", re), 0);
	assert_true(count_re("f-host.txt", re) > 0);
	/* -T: a kernel stack after the events */
	assert_true(count("f-guest.txt", "kernel_stack:") > 0);
	assert_int_equal(count("f-host.txt", "kernel_stack:"), 0);

	/* -v: sched without sched_wakeup (sched_waking comes with each) */
	assert_true(record(&a, "v", "-e sched -v -e sched_wakeup -e irq", 1500));
	assert_int_equal(report("v-127.0.0.1.dat", "v.txt"), 0);
	assert_true(count("v.txt", "sched_waking:") > 0);
	assert_int_equal(count("v.txt", "sched_wakeup:"), 0);
	assert_int_equal(count("v.txt", "kernel_stack:"), 0);

	/*
	 * -m 64 with -s and --verbose: the agent's ring (buffer_size_kb 64,
	 * overwriting) keeps the newest 16 pages per CPU and the reader
	 * page, sent once tracing is off: of 20000 numbered markers written
	 * into its instance, the last is in the file and the first are not.
	 */
	/*
	 * One writer pinned to CPU 0 fills one ring in order; a rare event
	 * keeps a busy machine's scheduling from overwriting the markers.
	 */
	snprintf(cmd, sizeof(cmd), "taskset -p -c 0 $$ >/dev/null || exit 1; "
		 "for f in /sys/kernel/tracing/instances/"
		 "tcx-agent-%d-*/trace_marker; do m=$f; done; i=0; "
		 "while [ $i -lt 20000 ]; do echo \"tcxm $i\" > $m; i=$((i+1)); done",
		 (int)a.pid);
	during = cmd;
	assert_true(record(&a, "m", "-e sched:sched_process_exec -m 64 -s 20000 --verbose=2",
			   1500));
	during = NULL;
	assert_int_equal(tlib_count_lines(a.log, "--verbose 2"), 1);
	assert_int_equal(report("m-127.0.0.1.dat", "m.txt"), 0);
	{
		char line[256], *p;
		long cpus = sysconf(_SC_NPROCESSORS_CONF);
		unsigned long pages = 0;
		struct tlib_markers m;
		FILE *f = fopen(a.log, "r");

		assert_non_null(f);
		while (fgets(line, sizeof(line), f))
			if ((p = strstr(line, "pages sent")))
				pages = strtoul(strrchr(line, ':') + 2, NULL, 10);
		fclose(f);
		snprintf(line, sizeof(line), "%s/m.txt", dir);
		assert_int_equal(tlib_markers(line, &m), 0);
		printf("# -m 64: %lu pages sent, markers %ld..%ld (%ld of 20000)\n", pages,
		       m.first, m.last, m.n);
		assert_true(pages > 0);
		assert_true(pages <= 17 * (unsigned long)cpus);
		assert_int_equal(m.last, 19999);
		assert_true(m.first > 10000);
		/* the newest, none missing in between */
		assert_int_equal(m.n, m.last - m.first + 1);
		assert_true(tlib_count_lines(a.log, "-m 64 KiB: sent the newest") > 0);
	}
	assert_int_equal(tlib_count_lines(a.log, "session failed"), 0);
	stop_agent(&a);
}

/*
 * The function tracers: traced where this kernel lets our instance have
 * them, else refused with the file named. Both are checked, whichever
 * this kernel does.
 */
static void tracer_case(struct agent_proc *a, const char *out, const char *opts,
			const char *traced_needle, const char *const refusals[])
{
	char rep[64], dat[64], why[512];

	snprintf(dat, sizeof(dat), "%s-127.0.0.1.dat", out);
	snprintf(rep, sizeof(rep), "%s.txt", out);
	if (record(a, out, opts, 1000)) {
		assert_int_equal(report(dat, rep), 0);
		if (count(rep, traced_needle) <= 0)
			fail_msg("%s: traced, but no \"%s\" in the report", opts, traced_needle);
		printf("# %s: traced by this kernel\n", opts);
		return;
	}
	refusal(a, why, sizeof(why));
	for (int i = 0; refusals[i]; i++)
		if (strstr(why, refusals[i])) {
			printf("# %s: this kernel denies it; the agent refused: %s\n",
			       opts, why);
			return;
		}
	fail_msg("%s: neither traced nor refused clearly: \"%s\"", opts, why);
}

static void test_function_tracers(void **state)
{
	static const char *const function[] = {
		"-p function: the kernel refused it in current_tracer",
		"/proc/sys/kernel/ftrace_enabled is 0 and this kernel denies",
		"-p function: this kernel has no such tracer",
		"-p function: this kernel offers that tracer in its top instance only",
		NULL };
	static const char *const filter[] = {
		"this kernel denies writes to set_ftrace_filter",
		"-l: this kernel has no set_ftrace_filter", NULL };
	static const char *const graph[] = {
		"-p function_graph: this kernel has no such tracer",
		"-p function_graph: this kernel offers that tracer in its top instance only",
		"-p function_graph: the kernel refused it in current_tracer",
		"-g schedule: this kernel denies writes to", NULL };
	struct agent_proc a;

	start_agent(&a, NULL);
	tracer_case(&a, "fn", "-e irq -p function", "function:", function);
	tracer_case(&a, "fl", "-e irq -p function -l schedule", "schedule", filter);
	tracer_case(&a, "fg", "-p function_graph -g schedule", "schedule", graph);
	/* a refused session leaves the agent serving */
	assert_true(record(&a, "after", "-e irq", 500));
	stop_agent(&a);
}

/* ---- a xensim guest's kernel ---- */

static void sim_agent(struct agent_proc *a)
{
	char tdir[400];

	assert_int_equal(tlib_sim_start(&sim, conf), 0);
	/* its boot script: the clock our recorder asks for, no event on */
	assert_int_equal(tlib_sim_put(&sim, 1, "trace_clock", "x86-tsc\n"), 0);
	snprintf(tdir, sizeof(tdir), "%s/dom1/tracing", sim.dir);
	start_agent(a, tdir);
}

/* Sum of one counter of the truth's last gstats line per vCPU of dom1. */
static unsigned long truth_sum(const char *key)
{
	char path[400], line[512], pat[32];
	unsigned long v[8] = { 0 }, sum = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/truth", sim.dir);
	snprintf(pat, sizeof(pat), " %s=", key);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned int vcpu;
		char *p = strstr(line, pat);

		if (strncmp(line, "gstats domid=1 ", 15) || !p ||
		    sscanf(line, "gstats domid=1 vcpu=%u", &vcpu) != 1 || vcpu >= 8)
			continue;
		v[vcpu] = strtoul(p + strlen(pat), NULL, 10);
	}
	fclose(f);
	for (int i = 0; i < 8; i++)
		sum += v[i];
	return sum;
}

static void test_sim_filter(void **state)
{
	struct agent_proc a;
	int n;

	sim_agent(&a);
	/* first, on a kernel that traced nothing before (a later session gets
	 * what the simulator wrote before the last one's end, see
	 * docs/xensim.md) */
	assert_true(record(&a, "s", "-C x86-tsc -e sched -f 'prev_pid>0' "
			   "-v -e sched_wakeup", 1500));
	/* control: without a filter, switches away from idle are there */
	assert_true(record(&a, "c", "-C x86-tsc -e sched", 1000));
	assert_int_equal(report("c-127.0.0.1.dat", "c.txt"), 0);
	assert_true(count_re("c.txt", FROM_IDLE) > 0);
	assert_true(count("c.txt", "sched_wakeup:") > 0);
	stop_agent(&a);
	assert_int_equal(tlib_sim_stop(&sim), 0);
	assert_int_equal(report("s-127.0.0.1.dat", "s.txt"), 0);
	n = count("s.txt", "sched_switch:");
	assert_true(n > 0);
	assert_int_equal(count_re("s.txt", FROM_IDLE), 0);
	assert_int_equal(count("s.txt", "sched_wakeup:"), 0);
	/* the simulator dropped what the filter rejected, and produced at
	 * least what the file holds */
	printf("# guest file: %d sched_switch; truth: %lu events, %lu filtered\n", n,
	       truth_sum("events"), truth_sum("filtered"));
	assert_true(truth_sum("filtered") > 0);
	assert_true(truth_sum("events") >= (unsigned long)n);
	/* and the agent wrote the kernel back as it was */
	assert_int_equal(tlib_sh("grep -qx none %s/dom1/tracing/events/sched/sched_switch/filter",
				 sim.dir), 0);
	assert_int_equal(tlib_sh("grep -qx 0 %s/dom1/tracing/events/sched/sched_switch/enable",
				 sim.dir), 0);
	tlib_sim_cleanup(&sim);
}

static void test_sim_function_graph(void **state)
{
	struct agent_proc a;

	sim_agent(&a);
	assert_true(record(&a, "g", "-C x86-tsc -p function_graph -g vfs_write "
			   "--max-graph-depth 2", 1500));
	assert_true(record(&a, "l", "-C x86-tsc -p function -l 'vfs_*'", 1000));
	stop_agent(&a);
	assert_int_equal(tlib_sim_stop(&sim), 0);
	assert_int_equal(report("g-127.0.0.1.dat", "g.txt"), 0);
	/* the graph under vfs_write, named from the guest's symbols */
	assert_true(count("g.txt", "|  vfs_write() {") > 0);
	assert_true(count("g.txt", "|    rw_verify_area();") > 0);
	assert_true(count("g.txt", "|    __fsnotify_parent();") > 0);
	assert_true(count("g.txt", "funcgraph_exit:") > 0);
	assert_int_equal(count("g.txt", "vfs_read"), 0);
	assert_int_equal(count("g.txt", "schedule"), 0);
	assert_int_equal(count("g.txt", "UNKNOWN EVENT"), 0);
	/* -l: the function tracer within set_ftrace_filter */
	assert_int_equal(report("l-127.0.0.1.dat", "l.txt"), 0);
	assert_true(count("l.txt", "function:") > 0);
	assert_true(count("l.txt", "vfs_read") > 0);
	assert_true(count("l.txt", "vfs_write") > 0);
	/* (its first pages may hold the graph session's last records) */
	assert_int_equal(count_re("l.txt", "function: +(rw_verify_area|schedule|__schedule|"
				  "pick_next_task_fair|update_curr|__fsnotify_parent)"), 0);
	assert_int_equal(tlib_sh("grep -q 'gtracer domid=1 tracer=function_graph' %s/truth",
				 sim.dir), 0);
	assert_true(truth_sum("functions") > 0);
	assert_int_equal(tlib_sh("grep -qx nop %s/dom1/tracing/current_tracer", sim.dir), 0);
	tlib_sim_cleanup(&sim);
}

/* Every regular file of the simulated kernel (its FIFOs are streams) with
 * its checksum, sorted, into @out (in dir). */
static void snapshot(const char *out)
{
	assert_int_equal(tlib_sh("cd %s/dom1/tracing && find . -type f | LC_ALL=C sort | "
				 "xargs md5sum > %s/%s", sim.dir, dir, out), 0);
}

/*
 * A kernel whose instances lack function_graph and whose top instance has
 * it (Linux 6.1): the agent records in the top instance while it is idle,
 * writes every top file back, and refuses when a tracer uses it.
 */
static void test_sim_top_instance(void **state)
{
	struct agent_proc a;
	char tdir[400], tconf[160];

	snprintf(tconf, sizeof(tconf), "%s/top.conf", dir);
	assert_int_equal(tlib_sh("cat %s > %s && echo 'instance_tracers = function nop' >> %s",
				 conf, tconf, tconf), 0);
	assert_int_equal(tlib_sim_start(&sim, tconf), 0);
	assert_int_equal(tlib_sim_put(&sim, 1, "trace_clock", "x86-tsc\n"), 0);
	assert_int_equal(tlib_sh("grep -qx 'function nop' %s/dom1/tracing/instance_tracers",
				 sim.dir), 0);
	snprintf(tdir, sizeof(tdir), "%s/dom1/tracing", sim.dir);
	start_agent(&a, tdir);
	snapshot("top-before.txt");
	assert_true(record(&a, "t", "-C x86-tsc -p function_graph -g vfs_write", 1500));
	assert_int_equal(tlib_count_lines(a.log, "in the top instance"), 1);
	snapshot("top-after.txt");
	assert_int_equal(tlib_sh("cd %s && diff top-before.txt top-after.txt | sed 's/^/# /'; "
				 "cmp -s top-before.txt top-after.txt", dir), 0);
	/* a tracer the instances have: no top instance */
	assert_true(record(&a, "i", "-C x86-tsc -p function -l 'vfs_*'", 500));
	assert_int_equal(tlib_count_lines(a.log, "in the top instance"), 1);
	/* busy: someone's tracer, then someone's event, in the top instance */
	assert_int_equal(tlib_sim_put(&sim, 1, "current_tracer", "function\n"), 0);
	snapshot("busy-before.txt");
	assert_false(record(&a, "b", "-C x86-tsc -p function_graph -g vfs_write", 0));
	assert_int_equal(tlib_count_lines(a.log, "the top instance is in use: its "
					  "current_tracer is function"), 1);
	snapshot("busy-after.txt");
	assert_int_equal(tlib_sh("cd %s && diff busy-before.txt busy-after.txt | sed 's/^/# /'; "
				 "cmp -s busy-before.txt busy-after.txt", dir), 0);
	assert_int_equal(tlib_sim_put(&sim, 1, "current_tracer", "nop\n"), 0);
	assert_int_equal(tlib_sim_put(&sim, 1, "events/sched/sched_wakeup/enable", "1\n"), 0);
	assert_false(record(&a, "e", "-C x86-tsc -p function_graph -g vfs_write", 0));
	assert_int_equal(tlib_count_lines(a.log, "in use: event sched:sched_wakeup "
					  "is enabled"), 1);
	assert_int_equal(tlib_sim_put(&sim, 1, "events/sched/sched_wakeup/enable", "0\n"), 0);
	/* and idle again: taken again */
	assert_true(record(&a, "t2", "-C x86-tsc -p function_graph -g vfs_write", 500));
	assert_int_equal(tlib_count_lines(a.log, "in the top instance"), 2);
	stop_agent(&a);
	assert_int_equal(tlib_sim_stop(&sim), 0);
	assert_int_equal(report("t-127.0.0.1.dat", "t.txt"), 0);
	assert_true(count("t.txt", "|  vfs_write() {") > 0);
	assert_true(count("t.txt", "funcgraph_entry:") > 0);
	assert_true(count("t.txt", "funcgraph_exit:") > 0);
	assert_int_equal(count("t.txt", "UNKNOWN EVENT"), 0);
	assert_int_equal(tlib_sh("grep -qx nop %s/dom1/tracing/current_tracer", sim.dir), 0);
	tlib_sim_cleanup(&sim);
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/tcx-agent-rec-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	return access("/sys/kernel/tracing/instances", W_OK);
}

/* A failed test's agent and simulator. */
static int test_teardown(void **state)
{
	if (running && running->pid > 0) {
		kill(running->pid, SIGKILL);
		waitpid(running->pid, NULL, 0);
	}
	running = NULL;
	if (sim.pid > 0 || sim.tmp[0])
		tlib_sim_cleanup(&sim);
	return 0;
}

static int teardown(void **state)
{
	if (!getenv("TCX_KEEP"))
		return tlib_rmtree(dir);
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_filter_exclude_stack, test_teardown),
		cmocka_unit_test_teardown(test_function_tracers, test_teardown),
		cmocka_unit_test_teardown(test_sim_filter, test_teardown),
		cmocka_unit_test_teardown(test_sim_function_graph, test_teardown),
		cmocka_unit_test_teardown(test_sim_top_instance, test_teardown),
	};

	if (argc < 3) {
		fprintf(stderr, "usage: %s AGENT_BINARY CONF\n", argv[0]);
		return 2;
	}
	agent_bin = realpath(argv[1], NULL);
	conf = argv[2];
	if (!agent_bin) {
		perror(argv[1]);
		return 2;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	return cmocka_run_group_tests_name("agent-record", tests, setup, teardown);
}
