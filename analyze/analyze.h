/* SPDX-License-Identifier: GPL-2.0 */
/*
 * analyze: xenalyze-style summaries of a hypervisor trace.dat (one CPU per
 * pCPU, one task per vCPU, Xen's runstate, HVM exit and PV hypercall
 * records as events). Every time is kept in TSC cycles, as Xen recorded
 * them, so the figures agree with `xenalyze --summary` to the cycle; they
 * are converted to ns only when printed.
 */
#ifndef ANALYZE_H
#define ANALYZE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Xen's runstates, in the order of the runstate_change fields. */
enum ana_runstate {
	ANA_RUNNING,
	ANA_RUNNABLE,
	ANA_BLOCKED,
	ANA_OFFLINE,
	ANA_NSTATES
};

#define ANA_IDLE_DOM	32767	/* Xen's idle domain: d32767vP is pCPU P's idle vCPU */
#define ANA_NHCALL	64	/* hypercall ops counted one by one; the rest together */
#define ANA_HIST	3776	/* log-linear latency buckets, 1/64 relative width */

/**
 * struct ana_opts - what ana_run() reads
 * @from_ns:	start of the window, ns after the trace's first record
 * @to_ns:	end of the window (exclusive), ns after the first record; 0: the end
 * @cpu_hz:	the TSC frequency; 0: derived from the file's own TSC-to-ns
 *		conversion (two records read back through libtracecmd)
 * @threads:	unused for now; 0
 * @from_marker, @to_marker: the joined view only (ana_join_run()): the
 *		window runs from the first ftrace print record holding
 *		@from_marker to the first after it holding @to_marker, in any
 *		of the files; NULL: --from/--to
 */
struct ana_opts {
	uint64_t from_ns, to_ns;
	uint64_t cpu_hz;
	int threads;
	const char *from_marker, *to_marker;
};

/*
 * One exit reason of one vCPU: @count exits seen, @entered of them handled
 * (ended by the next entry, or by the vCPU's preemption or next run, as
 * xenalyze ends them), @cycles and @max from exit to that end.
 */
struct ana_exit {
	uint32_t isa, reason;
	uint64_t count, entered, cycles, max;
};

/**
 * struct ana_vcpu - what one vCPU did in the window
 * @state_cycles: cycles in each runstate; [ANA_RUNNING] is the sum of the runs
 * @state_count: periods in each runstate; [ANA_RUNNING] is @runs
 * @runs:	running periods (cut by every runstate record, as xenalyze cuts them)
 * @run_max:	the longest of them
 * @wakes:	blocked/offline -> runnable -> running sequences completed
 * @wake_max:	the longest wake-to-run latency
 * @wake_hist:	latencies, log-linear buckets (ana_hist_value())
 * @migrations:	runs that started on another pCPU than the previous one
 * @exits:	HVM exits by reason (@nexits of them)
 * @hcalls:	PV hypercalls by op; [ANA_NHCALL] counts ops >= ANA_NHCALL
 */
struct ana_vcpu {
	uint32_t dom, vcpu;
	uint64_t state_cycles[ANA_NSTATES];
	uint64_t state_count[ANA_NSTATES];
	uint64_t runs, run_max;
	uint64_t wakes, wake_max;
	uint64_t *wake_hist;
	uint64_t migrations;
	struct ana_exit *exits;
	unsigned int nexits;
	uint64_t hcalls[ANA_NHCALL + 1];
};

/* One domain's cycles on one pCPU. */
struct ana_dom_time {
	uint32_t dom;
	uint64_t cycles;
};

/**
 * struct ana_pcpu - one pCPU
 * @busy, @idle: cycles running guest/dom0 vCPUs, and its idle vCPU
 * @first_tsc, @last_tsc: its first and last record in the file
 * @lost: records Xen lost on it (sum of its LOST_RECORDS), in @lost_recs records
 * @doms: domains that ran there (@ndoms), idle aside
 */
struct ana_pcpu {
	uint64_t busy, idle;
	uint64_t first_tsc, last_tsc;
	uint64_t records;
	uint64_t lost, lost_recs;
	struct ana_dom_time *doms;
	unsigned int ndoms;
	bool present;
};

/**
 * struct ana_result - everything ana_run() found
 * @win_start, @win_end: the window in TSC cycles
 * @first_tsc, @last_tsc: the file's first and last record
 * @lossy:	Xen lost records before the window's end: counts are lower bounds
 * @vcpus:	sorted by domain then vCPU (@nvcpus)
 */
struct ana_result {
	char *file;
	uint64_t cpu_hz;
	bool hz_from_file;
	uint64_t first_tsc, last_tsc;
	uint64_t win_start, win_end;
	uint64_t records;
	uint64_t lost;
	bool lossy;
	unsigned int npcpus;
	struct ana_pcpu *pcpus;
	unsigned int nvcpus;
	struct ana_vcpu *vcpus;
};

/**
 * ana_run - read @path (a trace.dat of the hypervisor) and summarize it
 *
 * Returns the result to ana_free(), or NULL with the reason in tcx_error().
 */
struct ana_result *ana_run(const char *path, const struct ana_opts *opts);

/** ana_free - release a result of ana_run() (NULL is fine) */
void ana_free(struct ana_result *r);

/** ana_hist_value - the middle of latency bucket @i, in cycles */
uint64_t ana_hist_value(unsigned int i);

/** ana_percentile - the @pct (0..100) percentile of @v's wake latencies, cycles */
uint64_t ana_percentile(const struct ana_vcpu *v, double pct);

/** ana_ns - @cycles in ns at @r's frequency */
uint64_t ana_ns(const struct ana_result *r, uint64_t cycles);

/** ana_exit_name - the name of an exit reason (VMX for @isa 1, SVM for 2), or NULL */
const char *ana_exit_name(uint32_t isa, uint32_t reason);

/** ana_hcall_name - the name of PV hypercall @op, or NULL */
const char *ana_hcall_name(uint32_t op);

/** ana_print_text - aligned tables; per-vCPU exits and hypercalls with @per_vcpu */
int ana_print_text(const struct ana_result *r, FILE *f, bool per_vcpu);

/** ana_print_json - one JSON object (docs/analyze.md gives the schema) */
int ana_print_json(const struct ana_result *r, FILE *f, bool per_vcpu);

/**
 * ana_write_svg - per-vCPU running/runnable/blocked/offline bars and each
 * domain's exit-reason breakdown, as an SVG file at @path
 *
 * Returns 0 or a negative errno (tcx_error() names the file).
 */
int ana_write_svg(const struct ana_result *r, const char *path);

/**
 * ana_compare_print - @n results side by side, each figure per vCPU with
 * its difference from @r[0] (absolute and %): running and runnable time,
 * wait latency p50/p99 (ns), exits by reason; aligned text, or one JSON
 * object with @json (docs/analyze.md gives the schema)
 *
 * Returns 0, or -1 when @f could not be written (or out of memory).
 */
int ana_compare_print(const struct ana_result *const *r, int n, FILE *f, bool json);

/**
 * struct ana_jtask - one guest task joined to what Xen did to its vCPUs
 * (all in ns on the host's time line, clipped to the window)
 * @guest:	the guest's name (its GUEST entry in the host file)
 * @dom:	its domain
 * @ran:	time the guest had it switched in on one of its vCPUs
 * @on_pcpu:	of @ran, the vCPU running on a pCPU
 * @preempted:	of @ran, the vCPU runnable but not running (Xen's doing)
 * @blocked:	of @ran, the vCPU blocked or offline
 * @unknown:	of @ran, before the hypervisor trace knew the vCPU's state
 * @in_exit:	of @on_pcpu, inside HVM exits (kvm_exit to kvm_entry)
 * @wakes:	sched_wakeup -> sched_switch in sequences completed
 * @wait:	their summed latency; @wait_guest of it with the vCPU running
 *		(the guest ran something else), @wait_xen with the vCPU
 *		runnable, @wait_other blocked, offline or unknown
 */
struct ana_jtask {
	char *guest;
	uint32_t dom;
	int pid;
	char comm[17];
	uint64_t ran, on_pcpu, preempted, blocked, unknown, in_exit;
	uint64_t wakes, wait, wait_guest, wait_xen, wait_other, wait_max;
};

/**
 * struct ana_join - guest tasks joined to the hypervisor trace
 * @from_ns, @to_ns: the window, ns after the host file's first record
 * @tasks:	sorted by guest, then pid (@ntasks)
 */
struct ana_join {
	char *host;
	uint64_t from_ns, to_ns;
	unsigned int ntasks;
	struct ana_jtask *tasks;
};

/**
 * ana_join_run - join the guest files @guests (@nguests of them, written by
 * record --xen -A) to the hypervisor trace @host, through libtracecmd:
 * the guests' TIME_SHIFT puts them on the host's time line, the host's
 * GUEST entries name the vCPU of each guest CPU. Honours from_ns/to_ns.
 *
 * Returns the result to ana_join_free(), or NULL with the reason in tcx_error().
 */
struct ana_join *ana_join_run(const char *host, char *const *guests, int nguests,
			      const struct ana_opts *opts);

/** ana_join_free - release a result of ana_join_run() (NULL is fine) */
void ana_join_free(struct ana_join *j);

/** ana_join_print_text - the joined view as an aligned table */
int ana_join_print_text(const struct ana_join *j, FILE *f);

/** ana_join_print_json - the joined view as one JSON object (docs/analyze.md) */
int ana_join_print_json(const struct ana_join *j, FILE *f);

#endif /* ANALYZE_H */
