// SPDX-License-Identifier: GPL-2.0
/*
 * record-bench: how high a record rate `record --xen` drains with nothing
 * lost, against Debian's stock xentrace on the same simulated host and
 * buffer size, in the same run. A ladder of rates (one busy HVM guest with
 * a vCPU on each of 2 pCPUs) runs a fresh xensim host per step and
 * consumer; the simulator's ground truth says what was written and what
 * Xen dropped (lost by the consumer being late). Also: CPU time (user +
 * system of the consumer) per million records, max RSS, and RSS sampled
 * over a soak run at a drainable rate (memory must stay flat). Each step
 * runs each consumer -r times (3), in turn, and takes the medians: on a
 * shared 2-core machine one run's CPU time varies by half. The thread
 * that copies out of Xen's buffers runs at the bench's nice - 10 in both
 * (record's drain thread asks for it; xentrace is started so). Both run
 * every step up to 400 000 exits/s per vCPU: record must lose no more
 * than xentrace at any step and nothing where xentrace loses nothing, and
 * take at most twice xentrace's CPU per record at every step. A step where
 * the simulated hosts wrote far apart record counts for the two consumers
 * is said so, and the CPU target is then not met: the loads differed.
 * The floor line writes as many bytes as record's trace.dat took, alone:
 * what the kernel's write path costs for them, before any decoding.
 * Then what the low steps' ratios are made of: a session of a quiet host
 * (what a session costs with hardly a record) and the two lowest rates
 * for --long SEC (15) instead of -d: a step's ratio over 3 s carries the
 * per-session cost, a long session's is the per-record one. For
 * information: the target is the ladder's.
 *
 *   record-bench [-d SEC] [-S PAGES] [-r RUNS] [--long SEC] [--soak SEC]
 *                [--soak-rate EXITS] [--no-ladder]
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-stats.h"

#define XENTRACE	"/usr/lib/xen-4.17/bin/xentrace"
#define SOAK_RATE	20000	/* the file grows ~10 MB/s, not the disk's worth */
#define LOSS_TOP	400000	/* both consumers run every step up to this rate */
/*
 * Xen writes about as many records for either consumer at a step (up to a
 * tenth fewer where one loses many); further apart, the hosts did not run
 * the same load and the step's CPU ratio compares nothing.
 */
#define LOAD_SPREAD	1.25

struct result {
	uint64_t	written, dropped;
	uint64_t	out_bytes;	/* the consumer's file */
	double		cpu;
	long		rss_kb;
	int		status;
};

static char tmp[256];

static void nap(double s)
{
	struct timespec d = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&d, &d) && errno == EINTR)
		;
}

static int write_conf(const char *path, unsigned int rate)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "[host]\npcpus = 2\nvendor = intel\nslice_us = 1000\ntick_us = 500\nseed = 5\n\n"
		   "[domain Domain-0]\ndomid = 0\ntype = pv\nvcpus = 1\nprofile = idle\n"
		   "rate = 1000\nrun_us = 50\nblock_us = 5000\n\n"
		   "[domain load]\ndomid = 1\ntype = hvm\nvcpus = 2\nprofile = busy\n"
		   "rate = %u\n", rate);
	return fclose(f);
}

static pid_t host_start(const char *conf, const char *dir)
{
	char ready[600];
	pid_t pid = fork();

	if (!pid) {
		int nul = open("/dev/null", O_WRONLY);

		dup2(nul, 1);
		execl(XENSIM_BIN, XENSIM_BIN, "run", conf, "--dir", dir, (char *)NULL);
		_exit(127);
	}
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	for (int i = 0; i < 500 && access(ready, F_OK); i++)
		nap(0.01);
	return pid;
}

/* Stop the host; its truth then has the final counters. */
static void host_stop(pid_t pid, const char *dir, struct result *r)
{
	char path[600], line[512];
	FILE *f;

	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	snprintf(path, sizeof(path), "%s/truth", dir);
	f = fopen(path, "r");
	r->written = r->dropped = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char *w = strstr(line, " written="), *d = strstr(line, " dropped=");

		if (strncmp(line, "stats ", 6) || !w || !d)
			continue;
		r->written += strtoull(w + 9, NULL, 10);
		r->dropped += strtoull(d + 9, NULL, 10);
	}
	if (f)
		fclose(f);
}

static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/*
 * Run one consumer against a fresh host at @rate for @secs; SIGINT ends
 * it (xentrace's and our clean stop alike). With @soak, RSS every 10 s.
 */
static struct result consume(bool ours, unsigned int rate, double secs, unsigned int pages,
			     bool soak)
{
	char conf[512], dir[512], out[512], spages[16];
	struct result r = { 0 };
	struct rusage ru;
	struct stat sb;
	pid_t host, pid;
	int st;

	snprintf(conf, sizeof(conf), "%s/host.conf", tmp);
	snprintf(dir, sizeof(dir), "%s/host-%s-%u", tmp, ours ? "tcx" : "xt", rate);
	snprintf(out, sizeof(out), "%s/out-%s", tmp, ours ? "trace.dat" : "trace.bin");
	snprintf(spages, sizeof(spages), "%u", pages);
	write_conf(conf, rate);
	host = host_start(conf, dir);
	pid = fork();
	if (!pid) {
		int nul = open("/dev/null", O_WRONLY), prio;

		dup2(nul, 1);
		dup2(nul, 2);
		setenv("XENSIM_HOST", dir, 1);
		setenv("LD_LIBRARY_PATH", XSIM_LIBDIR, 1);
		if (ours)
			execl(TCX_BIN, TCX_BIN, "record", "--xen", "-q", "--no-dom0", "--xen-pages", spages,
			      "-o", out, (char *)NULL);
		/*
		 * record's drain thread asks for nice - 10 (it only copies);
		 * xentrace only copies too: give it the same, for a fair race
		 */
		errno = 0;
		prio = getpriority(PRIO_PROCESS, 0);
		if (!errno && setpriority(PRIO_PROCESS, 0, prio - 10)) {
			/* not root: both stay where they are */
		}
		execl(XENTRACE, XENTRACE, "-S", spages, out, (char *)NULL);
		_exit(127);
	}
	if (soak) {
		long first = -1, max = 0, last = 0;

		for (double t = 0; t < secs; t += 10) {
			nap(secs - t < 10 ? secs - t : 10);
			last = rss_kb(pid);
			if (first < 0)
				first = last;
			if (last > max)
				max = last;
			printf("  soak t=%4.0f s  RSS %ld KiB\n", t + (secs - t < 10 ? secs - t : 10),
			       last);
			fflush(stdout);
		}
		printf("  RSS first %ld KiB, last %ld KiB, max %ld KiB\n", first, last, max);
	} else {
		nap(secs);
	}
	kill(pid, SIGINT);
	wait4(pid, &st, 0, &ru);
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	r.cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
		ru.ru_stime.tv_usec / 1e6;
	r.rss_kb = ru.ru_maxrss;
	host_stop(host, dir, &r);
	if (!stat(out, &sb))
		r.out_bytes = sb.st_size;
	unlink(out);
	return r;
}

static double cpu_self(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

/*
 * The kernel's share alone: CPU seconds to write @bytes into a new file
 * here, 128 KiB a call as record's writer does (median of 3).
 */
static double write_floor(uint64_t bytes)
{
	static char buf[128 << 10];
	char path[300];
	double t[3];

	memset(buf, 0x5a, sizeof(buf));
	snprintf(path, sizeof(path), "%s/floor", tmp);
	for (int i = 0; i < 3; i++) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		double c0 = cpu_self();

		for (uint64_t done = 0; fd >= 0 && done < bytes; done += sizeof(buf))
			if (write(fd, buf, sizeof(buf)) < 0)
				break;
		if (fd >= 0)
			close(fd);
		t[i] = cpu_self() - c0;
		unlink(path);
	}
	for (int i = 0; i < 2; i++)
		for (int j = i + 1; j < 3; j++)
			if (t[j] < t[i]) {
				double x = t[i];

				t[i] = t[j];
				t[j] = x;
			}
	return t[1];
}

static void cleanup(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		fprintf(stderr, "record-bench: could not remove %s\n", tmp);
}

/* One consumer's runs at one step: medians, so one noisy run decides nothing. */
struct step {
	double		cpu;		/* CPU s of a run */
	double		cpu_per_m;	/* CPU s per M records */
	double		lost;		/* records Xen dropped */
	double		written;
	double		out_per_rec;	/* file bytes per record */
	long		rss_kb;		/* the largest */
	bool		failed;		/* a run's exit status */
};

/* Both consumers (record only, without xentrace) at @rate, @reps times in turn. */
static void run_step(bool xt, unsigned int rate, double secs, unsigned int pages, int reps,
		     struct step st[2])
{
	double cpu[2][16], run_cpu[2][16], lost[2][16], wr[2][16], out[2][16];

	memset(st, 0, 2 * sizeof(*st));
	for (int i = 0; i < reps; i++) {
		for (int k = xt ? 0 : 1; k < 2; k++) {
			struct result r = consume(k == 1, rate, secs, pages, false);

			cpu[k][i] = r.written ? r.cpu * 1e6 / r.written : 0;
			run_cpu[k][i] = r.cpu;
			lost[k][i] = r.dropped;
			wr[k][i] = r.written;
			out[k][i] = r.written ? (double)r.out_bytes / r.written : 0;
			if (r.rss_kb > st[k].rss_kb)
				st[k].rss_kb = r.rss_kb;
			st[k].failed |= r.status != 0;
		}
	}
	for (int k = xt ? 0 : 1; k < 2; k++) {
		st[k].cpu_per_m = bench_median(cpu[k], reps);
		st[k].cpu = bench_median(run_cpu[k], reps);
		st[k].lost = bench_median(lost[k], reps);
		st[k].written = bench_median(wr[k], reps);
		st[k].out_per_rec = bench_median(out[k], reps);
	}
}

/*
 * What the low steps' ratios are made of: the CPU of a session with hardly
 * a record (an idle dom0 and a guest at rate 0: about 12 000 scheduler
 * records a second), and the lowest two steps run @long_secs instead of
 * @secs, where that per-session cost weighs @long_secs / @secs times less.
 */
static void sessions(double secs, double long_secs, unsigned int pages, int reps)
{
	static const unsigned int low[] = { 25000, 50000 };
	struct step st[2];

	printf("\nwhat the low steps are made of (medians of %d runs each; for information, "
	       "the target is the ladder's):\n", reps);
	run_step(true, 0, secs, pages, reps, st);
	printf("  a quiet host for %.0f s: record %.1f ms of CPU, xentrace %.1f ms (%.2fx): "
	       "the cost of a session\n", secs, st[1].cpu * 1e3, st[0].cpu * 1e3,
	       st[0].cpu > 0 ? st[1].cpu / st[0].cpu : 0);
	for (size_t i = 0; i < sizeof(low) / sizeof(low[0]); i++) {
		run_step(true, low[i], long_secs, pages, reps, st);
		printf("  %u exits/s for %.0f s: record %.3f CPU s per M records, xentrace %.3f: "
		       "%.2fx (%.0f and %.0f lost)\n", low[i], long_secs, st[1].cpu_per_m,
		       st[0].cpu_per_m, st[0].cpu_per_m > 0 ? st[1].cpu_per_m / st[0].cpu_per_m : 0,
		       st[1].lost, st[0].lost);
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	static const unsigned int rates[] = { 25000, 50000, 100000, 200000, 400000, 800000,
					      1600000 };
	double secs = 3, soak = 20, long_secs = 15;
	unsigned int pages = 32, best_xt = 0, best_tcx = 0;
	unsigned int loss_bad = 0, cpu_bad = 0, load_bad = 0;
	double worst_ratio = 0, clean_out = 0, clean_xt = 0, clean_tcx = 0;
	unsigned int worst_rate = 0, clean_rate = 0;
	int nsteps = 0, reps = 3;
	bool xt_ok = !access(XENTRACE, X_OK), xt_lost = false, tcx_lost = false, ladder = true;
	unsigned int soak_rate = SOAK_RATE;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-d") && i + 1 < argc)
			secs = atof(argv[++i]);
		else if (!strcmp(argv[i], "-S") && i + 1 < argc)
			pages = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-r") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--long") && i + 1 < argc)
			long_secs = atof(argv[++i]);
		else if (!strcmp(argv[i], "--soak") && i + 1 < argc)
			soak = atof(argv[++i]);
		else if (!strcmp(argv[i], "--soak-rate") && i + 1 < argc)
			soak_rate = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-ladder"))
			ladder = false;
		else {
			fprintf(stderr, "usage: record-bench [-d SEC] [-S PAGES] [-r RUNS] [--long SEC] "
				"[--soak SEC] [--soak-rate EXITS] [--no-ladder]\n");
			return 2;
		}
	}
	if (reps < 1 || reps > 16) {
		fprintf(stderr, "record-bench: -r takes 1 to 16\n");
		return 2;
	}
	snprintf(tmp, sizeof(tmp), "/tmp/record-bench-XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	atexit(cleanup);
	printf("record-bench: 2 pCPUs, one busy HVM guest (a vCPU per pCPU), %u-page buffers, "
	       "%.0f s per run, medians of %d runs per consumer and step\n", pages, secs, reps);
	printf("%10s  %-10s %12s %10s %8s %10s %9s %8s\n", "exits/s", "consumer", "records",
	       "rec/s", "lost", "CPU s/Mrec", "maxRSS", "CPU x");
	for (size_t i = 0; ladder && i < sizeof(rates) / sizeof(rates[0]); i++) {
		struct step st[2];

		/* both up to LOSS_TOP, which the loss target names; past it while one is clean */
		if (rates[i] > LOSS_TOP && tcx_lost && (xt_lost || !xt_ok))
			break;
		run_step(xt_ok, rates[i], secs, pages, reps, st);
		for (int k = xt_ok ? 0 : 1; k < 2; k++) {
			bool ours = k == 1;
			double ratio = 0;

			if (ours && xt_ok && st[0].cpu_per_m > 0)
				ratio = st[1].cpu_per_m / st[0].cpu_per_m;
			printf("%10u  %-10s %12.0f %10.0f %8.0f %10.3f %6ld MiB", rates[i],
			       ours ? "record" : "xentrace", st[k].written, st[k].written / secs,
			       st[k].lost, st[k].cpu_per_m, st[k].rss_kb >> 10);
			if (ratio > 0)
				printf(" %7.2fx", ratio);
			printf("%s\n", st[k].failed ? "  (exit status!)" : "");
			fflush(stdout);
			if (st[k].lost || st[k].failed)
				*(ours ? &tcx_lost : &xt_lost) = true;
			if (ratio > worst_ratio) {
				worst_ratio = ratio;
				worst_rate = rates[i];
			}
			if (ratio > 2 && !cpu_bad)
				cpu_bad = rates[i];
		}
		if (xt_ok) {
			if (st[0].written > 0 && st[1].written > 0 &&
			    (st[0].written > st[1].written * LOAD_SPREAD ||
			     st[1].written > st[0].written * LOAD_SPREAD)) {
				printf("%10s  hosts differ: Xen wrote %.0f records for xentrace and %.0f "
				       "for record: this step's ratio compares different loads\n", "",
				       st[0].written, st[1].written);
				if (!load_bad)
					load_bad = rates[i];
			}
			/* never more than xentrace; none where it lost none */
			if (st[1].failed || st[1].lost > st[0].lost || (!st[0].lost && st[1].lost)) {
				if (!loss_bad)
					loss_bad = rates[i];
			}
			nsteps++;
			if (!st[0].lost && !st[1].lost && !st[0].failed && !st[1].failed) {
				clean_rate = rates[i];
				clean_xt = st[0].cpu_per_m;
				clean_tcx = st[1].cpu_per_m;
				clean_out = st[1].out_per_rec;
			}
		}
		if (!st[1].lost && !st[1].failed && st[1].written)
			best_tcx = rates[i];
		if (xt_ok && !st[0].lost && !st[0].failed && st[0].written)
			best_xt = rates[i];
	}
	printf("\nhighest rate drained with nothing lost (exits/s per vCPU, median run):\n");
	printf("  record --xen  %u%s\n", best_tcx, tcx_lost ? "" : " (or more: the ladder ended)");
	if (xt_ok)
		printf("  xentrace      %u%s\n", best_xt, xt_lost ? "" : " (or more)");
	if (xt_ok && nsteps) {
		if (loss_bad)
			printf("losses: record lost more than xentrace, or lost where xentrace lost "
			       "nothing, from %u exits/s (of %d steps): target NOT met\n", loss_bad,
			       nsteps);
		else
			printf("losses: record lost no more than xentrace at any of %d steps, and "
			       "nothing where xentrace lost nothing: target met\n", nsteps);
		printf("CPU per record, record/xentrace: at most %.2fx (at %u exits/s); target at "
		       "most 2x at every step: %s", worst_ratio, worst_rate,
		       cpu_bad || load_bad ? "NOT met" : "met");
		if (cpu_bad)
			printf(" (first over at %u exits/s)", cpu_bad);
		if (load_bad)
			printf(" (not measured from %u exits/s: the hosts ran different loads)",
			       load_bad);
		printf("\n");
	} else if (ladder) {
		printf("CPU per record against xentrace: not measured, no xentrace (target NOT met)\n");
	}
	if (clean_rate && clean_xt > 0) {
		/* ten million records' worth, for a figure above the clock's grain */
		double floor = write_floor((uint64_t)(clean_out * 1e7)) / 10;

		printf("floor at %u exits/s: record writes %.1f bytes per record; write()ing that "
		       "alone costs %.3f CPU s per M records = %.2fx xentrace's whole CPU, record's "
		       "decoding and encoding %.3f s on top\n", clean_rate, clean_out, floor,
		       floor / clean_xt, clean_tcx - floor > 0 ? clean_tcx - floor : 0);
	}
	if (xt_ok && long_secs > 0)
		sessions(secs, long_secs, pages, reps < 2 ? reps : 2);
	if (soak > 0) {
		struct result r;

		printf("\nsoak: record --xen for %.0f s at %u exits/s per vCPU\n", soak, soak_rate);
		r = consume(true, soak_rate, soak, pages, true);
		printf("  %" PRIu64 " records, %" PRIu64 " lost\n", r.written, r.dropped);
	}
	return 0;
}
