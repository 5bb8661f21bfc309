// SPDX-License-Identifier: GPL-2.0
/*
 * What dom0 writes of an agent's metadata (recorder/rec-guest-meta.c):
 * metadata made here with tdat (version 6, as the agent sends it) with
 * options a guest must not put into dom0's file, cut at every offset, and
 * with a header page that is not dom0's. Files checked with the stock
 * `trace-cmd dump`. With TCX_META_SEED set, the clean metadata is also
 * written there (the fuzzer's seed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "tdat.h"
#include "rec-guest-local.h"
#include "tcx-util.h"
#include "tlib.h"

static char dir[] = "/tmp/tcx-guest-meta-XXXXXX";

/* Metadata as the agent makes it; @inject: the options a guest must not send. */
static uint8_t *make_meta(size_t *len, bool inject, const char *header_page)
{
	char *path = tlib_path(dir, "meta.dat");
	struct tdat_params p = { .version = 6, .page_size = 4096, .cpus = 2,
				 .max_cpus = 2, .clock = "x86-tsc" };
	struct tdat_writer *w = tdat_open(path, &p);
	uint64_t v = 0x5151515151515151ull;
	uint8_t *b;

	assert_non_null(w);
	assert_int_equal(tdat_set_uname(w, "Linux guest 6.1.0 #1 SMP x86_64"), 0);
	assert_int_equal(tdat_set_version(w, "6.1.0"), 0);
	assert_int_equal(tdat_set_tsc2nsec(w, 1000, 10, 0x777777777ull), 0);
	assert_int_equal(tdat_add_option(w, TDAT_OPT_PROCMAPS, "1 a\n", 5), 0);
	if (header_page)
		assert_int_equal(tdat_set_header_page(w, header_page, strlen(header_page)), 0);
	if (inject) {
		assert_int_equal(tdat_set_traceid(w, 0x5151515151515151ull), 0);
		assert_int_equal(tdat_add_option(w, TDAT_OPT_TIME_SHIFT, &v, 8), 0);
		assert_int_equal(tdat_add_option(w, TDAT_OPT_GUEST, "evil\0", 6), 0);
		assert_int_equal(tdat_add_option(w, TDAT_OPT_OFFSET, "0x5151", 7), 0);
		assert_int_equal(tdat_add_option(w, TDAT_OPT_DATE, "0x7777", 7), 0);
	}
	assert_int_equal(tdat_start_data(w), 0);
	assert_int_equal(tdat_close(w), 0);
	b = (uint8_t *)tlib_slurp(path, len);
	assert_non_null(b);
	return b;
}

/* @meta into a new version 6 file as dom0 writes it. */
static const char *write_guest_file(const uint8_t *meta, size_t len,
			      struct rec_guest_meta_info *info)
{
	char *path = tlib_path(dir, "guest.dat");
	struct tdat_params p = { .version = 6, .page_size = 4096, .cpus = 2, .max_cpus = 2,
				 .clock = "x86-tsc" };
	struct tdat_writer *w = tdat_open(path, &p);

	assert_non_null(w);
	if (rec_guest_meta_check(meta, len, w, info))
		fail_msg("%s", tcx_error());
	assert_int_equal(tdat_set_traceid(w, 0x1234abcdull), 0);
	assert_int_equal(tdat_start_data(w), 0);
	assert_int_equal(tdat_close(w), 0);
	return path;
}

static void test_injected_dropped(void **state)
{
	static char out[1 << 16];
	struct rec_guest_meta_info info, clean;
	size_t len;
	uint8_t *meta = make_meta(&len, false, NULL);
	const char *path = write_guest_file(meta, len, &clean);

	(void)state;
	free(meta);
	meta = make_meta(&len, true, NULL);
	path = write_guest_file(meta, len, &info);
	/* a clean metadata loses nothing dom0 does not write itself */
	assert_int_equal(clean.dropped, 0);
	/* TIME_SHIFT, GUEST, OFFSET, DATE; an injected TRACEID is replaced by dom0's */
	assert_int_equal(info.dropped, 4);
	assert_string_equal(info.clock, "x86-tsc");
	assert_int_equal(tlib_dump_options(out, sizeof(out), path), 0);
	if (strstr(out, "TIME_SHIFT") || strstr(out, "GUEST") || strstr(out, "OFFSET") ||
	    strstr(out, "DATE") || strstr(out, "5151515151515151") || strstr(out, "777777777"))
		fail_msg("a guest's option in dom0's file:\n%.4000s", out);
	if (!strstr(out, "TRACEID") || !strstr(out, "0x1234ABCD") || !strstr(out, "6.1.0") ||
	    !strstr(out, "TSC2NSEC"))
		fail_msg("dom0's options missing:\n%.4000s", out);
	free(meta);
}

static void test_cut_everywhere(void **state)
{
	size_t len, ok = 0;
	uint8_t *meta = make_meta(&len, true, NULL);
	const char *seed = getenv("TCX_META_SEED");

	(void)state;
	if (seed) {
		FILE *f = fopen(seed, "w");

		assert_non_null(f);
		assert_int_equal(fwrite(meta, 1, len, f), len);
		fclose(f);
	}
	assert_int_equal(rec_guest_meta_check(meta, len, NULL, NULL), 0);
	/* the walk ends at the options' end: find it, then every shorter cut */
	while (rec_guest_meta_check(meta, ok, NULL, NULL))
		ok++;
	assert_true(ok > 100);
	for (size_t n = 0; n < ok; n++) {
		uint8_t *cut = malloc(n ? n : 1);	/* ASan sees any overread */
		struct rec_guest_meta_info info;
		int ret;

		memcpy(cut, meta, n);
		ret = rec_guest_meta_check(cut, n, NULL, &info);
		assert_true(ret < 0);
		if (!strstr(tcx_error(), "cut or malformed"))
			fail_msg("cut at %zu: %s", n, tcx_error());
		if (n % 13 == 0) {
			char *path = tlib_path(dir, "cut.dat");
			struct tdat_params p = { .version = 7, .page_size = 4096, .cpus = 2 };
			struct tdat_writer *w = tdat_open(path, &p);

			assert_non_null(w);
			assert_true(rec_guest_meta_check(cut, n, w, &info) < 0);
			tdat_close(w);
		}
		free(cut);
	}
	free(meta);
}

static void test_header_page_dom0(void **state)
{
	const char *theirs =
		"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
		"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
		"\tfield: char guest_says;\toffset:16;\tsize:4080;\tsigned:0;\n";
	struct rec_guest_meta_info info;
	size_t len, flen, mlen;
	uint8_t *meta = make_meta(&len, false, theirs);
	const char *path = write_guest_file(meta, len, &info);
	char *file = tlib_slurp(path, &flen);
	char *mine = tdat_header_page_text(4096, 8, &mlen);
	char *at;
	uint64_t n;

	(void)state;
	assert_true(info.header_page_differs);
	assert_non_null(file);
	assert_non_null(mine);
	at = memmem(file, flen, "header_page", 12);
	assert_non_null(at);
	memcpy(&n, at + 12, 8);
	assert_int_equal(n, mlen);
	assert_memory_equal(at + 20, mine, mlen);
	assert_null(memmem(file, flen, "guest_says", 10));
	free(meta);
	free(file);
	free(mine);

	/* dom0's own text from the guest: nothing to note */
	meta = make_meta(&len, false, NULL);
	path = write_guest_file(meta, len, &info);
	assert_false(info.header_page_differs);
	free(meta);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_injected_dropped),
		cmocka_unit_test(test_cut_everywhere),
		cmocka_unit_test(test_header_page_dom0),
	};
	int ret;

	if (!mkdtemp(dir))
		return 1;
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	tlib_rmtree(dir);
	return ret;
}
