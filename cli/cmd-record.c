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
#include "tmsg.h"
#include "tsync.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: trace-cmd-xen record --xen [-e EVENT]... [-o trace.dat] [-S PAGES]\n"
		"                                  [-M MASK|CLASS] [-c CPUS] [-b KB]\n"
		"                                  [--duration SEC] [--raw FILE] [-q]\n"
		"                                  [-A GUEST]... [--tsync PROTOS]\n"
		"                                  [--tsync-interval SEC] [--secret-file FILE]\n"
		"                                  [--summary-json FILE] [--guest-* LIMIT]\n"
		"                                  [-- COMMAND...]\n\n"
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
		"  -h, --help           this text\n", REC_HV_DEFAULT_PAGES,
		REC_GUEST_OPEN_MS / 1e3, REC_GUEST_STOP_MS / 1e3, REC_GUEST_MAX_CPUS,
		REC_GUEST_MAX_META >> 20);
}

/* "none", or protocols the host runs joined by ',' */
static int check_tsync(const char *s)
{
	const char *names[8];

	if (tsync_parse_offer(s, names, 8) >= 0)
		return 0;
	cli_err("record", "--tsync %s: %s", s, tcx_error());
	return -EINVAL;
}

/* What the command line gathered for rec_record(). */
struct args {
	struct rec_record_opts	o;
	const char		**events, **guests;
	bool			xen;
};

static uint8_t cpumap[REC_MAX_CPUS / 8];
static uint8_t secret[CLI_SECRET_MAX + 1];

enum { ARG_OK, ARG_USAGE, ARG_NOMEM };

static int add_arg(const char ***list, int *n, const char *arg)
{
	const char **nl = realloc(*list, (*n + 1) * sizeof(*nl));

	if (!nl)
		return ARG_NOMEM;
	*list = nl;
	nl[(*n)++] = arg;
	return ARG_OK;
}

/* Seconds > 0 for --duration and --tsync-interval. */
static int seconds(const char *opt, const char *arg, double *v)
{
	char *end;

	*v = strtod(arg, &end);
	if (*end || end == arg || !(*v > 0)) {
		cli_err("record", "%s %s: seconds > 0", opt, arg);
		return ARG_USAGE;
	}
	return ARG_OK;
}

/* Milliseconds from "SEC" for the guests' deadlines, at most a day. */
static int deadline_ms(const char *opt, const char *arg, int *ms)
{
	double v;
	int ret = seconds(opt, arg, &v);

	if (ret)
		return ret;
	if (v > 86400) {
		cli_err("record", "%s %s: at most 86400 seconds", opt, arg);
		return ARG_USAGE;
	}
	*ms = (int)(v * 1000 + 0.5);
	if (!*ms)
		*ms = 1;
	return ARG_OK;
}

/* The guests' budget: --guest-*. */
static int guest_limit(struct args *a, int c, const char *opt, const char *arg)
{
	struct rec_record_opts *o = &a->o;
	unsigned long n;
	uint64_t v;

	switch (c) {
	case 'O':
		return deadline_ms(opt, arg, &o->guest_open_ms);
	case 'P':
		return deadline_ms(opt, arg, &o->guest_stop_ms);
	case 'U':
		if (tcx_parse_uint(arg, TMSG_MAX_CPUS, &n) || !n) {
			cli_err("record", "%s %s: CPUs, 1..%d", opt, arg, TMSG_MAX_CPUS);
			return ARG_USAGE;
		}
		o->guest_max_cpus = (unsigned int)n;
		return ARG_OK;
	case 'Y':
		if (tcx_parse_size(arg, 1ull << 32, &v) || v < 4096) {
			cli_err("record", "%s %s: bytes (K, M, G allowed), 4K..4G", opt, arg);
			return ARG_USAGE;
		}
		o->guest_max_meta = (size_t)v;
		return ARG_OK;
	default:
		if (tcx_parse_size(arg, UINT64_MAX, &v) || !v) {
			cli_err("record", "%s %s: bytes (K, M, G allowed), at least 1", opt, arg);
			return ARG_USAGE;
		}
		o->guest_max_bytes = v;
		return ARG_OK;
	}
}

static int read_secret(struct args *a, const char *arg)
{
	int ret = cli_read_secret(arg, secret, &a->o.secret_len);

	if (ret) {
		cli_err("record", "--secret-file: %s", tcx_error());
		return ARG_USAGE;
	}
	a->o.secret = secret;
	return ARG_OK;
}

/* The Xen knobs: -S, -M, -c. */
static int xen_arg(struct args *a, int c, const char *arg)
{
	unsigned long v;

	switch (c) {
	case 'S':
		if (tcx_parse_uint(arg, 65535, &v) || !v) {
			cli_err("record", "-S %s: pages per pCPU, 1..65535", arg);
			return ARG_USAGE;
		}
		a->o.pages = v;
		return ARG_OK;
	case 'M':
		if (rec_parse_evt_mask(arg, &a->o.evt_mask)) {
			cli_err("record", "-M %s: unknown class or mask (sched, hvm, pv, "
				"mem, hw, gen, dom0op, shadow, guest, all, or hex)", arg);
			return ARG_USAGE;
		}
		return ARG_OK;
	default:
		if (rec_parse_cpu_mask(arg, cpumap, sizeof(cpumap))) {
			cli_err("record", "-c %s: not a pCPU list or mask", arg);
			return ARG_USAGE;
		}
		a->o.cpumap = cpumap;
		return ARG_OK;
	}
}

/* One option of getopt_long()'s: ARG_OK, ARG_USAGE or ARG_NOMEM. */
static int take_arg(struct args *a, int c, const char *arg)
{
	struct rec_record_opts *o = &a->o;
	unsigned long v;

	switch (c) {
	case 'X':
		a->xen = true;
		return ARG_OK;
	case 'e':
		return add_arg(&a->events, &o->nr_events, arg);
	case 'A':
		return add_arg(&a->guests, &o->nr_guests, arg);
	case 'T':
		if (check_tsync(arg))
			return ARG_USAGE;
		o->tsync = arg;
		return ARG_OK;
	case 'I':
		return seconds("--tsync-interval", arg, &o->tsync_interval);
	case 'D':
		return seconds("--duration", arg, &o->duration);
	case 'K':
		return read_secret(a, arg);
	case 'S':
	case 'M':
	case 'c':
		return xen_arg(a, c, arg);
	case 'b':
		if (tcx_parse_uint(arg, 1u << 30, &v) || !v) {
			cli_err("record", "-b %s: KiB per CPU, 1..1073741824", arg);
			return ARG_USAGE;
		}
		o->buffer_kb = v;
		return ARG_OK;
	case 'o':
		o->output = arg;
		return ARG_OK;
	case 'N':
		o->no_dom0 = true;
		return ARG_OK;
	case 'R':
		o->raw = arg;
		return ARG_OK;
	case 'J':
		o->summary_json = arg;
		return ARG_OK;
	case 'q':
		o->quiet = true;
		return ARG_OK;
	case 'O':
		return guest_limit(a, c, "--guest-open-timeout", arg);
	case 'P':
		return guest_limit(a, c, "--guest-stop-timeout", arg);
	case 'U':
		return guest_limit(a, c, "--guest-max-cpus", arg);
	case 'Y':
		return guest_limit(a, c, "--guest-max-meta", arg);
	case 'Z':
		return guest_limit(a, c, "--guest-max-bytes", arg);
	default:
		return ARG_USAGE;
	}
}

static void free_args(struct args *a)
{
	free(a->events);
	free(a->guests);
	explicit_bzero(secret, sizeof(secret));
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
		{ "guest-open-timeout", required_argument, NULL, 'O' },
		{ "guest-stop-timeout", required_argument, NULL, 'P' },
		{ "guest-max-cpus", required_argument, NULL, 'U' },
		{ "guest-max-meta", required_argument, NULL, 'Y' },
		{ "guest-max-bytes", required_argument, NULL, 'Z' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct args a = { .o = { .output = "trace.dat", .log = stderr } };
	int c, ret = ARG_OK, status = 0;

	optind = 1;
	/* '+': stop at the command after "--" or the first non-option */
	while (ret == ARG_OK &&
	       (c = getopt_long(argc, argv, "+e:o:S:M:c:b:A:qh", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			free_args(&a);
			return CLI_EXIT_OK;
		}
		ret = take_arg(&a, c, optarg);
	}
	if (ret == ARG_OK && !a.xen) {
		cli_err("record", "--xen is required: trace-cmd-xen records a Xen host "
			"(the stock trace-cmd record does the rest)");
		ret = ARG_USAGE;
	}
	if (ret != ARG_OK) {
		free_args(&a);
		if (ret == ARG_NOMEM)
			return CLI_EXIT_FAIL;
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (optind < argc)
		a.o.command = argv + optind;
	a.o.events = a.events;
	a.o.guests = a.guests;
	ret = rec_record(&a.o, &status);
	free_args(&a);
	if (ret) {
		cli_err("record", "%s", tcx_error());
		return CLI_EXIT_FAIL;
	}
	return a.o.command ? status : CLI_EXIT_OK;
}
