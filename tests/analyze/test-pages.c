// SPDX-License-Identifier: GPL-2.0
/*
 * analyze finds each pCPU's pages in the file: hypervisor traces written
 * here with tdat, pCPUs of one record to hundreds of pages, an empty one,
 * versions 6 and 7, large pages, and metadata after the data (a version 7
 * file's late cmdlines). Every record must be counted on its own pCPU, and
 * each pCPU's first and last times be those written: a page too few loses
 * records, a page too many reads another pCPU's (or the metadata).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analyze.h"
#include "recorder-internal.h"
#include "tcx-util.h"
#include "tdat.h"
#include "tlib.h"

#define NCPUS	4

static char dir[] = "/tmp/tcx-pages-XXXXXX";

struct layout {
	int version;
	uint32_t page_size;
	uint64_t recs[NCPUS];	/* per pCPU, 0: left empty */
	unsigned int late_cmdlines;	/* written after the data (version 7) */
};

static const struct rec_event *ev_named(const char *name)
{
	for (int i = 0; i < rec_events_count(); i++)
		if (!strcmp(rec_event_at(i)->name, name))
			return rec_event_at(i);
	fail_msg("no event %s in the recorder's catalogue", name);
	return NULL;
}

/* pCPU @cpu's record @i: a runstate change of d1v@cpu, at a time of its own */
static uint64_t ts_of(int cpu, uint64_t i)
{
	return 1000000 + i * 1000 + cpu * 7;
}

static void write_file(const char *path, const struct layout *l)
{
	struct tdat_params tp = { .version = l->version, .page_size = l->page_size,
				  .cpus = NCPUS };
	struct tdat_writer *w = tdat_open(path, &tp);
	const struct rec_event *e = ev_named("runstate_change");
	char text[4096];
	uint64_t left[NCPUS];
	bool more = true;

	assert_non_null(w);
	assert_true(rec_event_format(e, text, sizeof(text)) > 0);
	assert_int_equal(tdat_add_event_format(w, e->system, text), 0);
	assert_int_equal(tdat_start_data(w), 0);
	memcpy(left, l->recs, sizeof(left));
	/* interleaved as a recorder writes them, so the regions grow in turn */
	while (more) {
		more = false;
		for (int c = 0; c < NCPUS; c++) {
			uint8_t b[16] = { 0 };
			uint16_t vcpu = c, dom = 1, id = e->id;
			uint64_t i;

			for (int k = 0; k < 100 && left[c]; k++) {
				i = l->recs[c] - left[c]--;
				memcpy(b, &id, 2);
				memcpy(b + 8, &vcpu, 2);
				memcpy(b + 10, &dom, 2);
				b[12] = i & 1 ? 0 : 1;
				b[13] = i & 1 ? 1 : 0;
				assert_int_equal(tdat_write_event(w, c, ts_of(c, i), b, sizeof(b)),
						 0);
			}
			more |= left[c] > 0;
		}
	}
	for (unsigned int i = 0; i < l->late_cmdlines; i++) {
		char comm[32];

		snprintf(comm, sizeof(comm), "late-task-%u", i);
		assert_int_equal(tdat_add_cmdline(w, 100000 + i, comm), 0);
	}
	assert_int_equal(tdat_close(w), 0);
}

static void check(const char *name, const struct layout *l)
{
	char path[300];
	struct ana_opts o = { .cpu_hz = 1000000000 };
	struct ana_result *r;
	uint64_t total = 0;

	snprintf(path, sizeof(path), "%s/%s.dat", dir, name);
	write_file(path, l);
	r = ana_run(path, &o);
	if (!r)
		fail_msg("%s: %s", name, tcx_error());
	assert_int_equal(r->npcpus, NCPUS);
	for (int c = 0; c < NCPUS; c++) {
		const struct ana_pcpu *p = &r->pcpus[c];

		print_message("# %s: pCPU %d: %llu records of %llu\n", name, c,
			      (unsigned long long)p->records, (unsigned long long)l->recs[c]);
		assert_int_equal(p->records, l->recs[c]);
		assert_int_equal(p->present, l->recs[c] > 0);
		if (l->recs[c]) {
			assert_int_equal(p->first_tsc, ts_of(c, 0));
			assert_int_equal(p->last_tsc, ts_of(c, l->recs[c] - 1));
		}
		total += l->recs[c];
	}
	assert_int_equal(r->records, total);
	ana_free(r);
}

/* 4 KiB pages hold 204 of these records: 1 record to about 400 pages */
static void test_v7(void **state)
{
	const struct layout l = { .version = 7, .recs = { 1, 7500, 0, 81601 } };

	(void)state;
	check("v7", &l);
}

static void test_v6(void **state)
{
	const struct layout l = { .version = 6, .recs = { 60000, 0, 205, 1 } };

	(void)state;
	check("v6", &l);
}

/* about 300 KiB of metadata after the last pCPU's pages */
static void test_late_metadata(void **state)
{
	const struct layout l = { .version = 7, .recs = { 204, 40000, 3, 20001 },
				  .late_cmdlines = 12000 };

	(void)state;
	check("late", &l);
}

static void test_big_pages(void **state)
{
	const struct layout l = { .version = 7, .page_size = 65536,
				  .recs = { 30000, 3276, 3277, 0 }, .late_cmdlines = 10 };

	(void)state;
	check("big-pages", &l);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	tlib_rmtree(dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v7),
		cmocka_unit_test(test_v6),
		cmocka_unit_test(test_late_metadata),
		cmocka_unit_test(test_big_pages),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
