// SPDX-License-Identifier: GPL-2.0
/*
 * trace-cmd-xen record --xen: the hypervisor and dom0, in dom0, and the
 * guests through their agents. The grammar is in record-args.c.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze.h"
#include "recorder.h"
#include "cli.h"
#include "tcx-util.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: trace-cmd-xen record --xen [OPTIONS] [DOM0 OPTIONS]\n"
		"                                  [-A GUEST [--name NAME] [GUEST OPTIONS]]...\n"
		"                                  [[--] COMMAND...]\n\n"
		"Record the Xen hypervisor (trace.dat), dom0's ftrace (trace-dom0.dat) and\n"
		"each -A guest's ftrace through its agent (trace-GUEST.dat) on one clock,\n"
		"with trace-cmd record's options: those before the first -A are dom0's,\n"
		"those after an -A that guest's. Stops on Ctrl-C, SIGTERM, --duration or\n"
		"when COMMAND exits (then exits with its status).\n\n"
		"dom0's, and each guest's after its -A:\n"
		"  -e EVENT             an event: sys, sys:event or event, globs allowed\n"
		"                       (repeatable; default " REC_DOM0_DEFAULT_EVENT ")\n"
		"  -f FILTER            the filter of the -e before it\n"
		"  -v                   the -e after it are turned off, not on\n"
		"  -p TRACER            a tracer (function, function_graph...)\n"
		"  -l FUNC              trace only FUNC (set_ftrace_filter; repeatable)\n"
		"  -n FUNC              do not trace FUNC (set_ftrace_notrace)\n"
		"  -g FUNC              graph FUNC (set_graph_function)\n"
		"  --max-graph-depth N  function_graph's depth (max_graph_depth)\n"
		"  -T                   a stack trace with every event\n"
		"  -s USECS             read the buffers every USECS (dom0: 200000)\n"
		"  -m KB                keep the newest KB per CPU (the buffer's size; -b ignored)\n"
		"  -b KB                ftrace buffer per CPU in KiB\n"
		"  -C CLOCK             x86-tsc only: the files share that clock\n"
		"  --verbose[=LEVEL]    libtracefs' log level (none..all, 0..6; info)\n"
		"dom0's only:\n"
		"  -M MASK              CPUs to trace, hex (tracing_cpumask)\n"
		"  -P PID               only PID's events (repeatable)\n"
		"  -F                   only COMMAND's events\n"
		"  -c                   with -F or -P, their children's too\n"
		"guests:\n"
		"  -A GUEST             a guest's agent: a Xen domain name or domid (over\n"
		"                       libxenvchan), ip:port (TCP), cid:port or name@cid\n"
		"                       (vsock); its options follow it\n"
		"  --name NAME          after -A: its file is trace-NAME.dat\n"
		"the recording:\n"
		"  --xen                record the hypervisor (required)\n"
		"  -o FILE              the hypervisor's trace.dat (default: trace.dat);\n"
		"                       dom0's and the guests' get -dom0, -GUEST before\n"
		"                       the extension\n"
		"  --xen-events CLASSES Xen event classes: sched, hvm, pv, mem, hw, gen,\n"
		"                       dom0op, shadow, guest, all (joined by ',') or hex\n"
		"  --xen-cpus LIST      pCPUs to trace: all, 0x3 or 0-3,5 (default all)\n"
		"  --xen-pages N        trace buffer pages per pCPU (default %d; Xen fixes\n"
		"                       the size once per boot)\n"
		"  --no-dom0            record the hypervisor only\n"
		"  --tsync PROTOS       time sync offered to guests: xen, ptp, joined by ','\n"
		"                       (default xen,ptp), or none\n"
		"  --tsync-interval MS  also sync every MS milliseconds (default and 0: at\n"
		"                       the start and the end only; negative: no sync)\n"
		"  --tsc2nsec           accepted: every file has TSC2NSEC already\n"
		"  --secret-file FILE   shared secret for TCP/vsock agents (as the agent's)\n"
		"  --guest-open-timeout SEC   each guest's whole open (default %g); a guest\n"
		"                       that misses it fails the recording at its start\n"
		"  --guest-stop-timeout SEC   the stop of all guests together (default %g);\n"
		"                       a guest still stopping then is abandoned, its file\n"
		"                       valid; a second Ctrl-C cuts the stop short\n"
		"  --guest-max-cpus N   CPUs a TCP/vsock agent may claim (default %d; a Xen\n"
		"                       guest may claim its domain's vCPUs)\n"
		"  --guest-max-meta SIZE  a guest's metadata, at most (default %uM)\n"
		"  --guest-max-bytes SIZE each guest's trace data, at most (default: no\n"
		"                       limit); at it that guest's stream ends, not the\n"
		"                       recording. SIZE: bytes, or with K, M, G\n"
		"  --duration SEC       stop after SEC seconds\n"
		"  --raw FILE           also keep the capture in xentrace format (xenalyze)\n"
		"  --summary-json FILE  the closing summary as JSON ('-': stdout)\n"
		"  --session DIR        keep the run together in DIR (created, or empty):\n"
		"                       trace*.dat, summary.json, analysis.json; no -o\n"
		"  --repeat N           with --session and a command: N runs, each in\n"
		"                       DIR/run-1 ... DIR/run-N\n"
		"  --fail-on-loss       exit 3 when anything was lost (Xen's records, a\n"
		"                       ring's missed events or bad pages); a failed\n"
		"                       command's own status wins\n"
		"  -q, --quiet          no status line, no summary\n"
		"  -h, --help           this text\n\n"
		"Other options of trace-cmd record are refused with the reason and what\n"
		"to use instead (docs/trace-cmd-options.md).\n", REC_HV_DEFAULT_PAGES,
		REC_GUEST_OPEN_MS / 1e3, REC_GUEST_STOP_MS / 1e3, REC_GUEST_MAX_CPUS,
		REC_GUEST_MAX_META >> 20);
}

/* DIR is created, or must be an empty directory. */
static int session_dir(const char *dir)
{
	char first[256] = "";
	struct dirent *de;
	DIR *d;

	if (!mkdir(dir, 0777))
		return 0;
	if (errno != EEXIST) {
		cli_err("record", "--session %s: %s", dir, strerror(errno));
		return -1;
	}
	d = opendir(dir);
	if (!d) {
		cli_err("record", "--session %s: %s", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(first, sizeof(first), "%s", de->d_name);
			break;
		}
	}
	closedir(d);
	if (first[0]) {
		cli_err("record", "--session %s: not empty (it holds %s...): a session "
			"keeps one run's files alone; give a new or empty directory", dir,
			first);
		return -1;
	}
	return 0;
}

struct run_files {
	char dir[4096];
	char trace[4200], summary[4200], analysis[4200];
};

/* The session's analysis: analyze --json of the run's trace.dat. */
static int analyze_run(void *ctx, char *why, size_t len)
{
	const struct run_files *rf = ctx;
	struct ana_opts ao = { 0 };
	struct ana_result *r = ana_run(rf->trace, &ao);
	FILE *f;
	int ret;

	if (!r) {
		snprintf(why, len, "%s", tcx_error());
		return -1;
	}
	f = fopen(rf->analysis, "w");
	if (!f) {
		snprintf(why, len, "%s: %s", rf->analysis, strerror(errno));
		ana_free(r);
		return -1;
	}
	ret = ana_print_json(r, f, true);
	if (fclose(f) && !ret)
		ret = -errno;
	ana_free(r);
	if (ret) {
		snprintf(why, len, "%s: %s", rf->analysis, ret == -ENOSPC ? "disk full" :
			 "cannot write it");
		unlink(rf->analysis);
		return -1;
	}
	return 0;
}

static int run_files(struct run_files *rf, const char *dir, int run, int repeat)
{
	int n = repeat > 1 ? snprintf(rf->dir, sizeof(rf->dir), "%s/run-%d", dir, run) :
			     snprintf(rf->dir, sizeof(rf->dir), "%s", dir);

	if (n < 0 || (size_t)n >= sizeof(rf->dir)) {
		cli_err("record", "--session %s: name too long", dir);
		return -1;
	}
	snprintf(rf->trace, sizeof(rf->trace), "%s/trace.dat", rf->dir);
	snprintf(rf->summary, sizeof(rf->summary), "%s/summary.json", rf->dir);
	snprintf(rf->analysis, sizeof(rf->analysis), "%s/analysis.json", rf->dir);
	return repeat > 1 ? session_dir(rf->dir) : 0;
}

/* One run's exit status: the command's failure, then the loss, then 0. */
static int run_status(const struct cli_rec_args *a, const struct rec_record_result *r,
		      int status)
{
	if (a->o.command && status)
		return status;
	if (a->fail_on_loss && (r->lost_xen || r->lost_dom0 || r->lost_guests))
		return CLI_EXIT_LOSS;
	return CLI_EXIT_OK;
}

static void loss_note(const struct cli_rec_args *a, const struct rec_record_result *r,
		      const char *where)
{
	if (!a->fail_on_loss || !(r->lost_xen || r->lost_dom0 || r->lost_guests))
		return;
	cli_err("record", "%s%slost: %llu Xen records, %llu dom0 events, %llu guest "
		"events or pages (--fail-on-loss)", where ? where : "", where ? ": " : "",
		(unsigned long long)r->lost_xen, (unsigned long long)r->lost_dom0,
		(unsigned long long)r->lost_guests);
}

static int record_session(struct cli_rec_args *a)
{
	int exit_status = CLI_EXIT_OK;

	if (session_dir(a->session))
		return CLI_EXIT_FAIL;
	for (int run = 1; run <= a->repeat; run++) {
		struct rec_record_result res;
		struct run_files rf;
		int ret, status = 0, st;

		if (run_files(&rf, a->session, run, a->repeat))
			return CLI_EXIT_FAIL;
		a->o.output = rf.trace;
		a->o.summary_json = rf.summary;
		a->o.session = a->session;
		a->o.run = run;
		a->o.repeat = a->repeat;
		a->o.at_end = analyze_run;
		a->o.at_end_ctx = &rf;
		a->o.at_end_file = rf.analysis;
		a->o.result = &res;
		ret = rec_record(&a->o, &status);
		if (ret) {
			cli_err("record", "%s: %s", rf.dir, tcx_error());
			return CLI_EXIT_FAIL;
		}
		loss_note(a, &res, a->repeat > 1 ? rf.dir : NULL);
		st = run_status(a, &res, status);
		/* the first run that failed gives the status; a loss gives way to it */
		if (st && (exit_status == CLI_EXIT_OK ||
			   (exit_status == CLI_EXIT_LOSS && st != CLI_EXIT_LOSS)))
			exit_status = st;
		if (res.interrupted && run < a->repeat) {
			cli_err("record", "interrupted: %d of %d runs recorded", run, a->repeat);
			return exit_status ? exit_status : CLI_EXIT_FAIL;
		}
	}
	return exit_status;
}

int cmd_record(int argc, char **argv)
{
	struct rec_record_result res;
	struct cli_rec_args a;
	int ret, status = 0;

	ret = cli_rec_parse(&a, argc, argv);
	if (a.help) {
		usage(stdout);
		cli_rec_args_free(&a);
		return CLI_EXIT_OK;
	}
	if (ret) {
		cli_err("record", "%s", a.err);
		cli_rec_args_free(&a);
		if (ret == CLI_EXIT_USAGE)
			usage(stderr);
		return ret;
	}
	/* the summary's argv: the whole command line, "trace-cmd-xen" first */
	a.o.argv = argv - 1;
	a.o.argc = argc + 1;
	if (a.session) {
		ret = record_session(&a);
		cli_rec_args_free(&a);
		return ret;
	}
	a.o.result = &res;
	ret = rec_record(&a.o, &status);
	cli_rec_args_free(&a);
	if (ret) {
		cli_err("record", "%s", tcx_error());
		return CLI_EXIT_FAIL;
	}
	loss_note(&a, &res, NULL);
	return run_status(&a, &res, status);
}
