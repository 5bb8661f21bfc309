// SPDX-License-Identifier: GPL-2.0
/*
 * scale-bench: `record --xen -A` of many guests at once on one xensim host
 * of 32 pCPUs with 16 HVM guests of 4 vCPUs each, all with their agents
 * (`agent --xen`) running: the recording of the first 1, 4 and 16 of them,
 * each a fresh session against the same host in the same run. Per count:
 * the session's setup (every guest's open and its first time sync sample:
 * the latest of the summary's guests_setup_s and the guests' tsync
 * first_sample_s), the recorder's max RSS and CPU time (user + system) per
 * guest, and what was lost (hypervisor and guests). Target: 16 guests set
 * up in less than 4 times one guest's setup, both measured here; prints
 * the ratio and "target met" or "NOT met".
 *
 *   scale-bench [-d SEC] [-r REPEATS]	(default 3 s, best of 2 per count)
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tlib.h"

#define NGUEST	16
#define NVCPU	4
#define PCPUS	32

struct result {
	double	setup_s, cpu_s;
	long	rss_kb;
	int64_t	lost_hv, lost_guests;
	int	synced;		/* guests with a time sync sample */
	int	status;
};

static struct tlib_sim sim;
static pid_t agent[NGUEST];

static int write_conf(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "[host]\npcpus = %d\nvendor = auto\nslice_us = 10000\ntick_us = 500\n"
		   "seed = 3\n\n[domain Domain-0]\ndomid = 0\ntype = pv\nvcpus = 1\n"
		   "profile = idle\nrate = 1000\nrun_us = 50\nblock_us = 5000\n", PCPUS);
	/* light guests: the setup is measured, not the drain */
	for (int i = 1; i <= NGUEST; i++)
		fprintf(f, "\n[domain g%d]\ndomid = %d\ntype = hvm\nvcpus = %d\nprofile = mixed\n"
			   "rate = 100\nrun_us = 200\nblock_us = 20000\ntsc_offset = %d000000000\n",
			i, i, NVCPU, -i);
	return fclose(f) ? -1 : 0;
}

/* The number after @key at or after @from, as a double (-1: absent or null). */
static double json_double(const char *from, const char *key, const char **after)
{
	const char *p = from ? strstr(from, key) : NULL;
	char *end;
	double v;

	if (after)
		*after = NULL;
	if (!p)
		return -1;
	p += strlen(key);
	while (*p == ' ' || *p == ':')
		p++;
	v = strtod(p, &end);
	if (after)
		*after = end;
	return end == p ? -1 : v;
}

static int run_once(int n, const char *dur, struct result *r)
{
	static char json[1 << 18];
	char out[400], js[400], log[400], *argv[20 + 4 * NGUEST];
	char names[NGUEST][16];
	struct rusage ru;
	const char *p;
	int a = 0, st;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	snprintf(out, sizeof(out), "%s/trace-%d.dat", sim.tmp, n);
	snprintf(js, sizeof(js), "%s/summary-%d.json", sim.tmp, n);
	snprintf(log, sizeof(log), "%s/record-%d.log", sim.tmp, n);
	argv[a++] = (char *)tlib_tcx();
	argv[a++] = "record";
	argv[a++] = "--xen";
	argv[a++] = "--no-dom0";
	for (int i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "g%d", i + 1);
		argv[a++] = "-A";
		argv[a++] = names[i];
		argv[a++] = "-e";
		argv[a++] = "sched";
	}
	argv[a++] = "--duration";
	argv[a++] = (char *)dur;
	argv[a++] = "-o";
	argv[a++] = out;
	argv[a++] = "--summary-json";
	argv[a++] = js;
	argv[a] = NULL;
	pid = tlib_sim_spawn(&sim, argv, -1, "/dev/null", log);
	if (pid <= 0 || wait4(pid, &st, 0, &ru) != pid)
		return -1;
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	r->cpu_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
		   ru.ru_stime.tv_usec / 1e6;
	r->rss_kb = ru.ru_maxrss;
	if (r->status || tlib_capture(json, sizeof(json), "cat '%s'", js)) {
		fprintf(stderr, "scale-bench: record of %d guests failed (%d), see %s\n", n,
			r->status, log);
		return -1;
	}
	r->setup_s = json_double(json, "\"guests_setup_s\"", NULL);
	r->lost_hv = tlib_json_num(strstr(json, "\"hypervisor\""), "\"lost\"");
	p = strstr(json, "\"guests\"");
	for (int i = 0; i < n && p; i++) {
		const char *g = strstr(p, "\"name\"");
		double lost = json_double(g, "\"lost\"", NULL);
		double first = json_double(g, "\"first_sample_s\"", &p);

		if (lost > 0)
			r->lost_guests += (int64_t)lost;
		if (first >= 0) {
			r->synced++;
			if (first > r->setup_s)
				r->setup_s = first;
		}
	}
	unlink(out);
	for (int i = 0; i < n; i++) {
		char gf[460];

		snprintf(gf, sizeof(gf), "%s/trace-%d-g%d.dat", sim.tmp, n, i + 1);
		unlink(gf);
	}
	return r->setup_s > 0 ? 0 : -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: scale-bench [-d SEC] [-r REPEATS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const int counts[] = { 1, 4, NGUEST };
	struct result best[3];
	const char *dur = "3";
	char conf[400];
	int repeats = 2, opt, rc = 0;
	double ratio;

	/* xenstore lookups (is an agent ready) go to the simulator's libraries */
	if (!getenv("SCALE_BENCH_REEXEC")) {
		setenv("SCALE_BENCH_REEXEC", "1", 1);
		setenv("LD_LIBRARY_PATH", XSIM_LIBDIR, 1);
		execv("/proc/self/exe", argv);
		perror("scale-bench: re-exec");
		return 1;
	}
	while ((opt = getopt(argc, argv, "d:r:")) != -1) {
		if (opt == 'd')
			dur = optarg;
		else if (opt == 'r' && atoi(optarg) > 0)
			repeats = atoi(optarg);
		else
			usage();
	}
	setenv("XENSIM_BIN", XENSIM_BIN, 0);
	setenv("XENSIM_LIBDIR", XSIM_LIBDIR, 0);
	setenv("TCX_BIN", TCX_BIN, 0);
	snprintf(conf, sizeof(conf), "/tmp/scale-bench-%d.conf", (int)getpid());
	if (write_conf(conf) || tlib_sim_start(&sim, conf)) {
		fprintf(stderr, "scale-bench: cannot start xensim (%s)\n", conf);
		unlink(conf);
		return 1;
	}
	unlink(conf);
	setenv("XENSIM_HOST", sim.dir, 1);
	for (int i = 0; i < NGUEST; i++) {
		agent[i] = tlib_sim_guest(&sim, (unsigned int)i + 1, "sched", NULL);
		if (agent[i] <= 0) {
			fprintf(stderr, "scale-bench: the agent of g%d did not start\n", i + 1);
			rc = 1;
			goto out;
		}
	}
	if (!BENCH_RELEASE)
		printf("scale-bench: not a release build: the figures are not representative\n");
	printf("scale-bench: xensim, %d pCPUs, %d HVM guests x %d vCPUs, record -A for %s s, "
	       "best of %d\n", PCPUS, NGUEST, NVCPU, dur, repeats);
	printf("  %6s  %9s  %9s  %12s  %12s  %8s  %9s  %7s\n", "guests", "setup s", "per guest",
	       "RSS MiB", "RSS/guest", "CPU s", "CPU/guest", "lost");
	for (int c = 0; c < 3; c++) {
		int n = counts[c];

		best[c].setup_s = -1;
		for (int k = 0; k < repeats; k++) {
			struct result r;

			if (run_once(n, dur, &r)) {
				rc = 1;
				goto out;
			}
			if (r.synced != n) {
				fprintf(stderr, "scale-bench: %d of %d guests got a time sync sample\n",
					r.synced, n);
				rc = 1;
			}
			if (best[c].setup_s < 0 || r.setup_s < best[c].setup_s)
				best[c] = r;
		}
		printf("  %6d  %9.3f  %9.3f  %12.1f  %12.1f  %8.2f  %9.3f  %7" PRId64 "\n", n,
		       best[c].setup_s, best[c].setup_s / n, best[c].rss_kb / 1024.0,
		       best[c].rss_kb / 1024.0 / n, best[c].cpu_s, best[c].cpu_s / n,
		       best[c].lost_hv + best[c].lost_guests);
	}
	ratio = best[2].setup_s / best[0].setup_s;
	printf("  setup of %d guests / setup of 1 guest: %.2fx (target under 4x): %s\n", NGUEST,
	       ratio, ratio < 4 ? "target met" : "NOT met");
out:
	for (int i = 0; i < NGUEST; i++)
		if (agent[i] > 0)
			tlib_kill(agent[i], SIGTERM);
	tlib_sim_cleanup(&sim);
	return rc;
}
