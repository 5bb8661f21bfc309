// SPDX-License-Identifier: GPL-2.0
/* The xensim host: start, stop, commands in its environment, guest kernels. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tlib.h"

const char *tlib_conf_path(const char *name)
{
	static char buf[512];
	const char *d = getenv("XENSIM_CONFDIR");

	snprintf(buf, sizeof(buf), "%s/%s", d ? d : ".", name);
	return buf;
}

int tlib_sim_start(struct tlib_sim *h, const char *conf)
{
	const char *bin = getenv("XENSIM_BIN");
	char ready[400];

	memset(h, 0, sizeof(*h));
	snprintf(h->tmp, sizeof(h->tmp), "/tmp/xsim-test-XXXXXX");
	if (!bin || !mkdtemp(h->tmp))
		return -1;
	snprintf(h->dir, sizeof(h->dir), "%s/host", h->tmp);
	snprintf(ready, sizeof(ready), "%s/ready", h->dir);
	h->pid = fork();
	if (h->pid < 0)
		return -1;
	if (!h->pid) {
		/* the host shares 2 cores with everyone: be nice */
		setpriority(PRIO_PROCESS, 0, 10);
		execl(bin, bin, "run", conf, "--dir", h->dir, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		struct timespec d = { 0, 10 * 1000 * 1000 };
		int st;

		if (!access(ready, F_OK))
			return 0;
		if (waitpid(h->pid, &st, WNOHANG) == h->pid) {
			h->pid = 0;
			return -1;
		}
		nanosleep(&d, NULL);
	}
	return -1;
}

int tlib_sim_stop(struct tlib_sim *h)
{
	int st;

	if (h->pid <= 0)
		return -1;
	kill(h->pid, SIGTERM);
	if (waitpid(h->pid, &st, 0) != h->pid)
		return -1;
	h->pid = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void tlib_sim_cleanup(struct tlib_sim *h)
{
	if (h->pid > 0)
		tlib_sim_stop(h);
	if (h->tmp[0] && !getenv("XENSIM_KEEP"))
		tlib_rmtree(h->tmp);
	memset(h, 0, sizeof(*h));
}

pid_t tlib_sim_spawn(const struct tlib_sim *h, char *const argv[], int domid,
		     const char *out, const char *err)
{
	char host[320], lib[512], dom[32];
	char *env[4] = { NULL };
	struct tlib_spawn_opts o = { .env = env, .out = out, .err = err };
	const char *libdir = getenv("XENSIM_LIBDIR");
	int n = 0;

	if (h) {
		snprintf(host, sizeof(host), "XENSIM_HOST=%s", h->dir);
		env[n++] = host;
		if (libdir) {
			snprintf(lib, sizeof(lib), "LD_LIBRARY_PATH=%s", libdir);
			env[n++] = lib;
		}
	}
	if (domid >= 0) {
		snprintf(dom, sizeof(dom), "XENSIM_DOMID=%d", domid);
		env[n++] = dom;
	}
	return tlib_spawn(argv, &o);
}

int tlib_sim_run(const struct tlib_sim *h, char *const argv[], const char *out,
		 const char *err)
{
	return tlib_wait(tlib_sim_spawn(h, argv, -1, out, err));
}

int tlib_sim_xentrace(struct tlib_sim *h, const char *conf, const char *pages,
		      const char *secs, struct tlib_truth *t)
{
	for (int tries = 1;; tries++) {
		char bin[300], err[300], sum[300];
		char *argv[] = { "/usr/lib/xen-4.17/bin/xentrace", "-S", (char *)pages, "-T",
				 (char *)secs, bin, NULL };
		int ret;

		if (tlib_sim_start(h, conf))
			return -1;
		snprintf(bin, sizeof(bin), "%s/trace.bin", h->tmp);
		snprintf(err, sizeof(err), "%s/xentrace.err", h->tmp);
		snprintf(sum, sizeof(sum), "%s/xenalyze.sum", h->tmp);
		if (tlib_sim_run(h, argv, NULL, err) || tlib_sim_stop(h) ||
		    tlib_truth_load(h->dir, t)) {
			printf("# xentrace on %s failed; its stderr, %s:\n", conf, err);
			tlib_show(err);
			return -1;
		}
		ret = tlib_xenalyze(bin, (uint64_t)t->cpu_khz * 1000, sum, tries < 3);
		if (ret <= 0)
			return ret;
		tlib_truth_free(t);
		tlib_sim_cleanup(h);
	}
}

int tlib_sim_put(const struct tlib_sim *h, unsigned int domid, const char *file,
		 const char *text)
{
	char path[460];

	snprintf(path, sizeof(path), "%s/dom%u/tracing/%s", h->dir, domid, file);
	return tlib_write_file(path, text);
}

int tlib_sim_boot(const struct tlib_sim *h, unsigned int domid, const char *events)
{
	char enable[128];

	/*
	 * xensim stamps with the guest TSC but shows "[local]", as a fresh
	 * kernel; its guest directories wait for these tracefs writes
	 */
	snprintf(enable, sizeof(enable), "events/%s/enable", events);
	if (tlib_sim_put(h, domid, "trace_clock", "x86-tsc\n") ||
	    tlib_sim_put(h, domid, enable, "1\n") ||
	    tlib_sim_put(h, domid, "tracing_on", "1\n"))
		return -1;
	return 0;
}

pid_t tlib_sim_agent(const struct tlib_sim *h, unsigned int domid)
{
	char tdir[400], log[460];
	char *argv[] = { (char *)tlib_tcx(), "agent", "--xen", "--tracing-dir", tdir, NULL };

	snprintf(tdir, sizeof(tdir), "%s/dom%u/tracing", h->dir, domid);
	snprintf(log, sizeof(log), "%s/agent%u.log", h->tmp, domid);
	return tlib_sim_spawn(h, argv, (int)domid, "/dev/null", log);
}
