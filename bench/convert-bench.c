// SPDX-License-Identifier: GPL-2.0
/*
 * convert-bench: records converted per second on a >= 1 GB synthetic
 * xentrace capture (xtgen, in a temporary directory deleted afterwards),
 * against `xenalyze --summary` and a plain copy of the same file, all in
 * this run. Rates are per CPU-second of the child (user + system: the
 * machine is shared), wall-clock alongside; max RSS shows memory stays
 * flat (a capture 8x smaller is converted too). Writing as many bytes as
 * convert wrote, alone (dd, buffered as -j 1 writes, and with O_DIRECT as
 * the default -j writes), shows the floor the kernel's write path sets.
 * xenalyze, convert -j 1 (one thread) and convert with its default -j (a
 * thread per online CPU) run three times each, alternating (the two
 * converts in turns first), each after a sync; the medians are compared (target: convert at least 2x xenalyze's
 * speed, wall-clock, on this 2-core machine). Both convert runs write the
 * same file.
 *
 *   convert-bench [SIZE_MB]	(default 1024)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tcx-util.h"
#include "xtgen.h"

struct run {
	double	wall, cpu, user;
	long	rss_kb;
	int	status;
};

static double now(void)
{
	return tcx_now_ns() / 1e9;
}

/* Run argv with stdout to @out (NULL: /dev/null); time it. */
static struct run spawn(char *const argv[], const char *out)
{
	struct run r = { 0 };
	struct rusage ru;
	double t0 = now();
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int nul = open("/dev/null", O_WRONLY);

		if (fd < 0 || nul < 0)
			_exit(127);
		dup2(fd, 1);
		dup2(nul, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || wait4(pid, &r.status, 0, &ru) < 0) {
		r.status = -1;
		return r;
	}
	r.wall = now() - t0;
	r.user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	r.cpu = r.user + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	r.rss_kb = ru.ru_maxrss;
	return r;
}

static int make_capture(const char *path, uint64_t size_mb, struct xtgen_truth *t)
{
	struct xtgen_params p;
	FILE *f;
	int ret;

	/* an HVM/PV mix on 8 pCPUs: 4 domains of 4 vCPUs */
	xtgen_defaults(&p);
	p.ncpus = 8;
	p.ndoms = 4;
	p.nvcpus = 4;
	p.events_per_slice = 30;
	p.lost_every = 50;
	p.epochs = 2;
	f = fopen("/dev/null", "w");
	if (!f || xtgen_write(&p, f, t))
		return -1;
	fclose(f);
	p.epochs = size_mb * 1048576 / (t->bytes / 2) + 1;
	f = fopen(path, "w");
	if (!f)
		return -1;
	ret = xtgen_write(&p, f, t);
	if (fclose(f) || ret)
		return -1;
	return 0;
}

#define RUNS	3

/* The run of median wall time (its CPU figures with it); a failed run wins. */
static struct run median(struct run r[RUNS])
{
	struct run s[RUNS];

	for (int i = 0; i < RUNS; i++) {
		if (r[i].status)
			return r[i];
		s[i] = r[i];
	}
	for (int i = 0; i < RUNS; i++)
		for (int j = i + 1; j < RUNS; j++)
			if (s[j].wall < s[i].wall) {
				struct run x = s[i];

				s[i] = s[j];
				s[j] = x;
			}
	return s[RUNS / 2];
}

static void line(const char *what, const struct run *r, uint64_t records, uint64_t bytes)
{
	printf("  %-22s %6.2f s CPU (%5.2f user) %6.2f s wall %6.1f M rec/CPU-s %7.1f MB/s"
	       "  max RSS %6ld KB\n", what, r->cpu, r->user, r->wall, records / r->cpu / 1e6,
	       bytes / r->wall / 1048576.0, r->rss_kb);
}

int main(int argc, char **argv)
{
	uint64_t size_mb = argc > 1 ? strtoull(argv[1], NULL, 0) : 1024;
	const char *tmpbase = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
	struct xtgen_truth *t = calloc(1, sizeof(*t)), *ts = calloc(1, sizeof(*ts));
	char dir[512], cap[600], small[600], out[600], out1[600], copy[600], cmd[700];
	struct run rcopy, rxa, rconv, rone, rsmall, rwrite, rdirect, xa[RUNS], conv[RUNS], one[RUNS];
	char count[64], ddof[620];
	uint64_t out_mb = 0;
	struct stat st, ost;
	int rc = 1;

	snprintf(dir, sizeof(dir), "%s/tcx-convert-bench-XXXXXX", tmpbase);
	if (!t || !ts || !mkdtemp(dir)) {
		perror("convert-bench: temporary directory");
		return 1;
	}
	snprintf(cap, sizeof(cap), "%s/capture.bin", dir);
	snprintf(small, sizeof(small), "%s/small.bin", dir);
	snprintf(out, sizeof(out), "%s/out.dat", dir);
	snprintf(out1, sizeof(out1), "%s/out-j1.dat", dir);
	snprintf(copy, sizeof(copy), "%s/copy.bin", dir);

	if (make_capture(cap, size_mb, t) || make_capture(small, size_mb / 8 + 1, ts) ||
	    stat(cap, &st)) {
		fprintf(stderr, "convert-bench: cannot write the captures in %s\n", dir);
		goto out;
	}
	printf("convert-bench: %" PRIu64 " records, %.0f MB (%d pCPUs), in %s\n",
	       t->records, st.st_size / 1048576.0, t->max_cpu + 1, dir);

	/*
	 * The same file three ways, back to back; xenalyze and convert three
	 * times each, alternating, the median counted. Each run starts with
	 * the disk idle (sync): the previous output's writeback is not its.
	 */
	rcopy = spawn((char *[]){ "cp", cap, copy, NULL }, NULL);
	unlink(copy);
	for (int i = 0; i < RUNS; i++) {
		sync();
		xa[i] = spawn((char *[]){ "xenalyze", "--cpu-hz=2.4G", "--summary", cap, NULL },
			      NULL);
		/*
		 * The same conditions for both: neither follows the unlink
		 * of the other's 1.5 GB (both outputs stay until both ran),
		 * and each goes first in turn.
		 */
		for (int k = 0; k < 2; k++) {
			bool par = (k + i) % 2;

			sync();
			if (par)
				conv[i] = spawn((char *[]){ TCX_BIN, "convert", cap, "-o", out,
							    "--cpu-hz", "2.4G", "-q", NULL }, NULL);
			else
				one[i] = spawn((char *[]){ TCX_BIN, "convert", cap, "-o", out1,
							   "--cpu-hz", "2.4G", "-q", "-j", "1", NULL },
					       NULL);
		}
		if (!stat(out, &ost))
			out_mb = (ost.st_size + 1048575) >> 20;
		unlink(out);
		unlink(out1);
	}
	rxa = median(xa);
	rone = median(one);
	rconv = median(conv);
	sync();
	/* the floor: the kernel's cost of writing that many bytes, nothing else */
	snprintf(count, sizeof(count), "count=%llu", (unsigned long long)out_mb);
	snprintf(ddof, sizeof(ddof), "of=%s", copy);
	rwrite = spawn((char *[]){ "dd", "if=/dev/zero", ddof, "bs=1M", count, NULL }, NULL);
	unlink(copy);
	sync();
	rdirect = spawn((char *[]){ "dd", "if=/dev/zero", ddof, "bs=1M", count, "oflag=direct",
				    NULL }, NULL);
	unlink(copy);
	rsmall = spawn((char *[]){ TCX_BIN, "convert", small, "-o", out, "--cpu-hz", "2.4G",
				   "-q", NULL }, NULL);
	unlink(out);
	if (rconv.status || rone.status || rsmall.status || rcopy.status) {
		fprintf(stderr, "convert-bench: a run failed (convert %d, -j 1 %d, small %d, cp %d)\n",
			rconv.status, rone.status, rsmall.status, rcopy.status);
		goto out;
	}
	line("cp (plain copy)", &rcopy, t->records, st.st_size);
	if (rxa.status)
		printf("  xenalyze --summary: failed (status %d)\n", rxa.status);
	else
		line("xenalyze --summary", &rxa, t->records, st.st_size);
	line("convert -j 1", &rone, t->records, st.st_size);
	line("convert (default -j)", &rconv, t->records, st.st_size);
	line("convert (1/8 size)", &rsmall, ts->records, st.st_size / 8);
	if (!rwrite.status)
		printf("  %-22s %6.2f s CPU (%5.2f user) %6.2f s wall: the %" PRIu64
		       " MB convert wrote, written alone (dd)\n", "write the output", rwrite.cpu,
		       rwrite.user, rwrite.wall, out_mb);
	if (!rdirect.status)
		printf("  %-22s %6.2f s CPU (%5.2f user) %6.2f s wall: the same, O_DIRECT (dd "
		       "oflag=direct)\n", "write it direct", rdirect.cpu, rdirect.user,
		       rdirect.wall);

	/* a rate for the docs; the targets are the ratios below, measured in this run */
	printf("convert (default -j): %.1f M records/CPU-s (%.1f M/s wall)\n",
	       t->records / rconv.cpu / 1e6, t->records / rconv.wall / 1e6);
	if (!rxa.status) {
		printf("convert -j 1 vs xenalyze --summary (medians of %d): %.2fx its speed "
		       "wall-clock (%.2fx per CPU-s)\n", RUNS, rxa.wall / rone.wall,
		       rxa.cpu / rone.cpu);
		printf("convert (default -j) vs xenalyze --summary (medians of %d): %.2fx its speed "
		       "wall-clock (%.2fx per CPU-s); target >= 2x wall: %s\n", RUNS,
		       rxa.wall / rconv.wall, rxa.cpu / rconv.cpu,
		       rxa.wall / rconv.wall >= 2 ? "target met" : "NOT met");
		printf("default -j vs -j 1: %.2fx the speed wall-clock, %.2fx the CPU time\n",
		       rone.wall / rconv.wall, rconv.cpu / (rone.cpu > 0 ? rone.cpu : 1e-3));
	}
	if (!rxa.status && !rwrite.status && !rdirect.status)
		printf("floor: writing the output bytes alone takes %.2fx xenalyze's wall time "
		       "buffered (-j 1's way), %.2fx direct (the default -j's); 2x xenalyze "
		       "allows 0.50x for everything\n", rwrite.wall / rxa.wall,
		       rdirect.wall / rxa.wall);
	printf("convert vs plain copy: %.2fx the copy's wall time, %.2fx its CPU time\n",
	       rconv.wall / rcopy.wall, rconv.cpu / (rcopy.cpu > 0 ? rcopy.cpu : 1e-3));
	printf("memory: max RSS %ld KB for the full capture, %ld KB for 1/8 of it (%s); "
	       "-j 1: %ld KB\n", rconv.rss_kb, rsmall.rss_kb,
	       rconv.rss_kb < 2 * rsmall.rss_kb + 8192 ? "flat" : "GROWS", rone.rss_kb);
	rc = 0;
out:
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "convert-bench: could not remove %s\n", dir);
	free(t);
	free(ts);
	return rc;
}
