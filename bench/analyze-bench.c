// SPDX-License-Identifier: GPL-2.0
/*
 * analyze-bench: records per CPU-second of `trace-cmd-xen analyze` on a
 * synthetic capture of about 20 M Xen records (converted to a trace.dat),
 * against `xenalyze --summary` on the same capture, in the same run.
 * Targets: at least as fast as xenalyze, and flat memory: the peak RSS
 * for the full capture at most 1.5x that for a tenth of it.
 *
 *   analyze-bench [RECORDS] [DIR]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tlib.h"
#include "xtgen.h"

static int gen_capture(const char *bin, const char *dat, uint64_t want, uint64_t *records);

struct run {
	double cpu, wall;
	long rss_kb;
	int status;
};

static double tv(const struct timeval *t)
{
	return t->tv_sec + t->tv_usec / 1e6;
}

/*
 * Run @argv with stdout and stderr to /dev/null: its CPU time (this
 * process's children's rusage before and after) and its peak RSS (VmHWM
 * after its exec, which a forked child's ru_maxrss does not give: it
 * starts from the parent's peak).
 */
static struct run measure(char *const argv[])
{
	struct tlib_spawn_opts o = { .out = "/dev/null", .err = "/dev/null" };
	struct run r = { 0 };
	struct rusage a, b;
	struct timeval wa, wb;
	pid_t pid;

	getrusage(RUSAGE_CHILDREN, &a);
	gettimeofday(&wa, NULL);
	pid = tlib_spawn(argv, &o);
	if (pid < 0) {
		r.status = -1;
		return r;
	}
	r.status = tlib_wait_bounded(pid, 3600, &r.rss_kb, NULL);
	gettimeofday(&wb, NULL);
	getrusage(RUSAGE_CHILDREN, &b);
	r.cpu = tv(&b.ru_utime) + tv(&b.ru_stime) - tv(&a.ru_utime) - tv(&a.ru_stime);
	r.wall = tv(&wb) - tv(&wa);
	return r;
}

/*
 * In a child of its own: the generator's memory would otherwise stay in
 * this process and count in the max RSS of every child forked after it.
 */
static int make_capture(const char *bin, const char *dat, uint64_t want, uint64_t *records)
{
	int fds[2], st;
	pid_t pid;
	ssize_t n;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		uint64_t recs = 0;
		int ret = gen_capture(bin, dat, want, &recs);

		n = write(fds[1], &recs, sizeof(recs));
		_exit(ret || n != sizeof(recs) ? 1 : 0);
	}
	close(fds[1]);
	n = pid > 0 ? read(fds[0], records, sizeof(*records)) : -1;
	close(fds[0]);
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) ||
	    n != sizeof(*records))
		return -1;
	return 0;
}

static int gen_capture(const char *bin, const char *dat, uint64_t want, uint64_t *records)
{
	struct xtgen_params p;
	struct xtgen_truth *t = calloc(1, sizeof(*t));
	FILE *f;
	char cmd[2048];
	int ret;

	if (!t)
		return -1;
	xtgen_defaults(&p);
	p.ncpus = 4;
	p.epochs = 4;
	f = fopen("/dev/null", "w");
	if (!f || xtgen_write(&p, f, t)) {
		free(t);
		return -1;
	}
	fclose(f);
	p.epochs = want / (t->records / 4) + 1;
	f = fopen(bin, "w");
	if (!f || xtgen_write(&p, f, t) || fclose(f)) {
		free(t);
		return -1;
	}
	*records = t->records;
	free(t);
	snprintf(cmd, sizeof(cmd), "%s convert -q %s -o %s --cpu-hz 2400000000", TCX_BIN, bin,
		 dat);
	ret = system(cmd);
	return ret ? -1 : 0;
}

int main(int argc, char **argv)
{
	uint64_t want = argc > 1 ? strtoull(argv[1], NULL, 0) : 20000000;
	const char *dir = argc > 2 ? argv[2] : "/tmp";
	char bin[512], dat[512], sbin[512], sdat[512];
	uint64_t records, small;
	struct run xa, an, an_small;
	double rx, ra;
	bool met, flat;

	snprintf(bin, sizeof(bin), "%s/analyze-bench-%d.bin", dir, (int)getpid());
	snprintf(dat, sizeof(dat), "%s/analyze-bench-%d.dat", dir, (int)getpid());
	snprintf(sbin, sizeof(sbin), "%s/analyze-bench-%d-small.bin", dir, (int)getpid());
	snprintf(sdat, sizeof(sdat), "%s/analyze-bench-%d-small.dat", dir, (int)getpid());
	printf("analyze-bench: writing a capture of about %" PRIu64 " records\n", want);
	fflush(stdout);
	if (make_capture(bin, dat, want, &records) ||
	    make_capture(sbin, sdat, want / 10, &small)) {
		fprintf(stderr, "analyze-bench: could not write the captures in %s\n", dir);
		return 1;
	}
	/* both read the files once first, so neither pays for the page cache */
	{
		char *cat[] = { "cat", bin, dat, NULL };
		char *xa_argv[] = { "xenalyze", "--summary", bin, NULL };
		char *an_argv[] = { TCX_BIN, "analyze", dat, NULL };
		char *sm_argv[] = { TCX_BIN, "analyze", sdat, NULL };

		measure(cat);
		xa = measure(xa_argv);
		an = measure(an_argv);
		an_small = measure(sm_argv);
	}
	unlink(bin);
	unlink(dat);
	unlink(sbin);
	unlink(sdat);
	if (xa.status || an.status || an_small.status) {
		fprintf(stderr, "analyze-bench: a run failed (xenalyze %d, analyze %d, %d)\n",
			xa.status, an.status, an_small.status);
		return 1;
	}
	rx = records / xa.cpu;
	ra = records / an.cpu;
	printf("records          %" PRIu64 " Xen records (4 pCPUs, 3 domains x 2 vCPUs, HVM + PV)\n",
	       records);
	printf("xenalyze -s      %.2f CPU-s (%.2f s wall), %.1f M records/CPU-s, max RSS %ld KiB\n",
	       xa.cpu, xa.wall, rx / 1e6, xa.rss_kb);
	printf("analyze          %.2f CPU-s (%.2f s wall), %.1f M records/CPU-s, max RSS %ld KiB\n",
	       an.cpu, an.wall, ra / 1e6, an.rss_kb);
	printf("analyze (1/10)   max RSS %ld KiB for %" PRIu64 " records\n", an_small.rss_kb,
	       small);
	met = ra >= rx;
	printf("ratio            %.2fx xenalyze: target (>= 1.00x) %s\n", ra / rx,
	       met ? "met" : "NOT met");
	/* flat: the full capture takes at most 1.5x the memory of a tenth of it */
	flat = an.rss_kb * 2 <= an_small.rss_kb * 3;
	printf("memory           %ld KiB vs %ld KiB for a tenth (%.2fx): flat (<= 1.50x) "
	       "target %s\n", an.rss_kb, an_small.rss_kb,
	       an_small.rss_kb ? (double)an.rss_kb / an_small.rss_kb : 0.0,
	       flat ? "met" : "NOT met");
	return 0;
}
