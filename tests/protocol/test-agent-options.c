// SPDX-License-Identifier: GPL-2.0
/*
 * The agent's allow-list of record options, and where its metadata ends.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent-internal.h"
#include "tcx-util.h"
#include "tdat.h"

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void test_allowed(void **state)
{
	const char *argv[] = { "-C", "local", "-e", "sched:sched_switch",
			       "-eirq", "-e", "sched:*", "-b", "4096",
			       "--file-version", "6", "-Cx86-tsc",
			       "--file-version=7", "-b1", "--compression", "none",
			       "--compression=none" };
	struct agent_record_opts o;

	assert_int_equal(agent_parse_record_args(N(argv), argv, &o), 0);
	assert_int_equal(o.nr_events, 3);
	assert_string_equal(o.events[0], "sched:sched_switch");
	assert_string_equal(o.events[1], "irq");
	assert_string_equal(o.events[2], "sched:*");
	assert_int_equal(o.buffer_kb, 1);
	assert_string_equal(o.clock, "x86-tsc");
	assert_int_equal(o.file_version, 7);

	assert_int_equal(agent_parse_record_args(0, NULL, &o), 0);
	assert_int_equal(o.nr_events, 0);
	assert_int_equal(o.file_version, 6);
}

static void test_refused(void **state)
{
	static const struct {
		const char *argv[3];
		int argc;
		int ret;
		const char *why;
	} cases[] = {
		{ { "-P", "1" }, 2, -EPERM, "\"-P\" is not allowed" },
		{ { "-o", "/etc/passwd" }, 2, -EPERM, "not allowed" },
		{ { "--temp", "/tmp" }, 2, -EPERM, "not allowed" },
		{ { "-d" }, 1, -EPERM, "not allowed" },
		{ { "--file-versionX" }, 1, -EPERM, "not allowed" },
		{ { "sh", "-c", "reboot" }, 3, -EPERM, "runs no commands" },
		{ { "-e" }, 1, -EINVAL, "needs an event" },
		{ { "-e", "../../x" }, 2, -EINVAL, "not a system" },
		{ { "-e", "sched:sw/x" }, 2, -EINVAL, "not a system" },
		{ { "-e", "a:b:c" }, 2, -EINVAL, "not a system" },
		{ { "-e", "(.*)" }, 2, -EINVAL, "not a system" },
		{ { "-e", "" }, 2, -EINVAL, "not a system" },
		{ { "-b", "0" }, 2, -EINVAL, "-b takes" },
		{ { "-b", "-5" }, 2, -EINVAL, "-b takes" },
		{ { "-b", "999999999" }, 2, -EINVAL, "-b takes" },
		{ { "-b", "12k" }, 2, -EINVAL, "-b takes" },
		{ { "-C", "../x" }, 2, -EINVAL, "clock" },
		{ { "-C", "LOCAL" }, 2, -EINVAL, "clock" },
		{ { "--file-version", "5" }, 2, -EINVAL, "6 or 7" },
		{ { "-\x1b[2J" }, 1, -EPERM, "\"-?[2J\" is not allowed" },
		{ { "--file-version", "8" }, 2, -EINVAL, "6 or 7" },
		{ { "--compression", "zstd" }, 2, -EINVAL, "only \"none\"" },
		{ { "--compression" }, 1, -EINVAL, "only \"none\"" },
	};
	struct agent_record_opts o;

	for (int i = 0; i < N(cases); i++) {
		int ret = agent_parse_record_args(cases[i].argc, cases[i].argv,
						  &o);

		if (ret != cases[i].ret || !strstr(tcx_error(), cases[i].why))
			fail_msg("case %d: %d \"%s\"", i, ret, tcx_error());
	}
}

static void test_too_many_events(void **state)
{
	const char *argv[2 * (AGENT_MAX_EVENTS + 1)];
	struct agent_record_opts o;

	for (int i = 0; i < N(argv); i += 2) {
		argv[i] = "-e";
		argv[i + 1] = "sched";
	}
	assert_int_equal(agent_parse_record_args(N(argv), argv, &o), -EINVAL);
	assert_non_null(strstr(tcx_error(), "more than"));
}

static const char fmt[] =
	"name: tick\nID: 900\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"tick\"\n";

static void test_meta_length(void **state)
{
	struct tdat_params par = { .version = 6, .max_cpus = 3, .cpus = 3 };
	char path[] = "/tmp/tcx-meta-XXXXXX";
	struct tdat_writer *w;
	uint8_t *buf;
	size_t meta = 0;
	FILE *f;
	long len;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	w = tdat_open(path, &par);
	assert_non_null(w);
	assert_int_equal(tdat_add_event_format(w, "tcx", fmt), 0);
	assert_int_equal(tdat_add_cmdline(w, 1, "init"), 0);
	assert_int_equal(tdat_set_traceid(w, 0x1234), 0);
	assert_int_equal(tdat_start_data(w), 0);
	assert_int_equal(tdat_close(w), 0);
	f = fopen(path, "rb");
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc(len);
	assert_int_equal(fread(buf, 1, len, f), (size_t)len);
	fclose(f);
	unlink(path);

	assert_int_equal(agent_meta_length(buf, len, 6, &meta), 0);
	assert_memory_equal(buf + meta, "flyrecord", 10);
	/* every truncation is refused, never read past */
	for (size_t cut = 0; cut < meta + 10; cut++) {
		uint8_t *t = malloc(cut ? cut : 1);

		memcpy(t, buf, cut);
		assert_int_not_equal(agent_meta_length(t, cut, 6, &meta), 0);
		free(t);
	}
	assert_int_equal(agent_meta_length(buf, len, 7, &meta), -EINVAL);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allowed),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_too_many_events),
		cmocka_unit_test(test_meta_length),
	};

	return cmocka_run_group_tests_name("agent-options", tests, NULL, NULL);
}
