// SPDX-License-Identifier: GPL-2.0
/*
 * xensim: run a simulated Xen host.
 *
 *   xensim run HOST.conf --dir DIR    serve until SIGINT/SIGTERM
 *   xensim check HOST.conf            parse and print the description
 *   xensim stop DIR                   stop the host serving DIR and wait
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "tcx-util.h"
#include "xsim.h"

static volatile int stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: xensim run HOST.conf --dir DIR\n"
			"       xensim check HOST.conf\n"
			"       xensim stop DIR\n");
	return 2;
}

static int check(const struct xsim_conf *c)
{
	static const char *const types[] = { "pv", "pvh", "hvm" };

	printf("pcpus %u cpu_khz %u vendor %s\n", c->pcpus, c->cpu_khz,
	       c->vendor == XSIM_AMD ? "amd" : "intel");
	for (unsigned int i = 0; i < c->ndoms; i++)
		printf("domain %u %s %s vcpus %u rate %u\n", c->dom[i].domid,
		       c->dom[i].name, types[c->dom[i].type], c->dom[i].vcpus,
		       c->dom[i].rate);
	return 0;
}

/* SIGTERM the daemon named in DIR/pid; wait until it has gone. */
static int stop_host(const char *dir)
{
	char path[4096];
	FILE *f;
	int pid = 0;

	snprintf(path, sizeof(path), "%s/pid", dir);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%d", &pid) != 1 || pid <= 0) {
		fprintf(stderr, "xensim: no host in %s\n", dir);
		if (f)
			fclose(f);
		return 1;
	}
	fclose(f);
	if (kill(pid, SIGTERM))
		return errno == ESRCH ? 0 : 1;
	for (int i = 0; i < 1000 && !kill(pid, 0); i++) {
		struct timespec d = { 0, 10 * 1000 * 1000 };

		nanosleep(&d, NULL);
	}
	return kill(pid, 0) ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct xsim_conf c;
	struct xsim_host *h;
	const char *dir = NULL;
	int ret;

	if (argc < 3)
		return usage();
	if (!strcmp(argv[1], "stop"))
		return stop_host(argv[2]);
	if (xsim_conf_load(argv[2], &c)) {
		fprintf(stderr, "xensim: %s\n", tcx_error());
		return 1;
	}
	if (!strcmp(argv[1], "check"))
		return check(&c);
	if (strcmp(argv[1], "run"))
		return usage();
	for (int i = 3; i < argc; i++)
		if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
	if (!dir)
		return usage();
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	{
		/* a connection (and an event pipe) per shim handle of every guest */
		struct rlimit rl;

		if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	h = xsim_host_start(&c, dir);
	if (!h) {
		perror("xensim: start");
		return 1;
	}
	ret = xsim_host_serve(h, &stop);
	if (ret)
		fprintf(stderr, "xensim: serve: %s\n", strerror(-ret));
	xsim_host_stop(h);
	return ret ? 1 : 0;
}
