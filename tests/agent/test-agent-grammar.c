// SPDX-License-Identifier: GPL-2.0
/*
 * The allow-list's per-guest record options: every one accepted with good
 * values and refused, with its message, with bad ones; then applied to a
 * simulated kernel directory (files written, refusals naming the file, and
 * everything written back at the end).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <tracefs.h>

#include "agent-internal.h"
#include "tcx-util.h"

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static struct agent_record_opts o;

static int parse(int argc, const char *const *argv)
{
	return agent_parse_record_args(argc, argv, &o);
}

/* What the recorder sends for a guest: its own words, in order. */
static void test_recorder_argv(void **state)
{
	const char *argv[] = {
		"-C", "x86-tsc", "--file-version", "6",
		"-e", "sched", "-f", "prev_pid>0", "-v", "-e", "irq",
		"-p", "function_graph", "-g", "schedule", "-l", "vfs_*",
		"-n", "foo", "--max-graph-depth", "3", "-T", "-s", "1000",
		"-m", "4096", "-b", "2048", "--verbose=2",
	};

	assert_int_equal(parse(N(argv), argv), 0);
	assert_int_equal(o.nr_events, 2);
	assert_string_equal(o.events[0], "sched");
	assert_string_equal(o.filters[0], "prev_pid>0");
	assert_false(o.exclude[0]);
	assert_string_equal(o.events[1], "irq");
	assert_true(o.exclude[1]);
	assert_string_equal(o.filters[1], "");
	assert_int_equal(agent_opts_enabled(&o), 1);
	assert_string_equal(o.tracer, "function_graph");
	assert_int_equal(o.nr_funcs[AGENT_FUNC_GRAPH], 1);
	assert_string_equal(o.funcs[AGENT_FUNC_GRAPH][0], "schedule");
	assert_string_equal(o.funcs[AGENT_FUNC_FILTER][0], "vfs_*");
	assert_string_equal(o.funcs[AGENT_FUNC_NOTRACE][0], "foo");
	assert_int_equal(o.graph_depth, 3);
	assert_true(o.stacktrace);
	assert_int_equal(o.sleep_us, 1000);
	assert_int_equal(o.max_kb, 4096);
	assert_int_equal(o.buffer_kb, 2048);
	assert_int_equal(o.verbose, 2);
	assert_string_equal(o.clock, "x86-tsc");
}

static void test_accepted_forms(void **state)
{
	const char *a1[] = { "-eirq", "-fcommon_pid != 0 && irq < 5", "-pfunction",
			     "-lvfs_read", "-l", "foo.isra.0", "-n*_noinstr",
			     "--max-graph-depth=0", "-s1", "-m1", "--verbose" };
	const char *a2[] = { "--verbose=debug", "-p", "nop" };
	const char *a3[] = { "--verbose", "0", "-e", "sched" };

	assert_int_equal(parse(N(a1), a1), 0);
	assert_string_equal(o.filters[0], "common_pid != 0 && irq < 5");
	assert_string_equal(o.tracer, "function");
	assert_int_equal(o.nr_funcs[AGENT_FUNC_FILTER], 2);
	assert_string_equal(o.funcs[AGENT_FUNC_NOTRACE][0], "*_noinstr");
	assert_int_equal(o.graph_depth, 0);
	assert_int_equal(o.sleep_us, 1);
	assert_int_equal(o.max_kb, 1);
	assert_int_equal(o.verbose, 4);		/* alone: info */
	assert_int_equal(parse(N(a2), a2), 0);
	assert_int_equal(o.verbose, 5);
	/* the stock trace-cmd sends --verbose=0 as two words */
	assert_int_equal(parse(N(a3), a3), 0);
	assert_int_equal(o.verbose, 0);
	assert_int_equal(o.nr_events, 1);
	/* defaults */
	assert_int_equal(parse(0, NULL), 0);
	assert_int_equal(o.graph_depth, -1);
	assert_int_equal(o.verbose, -1);
	assert_string_equal(o.tracer, "");
	for (const char *const *t = (const char *const[]){ "function_graph", "irqsoff",
		"preemptoff", "preemptirqsoff", "wakeup", "wakeup_rt", "wakeup_dl", NULL };
	     *t; t++) {
		const char *a[] = { "-p", *t };

		assert_int_equal(parse(2, a), 0);
		assert_string_equal(o.tracer, *t);
	}
}

static void test_refused(void **state)
{
	static char long_filter[AGENT_MAX_FILTER + 8], long_func[AGENT_FUNC_LEN + 4];
	static const struct {
		const char *argv[4];
		int argc;
		int ret;
		const char *why;
	} cases[] = {
		{ { "-f", "prev_pid>0" }, 2, -EINVAL, "must follow an -e EVENT" },
		{ { "-v", "-e", "irq", "-f" }, 4, -EINVAL, "-f needs a filter" },
		{ { "-v", "-e", "irq" }, 3, 0, "" },
		{ { "-v", "-e", "irq", "-fx" }, 4, -EINVAL, "must follow an -e EVENT" },
		{ { "-e", "sched", "-f", "a\nb" }, 4, -EINVAL, "byte 1 is not printable" },
		{ { "-e", "sched", "-f", "a\x1b[2J" }, 4, -EINVAL, "not printable" },
		{ { "-e", "sched", "-f", "x\xc3\xa9" }, 4, -EINVAL, "not printable" },
		{ { "-e", "sched", "-f", "" }, 4, -EINVAL, "a filter of 1..255 bytes" },
		{ { "-v" }, 1, -EINVAL, "-v must be followed by -e" },
		{ { "-v", "-p", "nop" }, 3, -EINVAL, "-v must be followed by -e" },
		{ { "-p" }, 1, -EINVAL, "-p needs a tracer" },
		{ { "-p", "hwlat" }, 2, -EINVAL, "tracer \"hwlat\" is not allowed" },
		{ { "-p", "mmiotrace" }, 2, -EINVAL, "is not allowed" },
		{ { "-p", "../function" }, 2, -EINVAL, "is not allowed" },
		{ { "-p", "Function" }, 2, -EINVAL, "is not allowed" },
		{ { "-l" }, 1, -EINVAL, "-l needs a function" },
		{ { "-l", "schedule:traceoff" }, 2, -EINVAL, "-l \"schedule:traceoff\" is not a function" },
		{ { "-n", "!schedule" }, 2, -EINVAL, "-n \"!schedule\" is not a function" },
		{ { "-g", "sched ule" }, 2, -EINVAL, "-g \"sched ule\" is not a function" },
		{ { "-g", "" }, 2, -EINVAL, "is not a function" },
		{ { "-l", ":mod:ext4" }, 2, -EINVAL, "is not a function" },
		{ { "-g", "[a-z]*" }, 2, -EINVAL, "is not a function" },
		{ { "--max-graph-depth", "256" }, 2, -EINVAL, "--max-graph-depth takes 0..255" },
		{ { "--max-graph-depth", "-1" }, 2, -EINVAL, "--max-graph-depth takes" },
		{ { "--max-graph-depth" }, 1, -EINVAL, "--max-graph-depth takes" },
		{ { "--max-graph-depthX" }, 1, -EPERM, "not allowed" },
		{ { "-T1" }, 1, -EPERM, "\"-T1\" is not allowed" },
		{ { "-s", "0" }, 2, -EINVAL, "-s takes microseconds, 1..1000000" },
		{ { "-s", "1000001" }, 2, -EINVAL, "-s takes" },
		{ { "-s", "1ms" }, 2, -EINVAL, "-s takes" },
		{ { "-s" }, 1, -EINVAL, "-s takes" },
		{ { "-m", "0" }, 2, -EINVAL, "-m takes a size in KiB per CPU" },
		{ { "-m", "262145" }, 2, -EINVAL, "-m takes" },
		{ { "-m", "4M" }, 2, -EINVAL, "-m takes" },
		{ { "--verbose=7" }, 1, -EINVAL, "--verbose takes 0..6" },
		{ { "--verbose=loud" }, 1, -EINVAL, "--verbose takes" },
		{ { "--verbose=" }, 1, -EINVAL, "--verbose takes" },
		{ { "--verbosex" }, 1, -EPERM, "not allowed" },
		{ { "-P", "1" }, 2, -EPERM, "option \"-P\" is not allowed" },
		{ { "-O", "stacktrace" }, 2, -EPERM, "\"-O\" is not allowed" },
		{ { "-F", "ls" }, 2, -EPERM, "not allowed" },
		{ { "-c" }, 1, -EPERM, "not allowed" },
		{ { "--verbose", "7" }, 2, -EPERM, "runs no commands (got \"7\")" },
		{ { "--verbose", "ls" }, 2, -EPERM, "runs no commands (got \"ls\")" },
		{ { "-e", "sched", "ls" }, 3, -EPERM, "runs no commands" },
	};

	for (int i = 0; i < N(cases); i++) {
		int ret = parse(cases[i].argc, cases[i].argv);

		if (ret != cases[i].ret || !strstr(tcx_error(), cases[i].why))
			fail_msg("case %d (%s): %d \"%s\"", i, cases[i].argv[0], ret,
				 ret ? tcx_error() : "");
	}
	memset(long_filter, 'a', sizeof(long_filter) - 1);
	{
		const char *a[] = { "-e", "sched", "-f", long_filter };

		assert_int_equal(parse(4, a), -EINVAL);
		assert_non_null(strstr(tcx_error(), "1..255 bytes"));
		long_filter[AGENT_MAX_FILTER - 1] = 0;	/* 255: the most */
		assert_int_equal(parse(4, a), 0);
	}
	memset(long_func, 'f', sizeof(long_func) - 1);
	{
		const char *a[] = { "-g", long_func };

		assert_int_equal(parse(2, a), -EINVAL);
		assert_non_null(strstr(tcx_error(), "at most 63"));
	}
}

static void test_too_many_funcs(void **state)
{
	const char *argv[2 * (AGENT_MAX_FUNCS + 1)];

	for (int i = 0; i < N(argv); i += 2) {
		argv[i] = "-l";
		argv[i + 1] = "vfs_read";
	}
	assert_int_equal(parse(N(argv) - 2, argv), 0);
	assert_int_equal(o.nr_funcs[AGENT_FUNC_FILTER], AGENT_MAX_FUNCS);
	assert_int_equal(parse(N(argv), argv), -EINVAL);
	assert_non_null(strstr(tcx_error(), "more than 32 -l functions"));
}

/* ---- applied to a simulated kernel directory ---- */

static char dir[64];

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *get(const char *rel)
{
	static char buf[512];
	char path[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

static const char fmt[] =
	"name: %s\nID: %d\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"x\"\n";

static void mkevent(const char *sys, const char *ev, int id)
{
	char rel[128], text[512];

	snprintf(rel, sizeof(rel), "%s/events/%s", dir, sys);
	mkdir(rel, 0755);
	snprintf(rel, sizeof(rel), "%s/events/%s/%s", dir, sys, ev);
	mkdir(rel, 0755);
	snprintf(text, sizeof(text), fmt, ev, id);
	snprintf(rel, sizeof(rel), "events/%s/%s/format", sys, ev);
	put(rel, text);
	snprintf(rel, sizeof(rel), "events/%s/%s/enable", sys, ev);
	put(rel, "0\n");
	snprintf(rel, sizeof(rel), "events/%s/%s/filter", sys, ev);
	put(rel, "none\n");
}

static int setup_kernel(void **state)
{
	char p[128];

	snprintf(dir, sizeof(dir), "/tmp/tcx-grammar-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(p, sizeof(p), "%s/events", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/per_cpu", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/per_cpu/cpu0", dir);
	mkdir(p, 0755);
	put("per_cpu/cpu0/trace_pipe_raw", "");
	put("events/header_page", "");
	mkevent("sched", "sched_switch", 316);
	mkevent("sched", "sched_wakeup", 318);
	mkevent("irq", "irq_handler_entry", 100);
	put("available_tracers", "function_graph function nop\n");
	put("current_tracer", "nop\n");
	put("set_ftrace_filter", "#### all functions enabled ####\n");
	put("set_ftrace_notrace", "");
	put("set_graph_function", "#### all functions enabled ####\n");
	put("max_graph_depth", "0\n");
	put("buffer_size_kb", "1408\n");
	return tracefs_set_tracing_dir(dir) ? -1 : 0;
}

static int teardown_kernel(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

static int setup_with(const char *const *argv, int argc, struct agent_trace *tr)
{
	assert_int_equal(parse(argc, argv), 0);
	return agent_trace_setup(tr, &o, 1, dir);
}

static void test_apply_and_restore(void **state)
{
	const char *argv[] = { "-e", "sched", "-f", "prev_pid>0", "-v", "-e", "sched_wakeup",
			       "-e", "irq", "-p", "function_graph", "-g", "vfs_write",
			       "-g", "schedule", "-l", "vfs_*", "-n", "rw_verify_area",
			       "--max-graph-depth", "2", "-s", "5000", "-m", "64" };
	struct agent_trace tr;

	if (setup_with(argv, N(argv), &tr))
		fail_msg("setup: %s", tcx_error());
	assert_string_equal(get("events/sched/sched_switch/enable"), "1");
	assert_string_equal(get("events/sched/sched_wakeup/enable"), "0");
	assert_string_equal(get("events/irq/irq_handler_entry/enable"), "1");
	assert_string_equal(get("events/sched/sched_switch/filter"), "prev_pid>0");
	/* the excluded event is not in the metadata's list either */
	assert_int_equal(tr.nr_events, 2);
	for (int i = 0; i < tr.nr_events; i++)
		assert_string_not_equal(tr.events[i].name, "sched_wakeup");
	assert_string_equal(get("current_tracer"), "function_graph");
	assert_string_equal(get("set_graph_function"), "vfs_writeschedule");
	assert_string_equal(get("set_ftrace_filter"), "vfs_*");
	assert_string_equal(get("set_ftrace_notrace"), "rw_verify_area");
	assert_string_equal(get("max_graph_depth"), "2");
	assert_int_equal(tr.sleep_us, 5000);
	assert_int_equal(tr.max_kb, 64);
	/* -m is the ring's size */
	assert_string_equal(get("buffer_size_kb"), "64");
	agent_trace_teardown(&tr);
	/* the kernel as it was */
	assert_string_equal(get("events/sched/sched_switch/enable"), "0\n");
	assert_string_equal(get("events/sched/sched_wakeup/enable"), "0\n");
	assert_string_equal(get("events/sched/sched_switch/filter"), "none\n");
	assert_string_equal(get("current_tracer"), "nop\n");
	/* (a simulated kernel's files are plain text: written back as read) */
	assert_string_equal(get("set_graph_function"), "#### all functions enabled ####\n");
	assert_string_equal(get("set_ftrace_filter"), "#### all functions enabled ####\n");
	assert_string_equal(get("max_graph_depth"), "0\n");
	assert_string_equal(get("buffer_size_kb"), "1408\n");
}

static void test_apply_refusals(void **state)
{
	static const struct {
		const char *argv[4];
		int argc;
		const char *why;
	} cases[] = {
		{ { "-p", "irqsoff" }, 2, "-p irqsoff: this kernel has no such tracer "
					  "(available_tracers: function_graph function nop)" },
		{ { "-e", "nosuch", "-f", "a==1" }, 4, "no event matches \"nosuch\"" },
		{ { "-v", "-e", "nosuch" }, 3, "-v: no event matches \"nosuch\"" },
		{ { "-T" }, 1, "-T: options/stacktrace: this simulated kernel has none" },
	};
	struct agent_trace tr;
	const char *all[] = { "-e", "sched", "-v", "-e", "sched" };

	for (int i = 0; i < N(cases); i++) {
		if (!setup_with(cases[i].argv, cases[i].argc, &tr)) {
			agent_trace_teardown(&tr);
			fail_msg("case %d accepted", i);
		}
		if (!strstr(tcx_error(), cases[i].why))
			fail_msg("case %d: \"%s\"", i, tcx_error());
	}
	assert_int_not_equal(setup_with(all, N(all), &tr), 0);
	assert_non_null(strstr(tcx_error(), "-v excluded every event"));
	/* and nothing stays written */
	assert_string_equal(get("events/sched/sched_switch/enable"), "0\n");
	assert_string_equal(get("current_tracer"), "nop\n");
	/* a kernel without the lists: the file named */
	{
		const char *g[] = { "-p", "function_graph", "-g", "schedule" };
		char p[128];

		snprintf(p, sizeof(p), "%s/set_graph_function", dir);
		rename(p, "/tmp/tcx-grammar-sgf");
		assert_int_not_equal(setup_with(g, N(g), &tr), 0);
		rename("/tmp/tcx-grammar-sgf", p);
		assert_non_null(strstr(tcx_error(), "-g: this kernel has no set_graph_function"));
	}
}

int main(void)
{
	const struct CMUnitTest parse_tests[] = {
		cmocka_unit_test(test_recorder_argv),
		cmocka_unit_test(test_accepted_forms),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_too_many_funcs),
		cmocka_unit_test(test_apply_and_restore),
		cmocka_unit_test(test_apply_refusals),
	};

	return cmocka_run_group_tests_name("agent-grammar", parse_tests,
					   setup_kernel, teardown_kernel);
}
