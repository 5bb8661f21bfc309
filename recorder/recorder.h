/* SPDX-License-Identifier: GPL-2.0 */
/*
 * recorder: the dom0 side of trace-cmd-xen, public API.
 *
 *	convert		a xentrace capture into a trace.dat
 *	record		record --xen: the hypervisor's buffers, dom0's ftrace and
 *			every guest's agent, into files on one clock
 *	guests		the host's side of one agent session (record -A)
 *	parsers		the values of the command line (Hz, masks, -A, paths)
 *
 * The layers below (records, the per-pCPU stream, the event catalogue, the
 * vCPU model, the sink, the hypervisor buffers, dom0's ftrace) are in
 * recorder-internal.h, for this library, its tests and fuzzers.
 *
 * Functions returning int give 0 (or a count) on success and a negative
 * errno value on failure, with the message in the thread's tcx_error()
 * (tcx-util.h); those returning a pointer give NULL with errno set.
 */
#ifndef RECORDER_H
#define RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* pCPU ids accepted (xentrace's cpu_change carries an int). */
#define REC_MAX_CPUS		4096

/* ---- what a capture held ---- */

/**
 * struct rec_stream_stats - what a stream saw
 * @records:	records emitted (fillers excluded)
 * @fillers:	wrap fillers skipped
 * @lost_records: LOST_RECORDS records
 * @lost:	records Xen dropped, the sum of their counts
 * @no_tsc:	records that took their pCPU's previous TSC
 * @no_tsc_dropped: records without a TSC that came before their pCPU's
 *		first TSC when REC_NO_TSC_HOLD such records of that pCPU were
 *		already waiting for it: dropped
 * @skew:	records older than their pCPU's previous record (clamped to it)
 * @max_skew:	the largest such step back, in TSC ticks
 * @late:	records emitted after a newer one of another pCPU because the
 *		buffer bound was reached (cross-pCPU TSC skew or a silent pCPU)
 * @cut_bytes:	bytes of records cut short at the end of a window
 * @windows:	windows ended
 * @cpus:	pCPUs that sent data
 * @max_cpu:	the highest such pCPU id (-1: none)
 * @first_tsc:	smallest TSC emitted
 * @last_tsc:	largest TSC emitted
 * @peak_buffered: the most bytes of records queued at once
 */
struct rec_stream_stats {
	uint64_t	records;
	uint64_t	fillers;
	uint64_t	lost_records;
	uint64_t	lost;
	uint64_t	no_tsc;
	uint64_t	no_tsc_dropped;
	uint64_t	skew;
	uint64_t	max_skew;
	uint64_t	late;
	uint64_t	cut_bytes;
	uint64_t	windows;
	int		cpus;
	int		max_cpu;
	uint64_t	first_tsc;
	uint64_t	last_tsc;
	uint64_t	peak_buffered;
};

/* ---- what reading a capture saw ---- */

/**
 * struct rec_read_result - how reading a xentrace capture went
 * @bytes:	bytes read
 * @windows:	cpu_change windows started
 * @truncated:	bytes a truncated tail announced but the input lacked
 * @corrupt_at:	offset of an invalid window header (-1: none); reading
 *		stopped there
 * @msg:	a message for the first problem ("" if none)
 */
struct rec_read_result {
	uint64_t	bytes;
	uint64_t	windows;
	uint64_t	truncated;
	int64_t		corrupt_at;
	char		msg[256];
};

/* Event classes, for counting (bits 16-27 of the id, one-hot). */
enum rec_class {
	REC_CLASS_GEN, REC_CLASS_SCHED, REC_CLASS_DOM0OP, REC_CLASS_HVM,
	REC_CLASS_MEM, REC_CLASS_PV, REC_CLASS_SHADOW, REC_CLASS_HW,
	REC_CLASS_GUEST, REC_CLASS_OTHER, REC_NR_CLASSES
};

/** rec_class_name - "gen", "sched", ... for a class */
const char *rec_class_name(enum rec_class c);
/* ---- time ---- */

/**
 * rec_parse_hz - "2.4G", "2400M", "2400000000", "2.4GHz" to Hz, exactly
 *
 * Returns -EINVAL unless the value is a whole number of Hz in 1..2^40.
 */
int rec_parse_hz(const char *s, uint64_t *hz);

/**
 * rec_tsc2nsec - mult and shift so that ns = (tsc * mult) >> shift
 *
 * shift <= 32 (trace-cmd's reader needs it) and mult is the largest that
 * fits 32 bits, rounded to nearest: for @hz up to 2^32 the error stays
 * under 0.5 ns per second of trace.
 */
int rec_tsc2nsec(uint64_t hz, uint32_t *mult, uint32_t *shift);

/* One domain seen. */
struct rec_domain_summary {
	uint32_t	dom;
	uint32_t	nvcpus;		/* distinct vCPUs seen */
	uint32_t	max_vcpu;
};
/* ---- convert (rec-convert.c) ---- */

#define REC_DEFAULT_HZ	2400000000ull	/* xenalyze's default too */

/**
 * struct rec_convert_opts - one conversion
 * @input:	path, or "-" for standard input
 * @output:	trace.dat path
 * @hz:		TSC frequency (0: REC_DEFAULT_HZ)
 * @file_version: 6 or 7 (0: 7)
 * @svm:	name exit reasons of pre-4.19 VMEXIT records as SVM (a file is
 *		also scanned for reasons only AMD has, which turns it on)
 * @progress:	print progress on @log (a TTY) for long inputs
 * @log:	where warnings go (NULL: none)
 * @jobs:	threads that decode and write pCPUs side by side (0 or 1: one
 *		thread); at most one per pCPU with data, and only for a regular
 *		file (a pipe is read on one thread). The file is the same
 *		whatever the count.
 */
struct rec_convert_opts {
	const char	*input;
	const char	*output;
	uint64_t	hz;
	int		file_version;
	bool		svm;
	bool		progress;
	FILE		*log;
	int		jobs;
};

/**
 * struct rec_convert_summary - the closing summary
 * @classes:	records per class (enum rec_class)
 * @unknown:	records that became xen/unknown
 * @switches:	sched_switch events written
 * @svm_detected: AMD exit reasons seen in pre-4.19 exits: named as SVM
 * @domains:	@ndomains entries, idle domain excluded (freed by
 *		rec_convert_summary_free)
 */
struct rec_convert_summary {
	struct rec_stream_stats		stream;
	struct rec_read_result		read;
	uint64_t			classes[REC_NR_CLASSES];
	uint64_t			unknown;
	uint64_t			switches;
	uint64_t			events;
	uint64_t			hz;
	uint32_t			mult, shift;
	int				ncpus;
	uint32_t			ndomains;
	uint32_t			nvcpus;
	bool				svm_detected;
	struct rec_domain_summary	*domains;
};

/**
 * rec_convert - convert a xentrace capture into a trace.dat
 *
 * Returns 0, or a negative errno with tcx_error() naming the file or
 * value at fault. A truncated tail gives 0 and a warning; a corrupt window
 * returns -EBADMSG after writing what came before it.
 */
int rec_convert(const struct rec_convert_opts *o, struct rec_convert_summary *sum);

/**
 * struct rec_xa_stats - what rec_xenalyze_copy() kept
 * @bytes_in, @bytes_out: bytes read and written
 * @windows:	windows written
 * @records:	records kept
 * @dropped:	TRC_GUEST records left out
 * @truncated:	the input ended inside a window or a record
 */
struct rec_xa_stats {
	uint64_t	bytes_in, bytes_out;
	uint64_t	windows, records, dropped;
	bool		truncated;
};

/**
 * rec_xenalyze_copy - copy a xentrace capture for xenalyze
 * @in, @out:	the capture and the copy (pipes allowed)
 * @out_name:	the copy's name, for messages
 *
 * Writes every record but the TRC_GUEST ones, which xenalyze cannot read,
 * in xentrace's format. Returns 0 (a truncated input too: @st says so), or
 * a negative errno with tcx_error() saying why; on a corrupt window header
 * (-EBADMSG) the records before it are written.
 */
int rec_xenalyze_copy(int in, int out, const char *out_name, struct rec_xa_stats *st);

/** rec_convert_summary_print - the human summary */
void rec_convert_summary_print(const struct rec_convert_summary *sum, FILE *f);

/** rec_convert_summary_json - the same as one JSON object */
void rec_convert_summary_json(const struct rec_convert_summary *sum, FILE *f);

/** rec_convert_summary_free - free what @sum points to */
void rec_convert_summary_free(struct rec_convert_summary *sum);

/* ---- record --xen: the hypervisor, dom0 and guests (rec-record.c) ---- */

#define REC_HV_DEFAULT_PAGES	32	/* xentrace's -S default */
#define REC_DOM0_DEFAULT_EVENT	"sched:sched_switch"

/**
 * struct rec_event_sel - one -e of an instance, as trace-cmd takes it
 * @event:	"sys", "sys:event" or "event", globs allowed
 * @filter:	-f after it: the events' filter (NULL: none)
 * @exclude:	given after -v: these events are turned off, not on
 */
struct rec_event_sel {
	const char	*event;
	const char	*filter;
	bool		exclude;
};

/**
 * struct rec_ftrace_opts - dom0's ftrace, trace-cmd record's options
 * @events:	-e (with -f, -v); none: REC_DOM0_DEFAULT_EVENT
 * @tracer:	-p: the instance's current_tracer (NULL: none)
 * @funcs, @notrace, @graph: -l, -n, -g: set_ftrace_filter,
 *		set_ftrace_notrace, set_graph_function of the instance
 * @max_graph_depth: --max-graph-depth (0: not set; a global file)
 * @stacktrace:	-T: the instance's stacktrace option
 * @sleep_us:	-s: how often dom0's buffers are read (0: 200 ms)
 * @max_kb:	-m: per-CPU KiB written at most into the file (0: no limit);
 *		pages beyond it are counted lost
 * @buffer_kb:	-b: per-CPU buffer (0: the kernel's default)
 * @cpumask:	-M: tracing_cpumask of the instance, hex (NULL: all)
 * @pids:	-P: set_event_pid (and set_ftrace_pid)
 * @filter_command: -F: only the command's events
 * @children:	-c: with -P or -F, their new children too
 * @verbose:	--verbose: libtracefs' log level (-1: unchanged)
 */
struct rec_ftrace_opts {
	const struct rec_event_sel *events;
	int			nr_events;
	const char		*tracer;
	const char *const	*funcs;
	int			nr_funcs;
	const char *const	*notrace;
	int			nr_notrace;
	const char *const	*graph;
	int			nr_graph;
	unsigned int		max_graph_depth;
	bool			stacktrace;
	unsigned long		sleep_us;
	unsigned long		max_kb;
	unsigned int		buffer_kb;
	const char		*cpumask;
	const int		*pids;
	int			nr_pids;
	bool			filter_command;
	bool			children;
	int			verbose;
};

/**
 * struct rec_guest_args - what follows one -A on the command line
 * @name:	--name: the guest's name in its file name (trace-NAME.dat)
 *		and GUEST entry (NULL: from the -A argument)
 * @argv, @argc: its record options as words for the agent, sent in
 *		TRACE_REQ after "-C x86-tsc --file-version 6"
 */
struct rec_guest_args {
	const char		*name;
	const char *const	*argv;
	int			argc;
};

/**
 * struct rec_record_opts - one `record --xen`
 * @output:	the hypervisor's trace.dat; dom0's goes beside it with -dom0
 *		before the extension (trace-dom0.dat)
 * @raw:	also keep the capture in xentrace format (NULL: no)
 * @summary_json: the closing summary as JSON ("-": stdout; NULL: none)
 * @no_dom0:	no dom0 ftrace
 * @duration:	stop after so many seconds (0: no limit)
 * @command:	NULL-terminated argv run while recording (NULL: none);
 *		the recording stops when it exits
 * @quiet:	no status line and no summary
 * @poll_ms:	decode what is staged at least this often (0: 1000)
 * @log:	warnings and the summary (NULL: none)
 * @dom0:	dom0's ftrace (NULL: the defaults)
 * @pages, @evt_mask, @cpumap: Xen's trace buffers: pages per pCPU, event
 *		classes, pCPUs (--xen-pages, --xen-events, --xen-cpus; 0/NULL:
 *		Xen's defaults)
 * @guests:	-A arguments: each guest's agent records into
 *		<output>-<name>.dat (rec_guest_parse_spec())
 * @guest_args:	@nr_guests entries (NULL: none): each guest's --name and
 *		options
 * @tsync:	time sync protocols offered to the guests (NULL: "xen,ptp")
 * @tsync_interval_ms: milliseconds between time sync samples, as
 *		trace-cmd's --tsync-interval: 0 at the start and the end only,
 *		negative no time sync at all
 * @secret, @secret_len: the shared secret for TCP/vsock agents
 * @guest_open_ms: each guest's whole open (0: REC_GUEST_OPEN_MS)
 * @guest_stop_ms: the stop of all guests together, from the end of the
 *		recording (0: REC_GUEST_STOP_MS); a second signal cuts it short
 * @guest_max_cpus, @guest_max_meta, @guest_max_bytes: rec_guest_opts'
 *		@max_cpus, @max_meta and @max_bytes, for every guest
 * @argv, @argc: the recorder's own command line, for the summary JSON
 * @session:	the session directory (NULL: none), @run of @repeat runs
 * @fail_on_loss: --fail-on-loss, echoed in the summary JSON
 * @at_end:	called once the files are closed, before the summary JSON
 *		(NULL: none): the session's analysis; returns 0, or nonzero with
 *		why in @why; @at_end_file names what it writes
 * @result:	filled in when not NULL (losses, the command's end)
 */
struct rec_record_opts {
	const char		*output;
	const char		*raw;
	const char		*summary_json;
	const struct rec_ftrace_opts *dom0;
	bool			no_dom0;
	unsigned long		pages;
	uint32_t		evt_mask;
	const uint8_t		*cpumap;
	double			duration;
	char *const		*command;
	bool			quiet;
	int			poll_ms;
	FILE			*log;
	const char *const	*guests;
	const struct rec_guest_args *guest_args;
	int			nr_guests;
	const char		*tsync;
	int			tsync_interval_ms;
	const uint8_t		*secret;
	size_t			secret_len;
	int			guest_open_ms;
	int			guest_stop_ms;
	unsigned int		guest_max_cpus;
	size_t			guest_max_meta;
	uint64_t		guest_max_bytes;
	char *const		*argv;
	int			argc;
	const char		*session;
	int			run, repeat;
	bool			fail_on_loss;
	int			(*at_end)(void *ctx, char *why, size_t len);
	void			*at_end_ctx;
	const char		*at_end_file;
	struct rec_record_result *result;
};

/**
 * struct rec_record_result - what a recording lost and how its command ended
 * @lost_xen:	records Xen lost (its LOST_RECORDS counts)
 * @lost_dom0:	events dom0's ring buffer missed
 * @lost_guests: events the guests missed plus their malformed pages
 * @exited, @exit_status: the command exited with that status
 * @signaled, @signal: the command was killed by that signal
 * @interrupted: a signal (SIGINT, SIGTERM, SIGHUP) stopped the recording
 */
struct rec_record_result {
	uint64_t	lost_xen, lost_dom0, lost_guests;
	bool		exited, signaled, interrupted;
	int		exit_status, signal;
};

/**
 * rec_record - record until a signal, the duration or the command's end
 * @status:	the command's exit status (128 + signal when killed), or 0
 *
 * Every stop leaves every file valid. Returns 0, or a negative errno with
 * tcx_error() saying why (-ENOSPC: the disk filled; the files are closed
 * valid).
 */
int rec_record(const struct rec_record_opts *o, int *status);

/**
 * rec_parse_evt_mask - an event mask: class names joined by ',' (sched,
 * hvm, pv, mem, hw, gen, dom0op, shadow, guest, all) or a hex number
 */
int rec_parse_evt_mask(const char *s, uint32_t *mask);

/** rec_parse_cpu_mask - "all", a hex mask or a list "0-3,5,7" into @map */
int rec_parse_cpu_mask(const char *s, uint8_t *map, size_t bytes);

/** rec_dom0_path - @output with "-dom0" before its extension (malloc'ed) */
char *rec_dom0_path(const char *output);

/* ---- guests (record -A, rec-guest.c): the host's side of agent sessions ---- */

struct rec_guest;

/* How a guest's agent is reached. */
enum rec_guest_kind {
	REC_GUEST_XEN,		/* libxenvchan, found through xenstore */
	REC_GUEST_TCP,		/* ip:port, as trace-cmd's -A ip:port */
	REC_GUEST_VSOCK,	/* cid:port or name@cid:port */
};

/**
 * struct rec_guest_spec - a parsed -A argument
 * @name:	the guest's name in file names (trace-<name>.dat) and GUEST
 * @xen_name:	Xen, by name: the domain name to look up in xenstore
 * @by_domid:	Xen, by number: @domid was given
 * @domid:	Xen: the domain (resolved from @xen_name by rec_guest_open())
 * @host:	TCP: the agent's address
 * @cid:	vsock: the guest's context id
 * @port:	TCP/vsock: the agent's control port (default 823)
 */
struct rec_guest_spec {
	enum rec_guest_kind kind;
	char		name[64];
	char		xen_name[64];
	bool		by_domid;
	unsigned int	domid;
	char		host[256];
	unsigned int	cid;
	unsigned int	port;
};

/**
 * rec_guest_parse_spec - read an -A argument: "name" or "domid" (a Xen
 * guest over vchan), "ip:port", "[v6]:port" or "host:port" (TCP),
 * "cid:port" or "name@cid[:port]" (vsock, as trace-cmd)
 *
 * Returns 0 or -EINVAL with tcx_error() saying why.
 */
int rec_guest_parse_spec(const char *spec, struct rec_guest_spec *out);

/**
 * rec_guest_file_path - @output with "-<name>" before its extension, as
 * trace-cmd names guest files: trace.dat -> trace-guest1.dat (malloc'ed)
 */
char *rec_guest_file_path(const char *output, const char *name);

/* The guests' budget by default: see docs/threat-model.md. */
#define REC_GUEST_OPEN_MS	10000		/* the whole open of one guest */
#define REC_GUEST_STOP_MS	15000		/* the stop of all guests together */
#define REC_GUEST_MAX_CPUS	64		/* a network agent's CPUs */
#define REC_GUEST_MAX_META	(64u << 20)	/* kallsyms of a big kernel is ~10 MiB */

/**
 * struct rec_guest_opts - one -A guest
 * @spec:	the -A argument
 * @name:	the guest's name (--name) instead of the -A argument's, in
 *		its file name and GUEST entry (NULL: the argument's)
 * @output:	the host's trace.dat; the guest file goes beside it
 * @events:	-e for the guest's agent (none: the agent's default)
 * @buffer_kb:	-b: per-CPU buffer in the guest (0: the agent's)
 * @clock:	-C: the guest's trace clock (NULL: "x86-tsc", one clock
 *		with the hypervisor and dom0)
 * @file_version: the guest file we write, 6 or 7 (0: 7); the agent is
 *		always asked for version 6 metadata, which is what we parse
 * @secret:	the shared secret for TCP/vsock agents (NULL: none)
 * @host_traceid: our trace id in TRACE_REQ (0: a random one)
 * @mult, @shift: TSC2NSEC for the guest file (mult 0: none; see also
 *		rec_guest_set_tsc2nsec())
 * @tsync:	time sync protocols to offer, joined by ',' ("xen,ptp", the
 *		default with NULL), or "none". "xen" is offered only to a Xen
 *		guest whose domain libxenctrl describes (TSC mode, rate, PV or
 *		not); network guests are offered "ptp" alone
 * @tsync_interval: seconds between sync samples while recording (0: at
 *		the start and the end only)
 * @cpu_khz:	the host's TSC rate as Xen gives it (xc_physinfo; 0: ask)
 * @timeout_ms:	to connect (0: 5000)
 * @open_timeout_ms: the whole open, from the connect to the last byte of
 *		metadata and the first time sync sample (0: REC_GUEST_OPEN_MS);
 *		a guest that misses it fails the open with -ETIMEDOUT
 * @close_timeout_ms: after CLOSE, for the last pages and CLOSE_RESP
 *		(0: 10000)
 * @max_cpus:	the most CPUs a TCP/vsock agent may claim (0:
 *		REC_GUEST_MAX_CPUS); a Xen guest may claim its domain's vCPUs
 * @max_meta:	the most metadata bytes (0: REC_GUEST_MAX_META)
 * @max_bytes:	page bytes written into the guest's file, at most (0: no
 *		limit); at the limit the guest's stream ends, not the recording
 * @extra_args: more record options for the agent, sent as they are after
 *		-C, --file-version, @events and @buffer_kb (ours refuses
 *		anything off its allow-list)
 * @log:	warnings (NULL: none)
 * @taken, @ntaken: the files this run writes already (the host's, dom0's,
 *		--raw, other guests'): a guest whose file would be one of them
 *		is refused before anything is written
 * @stage:	write the file under rec_stage_path()'s name until
 *		rec_guest_commit() (record --xen: a start that fails leaves an
 *		older file of the name whole); closed uncommitted, it is removed
 */
struct rec_guest_opts {
	const char		*spec;
	const char		*name;
	const char		*output;
	const char *const	*events;
	int			nr_events;
	unsigned int		buffer_kb;
	const char		*clock;
	int			file_version;
	const uint8_t		*secret;
	size_t			secret_len;
	uint64_t		host_traceid;
	uint32_t		mult, shift;
	const char		*tsync;
	double			tsync_interval;
	uint32_t		cpu_khz;
	int			timeout_ms;
	int			open_timeout_ms;
	int			close_timeout_ms;
	unsigned int		max_cpus;
	size_t			max_meta;
	uint64_t		max_bytes;
	const char *const	*extra_args;
	int			nr_extra_args;
	FILE			*log;
	const char *const	*taken;
	int			ntaken;
	bool			stage;
};

/**
 * struct rec_guest_summary - how a guest's capture went
 * @died:	the agent or the guest went away before the end (or never
 *		answered CLOSE): the file is valid up to its last page
 * @error:	the file could not be written (-ENOSPC...), 0 if fine
 * @note:	what happened, for people ("" if nothing)
 * @bytes:	page bytes received; @pages/@events/@missed as written
 * @bad_pages:	pages the guest sent that were malformed and skipped
 * @cut_bytes:	bytes of a last page cut short (an agent that died mid-page)
 * @tsync_proto: the time sync protocol the agent chose ("xen", "ptp"; ""
 *		for none)
 * @tsync_shift: the guest file got its TIME_SHIFT (host clock)
 * @tsync_samples: sampling points that went through (start, every
 *		interval, end)
 * @tsync_rounds: xen: marker rounds used by the solve; ptp: samples per vCPU
 * @tsync_refused: samples refused (outside the host's window, an offset or
 *		a gap no clock has)
 * @tsync_bound_ns: xen: the largest error of any offset used, ns; -1 when
 *		there is none (ptp, an assumed offset, no sync)
 * @tsync_first_s: seconds from the start of the guest's open to its first
 *		time sync sample done (the session's setup); -1: none
 * @options_dropped: options of the agent's metadata not written into the
 *		file (not on dom0's allow-list, or failing its checks)
 * @header_page_differs: the agent's header page text was not dom0's own
 *		for its long size and page size (dom0's was written)
 * @abandoned:	"open" (missed the open deadline), "stop" (missed the
 *		stop's), or ""
 * @limit:	the limit that ended the guest's stream ("max-bytes"), or ""
 * @tsync_note:	the tsync summary line (tsync_summary_line()), or why the
 *		file has no TIME_SHIFT; the file itself is never affected
 */
struct rec_guest_summary {
	char		name[64];
	char		path[512];
	enum rec_guest_kind kind;
	unsigned int	domid;
	int		cpus;
	uint64_t	traceid;
	uint64_t	bytes, pages, events, missed, bad_pages, cut_bytes;
	double		seconds;
	bool		died;
	int		error;
	char		note[256];
	char		tsync_proto[16];
	bool		tsync_shift;
	uint32_t	tsync_samples, tsync_rounds, tsync_refused;
	int64_t		tsync_bound_ns;
	double		tsync_first_s;
	char		tsync_note[256];
	uint32_t	options_dropped;
	bool		header_page_differs;
	char		abandoned[8];
	char		limit[16];
};

/**
 * rec_guest_open - find the guest's agent, TRACE_REQ with the allow-listed
 * options, TRACE_RESP, open its per-CPU streams, receive its metadata into
 * <output>-<name>.dat (on disk when this returns) and start the thread
 * that streams its pages into that file
 *
 * The agent traces from the moment it has sent its metadata: open guests
 * right before starting the host's own tracing. Clear errors (in @err)
 * for an unknown or dead guest, one without an agent, an agent that
 * refuses (its reason), bad metadata. Nothing is left on disk on failure.
 * An agent refusing because the guest lacks an event it was given gives
 * -ENOMSG: that guest alone fails (record --xen goes on without it).
 *
 * Time sync (@o->tsync): the protocols are offered in TRACE_REQ; if the
 * agent picks one, its stream is connected here. "ptp" samples once
 * before the metadata (a stock trace-cmd agent waits for that first
 * round); "xen" samples from a thread of this guest as soon as it
 * returns: open a guest once the hypervisor's buffers are on and its
 * records reach rec_guest_hv_record(). Then every @o->tsync_interval
 * seconds, and once more when the stop is requested. A time sync that
 * fails never fails the open: the summary says why.
 */
int rec_guest_open(struct rec_guest **out, const struct rec_guest_opts *o);

/** rec_guest_name - the guest's name (in its file name and GUEST entry) */
const char *rec_guest_name(const struct rec_guest *g);

/** rec_guest_output - the guest file's path */
const char *rec_guest_output(const struct rec_guest *g);

/** rec_guest_id - the guest file's TRACEID (the agent's trace id) */
uint64_t rec_guest_id(const struct rec_guest *g);

/** rec_guest_domid - the guest's Xen domain, or -1 for a TCP/vsock guest */
int rec_guest_domid(const struct rec_guest *g);

/** rec_guest_cpus - the guest's CPU count */
int rec_guest_cpus(const struct rec_guest *g);

/** rec_guest_stats - the counters so far (any thread, while it runs) */
void rec_guest_stats(struct rec_guest *g, struct rec_guest_summary *s);

/**
 * rec_guest_request_stop - ask the guest's thread to send CLOSE and
 * finish, without waiting (stop several guests at once, then
 * rec_guest_stop() each). With time sync, the guest's tsync thread first
 * takes the last sample and sends the protocol's STOP, then CLOSE goes
 * out: request the stop while the hypervisor still traces.
 */
void rec_guest_request_stop(struct rec_guest *g);

/**
 * rec_guest_stopped - whether a stop rec_guest_request_stop() asked for
 * has finished (CLOSE_RESP, the agent gone or the wait over), without
 * blocking: the caller keeps feeding rec_guest_hv_record() until then, as
 * the last time sync sample needs the hypervisor's records of its markers
 */
bool rec_guest_stopped(struct rec_guest *g);

/**
 * rec_guest_set_deadline - end everything the guest's threads wait for by
 * @ns (CLOCK_MONOTONIC; 0: no deadline): the CLOSE, the last pages, the
 * last time sync sample. A guest whose stop is not over by then is
 * abandoned: its file ends at its last whole page, and its summary's
 * @abandoned says "stop". Any thread; an earlier deadline replaces a later.
 */
void rec_guest_set_deadline(struct rec_guest *g, uint64_t ns);

/**
 * rec_guest_stop - CLOSE, the last pages, CLOSE_RESP (close_timeout_ms at
 * most), thread joined; returns the file's error or 0 (a guest that died
 * is not an error: see the summary)
 */
int rec_guest_stop(struct rec_guest *g);

/**
 * rec_guest_close - stop if needed, finish the file, fill @sum (may be
 * NULL), free @g (safe on NULL); returns the file's error or 0
 *
 * With time sync, once the file is finished: the solve over every
 * hypervisor record and guest page seen, and the TIME_SHIFT appended to
 * the guest file for the host's trace id (a version 7 file). A sync that
 * fails leaves the file as it is (the summary's tsync_note says why); it
 * is not an error.
 */
int rec_guest_close(struct rec_guest *g, struct rec_guest_summary *sum);

/** rec_guest_summary_print - one guest's lines of the closing summary */
void rec_guest_summary_print(const struct rec_guest_summary *s, FILE *f);

/** rec_guest_summary_json - the same as one JSON object (no newline) */
void rec_guest_summary_json(const struct rec_guest_summary *s, FILE *f);

#endif /* RECORDER_H */
