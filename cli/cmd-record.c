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
#include "tcx-util.h"
#include "tsync.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: trace-cmd-xen record --xen [-e EVENT]... [-o trace.dat] [-S PAGES]\n"
		"                                  [-M MASK|CLASS] [-c CPUS] [-b KB]\n"
		"                                  [--duration SEC] [--raw FILE] [-q]\n"
		"                                  [-A GUEST]... [--tsync PROTOS]\n"
		"                                  [--tsync-interval SEC] [--secret-file FILE]\n"
		"                                  [--summary-json FILE] [-- COMMAND...]\n\n"
		"Record the Xen hypervisor (trace.dat), dom0's ftrace (trace-dom0.dat) and\n"
		"each -A guest's ftrace through its agent (trace-GUEST.dat) on one clock.\n"
		"Stops on Ctrl-C, SIGTERM, --duration or when COMMAND exits (then exits\n"
		"with its status).\n\n"
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
		"  -A GUEST             a guest's agent: a Xen domain name or domid (over\n"
		"                       libxenvchan), ip:port (TCP), cid:port or name@cid\n"
		"                       (vsock); repeatable; -e and -b apply to guests too\n"
		"  --tsync PROTOS       time sync offered to guests: xen, ptp, joined by ','\n"
		"                       (default xen,ptp), or none\n"
		"  --tsync-interval SEC also sync every SEC seconds (default: start and end)\n"
		"  --secret-file FILE   shared secret for TCP/vsock agents (as the agent's)\n"
		"  --duration SEC       stop after SEC seconds\n"
		"  --raw FILE           also keep the capture in xentrace format (xenalyze)\n"
		"  --summary-json FILE  the closing summary as JSON ('-': stdout)\n"
		"  -q, --quiet          no status line, no summary\n"
		"  -h, --help           this text\n", REC_HV_DEFAULT_PAGES);
}

/* "none", or protocols the host runs joined by ',' */
static int check_tsync(const char *s)
{
	const char *names[8];

	if (tsync_parse_offer(s, names, 8) >= 0)
		return 0;
	tcx_err("record", "--tsync %s: %s", s, tcx_error());
	return -EINVAL;
}

int cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "xen", no_argument, NULL, 'X' },
		{ "no-dom0", no_argument, NULL, 'N' },
		{ "duration", required_argument, NULL, 'D' },
		{ "raw", required_argument, NULL, 'R' },
		{ "summary-json", required_argument, NULL, 'J' },
		{ "tsync", required_argument, NULL, 'T' },
		{ "tsync-interval", required_argument, NULL, 'I' },
		{ "secret-file", required_argument, NULL, 'K' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rec_record_opts o = { .output = "trace.dat", .log = stderr };
	static uint8_t cpumap[REC_MAX_CPUS / 8];
	const char **events = NULL, **guests = NULL;
	static uint8_t secret[TCX_SECRET_MAX + 1];
	bool xen = false;
	unsigned long v;
	char *end;
	int c, ret, status = 0;

	optind = 1;
	/* '+': stop at the command after "--" or the first non-option */
	while ((c = getopt_long(argc, argv, "+e:o:S:M:c:b:A:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'X':
			xen = true;
			break;
		case 'e': {
			const char **ne = realloc(events, (o.nr_events + 1) * sizeof(*ne));

			if (!ne)
				goto fail;
			events = ne;
			events[o.nr_events++] = optarg;
			break;
		}
		case 'A': {
			const char **ng = realloc(guests, (o.nr_guests + 1) * sizeof(*ng));

			if (!ng)
				goto fail;
			guests = ng;
			guests[o.nr_guests++] = optarg;
			break;
		}
		case 'T':
			if (check_tsync(optarg))
				goto usage_err;
			o.tsync = optarg;
			break;
		case 'I':
			o.tsync_interval = strtod(optarg, &end);
			if (*end || end == optarg || !(o.tsync_interval > 0)) {
				tcx_err("record", "--tsync-interval %s: seconds > 0", optarg);
				goto usage_err;
			}
			break;
		case 'K':
			ret = tcx_read_secret(optarg, secret, &o.secret_len);
			if (ret) {
				tcx_err("record", "--secret-file %s: %s", optarg, ret == -EINVAL ?
					"must hold 1 to " TCX_SECRET_MAX_STR " bytes" : strerror(-ret));
				goto usage_err;
			}
			o.secret = secret;
			break;
		case 'o':
			o.output = optarg;
			break;
		case 'S':
			if (tcx_parse_uint(optarg, 65535, &v) || !v) {
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
			if (tcx_parse_uint(optarg, 1u << 30, &v) || !v) {
				tcx_err("record", "-b %s: KiB per CPU, 1..1073741824", optarg);
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
			free(guests);
			return TCX_EXIT_OK;
		default:
			goto usage_err;
		}
	}
	if (!xen) {
		tcx_err("record", "--xen is required: trace-cmd-xen records a Xen host "
			"(the stock trace-cmd record does the rest)");
		goto usage_err;
	}
	if (optind < argc)
		o.command = argv + optind;
	o.events = events;
	o.guests = guests;
	ret = rec_record(&o, &status);
	free(events);
	free(guests);
	explicit_bzero(secret, sizeof(secret));
	if (ret) {
		tcx_err("record", "%s", tcx_error());
		return TCX_EXIT_FAIL;
	}
	return o.command ? status : TCX_EXIT_OK;
usage_err:
	free(events);
	free(guests);
	usage(stderr);
	return TCX_EXIT_USAGE;
fail:
	free(events);
	free(guests);
	explicit_bzero(secret, sizeof(secret));
	return TCX_EXIT_FAIL;
}
