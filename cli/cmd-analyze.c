// SPDX-License-Identifier: GPL-2.0
/*
 * trace-cmd-xen analyze: xenalyze-style summaries of a hypervisor trace.dat.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyze.h"
#include "cli.h"
#include "recorder.h"
#include "tcx-util.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: trace-cmd-xen analyze [-i] FILE [--from T] [--to T] [--per-vcpu]\n"
		"                             [--json] [--svg SVG] [--cpu-hz HZ]\n"
		"       trace-cmd-xen analyze -i FILE -i GUEST.dat [-i GUEST.dat...] [--json]\n"
		"                             [--from T] [--to T] [--from-marker TEXT]\n"
		"                             [--to-marker TEXT]\n"
		"       trace-cmd-xen analyze --compare A B [C...] [--json] [--from T] [--to T]\n\n"
		"Summarize a hypervisor trace.dat (record --xen, convert) as xenalyze --summary\n"
		"does: time per runstate, runs, wake latency and migrations per vCPU, busy and\n"
		"idle time per pCPU, HVM exits by reason, PV hypercalls, records Xen lost.\n\n"
		"  -i FILE         the trace.dat; more -i: guest files (trace-GUEST.dat of\n"
		"                  record --xen -A), each guest task's run time and wake\n"
		"                  latency split by what Xen did to its vCPU meanwhile\n"
		"  --from T        start of the window after the first record: 1.5s, 200ms,\n"
		"                  300us, 1000ns, or seconds without a suffix (default: 0)\n"
		"  --to T          end of the window, as --from (default: the end)\n"
		"  --from-marker TEXT  with guest files: the window starts at the first\n"
		"                  trace_marker (ftrace print) record holding TEXT\n"
		"  --to-marker TEXT    and ends at the first one after it holding TEXT\n"
		"  --per-vcpu      exits and hypercalls per vCPU instead of per domain\n"
		"  --json          one JSON object on stdout instead of the tables\n"
		"  --svg SVG       also draw runstate bars and exit reasons into SVG\n"
		"  --cpu-hz HZ     the TSC frequency (default: from the file's own conversion)\n"
		"  --compare       A B...: record --session directories, their analysis.json\n"
		"                  or trace.dat files; per vCPU running, runnable, wait p50/p99\n"
		"                  and exits by reason side by side, with the difference of\n"
		"                  each from A (absolute and %%)\n"
		"  -h, --help      this text\n");
}

/* "1.5s", "200ms", "300us", "1000ns", "2" (s) to ns. */
static int parse_time(const char *s, uint64_t *ns)
{
	static const struct {
		const char *sfx;
		uint64_t mul;
	} units[] = { { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
		      { "", 1000000000 } };
	uint64_t whole = 0, frac = 0, fdiv = 1;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (whole > UINT64_MAX / 10 - 1)
			return -ERANGE;
		whole = whole * 10 + (*p - '0');
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++) {
			if (fdiv < 1000000000000ull) {
				frac = frac * 10 + (*p - '0');
				fdiv *= 10;
			}
		}
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].sfx))
			continue;
		if (whole > UINT64_MAX / units[i].mul)
			return -ERANGE;
		*ns = whole * units[i].mul + (uint64_t)((long double)frac * units[i].mul / fdiv);
		return 0;
	}
	return -EINVAL;
}

/* A session directory or its analysis.json: the trace.dat of that run. */
static char *compare_input(const char *arg)
{
	size_t len = strlen(arg);
	struct stat st;
	char *p;

	if (!stat(arg, &st) && S_ISDIR(st.st_mode)) {
		if (asprintf(&p, "%s/trace.dat", arg) < 0)
			return NULL;
		return p;
	}
	if (len >= 13 && !strcmp(arg + len - 13, "analysis.json")) {
		if (asprintf(&p, "%.*strace.dat", (int)(len - 13), arg) < 0)
			return NULL;
		return p;
	}
	return strdup(arg);
}

static int run_compare(char **args, int n, const struct ana_opts *o, bool json)
{
	struct ana_result **r = calloc((size_t)n, sizeof(*r));
	int ret = CLI_EXIT_OK;

	if (!r)
		return CLI_EXIT_FAIL;
	for (int i = 0; i < n && ret == CLI_EXIT_OK; i++) {
		char *path = compare_input(args[i]);

		if (!path) {
			cli_err("analyze", "out of memory");
			ret = CLI_EXIT_FAIL;
			break;
		}
		r[i] = ana_run(path, o);
		if (!r[i]) {
			cli_err("analyze", "--compare %s: %s", args[i], tcx_error());
			ret = CLI_EXIT_FAIL;
		} else if (r[i]->lossy && !json) {
			fprintf(stderr, "trace-cmd-xen analyze: %s: Xen lost %" PRIu64 " records: "
				"its figures are lower bounds\n", path, r[i]->lost);
		}
		free(path);
	}
	if (ret == CLI_EXIT_OK &&
	    ana_compare_print((const struct ana_result *const *)r, n, stdout, json)) {
		cli_err("analyze", "writing the comparison failed");
		ret = CLI_EXIT_FAIL;
	}
	for (int i = 0; i < n; i++)
		ana_free(r[i]);
	free(r);
	return ret;
}

int cmd_analyze(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "from", required_argument, NULL, 'F' },
		{ "to", required_argument, NULL, 'T' },
		{ "per-vcpu", no_argument, NULL, 'V' },
		{ "from-marker", required_argument, NULL, 'm' },
		{ "to-marker", required_argument, NULL, 'M' },
		{ "json", no_argument, NULL, 'J' },
		{ "svg", required_argument, NULL, 'S' },
		{ "cpu-hz", required_argument, NULL, 'H' },
		{ "compare", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct ana_opts o = { 0 };
	const char *input = NULL, *svg = NULL;
	char *guests[64];
	int nguests = 0;
	bool per_vcpu = false, json = false, cmp = false;
	struct ana_result *r;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "i:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (!input) {
				input = optarg;
			} else if (nguests < 64) {
				guests[nguests++] = optarg;
			} else {
				cli_err("analyze", "more than 64 guest files");
				return CLI_EXIT_USAGE;
			}
			break;
		case 'F':
		case 'T':
			if (parse_time(optarg, c == 'F' ? &o.from_ns : &o.to_ns)) {
				cli_err("analyze", "invalid --%s '%s': want a time such as 1.5s, "
					"200ms, 300us or 1000ns", c == 'F' ? "from" : "to", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'V':
			per_vcpu = true;
			break;
		case 'm':
			o.from_marker = optarg;
			break;
		case 'M':
			o.to_marker = optarg;
			break;
		case 'C':
			cmp = true;
			break;
		case 'J':
			json = true;
			break;
		case 'S':
			svg = optarg;
			break;
		case 'H':
			if (rec_parse_hz(optarg, &o.cpu_hz) || !o.cpu_hz) {
				cli_err("analyze", "invalid --cpu-hz '%s': want a whole number of Hz, "
					"such as 2.4G, 2400M or 2400000000", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return CLI_EXIT_OK;
		default:
			usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if ((o.from_marker || o.to_marker) && (o.from_ns || o.to_ns)) {
		cli_err("analyze", "--from-marker and --to-marker replace --from and --to");
		return CLI_EXIT_USAGE;
	}
	if ((o.from_marker && !*o.from_marker) || (o.to_marker && !*o.to_marker)) {
		cli_err("analyze", "an empty marker text");
		return CLI_EXIT_USAGE;
	}
	if (cmp) {
		if (input || svg || per_vcpu || argc - optind < 2) {
			cli_err("analyze", "--compare takes two or more sessions, analysis.json "
				"or trace.dat files (and --json, --from, --to, --cpu-hz only)");
			return CLI_EXIT_USAGE;
		}
		if (o.to_ns && o.to_ns <= o.from_ns) {
			cli_err("analyze", "--to must be after --from");
			return CLI_EXIT_USAGE;
		}
		return run_compare(argv + optind, argc - optind, &o, json);
	}
	if (optind < argc && !input)
		input = argv[optind++];
	if (optind < argc) {
		cli_err("analyze", "unexpected argument '%s'", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	if (!input) {
		cli_err("analyze", "no trace.dat given");
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (o.to_ns && o.to_ns <= o.from_ns) {
		cli_err("analyze", "--to must be after --from");
		return CLI_EXIT_USAGE;
	}
	if (!nguests && (o.from_marker || o.to_marker)) {
		cli_err("analyze", "--from-marker and --to-marker need guest files (a second -i)");
		return CLI_EXIT_USAGE;
	}
	if (nguests) {
		struct ana_join *j;

		if (svg || per_vcpu || o.cpu_hz) {
			cli_err("analyze", "guest files (a second -i) take --json, --from, --to and the "
				"markers only");
			return CLI_EXIT_USAGE;
		}
		j = ana_join_run(input, guests, nguests, &o);
		if (!j) {
			cli_err("analyze", "%s", tcx_error());
			return CLI_EXIT_FAIL;
		}
		ret = json ? ana_join_print_json(j, stdout) : ana_join_print_text(j, stdout);
		ana_join_free(j);
		if (ret) {
			cli_err("analyze", "writing the joined view: %s", strerror(-ret));
			return CLI_EXIT_FAIL;
		}
		return CLI_EXIT_OK;
	}
	r = ana_run(input, &o);
	if (!r) {
		cli_err("analyze", "%s", tcx_error());
		return CLI_EXIT_FAIL;
	}
	if (r->lossy && !json)
		fprintf(stderr, "trace-cmd-xen analyze: Xen lost %" PRIu64 " records: the "
			"figures are lower bounds\n", r->lost);
	ret = json ? ana_print_json(r, stdout, per_vcpu) : ana_print_text(r, stdout, per_vcpu);
	if (ret) {
		cli_err("analyze", "writing the summary: %s", strerror(-ret));
		ana_free(r);
		return CLI_EXIT_FAIL;
	}
	if (svg && ana_write_svg(r, svg)) {
		cli_err("analyze", "%s", tcx_error());
		ana_free(r);
		return CLI_EXIT_FAIL;
	}
	ana_free(r);
	return CLI_EXIT_OK;
}
