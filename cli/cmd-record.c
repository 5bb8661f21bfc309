// SPDX-License-Identifier: GPL-2.0
/*
 * trace-cmd-xen record --xen: the hypervisor and dom0, in dom0, and the
 * guests through their agents. The grammar is in record-args.c.
 */
#include <stdio.h>

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
		"  -m KB                at most KB per CPU in the file (dom0: the first)\n"
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
		"  -q, --quiet          no status line, no summary\n"
		"  -h, --help           this text\n\n"
		"Other options of trace-cmd record are refused with the reason and what\n"
		"to use instead (docs/trace-cmd-options.md).\n", REC_HV_DEFAULT_PAGES,
		REC_GUEST_OPEN_MS / 1e3, REC_GUEST_STOP_MS / 1e3, REC_GUEST_MAX_CPUS,
		REC_GUEST_MAX_META >> 20);
}

int cmd_record(int argc, char **argv)
{
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
	ret = rec_record(&a.o, &status);
	cli_rec_args_free(&a);
	if (ret) {
		cli_err("record", "%s", tcx_error());
		return CLI_EXIT_FAIL;
	}
	return a.o.command ? status : CLI_EXIT_OK;
}
