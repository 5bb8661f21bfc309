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

#include "analyze.h"
#include "cli.h"
#include "recorder.h"
#include "tcx-util.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: trace-cmd-xen analyze [-i] FILE [--from T] [--to T] [--per-vcpu]\n"
		"                             [--json] [--svg SVG] [--cpu-hz HZ]\n\n"
		"Summarize a hypervisor trace.dat (record --xen, convert) as xenalyze --summary\n"
		"does: time per runstate, runs, wake latency and migrations per vCPU, busy and\n"
		"idle time per pCPU, HVM exits by reason, PV hypercalls, records Xen lost.\n\n"
		"  -i FILE         the trace.dat\n"
		"  --from T        start of the window after the first record: 1.5s, 200ms,\n"
		"                  300us, 1000ns, or seconds without a suffix (default: 0)\n"
		"  --to T          end of the window, as --from (default: the end)\n"
		"  --per-vcpu      exits and hypercalls per vCPU instead of per domain\n"
		"  --json          one JSON object on stdout instead of the tables\n"
		"  --svg SVG       also draw runstate bars and exit reasons into SVG\n"
		"  --cpu-hz HZ     the TSC frequency (default: from the file's own conversion)\n"
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

int cmd_analyze(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "from", required_argument, NULL, 'F' },
		{ "to", required_argument, NULL, 'T' },
		{ "per-vcpu", no_argument, NULL, 'V' },
		{ "json", no_argument, NULL, 'J' },
		{ "svg", required_argument, NULL, 'S' },
		{ "cpu-hz", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct ana_opts o = { 0 };
	const char *input = NULL, *svg = NULL;
	bool per_vcpu = false, json = false;
	struct ana_result *r;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "i:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
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
