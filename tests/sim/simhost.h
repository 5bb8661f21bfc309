/* SPDX-License-Identifier: GPL-2.0-only */
/* Test helpers: run a xensim host, run commands, read its ground truth. */
#ifndef TESTS_SIMHOST_H
#define TESTS_SIMHOST_H

#include <stdbool.h>
#include <stddef.h>
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

/**
 * run_shell() - run a shell command (printf-style @fmt) and capture its stdout.
 * @out: its stdout, NUL-terminated, cut at @len - 1 bytes (the rest is read and dropped).
 *
 * Return: its status as pclose() gives it, or -1 if it could not start.
 */
int run_shell(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/**
 * dump_options() - `trace-cmd dump --options -i @file` (stdout and stderr) into @out, as
 * run_shell() captures it.
 *
 * Return: its status as pclose() gives it, or -1.
 */
int dump_options(char *out, size_t len, const char *file);

/** json_num() - @key's number in the JSON text @from (first occurrence); -1 if absent or null. */
int64_t json_num(const char *from, const char *key);

/**
 * report_ts() - the timestamp in ns of a line of `trace-cmd report -t` for file @base.
 *
 * Return: false for the other files' lines and for headers.
 */
bool report_ts(const char *line, const char *base, uint64_t *ns);

/** simhost_put() - write @text into guest @domid's tracefs @file. Return: 0 or -1. */
int simhost_put(struct simhost *h, unsigned int domid, const char *file, const char *text);

/**
 * simhost_boot() - the guest's "boot script": x86-tsc, the sched events and tracing on.
 *
 * Our agent reads a simulated kernel as it is and writes nothing into it.
 * Return: 0 or -1.
 */
int simhost_boot(struct simhost *h, unsigned int domid);

/**
 * simhost_agent() - start `$TCX_BIN agent --xen` in guest @domid (XENSIM_DOMID), on its
 * simulated tracefs; stderr into $tmp/agent<domid>.log, stdout dropped.
 *
 * Return: its pid, or -1.
 */
pid_t simhost_agent(struct simhost *h, unsigned int domid);

struct tmsg_xs_agent;

/**
 * simhost_agent_ready() - poll xenstore every 10 ms, @tries times at most, until the agent of
 * domain @domid advertises "ready"; its advertisement into @a if not NULL. Only in the tests
 * that link the message layer (tmsg).
 *
 * Return: true if it did.
 */
bool simhost_agent_ready(unsigned int domid, int tries, struct tmsg_xs_agent *a);

#endif
