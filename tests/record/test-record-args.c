// SPDX-License-Identifier: GPL-2.0
/*
 * record --xen's command line (cli/record-args.c): the split into dom0's
 * and each guest's options, --name, the words each agent is sent, Xen's
 * --xen-* knobs, the refusals and their messages, --tsync-interval's
 * milliseconds; then docs/trace-cmd-options.md against the parser: every
 * row's example parses as its row says (and the agent's rows against
 * `trace-cmd-xen agent -h`), every option of the parser's table has its row.
 *
 *   test-record-args DOCS/trace-cmd-options.md TRACE_CMD_XEN
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "recorder.h"
#include "cli.h"

static const char *doc_path, *tcx_path;

/* Parse "record" + @words (NULL-terminated); the result in @a. */
static int parse_v(struct cli_rec_args *a, const char *const *words)
{
	/* the parse points into argv (the command): it outlives the call */
	static char *argv[64];
	int argc = 0;

	argv[argc++] = "record";
	for (; *words && argc < 63; words++)
		argv[argc++] = (char *)*words;
	argv[argc] = NULL;
	return cli_rec_parse(a, argc, argv);
}

#define PARSE(a, ...) parse_v((a), (const char *const[]){ __VA_ARGS__, NULL })

static void assert_words(const struct cli_rec_inst *in, const char *const *want)
{
	int n = 0;

	for (; want[n]; n++) {
		assert_true(n < in->nwords);
		assert_string_equal(in->words[n], want[n]);
	}
	assert_int_equal(in->nwords, n);
}

#define WORDS(in, ...) assert_words((in), (const char *const[]){ __VA_ARGS__, NULL })

static void test_split(void **state)
{
	struct cli_rec_args a;

	(void)state;
	assert_int_equal(PARSE(&a, "--xen", "-e", "sched", "-b", "64", "-A", "guest1", "-e",
			       "irq", "-f", "irq>0", "-b", "128", "--name", "g1", "-A", "2",
			       "-v", "-e", "irq:softirq*", "-p", "function_graph", "-g",
			       "schedule", "--verbose=3", "--max-graph-depth", "4", "-o",
			       "x.dat", "--", "ls", "-l"), CLI_EXIT_OK);
	assert_int_equal(a.ninst, 3);
	/* dom0: sched, 64 KiB */
	assert_int_equal(a.o.dom0->nr_events, 1);
	assert_string_equal(a.o.dom0->events[0].event, "sched");
	assert_null(a.o.dom0->events[0].filter);
	assert_int_equal(a.o.dom0->buffer_kb, 64);
	assert_int_equal(a.o.dom0->verbose, -1);
	assert_null(a.inst[0].words);
	/* the guests: their own words, in order, and --name */
	assert_int_equal(a.o.nr_guests, 2);
	assert_string_equal(a.o.guests[0], "guest1");
	assert_string_equal(a.o.guest_args[0].name, "g1");
	WORDS(&a.inst[1], "-e", "irq", "-f", "irq>0", "-b", "128");
	assert_string_equal(a.o.guests[1], "2");
	assert_null(a.o.guest_args[1].name);
	WORDS(&a.inst[2], "-v", "-e", "irq:softirq*", "-p", "function_graph", "-g", "schedule",
	      "--verbose=warning", "--max-graph-depth", "4");
	assert_int_equal(a.o.guest_args[1].argc, 10);
	assert_true(a.inst[2].ft.events[0].exclude);
	/* global wherever given; the command */
	assert_string_equal(a.o.output, "x.dat");
	assert_string_equal(a.o.command[0], "ls");
	assert_string_equal(a.o.command[1], "-l");
	cli_rec_args_free(&a);

	/* -e before -A is dom0's alone, after it the guest's alone */
	assert_int_equal(PARSE(&a, "--xen", "-e", "sched", "-A", "guest1"), CLI_EXIT_OK);
	assert_int_equal(a.o.dom0->nr_events, 1);
	assert_int_equal(a.inst[1].nwords, 0);
	cli_rec_args_free(&a);
	assert_int_equal(PARSE(&a, "--xen", "-A", "guest1", "-e", "sched"), CLI_EXIT_OK);
	assert_int_equal(a.o.dom0->nr_events, 0);
	WORDS(&a.inst[1], "-e", "sched");
	cli_rec_args_free(&a);
}

static void test_dom0(void **state)
{
	struct cli_rec_args a;

	(void)state;
	assert_int_equal(PARSE(&a, "--xen", "-e", "sched", "-f", "prev_pid>0", "-v", "-e",
			       "sched:sched_wak*", "-l", "a", "-l", "b", "-n", "c", "-T", "-s",
			       "1000", "-m", "512", "-M", "0x3", "-P", "1", "-P", "2", "-c",
			       "--verbose", "-C", "x86-tsc"), CLI_EXIT_OK);
	assert_string_equal(a.o.dom0->events[0].filter, "prev_pid>0");
	assert_false(a.o.dom0->events[0].exclude);
	assert_true(a.o.dom0->events[1].exclude);
	assert_int_equal(a.o.dom0->nr_funcs, 2);
	assert_string_equal(a.o.dom0->funcs[1], "b");
	assert_string_equal(a.o.dom0->notrace[0], "c");
	assert_true(a.o.dom0->stacktrace);
	assert_int_equal(a.o.dom0->sleep_us, 1000);
	assert_int_equal(a.o.dom0->max_kb, 512);
	assert_string_equal(a.o.dom0->cpumask, "3");
	assert_int_equal(a.o.dom0->nr_pids, 2);
	assert_int_equal(a.o.dom0->pids[1], 2);
	assert_true(a.o.dom0->children);
	assert_int_equal(a.o.dom0->verbose, 4);		/* info, as trace-cmd */
	cli_rec_args_free(&a);

	assert_int_equal(PARSE(&a, "--xen", "-F", "-c", "--", "true"), CLI_EXIT_OK);
	assert_true(a.o.dom0->filter_command);
	cli_rec_args_free(&a);
}

static void test_xen_knobs(void **state)
{
	struct cli_rec_args a;

	(void)state;
	assert_int_equal(PARSE(&a, "--xen", "--xen-events", "sched,hvm", "--xen-cpus", "1",
			       "--xen-pages", "64"), CLI_EXIT_OK);
	assert_ptr_equal(a.o.cpumap, a.cpumap);
	assert_int_equal(a.cpumap[0], 2);
	assert_int_equal(a.o.pages, 64);
	cli_rec_args_free(&a);
	/* the same mask as --xen-events as it was */
	{
		uint32_t m;

		assert_int_equal(rec_parse_evt_mask("sched,hvm", &m), 0);
		assert_int_equal(PARSE(&a, "--xen", "--xen-events", "sched,hvm"), CLI_EXIT_OK);
		assert_int_equal(a.o.evt_mask, m);
		cli_rec_args_free(&a);
	}
}

/* A usage error whose message holds @msg. */
static void expect_usage(const char *msg, const char *const *words)
{
	struct cli_rec_args a;
	int ret = parse_v(&a, words);

	if (ret != CLI_EXIT_USAGE || !strstr(a.err, msg))
		fail_msg("%s...: status %d, \"%s\"; want 2 with \"%s\"", words[0], ret, a.err, msg);
	cli_rec_args_free(&a);
}

#define USAGE(msg, ...) expect_usage((msg), (const char *const[]){ __VA_ARGS__, NULL })

static void test_refusals(void **state)
{
	(void)state;
	USAGE("Xen's event classes are --xen-events sched", "--xen", "-M", "sched");
	USAGE("Xen's event classes are --xen-events sched,hvm", "--xen", "-M", "sched,hvm");
	USAGE("not a hex CPU mask", "--xen", "-M", "zz");
	USAGE("-M after -A guest1", "--xen", "-A", "guest1", "-M", "3");
	USAGE("-P after -A guest1", "--xen", "-A", "guest1", "-P", "3");
	USAGE("-F after -A guest1", "--xen", "-A", "guest1", "-F", "--", "true");
	/* the old Xen meanings: -c LIST, -S PAGES */
	USAGE("--xen-cpus", "--xen", "-c", "0-3");
	USAGE("--xen-pages", "--xen", "-S", "64");
	USAGE("-F: filters the command's events, but no command", "--xen", "-F");
	USAGE("only x86-tsc", "--xen", "-C", "local");
	USAGE("only x86-tsc", "--xen", "-A", "g", "-C", "global");
	USAGE("--name web: names a guest: give it after its -A", "--xen", "--name", "web");
	USAGE("-A g is named a already", "--xen", "-A", "g", "--name", "a", "--name", "b");
	USAGE("a filter goes right after the -e", "--xen", "-f", "x>0");
	USAGE("a filter goes right after the -e", "--xen", "-e", "a", "-f", "x", "-f", "y");
	USAGE("--verbose=loud", "--xen", "--verbose=loud");
	USAGE("-b 0: KiB per CPU", "--xen", "-b", "0");
	USAGE("-b 300000: KiB per CPU, 1..262144", "--xen", "-A", "g", "-b", "300000");
	USAGE("--xen is required", "-e", "sched");
	USAGE("--no-dom0 records no dom0 ftrace", "--xen", "--no-dom0", "-e", "sched");
	USAGE("--xen-events bogus: unknown class", "--xen", "--xen-events", "bogus");
	USAGE("--xen-cpus x: not a pCPU list", "--xen", "--xen-cpus", "x");
	USAGE("--xen-pages 0", "--xen", "--xen-pages", "0");
	USAGE("unknown option --bogus", "--xen", "--bogus");
	USAGE("unknown option -Q", "--xen", "-Q");
	USAGE("-e needs a value", "--xen", "-e");
	USAGE("--tsync-interval needs a value", "--xen", "--tsync-interval");
	USAGE("-a: trace-cmd's, not taken", "--xen", "-a");
	USAGE("use -A HOST:PORT", "--xen", "-N", "h:1");
}

static void test_tsync_interval(void **state)
{
	static const struct { const char *arg; int ms; } ok[] = {
		{ "500", 500 }, { "0", 0 }, { "1", 1 }, { "-1", -1 }, { "-20", -1 },
		{ "86400000", 86400000 },
	};
	struct cli_rec_args a;

	(void)state;
	assert_int_equal(PARSE(&a, "--xen"), CLI_EXIT_OK);
	assert_int_equal(a.o.tsync_interval_ms, 0);	/* start and end only */
	cli_rec_args_free(&a);
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(PARSE(&a, "--xen", "-A", "g", "--tsync-interval", ok[i].arg),
				 CLI_EXIT_OK);
		assert_int_equal(a.o.tsync_interval_ms, ok[i].ms);
		cli_rec_args_free(&a);
	}
	USAGE("--tsync-interval 0.5: milliseconds", "--xen", "--tsync-interval", "0.5");
	USAGE("--tsync-interval 1s: milliseconds", "--xen", "--tsync-interval", "1s");
	USAGE("--tsync-interval 86400001", "--xen", "--tsync-interval", "86400001");
}

/* ---- docs/trace-cmd-options.md against the parser ---- */

/* "| a | b | c |" into up to @max trimmed cells, backquotes dropped. */
static int cells(char *line, char **cell, int max)
{
	int n = 0;
	char *p = line, *save = NULL, *c;

	if (*p != '|')
		return 0;
	for (c = strtok_r(p, "|", &save); c && n < max; c = strtok_r(NULL, "|", &save)) {
		char *e;

		while (*c == ' ' || *c == '`')
			c++;
		e = c + strlen(c);
		while (e > c && (e[-1] == ' ' || e[-1] == '`' || e[-1] == '\n'))
			*--e = 0;
		if (*c)
			cell[n++] = c;
	}
	return n;
}

static int where_of(const char *s)
{
	if (!strcmp(s, "dom0 and per guest"))
		return CLI_REC_BOTH;
	if (!strcmp(s, "dom0 only"))
		return CLI_REC_DOM0;
	if (!strcmp(s, "per guest"))
		return CLI_REC_GUEST;
	if (!strcmp(s, "same"))
		return CLI_REC_GLOBAL;
	if (!strcmp(s, "refused"))
		return CLI_REC_REFUSED;
	return -1;
}

/* The example's words, at dom0's place or after -A g, then -- true. */
static int run_example(const char *example, bool guest, struct cli_rec_args *a)
{
	char buf[256], *save = NULL;
	const char *w[32];
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", example);
	w[n++] = "--xen";
	if (guest) {
		w[n++] = "-A";
		w[n++] = "g";
	}
	for (char *t = strtok_r(buf, " ", &save); t && n < 28; t = strtok_r(NULL, " ", &save))
		w[n++] = t;
	w[n++] = "--";
	w[n++] = "true";
	w[n] = NULL;
	return parse_v(a, w);
}

/* @a and @b the same but for backquotes. */
static bool same_text(const char *a, const char *b)
{
	for (;; a++, b++) {
		while (*a == '`')
			a++;
		while (*b == '`')
			b++;
		if (*a != *b)
			return false;
		if (!*a)
			return true;
	}
}

static void check_row(const char *opt, const char *example, int where, const char *notes)
{
	const struct cli_rec_opt *o = NULL;
	struct cli_rec_args a;
	int dom0, guest;

	for (const struct cli_rec_opt *p = cli_rec_opts; p->name; p++)
		if (!strcmp(p->name, opt))
			o = p;
	if (!o)
		fail_msg("%s: in the table, not in the parser's", opt);
	if ((int)o->where != where)
		fail_msg("%s: the table says %d, the parser %d", opt, where, o->where);
	/* a refusal's reason is the parser's, word for word */
	if (where == CLI_REC_REFUSED && !same_text(notes, o->why))
		fail_msg("%s: the table says \"%s\", the parser \"%s\"", opt, notes, o->why);
	dom0 = run_example(example, false, &a);
	if (where == CLI_REC_REFUSED && !(dom0 == CLI_EXIT_USAGE && o->why &&
					  strstr(a.err, o->why)))
		fail_msg("%s: refused, but \"%s\" gives %d: %s", opt, example, dom0, a.err);
	cli_rec_args_free(&a);
	guest = run_example(example, true, &a);
	cli_rec_args_free(&a);
	switch (where) {
	case CLI_REC_BOTH:
	case CLI_REC_GLOBAL:
		if (dom0 || guest)
			fail_msg("%s: \"%s\": dom0 %d, guest %d", opt, example, dom0, guest);
		break;
	case CLI_REC_DOM0:
		if (dom0 || guest != CLI_EXIT_USAGE)
			fail_msg("%s: dom0's only: dom0 %d, guest %d", opt, dom0, guest);
		break;
	case CLI_REC_GUEST:
		if (dom0 != CLI_EXIT_USAGE || guest)
			fail_msg("%s: a guest's only: dom0 %d, guest %d", opt, dom0, guest);
		break;
	case CLI_REC_REFUSED:
		if (guest != CLI_EXIT_USAGE)
			fail_msg("%s: refused, but after -A %d", opt, guest);
		break;
	}
}

static bool listed_in_help(const char *help, const char *opt)
{
	size_t n = strlen(opt);

	for (const char *p = strstr(help, opt); p; p = strstr(p + 1, opt))
		if ((p[n] == ' ' || p[n] == ',' || p[n] == '\n') &&
		    (p == help || p[-1] == ' ' || p[-1] == '\n'))
			return true;
	return false;
}

static void test_doc_table(void **state)
{
	FILE *f = fopen(doc_path, "r"), *h;
	char line[1024], help[8192], cmd[600], *cell[4];
	int section = 0, rows = 0, agent_rows = 0;
	size_t hn;

	(void)state;
	assert_non_null(f);
	snprintf(cmd, sizeof(cmd), "'%s' agent -h", tcx_path);
	h = popen(cmd, "r");
	assert_non_null(h);
	hn = fread(help, 1, sizeof(help) - 1, h);
	help[hn] = 0;
	pclose(h);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "## trace-cmd record", 19))
			section = 1;
		else if (!strncmp(line, "## trace-cmd agent", 18))
			section = 2;
		else if (!strncmp(line, "## ", 3))
			section = 0;
		/* the rows of options, not the header's rule */
		if (!section || cells(line, cell, 4) < 4 || cell[0][0] != '-' ||
		    !cell[0][strspn(cell[0], "-")])
			continue;
		if (where_of(cell[2]) < 0)
			fail_msg("%s: \"%s\" is none of the table's words", cell[0], cell[2]);
		if (section == 1) {
			check_row(cell[0], cell[1], where_of(cell[2]), cell[3]);
			rows++;
			continue;
		}
		/* the agent: what it takes is in its -h, what it refuses is not */
		if ((where_of(cell[2]) == CLI_REC_REFUSED) == listed_in_help(help, cell[0]))
			fail_msg("agent %s: the table says %s, agent -h %s it", cell[0], cell[2],
				 listed_in_help(help, cell[0]) ? "lists" : "does not list");
		agent_rows++;
	}
	fclose(f);
	print_message("# %d record rows, %d agent rows\n", rows, agent_rows);
	assert_int_equal(agent_rows, 5);
	/* every trace-cmd option of the parser's table has its row */
	f = fopen(doc_path, "r");
	assert_non_null(f);
	for (const struct cli_rec_opt *p = cli_rec_opts; p->name; p++) {
		char want[64];
		bool found = false;

		if (p->ours)
			continue;
		snprintf(want, sizeof(want), "| `%s` |", p->name);
		rewind(f);
		while (!found && fgets(line, sizeof(line), f))
			found = !strncmp(line, want, strlen(want));
		if (!found)
			fail_msg("%s: in the parser's table, not in %s", p->name, doc_path);
	}
	fclose(f);
	/* one row per trace-cmd option of the parser's, no more */
	{
		int theirs = 0;

		for (const struct cli_rec_opt *p = cli_rec_opts; p->name; p++)
			theirs += !p->ours;
		assert_int_equal(rows, theirs);
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_dom0),
		cmocka_unit_test(test_xen_knobs),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_tsync_interval),
		cmocka_unit_test(test_doc_table),
	};

	if (argc != 3) {
		fprintf(stderr, "usage: %s trace-cmd-options.md trace-cmd-xen\n", argv[0]);
		return 2;
	}
	doc_path = argv[1];
	tcx_path = argv[2];
	return cmocka_run_group_tests_name("record-args", tests, NULL, NULL);
}
