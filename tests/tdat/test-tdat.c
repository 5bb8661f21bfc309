// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the tdat writer: every encoder edge and error, both file
 * versions. Files are read back with an independent parser (tfile.c) and
 * pages decoded with libtraceevent's kbuffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <traceevent/kbuffer.h>

#include "tcx-util.h"
#include "tdat.h"
#include "tfile.h"
#include "tlib.h"

#define MAXEV 200000

static char tmpdir[128];
static struct tf_ev *evs;

static const char fmt_xen[] =
	"name: xen_test\nID: 5001\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:u64 val;\toffset:8;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"val=%llu\", REC->val\n";

static void payload(uint8_t *p, size_t len, uint64_t val)
{
	uint16_t type = 5001;
	int32_t pid = 1;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + val);
	memcpy(p, &type, 2);
	p[2] = p[3] = 0;
	memcpy(p + 4, &pid, 4);
	if (len >= 16)
		memcpy(p + 8, &val, 8);
}

static char *path_in(const char *dir, const char *name)
{
	static char buf[4][256];
	static int n;
	char *p = buf[n++ & 3];

	snprintf(p, 256, "%s/%s", dir, name);
	return p;
}

static struct tdat_writer *mk_with(const char *path, const struct tdat_params *p)
{
	struct tdat_writer *w = tdat_open(path, p);

	assert_non_null(w);
	assert_int_equal(tdat_add_event_format(w, "xen", fmt_xen), 0);
	assert_int_equal(tdat_add_cmdline(w, 1, "init"), 0);
	return w;
}

static struct tdat_writer *mk(int version, const char *path, uint64_t region, int max_cpus)
{
	struct tdat_params p = { .version = version, .max_cpus = max_cpus ? max_cpus : 8,
				 .region_size = region };

	return mk_with(path, &p);
}

static void ev(struct tdat_writer *w, int cpu, uint64_t ts, size_t len, uint64_t val)
{
	uint8_t p[4096];

	payload(p, len, val);
	if (tdat_write_event(w, cpu, ts, p, len))
		fail_msg("write_event cpu %d ts %llu len %zu: %s", cpu, (unsigned long long)ts,
			 len, tcx_error());
}

static void load(const char *path, struct tf *f)
{
	if (tf_load(path, f))
		fail_msg("parse %s: %s", path, f->err);
	if (f->version == 7)
		assert_true(f->walk_end_ok);
}

static int count_type(const struct tf *f, int cpu, int page, int type)
{
	int t[2048], n, i, c = 0;

	n = tf_raw_types(f, cpu, page, t, 2048);
	for (i = 0; i < n; i++)
		c += t[i] == type;
	return c;
}

#define VERSIONED(fn) \
	static void fn##_v6(void **s) { (void)s; fn(6); } \
	static void fn##_v7(void **s) { (void)s; fn(7); }

/* ---- deltas ---- */

static void delta_edges(int v)
{
	const uint64_t T = 1000;
	const uint64_t d[] = { (1ull << 27) - 1, 1ull << 27, (1ull << 58) + 5 };
	const int ext[] = { 0, 1, 1 };
	char *path = path_in(tmpdir, "delta.dat");
	struct tf f;
	int i, n;

	for (i = 0; i < 3; i++) {
		struct tdat_writer *w = mk(v, path, 0, 0);

		assert_int_equal(tdat_start_data(w), 0);
		ev(w, 0, T, 16, 1);
		ev(w, 0, T + d[i], 16, 2);
		ev(w, 0, T + d[i] + 1, 16, 3);
		assert_int_equal(tdat_close(w), 0);
		load(path, &f);
		n = tf_events(&f, 0, evs, MAXEV);
		assert_int_equal(n, 3);
		assert_int_equal(evs[0].ts, T);
		assert_int_equal(evs[1].ts, T + d[i]);
		assert_int_equal(evs[2].ts, T + d[i] + 1);
		assert_int_equal(evs[1].page, 0);
		assert_int_equal(count_type(&f, 0, 0, 30), ext[i]);
		assert_int_equal(memcmp(evs[1].data + 8, &(uint64_t){ 2 }, 8), 0);
		tf_free(&f);
	}
}
VERSIONED(delta_edges)

static void gap_over_2_59(int v)
{
	const uint64_t T = 77, G = (1ull << 59) + 3;
	char *path = path_in(tmpdir, "gap.dat");
	struct tdat_writer *w = mk(v, path, 0, 0);
	struct tf f;

	assert_int_equal(tdat_start_data(w), 0);
	ev(w, 0, T, 16, 1);
	ev(w, 0, T + G, 16, 2);
	ev(w, 0, T + 2 * G, 16, 3);
	assert_int_equal(tdat_close(w), 0);
	load(path, &f);
	assert_int_equal(tf_events(&f, 0, evs, MAXEV), 3);
	assert_int_equal(evs[1].ts, T + G);
	assert_int_equal(evs[2].ts, T + 2 * G);
	/* each such gap starts a page, whose base timestamp is 64-bit */
	assert_int_equal(evs[1].page, 1);
	assert_int_equal(evs[2].page, 2);
	tf_free(&f);
}
VERSIONED(gap_over_2_59)

/* ---- page filling ---- */

static void exact_full_page(int v)
{
	char *path = path_in(tmpdir, "full.dat");
	struct tdat_writer *w = mk(v, path, 0, 0);
	int per = (4096 - 16) / 20, i;		/* 204 events of 4 + 16 bytes */
	struct tf f;

	assert_int_equal(tdat_start_data(w), 0);
	for (i = 0; i < per + 1; i++)
		ev(w, 0, 100 + i, 16, i);
	assert_int_equal(tdat_close(w), 0);
	load(path, &f);
	assert_int_equal(tf_events(&f, 0, evs, MAXEV), per + 1);
	assert_int_equal(tf_commit(&f, 0, 0), 4080);
	assert_int_equal(count_type(&f, 0, 0, 29), 0);
	assert_int_equal(count_type(&f, 0, 0, 4), per);
	assert_int_equal(evs[per - 1].page, 0);
	assert_int_equal(evs[per].page, 1);
	assert_int_equal(evs[per].ts, 100 + per);
	tf_free(&f);
}
VERSIONED(exact_full_page)

static void padding_at_end(int v)
{
	char *path = path_in(tmpdir, "pad.dat");
	struct tdat_writer *w = mk(v, path, 0, 0);
	int per = 4080 / 104, i;		/* 39 events, 24 bytes left */
	struct tf f;

	assert_int_equal(tdat_start_data(w), 0);
	for (i = 0; i < per + 1; i++)
		ev(w, 0, 100 + i, 100, i);
	assert_int_equal(tdat_close(w), 0);
	load(path, &f);
	assert_int_equal(tf_events(&f, 0, evs, MAXEV), per + 1);
	/* the kernel pads the tail with a type 29 event the commit covers */
	assert_int_equal(tf_commit(&f, 0, 0), 4080);
	assert_int_equal(count_type(&f, 0, 0, 29), 1);
	assert_int_equal(evs[per].page, 1);
	for (i = 0; i < per + 1; i++)
		assert_int_equal(evs[i].size, 100);
	tf_free(&f);
}
VERSIONED(padding_at_end)

static void payload_112_116(int v)
{
	const size_t len[] = { 112, 116, 13, 4000 };
	const int type[] = { 28, 0, 4, 0 };
	char *path = path_in(tmpdir, "long.dat");
	uint8_t want[4096];
	struct tf f;
	int i, t[8];

	for (i = 0; i < 4; i++) {
		struct tdat_writer *w = mk(v, path, 0, 0);

		assert_int_equal(tdat_start_data(w), 0);
		ev(w, 0, 500, len[i], 9);
		assert_int_equal(tdat_close(w), 0);
		load(path, &f);
		assert_int_equal(tf_events(&f, 0, evs, MAXEV), 1);
		assert_int_equal(evs[0].size, (len[i] + 3) & ~3u);
		payload(want, len[i], 9);
		assert_memory_equal(evs[0].data, want, len[i]);
		/* rounding bytes are zero, not stale memory */
		if (len[i] & 3)
			assert_int_equal(evs[0].data[len[i]], 0);
		assert_true(tf_raw_types(&f, 0, 0, t, 8) >= 1);
		assert_int_equal(t[0], type[i]);
		tf_free(&f);
	}
}
VERSIONED(payload_112_116)


static void four_bytes_left(int v)
{
	char *path = path_in(tmpdir, "four.dat");
	struct tdat_writer *w = mk(v, path, 0, 0);
	struct tf f;
	int i;

	assert_int_equal(tdat_start_data(w), 0);
	/* 203 x 20 + 16 = 4076: 4 bytes left, too few for a padding event */
	for (i = 0; i < 203; i++)
		ev(w, 0, 100 + i, 16, i);
	ev(w, 0, 400, 12, 203);
	ev(w, 0, 401, 16, 204);
	assert_int_equal(tdat_close(w), 0);
	load(path, &f);
	assert_int_equal(tf_events(&f, 0, evs, MAXEV), 205);
	assert_int_equal(tf_commit(&f, 0, 0), 4076);
	assert_int_equal(count_type(&f, 0, 0, 29), 0);
	assert_int_equal(evs[203].size, 12);
	assert_int_equal(evs[204].page, 1);
	tf_free(&f);
}
VERSIONED(four_bytes_left)

/* ---- missed events ---- */

static void missed(int v, uint64_t count)
{
	char *path = path_in(tmpdir, "missed.dat");
	struct tdat_writer *w = mk(v, path, 0, 0);
	struct tdat_stats st;
	uint64_t commit, stored;
	struct tf f;
	int i, n;

	assert_int_equal(tdat_start_data(w), 0);
	ev(w, 1, 10, 16, 0);
	assert_int_equal(tdat_mark_missed(w, 1, count), 0);
	/* fill the marked page to the brim: the count still needs its room */
	for (i = 0; i < 300; i++)
		ev(w, 1, 20 + i, 16, i + 1);
	assert_int_equal(tdat_get_stats(w, 1, &st), 0);
	assert_int_equal(st.missed, count);
	assert_int_equal(tdat_close(w), 0);
	load(path, &f);
	n = tf_events(&f, 1, evs, MAXEV);
	assert_int_equal(n, 301);
	assert_int_equal(evs[0].missed, 0);
	assert_int_equal(evs[1].page, 1);
	assert_int_equal(evs[1].missed, count ? (int)count : -1);
	commit = tf_commit(&f, 1, 1);
	assert_true(commit & TDAT_MISSED_EVENTS);
	assert_int_equal(!!(commit & TDAT_MISSED_STORED), !!count);
	if (count) {
		assert_true((commit & TDAT_COMMIT_MASK) <= 4080 - 8);
		memcpy(&stored, f.buf + tf_cpu(&f, 1)->off + 4096 + 16 + (commit & TDAT_COMMIT_MASK), 8);
		assert_int_equal(stored, count);
	}
	/* the page after carries no mark */
	assert_int_equal(tf_commit(&f, 1, 2) & ~(uint64_t)TDAT_COMMIT_MASK, 0);
	tf_free(&f);
}
static void missed_count_v6(void **s) { (void)s; missed(6, 7); }
static void missed_count_v7(void **s) { (void)s; missed(7, 123456); }
static void missed_unknown_v6(void **s) { (void)s; missed(6, 0); }
static void missed_unknown_v7(void **s) { (void)s; missed(7, 0); }

/* ---- layout: CPU counts, tables ---- */

static void sparse_cpus(int v)
{
	char *path = path_in(tmpdir, "sparse.dat");
	struct tdat_params p = { .version = v, .max_cpus = 16, .cpus = 4 };
	struct tdat_writer *w = tdat_open(path, &p);
	struct tf f;

	assert_non_null(w);
	assert_int_equal(tdat_add_event_format(w, "xen", fmt_xen), 0);
	assert_int_equal(tdat_start_data(w), 0);
	ev(w, 2, 5, 16, 1);
	ev(w, 6, 6, 16, 2);
	assert_int_equal(tdat_close(w), 0);
	load(path, &f);
	/* highest CPU with data + 1 beats the declared 4 */
	assert_int_equal(f.cpus, 7);
	assert_non_null(tf_cpu(&f, 2));
	assert_non_null(tf_cpu(&f, 6));
	assert_null(tf_cpu(&f, 0));
	assert_int_equal(f.nent, v == 6 ? 7 : 2);
	assert_int_equal(tf_events(&f, 6, evs, MAXEV), 1);
	tf_free(&f);
}
VERSIONED(sparse_cpus)

static void header_long4(int v)
{
	static const char hp[] =
		"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
		"\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n"
		"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
		"\tfield: char data;\toffset:12;\tsize:4084;\tsigned:0;\n";
	char *path = path_in(tmpdir, "l4.dat");
	struct tdat_writer *w = mk(v, path, 0, 0);
	struct tf f;
	int i;

	assert_int_equal(tdat_set_header_page(w, hp, sizeof(hp) - 1), 0);
	assert_int_equal(tdat_start_data(w), 0);
	for (i = 0; i < 300; i++)
		ev(w, 0, 1 + i, 16, i);
	assert_int_equal(tdat_close(w), 0);
	load(path, &f);
	assert_int_equal(f.long_size, 4);
	assert_int_equal(tf_events(&f, 0, evs, MAXEV), 300);
	assert_int_equal(evs[299].ts, 300);
	tf_free(&f);
}
VERSIONED(header_long4)


static void max_cpus_4096(int v)
{
	char *path = path_in(tmpdir, "wide.dat");
	struct tdat_params p = { .version = v, .max_cpus = TDAT_MAX_CPUS };
	struct tdat_writer *w = tdat_open(path, &p);
	int cpus[] = { 4095, 7, 2048, 0 }, i;
	struct tf f;

	assert_non_null(w);
	assert_int_equal(tdat_add_event_format(w, "xen", fmt_xen), 0);
	assert_int_equal(tdat_start_data(w), 0);
	/* CPUs appear in any order; each one rewrites the table */
	for (i = 0; i < 4; i++) {
		ev(w, cpus[i], 100 + i, 16, i);
		assert_int_equal(tdat_flush(w), 0);
	}
	assert_int_equal(tdat_write_event(w, 4096, 200, evs, 16), -EINVAL);
	assert_int_equal(tdat_close(w), 0);
	load(path, &f);
	assert_int_equal(f.cpus, 4096);
	assert_int_equal(f.nent, v == 6 ? 4096 : 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(tf_events(&f, cpus[i], evs, MAXEV), 1);
		assert_int_equal(evs[0].ts, 100 + i);
	}
	tf_free(&f);
}
VERSIONED(max_cpus_4096)

/* ---- options ---- */

static void late_and_appended_options(void **s)
{
	char *path = path_in(tmpdir, "append.dat");
	struct tdat_writer *w = mk(7, path, 0, 0);
	uint64_t ts[2] = { 100, 2000 }, ts1[2] = { 150, 2500 };
	int64_t off[2] = { 5000, 6000 }, sc[2] = { 3, 3 }, fr[2] = { 1, 1 };
	struct tdat_time_shift_cpu cpus[2] = {
		{ 2, ts, off, sc, fr }, { 2, ts1, off, sc, fr },
	};
	uint32_t pids[2] = { 11, 12 }, u32;
	const struct tf_opt *o;
	struct tdat_appender *a;
	struct tf f;
	uint64_t u64;

	(void)s;
	assert_int_equal(tdat_start_data(w), 0);
	ev(w, 0, 10, 16, 1);
	/* after start: kept for a chained section written at close */
	assert_int_equal(tdat_add_guest(w, "g1", 0xabc, 2, pids), 0);
	assert_int_equal(tdat_close(w), 0);
	load(path, &f);
	assert_int_equal(f.noptsec, 2);
	o = tf_opt(&f, TDAT_OPT_GUEST, 0);
	assert_non_null(o);
	assert_int_equal(o->section, 1);
	assert_string_equal((const char *)o->data, "g1");
	tf_free(&f);

	a = tdat_append_open(path);
	assert_non_null(a);
	assert_int_equal(tdat_append_time_shift(a, 0x77, TDAT_TSHIFT_INTERPOLATE, 2, cpus), 0);
	assert_int_equal(tdat_append_option(a, TDAT_OPT_UNAME, "x y z w", 8), 0);
	assert_int_equal(tdat_append_close(a), 0);
	load(path, &f);
	assert_int_equal(f.noptsec, 3);
	o = tf_opt(&f, TDAT_OPT_TIME_SHIFT, 0);
	assert_non_null(o);
	assert_int_equal(o->section, 2);
	/* peer, flags, ncpu, 2 x {count, ts[2], off[2], scaling[2]}, frac 2 x 2 */
	assert_int_equal(o->size, 8 + 4 + 4 + 2 * (4 + 6 * 8) + 4 * 8);
	memcpy(&u64, o->data, 8);
	assert_int_equal(u64, 0x77);
	memcpy(&u32, o->data + 12, 4);
	assert_int_equal(u32, 2);
	memcpy(&u64, o->data + 16 + 4 + 8, 8);
	assert_int_equal(u64, 2000);
	memcpy(&u64, o->data + o->size - 8, 8);
	assert_int_equal(u64, 1);
	assert_non_null(tf_opt(&f, TDAT_OPT_UNAME, 1));
	assert_int_equal(tf_events(&f, 0, evs, MAXEV), 1);
	tf_free(&f);
}

/* The text of the cmdlines section that option 21 @nth points to. */
static const char *cmdlines_at(const struct tf *f, int nth, uint64_t *len)
{
	const struct tf_opt *o = tf_opt(f, 21, nth);
	uint64_t off, sz;
	uint16_t id;

	assert_non_null(o);
	memcpy(&off, o->data, 8);
	assert_true(off + 24 <= f->len);
	memcpy(&id, f->buf + off, 2);
	assert_int_equal(id, 21);
	memcpy(&sz, f->buf + off + 8, 8);
	memcpy(len, f->buf + off + 16, 8);
	assert_int_equal(sz, 8 + *len);
	assert_true(off + 16 + sz <= f->len);
	return (const char *)f->buf + off + 24;
}

static void late_cmdlines(void **s)
{
	char *path = path_in(tmpdir, "latecmd.dat");
	struct tdat_writer *w = mk(7, path, 4096, 0);
	uint32_t pids[1] = { 7 };
	struct tdat_appender *a;
	const char *text;
	struct tf f;
	uint64_t len;
	int i;

	(void)s;
	assert_int_equal(tdat_start_data(w), 0);
	for (i = 0; i < 300; i++)
		ev(w, i & 1, 10 + i, 24, i);
	/* after start: a second cmdlines section after the data, at close */
	assert_int_equal(tdat_add_cmdline(w, 5, "late"), 0);
	assert_int_equal(tdat_add_cmdline(w, 7, "d1v0"), 0);
	assert_int_equal(tdat_add_cmdline(w, 8, ""), -EINVAL);
	assert_int_equal(tdat_add_guest(w, "g1", 0xabc, 1, pids), 0);
	assert_int_equal(tdat_close(w), 0);
	load(path, &f);
	assert_int_equal(f.noptsec, 2);
	/* the first section keeps the early lines; the chained option wins */
	text = cmdlines_at(&f, 0, &len);
	assert_int_equal(len, 7);
	assert_memory_equal(text, "1 init\n", 7);
	assert_int_equal(tf_opt(&f, 21, 1)->section, 1);
	text = cmdlines_at(&f, 1, &len);
	assert_int_equal(len, 21);
	assert_memory_equal(text, "1 init\n5 late\n7 d1v0\n", 21);
	assert_non_null(tf_opt(&f, TDAT_OPT_GUEST, 0));
	assert_int_equal(tf_events(&f, 0, evs, MAXEV), 150);
	assert_int_equal(tf_events(&f, 1, evs, MAXEV), 150);
	tf_free(&f);

	/* appending to such a file: chained after it, the walk still ends at EOF */
	a = tdat_append_open(path);
	assert_non_null(a);
	assert_int_equal(tdat_append_option(a, TDAT_OPT_UNAME, "x y z w", 8), 0);
	assert_int_equal(tdat_append_close(a), 0);
	load(path, &f);
	assert_int_equal(f.noptsec, 3);
	text = cmdlines_at(&f, 1, &len);
	assert_memory_equal(text, "1 init\n5 late\n7 d1v0\n", 21);
	assert_non_null(tf_opt(&f, TDAT_OPT_UNAME, 1));
	tf_free(&f);

	/* version 6 has nowhere to put them */
	w = mk(6, path, 0, 0);
	assert_int_equal(tdat_start_data(w), 0);
	assert_int_equal(tdat_add_cmdline(w, 5, "late"), -EBUSY);
	assert_non_null(strstr(tcx_error(), "version 6"));
	assert_int_equal(tdat_close(w), 0);
}

static void v6_options_refused_late(void **s)
{
	char *path = path_in(tmpdir, "late6.dat");
	struct tdat_writer *w = mk(6, path, 0, 0);

	(void)s;
	assert_int_equal(tdat_start_data(w), 0);
	assert_int_equal(tdat_set_traceid(w, 5), -EBUSY);
	assert_non_null(strstr(tcx_error(), "version 6"));
	assert_int_equal(tdat_close(w), 0);
	errno = 0;
	assert_null(tdat_append_open(path));
	assert_int_equal(errno, EOPNOTSUPP);
	assert_non_null(strstr(tcx_error(), "version"));
}

static void options_in_file(int v)
{
	char *path = path_in(tmpdir, "opts.dat");
	struct tdat_writer *w = mk(v, path, 0, 0);
	uint32_t pids[3] = { 65537, 65538, 65539 };
	const struct tf_opt *o;
	struct tf f;
	uint64_t id;

	assert_int_equal(tdat_set_traceid(w, 0x1122334455667788ull), 0);
	assert_int_equal(tdat_add_guest(w, "d1", 42, 3, pids), 0);
	assert_int_equal(tdat_set_tsc2nsec(w, 1000, 10, 0), 0);
	assert_int_equal(tdat_add_cpustat(w, 0, "entries: 1\n"), 0);
	assert_int_equal(tdat_start_data(w), 0);
	ev(w, 0, 10, 16, 1);
	assert_int_equal(tdat_close(w), 0);
	load(path, &f);
	o = tf_opt(&f, TDAT_OPT_TRACEID, 0);
	assert_non_null(o);
	memcpy(&id, o->data, 8);
	assert_int_equal(id, 0x1122334455667788ull);
	o = tf_opt(&f, TDAT_OPT_GUEST, 0);
	assert_non_null(o);
	assert_int_equal(o->size, 3 + 8 + 4 + 3 * 8);
	assert_non_null(tf_opt(&f, TDAT_OPT_TSC2NSEC, 0));
	assert_non_null(tf_opt(&f, TDAT_OPT_CPUSTAT, 0));
	o = tf_opt(&f, TDAT_OPT_TRACECLOCK, 0);
	assert_non_null(o);
	/* TSC2NSEC without a clock: the file's clock is the TSC */
	assert_string_equal((const char *)o->data, "[x86-tsc]");
	tf_free(&f);
}
VERSIONED(options_in_file)

static void time_shift_checks(void **s)
{
	char *path = path_in(tmpdir, "ts.dat");
	struct tdat_writer *w = mk(7, path, 0, 0);
	uint64_t ts[2] = { 100, 200 }, dup[2] = { 100, 100 };
	int64_t off[2] = { 0, 7 }, sc[2] = { 1, 1 }, sc0[2] = { 1, 0 }, sc3[1] = { 3 };
	struct tdat_time_shift_cpu c[2];

	(void)s;
	c[0] = (struct tdat_time_shift_cpu){ 2, ts, off, sc, NULL };
	c[1] = (struct tdat_time_shift_cpu){ 0, ts, off, sc, NULL };
	assert_int_equal(tdat_set_time_shift(w, 1, 0, 2, c), -EINVAL);
	assert_non_null(strstr(tcx_error(), "CPU 1 has 0 samples"));
	c[1].count = 1;
	assert_int_equal(tdat_set_time_shift(w, 1, 0, 2, c), -EINVAL);
	assert_non_null(strstr(tcx_error(), "must be equal"));
	c[1] = (struct tdat_time_shift_cpu){ 2, ts, off, sc0, NULL };
	assert_int_equal(tdat_set_time_shift(w, 1, 0, 2, c), -EINVAL);
	assert_non_null(strstr(tcx_error(), "scaling 0"));
	c[1] = (struct tdat_time_shift_cpu){ 2, dup, off, sc, NULL };
	assert_int_equal(tdat_set_time_shift(w, 1, 0, 2, c), -EINVAL);
	assert_non_null(strstr(tcx_error(), "share ts 100"));
	c[0] = (struct tdat_time_shift_cpu){ 1, ts, off, sc3, NULL };
	assert_int_equal(tdat_set_time_shift(w, 1, 0, 1, c), -EINVAL);
	assert_non_null(strstr(tcx_error(), "one sample with scaling 3"));
	/* an offset of 0 is kept by readers: accepted */
	c[0] = (struct tdat_time_shift_cpu){ 2, ts, off, sc, NULL };
	c[1] = (struct tdat_time_shift_cpu){ 2, ts, off, sc, NULL };
	assert_int_equal(tdat_set_time_shift(w, 1, 0, 2, c), 0);
	assert_int_equal(tdat_close(w), 0);
}

/* ---- regions: growth and compaction ---- */

static void grow_and_compact(const char *dir)
{
	char *path = path_in(dir, "grow.dat");
	struct tdat_writer *w = mk(7, path, 4096, 4);
	const int per = 12000, ncpu = 3;
	uint64_t end = 0, total = 0;
	struct stat st;
	struct tf f;
	int i, c, n, fd;

	assert_int_equal(tdat_start_data(w), 0);
	for (i = 0; i < per; i++)
		for (c = 0; c < ncpu; c++)
			ev(w, c, 1000 + i * 10 + c, 16, i);
	assert_int_equal(tdat_close(w), 0);
	load(path, &f);
	for (c = 0; c < ncpu; c++) {
		n = tf_events(&f, c, evs, MAXEV);
		assert_int_equal(n, per);
		for (i = 0; i < per; i++) {
			uint64_t val;

			memcpy(&val, evs[i].data + 8, 8);
			if (val != (uint64_t)i || evs[i].ts != (uint64_t)(1000 + i * 10 + c))
				fail_msg("cpu %d event %d: val %llu ts %llu", c, i,
					 (unsigned long long)val, (unsigned long long)evs[i].ts);
		}
	}
	/* compact: regions back to back, ending at EOF, no holes */
	for (c = 0; c < f.nent; c++) {
		total += f.ent[c].size;
		if (f.ent[c].off + f.ent[c].size > end)
			end = f.ent[c].off + f.ent[c].size;
	}
	assert_int_equal(end, f.len);
	assert_int_equal(total, end - (f.ent[0].off < f.ent[1].off ?
				      (f.ent[0].off < f.ent[2].off ? f.ent[0].off : f.ent[2].off) :
				      (f.ent[1].off < f.ent[2].off ? f.ent[1].off : f.ent[2].off)));
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(lseek(fd, 0, SEEK_HOLE), (off_t)f.len);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true((uint64_t)st.st_blocks * 512 >= f.len);
	close(fd);
	tf_free(&f);
	unlink(path);
}

static void grow_ext4(void **s) { (void)s; grow_and_compact(tmpdir); }

/* @fn on tmpfs, in a directory of its own that it leaves empty (mkdtemp's template). */
static void in_shm_dir(void (*fn)(const char *dir))
{
	char dir[] = "/dev/shm/tdat-unit-XXXXXX";

	if (!mkdtemp(dir))
		skip();
	fn(dir);
	rmdir(dir);
}

/* ---- direct writes ---- */

/* Pages of @path in the page cache, of @total. */
static size_t cached_pages(const char *path, size_t *total)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	unsigned char *vec;
	size_t n, in = 0;
	void *m;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	n = ((size_t)st.st_size + 4095) / 4096;
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	vec = malloc(n);
	assert_non_null(vec);
	assert_int_equal(mincore(m, (size_t)st.st_size, vec), 0);
	for (size_t i = 0; i < n; i++)
		in += vec[i] & 1;
	free(vec);
	munmap(m, (size_t)st.st_size);
	close(fd);
	*total = n;
	return in;
}

static struct tdat_writer *mk_direct(const char *path, bool direct)
{
	struct tdat_params p = { .version = 7, .max_cpus = 4, .region_size = 4096,
				 .batch_bytes = 16384, .direct = direct };

	return mk_with(path, &p);
}

/*
 * With and without O_DIRECT, the same file to the byte: regions grown by
 * inserts between direct writes, flushes, loss marks, and raw pages from
 * an unaligned buffer (those go buffered). Direct where statx offers it.
 */
static void direct_same_file(const char *dir)
{
	char *src = path_in(dir, "dsrc.dat"), *pa = path_in(dir, "dbuf.dat");
	char *pb = path_in(dir, "ddir.dat");
	enum { NP = 12 };
	struct tdat_writer *w[2];
	uint8_t *raw;
	struct tf f, fa, fb;

	w[0] = mk_direct(src, false);
	assert_int_equal(tdat_start_data(w[0]), 0);
	for (int i = 0; i < 170 * NP; i++)
		ev(w[0], 0, 1000 + i, 20, i);
	assert_int_equal(tdat_close(w[0]), 0);
	load(src, &f);
	assert_int_equal(tf_cpu(&f, 0)->size, NP * 4096ull);
	raw = malloc(NP * 4096 + 8);
	assert_non_null(raw);
	memcpy(raw + 8, f.buf + tf_cpu(&f, 0)->off, NP * 4096);
	tf_free(&f);

	w[0] = mk_direct(pa, false);
	w[1] = mk_direct(pb, true);
	assert_false(tdat_is_direct(w[0]));
	for (int k = 0; k < 2; k++) {
		assert_int_equal(tdat_start_data(w[k]), 0);
		for (int i = 0; i < 30000; i++) {
			ev(w[k], i % 3, 5000 + i, 8 + (i % 5) * 8, i);
			if (i % 7001 == 7000)
				assert_int_equal(tdat_flush(w[k]), 0);
			if (i % 9001 == 9000)
				assert_int_equal(tdat_mark_missed(w[k], 1, 5), 0);
		}
		if (k == 1 && tdat_is_direct(w[1])) {
			size_t total, in = cached_pages(pb, &total);

			/* the pages went past the page cache: only metadata is there */
			if (in * 8 > total)
				fail_msg("%zu of %zu pages of the direct file are cached", in, total);
		}
		assert_int_equal(tdat_write_pages(w[k], 3, raw + 8, NP, NULL), 0);
	}
	assert_int_equal(tdat_is_direct(w[1]), tlib_dio_offered(dir));
	assert_int_equal(tdat_close(w[0]), 0);
	assert_int_equal(tdat_close(w[1]), 0);
	load(pa, &fa);
	load(pb, &fb);
	assert_int_equal(fa.len, fb.len);
	assert_memory_equal(fa.buf, fb.buf, fa.len);
	assert_int_equal(tf_events(&fb, 3, evs, MAXEV), 170 * NP);
	assert_int_equal(tf_events(&fb, 0, evs, MAXEV), 10000);
	tf_free(&fa);
	tf_free(&fb);
	free(raw);
	unlink(src);
	unlink(pa);
	unlink(pb);
}

static void direct_ext4(void **s)
{
	(void)s;
	direct_same_file(tmpdir);
}

static void direct_tmpfs(void **s)
{
	(void)s;
	in_shm_dir(direct_same_file);
}

static void grow_tmpfs(void **s)
{
	(void)s;
	in_shm_dir(grow_and_compact);
}

static void readable_while_writing(int v)
{
	char *path = path_in(tmpdir, "live.dat");
	struct tdat_writer *w = mk(v, path, 8192, 4);
	struct tf f;
	int i;

	assert_int_equal(tdat_start_data(w), 0);
	for (i = 0; i < 5000; i++)
		ev(w, i & 1, 100 + i, 16, i);
	assert_int_equal(tdat_flush(w), 0);
	/* no close: the sizes on disk already cover what was flushed */
	load(path, &f);
	assert_int_equal(tf_events(&f, 0, evs, MAXEV), 2500);
	assert_int_equal(tf_events(&f, 1, evs, MAXEV), 2500);
	tf_free(&f);
	ev(w, 0, 100000, 16, 1);
	assert_int_equal(tdat_close(w), 0);
	load(path, &f);
	assert_int_equal(tf_events(&f, 0, evs, MAXEV), 2501);
	tf_free(&f);
}
VERSIONED(readable_while_writing)

/* ---- raw pages ---- */

static void raw_pages(int v)
{
	char *src = path_in(tmpdir, "rawsrc.dat"), *path = path_in(tmpdir, "raw.dat");
	struct tdat_writer *w = mk(v, src, 0, 0);
	struct tdat_stats st;
	uint8_t good[4096], bad[4096];
	uint64_t commit;
	struct tf f;
	int i;

	assert_int_equal(tdat_start_data(w), 0);
	for (i = 0; i < 150; i++)
		ev(w, 0, 1000 + i, 20, i);
	assert_int_equal(tdat_close(w), 0);
	load(src, &f);
	memcpy(good, f.buf + tf_cpu(&f, 0)->off, 4096);
	tf_free(&f);

	w = mk(v, path, 0, 0);
	assert_int_equal(tdat_start_data(w), 0);
	/* commit beyond the page */
	memcpy(bad, good, 4096);
	commit = 4081;
	memcpy(bad + 8, &commit, 8);
	assert_int_equal(tdat_write_page(w, 0, bad), -EBADMSG);
	assert_non_null(strstr(tcx_error(), "commit 4081"));
	/* an event running past the commit */
	memcpy(bad, good, 4096);
	commit = 40;
	memcpy(bad + 8, &commit, 8);
	assert_int_equal(tdat_write_page(w, 0, bad), -EBADMSG);
	/* unknown flag bits */
	commit = 100 | (1ull << 40);
	memcpy(bad + 8, &commit, 8);
	assert_int_equal(tdat_write_page(w, 0, bad), -EBADMSG);
	/* an empty page is skipped */
	commit = 0;
	memcpy(bad + 8, &commit, 8);
	assert_int_equal(tdat_write_page(w, 0, bad), 0);
	assert_int_equal(tdat_write_page(w, 0, good), 0);
	assert_int_equal(tdat_get_stats(w, 0, &st), 0);
	assert_int_equal(st.bad_pages, 3);
	assert_int_equal(st.pages, 1);
	assert_int_equal(st.events, 150);
	/* a loss before a raw page marks it, without a count */
	assert_int_equal(tdat_mark_missed(w, 1, 3), 0);
	assert_int_equal(tdat_write_page(w, 1, good), 0);
	/* encoded events after the raw page keep the time order */
	ev(w, 0, 5000, 16, 1);
	assert_int_equal(tdat_write_event(w, 0, 4999, good + 16 + 4, 20), -ERANGE);
	assert_int_equal(tdat_close(w), 0);
	load(path, &f);
	assert_int_equal(tf_events(&f, 0, evs, MAXEV), 151);
	assert_memory_equal(f.buf + tf_cpu(&f, 0)->off, good, 4096);
	assert_int_equal(evs[149].ts, 1149);
	assert_int_equal(evs[150].ts, 5000);
	assert_int_equal(tf_events(&f, 1, evs, MAXEV), 150);
	assert_int_equal(evs[0].missed, -1);
	assert_int_equal(tf_commit(&f, 1, 0), tf_commit(&f, 0, 0) | TDAT_MISSED_EVENTS);
	tf_free(&f);
}
VERSIONED(raw_pages)

/* Many pages in one call: the same file and counts as one page a call. */
static void raw_pages_batch(int v)
{
	char *src = path_in(tmpdir, "batchsrc.dat"), *one = path_in(tmpdir, "batch1.dat");
	char *many = path_in(tmpdir, "batchn.dat");
	enum { N = 200 };
	struct tdat_writer *w, *wn;
	struct tdat_stats s1, sn;
	uint64_t commit, oo = 0;
	uint8_t *pg;
	struct tf f, fn;
	int i, c, n1, nn, ret;

	w = mk(v, src, 0, 0);
	assert_int_equal(tdat_start_data(w), 0);
	/* 170 events of 24 bytes fill a page */
	for (i = 0; i < 170 * (N - 10); i++)
		ev(w, 0, 1000 + i, 20, i);
	assert_int_equal(tdat_close(w), 0);
	load(src, &f);
	assert_int_equal(tf_cpu(&f, 0)->size, (N - 10) * 4096ull);
	pg = malloc(N * 4096);
	assert_non_null(pg);
	memcpy(pg, f.buf + tf_cpu(&f, 0)->off, (N - 10) * 4096);
	tf_free(&f);
	/* the tail: bad, empty, out of order; every other page empty early on */
	for (i = N - 10; i < N; i++)
		memcpy(pg + i * 4096, pg + (N - 11) * 4096, 4096);
	commit = 4081;
	memcpy(pg + (N - 9) * 4096 + 8, &commit, 8);
	commit = 0;
	memcpy(pg + (N - 8) * 4096 + 8, &commit, 8);
	for (i = 1; i < 140; i += 2)
		memcpy(pg + i * 4096 + 8, &commit, 8);

	w = mk(v, one, 0, 0);
	wn = mk(v, many, 0, 0);
	assert_int_equal(tdat_start_data(w), 0);
	assert_int_equal(tdat_start_data(wn), 0);
	/* CPU 1: an open event page first; CPU 2: a loss mark first */
	ev(w, 1, 10, 16, 1);
	ev(wn, 1, 10, 16, 1);
	assert_int_equal(tdat_mark_missed(w, 2, 5), 0);
	assert_int_equal(tdat_mark_missed(wn, 2, 5), 0);
	for (c = 0; c < 3; c++) {
		for (i = 0, n1 = 0; i < N; i++) {
			ret = tdat_write_page(w, c, pg + i * 4096);
			n1 += ret == -ERANGE;
			assert_true(ret == 0 || ret == -EBADMSG || ret == -ERANGE);
		}
		/* calls of 1, 2, ... pages: runs split at every edge */
		for (i = 0, nn = 1; i < N; i += nn, nn++)
			assert_int_equal(tdat_write_pages(wn, c, pg + i * 4096,
							  i + nn > N ? N - i : nn, &oo), 0);
		assert_int_equal(n1, 8);
	}
	assert_int_equal(oo, 24);
	/* one call of all of them, on a CPU of its own */
	assert_int_equal(tdat_write_pages(wn, 3, pg, N, &oo), 0);
	for (i = 0; i < N; i++)
		tdat_write_page(w, 3, pg + i * 4096);
	assert_int_equal(oo, 32);
	for (c = -1; c < 4; c++) {
		assert_int_equal(tdat_get_stats(w, c, &s1), 0);
		assert_int_equal(tdat_get_stats(wn, c, &sn), 0);
		assert_memory_equal(&s1, &sn, sizeof(s1));
	}
	assert_int_equal(tdat_close(w), 0);
	assert_int_equal(tdat_close(wn), 0);
	load(one, &f);
	load(many, &fn);
	for (c = 0; c < 4; c++) {
		assert_true(tf_cpu(&f, c)->size > 0);
		assert_int_equal(tf_cpu(&f, c)->size, tf_cpu(&fn, c)->size);
		assert_memory_equal(f.buf + tf_cpu(&f, c)->off, fn.buf + tf_cpu(&fn, c)->off,
				    tf_cpu(&f, c)->size);
	}
	assert_int_equal(tf_commit(&fn, 2, 0), tf_commit(&fn, 0, 0) | TDAT_MISSED_EVENTS);
	tf_free(&f);
	tf_free(&fn);
	free(pg);
}
VERSIONED(raw_pages_batch)

/*
 * Events through tdat_run_reserve() give the file tdat_reserve() gives:
 * sizes 8..120 (the long form past 112), deltas up to and past 2^27, full
 * pages, runs ended and begun at random, a loss mark and a flush between
 * runs, a CPU with no page yet.
 */
static void run_reserve(int v)
{
	char *a = path_in(tmpdir, "run-a.dat"), *b = path_in(tmpdir, "run-b.dat");
	struct tdat_writer *wa = mk(v, a, 0, 0), *wb = mk(v, b, 0, 0);
	uint64_t seed = 0x2545f4914f6cdd1dull, ts[3] = { 100, 100, 100 };
	struct tdat_run run = { 0 };
	int run_cpu = -1, fast = 0, slow = 0;
	struct tdat_stats sa, sb;
	struct tf fa, fb;

	assert_int_equal(tdat_start_data(wa), 0);
	assert_int_equal(tdat_start_data(wb), 0);
	for (int i = 0; i < 60000; i++) {
		int cpu, r;
		size_t len;
		uint8_t *pa, *pb;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		r = (int)(seed >> 33);
		cpu = r % 7 ? 0 : 1 + r % 2;
		len = 8 + (size_t)(r >> 4) % 29 * 4 - ((r >> 9) & 3);
		if (len < 8)
			len = 8;
		ts[cpu] += (r >> 12) % 500 ? (uint64_t)(r >> 14) % 3000 : (1ull << 27) + 7;
		if (i % 1500 == 1499 || (i % 3333 == 3332)) {
			/* a mark or a flush: the run goes back first */
			if (run_cpu >= 0)
				tdat_run_end(wb, run_cpu, &run);
			run_cpu = -1;
			if (i % 1500 == 1499) {
				assert_int_equal(tdat_mark_missed(wa, cpu, 3), 0);
				assert_int_equal(tdat_mark_missed(wb, cpu, 3), 0);
			} else {
				assert_int_equal(tdat_flush(wa), 0);
				assert_int_equal(tdat_flush(wb), 0);
			}
		}
		pa = tdat_reserve(wa, cpu, ts[cpu], len);
		assert_non_null(pa);
		payload(pa, len, i);
		if (cpu != run_cpu || (r & 0x3f) == 0) {
			if (run_cpu >= 0)
				tdat_run_end(wb, run_cpu, &run);
			tdat_run_begin(wb, cpu, &run);
			run_cpu = cpu;
		}
		pb = tdat_run_reserve(&run, ts[cpu], len);
		if (pb) {
			fast++;
		} else {
			slow++;
			tdat_run_end(wb, cpu, &run);
			pb = tdat_reserve(wb, cpu, ts[cpu], len);
			assert_non_null(pb);
			tdat_run_begin(wb, cpu, &run);
		}
		payload(pb, len, i);
		/* the rounding bytes are zeroed by both, whatever the caller fills */
		assert_memory_equal(pa - 4, pb - 4, 4 + ((len + 3) & ~(size_t)3));
	}
	if (run_cpu >= 0)
		tdat_run_end(wb, run_cpu, &run);
	/* most go the fast way; page ends, big deltas and long events do not */
	assert_true(fast > 40000);
	assert_true(slow > 500);
	for (int c = -1; c < 3; c++) {
		assert_int_equal(tdat_get_stats(wa, c, &sa), 0);
		assert_int_equal(tdat_get_stats(wb, c, &sb), 0);
		assert_memory_equal(&sa, &sb, sizeof(sa));
	}
	/* a run of a CPU without a page has no room */
	tdat_run_begin(wb, 5, &run);
	assert_null(tdat_run_reserve(&run, 1ull << 40, 16));
	tdat_run_end(wb, 5, &run);
	assert_int_equal(tdat_close(wa), 0);
	assert_int_equal(tdat_close(wb), 0);
	load(a, &fa);
	load(b, &fb);
	for (int c = 0; c < 3; c++) {
		assert_true(tf_cpu(&fa, c)->size > 0);
		assert_int_equal(tf_cpu(&fa, c)->size, tf_cpu(&fb, c)->size);
		assert_memory_equal(fa.buf + tf_cpu(&fa, c)->off, fb.buf + tf_cpu(&fb, c)->off,
				    tf_cpu(&fa, c)->size);
	}
	assert_null(tf_cpu(&fb, 5));
	tf_free(&fa);
	tf_free(&fb);
}
VERSIONED(run_reserve)

/*
 * The batch size decides when pages are written, not what they hold: one
 * page, the default and 512 KiB a write give the same CPU data, and a
 * flush writes an unfinished batch.
 */
static void batch_sizes(int v)
{
	static const uint32_t sizes[] = { 4096, 0, 512u << 10, 64u << 20 };
	struct tf f[4];

	for (int i = 0; i < 4; i++) {
		char *path = path_in(tmpdir, "batch-size.dat");
		struct tdat_params p = { .version = v, .max_cpus = 4, .batch_bytes = sizes[i] };
		struct tdat_writer *w = tdat_open(path, &p);
		struct tf mid;

		assert_non_null(w);
		assert_int_equal(tdat_add_event_format(w, "xen", fmt_xen), 0);
		assert_int_equal(tdat_start_data(w), 0);
		for (int k = 0; k < 40000; k++)
			ev(w, k % 3, 1000 + (uint64_t)k * 10, 16 + (k % 5) * 4, k);
		/* flushed, a batch's pages are readable before the close */
		assert_int_equal(tdat_flush(w), 0);
		load(path, &mid);
		assert_int_equal(tf_events(&mid, 1, evs, MAXEV), 40000 / 3);
		tf_free(&mid);
		assert_int_equal(tdat_close(w), 0);
		load(path, &f[i]);
	}
	for (int i = 1; i < 4; i++)
		for (int c = 0; c < 3; c++) {
			assert_int_equal(tf_cpu(&f[i], c)->size, tf_cpu(&f[0], c)->size);
			assert_memory_equal(f[i].buf + tf_cpu(&f[i], c)->off,
					    f[0].buf + tf_cpu(&f[0], c)->off, tf_cpu(&f[0], c)->size);
		}
	for (int i = 0; i < 4; i++)
		tf_free(&f[i]);
}
VERSIONED(batch_sizes)

/* Pages of @cpu the file at @path holds now, as a reader sees them. */
static uint64_t disk_pages(const char *path, int cpu)
{
	struct tf f;
	uint64_t n;

	load(path, &f);
	n = tf_cpu(&f, cpu) ? tf_cpu(&f, cpu)->size / 4096 : 0;
	tf_free(&f);
	return n;
}

/* Events on CPU 0 up to the one that closes page @pages (170 fill a page). */
static void fill_pages(struct tdat_writer *w, uint64_t *k, uint64_t pages)
{
	for (; *k <= 170 * pages; (*k)++)
		ev(w, 0, 1000 + *k, 20, *k);
}

/*
 * A CPU's batch starts at 128 KiB and doubles (up to batch_bytes) when it
 * filled in under 0.1 s: a quiet CPU keeps writing 32 pages at a time, a
 * busy one 32, 64, 128... A fill that a loaded machine stretched past
 * 0.1 s keeps the batch as it was, so the busy case gets three tries.
 */
static void batch_growth(int v)
{
	char *path = path_in(tmpdir, "batch-grow.dat");
	struct tdat_params p = { .version = v, .max_cpus = 2, .batch_bytes = 2u << 20 };
	struct timespec nap = { 0, 150000000 };
	struct tdat_writer *w;
	uint64_t k = 0, got = 0;

	/* quiet: each batch takes longer than 0.1 s to fill */
	w = mk_with(path, &p);
	assert_int_equal(tdat_start_data(w), 0);
	for (uint64_t end = 32; end <= 96; end += 32) {
		fill_pages(w, &k, end - 16);
		nanosleep(&nap, NULL);
		fill_pages(w, &k, end - 1);
		assert_int_equal(disk_pages(path, 0), end - 32);
		fill_pages(w, &k, end);
		assert_int_equal(disk_pages(path, 0), end);
	}
	assert_int_equal(tdat_close(w), 0);

	/* busy: 32, then 64, then 128 pages a write */
	for (int t = 0; t < 3 && got != 224; t++) {
		k = 0;
		w = mk_with(path, &p);
		assert_int_equal(tdat_start_data(w), 0);
		fill_pages(w, &k, 32);
		fill_pages(w, &k, 223);
		got = disk_pages(path, 0);
		if (got == 96) {
			fill_pages(w, &k, 224);
			got = disk_pages(path, 0);
		}
		if (got != 224)
			print_message("# try %d: %llu pages on disk, not 96 then 224\n", t + 1,
				      (unsigned long long)got);
		assert_int_equal(tdat_close(w), 0);
		assert_int_equal(disk_pages(path, 0), 224 + 1);
	}
	assert_int_equal(got, 224);
}
VERSIONED(batch_growth)

/* Random and hostile raw pages: what is accepted must decode in bounds. */
static void raw_page_fuzz(void **s)
{
	char *path = path_in(tmpdir, "fuzz.dat");
	struct tdat_writer *w = mk(7, path, 0, 0);
	struct kbuffer *k = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	uint64_t seed = 0x9e3779b97f4a7c15ull, ts = 1;
	int accepted = 0, rejected = 0, walked = 0, i, j, ret;

	(void)s;
	assert_int_equal(tdat_start_data(w), 0);
	for (i = 0; i < 3000; i++) {
		/* exact-size heap copy: ASan catches a read past the page */
		uint8_t *pg = malloc(4096);
		uint32_t pos = 0, commit;
		uint64_t c64;

		memset(pg, 0, 4096);
		memcpy(pg, &ts, 8);
		for (;;) {
			uint32_t word, size;

			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			word = (uint32_t)(seed >> 32);
			/* mostly plausible events, sometimes any word at all */
			if (i % 4 != 3)
				word = (word & ~31u) | (uint32_t)(1 + (seed >> 8) % 28);
			size = (word & 31) && (word & 31) <= 28 ? 4 + 4 * (word & 31) : 8;
			if (pos + size > 4080)
				break;
			memcpy(pg + 16 + pos, &word, 4);
			memcpy(pg + 16 + pos + 4, &seed, 4);
			pos += size;
		}
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		/* a commit on the events' end, or anywhere (even past the page) */
		commit = i % 2 ? pos : (uint32_t)(seed >> 33) % 4200;
		c64 = commit | ((seed & 1) ? 0 : TDAT_MISSED_EVENTS);
		memcpy(pg + 8, &c64, 8);
		ret = tdat_write_page(w, 0, pg);
		if (ret == -ERANGE) {
			/* a hostile TIME_STAMP moved the CPU's clock: start over */
			assert_int_equal(tdat_close(w), 0);
			w = mk(7, path, 0, 0);
			assert_int_equal(tdat_start_data(w), 0);
			ret = tdat_write_page(w, 0, pg);
		}
		if (ret == 0) {
			unsigned long long t;
			void *d;

			struct tdat_page_walk pw;
			struct tdat_page_event e;

			accepted += commit != 0;
			/* the walker sees what kbuffer sees, event for event */
			assert_int_equal(tdat_page_walk_init(&pw, pg, 4096, 8), 0);
			kbuffer_load_subbuffer(k, pg);
			for (j = 0, d = kbuffer_read_event(k, &t); d && j < 5000;
			     d = kbuffer_next_event(k, &t), j++) {
				assert_true((uint8_t *)d + kbuffer_event_size(k) <= pg + 4096);
				assert_int_equal(tdat_page_walk_next(&pw, &e), 1);
				assert_ptr_equal(e.data, d);
				assert_int_equal(e.len, kbuffer_event_size(k));
				assert_int_equal(e.ts, t);
			}
			assert_int_equal(tdat_page_walk_next(&pw, &e), 0);
			walked += j;
			ts += 1ull << 40;	/* later than any event on the page */
		} else {
			rejected++;
		}
		free(pg);
	}
	/* a length word made to wrap 32-bit arithmetic */
	{
		uint8_t pg[4096] = {0};
		uint32_t hw = 0, big = 0xfffffffeu;
		uint64_t c64 = 8;

		memcpy(pg, &ts, 8);
		memcpy(pg + 8, &c64, 8);
		memcpy(pg + 16, &hw, 4);
		memcpy(pg + 20, &big, 4);
		assert_int_equal(tdat_write_page(w, 0, pg), -EBADMSG);
		/*
		 * 32-bit rounding would make this event 4 bytes long, its length
		 * word a padding of 4 and then a small event ending at the commit
		 */
		big = 0xfffffffdu;
		c64 = 20;
		memcpy(pg + 8, &c64, 8);
		memcpy(pg + 20, &big, 4);
		memcpy(pg + 24, &(uint32_t){ 4 }, 4);
		memcpy(pg + 28, &(uint32_t){ 1 }, 4);
		assert_int_equal(tdat_write_page(w, 0, pg), -EBADMSG);
	}
	kbuffer_free(k);
	print_message("# %d raw pages accepted (%d events), %d rejected\n", accepted, walked,
		      rejected);
	assert_true(accepted > 100);
	assert_true(walked > 1000);
	assert_true(rejected > 100);
	assert_int_equal(tdat_close(w), 0);
}

/* The walker's own contract: arguments, 4-byte longs, a sticky error. */
static void page_walker(void **s)
{
	uint8_t pg[4096] = {0};
	struct tdat_page_walk pw;
	struct tdat_page_event e;
	uint32_t c32 = 24, w;
	uint64_t n = 0, last = 0, ts = 77;

	(void)s;
	assert_int_equal(tdat_page_walk_init(&pw, pg, 4096, 6), -EINVAL);
	assert_int_equal(tdat_page_walk_init(&pw, pg, 11, 4), -EINVAL);
	assert_int_equal(tdat_page_walk_next(&pw, &e), -EBADMSG);
	/* 4-byte longs: data at 12; events of 12 and 4 bytes (types 3, 1) */
	memcpy(pg, &ts, 8);
	memcpy(pg + 8, &c32, 4);
	w = 3 | 5u << 5;
	memcpy(pg + 12, &w, 4);
	w = 1 | 2u << 5;
	memcpy(pg + 28, &w, 4);
	assert_int_equal(tdat_page_check(pg, 4096, 4, &n, &last), 0);
	assert_int_equal(n, 2);
	assert_int_equal(last, 84);
	assert_int_equal(tdat_page_walk_init(&pw, pg, 4096, 4), 0);
	assert_int_equal(tdat_page_walk_next(&pw, &e), 1);
	assert_true(e.ts == 82 && e.len == 12 && e.offset == 0 && e.data == pg + 16);
	assert_int_equal(tdat_page_walk_next(&pw, &e), 1);
	assert_true(e.ts == 84 && e.len == 4 && e.offset == 16);
	assert_int_equal(tdat_page_walk_next(&pw, &e), 0);
	/* a commit 2 bytes longer cuts a header; the error stays */
	c32 = 26;
	memcpy(pg + 8, &c32, 4);
	assert_int_equal(tdat_page_check(pg, 4096, 4, NULL, NULL), -EBADMSG);
	assert_non_null(strstr(tcx_error(), "offset 24"));
	assert_int_equal(tdat_page_walk_init(&pw, pg, 4096, 4), 0);
	assert_int_equal(tdat_page_walk_next(&pw, &e), 1);
	assert_int_equal(tdat_page_walk_next(&pw, &e), 1);
	assert_int_equal(tdat_page_walk_next(&pw, &e), -EBADMSG);
	assert_int_equal(tdat_page_walk_next(&pw, &e), -EBADMSG);
	/* a stored count needs room after the commit */
	c32 = 4084 | TDAT_MISSED_EVENTS | TDAT_MISSED_STORED;
	memcpy(pg + 8, &c32, 4);
	assert_int_equal(tdat_page_walk_init(&pw, pg, 4096, 4), -EBADMSG);
}

/* ---- errors ---- */

static void errors(void **s)
{
	char *path = path_in(tmpdir, "err.dat");
	struct tdat_params p = { .page_size = 3000 };
	struct tdat_writer *w;
	uint8_t big[8192] = {0};

	(void)s;
	assert_null(tdat_open(path, &p));
	assert_non_null(strstr(tcx_error(), "3000"));
	p = (struct tdat_params){ .version = 5 };
	assert_null(tdat_open(path, &p));
	assert_non_null(strstr(tcx_error(), "version 5"));
	p = (struct tdat_params){ .cpus = 9, .max_cpus = 4 };
	assert_null(tdat_open(path, &p));
	assert_null(tdat_open("/nonexistent-dir/x.dat", NULL));
	assert_non_null(strstr(tcx_error(), "/nonexistent-dir/x.dat"));

	w = mk(7, path, 0, 4);
	assert_int_equal(tdat_add_event_format(w, "xen", fmt_xen), -EEXIST);
	assert_non_null(strstr(tcx_error(), "ID 5001"));
	assert_int_equal(tdat_add_event_format(w, "xen", "name: x\nformat:\n"), -EINVAL);
	assert_int_equal(tdat_set_tsc2nsec(w, 5, 33, 0), -EINVAL);
	assert_non_null(strstr(tcx_error(), "shift 33"));
	assert_int_equal(tdat_add_guest(w, "g", 0, 1, (uint32_t[]){ 1 }), -EINVAL);
	assert_int_equal(tdat_add_option(w, TDAT_OPT_BUFFER, "x", 1), -EINVAL);
	assert_int_equal(tdat_write_event(w, 0, 1, big, 16), -EINVAL);
	assert_non_null(strstr(tcx_error(), "before tdat_start_data"));
	assert_int_equal(tdat_start_data(w), 0);
	assert_int_equal(tdat_start_data(w), -EBUSY);
	assert_int_equal(tdat_add_event_format(w, "xen", fmt_xen), -EBUSY);
	assert_non_null(strstr(tcx_error(), "after tdat_start_data"));
	assert_int_equal(tdat_add_event_format(w, "xen", fmt_xen), -EBUSY);
	assert_int_equal(tdat_write_event(w, 9, 1, big, 16), -EINVAL);
	assert_non_null(strstr(tcx_error(), "CPU 9"));
	assert_int_equal(tdat_write_event(w, -1, 1, big, 16), -EINVAL);
	assert_int_equal(tdat_write_event(w, 0, 1, big, 5000), -EMSGSIZE);
	assert_non_null(strstr(tcx_error(), "5000 bytes"));
	assert_int_equal(tdat_write_event(w, 0, 1, big, 4), -EINVAL);
	assert_null(tdat_reserve(w, 0, 1, 4073));
	assert_int_equal(tdat_write_event(w, 0, 100, big, 16), 0);
	assert_int_equal(tdat_write_event(w, 0, 99, big, 16), -ERANGE);
	assert_non_null(strstr(tcx_error(), "timestamp 99 on CPU 0"));
	assert_int_equal(tdat_mark_missed(w, 7, 1), -EINVAL);
	/* the errors wrote nothing: one event in the file */
	assert_int_equal(tdat_close(w), 0);
	{
		struct tf f;

		load(path, &f);
		assert_int_equal(tf_events(&f, 0, evs, MAXEV), 1);
		tf_free(&f);
	}
	assert_int_equal(tdat_close(NULL), 0);
}


/* Write errors: a file size limit makes the disk "full" part way. */
static void io_errors(int v)
{
	char *path = path_in(tmpdir, "full.dat");
	struct rlimit old, lim;
	struct tdat_writer *w;
	char first[TCX_ERROR_MAX];
	struct tf f;
	int i, ret = 0, n;

	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_IGN);
	lim = old;
	lim.rlim_cur = 256 << 10;

	/* the first region cannot even be reserved */
	w = mk(v, path, 0, 4);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(tdat_start_data(w), 0);
	for (i = 0; i < 20000 && !ret; i++) {
		uint8_t p[16] = { 0x89, 0x13 };

		ret = tdat_write_event(w, 0, 10 + i, p, 16);
	}
	assert_int_equal(ret, -EFBIG);
	assert_non_null(strstr(tcx_error(), "full.dat"));
	/* sticky: later calls fail with the first error and its message */
	snprintf(first, sizeof(first), "%s", tcx_error());
	tcx_fail(-EPERM, "something else");
	assert_int_equal(tdat_write_event(w, 0, 1000000, (uint8_t[16]){ 0x89, 0x13 }, 16), -EFBIG);
	assert_string_equal(tcx_error(), first);
	tcx_fail(-EPERM, "something else");
	assert_int_equal(tdat_close(w), -EFBIG);
	assert_string_equal(tcx_error(), first);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	load(path, &f);
	assert_int_equal(tf_events(&f, 0, evs, MAXEV), 0);
	tf_free(&f);

	/* small regions: the pages written before the limit stay readable */
	w = mk(v, path, 4096, 4);
	assert_int_equal(tdat_start_data(w), 0);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (i = 0, ret = 0; i < 200000 && !ret; i++) {
		uint8_t p[16] = { 0x89, 0x13 };

		memcpy(p + 8, &(uint64_t){ i }, 8);
		ret = tdat_write_event(w, i & 1, 10 + i, p, 16);
	}
	assert_int_equal(ret, -EFBIG);
	assert_int_equal(tdat_close(w), -EFBIG);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	load(path, &f);
	n = tf_events(&f, 0, evs, MAXEV) + tf_events(&f, 1, evs, MAXEV);
	print_message("# %d of %d events readable after the write error\n", n, i);
	assert_true(n > 1000);
	assert_true(n < i);
	tf_free(&f);
}
VERSIONED(io_errors)

/* ---- killed outright: size near the data, readable, one TIME_SHIFT ---- */

/* Whether @dir's filesystem grows regions in place (else they move). */
static bool inserts_ranges(const char *dir)
{
	char *path = path_in(dir, "probe.dat");
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	bool ok;

	if (fd < 0)
		return false;
	ok = !ftruncate(fd, 1 << 20) && !fallocate(fd, FALLOC_FL_INSERT_RANGE, 0, 1 << 16);
	close(fd);
	unlink(path);
	return ok;
}

static void shift_of(struct tdat_time_shift_cpu *c, uint64_t *ts, int64_t *off, int ncpu)
{
	for (int i = 0; i < ncpu; i++)
		c[i] = (struct tdat_time_shift_cpu){ .count = 2, .ts = ts, .offset = off };
}

/* The one TIME_SHIFT's first offset, -1 when not exactly one. */
static int64_t only_shift(const struct tf *f)
{
	const struct tf_opt *o = tf_opt(f, TDAT_OPT_TIME_SHIFT, 0);
	int64_t off;

	if (!o || tf_opt(f, TDAT_OPT_TIME_SHIFT, 1) || o->size < 12 + 4 + 4 + 2 * 8 + 8)
		return -1;
	/* peer, flags, ncpu, then CPU 0: count, 2 times, 2 offsets */
	memcpy(&off, o->data + 16 + 4 + 16, 8);
	return off;
}

static void killed_writer(void **s)
{
	char *path = path_in(tmpdir, "killed.dat");
	const int ncpu = 3, per = 700000;	/* ~14 MiB of pages per CPU: two growths */
	uint64_t ts[2] = { 1000, 2000 }, data = 0, bound;
	int64_t off1[2] = { 11, 11 }, off2[2] = { 22, 22 };
	struct tdat_time_shift_cpu c[3];
	char cmd[600];
	struct stat st;
	struct tf f;
	int status, n;
	pid_t pid;

	(void)s;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct tdat_writer *w = mk(7, path, 0, ncpu);

		if (tdat_start_data(w))
			_exit(2);
		shift_of(c, ts, off1, ncpu);
		if (tdat_publish_time_shift(w, 0x77, 0, ncpu, c))
			_exit(3);
		for (int i = 0; i < per; i++)
			for (int k = 0; k < ncpu; k++) {
				uint8_t p[16];

				payload(p, 16, (uint64_t)i);
				if (tdat_write_event(w, k, 100 + (uint64_t)i * 4 + k, p, 16))
					_exit(4);
			}
		shift_of(c, ts, off2, ncpu);
		if (tdat_flush(w) || tdat_publish_time_shift(w, 0x77, 0, ncpu, c))
			_exit(5);
		kill(getpid(), SIGKILL);
		_exit(6);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	load(path, &f);
	for (int k = 0; k < ncpu; k++) {
		assert_int_equal(tf_events(&f, k, evs, MAXEV), per);
		/* past the first room: the regions grew while the others wrote */
		assert_true(tf_cpu(&f, k)->size > (12u << 20));
		data += tf_cpu(&f, k)->size;
	}
	assert_int_equal(only_shift(&f), 22);
	assert_int_equal(stat(path, &st), 0);
	/* each CPU's room: its data, at most an eighth more or 4 MiB, a page */
	bound = 256 << 10;
	for (int k = 0; k < ncpu; k++) {
		uint64_t d = tf_cpu(&f, k)->size, step = d / 7 > (4 << 20) ? d / 7 : 4 << 20;

		bound += d + step + 4096;
	}
	print_message("# killed: %llu bytes of pages, st_size %llu, bound %llu\n",
		      (unsigned long long)data, (unsigned long long)st.st_size,
		      (unsigned long long)bound);
	tf_free(&f);
	if (inserts_ranges(tmpdir))
		assert_true((uint64_t)st.st_size <= bound);

	/* the stock reader: all the events, and the live TIME_SHIFT */
	if (system("command -v trace-cmd >/dev/null 2>&1"))
		skip();
	snprintf(cmd, sizeof(cmd), "trace-cmd report -i %s 2>/dev/null | grep -c 'val='", path);
	{
		FILE *p = popen(cmd, "r");

		assert_non_null(p);
		assert_int_equal(fscanf(p, "%d", &n), 1);
		assert_int_equal(pclose(p), 0);
		assert_int_equal(n, ncpu * per);
	}
	snprintf(cmd, sizeof(cmd), "trace-cmd dump --options -i %s 2>/dev/null | "
		 "grep -c 'Option TimeShift'", path);
	{
		FILE *p = popen(cmd, "r");

		assert_non_null(p);
		assert_int_equal(fscanf(p, "%d", &n), 1);
		pclose(p);
		assert_int_equal(n, 1);
	}

	/* the close's full solve replaces the live one: still one TIME_SHIFT */
	{
		struct tdat_appender *a = tdat_append_open(path);
		int64_t off3[2] = { 33, 33 };

		assert_non_null(a);
		shift_of(c, ts, off3, ncpu);
		assert_int_equal(tdat_append_time_shift(a, 0x77, 0, ncpu, c), 0);
		assert_int_equal(tdat_append_close(a), 0);
	}
	load(path, &f);
	assert_int_equal(only_shift(&f), 33);
	tf_free(&f);
	unlink(path);
}

static void stats_and_reserve(void **s)
{
	char *path = path_in(tmpdir, "stats.dat");
	struct tdat_writer *w = mk(7, path, 0, 4);
	struct tdat_stats st;
	uint8_t *p;
	int i;

	(void)s;
	assert_int_equal(tdat_start_data(w), 0);
	for (i = 0; i < 1000; i++) {
		p = tdat_reserve(w, i & 3, 10 + i, 16);
		assert_non_null(p);
		payload(p, 16, i);
	}
	assert_int_equal(tdat_flush(w), 0);
	assert_int_equal(tdat_get_stats(w, -1, &st), 0);
	assert_int_equal(st.events, 1000);
	assert_int_equal(st.pages, 8);	/* 250 per CPU: 2 pages each */
	assert_int_equal(tdat_get_stats(w, 2, &st), 0);
	assert_int_equal(st.events, 250);
	assert_int_equal(tdat_close(w), 0);
}

static int setup(void **s)
{
	(void)s;
	snprintf(tmpdir, sizeof(tmpdir), "%s/tdat-unit-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	evs = calloc(MAXEV, sizeof(*evs));
	return mkdtemp(tmpdir) && evs ? 0 : -1;
}

static int teardown(void **s)
{
	char cmd[300];

	(void)s;
	free(evs);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(delta_edges_v6),
		cmocka_unit_test(delta_edges_v7),
		cmocka_unit_test(gap_over_2_59_v6),
		cmocka_unit_test(gap_over_2_59_v7),
		cmocka_unit_test(exact_full_page_v6),
		cmocka_unit_test(exact_full_page_v7),
		cmocka_unit_test(padding_at_end_v6),
		cmocka_unit_test(padding_at_end_v7),
		cmocka_unit_test(payload_112_116_v6),
		cmocka_unit_test(payload_112_116_v7),
		cmocka_unit_test(four_bytes_left_v6),
		cmocka_unit_test(four_bytes_left_v7),
		cmocka_unit_test(missed_count_v6),
		cmocka_unit_test(missed_count_v7),
		cmocka_unit_test(missed_unknown_v6),
		cmocka_unit_test(missed_unknown_v7),
		cmocka_unit_test(sparse_cpus_v6),
		cmocka_unit_test(sparse_cpus_v7),
		cmocka_unit_test(max_cpus_4096_v6),
		cmocka_unit_test(max_cpus_4096_v7),
		cmocka_unit_test(header_long4_v6),
		cmocka_unit_test(header_long4_v7),
		cmocka_unit_test(late_and_appended_options),
		cmocka_unit_test(v6_options_refused_late),
		cmocka_unit_test(late_cmdlines),
		cmocka_unit_test(options_in_file_v6),
		cmocka_unit_test(options_in_file_v7),
		cmocka_unit_test(time_shift_checks),
		cmocka_unit_test(grow_ext4),
		cmocka_unit_test(grow_tmpfs),
		cmocka_unit_test(direct_ext4),
		cmocka_unit_test(direct_tmpfs),
		cmocka_unit_test(readable_while_writing_v6),
		cmocka_unit_test(readable_while_writing_v7),
		cmocka_unit_test(raw_pages_v6),
		cmocka_unit_test(raw_pages_v7),
		cmocka_unit_test(raw_pages_batch_v6),
		cmocka_unit_test(raw_pages_batch_v7),
		cmocka_unit_test(run_reserve_v6),
		cmocka_unit_test(run_reserve_v7),
		cmocka_unit_test(batch_sizes_v6),
		cmocka_unit_test(batch_sizes_v7),
		cmocka_unit_test(batch_growth_v6),
		cmocka_unit_test(batch_growth_v7),
		cmocka_unit_test(raw_page_fuzz),
		cmocka_unit_test(page_walker),
		cmocka_unit_test(errors),
		cmocka_unit_test(io_errors_v6),
		cmocka_unit_test(io_errors_v7),
		cmocka_unit_test(stats_and_reserve),
		cmocka_unit_test(killed_writer),
	};

	return cmocka_run_group_tests_name("tdat", tests, setup, teardown);
}
