// SPDX-License-Identifier: GPL-2.0
/*
 * A simulated guest kernel's tracefs directory, used through libtracefs as
 * the agent will: formats parse, control files take effect, trace_pipe_raw
 * gives ring-buffer pages that kbuffer decodes, every event's guest TSC maps
 * back into a ground-truth run interval of that vCPU, and markers arrive
 * once each, stamped while a vCPU of the guest runs; those of a process
 * pinned to CPU N (per_cpu/cpuN/trace_marker, HVMOP_xentrace) on vCPU N.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <event-parse.h>
#include <kbuffer.h>
#include <tracefs.h>
#include <xencall.h>
#include <xen/xen.h>
#include <xen/hvm/hvm_op.h>

#include "tlib.h"

/* One host per test, stopped and removed even when the test fails. */
static struct tlib_sim sim;

static int cleanup(void **state)
{
	tlib_sim_cleanup(&sim);
	return 0;
}

#define NCPU	2
#define NMARK	20
#define MAXPAGES 4096

struct pages {
	unsigned int n;
	uint8_t *buf;		/* n pages of 4096 */
};

static void drain(struct tracefs_cpu *tc, struct pages *pg)
{
	int n;

	while (pg->n < MAXPAGES &&
	       (n = tracefs_cpu_read(tc, pg->buf + (size_t)pg->n * 4096, true)) > 0) {
		assert_int_equal(n, 4096);
		pg->n++;
	}
}

static int64_t offset_of(const char *dir, unsigned int dom, unsigned int vcpu)
{
	char path[512], line[256];
	FILE *f;
	int64_t off = INT64_MIN;

	snprintf(path, sizeof(path), "%s/truth", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned int d, v, p;
		long o;

		if (sscanf(line, "vcpu domid=%u vcpu=%u pcpu=%u offset=%ld", &d,
			   &v, &p, &o) == 4 && d == dom && v == vcpu)
			off = o;
	}
	fclose(f);
	assert_true(off != INT64_MIN);
	return off;
}

static uint64_t gstat(const char *dir, unsigned int dom, unsigned int vcpu,
		      const char *key)
{
	char path[512], line[256], pat[64];
	FILE *f;
	uint64_t val = UINT64_MAX;

	snprintf(path, sizeof(path), "%s/truth", dir);
	snprintf(pat, sizeof(pat), "gstats domid=%u vcpu=%u ", dom, vcpu);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *p;

		if (strncmp(line, pat, strlen(pat)))
			continue;
		p = strstr(line, key);
		if (p)
			val = strtoull(p + strlen(key) + 1, NULL, 10);
	}
	fclose(f);
	assert_true(val != UINT64_MAX);
	return val;
}

/* Is host TSC @t inside a run of d<dom>v<vcpu>? */
static bool running_at(const struct tlib_truth *t, unsigned int dom,
		       unsigned int vcpu, uint64_t h)
{
	for (size_t i = 0; i < t->nrun; i++) {
		const struct tlib_truth_run *r = &t->run[i];

		if (r->dom == dom && r->vcpu == vcpu && h >= r->start &&
		    (!r->end || h <= r->end))
			return true;
	}
	return false;
}

static void test_guest_tracefs(void **state)
{
	struct tlib_truth t;
	struct tep_handle *tep;
	struct tracefs_cpu *tc[NCPU];
	struct pages pg[NCPU];
	char dir[512], *clock;
	int raw, text;
	unsigned int seen[NMARK + 1] = { 0 }, texts = 0;

	assert_int_equal(tlib_sim_start(&sim, tlib_conf_path("basic.conf")), 0);
	snprintf(dir, sizeof(dir), "%s/dom1/tracing", sim.dir);
	assert_int_equal(tracefs_set_tracing_dir(dir), 0);

	/* the formats parse */
	tep = tracefs_local_events(dir);
	assert_non_null(tep);
	assert_non_null(tep_find_event_by_name(tep, "sched", "sched_switch"));
	assert_non_null(tep_find_event_by_name(tep, "sched", "sched_wakeup"));
	assert_non_null(tep_find_event_by_name(tep, "ftrace", "raw_data"));
	assert_int_equal(tep_get_header_page_size(tep), 8);

	/* control files as libtracefs writes them */
	assert_int_equal(tracefs_event_enable(NULL, "sched", NULL), 0);
	assert_true(tracefs_instance_file_write(NULL, "trace_clock", "x86-tsc") > 0);
	assert_int_equal(tracefs_trace_on(NULL), 0);
	usleep(100 * 1000);
	clock = tracefs_get_clock(NULL);
	assert_non_null(clock);
	assert_string_equal(clock, "x86-tsc");
	free(clock);

	for (int c = 0; c < NCPU; c++) {
		tc[c] = tracefs_cpu_open(NULL, c, true);
		assert_non_null(tc[c]);
		pg[c].n = 0;
		pg[c].buf = malloc((size_t)MAXPAGES * 4096);
		assert_non_null(pg[c].buf);
	}
	{
		char *r = tracefs_get_tracing_file("trace_marker_raw");
		char *m = tracefs_get_tracing_file("trace_marker");

		raw = open(r, O_WRONLY);
		text = open(m, O_WRONLY);
		tracefs_put_tracing_file(r);
		tracefs_put_tracing_file(m);
	}
	assert_true(raw >= 0 && text >= 0);
	for (uint32_t i = 1; i <= NMARK; i++) {
		uint8_t m[12];
		char s[32];

		memcpy(m, &i, 4);
		memcpy(m + 4, "xensim!!", 8);
		assert_int_equal(write(raw, m, sizeof(m)), sizeof(m));
		snprintf(s, sizeof(s), "mark %u\n", i);
		assert_int_equal(write(text, s, strlen(s)), (ssize_t)strlen(s));
		usleep(40 * 1000);
		for (int c = 0; c < NCPU; c++)
			drain(tc[c], &pg[c]);
	}
	close(raw);
	close(text);
	usleep(200 * 1000);
	assert_int_equal(tlib_sim_stop(&sim), 0);	/* flushes partial pages */
	for (int c = 0; c < NCPU; c++) {
		drain(tc[c], &pg[c]);
		tracefs_cpu_close(tc[c]);
	}
	assert_int_equal(tlib_truth_load(sim.dir, &t), 0);

	for (int c = 0; c < NCPU; c++) {
		struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8,
						   KBUFFER_ENDIAN_LITTLE);
		int64_t off = offset_of(sim.dir, 1, c);
		uint64_t last = 0, events = 0, outside = 0;

		assert_non_null(kb);
		assert_true(pg[c].n > 0);
		for (unsigned int i = 0; i < pg[c].n; i++) {
			unsigned long long ts;
			void *rec;

			assert_int_equal(kbuffer_load_subbuffer(kb, pg[c].buf + (size_t)i * 4096), 0);
			assert_int_equal(kbuffer_missed_events(kb), 0);
			for (rec = kbuffer_read_event(kb, &ts); rec;
			     rec = kbuffer_next_event(kb, &ts)) {
				uint16_t id;
				struct tep_event *ev;

				memcpy(&id, rec, 2);
				ev = tep_find_event(tep, id);
				assert_non_null(ev);
				assert_true(ts >= last);
				last = ts;
				events++;
				/* identity ratio: host = guest - offset */
				if (!running_at(&t, 1, c, ts - off))
					outside++;
				if (id == 19) {
					uint32_t n;

					memcpy(&n, (uint8_t *)rec + 8, 4);
					assert_true(n >= 1 && n <= NMARK);
					assert_memory_equal((uint8_t *)rec + 12, "xensim!!", 8);
					seen[n]++;
				} else if (id == 5) {
					assert_memory_equal((uint8_t *)rec + 16, "mark ", 5);
					texts++;
				}
			}
		}
		print_message("# d1v%d: %lu pages, %lu events, last guest TSC %llu\n",
			      c, (unsigned long)pg[c].n, (unsigned long)events,
			      (unsigned long long)last);
		assert_int_equal(outside, 0);
		assert_int_equal(events, gstat(sim.dir, 1, c, "events"));
		assert_int_equal(gstat(sim.dir, 1, c, "dropped_pages"), 0);
		kbuffer_free(kb);
		free(pg[c].buf);
	}
	for (int i = 1; i <= NMARK; i++)
		assert_int_equal(seen[i], 1);
	assert_int_equal(texts, NMARK);
	tep_free(tep);
	tlib_truth_free(&t);
	tlib_sim_cleanup(&sim);
}

/* Nothing is produced while tracing_on is 0 or no event is enabled. */
static void test_guest_tracing_off(void **state)
{
	char dir[512];

	assert_int_equal(tlib_sim_start(&sim, tlib_conf_path("basic.conf")), 0);
	snprintf(dir, sizeof(dir), "%s/dom1/tracing", sim.dir);
	assert_int_equal(tracefs_set_tracing_dir(dir), 0);
	assert_int_equal(tracefs_event_enable(NULL, "sched", NULL), 0);
	assert_int_equal(tracefs_trace_off(NULL), 0);
	usleep(300 * 1000);
	assert_int_equal(tlib_sim_stop(&sim), 0);
	assert_int_equal(gstat(sim.dir, 1, 0, "events"), 0);
	assert_int_equal(gstat(sim.dir, 1, 1, "events"), 0);
	tlib_sim_cleanup(&sim);
}

/* A marker ('M') or a hypercall's record ('X') at time @t. */
struct mark {
	uint64_t t;
	char k;
};

/* @ev sorted by time reads M X M, M X M, ...: each call between its two markers. */
static void check_mxm(struct mark *ev, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		for (unsigned int j = i + 1; j < n; j++)
			if (ev[j].t < ev[i].t) {
				struct mark tmp = ev[i];

				ev[i] = ev[j];
				ev[j] = tmp;
			}
	for (unsigned int i = 0; i < n; i++)
		assert_int_equal(ev[i].k, i % 3 == 1 ? 'X' : 'M');
}

/*
 * Markers and HVMOP_xentrace share one queue per guest: a marker written
 * before the hypercall is stamped before its VMEXIT, one written after it
 * is stamped after.
 */
static void test_marker_hypercall_order(void **state)
{
	char dir[512], path[600], line[256];
	xencall_handle *xc;
	xen_hvm_xentrace_t *tr;
	int raw;	/* trace_marker, really */
	FILE *f;
	struct mark ev[64];
	unsigned int n = 0;

	assert_int_equal(tlib_sim_start(&sim, tlib_conf_path("basic.conf")), 0);
	snprintf(dir, sizeof(dir), "%s/dom1/tracing", sim.dir);
	snprintf(path, sizeof(path), "%s/trace_marker", dir);
	raw = open(path, O_WRONLY);
	assert_true(raw >= 0);
	setenv("XENSIM_HOST", sim.dir, 1);
	setenv("XENSIM_DOMID", "1", 1);
	xc = xencall_open(NULL, 0);
	assert_non_null(xc);
	tr = xencall_alloc_buffer(xc, sizeof(*tr));
	assert_non_null(tr);
	for (uint32_t i = 0; i < 8; i++) {
		char m[32];

		/* text markers: back-to-back writes split at newlines */
		snprintf(m, sizeof(m), "round %u\n", i);
		assert_int_equal(write(raw, m, strlen(m)), (ssize_t)strlen(m));
		tr->event = 0x77;
		tr->extra_bytes = 4;
		memcpy(tr->extra, &i, 4);
		assert_int_equal(xencall2(xc, __HYPERVISOR_hvm_op,
					  HVMOP_xentrace, (uintptr_t)tr), 0);
		assert_int_equal(write(raw, m, strlen(m)), (ssize_t)strlen(m));
	}
	xencall_free_buffer(xc, tr);
	xencall_close(xc);
	close(raw);
	usleep(100 * 1000);
	assert_int_equal(tlib_sim_stop(&sim), 0);

	snprintf(path, sizeof(path), "%s/truth", sim.dir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) && n < 64) {
		unsigned long t;
		unsigned int d, v, p;

		if (sscanf(line, "marker %u %u %lu", &d, &v, &t) == 3)
			ev[n++] = (struct mark){ t, 'M' };
		else if (sscanf(line, "xentrace %u %u %u %lu", &d, &v, &p, &t) == 4)
			ev[n++] = (struct mark){ t, 'X' };
	}
	fclose(f);
	assert_int_equal(n, 24);
	/* in time order: M X M, eight times */
	check_mxm(ev, n);
	tlib_sim_cleanup(&sim);
}

/* Every event of @pg through @fn(ctx, id, payload). */
static void each_event(struct pages *pg, void (*fn)(void *, uint16_t, const uint8_t *),
		       void *ctx)
{
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);

	assert_non_null(kb);
	for (unsigned int i = 0; i < pg->n; i++) {
		unsigned long long ts;

		assert_int_equal(kbuffer_load_subbuffer(kb, pg->buf + (size_t)i * 4096), 0);
		for (void *rec = kbuffer_read_event(kb, &ts); rec;
		     rec = kbuffer_next_event(kb, &ts)) {
			uint16_t id;

			memcpy(&id, rec, 2);
			fn(ctx, id, rec);
		}
	}
	kbuffer_free(kb);
}

struct pinned_count {
	unsigned int text, raw;
};

static void count_pinned(void *ctx, uint16_t id, const uint8_t *rec)
{
	struct pinned_count *pc = ctx;

	if (id == 5 && !memcmp(rec + 16, "pin ", 4))
		pc->text++;
	else if (id == 19 && !memcmp(rec + 12, "pinned!!", 8))
		pc->raw++;
}

/*
 * A process pinned to CPU 1 of a 2-vCPU guest, as the agent pins itself
 * for its time-sync rounds: what it writes to per_cpu/cpu1/trace_marker
 * and trace_marker_raw lands in vCPU 1's buffer, and its HVMOP_xentrace
 * traps on vCPU 1; the truth says vcpu 1 for each, in the order written.
 * Pinned to a CPU its guest does not have (dom2 has one vCPU), a call
 * goes to whichever vCPU runs, as when it is not pinned.
 */
static void test_marker_pinned_vcpu(void **state)
{
	struct tracefs_cpu *tc[NCPU];
	struct pages pg[NCPU] = { 0 };
	struct pinned_count pc[NCPU] = { 0 };
	char dir[512], path[600], line[256];
	cpu_set_t one, old;
	xencall_handle *xc, *xc2;
	xen_hvm_xentrace_t *tr, *tr2;
	int text, raw;
	FILE *f;
	struct mark ev[3 * NMARK + 8];
	unsigned int n = 0, wrong = 0, d2 = 0;

	assert_int_equal(sched_getaffinity(0, sizeof(old), &old), 0);
	CPU_ZERO(&one);
	CPU_SET(1, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		skip();		/* a 1-CPU machine cannot pin to CPU 1 */
	assert_int_equal(tlib_sim_start(&sim, tlib_conf_path("basic.conf")), 0);
	snprintf(dir, sizeof(dir), "%s/dom1/tracing", sim.dir);
	assert_int_equal(tracefs_set_tracing_dir(dir), 0);
	for (int c = 0; c < NCPU; c++) {
		tc[c] = tracefs_cpu_open(NULL, c, true);
		assert_non_null(tc[c]);
		pg[c].buf = malloc((size_t)MAXPAGES * 4096);
		assert_non_null(pg[c].buf);
	}
	snprintf(path, sizeof(path), "%s/per_cpu/cpu1/trace_marker", dir);
	text = open(path, O_WRONLY);
	snprintf(path, sizeof(path), "%s/per_cpu/cpu1/trace_marker_raw", dir);
	raw = open(path, O_WRONLY);
	assert_true(text >= 0 && raw >= 0);
	setenv("XENSIM_HOST", sim.dir, 1);
	setenv("XENSIM_DOMID", "1", 1);
	xc = xencall_open(NULL, 0);
	setenv("XENSIM_DOMID", "2", 1);
	xc2 = xencall_open(NULL, 0);
	assert_true(xc && xc2);
	tr = xencall_alloc_buffer(xc, sizeof(*tr));
	tr2 = xencall_alloc_buffer(xc2, sizeof(*tr2));
	assert_true(tr && tr2);
	for (uint32_t i = 1; i <= NMARK; i++) {
		uint8_t m[12];
		char s[32];

		snprintf(s, sizeof(s), "pin %u\n", i);
		assert_int_equal(write(text, s, strlen(s)), (ssize_t)strlen(s));
		tr->event = 0x78;
		tr->extra_bytes = 4;
		memcpy(tr->extra, &i, 4);
		assert_int_equal(xencall2(xc, __HYPERVISOR_hvm_op,
					  HVMOP_xentrace, (uintptr_t)tr), 0);
		memcpy(m, &i, 4);
		memcpy(m + 4, "pinned!!", 8);
		assert_int_equal(write(raw, m, sizeof(m)), sizeof(m));
		usleep(5 * 1000);
		for (int c = 0; c < NCPU; c++)
			drain(tc[c], &pg[c]);
	}
	tr2->event = 0x79;
	assert_int_equal(xencall2(xc2, __HYPERVISOR_hvm_op, HVMOP_xentrace,
				  (uintptr_t)tr2), 0);
	xencall_free_buffer(xc, tr);
	xencall_free_buffer(xc2, tr2);
	xencall_close(xc);
	xencall_close(xc2);
	close(text);
	close(raw);
	assert_int_equal(sched_setaffinity(0, sizeof(old), &old), 0);
	usleep(100 * 1000);
	assert_int_equal(tlib_sim_stop(&sim), 0);	/* flushes partial pages */
	for (int c = 0; c < NCPU; c++) {
		drain(tc[c], &pg[c]);
		tracefs_cpu_close(tc[c]);
		each_event(&pg[c], count_pinned, &pc[c]);
		free(pg[c].buf);
		print_message("# d1v%d: %u pinned text markers, %u raw\n", c,
			      pc[c].text, pc[c].raw);
	}
	/* every marker in vCPU 1's buffer, none in vCPU 0's */
	assert_int_equal(pc[1].text, NMARK);
	assert_int_equal(pc[1].raw, NMARK);
	assert_int_equal(pc[0].text, 0);
	assert_int_equal(pc[0].raw, 0);

	snprintf(path, sizeof(path), "%s/truth", sim.dir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long t;
		unsigned int d, v, p, e;

		if (sscanf(line, "marker %u %u %lu", &d, &v, &t) == 3 && d == 1) {
			wrong += v != 1;
			if (n < sizeof(ev) / sizeof(ev[0]))
				ev[n++] = (struct mark){ t, 'M' };
		} else if (sscanf(line, "xentrace %u %u %u %lu %x", &d, &v, &p, &t, &e) == 5) {
			if (d == 2) {
				d2++;
				assert_int_equal(v, 0);
				assert_int_equal(e, 0x79);
				continue;
			}
			wrong += v != 1 || e != 0x78;
			if (n < sizeof(ev) / sizeof(ev[0]))
				ev[n++] = (struct mark){ t, 'X' };
		}
	}
	fclose(f);
	assert_int_equal(wrong, 0);
	assert_int_equal(d2, 1);
	assert_int_equal(n, 3 * NMARK);
	/* in time order, each call between two markers: M X M, NMARK times */
	check_mxm(ev, n);
	tlib_sim_cleanup(&sim);
}

/*
 * A scaled guest TSC: guest = ((host * ratio) >> 32) + offset[vcpu] with
 * ratio = floor((gtsc_khz << 32) / cpu_khz) on AMD. Every event maps back
 * into a run interval of its vCPU within the rounding of the inverse.
 */
static void test_guest_scaled_tsc(void **state)
{
	static const int64_t off[2] = { 123456789, -987654 };
	struct tracefs_cpu *tc[2];
	struct tlib_truth t;
	struct pages pg[2] = { 0 };
	char dir[512], path[600], line[256];
	uint64_t ratio = 0, events = 0;
	FILE *f;

	assert_int_equal(tlib_sim_start(&sim, tlib_conf_path("scaled.conf")), 0);
	snprintf(dir, sizeof(dir), "%s/dom1/tracing", sim.dir);
	assert_int_equal(tracefs_set_tracing_dir(dir), 0);
	assert_int_equal(tracefs_event_enable(NULL, "sched", NULL), 0);
	/* readers hold the FIFOs open across the host's last flush */
	for (int c = 0; c < 2; c++) {
		tc[c] = tracefs_cpu_open(NULL, c, true);
		assert_non_null(tc[c]);
		pg[c].buf = malloc((size_t)MAXPAGES * 4096);
		assert_non_null(pg[c].buf);
	}
	usleep(400 * 1000);
	assert_int_equal(tlib_sim_stop(&sim), 0);
	for (int c = 0; c < 2; c++) {
		drain(tc[c], &pg[c]);
		tracefs_cpu_close(tc[c]);
	}
	assert_int_equal(tlib_truth_load(sim.dir, &t), 0);
	snprintf(path, sizeof(path), "%s/truth", sim.dir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long r;

		if (sscanf(line, "domain domid=1 name=migrated type=hvm vcpus=2 tsc_mode=0 gtsc_khz=1000000 ratio=%lu", &r) == 1)
			ratio = r;
	}
	fclose(f);
	assert_true(ratio == (uint64_t)(((unsigned __int128)1000000 << 32) / t.cpu_khz));
	assert_int_equal(offset_of(sim.dir, 1, 0), off[0]);
	assert_int_equal(offset_of(sim.dir, 1, 1), off[1]);

	for (int c = 0; c < 2; c++) {
		struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8,
						   KBUFFER_ENDIAN_LITTLE);

		for (unsigned int i = 0; i < pg[c].n; i++) {
			unsigned long long ts;

			kbuffer_load_subbuffer(kb, pg[c].buf + (size_t)i * 4096);
			for (void *rec = kbuffer_read_event(kb, &ts); rec;
			     rec = kbuffer_next_event(kb, &ts)) {
				/* inverse: host = ((guest - off) << 32) / ratio */
				uint64_t g = ts - (uint64_t)off[c];
				uint64_t h = (uint64_t)(((unsigned __int128)g << 32) / ratio);

				assert_true(running_at(&t, 1, c, h) ||
					    running_at(&t, 1, c, h + 1) ||
					    running_at(&t, 1, c, h - 1));
				events++;
			}
		}
		kbuffer_free(kb);
		free(pg[c].buf);
	}
	print_message("# scaled guest: ratio %lu / 2^32, %lu events checked\n",
		      (unsigned long)ratio, (unsigned long)events);
	assert_true(events > 100);
	tlib_truth_free(&t);
	tlib_sim_cleanup(&sim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_guest_tracefs, cleanup),
		cmocka_unit_test_teardown(test_guest_tracing_off, cleanup),
		cmocka_unit_test_teardown(test_marker_hypercall_order, cleanup),
		cmocka_unit_test_teardown(test_marker_pinned_vcpu, cleanup),
		cmocka_unit_test_teardown(test_guest_scaled_tsc, cleanup),
	};

	return cmocka_run_group_tests_name("xensim guest tracefs", tests,
					   NULL, NULL);
}
