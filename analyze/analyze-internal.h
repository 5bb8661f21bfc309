/* SPDX-License-Identifier: GPL-2.0 */
/* analyze's private pieces: the event kinds it follows and its per-vCPU state. */
#ifndef ANALYZE_INTERNAL_H
#define ANALYZE_INTERNAL_H

#include <trace-cmd/trace-cmd.h>

#include "analyze.h"

enum ana_kind {
	ANA_K_NONE,
	ANA_K_RUNSTATE,
	ANA_K_CONTINUE,
	ANA_K_EXIT,
	ANA_K_ENTRY,
	ANA_K_LOST,
	ANA_K_HCALL,	/* pv_hypercall: op in eax */
	ANA_K_HCALL64,	/* pv_hypercall64: op in eax */
	ANA_K_HCALL2,	/* pv_hypercall_v2: op */
};

/* A field of an event: where in the payload, how wide. */
struct ana_field {
	int off, size;
};

/* Bound kinds of a running period, as xenalyze cuts them. */
enum ana_bound {
	ANA_B_START,	/* x -> running */
	ANA_B_END,	/* running -> x */
	ANA_B_CONT,	/* continue_running */
};

/* Per-vCPU state while reading, beside its public result. */
struct ana_vstate {
	uint32_t key;			/* dom << 16 | vcpu */
	int state;			/* -1 unknown */
	uint64_t state_tsc;
	bool running;
	bool seen_run;			/* has run since the trace started */
	uint64_t run_start;
	int run_pcpu, last_pcpu;
	uint64_t wake_tsc;		/* 0: no wake pending */
	struct ana_exit *pending;	/* exit waiting for its entry */
	uint64_t pending_tsc;
	unsigned int cap_exits;
};

/*
 * libtracecmd's calls, through the library loaded at the first read
 * (ana-tracecmd.c): each member is the function of its name with
 * "tracecmd_" before it, and of its type.
 */
struct ana_tc {
	__typeof__(&tracecmd_set_loglevel)	set_loglevel;
	__typeof__(&tracecmd_open)		open;
	__typeof__(&tracecmd_close)		close;
	__typeof__(&tracecmd_get_tep)		get_tep;
	__typeof__(&tracecmd_read_data)		read_data;
	__typeof__(&tracecmd_read_at)		read_at;
	__typeof__(&tracecmd_read_cpu_first)	read_cpu_first;
	__typeof__(&tracecmd_free_record)	free_record;
	__typeof__(&tracecmd_get_traceid)	get_traceid;
	__typeof__(&tracecmd_get_guest_cpumap)	get_guest_cpumap;
};

/* Valid once ana_tc_load() returned 0. */
extern struct ana_tc ana_tc;

/**
 * ana_tc_load - load libtracecmd, once for the process
 *
 * Returns 0, or a negative errno with tcx_error() naming the library and
 * what is wrong with it.
 */
int ana_tc_load(void);

/** ana_hist_index - the latency bucket of @x cycles */
unsigned int ana_hist_index(uint64_t x);

#endif /* ANALYZE_INTERNAL_H */
