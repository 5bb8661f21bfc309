/* SPDX-License-Identifier: GPL-2.0 */
/*
 * agent: the trace-cmd agent of a traced machine (a Xen guest, or any host
 * over TCP). It serves one session of trace-cmd's agent protocol at a time:
 * it applies an allow-list of record options from the peer, records with
 * libtracefs in its own tracefs instance, sends the metadata as a trace.dat
 * and streams whole ring-buffer pages per CPU, then restores tracefs.
 *
 * All functions return 0 or a negative errno value; messages for people go
 * to the configured log.
 */
#ifndef AGENT_H
#define AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define AGENT_MAX_EVENTS	64
#define AGENT_MAX_BUFFER_KB	(256 * 1024)	/* per CPU */
#define AGENT_DEFAULT_EVENT	"sched:sched_switch"

#define AGENT_MAX_FILTER	256	/* -f: bytes, with the NUL */
#define AGENT_MAX_FUNCS		32	/* -l, -n, -g: names each */
#define AGENT_FUNC_LEN		64	/* a function name or glob, with the NUL */
#define AGENT_MAX_GRAPH_DEPTH	255
#define AGENT_MAX_SLEEP_US	1000000	/* -s */
#define AGENT_MAX_VERBOSE	6	/* --verbose: libtracefs' levels */

/* The function lists of struct agent_record_opts, by option. */
enum agent_func_list {
	AGENT_FUNC_FILTER,	/* -l: set_ftrace_filter */
	AGENT_FUNC_NOTRACE,	/* -n: set_ftrace_notrace */
	AGENT_FUNC_GRAPH,	/* -g: set_graph_function */
	AGENT_NR_FUNC_LISTS
};

/**
 * struct agent_record_opts - what a peer may ask for, after the allow-list
 * @events:	   -e: "system", "event", "system:event" (globs with '*')
 * @filters:	   -f after an -e: that event's filter ("" none)
 * @exclude:	   -v before an -e: that event is disabled, not enabled
 * @nr_events:	   how many (both kinds); none enabled means
 *		   AGENT_DEFAULT_EVENT
 * @buffer_kb:	   -b: ring-buffer size per CPU in KiB (0: leave as is)
 * @clock:	   -C: trace clock ("" : leave as is)
 * @file_version:  --file-version: 6 (default) or 7
 * @tracer:	   -p: a tracer from a fixed list ("": none)
 * @funcs:	   -l, -n, -g: function names or globs
 * @nr_funcs:	   how many in each list
 * @graph_depth:   --max-graph-depth (-1: leave as is)
 * @stacktrace:	   -T: a stack trace with every event
 * @sleep_us:	   -s: how long a CPU's stream naps when its buffer is
 *		   empty (0: the agent's default)
 * @max_kb:	   -m: KiB of pages sent per CPU at most (0: no limit)
 * @verbose:	   --verbose[=LEVEL]: libtracefs' log level (-1: leave)
 */
struct agent_record_opts {
	char events[AGENT_MAX_EVENTS][128];
	char filters[AGENT_MAX_EVENTS][AGENT_MAX_FILTER];
	bool exclude[AGENT_MAX_EVENTS];
	int nr_events;
	unsigned int buffer_kb;
	char clock[32];
	int file_version;
	char tracer[32];
	char funcs[AGENT_NR_FUNC_LISTS][AGENT_MAX_FUNCS][AGENT_FUNC_LEN];
	int nr_funcs[AGENT_NR_FUNC_LISTS];
	int graph_depth;
	bool stacktrace;
	unsigned int sleep_us;
	unsigned int max_kb;
	int verbose;
};

/**
 * agent_parse_record_args - apply the allow-list to a peer's ARGS
 * @argc, @argv: the record options the peer sent
 * @o:		 filled on success
 *
 * Accepts -e EVENT [-f FILTER], -v -e EVENT, -p TRACER, -l/-n/-g FUNC,
 * --max-graph-depth N, -T, -s USECS, -m KB, -b KB, -C CLOCK,
 * --file-version N, --verbose[=LEVEL] and --compression none (also in
 * their joined forms: -eEVENT, --file-version=N). Anything else, commands
 * included, is refused (-EPERM); malformed values give -EINVAL.
 *
 * Returns 0, or a negative errno value with the reason, to be sent back
 * to the peer, in tcx_error().
 */
int agent_parse_record_args(int argc, const char *const *argv,
			    struct agent_record_opts *o);

/**
 * agent_opts_enabled - how many of @o's events are enabled (not -v)
 */
int agent_opts_enabled(const struct agent_record_opts *o);

/**
 * struct agent_config - how the agent serves
 * @peer_host:	  TCP: the only host allowed to connect (trace-cmd's -N)
 * @port:	  control port (trace-cmd's default is TMSG_AGENT_PORT, 823);
 *		  0 picks a free one, reported through @on_listen
 * @secret:	  the shared secret a peer must present (our TRACE_REQ
 *		  parameter), or NULL
 * @secret_len:	  its length
 * @insecure:	  accept peers without the secret (stock trace-cmd record)
 * @sessions:	  stop after this many sessions (0: serve until signalled)
 * @log:	  where messages go (stderr if NULL)
 * @on_listen:	  if set, called with the control port once listening
 * @on_listen_arg: its argument
 * @domid:	  Xen mode: our domain id (AGENT_DOMID_SELF: ask xenstore)
 * @peer_domid:	  Xen mode: the recorder's domain (0, dom0)
 * @ring_kb:	  Xen mode: per-CPU ring size in KiB (0: 1024, the most)
 * @tracing_dir:  NULL for the mounted tracefs; another tracefs mount; or a
 *		  simulated guest kernel, a directory shaped like tracefs
 *		  (events/<system>/<event>/format, events/header_page,
 *		  per_cpu/cpuN/trace_pipe_raw, optionally trace_clock), read
 *		  as it is, with no instance and nothing written
 */
#define AGENT_DOMID_SELF	(~0u)

struct agent_config {
	const char *peer_host;
	unsigned int port;
	const uint8_t *secret;
	size_t secret_len;
	bool insecure;
	int sessions;
	FILE *log;
	void (*on_listen)(unsigned int port, void *arg);
	void *on_listen_arg;
	unsigned int domid;
	unsigned int peer_domid;
	unsigned int ring_kb;
	const char *tracing_dir;
};

/**
 * agent_serve_tcp - trace-cmd's `agent -N HOST -p PORT`: listen, serve one
 * session at a time, refuse connections from other hosts
 *
 * Returns 0 when @cfg->sessions sessions were served or a SIGINT/SIGTERM
 * arrived, a negative errno if it could not listen. A failed session is
 * logged and the next one served.
 */
int agent_serve_tcp(const struct agent_config *cfg);

/**
 * agent_serve_xen - serve over libxenvchan in a Xen guest
 *
 * The agent is the vchan server under its own guest-writable xenstore
 * directory /local/domain/<domid>/data/trace-cmd-xen/: stream 0 is the
 * control vchan, streams 1..N the CPUs' pages, each granted to
 * @cfg->peer_domid only (which is the authentication: no secret needed).
 * It advertises itself there (version, caps, port, state=ready last) and
 * sets state=stopped when it stops.
 *
 * Returns as agent_serve_tcp().
 */
int agent_serve_xen(const struct agent_config *cfg);

/**
 * agent_cleanup_stale - remove tracefs instances left by agents that were
 * killed (named "tcx-agent-<pid>" for a pid that no longer runs)
 */
void agent_cleanup_stale(FILE *log);

#endif /* AGENT_H */
