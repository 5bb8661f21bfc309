/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xtgen: synthetic xentrace captures with their ground truth, for the
 * convert tests and the bench. It simulates Xen's scheduler the way the
 * trace shows it (runstate pairs and SWITCH/INF* records on the switching
 * pCPU, idle vCPUs d32767vP), HVM exits with TSC-less handler records, PV
 * hypercalls, per-pCPU rings with wrap fillers, LOST records and TSC skew,
 * then writes the windows in drain order as xentrace does.
 */
#ifndef XTGEN_H
#define XTGEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define XTGEN_MAX_DOMS	8
#define XTGEN_MAX_VCPUS	8
#define XTGEN_MAX_IDS	512

struct xtgen_params {
	int		ncpus;		/* pCPUs (1..256) */
	int		ndoms;		/* domains, d0 included (1..XTGEN_MAX_DOMS) */
	int		nvcpus;		/* vCPUs per domain (1..XTGEN_MAX_VCPUS) */
	uint64_t	epochs;		/* scheduling epochs (one window per pCPU each) */
	uint64_t	epoch_ticks;	/* TSC ticks per epoch */
	uint64_t	tsc0;		/* first TSC */
	unsigned int	seed;
	bool		hvm;		/* domains >= 1 are HVM: VMENTRY/VMEXIT + handlers */
	bool		pv;		/* d0 does hypercalls, traps, page faults */
	bool		guest;		/* TRC_GUEST records (xenalyze aborts on them) */
	bool		all_ids;	/* one record of every known id, on a last pCPU window */
	bool		switch_records;	/* INFPREV/INFNEXT/SWITCH before each switch */
	int		lost_every;	/* a LOST_RECORDS every N epochs per pCPU (0: none) */
	int		skew_every;	/* a record older than its predecessor every N epochs */
	bool		late_domain;	/* the last domain is created halfway */
	bool		svm;		/* AMD exit reasons: in 4.19+ SVM_EXIT records */
	bool		legacy_ids;	/* with svm: 4.17's VMEXIT ids, as an AMD host wrote them */
	uint32_t	ring_bytes;	/* ring data size for wrap fillers (0: no fillers) */
	int		events_per_slice; /* extra records per running slice (0: 4) */
};

struct xtgen_truth {
	uint64_t	records;	/* records written, fillers excluded */
	uint64_t	fillers;
	uint64_t	bytes;
	uint64_t	per_class[12];	/* by bit index of the class: gen=0, sched=1, ... guest=11 */
	uint64_t	lost_records, lost;
	uint64_t	skew;
	uint64_t	no_tsc;
	uint64_t	switches;	/* x->running transitions (sched_switch expected) */
	uint64_t	vmentry, vmexit;
	uint64_t	run_ticks[XTGEN_MAX_DOMS][XTGEN_MAX_VCPUS];
	uint64_t	first_tsc, last_tsc;
	int		nids;
	uint32_t	ids[XTGEN_MAX_IDS];	/* distinct event ids written */
	uint64_t	id_count[XTGEN_MAX_IDS];
	int		max_cpu;
};

/** xtgen_write - write a capture to @f; the truth into @t. Returns 0 or -errno. */
int xtgen_write(const struct xtgen_params *p, FILE *f, struct xtgen_truth *t);

/** xtgen_defaults - a small capture exercising everything but GUEST */
void xtgen_defaults(struct xtgen_params *p);

/** xtgen_class_index - bit index of an event id's class (0..11), -1 if none */
int xtgen_class_index(uint32_t event);

#endif /* XTGEN_H */
