// SPDX-License-Identifier: GPL-2.0
/*
 * Synthetic captures (xtgen) converted by the recorder library, read back
 * through libtracecmd's public API and compared with what the generator
 * put in: events per Xen id, sched_switch count and per-vCPU run time,
 * timestamps, missed-event marks, CPU count, GUEST options, cmdlines.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <trace-cmd/trace-cmd.h>

#include "recorder-internal.h"
#include "tlib.h"
#include "tcx-util.h"
#include "xtgen.h"

static char tmpdir[] = "/tmp/tcx-convert-XXXXXX";

#define MAX_NAMES	256
#define MAX_PIDS	(XTGEN_MAX_DOMS * XTGEN_MAX_VCPUS)

struct readback {
	struct rec_convert_summary sum;
	uint32_t	mult, shift;
	int		cpus;
	uint64_t	events;
	int		nnames;
	char		names[MAX_NAMES][64];
	uint64_t	counts[MAX_NAMES];
	uint64_t	real_entry, real_exit, synth_entry, synth_exit;
	uint64_t	switches, switch_mismatch;
	uint64_t	missed_marks;
	int64_t		missed_sum;
	uint64_t	nonmono;
	uint64_t	first_ts, last_ts;
	uint64_t	*cpu_ts;
	int		*cpu_pid;	/* running pid per CPU from sched_switch, -1 unknown */
	int		*cpu_synth;	/* pid of an open synthesized kvm_entry, 0 none */
	uint64_t	redundant_entry;	/* a real kvm_entry inside a synthesized one */
	uint64_t	*cpu_since;
	uint64_t	run_ns[MAX_PIDS];
	uint64_t	intervals[MAX_PIDS];
	uint64_t	isa2;
	uint64_t	handler_ts_wrong;
	uint64_t	late_dom_first_ts;
	int		late_dom;
};

static uint64_t ns_of(uint64_t tsc, uint32_t mult, uint32_t shift)
{
	return (uint64_t)(((unsigned __int128)tsc * mult) >> shift);
}

static void count_name(struct readback *rb, const char *name)
{
	for (int i = 0; i < rb->nnames; i++) {
		if (!strcmp(rb->names[i], name)) {
			rb->counts[i]++;
			return;
		}
	}
	if (rb->nnames < MAX_NAMES) {
		snprintf(rb->names[rb->nnames], 64, "%s", name);
		rb->counts[rb->nnames++] = 1;
	}
}

static uint64_t count_of(const struct readback *rb, const char *name)
{
	for (int i = 0; i < rb->nnames; i++)
		if (!strcmp(rb->names[i], name))
			return rb->counts[i];
	return 0;
}

static unsigned long long field(struct tep_event *ev, struct tep_record *r, const char *name)
{
	unsigned long long v = 0;

	tep_get_field_val(NULL, ev, name, r, &v, 0);
	return v;
}

static int r_pid(struct tep_event *ev, struct tep_record *r)
{
	unsigned long long v = 0;

	tep_get_common_field_val(NULL, ev, "common_pid", r, &v, 0);
	return (int)v;
}

static int pid_index(int pid)
{
	int dom, vcpu;

	if (pid <= 0)
		return -1;
	dom = (pid - 1) >> 16;
	vcpu = (pid - 1) & 0xffff;
	if (dom >= XTGEN_MAX_DOMS || vcpu >= XTGEN_MAX_VCPUS)
		return -1;
	return dom * XTGEN_MAX_VCPUS + vcpu;
}

static int on_record(struct tracecmd_input *h, struct tep_record *r, int cpu, void *data)
{
	struct readback *rb = data;
	struct tep_handle *tep = tracecmd_get_tep(h);
	struct tep_event *ev = tep_find_event_by_record(tep, r);
	const char *name = ev ? ev->name : "(none)";
	uint64_t prev_ts;

	rb->events++;
	if (rb->events == 1 || r->ts < rb->first_ts)
		rb->first_ts = r->ts;
	if (r->ts > rb->last_ts)
		rb->last_ts = r->ts;
	if (r->ts < rb->cpu_ts[cpu])
		rb->nonmono++;
	prev_ts = rb->cpu_ts[cpu];
	rb->cpu_ts[cpu] = r->ts;
	if (r->missed_events) {
		rb->missed_marks++;
		rb->missed_sum += r->missed_events;
	}
	count_name(rb, name);
	if (!strcmp(name, "sched_switch")) {
		int prev = field(ev, r, "prev_pid"), next = field(ev, r, "next_pid");
		int pi = pid_index(prev);

		rb->switches++;
		if (rb->cpu_pid[cpu] >= 0 && rb->cpu_pid[cpu] != prev)
			rb->switch_mismatch++;
		if (pi >= 0 && rb->cpu_pid[cpu] == prev) {
			rb->run_ns[pi] += r->ts - rb->cpu_since[cpu];
			rb->intervals[pi]++;
		}
		rb->cpu_pid[cpu] = next;
		rb->cpu_since[cpu] = r->ts;
		rb->cpu_synth[cpu] = 0;
		if (rb->late_dom > 0 && (next - 1) >> 16 == rb->late_dom && next > 0 &&
		    !rb->late_dom_first_ts)
			rb->late_dom_first_ts = r->ts;
	} else if (!strcmp(name, "kvm_entry")) {
		if (field(ev, r, "xen_event")) {
			rb->real_entry++;
			if (rb->cpu_synth[cpu] && rb->cpu_synth[cpu] == r_pid(ev, r))
				rb->redundant_entry++;
		} else {
			rb->synth_entry++;
			rb->cpu_synth[cpu] = r_pid(ev, r);
		}
	} else if (!strcmp(name, "kvm_exit")) {
		rb->cpu_synth[cpu] = 0;
		if (field(ev, r, "xen_event"))
			rb->real_exit++;
		else
			rb->synth_exit++;
		if (field(ev, r, "isa") == 2)
			rb->isa2++;
	} else if (!strncmp(name, "hvm_", 4) && strncmp(name, "hvm_emul_", 9)) {
		/* handler records carry no TSC: they take the previous one's */
		if (r->ts != prev_ts)
			rb->handler_ts_wrong++;
	}
	return 0;
}

static int read_back(const char *path, struct readback *rb)
{
	struct tracecmd_input *h = tracecmd_open(path, 0);

	if (!h)
		return -1;
	rb->cpus = tep_get_cpus(tracecmd_get_tep(h));
	rb->cpu_ts = calloc(rb->cpus, sizeof(uint64_t));
	rb->cpu_pid = malloc(rb->cpus * sizeof(int));
	rb->cpu_since = calloc(rb->cpus, sizeof(uint64_t));
	rb->cpu_synth = calloc(rb->cpus, sizeof(int));
	for (int i = 0; i < rb->cpus; i++)
		rb->cpu_pid[i] = -1;
	tracecmd_iterate_events(h, NULL, 0, on_record, rb);
	tracecmd_close(h);
	return 0;
}

static void rb_free(struct readback *rb)
{
	free(rb->cpu_ts);
	free(rb->cpu_pid);
	free(rb->cpu_since);
	free(rb->cpu_synth);
	rec_convert_summary_free(&rb->sum);
	free(rb);
}

/* Generate, convert, read back. */
static struct readback *run(const char *name, const struct xtgen_params *p, int version,
			    struct xtgen_truth *t, long cut)
{
	struct readback *rb = calloc(1, sizeof(*rb));
	char in[256], out[256];
	struct rec_convert_opts o = { .input = in, .output = out, .hz = 2400000000ull,
				      .file_version = version };
	FILE *f;
	int ret;

	snprintf(in, sizeof(in), "%s/%s.bin", tmpdir, name);
	snprintf(out, sizeof(out), "%s/%s.dat", tmpdir, name);
	f = fopen(in, "w");
	assert_non_null(f);
	assert_int_equal(xtgen_write(p, f, t), 0);
	assert_int_equal(fclose(f), 0);
	if (cut) {
		long size;

		f = fopen(in, "r+");
		fseek(f, 0, SEEK_END);
		size = ftell(f);
		fclose(f);
		assert_int_equal(truncate(in, size - cut), 0);
	}
	ret = rec_convert(&o, &rb->sum);
	if (ret)
		print_error("convert: %s\n", tcx_error());
	assert_int_equal(ret, 0);
	rb->mult = rb->sum.mult;
	rb->shift = rb->sum.shift;
	rb->late_dom = p->late_domain ? p->ndoms - 1 : -1;
	assert_int_equal(read_back(out, rb), 0);
	return rb;
}

/* Everything the truth says, against what libtracecmd read. */
static void compare(const struct xtgen_params *p, const struct xtgen_truth *t,
		    struct readback *rb, bool exact_counts)
{
	uint64_t unknown = 0, xen_events = 0;

	assert_int_equal(rb->cpus, t->max_cpu + 1);
	assert_int_equal(rb->nonmono, 0);
	assert_int_equal(count_of(rb, "(none)"), 0);
	/* events per Xen id: the name the catalogue gives each id */
	if (exact_counts) {
		struct { const char *name; uint64_t n; } want[MAX_NAMES];
		int nw = 0;

		for (int i = 0; i < t->nids; i++) {
			const struct rec_event *e = rec_event_lookup(t->ids[i]);
			int k;

			if (!strcmp(e->name, "unknown"))
				unknown += t->id_count[i];
			for (k = 0; k < nw && strcmp(want[k].name, e->name); k++)
				;
			if (k == nw) {
				want[nw].name = e->name;
				want[nw++].n = 0;
			}
			want[k].n += t->id_count[i];
			xen_events += t->id_count[i];
		}
		for (int k = 0; k < nw; k++) {
			uint64_t got = count_of(rb, want[k].name);

			if (!strcmp(want[k].name, "kvm_entry"))
				got = rb->real_entry;
			else if (!strcmp(want[k].name, "kvm_exit"))
				got = rb->real_exit;
			if (got != want[k].n)
				print_error("%s: %llu read back, %llu generated\n", want[k].name,
					    (unsigned long long)got, (unsigned long long)want[k].n);
			assert_int_equal(got, want[k].n);
		}
		assert_int_equal(count_of(rb, "unknown"), unknown);
		assert_int_equal(rb->sum.unknown, unknown);
		assert_int_equal(rb->events, xen_events + rb->switches + rb->synth_entry +
				 rb->synth_exit);
		assert_int_equal(rb->sum.stream.records, t->records);
	}
	assert_int_equal(rb->real_entry, t->vmentry);
	assert_int_equal(rb->real_exit, t->vmexit);
	/* an HVM vCPU's own VMENTRY makes a synthesized entry redundant: none */
	assert_int_equal(rb->redundant_entry, 0);
	/* the vCPU model: one sched_switch per x->running, run time per vCPU */
	assert_int_equal(rb->switches, t->switches);
	assert_int_equal(rb->switch_mismatch, 0);
	for (int d = 0; d < p->ndoms; d++) {
		for (int v = 0; v < p->nvcpus; v++) {
			int pi = d * XTGEN_MAX_VCPUS + v;
			uint64_t want = (uint64_t)((unsigned __int128)t->run_ticks[d][v] *
						   1000000000u / 2400000000u);
			uint64_t got = rb->run_ns[pi];
			uint64_t tol = 2 * rb->intervals[pi] + 1;

			if ((got > want ? got - want : want - got) > tol)
				print_error("d%dv%d: %llu ns read back, %llu ns generated\n", d, v,
					    (unsigned long long)got, (unsigned long long)want);
			assert_true((got > want ? got - want : want - got) <= tol);
		}
	}
	/* time: raw TSC in the pages, TSC2NSEC applied by the reader */
	assert_int_equal(rb->first_ts, ns_of(t->first_tsc, rb->mult, rb->shift));
	assert_int_equal(rb->last_ts, ns_of(t->last_tsc, rb->mult, rb->shift));
	assert_int_equal(rb->handler_ts_wrong, 0);
	/* LOST_RECORDS: a missed-events mark with the count */
	assert_int_equal(rb->missed_marks, t->lost_records);
	assert_int_equal(rb->missed_sum, (int64_t)t->lost);
	assert_int_equal(rb->sum.stream.lost, t->lost);
	assert_int_equal(rb->sum.stream.skew, t->skew);
	assert_int_equal(rb->sum.stream.late, 0);
	assert_int_equal(rb->sum.stream.fillers, t->fillers);
	assert_int_equal(rb->sum.stream.no_tsc, t->no_tsc);
	assert_int_equal(count_of(rb, "lost_records"), t->lost_records);
}

static void test_edges(int version)
{
	struct xtgen_params p;
	struct xtgen_truth *t = calloc(1, sizeof(*t));
	struct readback *rb;

	xtgen_defaults(&p);
	p.lost_every = 3;
	p.skew_every = 4;
	p.late_domain = true;
	p.ndoms = 4;
	p.ring_bytes = 3 * 4096 - 8;
	rb = run(version == 6 ? "edges-v6" : "edges-v7", &p, version, t, 0);
	assert_true(t->fillers > 0);
	assert_true(t->no_tsc > 0);
	assert_true(t->lost_records > 0);
	assert_true(t->skew > 0);
	compare(&p, t, rb, true);
	/* the late domain runs only from halfway */
	assert_true(rb->late_dom_first_ts >= ns_of(p.tsc0 + p.epochs / 2 * p.epoch_ticks,
						   rb->mult, rb->shift));
	assert_int_equal(rb->sum.ndomains, 4);
	assert_int_equal(rb->sum.nvcpus, 8);
	assert_int_equal(rb->isa2, 0);	/* Intel reasons: VMX names */
	assert_false(rb->sum.svm_detected);
	rb_free(rb);
	free(t);
}

static void test_edges_v7(void **state)
{
	test_edges(7);
}

static void test_edges_v6(void **state)
{
	test_edges(6);
}

static void test_every_id(void **state)
{
	struct xtgen_params p;
	struct xtgen_truth *t = calloc(1, sizeof(*t));
	struct readback *rb;

	xtgen_defaults(&p);
	p.all_ids = true;
	p.guest = true;
	p.epochs = 4;
	rb = run("every-id", &p, 7, t, 0);
	assert_true(t->nids > 180);
	compare(&p, t, rb, true);
	assert_int_equal(rb->sum.unknown, 2);	/* the two ids no catalogue has */
	assert_true(count_of(rb, "guest") > 0);
	for (int c = 0; c < 12; c++)
		if (c != 10 && (c < 8 || c == 11))
			assert_true(t->per_class[c] > 0 || c == 6 || c == 9 || c == 10);
	rb_free(rb);
	free(t);
}

static void test_256_pcpus(void **state)
{
	struct xtgen_params p;
	struct xtgen_truth *t = calloc(1, sizeof(*t));
	struct readback *rb;

	xtgen_defaults(&p);
	p.ncpus = 256;
	p.ndoms = 8;
	p.nvcpus = 8;
	p.epochs = 3;
	p.events_per_slice = 1;
	rb = run("pcpus256", &p, 7, t, 0);
	assert_int_equal(rb->cpus, 256);
	compare(&p, t, rb, true);
	for (int c = 0; c < 256; c++)
		assert_true(rb->cpu_ts[c] > 0);
	rb_free(rb);
	free(t);
}

static void test_truncated(void **state)
{
	struct xtgen_params p;
	struct xtgen_truth *t = calloc(1, sizeof(*t));
	struct readback *rb;

	xtgen_defaults(&p);
	p.epochs = 5;
	rb = run("truncated", &p, 7, t, 10);
	assert_true(rb->sum.read.truncated == 10);
	assert_true(rb->sum.stream.cut_bytes > 0);
	assert_true(rb->sum.stream.records < t->records);
	assert_true(rb->sum.stream.records > t->records - 5);
	assert_int_equal(rb->nonmono, 0);
	rb_free(rb);
	free(t);
}

static void test_svm_and_guests(void **state)
{
	struct xtgen_params p;
	struct xtgen_truth *t = calloc(1, sizeof(*t));
	struct readback *rb;
	struct tracecmd_input *h;
	char out[256];

	xtgen_defaults(&p);
	p.svm = true;
	p.epochs = 6;
	rb = run("svm", &p, 7, t, 0);
	compare(&p, t, rb, true);
	assert_int_equal(rb->isa2, t->vmexit);
	/* one GUEST option per domain: vCPU i -> pid ((dom << 16) | i) + 1 */
	snprintf(out, sizeof(out), "%s/svm.dat", tmpdir);
	h = tracecmd_open(out, 0);
	assert_non_null(h);
	for (int d = 0; d < p.ndoms; d++) {
		const char *name;
		const int *pids;
		int n;
		char want[16];

		assert_int_equal(tracecmd_get_guest_cpumap(h, rec_guest_traceid(d), &name, &n,
							   &pids), 0);
		snprintf(want, sizeof(want), "d%d", d);
		assert_string_equal(name, want);
		assert_int_equal(n, p.nvcpus);
		for (int v = 0; v < n; v++)
			assert_int_equal(pids[v], (d << 16 | v) + 1);
	}
	tracecmd_close(h);
	rb_free(rb);
	free(t);
}

/* 4.17 VMEXIT ids from an AMD host: the reasons give the vendor away */
static void test_svm_legacy(void **state)
{
	struct xtgen_params p;
	struct xtgen_truth *t = calloc(1, sizeof(*t));
	struct readback *rb;

	xtgen_defaults(&p);
	p.svm = true;
	p.legacy_ids = true;
	p.epochs = 4;
	rb = run("svm-legacy", &p, 7, t, 0);
	compare(&p, t, rb, true);
	assert_true(rb->sum.svm_detected);
	assert_int_equal(rb->isa2, t->vmexit);
	rb_free(rb);
	free(t);
}

/* pCPUs without data between others (a xentrace -c mask): no waiting on them */
static void test_cpu_gaps(void **state)
{
	struct xtgen_params p;
	struct xtgen_truth *t = calloc(1, sizeof(*t));
	struct readback *rb = calloc(1, sizeof(*rb));
	struct rec_convert_opts o = { .hz = 2400000000ull };
	char in[256], out[256];
	uint8_t *d;
	long size, off = 0;
	FILE *f;

	xtgen_defaults(&p);
	p.ncpus = 3;
	p.epochs = 10;
	snprintf(in, sizeof(in), "%s/gaps.bin", tmpdir);
	snprintf(out, sizeof(out), "%s/gaps.dat", tmpdir);
	f = fopen(in, "w+");
	assert_non_null(f);
	assert_int_equal(xtgen_write(&p, f, t), 0);
	size = ftell(f);
	d = malloc(size);
	rewind(f);
	assert_int_equal(fread(d, 1, size, f), size);
	/* pCPU c becomes 2c: pCPUs 1 and 3 have no data */
	while (off + 12 <= size) {
		uint32_t cpu, len;

		memcpy(&cpu, d + off + 4, 4);
		memcpy(&len, d + off + 8, 4);
		cpu *= 2;
		memcpy(d + off + 4, &cpu, 4);
		off += 12 + len;
	}
	rewind(f);
	assert_int_equal(fwrite(d, 1, size, f), size);
	fclose(f);
	free(d);
	o.input = in;
	o.output = out;
	assert_int_equal(rec_convert(&o, &rb->sum), 0);
	rb->mult = rb->sum.mult;
	rb->shift = rb->sum.shift;
	rb->late_dom = -1;
	assert_int_equal(read_back(out, rb), 0);
	assert_int_equal(rb->cpus, 5);
	assert_int_equal(rb->sum.stream.late, 0);
	assert_true(rb->sum.stream.peak_buffered < t->bytes / 2);
	assert_int_equal(rb->nonmono, 0);
	assert_int_equal(rb->switches, t->switches);
	assert_int_equal(rb->sum.stream.records, t->records);
	rb_free(rb);
	free(t);
}

/* The sequential walk's figures, for one walk of @fd. */
struct hwalk {
	bool has[REC_MAX_CPUS];
	uint64_t bytes[REC_MAX_CPUS];
	int max_cpu;
};

static void hwalk(int fd, int nthreads, struct hwalk *w)
{
	memset(w, 0, sizeof(*w));
	assert_int_equal(rec_xentrace_walk(fd, w->has, w->bytes, REC_MAX_CPUS, &w->max_cpu,
					   nthreads, 0), 0);
}

/* Every split of the walk gives what one thread's walk gives. */
static void hwalk_same(int fd, const char *what)
{
	struct hwalk *one = malloc(sizeof(*one)), *w = malloc(sizeof(*w));

	hwalk(fd, 1, one);
	assert_true(one->max_cpu >= 0);
	for (int n = 2; n <= 9; n++) {
		hwalk(fd, n, w);
		if (memcmp(one, w, sizeof(*w)))
			fail_msg("%s: %d threads walked other figures than one", what, n);
	}
	free(one);
	free(w);
}

/* Offset of the window header holding @at (the window's start). */
static long window_at(const uint8_t *d, long size, long at, long *end)
{
	long off = 0;

	while (off + 12 <= size) {
		uint32_t len;

		memcpy(&len, d + off + 8, 4);
		if (off + 12 + len > at) {
			*end = off + 12 + len;
			return off;
		}
		off += 12 + len;
	}
	fail_msg("no window at %ld", at);
	return -1;
}

/*
 * convert's walk of the window headers on several threads (each stretch
 * after the first starts at a header found by looking): the figures of a
 * walk on one thread, for a clean capture, one with a bad header in its
 * second half (the walk stops there), and one with a chain of headers
 * forged inside a record window where a stretch starts (the stretch
 * before it then passes that point, and the walk goes on from there).
 */
static void test_header_walk(void **state)
{
	struct xtgen_params p;
	struct xtgen_truth *t = calloc(1, sizeof(*t));
	char in[256];
	uint8_t *d;
	long size, ws, we = 0, at;
	FILE *f;
	int fd;

	xtgen_defaults(&p);
	p.ncpus = 6;
	p.epochs = 3600;
	snprintf(in, sizeof(in), "%s/walk.bin", tmpdir);
	f = fopen(in, "w+");
	assert_non_null(f);
	assert_int_equal(xtgen_write(&p, f, t), 0);
	size = ftell(f);
	/* stretches need a file of twice the 8 MiB looked through for a start */
	assert_true(size > (20l << 20));
	d = malloc(size);
	rewind(f);
	assert_int_equal(fread(d, 1, size, f), size);
	fclose(f);
	fd = open(in, O_RDWR);
	assert_true(fd >= 0);
	hwalk_same(fd, "clean");

	/* a header with another event id at 70 %: every walk stops there */
	ws = window_at(d, size, size / 10 * 7, &we);
	{
		uint32_t bad = 1, was;

		memcpy(&was, d + ws, 4);
		assert_int_equal(pwrite(fd, &bad, 4, ws), 4);
		hwalk_same(fd, "bad header");
		assert_int_equal(pwrite(fd, &was, 4, ws), 4);
	}

	/*
	 * Headers forged inside the window over the middle, where the second
	 * of two stretches starts: five data-less windows of pCPU 5 in a row.
	 */
	at = (size / 2 + 3) & ~3l;
	ws = window_at(d, size, at, &we);
	assert_true(we - at > 5 * 12);
	for (int i = 0; i < 5; i++) {
		uint32_t h[3] = { 0x0001f003u | 2u << 28, 5, 0 };

		assert_int_equal(pwrite(fd, h, sizeof(h), at + 12 * i), sizeof(h));
	}
	hwalk_same(fd, "forged chain");
	close(fd);
	free(d);
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
		cmocka_unit_test(test_edges_v7),
		cmocka_unit_test(test_edges_v6),
		cmocka_unit_test(test_every_id),
		cmocka_unit_test(test_256_pcpus),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_svm_and_guests),
		cmocka_unit_test(test_svm_legacy),
		cmocka_unit_test(test_cpu_gaps),
		cmocka_unit_test(test_header_walk),
	};

	tracecmd_set_loglevel(TEP_LOG_NONE);
	return cmocka_run_group_tests(tests, setup, teardown);
}
