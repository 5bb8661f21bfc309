// SPDX-License-Identifier: GPL-2.0
/*
 * A recorder killed outright leaves its files on one clock: on xensim
 * (guest-killed.conf, guest1 15 s from the host's TSC), our agent in
 * guest1 and `trace-cmd-xen record --xen -A guest1 --tsync PROTO
 * --tsync-interval 1` in the background, SIGKILLed once the guest file's
 * live TIME_SHIFT holds two sampling points per vCPU. Then, for xen and
 * for ptp:
 *  - trace.dat, trace-dom0.dat and trace-guest1.dat under their names, no
 *    NAME.PID.tmp left;
 *  - the stock `trace-cmd report` reads the three together, events from each;
 *  - each file's size near its allocated blocks and under a fixed bound;
 *  - the guest file holds one TIME_SHIFT, for trace.dat's trace id, with
 *    two sampling points or more per vCPU, each on the truth's offset;
 *  - every guest event up to the last sample, on the host's time line of
 *    that report, lies in a run of its vCPU in the simulator's truth.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include <unistd.h>

#include <cmocka.h>
#include <trace-cmd/trace-cmd.h>
#include <tracefs.h>

#include "tlib.h"
#include "tsync.h"

#define GDOM		1
#define GVCPUS		2
#define HOST_PCPUS	2
#define DOM0_VCPUS	2
#define MAX_SAMPLES	4096
/* --tsync-interval 1 in guest1's ticks (cpu_khz 2600000, unscaled) */
#define INTERVAL_TICKS	2600000000ull
/* the wait for two samples per vCPU: a net for a recorder that never makes them */
#define SAMPLE_LIMIT_S	30
/*
 * How far an event may lie from a run of its vCPU: the largest bound the
 * other xensim time sync tests accept on a loaded machine (xen's rounds
 * stamped late; ptp's probes under 0.1 ms). The guest is 15 s away, so a
 * file left on the guest's clock or a wrong offset is still caught.
 */
#define SLACK_NS	5000000ull
/*
 * tdat: each CPU's room starts at 4 MiB and grows by an eighth of it (at
 * least 4 MiB) in place, so a live file is at most a step per CPU larger
 * than its blocks (4 MiB while a CPU holds under 32 MiB, as here); the live
 * options slots and the metadata are under 1 MiB.
 */
#define REGION		(4ull << 20)
#define SLOP		(1ull << 20)
/*
 * At this host's rates trace.dat, the largest, takes about 1.2 MiB a
 * second: even the full 30 s wait for the samples stays under 40 MiB of
 * pages plus its two rooms. The writer it replaced reserved 512 MiB a file.
 */
#define FILE_MAX	(64ull << 20)

static struct tlib_sim sim;
static pid_t agent, rec;
static char outdir[400];

static int setup(void **state)
{
	(void)state;
	agent = rec = 0;
	if (tlib_sim_start(&sim, tlib_conf_path("../record-guest/guest-killed.conf")))
		return -1;
	setenv("XENSIM_HOST", sim.dir, 1);
	snprintf(outdir, sizeof(outdir), "%s/out", sim.tmp);
	return mkdir(outdir, 0755);
}

/*
 * A killed recorder leaves its dom0 instance (tcx-record-PID) in this
 * machine's tracefs, tracing, until the next record removes it: remove it
 * now. Returns how many were removed.
 */
static int drop_instances(pid_t pid)
{
	const char *top = tracefs_tracing_dir();
	char prefix[64], path[600];
	struct dirent *e;
	size_t len;
	int n = 0;
	DIR *d;

	if (!top || pid <= 0)
		return 0;
	len = (size_t)snprintf(prefix, sizeof(prefix), "tcx-record-%d", (int)pid);
	snprintf(path, sizeof(path), "%s/instances", top);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, prefix, len) || (e->d_name[len] && e->d_name[len] != '-'))
			continue;
		snprintf(path, sizeof(path), "%s/instances/%s", top, e->d_name);
		n += !rmdir(path);
	}
	closedir(d);
	return n;
}

static int teardown(void **state)
{
	(void)state;
	if (rec > 0 && tlib_kill(rec, SIGKILL) >= 0)
		drop_instances(rec);
	tlib_kill(agent, SIGTERM);
	rec = agent = 0;
	tlib_sim_cleanup(&sim);
	return 0;
}

/* ---- the guest file's TIME_SHIFT ---- */

struct shift {
	int n, ntimeshift;
	int ncpu;
	int count[GVCPUS];		/* samples per vCPU */
	struct tlib_shift *cpu[GVCPUS];	/* each vCPU's first sample in s[] */
	struct tlib_shift s[MAX_SAMPLES];
	char text[1 << 16];
};

/*
 * The samples of the TIME_SHIFT naming @peer, split by vCPU as the dump
 * lists them ("N [samples count for CPU c]", then N sample lines).
 * Returns tlib_time_shift()'s count.
 */
static int read_shift(const char *file, uint64_t peer, struct shift *sh)
{
	const char *p;
	int k = 0;

	memset(sh->count, 0, sizeof(sh->count));
	sh->ncpu = 0;
	sh->ntimeshift = 0;
	sh->n = tlib_time_shift(file, peer, sh->s, MAX_SAMPLES, sh->text, sizeof(sh->text));
	if (sh->n < 0)
		return sh->n;
	for (p = sh->text; (p = strstr(p, "Option TimeShift")); p++)
		sh->ntimeshift++;
	for (p = sh->text; (p = strstr(p, "[samples count for CPU")); p++) {
		const char *l = p;
		int n, c;

		while (l > sh->text && l[-1] != '\n')
			l--;
		if (sscanf(l, "%d", &n) != 1 || sscanf(p, "[samples count for CPU %d", &c) != 1 ||
		    c < 0 || c >= GVCPUS || c != sh->ncpu || n < 0 || k + n > sh->n ||
		    k + n > MAX_SAMPLES)
			return -3;
		sh->count[c] = n;
		sh->cpu[c] = &sh->s[k];
		k += n;
		sh->ncpu++;
	}
	return k == sh->n ? sh->n : -3;
}

/*
 * Whether every vCPU has samples from two sampling points: two or more
 * samples spanning half the interval. One point alone can make several
 * (xen's rounds of a sample; a lone point written twice, a tick apart).
 */
static bool two_points(const struct shift *sh)
{
	if (sh->ncpu != GVCPUS)
		return false;
	for (int c = 0; c < GVCPUS; c++) {
		const struct tlib_shift *s = sh->cpu[c];
		int n = sh->count[c];

		if (n < 2 || s[n - 1].ts < s[0].ts + INTERVAL_TICKS / 2)
			return false;
	}
	return true;
}

/* guest1's vCPU @v's TSC offset in the truth (an unscaled guest: guest = host + it) */
static int64_t truth_offset(int v)
{
	char path[400], line[512];
	long long off;
	bool found = false;
	unsigned int d, c;
	FILE *f;

	snprintf(path, sizeof(path), "%s/truth", sim.dir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) && !found)
		found = sscanf(line, "vcpu domid=%u vcpu=%u pcpu=%*u offset=%lld", &d, &c,
			       &off) == 3 && d == GDOM && c == (unsigned int)v;
	fclose(f);
	if (!found)
		fail_msg("no offset of guest1's vCPU %d in %s", v, path);
	return off;
}

/* ---- the stock reader's view of the files ---- */

/* trace.dat's TSC2NSEC through `trace-cmd dump --options`: "M S O [multiplier, shift, offset]" */
static void host_tsc2nsec(const char *file, struct tsync_clock *c)
{
	static char text[1 << 16];
	const char *p, *l;
	long long off;

	assert_int_equal(tlib_dump_options(text, sizeof(text), file), 0);
	p = strstr(text, "[multiplier, shift, offset]");
	if (!p)
		fail_msg("%s: no TSC2NSEC option:\n%.2000s", file, text);
	for (l = p; l > text && l[-1] != '\n'; l--)
		;
	memset(c, 0, sizeof(*c));
	assert_int_equal(sscanf(l, "%u %u %lld", &c->mult, &c->shift, &off), 3);
	assert_true(c->mult > 0 && c->shift <= 32);
	/* tsync_clock_ns() has no offset: the recorder writes none */
	assert_int_equal(off, 0);
}

/* "trace-guest1.dat: comm-pid [001] 12.345678901: ..." -> 1 */
static int report_cpu(const char *line)
{
	const char *b = strchr(line, ']');

	while (b && b > line && b[-1] != '[')
		b--;
	return b && b > line ? atoi(b) : -1;
}

/* The merged report's events of one file. */
struct placed {
	size_t n;			/* its events */
	size_t checked, out, far;	/* those up to the cutoff: outside a run, beyond slack */
	uint64_t worst_ns;
};

static int cmp_run(const void *x, const void *y)
{
	const struct tlib_truth_run *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* How far host ns @ns lies from the runs @r[0..@nr) (sorted), in ns. */
static uint64_t run_distance(const struct tlib_truth_run *r, size_t nr,
			     const struct tsync_clock *c, uint64_t ns)
{
	size_t lo = 0, hi = nr;
	uint64_t best = UINT64_MAX;

	/* the last run starting at or before ns, and the next one */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tsync_clock_ns(c, r[mid].start) <= ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo ? lo - 1 : 0; k <= lo && k < nr; k++) {
		uint64_t s = tsync_clock_ns(c, r[k].start);
		uint64_t e = r[k].end ? tsync_clock_ns(c, r[k].end) : UINT64_MAX;
		uint64_t d = ns < s ? s - ns : ns > e ? ns - e : 0;

		if (d < best)
			best = d;
	}
	return best;
}

/*
 * `trace-cmd report -t` of the three files (stdout and stderr in @rep): its
 * status, each file's event count in @n[], and guest1's events up to host
 * ns @cutoff placed against its vCPUs' runs in @tr.
 */
static int merged_report(const char *rep, const struct tlib_truth *tr,
			 const struct tsync_clock *c, uint64_t cutoff, size_t n[3],
			 struct placed *pl)
{
	static const char *const base[3] = { "trace.dat", "trace-dom0.dat", "trace-guest1.dat" };
	static char line[4096];
	struct tlib_truth_run *r[GVCPUS];
	size_t nr[GVCPUS] = { 0 };
	FILE *f;
	int st;

	st = tlib_capture(line, sizeof(line), "cd '%s' && trace-cmd report -t -i trace.dat -i "
			  "trace-dom0.dat -i trace-guest1.dat >'%s' 2>&1", outdir, rep);
	for (int v = 0; v < GVCPUS; v++) {
		r[v] = calloc(tr->nrun + 1, sizeof(*r[v]));
		assert_non_null(r[v]);
	}
	for (size_t k = 0; k < tr->nrun; k++) {
		const struct tlib_truth_run *x = &tr->run[k];

		if (x->dom == GDOM && x->vcpu < GVCPUS)
			r[x->vcpu][nr[x->vcpu]++] = *x;
	}
	for (int v = 0; v < GVCPUS; v++) {
		qsort(r[v], nr[v], sizeof(*r[v]), cmp_run);
		assert_true(nr[v] > 0);
	}
	memset(pl, 0, sizeof(*pl));
	f = fopen(rep, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		uint64_t ns, d;
		int i, cpu;

		for (i = 0; i < 3 && !tlib_report_ts(line, base[i], &ns); i++)
			;
		if (i == 3)
			continue;
		n[i]++;
		if (i != 2)
			continue;
		pl->n++;
		if (ns > cutoff)
			continue;	/* past the last sample: extrapolated */
		cpu = report_cpu(line);
		if (cpu < 0 || cpu >= GVCPUS)
			fail_msg("guest event on CPU %d: %s", cpu, line);
		d = run_distance(r[cpu], nr[cpu], c, ns);
		pl->checked++;
		pl->out += d > 0;
		if (d > SLACK_NS && pl->far++ < 5)
			print_message("# %.*s: %" PRIu64 " ns from a run of vCPU %d\n",
				      (int)strcspn(line, "\n"), line, d, cpu);
		if (d > pl->worst_ns)
			pl->worst_ns = d;
	}
	fclose(f);
	for (int v = 0; v < GVCPUS; v++)
		free(r[v]);
	return st;
}

/* ---- files on disk ---- */

/*
 * The output directory holds exactly the three files, none staged. Returns
 * whether the filesystem there grows a file in place (FALLOC_FL_INSERT_RANGE).
 */
static bool check_names(void)
{
	static const char *const want[3] = { "trace.dat", "trace-dom0.dat", "trace-guest1.dat" };
	bool seen[3] = { false };
	int other = 0, fd;
	bool insert;
	DIR *d = opendir(outdir);
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d))) {
		int i;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		for (i = 0; i < 3 && strcmp(e->d_name, want[i]); i++)
			;
		if (i < 3) {
			seen[i] = true;
			continue;
		}
		print_message("# left in the output directory: %s\n", e->d_name);
		other++;
	}
	closedir(d);
	for (int i = 0; i < 3; i++)
		if (!seen[i])
			fail_msg("no %s in %s", want[i], outdir);
	assert_int_equal(other, 0);

	/* can this filesystem insert ranges? (a scratch file in the same directory tree) */
	fd = open(tlib_path(sim.tmp, "insert-probe"), O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	insert = !ftruncate(fd, 1 << 20) && !fallocate(fd, FALLOC_FL_INSERT_RANGE, 0, 1 << 16);
	close(fd);
	unlink(tlib_path(sim.tmp, "insert-probe"));
	return insert;
}

/*
 * A file's apparent size against its blocks: with growth in place, at most
 * a step of room per CPU over them. Where regions move instead (doubling,
 * the old blocks punched out), the room and the holes left behind can each
 * reach the data: three times the blocks plus the first room per CPU.
 */
static void check_size(const char *name, int ncpu, bool insert)
{
	struct stat st;
	uint64_t alloc, bound;

	assert_int_equal(stat(tlib_path(outdir, name), &st), 0);
	alloc = (uint64_t)st.st_blocks * 512;
	bound = (insert ? alloc : 3 * alloc) + (uint64_t)ncpu * REGION + SLOP;
	print_message("# %s: %lld bytes, %" PRIu64 " allocated; bound %" PRIu64 " (%d CPUs)\n",
		      name, (long long)st.st_size, alloc, bound, ncpu);
	assert_true((uint64_t)st.st_size <= bound);
	assert_true((uint64_t)st.st_size <= FILE_MAX);
	assert_true(st.st_size > 0);
}

/* ---- the case ---- */

static void killed(const char *proto)
{
	static struct shift sh;
	char *gfile = tlib_path(outdir, "trace-guest1.dat"), log[400], rep[400];
	char *argv[] = { (char *)tlib_tcx(), "record", "--xen", "-A", "guest1", "--tsync",
			 (char *)proto, "--tsync-interval", "1000", "-o",
			 tlib_path(outdir, "trace.dat"), NULL };
	struct tracecmd_input *h;
	struct tsync_clock clk;
	struct tlib_truth tr;
	struct placed pl;
	size_t nev[3] = { 0 };
	uint64_t host_id, cutoff = UINT64_MAX;
	bool insert;
	int st, n = -2, t;

	agent = tlib_sim_guest(&sim, GDOM, "sched", NULL);
	if (agent <= 0)
		fail_msg("the agent of guest1 does not advertise itself (see %s/agent%d.log)",
			 sim.tmp, GDOM);
	snprintf(log, sizeof(log), "%s/record.log", sim.tmp);
	rec = tlib_sim_spawn(&sim, argv, -1, "/dev/null", log);
	assert_true(rec > 0);

	/*
	 * The guest file takes its name last (after trace.dat's); then its
	 * live TIME_SHIFT, polled until two sampling points per vCPU are in it.
	 */
	for (t = 0; t < SAMPLE_LIMIT_S * 10; t++) {
		if (waitpid(rec, &st, WNOHANG) == rec) {
			rec = 0;
			fail_msg("record ended before the kill (status %d): %s", st,
				 tlib_show(log));
		}
		if (!access(gfile, F_OK)) {
			n = read_shift(gfile, 0, &sh);
			if (n > 0 && two_points(&sh))
				break;
		}
		usleep(100 * 1000);
	}
	if (n <= 0 || !two_points(&sh))
		fail_msg("no TIME_SHIFT of 2 sampling points per vCPU in %s after %d s (%d): "
			 "%s\n%.2000s", gfile, SAMPLE_LIMIT_S, n, tlib_show(log), sh.text);
	print_message("# %s: killed after %d.%d s of polling, %d samples\n", proto, t / 10,
		      t % 10, n);
	st = tlib_kill(rec, SIGKILL);
	print_message("# removed %d dom0 instance(s) of the killed recorder\n",
		      drop_instances(rec));
	rec = 0;
	assert_int_equal(st, 128 + SIGKILL);
	tlib_show(log);

	/* names, sizes */
	insert = check_names();
	if (!insert)
		print_message("# the filesystem of %s cannot insert ranges: tdat moves a full "
			      "CPU's pages to the end at twice its room; bound 3 x blocks + "
			      "4 MiB per CPU\n", outdir);
	check_size("trace.dat", HOST_PCPUS, insert);
	check_size("trace-dom0.dat", DOM0_VCPUS, insert);
	check_size("trace-guest1.dat", GVCPUS, insert);

	/* one TIME_SHIFT, for trace.dat's trace id, two samples per vCPU */
	h = tracecmd_open(tlib_path(outdir, "trace.dat"), 0);
	assert_non_null(h);
	host_id = tracecmd_get_traceid(h);
	tracecmd_close(h);
	n = read_shift(gfile, host_id, &sh);
	if (n < 0)
		fail_msg("%s: no TIME_SHIFT for trace id 0x%llx (%d):\n%.2000s", gfile,
			 (unsigned long long)host_id, n, sh.text);
	assert_int_equal(sh.ntimeshift, 1);
	assert_int_equal(sh.ncpu, GVCPUS);
	assert_true(two_points(&sh));
	host_tsc2nsec(tlib_path(outdir, "trace.dat"), &clk);
	for (int c = 0; c < GVCPUS; c++) {
		int64_t off = truth_offset(c);
		uint64_t ns;

		/* each sample's host - guest is the truth's -offset, within the slack */
		for (int k = 0; k < sh.count[c]; k++) {
			const struct tlib_shift *x = &sh.cpu[c][k];
			uint64_t err = (uint64_t)llabs((long long)(x->offset + off));

			assert_int_equal(x->fields, 4);
			assert_int_equal(x->scaling, 1);
			if (tsync_clock_ticks_to_ns(&clk, err) > SLACK_NS)
				fail_msg("vCPU %d sample %d: offset %lld at %llu, truth %lld",
					 c, k, (long long)x->offset,
					 (unsigned long long)x->ts, (long long)-off);
		}
		/* the host time of its last sample, by the truth */
		ns = tsync_clock_ns(&clk, sh.cpu[c][sh.count[c] - 1].ts - (uint64_t)off);
		if (ns < cutoff)
			cutoff = ns;
	}

	/* the stock reader: the three files together, the guest on the host's clock */
	tlib_kill(agent, SIGTERM);
	agent = 0;
	assert_int_equal(tlib_sim_stop(&sim), 0);
	assert_int_equal(tlib_truth_load(sim.dir, &tr), 0);
	snprintf(rep, sizeof(rep), "%s/report.txt", sim.tmp);
	st = merged_report(rep, &tr, &clk, cutoff, nev, &pl);
	tlib_truth_free(&tr);
	print_message("# %s: report status %d; events: trace.dat %zu, trace-dom0.dat %zu, "
		      "trace-guest1.dat %zu; up to the last sample (%" PRIu64 " ns) %zu, %zu "
		      "outside a run of their vCPU, %zu by more than %llu ns; worst %" PRIu64
		      " ns\n", proto, st, nev[0], nev[1], nev[2], cutoff, pl.checked, pl.out,
		      pl.far, SLACK_NS, pl.worst_ns);
	if (st)
		fail_msg("trace-cmd report of the three files: status %d (%s)", st, rep);
	assert_true(nev[0] > 0 && nev[1] > 0 && nev[2] > 0);
	assert_true(pl.checked > 0);
	assert_int_equal(pl.far, 0);
}

static void test_killed_xen(void **state)
{
	(void)state;
	killed("xen");
}

static void test_killed_ptp(void **state)
{
	(void)state;
	killed("ptp");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_killed_xen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killed_ptp, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	tracecmd_set_loglevel(TEP_LOG_NONE);
	return cmocka_run_group_tests_name("record-guest-killed", tests, NULL, NULL);
}
