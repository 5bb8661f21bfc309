// SPDX-License-Identifier: GPL-2.0
/*
 * Time sync's marker scan against libtracecmd on crafted guest pages: each
 * page is scanned (tsync_gcollect_page()) and also stored in a trace.dat
 * (tdat_write_page()) that libtracecmd reads back. The scan must see the
 * events the reader sees, at the reader's times, and markers only where
 * the reader has them. The pages are those on which the scan and the
 * file's check used to walk differently.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <trace-cmd.h>

#include "tdat.h"
#include "tsync-internal.h"

#define PRINT_ID	5
#define OTHER_ID	316
#define BASE_TS		1000000ull
#define MAXEV		64

static const char fmt_print[] =
	"name: print\nID: 5\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;\n\n"
	"print fmt: \"%ps: %s\", (void *)REC->ip, REC->buf\n";

/* ---- building a page ---- */

struct pg {
	uint8_t		p[4096];
	uint32_t	len;	/* data bytes after the 16-byte header */
};

static void put32(struct pg *b, uint32_t v)
{
	memcpy(b->p + 16 + b->len, &v, 4);
	b->len += 4;
}

static void head(struct pg *b, uint32_t type, uint32_t delta)
{
	put32(b, type | delta << 5);
}

/* A small-form event: payload of common header, ip, @text (or none). */
static void event(struct pg *b, uint32_t delta, uint16_t id, const char *text)
{
	size_t n = text ? strlen(text) + 1 : 0, dl = (16 + n + 3) & ~(size_t)3;
	uint8_t *d;

	head(b, (uint32_t)(dl / 4), delta);
	d = b->p + 16 + b->len;
	memset(d, 0, dl);
	memcpy(d, &id, 2);
	if (text)
		memcpy(d + 16, text, n);
	b->len += (uint32_t)dl;
}

static void finish(struct pg *b, uint64_t flags)
{
	uint64_t ts = BASE_TS, commit = b->len | flags;

	memcpy(b->p, &ts, 8);
	memcpy(b->p + 8, &commit, 8);
}

static const char *mark(uint32_t seq, bool before)
{
	static char t[2][40];

	tsync_marker_text(t[before], sizeof(t[0]), seq, before);
	return t[before];
}

/* ---- the two sides ---- */

struct seen {
	int		n;
	uint64_t	ts[MAXEV];
	uint16_t	id[MAXEV];
	int		marks;	/* print events whose text is a marker */
};

static void on_event(void *ctx, uint32_t cpu, uint64_t ts, uint16_t id)
{
	struct seen *s = ctx;

	(void)cpu;
	if (s->n < MAXEV) {
		s->ts[s->n] = ts;
		s->id[s->n] = id;
	}
	s->n++;
}

static int on_record(struct tracecmd_input *in, struct tep_record *r, int cpu, void *ctx)
{
	struct seen *s = ctx;
	const uint8_t *d = r->data;
	uint32_t seq;
	bool before;
	uint16_t id;

	(void)in;
	(void)cpu;
	assert_true(r->size >= 2);
	id = (uint16_t)(d[0] | d[1] << 8);
	on_event(s, 0, r->ts, id);
	if (id == PRINT_ID && r->size > 16 &&
	    tsync_marker_parse((const char *)d + 16, strnlen((const char *)d + 16, r->size - 16),
			       &seq, &before))
		s->marks++;
	return 0;
}

/* The page in a file of its own, read back by libtracecmd. */
static int reader(const uint8_t *page, struct seen *s)
{
	struct tdat_params pa = { .version = 7, .cpus = 1 };
	char path[] = "/tmp/tsync-pages-XXXXXX";
	struct tracecmd_input *in;
	struct tdat_writer *w;
	int fd, ret;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	w = tdat_open(path, &pa);
	assert_non_null(w);
	assert_int_equal(tdat_add_ftrace_format(w, fmt_print), 0);
	assert_int_equal(tdat_start_data(w), 0);
	ret = tdat_write_page(w, 0, page);
	assert_int_equal(tdat_close(w), 0);
	tracecmd_set_loglevel(TEP_LOG_WARNING);
	in = tracecmd_open(path, 0);
	assert_non_null(in);
	tracecmd_iterate_events(in, NULL, 0, on_record, s);
	tracecmd_close(in);
	unlink(path);
	return ret;
}

/*
 * Scan @b and read it back; the scan must agree with the reader event for
 * event. Returns the collector, for the rounds.
 */
static struct tsync_gcollect *both(struct pg *b, int want_file, int want_events, int want_marks)
{
	struct tsync_gcollect *c = tsync_gcollect_new();
	struct seen scan = { 0 }, rd = { 0 };
	int ret, stored;

	assert_non_null(c);
	tsync_gcollect_set_hook(c, on_event, &scan);
	ret = tsync_gcollect_page(c, b->p, sizeof(b->p), 8, 0, PRINT_ID);
	stored = reader(b->p, &rd);
	assert_int_equal(stored, want_file);
	assert_int_equal(rd.n, want_events);
	assert_int_equal(rd.marks, want_marks);
	/* a page the file refuses gives time sync nothing either */
	assert_int_equal(ret, stored ? stored : rd.marks);
	assert_int_equal(scan.n, rd.n);
	for (int i = 0; i < rd.n && i < MAXEV; i++) {
		if (scan.ts[i] != rd.ts[i] || scan.id[i] != rd.id[i])
			fail_msg("event %d: scan %llu id %u, reader %llu id %u", i,
				 (unsigned long long)scan.ts[i], scan.id[i],
				 (unsigned long long)rd.ts[i], rd.id[i]);
	}
	return c;
}

static void expect_round(struct tsync_gcollect *c, uint32_t seq, uint64_t a, uint64_t b)
{
	const struct tsync_gmark *m;

	assert_int_equal(tsync_gcollect_marks(c, &m, NULL, NULL), 1);
	assert_int_equal(m[0].seq, seq);
	assert_int_equal(m[0].a, a);
	assert_int_equal(m[0].b, b);
}

/* ---- pages the scan once read otherwise ---- */

/* A plain page: both see the round. */
static void test_plain(void **state)
{
	struct pg b = { 0 };
	struct tsync_gcollect *c;

	(void)state;
	event(&b, 10, PRINT_ID, mark(1, true));
	event(&b, 20, OTHER_ID, NULL);
	event(&b, 30, PRINT_ID, mark(1, false));
	finish(&b, 0);
	c = both(&b, 0, 3, 2);
	expect_round(c, 1, BASE_TS + 10, BASE_TS + 60);
	tsync_gcollect_free(c);
}

/*
 * A null padding (delta 0) before the round: the scan used to stop there
 * ("the rest is padding"), kbuffer reads past it to the markers.
 */
static void test_null_padding(void **state)
{
	struct pg b = { 0 };
	struct tsync_gcollect *c;

	(void)state;
	head(&b, TDAT_TYPE_PADDING, 0);
	put32(&b, 8);		/* its length word and 4 more bytes */
	put32(&b, 0);
	event(&b, 10, PRINT_ID, mark(2, true));
	event(&b, 10, PRINT_ID, mark(2, false));
	finish(&b, 0);
	c = both(&b, 0, 2, 2);
	expect_round(c, 2, BASE_TS + 10, BASE_TS + 20);
	tsync_gcollect_free(c);
}

/*
 * A discarded event (padding with a delta) before the round: kbuffer adds
 * its delta, the scan used not to, putting both markers 5000 early.
 */
static void test_discarded_delta(void **state)
{
	struct pg b = { 0 };
	struct tsync_gcollect *c;

	(void)state;
	head(&b, TDAT_TYPE_PADDING, 5000);
	put32(&b, 12);
	put32(&b, 0);
	put32(&b, 0);
	event(&b, 10, PRINT_ID, mark(3, true));
	event(&b, 7, PRINT_ID, mark(3, false));
	finish(&b, 0);
	c = both(&b, 0, 2, 2);
	expect_round(c, 3, BASE_TS + 5010, BASE_TS + 5017);
	tsync_gcollect_free(c);
}

/*
 * A type-0 event whose length word is not a multiple of 4: kbuffer rounds
 * it up and lands on an event of id 0x0101; a walk that does not round
 * lands 3 bytes earlier, on a forged marker "a" no reader sees.
 */
static void test_unrounded_length(void **state)
{
	const char *t = mark(4, true);
	struct tsync_gcollect *c;
	struct pg b = { 0 };
	uint32_t seq, old;
	bool before;
	uint8_t *d;

	(void)state;
	head(&b, 0, 10);
	put32(&b, 4 + 17);
	d = b.p + 16 + b.len;	/* its payload: 17 bytes, 20 rounded */
	/* at d + 17, the forged header: type 8, its top byte 8 (d[20]) */
	old = 8 | 0x400000u << 5;
	memcpy(d + 17, &old, 4);
	/* the forged payload from d + 21: the print id, then the text */
	d[21] = PRINT_ID;
	memcpy(d + 21 + 16, t, strlen(t) + 1);
	/* so kbuffer's header at d + 20 is type 8, delta 0x0508 >> 5 */
	d[24] = 1;		/* and its event's id is 0x0101 */
	d[25] = 1;
	b.len += 20 + 4 + 32;
	event(&b, 10, OTHER_ID, NULL);
	finish(&b, 0);
	assert_int_equal(tsync_marker_parse((const char *)d + 37, strlen(t), &seq, &before), 1);
	c = both(&b, 0, 3, 0);
	assert_int_equal(tsync_gcollect_marks(c, NULL, NULL, NULL), 0);
	tsync_gcollect_free(c);
}

/*
 * A complete round on a page with a commit bit no kernel sets: the scan
 * used to mask it away and take the round; the file refuses the page, so
 * no reader ever sees those markers.
 */
static void test_unknown_commit_bit(void **state)
{
	struct pg b = { 0 };
	struct tsync_gcollect *c;

	(void)state;
	event(&b, 10, PRINT_ID, mark(5, true));
	event(&b, 10, PRINT_ID, mark(5, false));
	finish(&b, 1u << 28);
	c = both(&b, -EBADMSG, 0, 0);
	assert_int_equal(tsync_gcollect_marks(c, NULL, NULL, NULL), 0);
	tsync_gcollect_free(c);
}

/*
 * A round followed by two bytes inside the commit: the scan used to stop
 * quietly with the round taken; a reader would read a header cut by the
 * commit, and the file refuses the page.
 */
static void test_cut_header(void **state)
{
	struct pg b = { 0 };
	struct tsync_gcollect *c;

	(void)state;
	event(&b, 10, PRINT_ID, mark(6, true));
	event(&b, 10, PRINT_ID, mark(6, false));
	b.len += 2;
	finish(&b, 0);
	c = both(&b, -EBADMSG, 0, 0);
	assert_int_equal(tsync_gcollect_marks(c, NULL, NULL, NULL), 0);
	tsync_gcollect_free(c);
}

/*
 * A round whose last marker runs past the commit: the scan used to keep
 * the first marker; the file refuses the page.
 */
static void test_past_commit(void **state)
{
	struct pg b = { 0 };
	struct tsync_gcollect *c;
	struct seen scan = { 0 };

	(void)state;
	event(&b, 10, PRINT_ID, mark(7, true));
	event(&b, 10, PRINT_ID, mark(7, false));
	b.len -= 8;
	finish(&b, 0);
	c = both(&b, -EBADMSG, 0, 0);
	/* and the scan's hook saw nothing of it */
	tsync_gcollect_set_hook(c, on_event, &scan);
	assert_int_equal(tsync_gcollect_page(c, b.p, sizeof(b.p), 8, 0, PRINT_ID), -EBADMSG);
	assert_int_equal(scan.n, 0);
	tsync_gcollect_free(c);
}

/* TIME_EXTEND and TIME_STAMP (top five bits kept) before the round. */
static void test_time_entries(void **state)
{
	struct pg b = { 0 };
	struct tsync_gcollect *c;
	uint64_t abs = 5000000000ull;

	(void)state;
	head(&b, TDAT_TYPE_TIME_EXTEND, 3);
	put32(&b, 2);		/* + (2 << 27) + 3 */
	event(&b, 1, PRINT_ID, mark(8, true));
	head(&b, TDAT_TYPE_TIME_STAMP, (uint32_t)(abs & TDAT_COMMIT_MASK));
	put32(&b, (uint32_t)(abs >> 27));
	event(&b, 4, PRINT_ID, mark(8, false));
	finish(&b, 0);
	c = both(&b, 0, 2, 2);
	expect_round(c, 8, BASE_TS + (2ull << 27) + 3 + 1, abs + 4);
	tsync_gcollect_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_null_padding),
		cmocka_unit_test(test_discarded_delta),
		cmocka_unit_test(test_unrounded_length),
		cmocka_unit_test(test_unknown_commit_bit),
		cmocka_unit_test(test_cut_header),
		cmocka_unit_test(test_past_commit),
		cmocka_unit_test(test_time_entries),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
