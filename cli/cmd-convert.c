// SPDX-License-Identifier: GPL-2.0
/*
 * trace-cmd-xen convert: a xentrace capture into a trace.dat.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "recorder.h"
#include "tcx-util.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: trace-cmd-xen convert [--xen] [-i] FILE [-o OUTPUT] [--cpu-hz HZ]\n"
		"                             [--file-version 6|7] [--summary-json FILE] [-j N]\n"
		"       trace-cmd-xen convert --xenalyze [-i] FILE -o OUTPUT\n\n"
		"Turn a xentrace capture into a trace.dat that trace-cmd and KernelShark read,\n"
		"or (--xenalyze) into a xentrace-format copy that xenalyze reads.\n\n"
		"  -i FILE              the capture; '-' reads standard input\n"
		"  -o OUTPUT            the trace.dat to write (default: trace.dat)\n"
		"  --cpu-hz HZ          the host's TSC frequency: 2.4G, 2400M or 2400000000\n"
		"                       (default: 2.4 GHz, xenalyze's default)\n"
		"  --file-version V     trace.dat version 6 or 7 (default: 7)\n"
		"  --summary-json FILE  also write the closing summary as JSON ('-': stdout)\n"
		"  -j, --jobs N         threads decoding and writing pCPUs side by side\n"
		"                       (default: the online CPUs, at most 8 and one per\n"
		"                       pCPU; 1: one thread; a pipe is read by one); the\n"
		"                       file is the same whatever N\n"
		"  --svm                name exit reasons of pre-4.19 VMEXIT records as SVM\n"
		"                       (a file with reasons only AMD has gets it anyway)\n"
		"  --xenalyze           write a xentrace-format copy without the TRC_GUEST\n"
		"                       records (time sync's markers), on which xenalyze\n"
		"                       stops; -o is required\n"
		"  -q, --quiet          no closing summary on stderr\n"
		"  --xen                no effect: how `trace-cmd convert --xen` reaches\n"
		"                       this command through the trace-cmd front\n"
		"  -h, --help           this text\n");
}

/* -j's largest: a thread per pCPU at most, whatever is asked */
#define MAX_JOBS	256

/* The threads -j gives when not told: the online CPUs, at most 8. */
static int default_jobs(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

/* -o names a file of its own: not the input, which it would truncate. */
static int same_file(int in, const char *out)
{
	struct stat a, b;

	return !fstat(in, &a) && !stat(out, &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* The copy into @tmp, renamed over @output when kept; 0 or a negative errno. */
static int copy_to(int in, const char *tmp, const char *output, struct rec_xa_stats *st)
{
	int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int ret;

	if (out < 0)
		return tcx_fail(-errno, "%s: %s", output, strerror(errno));
	ret = rec_xenalyze_copy(in, out, output, st);
	if (close(out) && !ret)
		ret = tcx_fail(-errno, "%s: %s", output, strerror(errno));
	/* a corrupt window: what came before it is kept, as convert does */
	if ((!ret || ret == -EBADMSG) && rename(tmp, output))
		ret = tcx_fail(-errno, "%s: %s", output, strerror(errno));
	if (ret && ret != -EBADMSG)
		unlink(tmp);
	return ret;
}

/* --xenalyze: the copy is written beside -o and renamed over it when done. */
static int xenalyze_copy(const char *input, const char *output, bool quiet)
{
	struct rec_xa_stats st;
	char *tmp;
	int in, ret;

	in = strcmp(input, "-") ? open(input, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	if (in < 0) {
		cli_err("convert", "%s: %s", input, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	if (same_file(in, output)) {
		cli_err("convert", "-o %s is the input: the copy needs a file of its own", output);
		close(in);
		return CLI_EXIT_USAGE;
	}
	if (asprintf(&tmp, "%s.%d.tmp", output, (int)getpid()) < 0) {
		tmp = NULL;
		ret = tcx_fail(-ENOMEM, "out of memory");
	} else
		ret = copy_to(in, tmp, output, &st);
	if (!quiet && (!ret || ret == -EBADMSG))
		fprintf(stderr, "trace-cmd-xen convert: %s -> %s (xentrace format, for xenalyze)\n"
			"  %" PRIu64 " records kept in %" PRIu64 " windows, %" PRIu64
			" TRC_GUEST records left out%s\n",
			strcmp(input, "-") ? input : "<stdin>", output, st.records, st.windows,
			st.dropped, st.truncated ? "; the input was truncated" : "");
	if (ret)
		cli_err("convert", "%s", tcx_error());
	if (in != STDIN_FILENO)
		close(in);
	free(tmp);
	return ret ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

int cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cpu-hz", required_argument, NULL, 'H' },
		{ "file-version", required_argument, NULL, 'V' },
		{ "summary-json", required_argument, NULL, 'J' },
		{ "svm", no_argument, NULL, 'S' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "xen", no_argument, NULL, 'x' },
		{ "xenalyze", no_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rec_convert_opts o = { .output = "trace.dat", .log = stderr };
	struct rec_convert_summary sum;
	const char *json = NULL;
	bool quiet = false, xa = false, have_out = false;
	unsigned long jobs;
	char err[TCX_ERROR_MAX];
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "i:o:qj:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			o.input = optarg;
			break;
		case 'o':
			o.output = optarg;
			have_out = true;
			break;
		case 'A':
			xa = true;
			break;
		case 'H':
			if (rec_parse_hz(optarg, &o.hz)) {
				cli_err("convert", "invalid --cpu-hz '%s': want a whole number of Hz, "
					"e.g. 2.4G, 2400M or 2400000000", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'V':
			if (strcmp(optarg, "6") && strcmp(optarg, "7")) {
				cli_err("convert", "invalid --file-version '%s': 6 or 7", optarg);
				return CLI_EXIT_USAGE;
			}
			o.file_version = atoi(optarg);
			break;
		case 'J':
			json = optarg;
			break;
		case 'j':
			if (tcx_parse_uint(optarg, MAX_JOBS, &jobs) || !jobs) {
				cli_err("convert", "invalid -j '%s': a number of threads, 1 to %d",
					optarg, MAX_JOBS);
				return CLI_EXIT_USAGE;
			}
			o.jobs = jobs;
			break;
		case 'S':
			o.svm = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'x':
			/* for `trace-cmd convert --xen` through the front */
			break;
		case 'h':
			usage(stdout);
			return CLI_EXIT_OK;
		default:
			usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (!o.input && optind < argc)
		o.input = argv[optind++];
	if (!o.input || optind < argc) {
		cli_err("convert", o.input ? "unexpected argument '%s'" : "no input file given%s",
			o.input ? argv[optind] : "");
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (xa) {
		if (!have_out) {
			cli_err("convert", "--xenalyze needs -o: the copy's file name");
			usage(stderr);
			return CLI_EXIT_USAGE;
		}
		return xenalyze_copy(o.input, o.output, quiet);
	}
	if (!o.hz)
		fprintf(stderr, "trace-cmd-xen convert: no --cpu-hz given: assuming %" PRIu64
			" Hz (xenalyze's default); timestamps scale wrongly if the host's TSC "
			"runs at another rate\n", (uint64_t)REC_DEFAULT_HZ);
	o.progress = isatty(STDERR_FILENO);
	if (!o.jobs)
		o.jobs = default_jobs();

	ret = rec_convert(&o, &sum);
	/* a corrupt input's message comes after the summary: keep it */
	snprintf(err, sizeof(err), "%s", ret < 0 ? tcx_error() : "");
	if (ret < 0 && ret != -EBADMSG) {
		cli_err("convert", "%s", err);
		rec_convert_summary_free(&sum);
		return CLI_EXIT_FAIL;
	}
	if (!quiet) {
		fprintf(stderr, "trace-cmd-xen convert: %s -> %s\n",
			strcmp(o.input, "-") ? o.input : "<stdin>", o.output);
		rec_convert_summary_print(&sum, stderr);
	}
	if (json) {
		FILE *f = strcmp(json, "-") ? fopen(json, "w") : stdout;

		if (!f) {
			cli_err("convert", "%s: %s", json, strerror(errno));
			ret = -errno;
		} else {
			rec_convert_summary_json(&sum, f);
			if (f != stdout && fclose(f)) {
				cli_err("convert", "%s: %s", json, strerror(errno));
				ret = -EIO;
			}
		}
	}
	rec_convert_summary_free(&sum);
	if (ret == -EBADMSG)
		cli_err("convert", "%s", err);
	return ret < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
