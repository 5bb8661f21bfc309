// SPDX-License-Identifier: GPL-2.0
/*
 * convert on captures that are corrupt or change under it: a pCPU whose
 * records never carry a TSC, a file truncated while it is being read. The
 * outputs are checked with the stock `trace-cmd report`.
 *
 * The truncation has to happen while convert reads, at a known point: this
 * executable is linked with --wrap for rec_read_xentrace() (the conversion
 * pass, as opposed to the look-ahead, which reads through
 * rec_read_xentrace_prefix()) and rec_stream_feed(), so the file is cut at
 * the first bytes the conversion pass feeds, with the rest of its first
 * chunk of input still to be used.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <xen/trace.h>

#include "recorder-internal.h"
#include "tlib.h"
#include "tcx-util.h"
#include "xtgen.h"

static char tmpdir[] = "/tmp/tcx-malformed-XXXXXX";

/* ---- the cut: armed by a test, done at the conversion's first feed ---- */

static const char *cut_path;	/* the file to cut (NULL: not armed) */
static off_t cut_size;
static bool in_conversion;
static int cuts;

int __real_rec_read_xentrace(int fd, struct rec_stream *s, struct rec_read_result *res,
			     rec_progress_fn progress, void *pctx);
int __wrap_rec_read_xentrace(int fd, struct rec_stream *s, struct rec_read_result *res,
			     rec_progress_fn progress, void *pctx);
int __real_rec_stream_feed(struct rec_stream *s, int cpu, const void *data, size_t len);
int __wrap_rec_stream_feed(struct rec_stream *s, int cpu, const void *data, size_t len);

int __wrap_rec_read_xentrace(int fd, struct rec_stream *s, struct rec_read_result *res,
			     rec_progress_fn progress, void *pctx)
{
	int ret;

	in_conversion = true;
	ret = __real_rec_read_xentrace(fd, s, res, progress, pctx);
	in_conversion = false;
	return ret;
}

int __wrap_rec_stream_feed(struct rec_stream *s, int cpu, const void *data, size_t len)
{
	if (in_conversion && cut_path) {
		if (truncate(cut_path, cut_size))
			fail_msg("truncate %s: %s", cut_path, strerror(errno));
		cut_path = NULL;
		cuts++;
	}
	return __real_rec_stream_feed(s, cpu, data, len);
}

/* ---- helpers ---- */

static off_t file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* A capture of at least @mb MiB from xtgen's defaults. */
static void make_capture(const char *path, unsigned int mb, struct xtgen_truth *t)
{
	struct xtgen_params p;
	FILE *f = fopen("/dev/null", "w");

	xtgen_defaults(&p);
	p.epochs = 2;
	assert_non_null(f);
	assert_int_equal(xtgen_write(&p, f, t), 0);
	fclose(f);
	p.epochs = (uint64_t)mb * 1048576 / (t->bytes / 2) + 1;
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(xtgen_write(&p, f, t), 0);
	assert_int_equal(fclose(f), 0);
	assert_true(file_size(path) >= (off_t)mb << 20);
}

/*
 * Stock trace-cmd report on @dat: exit 0, nothing on stderr, no event it
 * cannot parse. Returns the number of event lines (all but "cpus=N"), the
 * report kept in @dat.report.
 */
static long report(const char *dat)
{
	char cmd[1024], path[300];
	long lines = 0;
	struct stat st;
	char line[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s.report", dat);
	snprintf(cmd, sizeof(cmd), "trace-cmd report '%s' >'%s' 2>'%s.err'", dat, path, path);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s.err", path);
	assert_int_equal(stat(cmd, &st), 0);
	assert_int_equal(st.st_size, 0);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		assert_null(strstr(line, "UNKNOWN EVENT"));
		assert_null(strstr(line, "CANT FIND"));
		lines += strncmp(line, "cpus=", 5) != 0;
	}
	fclose(f);
	return lines;
}

static bool same_file(const char *a, const char *b)
{
	char cmd[700];

	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", a, b);
	return system(cmd) == 0;
}

/* rec_convert with its warnings collected into @log. */
static int convert(const char *in, const char *out, struct rec_convert_summary *sum,
		   char *log, size_t loglen)
{
	FILE *lf = tmpfile();
	struct rec_convert_opts o = { .input = in, .output = out, .hz = 2400000000ull,
				      .log = lf };
	size_t n;
	int ret;

	assert_non_null(lf);
	ret = rec_convert(&o, sum);
	if (ret)
		print_error("convert: %s\n", tcx_error());
	rewind(lf);
	n = fread(log, 1, loglen - 1, lf);
	log[n] = 0;
	fclose(lf);
	return ret;
}

/*
 * A file truncated while it is converted, cut at @at: past the first
 * read of input (1 MiB) and inside the first 4 MiB, which a mapped input
 * would already have mapped.
 */
static void truncated_while_reading(off_t at)
{
	struct xtgen_truth *t = calloc(1, sizeof(*t));
	struct rec_convert_summary sum, ref;
	char in[256], out[256], cut[256], cutout[256], rep[300], refrep[300], log[4096];
	long events;
	FILE *f;
	char *d;

	snprintf(in, sizeof(in), "%s/shrinks.bin", tmpdir);
	snprintf(out, sizeof(out), "%s/shrinks.dat", tmpdir);
	snprintf(cut, sizeof(cut), "%s/cut.bin", tmpdir);
	snprintf(cutout, sizeof(cutout), "%s/cut.dat", tmpdir);
	make_capture(in, 8, t);

	/* the same bytes cut before the conversion: what the output must be */
	d = malloc(at);
	f = fopen(in, "r");
	assert_int_equal(fread(d, 1, at, f), at);
	fclose(f);
	f = fopen(cut, "w");
	assert_int_equal(fwrite(d, 1, at, f), at);
	fclose(f);
	free(d);
	assert_int_equal(convert(cut, cutout, &ref, log, sizeof(log)), 0);
	assert_true(ref.read.truncated > 0);

	cut_path = in;
	cut_size = at;
	cuts = 0;
	assert_int_equal(convert(in, out, &sum, log, sizeof(log)), 0);
	assert_int_equal(cuts, 1);
	assert_int_equal(file_size(in), at);
	/* the existing message, a warning, everything before the cut */
	assert_non_null(strstr(sum.read.msg, "truncated capture"));
	assert_non_null(strstr(log, "warning: "));
	assert_non_null(strstr(log, "truncated capture"));
	assert_int_equal(sum.read.bytes, at);
	assert_int_equal(sum.read.truncated, ref.read.truncated);
	assert_string_equal(sum.read.msg, ref.read.msg);
	assert_int_equal(sum.stream.records, ref.stream.records);
	assert_true(sum.stream.records > t->records / 8);
	assert_true(sum.stream.records < t->records / 2);
	events = report(out);
	assert_int_equal(events, sum.events);
	assert_int_equal(report(cutout), ref.events);
	snprintf(rep, sizeof(rep), "%s.report", out);
	snprintf(refrep, sizeof(refrep), "%s.report", cutout);
	assert_true(same_file(rep, refrep));
	rec_convert_summary_free(&sum);
	rec_convert_summary_free(&ref);
	free(t);
}

/* at a page boundary: a mapping would fault (SIGBUS) on the next page */
static void test_truncated_page(void **state)
{
	truncated_while_reading(5 << 19);
}

/* inside a page: a mapping would read zeros past the end as a bad header */
static void test_truncated_mid_page(void **state)
{
	truncated_while_reading((5 << 19) + 3);
}

/* ---- a pCPU whose records never carry a TSC ---- */

static void test_pcpu_without_tsc(void **state)
{
	struct xtgen_truth *t = calloc(1, sizeof(*t));
	struct xtgen_params p;
	struct rec_convert_summary sum;
	char in[256], out[256], log[4096];
	const uint32_t nrec = 1000000, per = 8192;
	uint32_t *win = calloc(3 + 2 * per, 4);
	long events;
	FILE *f;

	snprintf(in, sizeof(in), "%s/notsc.bin", tmpdir);
	snprintf(out, sizeof(out), "%s/notsc.dat", tmpdir);
	/* pCPU 0 from xtgen, then pCPU 1: a million HVM handler records, no TSC */
	xtgen_defaults(&p);
	p.ncpus = 1;
	p.epochs = 5;
	f = fopen(in, "w");
	assert_non_null(f);
	assert_int_equal(xtgen_write(&p, f, t), 0);
	for (uint32_t i = 0; i < per; i++) {
		win[3 + 2 * i] = TRC_HVM_INTR | 1u << 28;
		win[4 + 2 * i] = 32;
	}
	for (uint32_t done = 0; done < nrec; done += per) {
		uint32_t m = nrec - done < per ? nrec - done : per;

		win[0] = TRC_TRACE_CPU_CHANGE | 2u << 28;
		win[1] = 1;
		win[2] = m * 8;
		assert_int_equal(fwrite(win, 4, 3 + 2 * m, f), 3 + 2 * m);
	}
	assert_int_equal(fclose(f), 0);
	free(win);

	assert_int_equal(convert(in, out, &sum, log, sizeof(log)), 0);
	assert_int_equal(sum.stream.cpus, 2);
	assert_int_equal(sum.stream.no_tsc_dropped, nrec - REC_NO_TSC_HOLD);
	assert_int_equal(sum.stream.records, t->records + REC_NO_TSC_HOLD);
	assert_int_equal(sum.stream.no_tsc, t->no_tsc + REC_NO_TSC_HOLD);
	/* bounded: no more than the hold was ever queued */
	assert_true(sum.stream.peak_buffered <= REC_NO_TSC_HOLD * 8);
	/* one warning naming the count */
	assert_non_null(strstr(log, "998976 records without a TSC were dropped"));
	assert_null(strstr(strstr(log, "without a TSC") + 1, "without a TSC"));
	/* the held ones are stamped with the capture's last TSC */
	assert_int_equal(sum.stream.last_tsc, t->last_tsc);
	events = report(out);
	assert_int_equal(events, sum.events);
	rec_convert_summary_free(&sum);
	free(t);
}

static int setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	return getenv("TCX_KEEP") ? 0 : tlib_rmtree(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_truncated_page),
		cmocka_unit_test(test_truncated_mid_page),
		cmocka_unit_test(test_pcpu_without_tsc),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
