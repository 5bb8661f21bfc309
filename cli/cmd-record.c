// SPDX-License-Identifier: GPL-2.0
/*
 * trace-cmd-xen record --xen: the hypervisor and dom0, in dom0.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "recorder.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: trace-cmd-xen record --xen [-e EVENT]... [-o trace.dat] [-S PAGES]\n"
		"                                  [-M MASK|CLASS] [-c CPUS] [-b KB]\n"
		"                                  [--duration SEC] [--raw FILE] [-q]\n"
		"                                  [--summary-json FILE] [-- COMMAND...]\n\n"
		"Record the Xen hypervisor (trace.dat) and dom0's ftrace (trace-dom0.dat)\n"
		"on one clock. Stops on Ctrl-C, SIGTERM, --duration or when COMMAND exits\n"
		"(then exits with its status).\n\n"
		"  --xen                record the hypervisor (required)\n"
		"  -e EVENT             dom0 event: sys, sys:event or event, globs allowed\n"
		"                       (repeatable; default " REC_DOM0_DEFAULT_EVENT ")\n"
		"  -o FILE              the hypervisor's trace.dat (default: trace.dat);\n"
		"                       dom0's gets -dom0 before the extension\n"
		"  -S PAGES             trace buffer pages per pCPU (default %d; Xen fixes\n"
		"                       the size once per boot)\n"
		"  -M MASK              Xen event classes: sched, hvm, pv, mem, hw, gen,\n"
		"                       dom0op, shadow, guest, all (joined by ',') or hex\n"
		"  -c CPUS              pCPUs to trace: all, 0x3 or 0-3,5 (default all)\n"
		"  -b KB                dom0 ftrace buffer per CPU in KiB\n"
		"  --no-dom0            record the hypervisor only\n"
		"  --duration SEC       stop after SEC seconds\n"
		"  --raw FILE           also keep the capture in xentrace format (xenalyze)\n"
		"  --summary-json FILE  the closing summary as JSON ('-': stdout)\n"
		"  -q, --quiet          no status line, no summary\n"
		"  -h, --help           this text\n", REC_HV_DEFAULT_PAGES);
}

static int parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 0);
	return errno || end == s || *end || *v == 0 || *v > max ? -EINVAL : 0;
}

int cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "xen", no_argument, NULL, 'X' },
		{ "no-dom0", no_argument, NULL, 'N' },
		{ "duration", required_argument, NULL, 'D' },
		{ "raw", required_argument, NULL, 'R' },
		{ "summary-json", required_argument, NULL, 'J' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rec_record_opts o = { .output = "trace.dat", .log = stderr };
	static uint8_t cpumap[REC_MAX_CPUS / 8];
	const char **events = NULL;
	bool xen = false;
	unsigned long v;
	char err[1024], *end;
	int c, ret, status = 0;

	optind = 1;
	/* '+': stop at the command after "--" or the first non-option */
	while ((c = getopt_long(argc, argv, "+e:o:S:M:c:b:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'X':
			xen = true;
			break;
		case 'e': {
			const char **ne = realloc(events, (o.nr_events + 1) * sizeof(*ne));

			if (!ne) {
				free(events);
				return TCX_EXIT_FAIL;
			}
			events = ne;
			events[o.nr_events++] = optarg;
			break;
		}
		case 'o':
			o.output = optarg;
			break;
		case 'S':
			if (parse_uint(optarg, 65535, &v)) {
				tcx_err("record", "-S %s: pages per pCPU, 1..65535", optarg);
				goto usage_err;
			}
			o.pages = v;
			break;
		case 'M':
			if (rec_parse_evt_mask(optarg, &o.evt_mask)) {
				tcx_err("record", "-M %s: unknown class or mask (sched, hvm, pv, "
					"mem, hw, gen, dom0op, shadow, guest, all, or hex)", optarg);
				goto usage_err;
			}
			break;
		case 'c':
			if (rec_parse_cpu_mask(optarg, cpumap, sizeof(cpumap))) {
				tcx_err("record", "-c %s: not a pCPU list or mask", optarg);
				goto usage_err;
			}
			o.cpumap = cpumap;
			break;
		case 'b':
			if (parse_uint(optarg, 1u << 30, &v)) {
				tcx_err("record", "-b %s: KiB per CPU", optarg);
				goto usage_err;
			}
			o.buffer_kb = v;
			break;
		case 'N':
			o.no_dom0 = true;
			break;
		case 'D':
			o.duration = strtod(optarg, &end);
			if (*end || end == optarg || !(o.duration > 0)) {
				tcx_err("record", "--duration %s: seconds > 0", optarg);
				goto usage_err;
			}
			break;
		case 'R':
			o.raw = optarg;
			break;
		case 'J':
			o.summary_json = optarg;
			break;
		case 'q':
			o.quiet = true;
			break;
		case 'h':
			usage(stdout);
			free(events);
			return TCX_EXIT_OK;
		default:
			goto usage_err;
		}
	}
	if (!xen) {
		tcx_err("record", "only --xen is supported here (the hypervisor and dom0); "
			"guests come with -A later");
		goto usage_err;
	}
	if (optind < argc)
		o.command = argv + optind;
	o.events = events;
	ret = rec_record(&o, &status, err, sizeof(err));
	free(events);
	if (ret) {
		tcx_err("record", "%s", err[0] ? err : strerror(-ret));
		return TCX_EXIT_FAIL;
	}
	return o.command ? status : TCX_EXIT_OK;
usage_err:
	free(events);
	usage(stderr);
	return TCX_EXIT_USAGE;
}
