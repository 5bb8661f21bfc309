/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tests' one helper library: processes, files, ports, the xensim host
 * and its ground truth, and what the stock trace-cmd prints. Nothing here
 * asserts: each helper returns a status for the test to check.
 */
#ifndef TLIB_H
#define TLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- processes (proc.c) ---- */

/**
 * struct tlib_spawn_opts - how tlib_spawn() starts a command
 * @env: NAME=VALUE strings set in the child, NULL-terminated; or NULL
 * @out: file for stdout (created, truncated), or NULL: inherited
 * @err: file for stderr, or NULL: inherited; the same path as @out: one file
 * @cwd: directory to run in, or NULL
 */
struct tlib_spawn_opts {
	char *const *env;
	const char *out;
	const char *err;
	const char *cwd;
};

/**
 * tlib_spawn() - fork and exec @argv (argv[0] a path or a name in $PATH) in the background.
 * @argv: the command.
 * @o: environment, redirections, directory; NULL for none.
 *
 * The child exits 126 if a redirection fails, 127 if the exec does.
 * Return: its pid, or -1.
 */
pid_t tlib_spawn(char *const argv[], const struct tlib_spawn_opts *o);

/**
 * tlib_wait() - wait for child @pid.
 *
 * Return: its exit status, 128 + the signal that killed it, or -1 (no such child).
 */
int tlib_wait(pid_t pid);

/**
 * tlib_wait_bounded() - wait for child @pid, with a safety kill.
 * @limit_s: SIGKILL it if it still runs this many seconds after the call (a net for a test
 *	     that would otherwise hang, never a measure).
 * @maxrss_kb: its peak resident set in KiB since its exec (VmHWM, read every 10 ms while it
 *	       runs: the rusage of a forked child counts the parent's memory before the exec),
 *	       if not NULL.
 * @killed: set to whether the safety kill fired, if not NULL.
 *
 * Return: as tlib_wait().
 */
int tlib_wait_bounded(pid_t pid, int limit_s, long *maxrss_kb, bool *killed);

/**
 * tlib_kill() - send @sig to @pid and wait for it; nothing if @pid <= 0.
 *
 * Return: as tlib_wait(), -1 for no process.
 */
int tlib_kill(pid_t pid, int sig);

/**
 * tlib_sh() - run a shell command (printf-style @fmt), as system() does.
 *
 * Return: its status as system() gives it.
 */
int tlib_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/**
 * tlib_capture() - run a shell command (printf-style @fmt) and capture its stdout.
 * @out: its stdout, NUL-terminated, cut at @len - 1 bytes (the rest is read and dropped).
 * @len: size of @out.
 *
 * Return: its status as pclose() gives it, or -1 if it could not start.
 */
int tlib_capture(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/**
 * tlib_tcx() - the trace-cmd-xen binary under test: $TCX_BIN, or "trace-cmd-xen".
 */
const char *tlib_tcx(void);

/* ---- files (file.c) ---- */

/**
 * tlib_path() - "@dir/@name" in one of 32 rotating static buffers.
 *
 * Aborts on an empty @dir, which would name a file in /.
 */
char *tlib_path(const char *dir, const char *name);

/**
 * tlib_slurp() - the whole of @file, NUL-terminated, in a buffer to free().
 * @len: its length in bytes if not NULL.
 *
 * Return: the buffer, or NULL.
 */
char *tlib_slurp(const char *file, size_t *len);

/**
 * tlib_show() - print @file's lines as TAP comments.
 *
 * Return: @file, for a message that names it.
 */
const char *tlib_show(const char *file);

/**
 * tlib_dio_offered() - whether files in @dir take O_DIRECT writes of 4 KiB
 * pages (statx's alignments), as tdat's direct writes ask
 */
bool tlib_dio_offered(const char *dir);

/**
 * tlib_file_has() - whether @file holds @needle; if not, say so and show the file.
 */
bool tlib_file_has(const char *file, const char *needle);

/**
 * tlib_count_lines() - the lines of @file that contain @needle.
 *
 * Return: their number, or -1 if @file cannot be read.
 */
int tlib_count_lines(const char *file, const char *needle);

/**
 * tlib_write_file() - create @file holding @text.
 *
 * Return: 0 or -1.
 */
int tlib_write_file(const char *file, const char *text);

/**
 * tlib_dir_entries() - the entries of @dir ("." and ".." aside), each named as a TAP comment.
 *
 * Return: their number, or -1 if @dir cannot be read.
 */
int tlib_dir_entries(const char *dir);

/*
 * tlib_tick_format - the format of a small test event, "tcx:tick" (ID 900):
 * the common fields, then an unsigned int n at offset 8.
 */
extern const char tlib_tick_format[];

/**
 * tlib_rmtree() - remove @dir and everything in it.
 *
 * Return: 0 or -1.
 */
int tlib_rmtree(const char *dir);

/* ---- TCP on the loopback (net.c) ---- */

/**
 * tlib_free_port() - a TCP port free on 127.0.0.1 (bound as port 0, read back, released).
 *
 * Return: the port, or -1.
 */
int tlib_free_port(void);

/**
 * tlib_connect_wait() - connect to 127.0.0.1:@port until it accepts, for @ms at most.
 *
 * Return: the connected socket, or -1.
 */
int tlib_connect_wait(int port, int ms);

/* ---- the stock trace-cmd's output (tracecmd.c) ---- */

/**
 * tlib_dump_options() - `trace-cmd dump --options -i @file` (stdout and stderr) into @out,
 * as tlib_capture() captures it.
 *
 * Return: its status as pclose() gives it, or -1.
 */
int tlib_dump_options(char *out, size_t len, const char *file);

/**
 * struct tlib_shift - one sample line of a TIME_SHIFT option in `trace-cmd dump --options`
 * @offset: the offset
 * @scaling: the multiplier
 * @frac: the fraction bits
 * @ts: the guest time of the sample
 * @fields: how many of the four the line held
 */
struct tlib_shift {
	int64_t offset;
	uint64_t scaling, frac, ts;
	int fields;
};

/**
 * tlib_time_shift() - the TIME_SHIFT samples of @file, through `trace-cmd dump --options`.
 * @file: a trace.dat.
 * @peer: the host trace id the option must name, or 0 for any.
 * @s: the samples, the first @max of them.
 * @max: size of @s.
 * @text: the dump as printed, for the test's messages.
 * @len: size of @text.
 *
 * Return: the number of samples (stored or not), -1 if the dump failed, -2 if it shows no
 * TIME_SHIFT option (naming @peer).
 */
int tlib_time_shift(const char *file, uint64_t peer, struct tlib_shift *s, size_t max,
		    char *text, size_t len);

/**
 * struct tlib_markers - the numbered markers ("tcxm N") of a report
 * @first: the smallest N, or -1 for none
 * @last: the largest N, or -1 for none
 * @n: how many lines held one
 */
struct tlib_markers {
	long first, last, n;
};

/**
 * tlib_markers() - the "tcxm N" markers in @report, a `trace-cmd report` saved to a file.
 *
 * Return: 0, or -1 if @report cannot be read.
 */
int tlib_markers(const char *report, struct tlib_markers *m);

/**
 * tlib_cpu_kb_max() - the largest CPU's data in @file, KiB, from `trace-cmd dump --flyrecord`.
 *
 * Return: the size, or -1 if the dump failed.
 */
long tlib_cpu_kb_max(const char *file);

/**
 * tlib_report_ts() - the timestamp in ns of a line of `trace-cmd report -t` for file @base.
 *
 * Return: false for the other files' lines and for headers.
 */
bool tlib_report_ts(const char *line, const char *base, uint64_t *ns);

/**
 * tlib_json_num() - @key's number in the JSON text @from (first occurrence).
 *
 * Return: the number, -1 if absent or null.
 */
int64_t tlib_json_num(const char *from, const char *key);

/**
 * tlib_xenalyze_reread() - whether xenalyze's stderr, @err, shows it reading
 * a pCPU's last window twice.
 *
 * When a pCPU's records all come before the other pCPUs' last window in the
 * file, xenalyze finishes that pCPU at the end of the file, then finds its
 * last window again while scanning for new pCPUs and replays it: its
 * figures then count that window twice, and it often stops with a FATAL
 * message and exit status 1. The capture is sound (the same records read
 * once when that window comes first); the defect is xenalyze 4.17's.
 *
 * Return: the pCPU, or -1 if @err does not show that.
 */
int tlib_xenalyze_reread(const char *err);

/**
 * tlib_xenalyze() - `xenalyze --cpu-hz=@hz -s @bin`, its summary into @sum
 * and its stderr into "@sum.err".
 * @may_retry: whether tlib_xenalyze_reread()'s defect may be left to a new
 *	capture
 *
 * Return: 0 when xenalyze read the file once through; 1 when @may_retry and
 * it read a pCPU's last window twice (failing or not), said as
 * "# retried: ..."; -1 when it failed or re-read otherwise, its stderr
 * shown.
 */
int tlib_xenalyze(const char *bin, uint64_t hz, const char *sum, bool may_retry);

/* ---- the xensim host (sim.c) ---- */

/**
 * struct tlib_sim - a running `xensim run`
 * @tmp: scratch directory, removed by tlib_sim_cleanup()
 * @dir: the host directory ($XENSIM_HOST)
 * @pid: the simulator
 */
struct tlib_sim {
	char tmp[256];
	char dir[300];
	pid_t pid;
};

/**
 * tlib_conf_path() - $XENSIM_CONFDIR/@name in a static buffer.
 */
const char *tlib_conf_path(const char *name);

/**
 * tlib_sim_start() - start `xensim run @conf` ($XENSIM_BIN) in a scratch directory.
 *
 * Return: 0 once the host is ready, or -1.
 */
int tlib_sim_start(struct tlib_sim *h, const char *conf);

/**
 * tlib_sim_stop() - SIGTERM the simulator and wait.
 *
 * Return: its exit status (0: clean), or -1.
 */
int tlib_sim_stop(struct tlib_sim *h);

/**
 * tlib_sim_cleanup() - stop the simulator if it runs, remove the scratch directory
 * (kept if $XENSIM_KEEP is set).
 */
void tlib_sim_cleanup(struct tlib_sim *h);

/**
 * tlib_sim_spawn() - tlib_spawn() @argv in the simulator's environment.
 * @h: host: XENSIM_HOST and LD_LIBRARY_PATH=$XENSIM_LIBDIR; NULL for neither.
 * @argv: command.
 * @domid: the simulated domain it runs in (XENSIM_DOMID, its TSC), or -1: dom0.
 * @out: file for stdout, or NULL: inherited.
 * @err: file for stderr, or NULL: inherited.
 *
 * Return: its pid, or -1.
 */
pid_t tlib_sim_spawn(const struct tlib_sim *h, char *const argv[], int domid,
		     const char *out, const char *err);

/**
 * tlib_sim_run() - tlib_sim_spawn() in dom0 and tlib_wait().
 *
 * Return: as tlib_wait().
 */
int tlib_sim_run(const struct tlib_sim *h, char *const argv[], const char *out,
		 const char *err);

struct tlib_truth;

/**
 * tlib_sim_xentrace() - a host on @conf traced by the stock xentrace
 * (`-S @pages -T @secs`) into @h->tmp/trace.bin, its truth into @t, and
 * xenalyze's summary of the capture in @h->tmp/xenalyze.sum (tlib_xenalyze()).
 *
 * A capture xenalyze reads a window of twice (tlib_xenalyze_reread()) is
 * taken again, at most twice, each time said as "# retried: ...". The host
 * is stopped; @t is the caller's to free.
 *
 * Return: 0, or -1 (what failed said).
 */
int tlib_sim_xentrace(struct tlib_sim *h, const char *conf, const char *pages,
		      const char *secs, struct tlib_truth *t);

/**
 * tlib_sim_put() - write @text into guest @domid's tracefs @file.
 *
 * Return: 0 or -1.
 */
int tlib_sim_put(const struct tlib_sim *h, unsigned int domid, const char *file,
		 const char *text);

/**
 * tlib_sim_boot() - the guest's "boot script": x86-tsc, @events on, tracing on.
 * @events: the enable file under events/ ("sched" or "sched/sched_switch").
 *
 * Our agent reads a simulated kernel as it is and writes nothing into it.
 * Return: 0 or -1.
 */
int tlib_sim_boot(const struct tlib_sim *h, unsigned int domid, const char *events);

/**
 * tlib_sim_agent() - start `$TCX_BIN agent --xen` in guest @domid on its simulated
 * tracefs; stderr into $tmp/agent<domid>.log, stdout dropped.
 *
 * Return: its pid, or -1.
 */
pid_t tlib_sim_agent(const struct tlib_sim *h, unsigned int domid);

struct tmsg_xs_agent;

/**
 * tlib_agent_ready() - poll xenstore until the agent of @domid advertises "ready".
 * @domid: its domain.
 * @a: its advertisement, if not NULL.
 *
 * Polls every 10 ms for 5 s. Only for tests that link the message layer (tmsg).
 * Return: true if it did.
 */
bool tlib_agent_ready(unsigned int domid, struct tmsg_xs_agent *a);

/**
 * tlib_sim_guest() - a guest ready for a host: tlib_sim_boot() (unless @events is NULL),
 * tlib_sim_agent(), tlib_agent_ready().
 * @h: host.
 * @domid: the guest.
 * @events: as tlib_sim_boot(), or NULL: leave the guest kernel as it is.
 * @a: the agent's advertisement, if not NULL.
 *
 * An agent that does not get ready is killed. Tests that link tmsg only.
 * Return: the agent's pid, or -1.
 */
pid_t tlib_sim_guest(const struct tlib_sim *h, unsigned int domid, const char *events,
		     struct tmsg_xs_agent *a);

/* ---- the simulator's ground truth, $XENSIM_HOST/truth (truth.c) ---- */

struct tlib_truth_run {
	uint32_t dom, vcpu, pcpu;
	uint64_t start, end;	/* end 0: still running when the host stopped */
	bool ws, we;		/* opening / closing runstate record written */
};

struct tlib_truth_cont {
	uint32_t dom, vcpu, pcpu;
	uint64_t tsc;
	bool w;
};

struct tlib_truth_stats {
	uint64_t written, dropped, lost_reported, lost_cleared, lost_pending;
	uint64_t virqs;		/* VIRQ_TBUF raised: the buffer crossed half full */
	uint64_t first_tsc, last_tsc;
};

struct tlib_truth {
	unsigned int pcpus;
	uint32_t cpu_khz;
	struct tlib_truth_stats st[64];
	size_t nrun, ncont;
	struct tlib_truth_run *run;
	struct tlib_truth_cont *cont;
};

/**
 * tlib_truth_load() - parse @dir/truth: host, per-pCPU stats, runs.
 *
 * Return: 0 or -1.
 */
int tlib_truth_load(const char *dir, struct tlib_truth *t);

/**
 * tlib_truth_free() - release what tlib_truth_load() allocated.
 */
void tlib_truth_free(struct tlib_truth *t);

/**
 * tlib_truth_count() - the lines of @dir/truth that start with @prefix.
 *
 * Return: their number, or -1 if there is no truth.
 */
int tlib_truth_count(const char *dir, const char *prefix);

#define TLIB_MAXVCPU	16

/**
 * struct tlib_gstats - a guest kernel's production, from the truth's gstats lines
 * @vcpus: 1 + the highest vCPU with a line
 * @events: events per vCPU
 * @pages: pages per vCPU
 * @dropped: pages dropped, all vCPUs
 */
struct tlib_gstats {
	unsigned int vcpus;
	uint64_t events[TLIB_MAXVCPU], pages[TLIB_MAXVCPU];
	uint64_t dropped;
};

/**
 * tlib_truth_gstats() - the gstats lines of domain @dom in @dir/truth.
 *
 * Return: 0, or -1 (no truth, a line that does not parse, a vCPU beyond TLIB_MAXVCPU).
 */
int tlib_truth_gstats(const char *dir, unsigned int dom, struct tlib_gstats *g);

#endif /* TLIB_H */
