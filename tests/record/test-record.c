// SPDX-License-Identifier: GPL-2.0
/*
 * record --xen end to end on xensim, checked against the simulator's
 * ground truth and read back with libtracecmd:
 *  - drainable rate: every record written is in trace.dat (and in --raw),
 *    nothing lost, the sched_switch timeline is the truth's run intervals,
 *    GUEST options and dom0's TRACEID match, dom0's real ftrace markers
 *    land inside the rdtsc brackets of their writes, and trace-cmd merges
 *    both files into one ordered time line;
 *  - above the drain limit: the missed-event counts equal Xen's drops;
 *  - at a steady rate the drain's timer comes before most VIRQs;
 *  - -- command, SIGINT, and the errors.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>
#include <x86intrin.h>

#include <cmocka.h>
#include <trace-cmd/trace-cmd.h>
#include <tracefs.h>

#include "recorder-internal.h"
#include "tlib.h"

#define XENTRACE	"/usr/lib/xen-4.17/bin/xentrace"
#define MAXCPU		64

static struct tlib_sim sim;

static int setup_basic(void **state)
{
	return tlib_sim_start(&sim, tlib_conf_path("basic.conf"));
}

static int setup_stress(void **state)
{
	return tlib_sim_start(&sim, tlib_conf_path("stress.conf"));
}

static int cleanup(void **state)
{
	tlib_sim_cleanup(&sim);
	return 0;
}

static uint64_t json_u64(const char *file, const char *key)
{
	char buf[16384], pat[64], *p;
	FILE *f = fopen(file, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(buf, pat);
	assert_non_null(p);
	return strtoull(p + strlen(pat), NULL, 10);
}

static uint64_t tsc_ns(uint64_t tsc, uint32_t mult, uint32_t shift)
{
	return (uint64_t)(((unsigned __int128)tsc * mult) >> shift);
}

/* ---- reading trace.dat back ---- */

struct sw {
	uint64_t ts;
	int prev, next;
};

struct hvread {
	uint64_t recs[MAXCPU];		/* events that are Xen records */
	uint64_t missed[MAXCPU];
	uint64_t events;
	struct sw *sw[MAXCPU];
	size_t nsw[MAXCPU], capsw[MAXCPU];
};

static unsigned long long field(struct tep_event *ev, struct tep_record *r, const char *name)
{
	unsigned long long v = 0;

	tep_get_field_val(NULL, ev, name, r, &v, 0);
	return v;
}

static int on_hv(struct tracecmd_input *h, struct tep_record *r, int cpu, void *data)
{
	struct hvread *hr = data;
	struct tep_event *ev = tep_find_event_by_record(tracecmd_get_tep(h), r);
	bool rec;

	if (!ev || cpu >= MAXCPU)
		return 0;
	hr->events++;
	if (r->missed_events > 0)
		hr->missed[cpu] += r->missed_events;
	if (!strcmp(ev->name, "sched_switch")) {
		if (hr->nsw[cpu] == hr->capsw[cpu]) {
			hr->capsw[cpu] = hr->capsw[cpu] ? 2 * hr->capsw[cpu] : 4096;
			hr->sw[cpu] = realloc(hr->sw[cpu], hr->capsw[cpu] * sizeof(struct sw));
			assert_non_null(hr->sw[cpu]);
		}
		hr->sw[cpu][hr->nsw[cpu]++] = (struct sw){ r->ts, (int)field(ev, r, "prev_pid"),
							   (int)field(ev, r, "next_pid") };
		return 0;
	}
	if (!strcmp(ev->name, "lost_records"))
		return 0;	/* Xen's own mark, not a record it was asked for */
	if (!strcmp(ev->name, "kvm_entry") || !strcmp(ev->name, "kvm_exit"))
		rec = field(ev, r, "xen_event") != 0;	/* 0: synthesized */
	else
		rec = !strcmp(ev->system, "xen");
	if (!rec)
		return 0;
	hr->recs[cpu]++;
	return 0;
}

static void hv_read(const char *file, struct hvread *hr)
{
	struct tracecmd_input *h = tracecmd_open(file, 0);

	memset(hr, 0, sizeof(*hr));
	assert_non_null(h);
	tracecmd_iterate_events(h, NULL, 0, on_hv, hr);
	tracecmd_close(h);
}

static void hv_free(struct hvread *hr)
{
	for (int c = 0; c < MAXCPU; c++)
		free(hr->sw[c]);
}

/* Xen records in @file, all pCPUs. */
static uint64_t hv_records(const char *file)
{
	struct hvread hr;
	uint64_t n = 0;

	hv_read(file, &hr);
	for (int c = 0; c < MAXCPU; c++)
		n += hr.recs[c];
	hv_free(&hr);
	return n;
}

/* Index of the switch on @cpu at @ts to @pid, or -1. */
static long find_switch(const struct hvread *hr, unsigned int cpu, uint64_t ts, int pid)
{
	size_t lo = 0, hi = hr->nsw[cpu];

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (hr->sw[cpu][mid].ts < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < hr->nsw[cpu] && hr->sw[cpu][lo].ts == ts; lo++)
		if (hr->sw[cpu][lo].next == pid)
			return (long)lo;
	return -1;
}

/*
 * dom0: markers written while recording, each bracketed by rdtsc in this
 * process; the kernel stamps them with x86-tsc, so once both files convert
 * ticks the same way each must land inside its bracket.
 */
#define NMARK	20

struct marks {
	uint64_t t1[NMARK], t2[NMARK], ts[NMARK];
	bool seen[NMARK];
	uint64_t events;
};

static int on_d0(struct tracecmd_input *h, struct tep_record *r, int cpu, void *data)
{
	struct marks *m = data;
	struct tep_event *ev = tep_find_event_by_record(tracecmd_get_tep(h), r);
	const char *p;
	int i;

	m->events++;
	if (!ev || strcmp(ev->name, "print"))
		return 0;
	p = memmem(r->data, r->size, "tcxmark ", 8);
	if (!p || sscanf(p + 8, "%d", &i) != 1 || i < 0 || i >= NMARK)
		return 0;
	m->seen[i] = true;
	m->ts[i] = r->ts;
	return 0;
}

static void write_marks(pid_t rec, struct marks *m)
{
	char p[256], msg[32];
	int fd = -1;

	/*
	 * A new instance traces at once; the recorder turns it off, sets the
	 * clock, then on again: on with the x86-tsc clock means started.
	 */
	for (int i = 0; i < 500; i++) {
		char clk[256] = "";
		int on = 0;
		FILE *f;

		snprintf(p, sizeof(p), "/sys/kernel/tracing/instances/tcx-record-%d/trace_clock",
			 (int)rec);
		f = fopen(p, "r");
		if (f) {
			if (!fgets(clk, sizeof(clk), f))
				clk[0] = 0;
			fclose(f);
		}
		snprintf(p, sizeof(p), "/sys/kernel/tracing/instances/tcx-record-%d/tracing_on",
			 (int)rec);
		f = fopen(p, "r");
		if (f) {
			if (fscanf(f, "%d", &on) != 1)
				on = 0;
			fclose(f);
		}
		if (on && strstr(clk, "[x86-tsc]"))
			break;
		usleep(10 * 1000);
	}
	snprintf(p, sizeof(p), "/sys/kernel/tracing/instances/tcx-record-%d/trace_marker", (int)rec);
	fd = open(p, O_WRONLY);
	assert_true(fd >= 0);
	for (int i = 0; i < NMARK; i++) {
		int n = snprintf(msg, sizeof(msg), "tcxmark %d", i);

		m->t1[i] = __rdtsc();
		assert_int_equal(write(fd, msg, n), n);
		m->t2[i] = __rdtsc();
		usleep(20 * 1000);
	}
	close(fd);
}

/* ---- the tests ---- */

static void test_drainable(void **state)
{
	char *out = tlib_path(sim.tmp, "trace.dat"), *d0 = tlib_path(sim.tmp, "trace-dom0.dat");
	char *raw = tlib_path(sim.tmp, "raw.bin"), *js = tlib_path(sim.tmp, "sum.json");
	char *err = tlib_path(sim.tmp, "err"), *mono = tlib_path(sim.tmp, "mono");
	char *argv[] = { (char *)tlib_tcx(), "record", "--xen", "-q", "-e", "sched:sched_switch",
			 "-o", out, "--raw", raw, "--summary-json", js, "--duration", "2",
			 NULL };
	char cmd[2048];
	struct tracecmd_input *h;
	struct hvread hr;
	struct marks mk = { 0 };
	struct tlib_truth t;
	uint32_t mult, shift;
	size_t checked = 0;
	unsigned long nonmono = 99, d0lines = 0, marklines = 0;
	FILE *f;
	pid_t rpid;

	rpid = tlib_sim_spawn(&sim, argv, -1, "/dev/null", err);
	write_marks(rpid, &mk);
	assert_int_equal(tlib_wait(rpid), 0);
	assert_int_equal(tlib_sim_stop(&sim), 0);
	assert_int_equal(tlib_truth_load(sim.dir, &t), 0);
	mult = json_u64(js, "tsc2nsec_mult");
	shift = json_u64(js, "tsc2nsec_shift");

	hv_read(out, &hr);
	for (unsigned int c = 0; c < t.pcpus; c++) {
		print_message("# pCPU %u: truth written %lu dropped %lu, trace.dat %lu\n", c,
			      (unsigned long)t.st[c].written, (unsigned long)t.st[c].dropped,
			      (unsigned long)hr.recs[c]);
		assert_true(t.st[c].written > 1000);
		assert_int_equal(t.st[c].dropped, 0);
		assert_int_equal(hr.recs[c], t.st[c].written);
		assert_int_equal(hr.missed[c], 0);
	}
	assert_int_equal(json_u64(js, "lost"), 0);
	/* every record above came through the direct writes where /tmp takes them */
	assert_int_equal(tlib_file_has(js, "\"direct\": true"), tlib_dio_offered(sim.tmp));

	/*
	 * The timeline: a run whose opening record was written starts with a
	 * switch to its vCPU at that very stamp, and the vCPU stays until the
	 * next switch, which Xen logs right after the closing record (the
	 * incoming vCPU's runnable->running, a few ticks later).
	 */
	for (size_t i = 0; i < t.nrun; i++) {
		const struct tlib_truth_run *r = &t.run[i];
		int pid = rec_vcpu_pid(r->dom, r->vcpu);
		long k;
		uint64_t end;

		if (!r->ws)
			continue;
		k = find_switch(&hr, r->pcpu, tsc_ns(r->start, mult, shift), pid);
		if (k < 0)
			fail_msg("no switch to d%uv%u on pCPU %u at %lu", r->dom, r->vcpu,
				 r->pcpu, (unsigned long)r->start);
		checked++;
		if (!r->we || !r->end || (size_t)k + 1 >= hr.nsw[r->pcpu])
			continue;
		end = tsc_ns(r->end, mult, shift);
		if (hr.sw[r->pcpu][k + 1].prev != pid || hr.sw[r->pcpu][k + 1].ts < end ||
		    hr.sw[r->pcpu][k + 1].ts - end > 10000)
			fail_msg("d%uv%u on pCPU %u: truth ends at %lu ns, trace.dat at %lu ns",
				 r->dom, r->vcpu, r->pcpu, (unsigned long)end,
				 (unsigned long)hr.sw[r->pcpu][k + 1].ts);
		checked++;
	}
	print_message("# %zu run boundaries matched\n", checked);
	assert_true(checked > 100);

	/* GUEST entries for every domain; dom0's file carries dom0's TRACEID */
	h = tracecmd_open(out, 0);
	assert_non_null(h);
	for (uint32_t dom = 0; dom <= 2; dom++) {
		const char *name;
		const int *pids;
		int n;

		assert_int_equal(tracecmd_get_guest_cpumap(h, rec_guest_traceid(dom), &name, &n,
							   &pids), 0);
		assert_int_equal(n, dom == 2 ? 1 : 2);
		assert_int_equal(pids[n - 1], rec_vcpu_pid(dom, n - 1));
	}
	tracecmd_close(h);
	h = tracecmd_open(d0, 0);
	assert_non_null(h);
	assert_int_equal(tracecmd_get_traceid(h), rec_guest_traceid(0));
	tracecmd_iterate_events(h, NULL, 0, on_d0, &mk);
	tracecmd_close(h);

	/* one clock: dom0's x86-tsc stamps convert as the hypervisor's do */
	for (int i = 0; i < NMARK; i++) {
		uint64_t a = tsc_ns(mk.t1[i], mult, shift), b = tsc_ns(mk.t2[i], mult, shift);

		assert_true(mk.seen[i]);
		if (mk.ts[i] < a || mk.ts[i] > b)
			fail_msg("marker %d at %lu ns, written between %lu and %lu", i,
				 (unsigned long)mk.ts[i], (unsigned long)a, (unsigned long)b);
	}
	print_message("# dom0: %lu events, %d markers inside their rdtsc brackets\n",
		      (unsigned long)mk.events, NMARK);

	/* trace-cmd merges both files into one ordered time line */
	snprintf(cmd, sizeof(cmd), "trace-cmd report -i %s -i %s 2>/dev/null | awk '"
		 "/^trace-dom0.dat:/ {d++} /tcxmark/ {m++} "
		 "{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+[.][0-9]+:$/) "
		 "{t = $i + 0; if (t < p) bad++; p = t; break}} "
		 "END {print bad + 0, d + 0, m + 0}' > %s", out, d0, mono);
	assert_int_equal(system(cmd), 0);
	f = fopen(mono, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%lu %lu %lu", &nonmono, &d0lines, &marklines), 3);
	fclose(f);
	print_message("# merged report: %lu dom0 lines, %lu markers, %lu out of order\n",
		      d0lines, marklines, nonmono);
	assert_int_equal(nonmono, 0);
	assert_true(d0lines > 100);
	assert_int_equal(marklines, NMARK);
	hv_free(&hr);
	tlib_truth_free(&t);
}

static void test_stress(void **state)
{
	char *out = tlib_path(sim.tmp, "trace.dat"), *js = tlib_path(sim.tmp, "sum.json");
	char *err = tlib_path(sim.tmp, "err");
	char *argv[] = { (char *)tlib_tcx(), "record", "--xen", "-q", "--no-dom0", "--xen-pages", "2",
			 "-o", out, "--summary-json", js, "--duration", "1", NULL };
	struct hvread hr;
	struct tlib_truth t;
	uint64_t lost = 0;
	bool dropped = false;

	/*
	 * The simulator produces in real time: on a machine busy with other
	 * work it may not reach a rate that overflows 2-page buffers. Try
	 * again (up to 3 runs) until every pCPU dropped; then check.
	 */
	for (int attempt = 0; !dropped; attempt++) {
		assert_int_equal(tlib_sim_run(&sim, argv, "/dev/null", err), 0);
		assert_int_equal(tlib_sim_stop(&sim), 0);
		assert_int_equal(tlib_truth_load(sim.dir, &t), 0);
		dropped = true;
		for (unsigned int c = 0; c < t.pcpus; c++)
			dropped &= t.st[c].dropped > 0;
		if (dropped || attempt == 2)
			break;
		print_message("# run %d: a pCPU dropped nothing (a busy machine): again\n",
			      attempt + 1);
		tlib_truth_free(&t);
		tlib_sim_cleanup(&sim);
		assert_int_equal(tlib_sim_start(&sim, tlib_conf_path("stress.conf")), 0);
		out = tlib_path(sim.tmp, "trace.dat");
		js = tlib_path(sim.tmp, "sum.json");
		err = tlib_path(sim.tmp, "err");
		argv[8] = out;
		argv[10] = js;
	}
	hv_read(out, &hr);
	for (unsigned int c = 0; c < t.pcpus; c++) {
		print_message("# pCPU %u: written %lu dropped %lu reported %lu; file: %lu "
			      "records, %lu missed\n", c, (unsigned long)t.st[c].written,
			      (unsigned long)t.st[c].dropped,
			      (unsigned long)t.st[c].lost_reported, (unsigned long)hr.recs[c],
			      (unsigned long)hr.missed[c]);
		assert_true(t.st[c].dropped > 0);
		assert_int_equal(hr.missed[c], t.st[c].lost_reported);
		assert_int_equal(hr.recs[c], t.st[c].written);
		lost += t.st[c].lost_reported;
	}
	assert_int_equal(json_u64(js, "lost"), lost);
	hv_free(&hr);
	tlib_truth_free(&t);
}

static int setup_steady(void **state)
{
	return tlib_sim_start(&sim, tlib_conf_path("steady.conf"));
}

/*
 * At a steady rate the drain copies on its own timer before a buffer is
 * half full, so Xen raises VIRQ_TBUF for few of the times its buffers fill
 * that far (under a quarter). A drain that only waits for the VIRQ gets
 * one about every other time (45-48 of 84 on xensim). The summary's
 * "drain" says the same: most rounds came from the timer, and no more
 * VIRQs woke it than Xen raised. The simulator runs in real time next to
 * other tests: up to 3 runs.
 */
static void test_drain_timer(void **state)
{
	const unsigned int pages = 32;
	uint64_t halves = 0, virqs = 0, lost = 0, rounds = 0, woken = 0, ring = 0;
	struct tlib_truth t;
	struct stat sb;
	char spages[16];

	snprintf(spages, sizeof(spages), "%u", pages);
	for (int attempt = 0;; attempt++) {
		char *out = tlib_path(sim.tmp, "trace.dat"), *raw = tlib_path(sim.tmp, "raw.bin");
		char *err = tlib_path(sim.tmp, "err"), *js = tlib_path(sim.tmp, "sum.json");
		char *argv[] = { (char *)tlib_tcx(), "record", "--xen", "-q", "--no-dom0",
				 "--xen-pages", spages, "-o", out, "--raw", raw,
				 "--summary-json", js, "--duration", "2", NULL };

		assert_int_equal(tlib_sim_run(&sim, argv, "/dev/null", err), 0);
		assert_int_equal(tlib_sim_stop(&sim), 0);
		assert_int_equal(tlib_truth_load(sim.dir, &t), 0);
		assert_int_equal(stat(raw, &sb), 0);
		/* Xen's windows, all pCPUs: how often a buffer filled half way */
		halves = (uint64_t)sb.st_size / (pages * 4096 / 2);
		virqs = lost = 0;
		for (unsigned int c = 0; c < t.pcpus; c++) {
			virqs += t.st[c].virqs;
			lost += t.st[c].dropped;
		}
		tlib_truth_free(&t);
		rounds = json_u64(js, "rounds");
		woken = json_u64(js, "virqs");
		ring = json_u64(js, "ring_kib");
		print_message("# run %d: %lu bytes of windows, %lu half buffers, %lu VIRQs, "
			      "%lu lost; the drain: %lu rounds, %lu woken by a VIRQ\n",
			      attempt + 1, (unsigned long)sb.st_size, (unsigned long)halves,
			      (unsigned long)virqs, (unsigned long)lost, (unsigned long)rounds,
			      (unsigned long)woken);
		if ((halves >= 40 && virqs * 4 < halves) || attempt == 2)
			break;
		tlib_sim_cleanup(&sim);
		assert_int_equal(tlib_sim_start(&sim, tlib_conf_path("steady.conf")), 0);
	}
	assert_true(halves >= 40);
	assert_true(virqs * 4 < halves);
	assert_int_equal(lost, 0);
	/* a round per half buffer at least, most of them the timer's */
	assert_true(rounds >= halves / 2);
	assert_true(woken <= virqs);
	assert_true(woken * 2 < rounds);
	/*
	 * The staging ring is faulted in a round ahead of the drain: past the
	 * first 512 KiB at this rate (the rewind point is 1 MiB), but nowhere
	 * near its 32 MiB, nor the 4 MiB it once took up front.
	 */
	print_message("# staging ring faulted in: %lu KiB\n", (unsigned long)ring);
	assert_true(ring > 512);
	assert_true(ring <= 3072);
}

static void test_command(void **state)
{
	char *out = tlib_path(sim.tmp, "trace.dat"), *err = tlib_path(sim.tmp, "err");
	char *argv[] = { (char *)tlib_tcx(), "record", "--xen", "-q", "-o", out, "--",
			 "/bin/sh", "-c", "sleep 0.3; exit 3", NULL };
	struct tracecmd_input *h;

	assert_int_equal(tlib_sim_run(&sim, argv, "/dev/null", err), 3);
	h = tracecmd_open(out, 0);
	assert_non_null(h);
	tracecmd_close(h);
	h = tracecmd_open(tlib_path(sim.tmp, "trace-dom0.dat"), 0);
	assert_non_null(h);
	tracecmd_close(h);
}

/* Whether this kernel lets an instance of ours write @file (some deny it). */
static bool instance_may_write(const char *file, const char *val)
{
	char name[64];
	struct tracefs_instance *inst;
	bool ok;

	snprintf(name, sizeof(name), "tcx-test-probe-%d", (int)getpid());
	inst = tracefs_instance_create(name);
	assert_non_null(inst);
	ok = tracefs_instance_file_write(inst, file, val) >= 0;
	tracefs_instance_destroy(inst);
	tracefs_instance_free(inst);
	return ok;
}

/*
 * dom0's trace-cmd options on the real kernel: -f filters dom0's events,
 * -M keeps them to CPU 0; -l needs set_ftrace_filter, which some kernels
 * deny: then the error says so and names the file.
 */
static void test_dom0_options(void **state)
{
	char *out = tlib_path(sim.tmp, "trace.dat"), *err = tlib_path(sim.tmp, "err");
	char *filt[] = { (char *)tlib_tcx(), "record", "--xen", "-q", "-e", "sched:sched_switch",
			 "-f", "prev_pid>0", "-M", "1", "-o", out, "--", "/bin/sh", "-c",
			 "for i in 1 2 3 4 5 6 7 8; do sleep 0.05; done", NULL };
	char *func[] = { (char *)tlib_tcx(), "record", "--xen", "-q", "-l", "schedule", "-o",
			 out, "--duration", "0.3", NULL };
	struct tracecmd_input *h;
	struct tep_handle *tep;
	uint64_t n = 0, bad = 0, other_cpu = 0;
	int rc;

	assert_int_equal(tlib_sim_run(&sim, filt, "/dev/null", err), 0);
	h = tracecmd_open(tlib_path(sim.tmp, "trace-dom0.dat"), 0);
	assert_non_null(h);
	tep = tracecmd_get_tep(h);
	for (long c = 0; c < sysconf(_SC_NPROCESSORS_CONF); c++) {
		struct tep_record *r;

		while ((r = tracecmd_read_data(h, (int)c))) {
			struct tep_event *ev = tep_find_event_by_record(tep, r);
			unsigned long long pid = 0;

			if (!ev || strcmp(ev->name, "sched_switch") ||
			    tep_get_field_val(NULL, ev, "prev_pid", r, &pid, 0) || !pid)
				bad++;
			other_cpu += c != 0;
			n++;
			tracecmd_free_record(r);
		}
	}
	tracecmd_close(h);
	print_message("# -f 'prev_pid>0' -M 1: %lu events, %lu not matching, %lu off CPU 0\n",
		      (unsigned long)n, (unsigned long)bad, (unsigned long)other_cpu);
	assert_true(n > 0);
	assert_int_equal(bad, 0);
	assert_int_equal(other_cpu, 0);

	rc = tlib_sim_run(&sim, func, "/dev/null", err);
	if (instance_may_write("set_ftrace_filter", "schedule")) {
		assert_int_equal(rc, 0);
	} else {
		assert_int_equal(rc, 1);
		if (!tlib_file_has(err, "-l schedule needs to write \"schedule\" to the tracefs "
				   "file set_ftrace_filter, which the kernel denies"))
			fail_msg("no message naming set_ftrace_filter: %s", tlib_show(err));
	}
}

/*
 * -m KB on dom0: the kernel's ring keeps the newest KB per CPU, read at the
 * stop. A shell writes numbered markers into our instance until it has
 * written 20000: the last ones are in the file, the first ones are not,
 * and no CPU holds more than KB and a page; the summary says what the ring
 * overwrote and does not count it lost.
 */
static void test_dom0_max_kb(void **state)
{
	char *out = tlib_path(sim.tmp, "trace.dat"), *err = tlib_path(sim.tmp, "err");
	char *d0 = tlib_path(sim.tmp, "trace-dom0.dat"), *js = tlib_path(sim.tmp, "s.json");
	char *sum = tlib_path(sim.tmp, "sum");
	/* pinned to CPU 0: one ring holds the markers, in order */
	const char *script = "taskset -p -c 0 $$ >/dev/null || exit 1; "
			     "m=/sys/kernel/tracing/instances/tcx-record-$PPID/trace_marker; "
			     "i=0; while [ $i -lt 20000 ]; do echo \"tcxm $i\" > $m; "
			     "i=$((i+1)); done";
	char *argv[] = { (char *)tlib_tcx(), "record", "--xen", "-e", "sched:sched_switch",
			 "-m", "16", "-b", "512", "--summary-json", js,
			 "-o", out, "--", "/bin/sh", "-c", (char *)script, NULL };
	char *rep = tlib_path(sim.tmp, "report.txt");
	struct tlib_markers m;
	long page_kb = getpagesize() / 1024, cpu_kb_max;

	if (tlib_sim_run(&sim, argv, sum, err))
		fail_msg("record -m 16 failed, see %s", tlib_show(err));
	assert_int_equal(tlib_sh("trace-cmd report -i %s > %s 2>/dev/null", d0, rep), 0);
	assert_int_equal(tlib_markers(rep, &m), 0);
	cpu_kb_max = tlib_cpu_kb_max(d0);
	print_message("# -m 16: markers %ld..%ld (%ld of 20000), largest CPU %ld KiB\n",
		      m.first, m.last, m.n, cpu_kb_max);
	assert_int_equal(m.last, 19999);
	assert_true(m.first > 10000);
	assert_true(m.n > 0 && m.n < 2000);
	assert_int_equal(m.n, m.last - m.first + 1);
	assert_true(cpu_kb_max > 0 && cpu_kb_max <= 16 + page_kb);
	if (!tlib_file_has(err, "-b 512 ignored: -m 16 sets the buffer size"))
		fail_msg("no note on -b beside -m: %s", tlib_show(err));
	if (!tlib_file_has(err, "-m 16 KiB: kept the newest pages per CPU (cpu0 ") &&
	    !tlib_file_has(sum, "-m 16 KiB: kept the newest pages per CPU (cpu0 "))
		fail_msg("no -m line in the summary: %s", tlib_show(err));
	assert_true(json_u64(js, "overwritten") > 10000);
	assert_int_equal(json_u64(js, "dom0"), 0);
	assert_int_equal(json_u64(js, "bad_pages"), 0);
}

static void test_sigint(void **state)
{
	char *out = tlib_path(sim.tmp, "trace.dat"), *raw = tlib_path(sim.tmp, "raw.bin");
	char *err = tlib_path(sim.tmp, "err");
	char *argv[] = { (char *)tlib_tcx(), "record", "--xen", "-o", out, "--raw", raw,
			 NULL };
	char cmd[2048];
	pid_t pid;
	uint64_t n;

	pid = tlib_sim_spawn(&sim, argv, -1, "/dev/null", err);
	usleep(1200 * 1000);
	kill(pid, SIGINT);
	assert_int_equal(tlib_wait(pid), 0);
	assert_true(tlib_file_has(err, "stopped by signal 2"));
	n = hv_records(out);
	assert_true(n > 1000);
	snprintf(cmd, sizeof(cmd), "trace-cmd report -i %s -i %s >/dev/null 2>&1", out,
		 tlib_path(sim.tmp, "trace-dom0.dat"));
	assert_int_equal(system(cmd), 0);
	/* the raw copy converts as xentrace's would */
	snprintf(cmd, sizeof(cmd), "%s convert -q %s -o %s", tlib_tcx(), raw,
		 tlib_path(sim.tmp, "conv.dat"));
	assert_int_equal(system(cmd), 0);
}

/*
 * kill -9: the files read up to the last flush (once a second). What went
 * to the disk directly is there; the sizes were patched after each batch.
 */
static void test_killed(void **state)
{
	char *out = tlib_path(sim.tmp, "trace.dat"), *err = tlib_path(sim.tmp, "err");
	char *argv[] = { (char *)tlib_tcx(), "record", "--xen", "-q", "-o", out, NULL };
	char cmd[2048];
	pid_t pid;
	uint64_t n;
	int st;

	pid = tlib_sim_spawn(&sim, argv, -1, "/dev/null", err);
	usleep(2500 * 1000);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	n = hv_records(out);
	print_message("# %lu Xen records readable after kill -9 at 2.5 s\n", (unsigned long)n);
	/* two flushes at least: more than a second's worth of the basic host */
	assert_true(n > 1000);
	snprintf(cmd, sizeof(cmd), "trace-cmd report -i %s -i %s >/dev/null 2>%s", out,
		 tlib_path(sim.tmp, "trace-dom0.dat"), tlib_path(sim.tmp, "report.err"));
	assert_int_equal(system(cmd), 0);
}

static void test_errors(void **state)
{
	char *out = tlib_path(sim.tmp, "t.dat"), *err = tlib_path(sim.tmp, "err");
	char *badmask[] = { (char *)tlib_tcx(), "record", "--xen", "--xen-events", "bogus", "-o", out, NULL };
	char *badev[] = { (char *)tlib_tcx(), "record", "--xen", "-q", "-e", "nosuch:nosuch_ev",
			  "-o", out, NULL };
	char *badout[] = { (char *)tlib_tcx(), "record", "--xen", "-q", "-o",
			   "/nonexistent/dir/t.dat", NULL };
	char *noxen[] = { (char *)tlib_tcx(), "record", "-o", out, NULL };
	char *plain[] = { (char *)tlib_tcx(), "record", "--xen", "-q", "-o", out, "--duration",
			  "0.5", NULL };
	char *full[] = { (char *)tlib_tcx(), "record", "--xen", "-q", "--no-dom0", "-o", out,
			 "--raw", "/dev/full", "--duration", "2", NULL };
	char *same[] = { (char *)tlib_tcx(), "record", "--xen", "-q", "-o", out, "--raw", out,
			 "--duration", "0.5", NULL };
	char *xt[] = { XENTRACE, "-T", "5", tlib_path(sim.tmp, "xt.bin"), NULL };
	struct tracecmd_input *h;
	pid_t xpid;

	assert_int_equal(tlib_sim_run(&sim, badmask, "/dev/null", err), 2);
	assert_true(tlib_file_has(err, "unknown class"));
	assert_int_equal(tlib_sim_run(&sim, noxen, "/dev/null", err), 2);
	assert_int_equal(tlib_sim_run(&sim, badev, "/dev/null", err), 1);
	assert_true(tlib_file_has(err, "no event matches \"nosuch:nosuch_ev\""));
	assert_int_equal(access(out, F_OK), -1);	/* nothing left behind */
	assert_int_equal(access(tlib_path(sim.tmp, "t-dom0.dat"), F_OK), -1);
	/* two outputs in one file: refused before anything is written */
	assert_int_equal(tlib_write_file(out, "an earlier run's file\n"), 0);
	assert_int_equal(tlib_sim_run(&sim, same, "/dev/null", err), 1);
	assert_true(tlib_file_has(err, "-o and --raw are the same file"));
	assert_true(tlib_file_has(out, "an earlier run's file"));
	unlink(out);
	assert_int_equal(tlib_sim_run(&sim, badout, "/dev/null", err), 1);
	assert_true(tlib_file_has(err, "/nonexistent/dir/t.dat: No such file"));
	assert_int_equal(tlib_wait(tlib_sim_spawn(&sim, plain, 1, "/dev/null", err)), 1);
	assert_true(tlib_file_has(err, "dom0"));

	/* a second consumer: the stock xentrace holds VIRQ_TBUF */
	if (!access(XENTRACE, X_OK)) {
		xpid = tlib_sim_spawn(&sim, xt, -1, "/dev/null", NULL);
		usleep(500 * 1000);
		assert_int_equal(tlib_sim_run(&sim, plain, "/dev/null", err), 1);
		assert_true(tlib_file_has(err, "another trace consumer"));
		kill(xpid, SIGINT);
		tlib_wait(xpid);
	}

	/* disk full: stop, say so, leave a valid file */
	assert_int_equal(tlib_sim_run(&sim, full, "/dev/null", err), 1);
	assert_true(tlib_file_has(err, "disk full"));
	h = tracecmd_open(out, 0);
	assert_non_null(h);
	tracecmd_close(h);
	/* a device is written as it is, never staged and renamed over */
	{
		struct stat st;

		assert_int_equal(stat("/dev/full", &st), 0);
		assert_true(S_ISCHR(st.st_mode));
	}
}

/* The option parsers, without a host. */
static void test_parse(void **state)
{
	uint8_t map[8];
	uint32_t m;
	char *p;

	assert_int_equal(rec_parse_evt_mask("sched", &m), 0);
	assert_int_equal(m, 0x0002f000);
	assert_int_equal(rec_parse_evt_mask("sched,hvm", &m), 0);
	assert_int_equal(m, 0x000af000);
	assert_int_equal(rec_parse_evt_mask("all", &m), 0);
	assert_int_equal(m, 0x0ffff000);
	assert_int_equal(rec_parse_evt_mask("0x00083000", &m), 0);
	assert_int_equal(m, 0x00083000);
	assert_int_equal(rec_parse_evt_mask("2f000", &m), 0);
	assert_int_equal(m, 0x0002f000);
	assert_int_equal(rec_parse_evt_mask("bogus", &m), -EINVAL);
	assert_int_equal(rec_parse_evt_mask("sched,", &m), 0);
	assert_int_equal(rec_parse_evt_mask("", &m), -EINVAL);
	assert_int_equal(rec_parse_evt_mask("0x0", &m), -EINVAL);

	assert_int_equal(rec_parse_cpu_mask("0-3,5,7", map, sizeof(map)), 0);
	assert_int_equal(map[0], 0xaf);
	assert_int_equal(rec_parse_cpu_mask("0x3", map, sizeof(map)), 0);
	assert_int_equal(map[0], 0x03);
	assert_int_equal(rec_parse_cpu_mask("all", map, sizeof(map)), 0);
	assert_int_equal(map[7], 0xff);
	assert_int_equal(rec_parse_cpu_mask("3-1", map, sizeof(map)), -EINVAL);
	assert_int_equal(rec_parse_cpu_mask("64", map, sizeof(map)), -ERANGE);
	assert_int_equal(rec_parse_cpu_mask("1,x", map, sizeof(map)), -EINVAL);

	p = rec_dom0_path("trace.dat");
	assert_string_equal(p, "trace-dom0.dat");
	free(p);
	p = rec_dom0_path("/tmp/a.b/run");
	assert_string_equal(p, "/tmp/a.b/run-dom0");
	free(p);
	p = rec_dom0_path("out/x.y.dat");
	assert_string_equal(p, "out/x.y-dom0.dat");
	free(p);
	p = rec_dom0_path(".hidden");
	assert_string_equal(p, ".hidden-dom0");
	free(p);
}


struct pidcount {
	uint64_t n;		/* sched_switch records */
	uint64_t foreign;	/* neither side the shell */
	uint64_t child;		/* of those, a sleep child switching out */
};

/* dom0's sched_switch records against the shell's pid @sh. */
static void count_pids(const char *file, unsigned long long sh, struct pidcount *pc)
{
	struct tracecmd_input *h = tracecmd_open(file, 0);
	struct tep_handle *tep;

	memset(pc, 0, sizeof(*pc));
	assert_non_null(h);
	tep = tracecmd_get_tep(h);
	for (long c = 0; c < sysconf(_SC_NPROCESSORS_CONF); c++) {
		struct tep_record *r;

		while ((r = tracecmd_read_data(h, (int)c))) {
			struct tep_event *ev = tep_find_event_by_record(tep, r);
			unsigned long long prev = 0, next = 0;
			const char *comm;
			int len;

			if (ev && !strcmp(ev->name, "sched_switch") &&
			    !tep_get_field_val(NULL, ev, "prev_pid", r, &prev, 0) &&
			    !tep_get_field_val(NULL, ev, "next_pid", r, &next, 0)) {
				pc->n++;
				if (prev == sh || next == sh) {
					tracecmd_free_record(r);
					continue;
				}
				pc->foreign++;
				comm = tep_get_field_raw(NULL, ev, "prev_comm", r, &len, 0);
				if (comm && !strncmp(comm, "sleep", 5))
					pc->child++;
			}
			tracecmd_free_record(r);
		}
	}
	tracecmd_close(h);
}

/* The shell's pid, as it wrote it. */
static unsigned long long read_pid(const char *file)
{
	unsigned long long pid = 0;
	FILE *f = fopen(file, "r");

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%llu", &pid), 1);
	fclose(f);
	assert_true(pid > 0);
	return pid;
}

/*
 * -F and -P: only the command's (the process's) events in dom0's file (sched_switch: the shell on
 * one side); -F -c: its children's too; -p nop records as without -p.
 */
static void test_dom0_pids(void **state)
{
	char *out = tlib_path(sim.tmp, "trace.dat"), *err = tlib_path(sim.tmp, "err");
	char *d0 = tlib_path(sim.tmp, "trace-dom0.dat"), *pf = tlib_path(sim.tmp, "shpid");
	char script[700];
	char *argv[24];
	struct pidcount pc;
	unsigned long long sh;

	snprintf(script, sizeof(script), "echo $$ > '%s'; for i in 1 2 3 4 5 6; do "
		 "/bin/sleep 0.05; done; exit 0", pf);
	for (int run = 0; run < 3; run++) {
		int n = 0;

		argv[n++] = (char *)tlib_tcx();
		argv[n++] = "record";
		argv[n++] = "--xen";
		argv[n++] = "-q";
		argv[n++] = "-e";
		argv[n++] = "sched:sched_switch";
		argv[n++] = run == 2 ? "-p" : "-F";
		if (run == 1)
			argv[n++] = "-c";
		if (run == 2)
			argv[n++] = "nop";
		argv[n++] = "-o";
		argv[n++] = out;
		argv[n++] = "--";
		argv[n++] = "/bin/sh";
		argv[n++] = "-c";
		argv[n++] = script;
		argv[n] = NULL;
		unlink(pf);
		if (tlib_sim_run(&sim, argv, "/dev/null", err))
			fail_msg("record failed, see %s", tlib_show(err));
		sh = read_pid(pf);
		count_pids(d0, sh, &pc);
		print_message("# %s: %lu sched_switch, %lu without the shell, %lu of a child\n",
			      run == 0 ? "-F" : run == 1 ? "-F -c" : "-p nop",
			      (unsigned long)pc.n, (unsigned long)pc.foreign,
			      (unsigned long)pc.child);
		assert_true(pc.n > 0);
		if (run == 0) {
			assert_int_equal(pc.foreign, 0);
			assert_int_equal(pc.child, 0);
		} else {
			/* children (-c), or everyone (no -F) */
			assert_true(pc.child > 0);
			assert_true(pc.foreign > 0);
		}
	}

	/* -P: a process already running, alone */
	{
		char pidarg[24];
		char *pv[] = { (char *)tlib_tcx(), "record", "--xen", "-q", "-e",
			       "sched:sched_switch", "-P", pidarg, "--duration", "0.4", "-o",
			       out, NULL };
		pid_t p = fork();

		assert_true(p >= 0);
		if (!p) {
			execl("/bin/sh", "sh", "-c", "for i in $(seq 30); do /bin/sleep 0.03; "
			      "done", (char *)NULL);
			_exit(127);
		}
		snprintf(pidarg, sizeof(pidarg), "%d", (int)p);
		if (tlib_sim_run(&sim, pv, "/dev/null", err))
			fail_msg("record -P failed, see %s", tlib_show(err));
		waitpid(p, NULL, 0);
		count_pids(d0, (unsigned long long)p, &pc);
		print_message("# -P %d: %lu sched_switch, %lu without it, %lu of a child\n",
			      (int)p, (unsigned long)pc.n, (unsigned long)pc.foreign,
			      (unsigned long)pc.child);
		assert_true(pc.n > 0);
		assert_int_equal(pc.foreign, 0);
		assert_int_equal(pc.child, 0);
	}

	/* -p function: recorded where the kernel lets an instance have it */
	{
		char *fv[] = { (char *)tlib_tcx(), "record", "--xen", "-q", "-p", "function",
			       "--duration", "0.3", "-o", out, NULL };
		int rc = tlib_sim_run(&sim, fv, "/dev/null", err);

		print_message("# -p function: exit %d\n", rc);
		if (instance_may_write("current_tracer", "function"))
			assert_int_equal(rc, 0);
		else if (rc != 1 || !tlib_file_has(err, "current_tracer"))
			fail_msg("-p function: exit %d, no message naming current_tracer: %s",
				 rc, tlib_show(err));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test_setup_teardown(test_drainable, setup_basic, cleanup),
		cmocka_unit_test_setup_teardown(test_stress, setup_stress, cleanup),
		cmocka_unit_test_setup_teardown(test_drain_timer, setup_steady, cleanup),
		cmocka_unit_test_setup_teardown(test_command, setup_basic, cleanup),
		cmocka_unit_test_setup_teardown(test_dom0_options, setup_basic, cleanup),
		cmocka_unit_test_setup_teardown(test_dom0_max_kb, setup_basic, cleanup),
		cmocka_unit_test_setup_teardown(test_dom0_pids, setup_basic, cleanup),
		cmocka_unit_test_setup_teardown(test_sigint, setup_basic, cleanup),
		cmocka_unit_test_setup_teardown(test_killed, setup_basic, cleanup),
		cmocka_unit_test_setup_teardown(test_errors, setup_basic, cleanup),
	};

	tracecmd_set_loglevel(TEP_LOG_NONE);
	if (getenv("TCX_TEST_ONLY"))
		cmocka_set_test_filter(getenv("TCX_TEST_ONLY"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
