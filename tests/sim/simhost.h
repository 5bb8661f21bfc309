/* SPDX-License-Identifier: GPL-2.0-only */
/* Test helpers: run a xensim host, run commands, read its ground truth. */
#ifndef TESTS_SIMHOST_H
#define TESTS_SIMHOST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct simhost {
	char tmp[256];		/* scratch directory, removed by stop */
	char dir[300];		/* the host directory ($XENSIM_HOST) */
	pid_t pid;
};

struct truth_run {
	uint32_t dom, vcpu, pcpu;
	uint64_t start, end;	/* end 0: still running when the host stopped */
	bool ws, we;		/* opening / closing runstate record written */
};

struct truth_cont {
	uint32_t dom, vcpu, pcpu;
	uint64_t tsc;
	bool w;
};

struct truth_stats {
	uint64_t written, dropped, lost_reported, lost_cleared, lost_pending;
	uint64_t first_tsc, last_tsc;
};

struct truth {
	unsigned int pcpus;
	uint32_t cpu_khz;
	struct truth_stats st[64];
	size_t nrun, ncont;
	struct truth_run *run;
	struct truth_cont *cont;
};

/** simhost_start() - start `xensim run CONF` ($XENSIM_BIN) in a scratch dir. */
int simhost_start(struct simhost *h, const char *conf);

/** simhost_stop() - SIGTERM, wait; return its exit status (0 = clean). */
int simhost_stop(struct simhost *h);

/** simhost_cleanup() - remove the scratch directory. */
void simhost_cleanup(struct simhost *h);

/**
 * run_cmd() - run @argv with the simulator's environment.
 * @h: host (XENSIM_HOST, LD_LIBRARY_PATH=$XENSIM_LIBDIR), or NULL for none.
 * @argv: command.
 * @out: file for stdout, or NULL.
 * @err: file for stderr, or NULL.
 *
 * Return: exit status, or -1 if it did not exit normally.
 */
int run_cmd(struct simhost *h, char *const argv[], const char *out,
	    const char *err);

/** truth_load() - parse $dir/truth. Return: 0 or -1. */
int truth_load(const char *dir, struct truth *t);

/** truth_free() - release what truth_load() allocated. */
void truth_free(struct truth *t);

/** conf_path() - $XENSIM_CONFDIR/@name in a static buffer. */
const char *conf_path(const char *name);

#endif
