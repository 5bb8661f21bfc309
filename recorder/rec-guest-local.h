/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of one guest session share (record -A, the host's side):
 * rec-guest.c opens and closes the session, rec-guest-meta.c turns the
 * agent's metadata into the guest file, rec-guest-stream.c is the thread
 * that pumps its pages into that file, rec-guest-tsync.c runs its time
 * sync.
 */
#ifndef REC_GUEST_LOCAL_H
#define REC_GUEST_LOCAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "recorder-internal.h"
#include "tmsg.h"
#include "tsync.h"

struct tmsg_transport;
struct tmsg_trace_resp;
struct tdat_writer;

#define READ_CHUNK	(1u << 20)	/* per stream and read call: larger costs dom0 less */
#define PAGE_MAX	(256u << 10)	/* the largest page size a guest may claim */
#define ROUND_MAX	(1u << 20)	/* per stream per round: fairness */
#define POLL_MS		100
#define FLUSH_NS	1000000000ull	/* pages to disk at least every second */
#define PUBLISH_NS	100000000ull	/* counters for status lines */
#define CONNECT_MS	5000
#define CLOSE_MS	10000		/* CLOSE to the last page and CLOSE_RESP */
#define MAX_PROTOS	2		/* xen, ptp */

struct stream {
	struct tmsg_transport *t;
	uint8_t *buf;		/* READ_CHUNK + one page */
	size_t fill;
	bool open;
	uint64_t bytes;
};

struct rec_guest {
	struct rec_guest_spec sp;
	char path[512];
	char wpath[540];		/* the name written: @path, or its stage name */
	bool staged;			/* @wpath is not @path yet */
	struct tmsg_transport *ctl;
	struct tmsg_auth auth;		/* TCP/vsock with a secret: the session's keys */
	struct stream *st;
	int cpus;
	uint32_t page_size;
	uint64_t traceid;
	struct tdat_writer *w;
	FILE *log;
	int close_ms;
	uint64_t open_by;		/* rec_guest_open()'s deadline */
	uint64_t open_t0;		/* when it began */
	_Atomic uint64_t cutoff;	/* rec_guest_set_deadline()'s (0: none) */
	uint64_t max_bytes;		/* page bytes into the file (0: no limit) */
	size_t max_meta;
	uint64_t written;		/* page bytes into the file: the drain thread's */
	bool over;			/* @max_bytes reached: the streams are closed */

	pthread_t th;
	bool started;
	int wakefd;
	atomic_int stop;

	/* shared with the thread: under lock */
	pthread_mutex_t lock;
	struct rec_guest_summary sum;
	uint64_t t0_ns;

	/* time sync: set up by rec_guest_open(), then the tsync thread's */
	uint64_t host_traceid;		/* sent in TRACE_REQ: TIME_SHIFT's peer */
	const char *offer[MAX_PROTOS];
	uint32_t noffer;
	struct tmsg_transport *tst;	/* the time sync stream */
	struct tsync_host *tsh;
	bool xen_ok;			/* @tsh runs protocol xen: records wanted */
	struct tsync_scale scale;
	bool pv, vtsc;
	uint32_t incarnation;		/* Xen counts the domain's restores */
	uint32_t cpu_khz;
	uint32_t mult, shift;		/* TSC2NSEC: the bound in ns */
	uint16_t print_id;
	bool has_print;
	int long_size;
	double interval;
	bool tbroken;			/* a sample failed: no more */
	char tnote[160];		/* why not, or what went wrong */
	pthread_t tth;
	bool tstarted;
	pthread_mutex_t tlock;
	pthread_cond_t tcond;		/* CLOCK_MONOTONIC */
	bool treq_stop;			/* under tlock */
	atomic_bool gone;		/* the drain thread saw the guest go */
	atomic_bool done;		/* the drain thread (the last) finished */
};

struct meta_buf {
	uint8_t *b;
	size_t len, cap;
	size_t max;	/* the most it will hold (0: no limit) */
};
/* ---- rec-guest-meta.c ---- */

/** rec_guest_meta_sink - tmsg_recv_data()'s sink: the metadata into a meta_buf */
int rec_guest_meta_sink(void *arg, const void *buf, size_t len);

/**
 * rec_guest_make_file - check the metadata against TRACE_RESP and write it
 * into the guest's new file (@g->w), ready for its pages; @mb is freed
 * once the writer has what it needs
 */
int rec_guest_make_file(struct rec_guest *g, const struct rec_guest_opts *o,
			struct meta_buf *mb);

/**
 * struct rec_guest_meta_info - what rec_guest_meta_check() learnt
 * @cpus, @page_size, @long_size, @clock: the metadata's (clock "" if none
 *		or not a known name)
 * @dropped:	options not written (with a writer)
 * @header_page_differs: the metadata's header page was not dom0's text
 */
struct rec_guest_meta_info {
	int cpus;
	uint32_t page_size;
	int long_size;
	char clock[32];
	uint32_t dropped;
	bool header_page_differs;
};

/**
 * rec_guest_meta_check - walk metadata @buf once to check it and, with
 * @w, once more into @w, as rec_guest_make_file() does (for tests and
 * the fuzzer); the guest's TSC2NSEC mult and shift are kept
 *
 * Returns 0, or a negative errno with the message in tcx_error().
 */
int rec_guest_meta_check(const void *buf, size_t len, struct tdat_writer *w,
			 struct rec_guest_meta_info *info);

/* ---- rec-guest-stream.c ---- */

/** rec_guest_note - what happened, for the summary (the first note stays) */
void rec_guest_note(struct rec_guest *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/** rec_guest_drain_main - the guest's thread: its pages into its file until the end */
void *rec_guest_drain_main(void *arg);

/* ---- rec-guest-tsync.c ---- */

/** rec_guest_tnote - why time sync did not happen (the first reason stays) */
void rec_guest_tnote(struct rec_guest *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/** rec_guest_parse_protos - the protocols of --tsync to offer */
int rec_guest_parse_protos(struct rec_guest *g, const char *spec);

/** rec_guest_tsync_offer - drop xen from the offer when this guest cannot run it */
void rec_guest_tsync_offer(struct rec_guest *g, uint32_t cpu_khz);

/** rec_guest_tsync_start - the protocol the agent chose: its stream, its state */
void rec_guest_tsync_start(struct rec_guest *g, const struct tmsg_trace_resp *r,
			   int timeout_ms);

/** rec_guest_tsync_xen_setup - protocol xen's parameters from the metadata */
void rec_guest_tsync_xen_setup(struct rec_guest *g);

/** rec_guest_tsync_main - the time sync thread: samples until the stop */
void *rec_guest_tsync_main(void *arg);

/** rec_guest_tsync_finish - after the file: solve, append TIME_SHIFT */
void rec_guest_tsync_finish(struct rec_guest *g, bool file_ok);

#endif /* REC_GUEST_LOCAL_H */
