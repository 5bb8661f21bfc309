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
 * This header is what the agent and the recorder use: the clock model,
 * Xen's scaling, the solution written as TIME_SHIFT, the protocol table,
 * the agent's loop and the host's side of one guest. The layers under
 * them (match, collect, solve, ptp and xen on the wire, the guest's
 * rounds) are in tsync-internal.h, for this library and its tests.
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

/* ---- the clock model: host TSC -> ns ---- */

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

/* ---- Xen's scaling ---- */

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

/* ---- what the host feeds: the hypervisor's records ---- */

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

/* ---- solving: offsets, epochs, TIME_SHIFT ---- */

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

/*
 * What a guest's time-sync values may be (they are the guest's word): an
 * offset (host - guest) within +-2^62, and samples within 2^63 - 2 ticks of
 * each other, so that a stock reader's 64-bit interpolation of them cannot
 * overflow its differences. Others are refused and counted.
 */
#define TSYNC_OFFSET_MAX	((int64_t)1 << 62)
#define TSYNC_SAMPLE_SPAN_MAX	(((uint64_t)1 << 63) - 2)

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
 * @samples_refused: samples (ptp) or rounds (xen) refused as no clock: an
 *		offset beyond TSYNC_OFFSET_MAX, a ptp sample whose host time is
 *		outside the host's own send/receive window, or ptp samples
 *		further than TSYNC_SAMPLE_SPAN_MAX from the rest
 * @marks_dropped: xen: marks left out past TSYNC_MARKS_MAX (a guest
 *		trapping or writing markers in a loop)
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
	uint32_t		samples_refused;
	uint64_t		marks_dropped;
	uint32_t		ncpu, count;
	uint64_t		*ts;
	int64_t			*offset;
	uint32_t		flags;
	struct tsync_scale	scale;
};

/**
 * tsync_write_time_shift - append @s as the TIME_SHIFT of the finished
 * version 7 guest file @path, for the host file whose TRACEID is @peer_id
 */
int tsync_write_time_shift(const char *path, uint64_t peer_id, const struct tsync_solution *s);

struct tdat_writer;

/**
 * tsync_publish_time_shift - @s as the TIME_SHIFT of the guest file that
 * @w is still writing (tdat_publish_time_shift()): all its samples when
 * they fit the file's slot, else an even subset with the first and the
 * last. Returns 0 or a negative errno.
 */
int tsync_publish_time_shift(struct tdat_writer *w, uint64_t peer_id,
			     const struct tsync_solution *s);

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

/* ---- the protocols: names, the table, the agent's loop ---- */

#define TSYNC_XEN_NAME		"xen"	/* ours: marker rounds in the hypervisor trace */
#define TSYNC_PTP_NAME		"ptp"	/* trace-cmd's, byte for byte */

struct tmsg_transport;

/* Reads this side's trace clock (x86-tsc: the TSC). */
typedef uint64_t (*tsync_clock_fn)(void *ctx);

/* One table of protocols (as trace-cmd's tracecmd_tsync_proto_register). */

/* The sides of a protocol this build runs, as trace-cmd's roles. */
#define TSYNC_ROLE_HOST		0x1	/* the recorder's (dom0's) side */
#define TSYNC_ROLE_GUEST	0x2	/* the agent's side */
/* Needs and kinds. */
#define TSYNC_PROTO_XEN_GUEST	0x4	/* a Xen guest whose markers reach the hypervisor trace */
#define TSYNC_PROTO_DRIVER	0x8	/* trace-cmd's framing around rounds: never offered */

struct tsync_agent_opts;

/**
 * struct tsync_proto - one time sync protocol
 * @name:	its name in TRACE_REQ, TRACE_RESP and TIME_SYNC, and in --tsync
 * @flags:	TSYNC_ROLE_* and TSYNC_PROTO_*
 * @serve:	the agent's loop until the host stops (TSYNC_ROLE_GUEST)
 * @stop:	the host ends the protocol on the stream (TSYNC_ROLE_HOST)
 *
 * The table's order is the order of preference: the host offers, and the
 * agent picks, the first that fits.
 */
struct tsync_proto {
	const char	*name;
	uint32_t	flags;
	int		(*serve)(struct tmsg_transport *t, const struct tsync_agent_opts *o);
	int		(*stop)(struct tmsg_transport *t);
};

/** tsync_proto_at - the @i-th protocol of the table, NULL past its end */
const struct tsync_proto *tsync_proto_at(size_t i);

/** tsync_proto_find - the protocol named @name (NUL-terminated), or NULL */
const struct tsync_proto *tsync_proto_find(const char *name);

/**
 * tsync_proto_wire - the protocol whose name fills @field: a name field of
 * @len bytes as messages carry it (NUL-padded, terminated only if shorter
 * than @len), or a token of @len bytes in a list; NULL if none
 */
const struct tsync_proto *tsync_proto_wire(const char *field, size_t len);

/**
 * tsync_parse_offer - what the host offers for --tsync @spec: "none"
 * (nothing), or names of protocols it runs joined by ',' (duplicates
 * dropped; empty names refused); NULL offers them all. @out gets the names
 * (the table's strings), in @spec's order, up to @max.
 * Returns the count, or -EINVAL with the message in tcx_error().
 */
int tsync_parse_offer(const char *spec, const char **out, uint32_t max);

/**
 * tsync_pick - the protocol an agent picks from those offered: the first
 * of the table the agent runs that was offered, those needing a Xen guest
 * only with @xen_ok (a Xen guest whose markers reach the hypervisor trace):
 * "xen", else "ptp", else NULL (no time sync)
 */
const char *tsync_pick(const char *const *offered, uint32_t n, bool xen_ok);

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

/* ---- the host's side of one guest, all protocols ---- */

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
 * tsync_host_solve - the solve so far, while the protocol runs: ptp the
 * samples taken, xen the rounds found in the records fed until now (a
 * copy: the feeds go on meanwhile). Call it on the thread that samples.
 * Returns 0, -ENODATA when nothing could be measured yet, or -errno.
 */
int tsync_host_solve(struct tsync_host *h, struct tsync_solution *sol);

/** tsync_host_free - free @h (safe on NULL); the stream stays open */
void tsync_host_free(struct tsync_host *h);

#endif /* TSYNC_H */
