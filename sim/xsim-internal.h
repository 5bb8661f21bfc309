/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internals shared by the host (host.c), its control socket (serve.c), the
 * scheduler (sched.c) and the guest kernels (guest.c).
 */
#ifndef XSIM_INTERNAL_H
#define XSIM_INTERNAL_H

#include <pthread.h>
#include <stdio.h>

#include "xsim.h"
#include "xsim-chan.h"

/* Longest marker kept: its event must fit the short ring-buffer header. */
#define XSIM_MARKER_MAX	92

struct xsim_guest;

/* Marker FIFOs of a guest: the shared pair, and a pair per vCPU. */
#define XSIM_GUEST_FDS	(2 + 2 * XSIM_MAX_VCPUS)

/*
 * What a guest process asks of a running vCPU, in the order it asked: of
 * vCPU @vcpu (the writer was pinned to it), or of whichever runs next (-1).
 */
struct xsim_action {
	enum { XA_TEXT, XA_RAW, XA_XENTRACE } kind;
	int16_t vcpu;			/* -1: any vCPU of the guest */
	uint16_t len;			/* bytes in data */
	uint16_t event;			/* XA_XENTRACE: 12-bit event */
	int client;			/* XA_XENTRACE: who waits for the reply */
	uint32_t gen;
	uint8_t data[XSIM_MARKER_MAX];
};

enum vstate { VS_RUNNING = 0, VS_RUNNABLE = 1, VS_BLOCKED = 2 };

struct xsim_vcpu {
	unsigned int dom;	/* index into conf.dom */
	uint16_t domid, id;
	unsigned int pcpu;	/* its pCPU; changes only under slock */
	/* under host.slock: */
	enum vstate state;
	uint64_t state_tsc;	/* entered state (blocked: when; runnable: wake) */
	uint64_t wake_tsc;	/* blocked: timer; runnable: eligible from */
	uint64_t cpu_time;	/* ticks run so far */
	/* home pCPU thread only: */
	uint64_t run_end;	/* running: end of the current burst */
	uint64_t next_exit;
	uint64_t rng;
	uint64_t rdtsc_n;	/* emulated RDTSC exits (tsc_mode 1) */
};

struct xsim_pcpu {
	struct xsim_host *h;
	unsigned int id;
	pthread_t thread;
	uint64_t clk;		/* last TSC stamped on this pCPU */
	struct xsim_vcpu *cur;	/* NULL: idle */
	int busy;		/* cur != NULL, for other threads (atomic) */
	uint64_t run_start;	/* stamp of cur's (or idle's) runstate->running */
	bool run_logged;	/* that record reached the trace buffer */
	uint64_t slice_end;
	uint64_t rng;
	/* the last guest action done here: its vCPU and p->clk after it */
	const struct xsim_vcpu *act_vcpu;
	uint64_t act_end;
	/* it was an HVMOP_xentrace of a pinned caller: its next action is
	 * awaited before anything else runs here */
	bool hold;
	unsigned int nv;	/* v[]: its vCPUs, under slock */
	struct xsim_vcpu *v[XSIM_MAX_DOMAINS * XSIM_MAX_VCPUS];
};

struct xsim_host {
	struct xsim_conf conf;
	char *dir;
	int memfd;
	uint8_t *mem;
	size_t mem_pages;
	struct xsim_tbuf *tb;
	int notify_fd;		/* eventfd: a buffer crossed half full */
	int listen_fd;
	uint64_t t0;
	uint64_t max_lag;	/* how far stamps may trail real time */
	uint64_t act_lag;	/* how late a back-to-back guest action may come */
	volatile int stop;
	pthread_mutex_t slock;	/* vCPU states */
	FILE *truth;
	unsigned int nvcpus;
	struct xsim_vcpu vcpu[XSIM_MAX_DOMAINS * XSIM_MAX_VCPUS];
	struct xsim_guest *guest[XSIM_MAX_DOMAINS];	/* by conf index */
	struct xsim_xs *xs;
	size_t pool_base;	/* first page of the grant pool */
	/* hypercalls done by pCPU threads, answered by the serve loop */
	pthread_mutex_t dlock;
	int done_fd;
	unsigned int ndone;
	struct { int client; uint32_t gen; } done[64];
	/* each domain's clock (xsim_host_gtsc), set at start */
	struct {
		uint64_t ratio;
		uint64_t s0;	/* the scaled host TSC at t0: drift starts there */
		uint64_t change_tsc[XSIM_MAX_TSC_CHANGES];
	} dclk[XSIM_MAX_DOMAINS];
	struct xsim_pcpu pcpu[XSIM_MAX_PCPUS];
};

/*
 * host.c: vCPU @vcpu of domain @dom's TSC at host TSC @host: ((host · ratio)
 * >> frac) + the offset in force at @host + the drift since t0
 */
uint64_t xsim_host_gtsc(const struct xsim_host *h, unsigned int dom,
			unsigned int vcpu, uint64_t host);
/* host.c: domain @dom's incarnation at host TSC @host (changes made) */
uint32_t xsim_host_incarnation(const struct xsim_host *h, unsigned int dom,
			       uint64_t host);
/* host.c: a pCPU thread finished a hypercall for @client */
void xsim_host_done(struct xsim_host *h, int client, uint32_t gen);

/* sched.c: pin the vCPUs, start one thread per pCPU. Returns 0 or -errno. */
int xsim_sched_start(struct xsim_host *h);
/* sched.c: stop the pCPU threads; log the intervals still running. */
void xsim_sched_stop(struct xsim_host *h);
/* sched.c: one line of the ground-truth log (thread-safe). */
void xsim_truth(struct xsim_host *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* guest.c: a guest kernel's tracefs directory (if @tracefs), and the
 * queue of what its processes ask of a running vCPU (always); NULL with
 * errno set on failure */
struct xsim_guest *xsim_guest_new(struct xsim_host *h, unsigned int dom,
				  bool tracefs);
void xsim_guest_free(struct xsim_guest *g);
/* pCPU thread of vCPU @c: the guest switches between its task and idle */
void xsim_guest_switch(struct xsim_guest *g, unsigned int c, uint64_t host,
		       bool to_task);
/* pCPU thread running vCPU @c, under slock: the guest wakes the task of its
 * blocked vCPU @target (an IPI Xen turns into that vCPU's wake) */
void xsim_guest_kick(struct xsim_guest *g, unsigned int c, unsigned int target,
		     uint64_t host);
/* pCPU thread: guest kernel activity while running */
void xsim_guest_activity(struct xsim_guest *g, unsigned int c, uint64_t host);
/* pCPU thread running vCPU @c: the oldest queued action for @c or for any
 * vCPU, if there is one, and the TSC it is done at */
bool xsim_guest_pop(struct xsim_guest *g, unsigned int c,
		    struct xsim_action *a, uint64_t *now);
/* pCPU thread running vCPU @c: stamp a marker action at @host */
void xsim_guest_mark(struct xsim_guest *g, unsigned int c, uint64_t host,
		     const struct xsim_action *a);
bool xsim_guest_pending(struct xsim_guest *g);
/* serve loop: queue a hypercall; false if the queue is full */
bool xsim_guest_push(struct xsim_guest *g, const struct xsim_action *a);
/* serve loop: the marker FIFOs to poll (at most XSIM_GUEST_FDS; returns
 * how many), and reading them */
int xsim_guest_fds(struct xsim_guest *g, int *fds);
void xsim_guest_input(struct xsim_guest *g, int fd);
/* serve loop, now and then: control files, partial pages */
void xsim_guest_tick(struct xsim_guest *g, bool final);
void xsim_guest_stats(struct xsim_guest *g);

/**
 * xsim_put_file - @dir/@name holding @text, created or truncated
 *
 * Returns 0, or -ENOMEM, -EIO (short write) or the -errno of open/write.
 */
int xsim_put_file(const char *dir, const char *name, const char *text);

#endif /* XSIM_INTERNAL_H */
