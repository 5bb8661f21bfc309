/* SPDX-License-Identifier: GPL-2.0 */
/* Shared by the agent/ sources; not installed. */
#ifndef AGENT_INTERNAL_H
#define AGENT_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "agent.h"
#include "tmsg.h"

struct tracefs_instance;
struct agent_saved;

/* An event by name, as found in a tracing directory. */
struct agent_event {
	char system[64];
	char name[64];
};

/*
 * One session's tracing: our instance and what the metadata needs. A
 * simulated guest kernel (--tracing-dir on a directory that is not tracefs)
 * has no instance: @sim_dir is read as it is.
 */
struct agent_trace {
	struct tracefs_instance *inst;
	char *sim_dir;
	struct agent_event *events;	/* simulated: the matched events */
	int nr_events;
	int ncpus;
	uint32_t page_size;
	int version;
	struct agent_saved *saved;	/* files to write back (apply.c) */
	int nr_saved;
	bool loglevel_set;
	bool top;			/* in the top instance (apply.c) */
	unsigned int sleep_us;		/* -s: streams' nap (0: default) */
	unsigned int max_kb;		/* -m: per CPU (0: no limit) */
};

/* Set by SIGINT/SIGTERM: finish the session, restore tracefs, stop. */
extern volatile sig_atomic_t agent_stop;

/* Set up tracing for session @seq; on failure, the reason in tcx_error(). */
int agent_trace_setup(struct agent_trace *tr, const struct agent_record_opts *o,
		      unsigned int seq, const char *tracing_dir);
/* Whether @dir is a mounted tracefs (else a simulated kernel). */
bool agent_is_tracefs(const char *dir);
/* A simulated kernel: match events, count CPUs (simdir.c). */
int agent_sim_setup(struct agent_trace *tr, const char *dir,
		    const struct agent_record_opts *o);
/*
 * The options beyond events, clock and buffer size (apply.c), on our
 * instance or a simulated kernel; on failure the reason in tcx_error(),
 * naming the file the kernel refused. What it changed outside the instance
 * is written back by agent_apply_restore() (from agent_trace_teardown()).
 */
int agent_apply(struct agent_trace *tr, const struct agent_record_opts *o);
/*
 * The per-CPU buffer a session asks for (0: leave it): -m's KiB, which the
 * kernel's ring then keeps newest (the streams read it only once tracing is
 * off), else -b's.
 */
unsigned int agent_buffer_kb(const struct agent_record_opts *o);
void agent_apply_restore(struct agent_trace *tr);
/*
 * -p names a tracer the top instance offers and ours lacks: take the top
 * instance if it is idle (no tracer, no event on), saving every top file
 * the session may write, and drop our instance; else refuse, saying what
 * uses it. Nothing to do (0) for another tracer.
 */
int agent_top_choose(struct agent_trace *tr, const struct agent_record_opts *o);
/* trace_pipe_raw of @cpu (malloc'ed). */
char *agent_trace_raw_path(struct agent_trace *tr, int cpu);

/*
 * The text of @file in the session's instance (or the simulated kernel's
 * directory), at most 8 KiB; malloc'ed, NULL if it cannot be read.
 */
char *agent_trace_read(struct agent_trace *tr, const char *file);
void agent_trace_teardown(struct agent_trace *tr);
/* the instance of session @seq made ahead (tracefs only), and dropped */
void agent_trace_prepare(unsigned int seq, const char *tracing_dir);
void agent_trace_unprepare(void);
int agent_trace_on(struct agent_trace *tr, bool on);
/* Read /proc/kallsyms and printk_formats now, so that sessions take them
 * from the cache (read again only when the loaded modules change). */
void agent_kallsyms_prime(void);
/* The trace.dat metadata (*out malloc'ed, its first *out_len bytes). */
int agent_trace_metadata(struct agent_trace *tr, uint64_t trace_id,
			 uint8_t **out, size_t *out_len);
/* Bytes of a v6 trace.dat before its "flyrecord" section. */
int agent_meta_length(const uint8_t *buf, size_t len, int version,
		      size_t *meta_len);

/*
 * One CPU's page stream (stream.c): over a socket, full pages are spliced
 * from trace_pipe_raw to it through a pipe; partial pages, a vchan, and a
 * source that cannot splice are read().
 */
struct agent_stream {
	int cpu;
	int lfd;			/* TCP: listening socket */
	struct tmsg_transport *vchan;	/* Xen: our vchan server, or NULL */
	unsigned int port;
	const char *peer_host;		/* only this host may connect */
	const struct tmsg_auth *auth;	/* if set: and open with its token */
	int token_ms;			/* for the whole token */
	const char *raw_path;		/* trace_pipe_raw of the instance */
	uint32_t page_size;
	atomic_int *stop;		/* drain and finish */
	FILE *log;
	bool no_splice;			/* tests: read() even over a socket */
	bool late_partial;		/* a simulated kernel: partial pages come late */
	unsigned int nap_us;		/* -s: nap when empty (0: POLL_MS) */
	bool hold;			/* -m: read nothing until stopped */
	pthread_t th;
	bool started;
	int err;
	uint64_t pages;			/* pages sent */
	uint64_t spliced_pages;		/* of which spliced (TCP, vsock) */
	unsigned int refused;		/* connections turned away */
};

int agent_stream_start(struct agent_stream *s);
/* Join the thread; returns its error. */
int agent_stream_join(struct agent_stream *s);

#endif /* AGENT_INTERNAL_H */
