/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tsync internals: the layers under tsync.h, for this library and its
 * tests. match finds a guest's rounds in the hypervisor's records, collect
 * reads them from the guest's pages, solve intersects them into offsets;
 * ptp and xen are the protocols on the wire; the guest's rounds are the
 * agent's side of protocol xen. Same conventions as tsync.h.
 */
#ifndef TSYNC_INTERNAL_H
#define TSYNC_INTERNAL_H

#include "tsync.h"

/* ---- matching the hypervisor's records ---- */

/*
 * The most marks (hypervisor rounds, emulated-RDTSC pairs, guest rounds)
 * one guest's matcher or collector keeps. A guest decides how often it
 * traps or writes marker text; past this, marks are dropped and counted
 * (tsync_match_dropped(), tsync_gcollect_dropped()), so dom0's memory stays
 * bounded (about 40 MB per array). Ten rounds per vCPU per sample leave
 * room for 1600 samples of 64 vCPUs.
 */
#define TSYNC_MARKS_MAX		(1u << 20)

/* The reserved CPUID leaf of the marker ("XSY\0"; not Xen's or viridian's
 * 0x40000000-0x400001ff) and the GUEST event number of HVMOP_xentrace. */
#define TSYNC_CPUID_LEAF	0x58535900u
#define TSYNC_GUEST_EVENT	0x5c5u

enum tsync_kind {
	TSYNC_K_CPUID,		/* VMEXIT [T] .. CPUID(leaf) .. VMENTRY [T] */
	TSYNC_K_HVMOP,		/* VMEXIT [T] .. VMMCALL .. GUEST(seq) .. VMENTRY [T] */
	TSYNC_K_PV,		/* HYPERCALL_V2(hvm_op) [T] -> GUEST(seq), or PAGE_FAULT [T]
				 * at the round's page; no return record */
};

/**
 * struct tsync_hmark - one trap of a marker round, as the hypervisor saw it
 * @h_exit:	TSC of the exit (VMEXIT, or the PV hypercall)
 * @h_entry:	TSC of the VMENTRY that resumed that vCPU (= @h_exit for PV)
 */
struct tsync_hmark {
	uint32_t	seq;
	uint32_t	dom, vcpu;
	uint64_t	h_exit, h_entry;
	enum tsync_kind	kind;
};

/* An emulated RDTSC: the guest got @guest during the exit [h_exit, h_entry]. */
struct tsync_vpair {
	uint32_t	dom, vcpu;
	uint64_t	h_exit, h_entry;
	uint64_t	guest;
};

struct tsync_match;

/**
 * tsync_match_new - a matcher for the markers of domain @dom (or every
 * domain with @dom = UINT32_MAX)
 */
struct tsync_match *tsync_match_new(uint32_t dom);

/**
 * tsync_match_feed - one record; each vCPU's records in TSC order (the
 * merged stream), or each pCPU's in its order with @r->run set
 *
 * Per vCPU: an exit opens a bracket, the CPUID record with our leaf (or the
 * GUEST record of our event after VMMCALL) names it, and the VMENTRY that
 * resumes that vCPU closes it, whatever came between (EMUL records, a
 * deschedule, another pCPU). Fed per pCPU, a vCPU's records on two pCPUs
 * may come in either order: a bracket then closes only in the run it
 * opened in, and one whose vCPU left its pCPU is dropped. RDTSC handler
 * records give vpairs. A LOST_RECORDS record drops every open bracket:
 * the exit or entry of one may be among the lost, and an older exit must
 * not stand in for it. @r->known may be false for LOST_RECORDS.
 */
int tsync_match_feed(struct tsync_match *m, const struct tsync_hvrec *r);

/** tsync_match_marks - the completed rounds so far (valid until the next feed) */
size_t tsync_match_marks(const struct tsync_match *m, const struct tsync_hmark **out);

/** tsync_match_vpairs - the emulated-RDTSC pairs so far */
size_t tsync_match_vpairs(const struct tsync_match *m, const struct tsync_vpair **out);

/**
 * tsync_match_allow - @n more marks may be kept: the rounds dom0 asks for
 * (a marker the guest traps on its own, beyond them, is dropped and
 * counted; emulated-RDTSC pairs have only the hard cap). None is refused
 * before the first call.
 */
void tsync_match_allow(struct tsync_match *m, size_t n);

/** tsync_match_dropped - marks and pairs left out past TSYNC_MARKS_MAX */
uint64_t tsync_match_dropped(const struct tsync_match *m);

/** tsync_match_free - free @m (safe on NULL) */
void tsync_match_free(struct tsync_match *m);

/* ---- solving: offsets, epochs, TIME_SHIFT ---- */

/**
 * struct tsync_gmark - a round as the guest's trace shows it
 * @vcpu:	the guest CPU whose buffer holds both markers
 * @a, @b:	guest TSC stamps of the markers before and after the trap
 */
struct tsync_gmark {
	uint32_t	seq;
	uint32_t	vcpu;
	uint64_t	a, b;
};

struct tsync_gcollect;

/** tsync_gcollect_new - a collector of a guest's marker rounds */
struct tsync_gcollect *tsync_gcollect_new(void);

/**
 * tsync_gcollect_page - read the markers on one of the guest's ring-buffer
 * pages (u64 timestamp, commit word of @long_size bytes, events)
 * @cpu:	the guest CPU whose buffer the page came from
 * @print_id:	the guest's ftrace/print event id (5 on Linux)
 *
 * Pages of a CPU must come in order. Also keeps the range of all event
 * times (for tsync_solve_opts.g_start/g_end). The page is walked by
 * tdat_page_walk_next(), as readers read it. Returns the markers found, or
 * the error of tdat_page_check() for a page readers would not read (then
 * nothing on it counts).
 */
int tsync_gcollect_page(struct tsync_gcollect *c, const void *page, size_t size,
			int long_size, uint32_t cpu, uint16_t print_id);

/**
 * tsync_gcollect_marks - the complete rounds (marker a then b of one seq on
 * one CPU), and the time range seen (NULLs allowed)
 */
size_t tsync_gcollect_marks(const struct tsync_gcollect *c, const struct tsync_gmark **out,
			    uint64_t *g_min, uint64_t *g_max);

/* Called for every event of every page read, with its guest time. */
typedef void (*tsync_event_fn)(void *ctx, uint32_t cpu, uint64_t ts, uint16_t id);

/** tsync_gcollect_set_hook - also hand every event to @fn (NULL: none) */
void tsync_gcollect_set_hook(struct tsync_gcollect *c, tsync_event_fn fn, void *ctx);

/** tsync_gcollect_dropped - complete rounds left out past TSYNC_MARKS_MAX */
uint64_t tsync_gcollect_dropped(const struct tsync_gcollect *c);

/**
 * tsync_gcollect_allow - @n more rounds may be kept, as tsync_match_allow()
 * (none is refused before the first call)
 */
void tsync_gcollect_allow(struct tsync_gcollect *c, size_t n);

/** tsync_gcollect_free - free @c (safe on NULL) */
void tsync_gcollect_free(struct tsync_gcollect *c);

/**
 * struct tsync_solve_opts - how to solve one guest
 * @scale:	the guest's scaling (tsync_xen_ratio())
 * @nvcpu:	vCPUs (TIME_SHIFT gets one entry each)
 * @pv:		a PV guest with a native TSC: off must be 0; confirmed when
 *		0 lies in the intersection (then the bound is 0)
 * @g_start, @g_end: guest TSC range of the guest file's events (the
 *		samples cover it, so readers never extrapolate far)
 * @keep_first:	do not discard each vCPU's first round (warm-up)
 */
struct tsync_solve_opts {
	struct tsync_scale	scale;
	uint32_t		nvcpu;
	bool			pv;
	uint64_t		g_start, g_end;
	bool			keep_first;
};

/**
 * tsync_solve - brackets, intersections, epochs and TIME_SHIFT samples
 *
 * Round seq is matched to the hypervisor's trap of the same seq on the same
 * vCPU; off in [a - scale(h_exit), b - scale(h_entry)]. Per vCPU, in time
 * order, brackets are intersected; an empty intersection starts a new
 * epoch (the offset moved: a restore, a TSC write). A vCPU whose offset
 * drifts is solved again without the rounds far wider than its usual
 * (@rounds_wide). A vCPU without rounds
 * takes the domain's first epoch (Xen copies vCPU0's offset to the APs).
 * Returns -ENODATA if no vCPU has a usable round.
 */
int tsync_solve(const struct tsync_solve_opts *o, const struct tsync_gmark *g, size_t ng,
		const struct tsync_hmark *h, size_t nh, struct tsync_solution *out);

/**
 * tsync_solve_vtsc - TIME_SHIFT for an emulated-TSC guest from its RDTSC
 * pairs: per vCPU, medians of (host - guest) over groups of pairs give the
 * points of a piecewise-linear map; @out->bound is the largest spread of a
 * group (its 10th-90th percentile width / 2)
 */
int tsync_solve_vtsc(const struct tsync_solve_opts *o, const struct tsync_vpair *p, size_t n,
		     struct tsync_solution *out);

/**
 * tsync_solution_cpu - the per-CPU view for tdat_set_time_shift():
 * fills @ts[c], @off[c] pointers (arrays of @out->ncpu) into @s
 */
void tsync_solution_cpu(const struct tsync_solution *s, uint32_t cpu,
			const uint64_t **ts, const int64_t **off);

/**
 * tsync_apply - what a stock reader computes for guest TSC @g on @cpu
 * (trace-cmd's interpolation, rounding and extrapolation): the host TSC
 */
uint64_t tsync_apply(const struct tsync_solution *s, uint32_t cpu, uint64_t g);

/**
 * tsync_solution_from_samples - TIME_SHIFT from per-CPU (guest ts, host -
 * guest) samples, e.g. ptp's OFFSETs: @n[c] samples of CPU c at
 * ts[c][i]/off[c][i], any order; CPUs without samples take CPU 0's (or
 * the first that has some). Duplicate times keep the first; every CPU gets
 * the same count (at least two), INTERPOLATE, as tsync_solve() writes.
 * -ENODATA if no CPU has a sample.
 */
int tsync_solution_from_samples(uint32_t ncpu, const uint32_t *n, const uint64_t *const *ts,
				const int64_t *const *off, struct tsync_solution *out);

/* ---- ptp: trace-cmd's protocol ---- */

#define TSYNC_PTP_LOOP		339
#define TSYNC_PTP_START		1
#define TSYNC_PTP_PROBE		2
#define TSYNC_PTP_PROBES	3
#define TSYNC_PTP_OFFSET	4
#define TSYNC_PTP_END		5
#define TSYNC_PTP_FASTEST	0x1
#define TSYNC_PTP_USE_MARKER	0x2
#define TSYNC_PTP_PROBES_SIZE	(8 + 2 * TSYNC_PTP_LOOP * 12)	/* 8144 */
/* the generic "none" driver around each round */
#define TSYNC_NONE_NAME		"none"
#define TSYNC_NONE_PROBE	1
#define TSYNC_NONE_STOP		2

/**
 * tsync_ptp_server - the agent's (guest's) round: START, 339 probes, END,
 * the client's PROBES, fastest probe, OFFSET sent
 * @series:	the series id (previous + 1, as trace-cmd counts)
 * @offset, @ts: host - guest at guest time @ts (what OFFSET carries)
 * @rtt:	the fastest round trip, in this side's clock ticks (may be NULL)
 */
int tsync_ptp_server(struct tmsg_transport *t, uint32_t series, tsync_clock_fn clk,
		     void *ctx, int64_t *offset, int64_t *ts, uint64_t *rtt);

/**
 * tsync_ptp_client - the recorder's (host's) round: echo START and every
 * PROBE with a stamp, PROBES after END, then the server's OFFSET. More
 * than TSYNC_PTP_LOOP PROBEs in the round fail it (-EPROTO, tcx_error()).
 */
int tsync_ptp_client(struct tmsg_transport *t, tsync_clock_fn clk, void *ctx,
		     int64_t *offset, int64_t *ts);

/**
 * tsync_quickack - ACK at once on a TCP transport (before a read): stock
 * trace-cmd's unbatched writes otherwise wait 40 ms for our delayed ACK
 */
void tsync_quickack(struct tmsg_transport *t);

/**
 * tsync_ptp_host - the host's side of one sampling pass over @ncpu guest
 * CPUs, as trace-cmd's host does it: "none" PROBE(cpu) then a ptp round as
 * client, per CPU; @ts[c], @off[c] get CPU c's sample (host - guest at
 * guest time ts), @ok[c] whether tsync_ptp_sample_ok() accepts it within
 * the host's clock before the PROBE and after the OFFSET
 */
int tsync_ptp_host(struct tmsg_transport *t, uint32_t ncpu, tsync_clock_fn clk, void *ctx,
		   int64_t *ts, int64_t *off, bool *ok);

/**
 * tsync_ptp_sample_ok - whether a guest's sample is a clock: @off within
 * TSYNC_OFFSET_MAX and its host time (@ts + @off) within the host's own
 * window [@sent, @back] around the round (the host stamped its echo then)
 */
bool tsync_ptp_sample_ok(int64_t ts, int64_t off, uint64_t sent, uint64_t back);

/** tsync_none_probe - the host asks for a round on guest CPU @cpu */
int tsync_none_probe(struct tmsg_transport *t, uint16_t cpu);

/** tsync_none_stop - the host ends the time sync loop */
int tsync_none_stop(struct tmsg_transport *t);

/**
 * tsync_none_wait - the guest waits for the host's next request: 1 with
 * @cpu set for a PROBE, 0 for STOP (or anything else), -errno
 */
int tsync_none_wait(struct tmsg_transport *t, int timeout_ms, uint16_t *cpu);

/* ---- the guest's side of protocol xen ---- */

/**
 * tsync_marker_text - the text of a numbered marker: "tcx-tsync <seq> a"
 * (@before) or "... b"; returns its length
 */
int tsync_marker_text(char *buf, size_t len, uint32_t seq, bool before);

/**
 * tsync_marker_parse - read a marker back from a print event's text: 1 and
 * @seq/@before set if it is one, 0 otherwise
 */
int tsync_marker_parse(const char *text, size_t len, uint32_t *seq, bool *before);

/** tsync_cpuid_marker - cpuid(TSYNC_CPUID_LEAF, @seq): traps in HVM/PVH guests */
void tsync_cpuid_marker(uint32_t seq);

struct tsync_guest;

/**
 * struct tsync_guest_opts - the agent's marker rounds
 * @marker_path: trace_marker of the agent's instance (a simulated kernel
 *		whose per_cpu/cpu0/trace_marker beside it is a FIFO: the rounds
 *		pinned to CPU N write to per_cpu/cpuN/trace_marker instead)
 * @hvmop:	also try HVMOP_xentrace through libxencall
 * @pv_faults:	1: page fault markers (a PV guest), 0: none, -1: when
 *		/sys/hypervisor/guest_type says PV
 * @log:	notes (HVMOP blocked and how to enable it)
 * @first_seq:	the first round's number (0: 1); numbers must not repeat
 *		within one capture
 */
struct tsync_guest_opts {
	const char	*marker_path;
	bool		hvmop;
	int		pv_faults;
	void		*log;	/* FILE * */
	uint32_t	first_seq;
};

/** tsync_guest_open - open the marker file (and libxencall if asked) */
int tsync_guest_open(struct tsync_guest **out, const struct tsync_guest_opts *o);

/**
 * tsync_guest_rounds - @rounds rounds on each of @ncpu CPUs, pinned in
 * turn (the first round of each CPU is the warm-up); with HVMOP working,
 * each round also brackets an HVMOP_xentrace under its own number; in a
 * PV guest the cpuid (which does not trap there) is followed by the
 * round's page fault.
 * Restores the caller's affinity. Returns the rounds done.
 */
int tsync_guest_rounds(struct tsync_guest *g, int ncpu, int rounds);

/** tsync_guest_next_seq - the number the next round will carry */
uint32_t tsync_guest_next_seq(const struct tsync_guest *g);

/** tsync_guest_hvmop_ok - whether HVMOP_xentrace works (after a round) */
bool tsync_guest_hvmop_ok(const struct tsync_guest *g);

/** tsync_guest_close - free @g (safe on NULL) */
void tsync_guest_close(struct tsync_guest *g);

/* ---- protocol xen on the wire ---- */

/* Protocol "xen" over TIME_SYNC (ours; all integers big-endian). */
#define TSYNC_XEN_ROUNDS	1	/* host: u32 rounds per CPU */
#define TSYNC_XEN_DONE		2	/* guest: u32 done, u32 flags, u32 first, u32 last seq */
#define TSYNC_XEN_STOP		3	/* host: no more rounds */
#define TSYNC_XEN_F_HVMOP	0x1	/* HVMOP_xentrace rounds too */

/**
 * struct tsync_xen_done - what a guest did for one TSYNC_XEN_ROUNDS
 * @rounds:	rounds written (warm-ups included)
 * @flags:	TSYNC_XEN_F_*
 * @first, @last: the sequence numbers used
 */
struct tsync_xen_done {
	uint32_t	rounds, flags, first, last;
};

/**
 * tsync_xen_ask - the host asks for @rounds rounds per CPU and waits for
 * the guest's answer (@timeout_ms); ask once the guest traces (its
 * metadata has arrived) and the hypervisor's buffers are on, or the
 * markers and traps are not in the files
 */
int tsync_xen_ask(struct tmsg_transport *t, uint32_t rounds, int timeout_ms,
		  struct tsync_xen_done *d);

/** tsync_xen_stop - the host ends protocol xen */
int tsync_xen_stop(struct tmsg_transport *t);

/* ---- the host's side of one guest, all protocols ---- */

/**
 * tsync_host_marks - xen: the rounds collected so far, both sides (valid
 * until the next record or page), for diagnostics
 */
void tsync_host_marks(struct tsync_host *h, const struct tsync_gmark **g, size_t *ng,
		      const struct tsync_hmark **hm, size_t *nh);

#endif /* TSYNC_INTERNAL_H */
