/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xsim: the simulated Xen host behind the drop-in Xen libraries.
 *
 * Three layers, each usable on its own:
 *  - xsim_tbuf_*: Xen's trace buffers (t_info, per-CPU t_buf, producer),
 *    laid out in a caller-supplied "machine memory" whose page i is MFN
 *    mfn_base + i;
 *  - xsim_conf_*: the host description (docs/xensim.md);
 *  - xsim_host_*: the running host (scheduler, producers, control socket,
 *    ground-truth log) behind the `xensim run` command.
 */
#ifndef XSIM_H
#define XSIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XSIM_PAGE_SIZE		4096u
/* Xen's NR_CPUS on x86 (Debian build): sizes the t_info header. */
#define XSIM_NR_CPUS		256u
#define XSIM_MAX_PCPUS		64u
#define XSIM_MAX_DOMAINS	32u
#define XSIM_MAX_VCPUS		16u
/* Page i of the machine memory is this MFN; nonzero to catch MFN 0 bugs. */
#define XSIM_MFN_BASE		0x100000u

/* ---- trace buffers ---- */

/** struct xsim_rec - one trace record as a producer hands it over */
struct xsim_rec {
	uint32_t event;		/* 28-bit event id */
	bool cycles;		/* carries a TSC */
	uint64_t tsc;		/* host TSC now; also set when !cycles, as a
				 * filler or LOST record written first takes it */
	unsigned int nextra;	/* payload words, 0..7 */
	uint32_t extra[7];
	uint16_t dom, vcpu;	/* current vCPU of the pCPU, for LOST records */
};

/** struct xsim_tbuf_stats - per-pCPU producer counters (ground truth) */
struct xsim_tbuf_stats {
	uint64_t written;	/* records written, fillers and LOST excluded */
	uint64_t dropped;	/* records that did not fit */
	uint64_t lost_reported;	/* sum of the counts in LOST records written */
	uint64_t lost_cleared;	/* drops forgotten by disable (Xen does that) */
	uint64_t lost_recs;	/* LOST records written */
	uint64_t fillers;	/* WRAP fillers written */
	uint64_t virqs;		/* half-full crossings signalled */
	uint64_t first_tsc;	/* first and last TSC written (0: none) */
	uint64_t last_tsc;
};

struct xsim_tbuf;

/**
 * xsim_tbuf_mem_pages - machine memory needed for the largest buffers
 * @nr_cpus:	online pCPUs
 *
 * Returns pages for t_info plus every CPU's buffer at the clamped maximum.
 */
size_t xsim_tbuf_mem_pages(unsigned int nr_cpus);

/**
 * xsim_tbuf_max_pages - Xen's clamp on pages per CPU
 * @nr_cpus:	online pCPUs
 *
 * Returns min(65535, (65535 - first) / (nr_cpus - 1)), first being the
 * word offset of the first MFN list (129 for NR_CPUS=256).
 */
unsigned int xsim_tbuf_max_pages(unsigned int nr_cpus);

/**
 * xsim_tbuf_new - trace buffer state over machine memory
 * @nr_cpus:	online pCPUs (1..XSIM_MAX_PCPUS)
 * @mem:	at least xsim_tbuf_mem_pages(nr_cpus) pages, zeroed
 * @notify:	called (outside the CPU lock) when a buffer crosses half full:
 *		Xen's VIRQ_TBUF; may be NULL
 * @arg:	passed to @notify
 *
 * Returns the state, or NULL with errno set. The event mask starts as
 * TRC_ALL and the CPU mask full, as in Xen.
 */
struct xsim_tbuf *xsim_tbuf_new(unsigned int nr_cpus, void *mem,
				void (*notify)(void *arg), void *arg);

/** xsim_tbuf_free - release the state (not the memory) */
void xsim_tbuf_free(struct xsim_tbuf *tb);

/**
 * xsim_tbuf_set_size - XEN_SYSCTL_TBUFOP_set_size: allocate once
 * @tb:		state
 * @pages:	pages per CPU; silently clamped
 *
 * As in Xen, a successful allocation also starts tracing.
 * Returns 0, -EINVAL (0 pages, or a different size already set) or
 * -EBUSY (same size already set).
 */
int xsim_tbuf_set_size(struct xsim_tbuf *tb, unsigned int pages);

/** xsim_tbuf_enable - TBUFOP_enable; returns 0 or -EINVAL (no buffers) */
int xsim_tbuf_enable(struct xsim_tbuf *tb);

/** xsim_tbuf_disable - TBUFOP_disable: stop, keep data, clear lost */
void xsim_tbuf_disable(struct xsim_tbuf *tb);

/** xsim_tbuf_enabled - whether records are being accepted */
bool xsim_tbuf_enabled(const struct xsim_tbuf *tb);

/**
 * xsim_tbuf_get_info - TBUFOP_get_info
 * @tb:		state
 * @evt_mask:	out, current event mask
 * @mfn:	out, MFN of t_info (0 before set_size)
 * @size:	out, t_info size in bytes (pages * 4096), as Xen reports it
 */
void xsim_tbuf_get_info(const struct xsim_tbuf *tb, uint32_t *evt_mask,
			uint64_t *mfn, uint32_t *size);

/** xsim_tbuf_pages - pages per CPU once set, else 0 */
unsigned int xsim_tbuf_pages(const struct xsim_tbuf *tb);

/** xsim_tbuf_set_evt_mask - TBUFOP_set_evt_mask */
void xsim_tbuf_set_evt_mask(struct xsim_tbuf *tb, uint32_t mask);

/**
 * xsim_tbuf_set_cpu_mask - TBUFOP_set_cpu_mask
 * @tb:		state
 * @map:	little-endian bitmap, bit c = pCPU c
 * @nbits:	bits in @map; pCPUs beyond are cleared
 */
void xsim_tbuf_set_cpu_mask(struct xsim_tbuf *tb, const uint8_t *map,
			    unsigned int nbits);

/**
 * xsim_tbuf_mfn_kind - what an MFN of the machine memory holds
 * @tb:		state
 * @mfn:	machine frame
 *
 * Returns 1 for a t_info page (read-only), 2 for a buffer page
 * (writable), 0 for anything not shared with dom0.
 */
int xsim_tbuf_mfn_kind(const struct xsim_tbuf *tb, uint64_t mfn);

/**
 * xsim_tbuf_trace - __trace_var() on pCPU @cpu
 * @tb:		state
 * @cpu:	the producing pCPU; only one thread may produce per CPU at a time
 *		(callers serialise per CPU as Xen does with IRQs off; a lock is
 *		taken anyway so that disable can clear the lost counters)
 * @r:		the record
 *
 * Returns 1 written, 0 filtered (disabled, masks), -ENOSPC dropped (no
 * room; counted as lost, reported by a later LOST record).
 */
int xsim_tbuf_trace(struct xsim_tbuf *tb, unsigned int cpu,
		    const struct xsim_rec *r);

/** xsim_tbuf_stats - copy pCPU @cpu's counters into @out */
void xsim_tbuf_stats(struct xsim_tbuf *tb, unsigned int cpu,
		     struct xsim_tbuf_stats *out);

/** xsim_tbuf_lost_pending - drops on @cpu not yet reported by a LOST */
uint32_t xsim_tbuf_lost_pending(struct xsim_tbuf *tb, unsigned int cpu);

/* ---- host description ---- */

enum xsim_dtype { XSIM_PV, XSIM_PVH, XSIM_HVM };
enum xsim_vendor { XSIM_INTEL, XSIM_AMD };

/** enum xsim_profile - the workload a domain's vCPUs run */
enum xsim_profile {
	XSIM_IDLE,	/* mostly blocked, short bursts */
	XSIM_MIXED,	/* bursts and blocks of similar length */
	XSIM_BUSY,	/* never blocks: preempted at slice ends */
};

/* Offset changes (restores, migrations) per domain. */
#define XSIM_MAX_TSC_CHANGES	8

/** struct xsim_tsc_change - a domain's new TSC offsets, at a time in the run */
struct xsim_tsc_change {
	uint64_t at_us;			/* microseconds after the host started */
	int64_t offset[XSIM_MAX_VCPUS];	/* the new offset of each vCPU */
};

/** struct xsim_dom_conf - one domain of the simulated host */
struct xsim_dom_conf {
	char name[64];
	uint32_t domid;
	enum xsim_dtype type;
	unsigned int vcpus;
	uint32_t tsc_mode;		/* XEN_CPUID_TSC_MODE_* */
	uint32_t gtsc_khz;		/* 0: cpu_khz */
	int64_t tsc_offset[XSIM_MAX_VCPUS]; /* guest TSC offset per vCPU */
	bool offset_set;		/* else: guest TSC 0 at host start */
	int32_t drift_ppm;		/* guest TSC this many ppm fast */
	unsigned int nchanges;		/* offset changes, in time order */
	struct xsim_tsc_change change[XSIM_MAX_TSC_CHANGES];
	enum xsim_profile profile;
	uint32_t rate;			/* exits/hypercalls per s of run time */
	uint32_t run_us, block_us;	/* mean burst and block lengths */
	char instance_tracers[128];	/* tracers a tracefs instance offers
					 * ("": as the top one) */
};

/** struct xsim_conf - the simulated host */
struct xsim_conf {
	unsigned int pcpus;
	uint32_t cpu_khz;		/* 0 in the file: measure this TSC */
	enum xsim_vendor vendor;
	uint32_t slice_us;		/* scheduler time slice */
	uint32_t tick_us;		/* producer wake-up period */
	uint32_t xwake_pct;		/* % of blocks that wake a remote vCPU */
	bool migrate;			/* a woken vCPU may move to an idle pCPU */
	uint32_t act_lag_us;		/* back-to-back guest actions: how late
					 * (0: the stamps' allowed lag) */
	uint64_t seed;
	unsigned int ndoms;
	struct xsim_dom_conf dom[XSIM_MAX_DOMAINS];
};

/**
 * xsim_conf_load - parse a host description
 * @path:	the file
 * @c:		out
 *
 * Returns 0, or a negative errno with a message, prefixed by @path, in the
 * calling thread's tcx_error(): -EINVAL for a bad description (the message
 * names the line), -ENOMEM, -EIO, or the -errno of fopen.
 */
int xsim_conf_load(const char *path, struct xsim_conf *c);

/**
 * xsim_conf_parse - parse a host description held in memory
 * @text:	NUL-terminated contents
 * @c:		out
 *
 * Returns 0, -EINVAL with a message naming the line ("line N: ...") in the
 * calling thread's tcx_error(), or -ENOMEM.
 */
int xsim_conf_parse(const char *text, struct xsim_conf *c);

/** xsim_frac_bits - TSC ratio fraction bits: 48 Intel, 32 AMD */
unsigned int xsim_frac_bits(enum xsim_vendor v);

/**
 * xsim_tsc_ratio - the scaling ratio Xen programs for a domain
 * @c:		host
 * @d:		domain
 *
 * Returns floor((gtsc_khz << frac) / cpu_khz); identity when gtsc_khz is
 * 0 or equal to cpu_khz; PV domains always identity.
 */
uint64_t xsim_tsc_ratio(const struct xsim_conf *c, const struct xsim_dom_conf *d);

/**
 * xsim_guest_tsc - what a vCPU's RDTSC returns at a host TSC
 * @host:	host TSC
 * @ratio:	from xsim_tsc_ratio()
 * @frac:	fraction bits
 * @offset:	the vCPU's offset
 *
 * Returns ((host * ratio) >> frac) + offset, computed in 128 bits.
 */
uint64_t xsim_guest_tsc(uint64_t host, uint64_t ratio, unsigned int frac,
			int64_t offset);

/** xsim_rdtsc - this machine's TSC, the simulated host's TSC */
uint64_t xsim_rdtsc(void);

/** xsim_measure_khz - this machine's TSC rate against CLOCK_MONOTONIC_RAW */
uint32_t xsim_measure_khz(void);

/* ---- the running host ---- */

struct xsim_host;

/**
 * xsim_host_start - bring a host up in directory @dir
 * @c:		the description (cpu_khz 0 is measured here)
 * @dir:	created if missing; receives `ctl` (socket), `truth` (ground truth
 *		log), `pid` and `ready`
 *
 * Returns the host, running its pCPU threads, or NULL with errno set.
 */
struct xsim_host *xsim_host_start(const struct xsim_conf *c, const char *dir);

/**
 * xsim_host_serve - answer control requests until @stop becomes nonzero
 * @h:		host
 * @stop:	polled between requests (set it from a signal handler)
 *
 * Returns 0, -ENOMEM, or the -errno of a failed poll.
 */
int xsim_host_serve(struct xsim_host *h, volatile int *stop);

/** xsim_host_stop - stop the producers, write the final truth, free */
void xsim_host_stop(struct xsim_host *h);

#endif /* XSIM_H */
