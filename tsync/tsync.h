/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tsync: one clock for the hypervisor, dom0 and the guests of a capture.
 *
 * Layers, each usable alone:
 *	clock	host TSC -> ns as one mult/shift pair (TSC2NSEC), from cpu_khz
 *		refined by (TSC, CLOCK_MONOTONIC_RAW) pairs
 *	xen	Xen's TSC scaling ratio exactly as Xen computes it, guest <->
 *		host conversions in 128-bit arithmetic
 *	match	the hypervisor's records of a guest's trapping markers (CPUID
 *		with a reserved leaf, HVMOP_xentrace, PV hypercall) and of
 *		emulated RDTSC, as (host exit TSC, host entry TSC) per round
 *	solve	guest marker stamps + hypervisor rounds -> offset brackets,
 *		intersected per vCPU, split into epochs when the offset moves,
 *		and the TIME_SHIFT samples that stock readers apply exactly
 *	ptp	trace-cmd's "ptp" protocol, byte for byte, both roles
 *	guest	the agent's side: numbered markers around the trapping marker
 *
 * Conventions: "off" is the guest's TSC offset as Xen defines it,
 * guest = scale(host) + off with scale(h) = (h * ratio) >> frac; TIME_SHIFT
 * stores host - guest. Functions returning int give 0 (or a count) on
 * success and a negative errno value on failure.
 */
#ifndef TSYNC_H
#define TSYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ==== the clock model: host TSC -> ns ==== */

/* One (host TSC, CLOCK_MONOTONIC_RAW ns) pair taken in dom0. */
struct tsync_pair {
	uint64_t	tsc;
	uint64_t	ns;
};

/**
 * struct tsync_clock - TSC2NSEC for the whole capture: ns = (tsc * mult) >> shift
 * @cpu_khz:	Xen's calibrated TSC rate
 * @mult, @shift: shift <= 32 (trace-cmd's reader needs it)
 * @fitted:	the rate came from the pairs, not from cpu_khz
 * @ppb:	the fitted rate against cpu_khz, parts per billion (signed)
 * @resid_ns:	the largest residual of a pair against the fitted line
 * @quant_ppb:	the relative error of mult itself (0.5 / mult), ppb, rounded up
 */
struct tsync_clock {
	uint32_t	cpu_khz;
	uint32_t	mult, shift;
	bool		fitted;
	int64_t		ppb;
	uint64_t	resid_ns;
	uint32_t	quant_ppb;
};

/**
 * tsync_mult_shift - mult/shift for a rate of @num ns per @den ticks: the
 * largest shift <= 32 whose rounded mult fits 32 bits (-ERANGE if none)
 */
int tsync_mult_shift(uint64_t num, uint64_t den, uint32_t *mult, uint32_t *shift);

/**
 * tsync_clock_init - the model from @cpu_khz, refined with @n pairs
 *
 * The pairs (at least two groups: start and end) are fitted by least
 * squares, exactly in 128-bit integers. The fit is used when it spans at
 * least 1 ms of TSC and lies within 1000 ppm of cpu_khz; otherwise cpu_khz
 * alone gives the rate (a PVH dom0 or a bad pair must not bend the capture).
 */
int tsync_clock_init(struct tsync_clock *c, uint32_t cpu_khz,
		     const struct tsync_pair *p, size_t n);

/** tsync_clock_ns - (tsc * mult) >> shift, as trace-cmd's reader computes it */
uint64_t tsync_clock_ns(const struct tsync_clock *c, uint64_t tsc);

/**
 * tsync_clock_ticks_to_ns - a duration of @ticks in ns, rounded up (for
 * error bounds)
 */
uint64_t tsync_clock_ticks_to_ns(const struct tsync_clock *c, uint64_t ticks);

/**
 * tsync_read_pair - one pair now: rdtsc inside two CLOCK_MONOTONIC_RAW
 * reads, the tightest of 8 tries, ns at the middle
 */
int tsync_read_pair(struct tsync_pair *p);

/** tsync_rdtsc - this CPU's TSC (xensim: the host's; the ptp agent reads the guest's) */
uint64_t tsync_rdtsc(void);

/* ==== Xen's scaling ==== */

enum tsync_vendor {
	TSYNC_INTEL,		/* VMCS TSC multiplier: 48 fraction bits */
	TSYNC_AMD,		/* MSR TSC_RATIO: 32 fraction bits, 8 integer bits */
};

/**
 * struct tsync_scale - guest = ((host * ratio) >> frac) + off
 * @ratio:	Xen's tsc_scaling_ratio (1 << frac for identity)
 * @frac:	48 (Intel) or 32 (AMD); 0 with ratio 1 when Xen scales nothing
 */
struct tsync_scale {
	uint64_t	ratio;
	unsigned int	frac;
};

/**
 * tsync_xen_ratio - the ratio Xen 4.17 gives a domain
 * @gtsc_khz:	the domain's rate (0: cpu_khz, what libxl asks for)
 * @supported:	the host has TSC scaling ("TSC Scaling"/"TSC Rate MSR")
 *
 * floor((gtsc_khz << frac) / cpu_khz) as hvm_get_tsc_scaling_ratio()
 * computes it; identity when the rates are equal. Returns 0, or -ERANGE
 * when Xen finds no usable ratio (quotient too large, zero, or scaling
 * unsupported with different rates): Xen then emulates the TSC (vtsc) in
 * the default mode, and the guest's pairs must come from RDTSC records.
 */
int tsync_xen_ratio(uint32_t cpu_khz, uint32_t gtsc_khz, enum tsync_vendor v,
		    bool supported, struct tsync_scale *s);

/** tsync_scale_identity - whether @s leaves the TSC unscaled */
bool tsync_scale_identity(const struct tsync_scale *s);

/**
 * tsync_scale_fwd - (host * ratio) >> frac with a 128-bit product, cut to
 * 64 bits as Xen's mulq/shrdq does
 */
uint64_t tsync_scale_fwd(const struct tsync_scale *s, uint64_t host);

/**
 * tsync_scale_inv - the smallest host with tsync_scale_fwd(host) >= @g
 * (UINT64_MAX when there is none)
 */
uint64_t tsync_scale_inv(const struct tsync_scale *s, uint64_t g);

/** tsync_guest_of - the guest TSC at host TSC @host: scale(host) + off */
uint64_t tsync_guest_of(const struct tsync_scale *s, int64_t off, uint64_t host);

/** tsync_host_of - the host TSC at which the guest TSC reads @g */
uint64_t tsync_host_of(const struct tsync_scale *s, int64_t off, uint64_t g);

/* ==== matching the hypervisor's records ==== */

/* The reserved CPUID leaf of the marker ("XSY\0"; not Xen's or viridian's
 * 0x40000000-0x400001ff) and the GUEST event number of HVMOP_xentrace. */
#define TSYNC_CPUID_LEAF	0x58535900u
#define TSYNC_GUEST_EVENT	0x5c5u

/* Xen event ids the matcher reads (4.17; SVM exits get 0x...3 from 4.19;
 * the nested-guest flag 0x400 of entry/exit records is ignored). */
#define TSYNC_TRC_VMENTRY	0x00081001u
#define TSYNC_TRC_VMEXIT	0x00081002u
#define TSYNC_TRC_VMEXIT64	0x00081102u
#define TSYNC_TRC_SVM_EXIT	0x00081003u
#define TSYNC_TRC_SVM_EXIT64	0x00081103u
#define TSYNC_TRC_NESTEDFLAG	0x00000400u
#define TSYNC_TRC_LOST		0x0001f001u	/* LOST_RECORDS */
#define TSYNC_TRC_CPUID		0x0008200eu
#define TSYNC_TRC_VMMCALL	0x00082012u
#define TSYNC_TRC_RDTSC		0x0008201au
#define TSYNC_TRC_PV_HCALL_V2	0x0020100du
#define TSYNC_TRC_PV_FAULT64	0x00201104u	/* PAGE_FAULT | 64: rip, addr, error */
#define TSYNC_TRC_GUEST		0x0800f000u
#define TSYNC_HVM_OP		34u

/*
 * A PV guest's marker without privilege: a user page fault goes to Xen
 * first, which traces it with the faulting address before handing it on.
 * Round seq reads the page at TSYNC_PV_FAULT_BASE + seq * 4096 of a
 * read-only anonymous mapping, the first touch of that page.
 */
#define TSYNC_PV_FAULT_BASE	0x7e5c00000000ull
#define TSYNC_PV_FAULT_PAGES	(1u << 20)

/**
 * struct tsync_hvrec - one hypervisor record, as the recorder decoded it
 * @tsc:	its TSC (inherited from the pCPU's previous record if it had none)
 * @has_tsc:	it carried its own
 * @event:	28-bit id
 * @nr, @w:	payload words
 * @dom, @vcpu:	the vCPU running on its pCPU (from the scheduler records)
 * @known:	@dom/@vcpu are known
 * @run:	which stretch of that vCPU on that pCPU the record is in: a new
 *		value whenever the pCPU's vCPU changes or leaves (0 throughout:
 *		not tracked, the records come in merged TSC order)
 */
struct tsync_hvrec {
	uint64_t	tsc;
	bool		has_tsc;
	uint32_t	event;
	uint8_t		nr;
	uint32_t	w[7];
	uint32_t	dom, vcpu;
	bool		known;
	uint64_t	run;
};

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

/** tsync_match_free - free @m (safe on NULL) */
void tsync_match_free(struct tsync_match *m);

/* ==== solving: offsets, epochs, TIME_SHIFT ==== */

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
 * times (for tsync_solve_opts.g_start/g_end). Returns the markers found,
 * or -EBADMSG for a page that does not walk to its commit.
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

/** tsync_gcollect_free - free @c (safe on NULL) */
void tsync_gcollect_free(struct tsync_gcollect *c);

/**
 * struct tsync_epoch - one interval of constant offset of one vCPU
 * @lo, @hi:	off lies in [lo, hi] (guest ticks)
 * @off:	the estimate, the middle
 * @g_first, @g_last: guest TSC of the first and last round of the epoch
 * @rounds:	rounds intersected
 * @widest:	the widest single bracket among them
 * @drift:	it follows the previous epoch by less than their widest
 *		brackets or by under 1000 ppm of the time between them: the
 *		offset drifted (a rate error), it did not jump; the samples go
 *		linearly from one to the other
 */
struct tsync_epoch {
	uint32_t	vcpu;
	int64_t		lo, hi, off;
	uint64_t	g_first, g_last;
	uint32_t	rounds;
	uint64_t	widest;
	bool		drift;
};

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
 * struct tsync_solution - the result for one guest
 * @epochs:	@nepochs, by vCPU then time
 * @rounds_used, @rounds_unmatched, @rounds_discarded: rounds intersected;
 *		guest rounds without a hypervisor match (or on another vCPU);
 *		warm-ups dropped
 * @rounds_wide: rounds dropped as outliers, from a vCPU whose offset
 *		drifts and that has at least 8 rounds: wider than 8 times its
 *		median round (a marker stamped late, or a round across an
 *		offset change); a drifting epoch's bound is its widest round
 * @bound:	the largest half-width of an epoch's bracket, guest ticks:
 *		every offset used is within this of the truth
 * @pv_confirmed: @pv and 0 lies in every vCPU's intersection
 * @samples_dropped: tsync_solution_from_samples(): samples left out, over
 *		all vCPUs, because their host time did not rise
 * @ncpu, @count: TIME_SHIFT shape: @ncpu entries of @count samples
 * @ts, @offset: per CPU c, samples at [c * count .. (c + 1) * count)
 * @flags:	TIME_SHIFT flags (always INTERPOLATE: steps are two samples
 *		one tick apart)
 * @scale:	the guest's scaling the solution used (@bound is in guest ticks)
 */
struct tsync_solution {
	struct tsync_epoch	*epochs;
	uint32_t		nepochs;
	uint32_t		rounds_used, rounds_unmatched, rounds_discarded;
	uint32_t		rounds_wide;
	uint64_t		bound;
	bool			pv_confirmed;
	uint32_t		samples_dropped;
	uint32_t		ncpu, count;
	uint64_t		*ts;
	int64_t			*offset;
	uint32_t		flags;
	struct tsync_scale	scale;
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
 * tsync_solution_time_shift - the per-CPU view for tdat_set_time_shift():
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

/**
 * tsync_write_time_shift - append @s as the TIME_SHIFT of the finished
 * version 7 guest file @path, for the host file whose TRACEID is @peer_id
 */
int tsync_write_time_shift(const char *path, uint64_t peer_id, const struct tsync_solution *s);

/** tsync_solution_free - free what @s holds */
void tsync_solution_free(struct tsync_solution *s);

/** tsync_bound_host - @s->bound in host ticks (rounded up) */
uint64_t tsync_bound_host(const struct tsync_solution *s);

/**
 * tsync_summary_line - "tsync xen: 40 rounds used (...), 1 epoch, bound
 * 12 ns" into @buf; the bound in ns through @c (host ticks if NULL)
 */
void tsync_summary_line(const struct tsync_solution *s, const char *proto,
			const struct tsync_clock *c, char *buf, size_t len);

/* ==== ptp: trace-cmd's protocol ==== */

#define TSYNC_PTP_NAME		"ptp"
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

struct tmsg_transport;

/* Reads this side's trace clock (x86-tsc: the TSC). */
typedef uint64_t (*tsync_clock_fn)(void *ctx);

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
 * PROBE with a stamp, PROBES after END, then the server's OFFSET
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
 * guest time ts)
 */
int tsync_ptp_host(struct tmsg_transport *t, uint32_t ncpu, tsync_clock_fn clk, void *ctx,
		   int64_t *ts, int64_t *off);

/** tsync_none_probe - the host asks for a round on guest CPU @cpu */
int tsync_none_probe(struct tmsg_transport *t, uint16_t cpu);

/** tsync_none_stop - the host ends the time sync loop */
int tsync_none_stop(struct tmsg_transport *t);

/**
 * tsync_none_wait - the guest waits for the host's next request: 1 with
 * @cpu set for a PROBE, 0 for STOP (or anything else), -errno
 */
int tsync_none_wait(struct tmsg_transport *t, int timeout_ms, uint16_t *cpu);

/* ==== the guest's side of protocol xen ==== */

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

/* ==== the sessions: protocol choice and the agent's loop ==== */

/* Protocol "xen" over TIME_SYNC (ours; all integers big-endian). */
#define TSYNC_XEN_NAME		"xen"
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
 * tsync_pick - the protocol an agent picks from those offered: "xen" when
 * offered and @xen_ok (a Xen guest whose markers reach the hypervisor
 * trace), else "ptp" when offered, else NULL (no time sync)
 */
const char *tsync_pick(const char *const *offered, uint32_t n, bool xen_ok);

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

/**
 * struct tsync_agent_opts - the agent's side of the time sync stream
 * @proto:	what tsync_pick() chose
 * @marker_path: xen: the trace_marker of the agent's instance
 * @hvmop:	xen: also try HVMOP_xentrace
 * @ncpu:	xen: the CPUs to run rounds on (0: those configured)
 * @stop:	set non-zero to end the loop (checked every 200 ms)
 * @log:	notes (FILE *)
 */
struct tsync_agent_opts {
	const char		*proto;
	const char		*marker_path;
	bool			hvmop;
	int			ncpu;
	const volatile int	*stop;
	void			*log;
};

/**
 * tsync_agent_serve - answer the host until it stops, the stream ends or
 * *@stop: protocol xen (marker rounds on every CPU per request) or ptp
 * (trace-cmd's "none" PROBE per CPU, pinned, then a ptp round as server
 * with the TSC as clock). Returns 0 or -errno.
 */
int tsync_agent_serve(struct tmsg_transport *t, const struct tsync_agent_opts *o);

/* ==== the host's side of one guest, all protocols ==== */

/**
 * struct tsync_host_opts - one guest's time sync, as the recorder runs it
 * @proto:	what the agent chose ("xen" or "ptp")
 * @t:		the time sync stream (the caller's; used until finish)
 * @dom:	xen: the guest's domain
 * @nvcpu:	the guest's CPUs
 * @scale:	xen: tsync_xen_ratio() of the guest
 * @pv:		xen: a PV guest with a native TSC
 * @vtsc:	xen: the guest's TSC is emulated: RDTSC records, not markers
 * @print_id:	xen: the guest's ftrace/print event id
 * @long_size:	xen: the guest's ring-buffer long size (0: 8)
 * @rounds:	xen: rounds per CPU at each sample (0: 10)
 * @clk, @clk_ctx: ptp: the host's trace clock (NULL: the TSC)
 */
struct tsync_host_opts {
	const char		*proto;
	struct tmsg_transport	*t;
	uint32_t		dom;
	uint32_t		nvcpu;
	struct tsync_scale	scale;
	bool			pv;
	bool			vtsc;
	uint16_t		print_id;
	int			long_size;
	uint32_t		rounds;
	tsync_clock_fn		clk;
	void			*clk_ctx;
};

struct tsync_host;

/** tsync_host_new - a guest's time sync state (nothing is sent yet) */
int tsync_host_new(struct tsync_host **out, const struct tsync_host_opts *o);

/**
 * tsync_host_sample - one sampling point: at the start (once the guest
 * traces), every --tsync-interval, and before the stop. xen: marker rounds
 * on every CPU; ptp: a ptp round per CPU.
 */
int tsync_host_sample(struct tsync_host *h);

/** tsync_host_record - xen: every hypervisor record (any thread) */
int tsync_host_record(struct tsync_host *h, const struct tsync_hvrec *r);

/** tsync_host_page - xen: every page of the guest's CPU @cpu (any thread) */
int tsync_host_page(struct tsync_host *h, const void *page, size_t size, uint32_t cpu);

/**
 * tsync_host_stop - end the protocol on the stream (STOP), once: the
 * recorder does it after the last sample and before the session's CLOSE
 * (as trace-cmd's host), then solves with tsync_host_finish() once every
 * hypervisor record and guest page is in. No sample after this. Returns
 * the send's error (the stream may be gone: nothing else is lost).
 */
int tsync_host_stop(struct tsync_host *h);

/**
 * tsync_host_finish - end the protocol on the stream (STOP) if
 * tsync_host_stop() did not, and solve:
 * @sol gets the TIME_SHIFT (tsync_write_time_shift()) and @summary the
 * line for the closing summary. A PV guest without a usable round gets
 * offset 0, reported as assumed. -ENODATA when nothing could be measured.
 */
int tsync_host_finish(struct tsync_host *h, struct tsync_solution *sol,
		      char *summary, size_t len, const struct tsync_clock *c);

/**
 * tsync_host_marks - xen: the rounds collected so far, both sides (valid
 * until the next record or page), for diagnostics
 */
void tsync_host_marks(struct tsync_host *h, const struct tsync_gmark **g, size_t *ng,
		      const struct tsync_hmark **hm, size_t *nh);

/** tsync_host_free - free @h (safe on NULL); the stream stays open */
void tsync_host_free(struct tsync_host *h);

#endif /* TSYNC_H */
