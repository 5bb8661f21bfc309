/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tdat: a streaming writer of trace-cmd's trace.dat files (versions 6 and 7,
 * uncompressed), for data that does not come from the local tracefs (and a
 * few helpers, at the end, for the metadata of an instance that does).
 *
 * Usage:
 *	w = tdat_open(path, &params);
 *	tdat_add_event_format(w, "xen", fmt);	   ... metadata
 *	tdat_add_cmdline(w, pid, comm);
 *	tdat_set_traceid(w, id);
 *	tdat_start_data(w);			   metadata is now on disk
 *	tdat_write_event(w, cpu, ts, payload, len); ... any order across CPUs,
 *						   ts non-decreasing per CPU
 *	tdat_close(w);				   final sizes, compacted file
 *
 * Pages are written to the file as they fill, each CPU into its own region of
 * the file; the table of per-CPU sizes is patched on disk after every batch
 * of pages, so the file is a valid trace.dat at all times after
 * tdat_start_data(): a crash or a kill leaves every flushed page readable.
 * Memory per CPU is one write batch: 128 KiB (or one page if larger) at
 * first, doubling up to params.batch_bytes while the CPU fills a batch in
 * under 0.1 s.
 * "Safe" means safe against the process dying: nothing is fsync'ed, so a
 * power loss can still lose what the kernel had not written back.
 *
 * A writer is not thread-safe: one thread per writer, or a lock around it.
 *
 * All functions return 0 (or a positive count) on success and a negative
 * errno value on failure (those returning a pointer: NULL with errno set);
 * tcx_error() (tcx-util.h) then holds a message that names the offending
 * value. A writer that failed writing stays failed: later calls fail with
 * the first error and set its message again.
 */
#ifndef TDAT_H
#define TDAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Bits of a ring-buffer page's commit word. */
#define TDAT_COMMIT_MASK	((1u << 27) - 1)
#define TDAT_MISSED_EVENTS	(1u << 31)
#define TDAT_MISSED_STORED	(1u << 30)

/* Event header type_len values (kernel ring buffer). */
#define TDAT_TYPE_PADDING	29
#define TDAT_TYPE_TIME_EXTEND	30
#define TDAT_TYPE_TIME_STAMP	31

/* trace.dat option ids (trace-cmd's enum order). */
enum tdat_option_id {
	TDAT_OPT_DONE		= 0,
	TDAT_OPT_DATE		= 1,
	TDAT_OPT_CPUSTAT	= 2,
	TDAT_OPT_BUFFER		= 3,
	TDAT_OPT_TRACECLOCK	= 4,
	TDAT_OPT_UNAME		= 5,
	TDAT_OPT_HOOK		= 6,
	TDAT_OPT_OFFSET		= 7,
	TDAT_OPT_CPUCOUNT	= 8,
	TDAT_OPT_VERSION	= 9,
	TDAT_OPT_PROCMAPS	= 10,
	TDAT_OPT_TRACEID	= 11,
	TDAT_OPT_TIME_SHIFT	= 12,
	TDAT_OPT_GUEST		= 13,
	TDAT_OPT_TSC2NSEC	= 14,
};

/* TIME_SHIFT flags. */
#define TDAT_TSHIFT_INTERPOLATE	0x1

struct tdat_writer;

/**
 * struct tdat_params - what must be known before any metadata is written
 * @version:	file version, 6 or 7 (0 means 7)
 * @page_size:	ring-buffer page size in bytes (0 means 4096); a power of two
 *		between 4096 and 1 MiB
 * @max_cpus:	the highest CPU count the data may need (1..TDAT_MAX_CPUS,
 *		0 for max(@cpus, 256)); the count written is the highest CPU
 *		that got data plus one, or @cpus if larger
 * @cpus:	the CPU count to declare even when some CPUs stay empty (the
 *		pCPU count of a host); 0 to derive it from the data
 * @clock:	the trace clock name, e.g. "x86-tsc" or "local" (NULL: "local")
 * @region_size: bytes reserved per CPU in the file before it must grow
 *		(0: a default); regions grow as needed, this is only a hint
 * @writeback:	start writing the pages back to disk as they are written
 *		(sync_file_range, no wait, every few MiB per CPU): closing the
 *		holes between the regions at the end waits for every dirty
 *		page, so a file written in one go (convert) is done sooner;
 *		the writeback's CPU is then the writer's, not the flusher's
 * @batch_bytes: the most finished pages a CPU holds before one write of
 *		them all (0: 128 KiB; at most 4 MiB, at least a page): fewer,
 *		larger writes cost a busy writer less CPU, and memory per CPU.
 *		A CPU's batch starts at 128 KiB and doubles each time it
 *		filled in under 0.1 s, so a quiet CPU never touches the
 *		memory of a large one. The pages of an unfinished batch are
 *		not in the file yet
 * @shared:	several threads write data at once, each to CPUs no other
 *		thread touches (tdat_write_event(), tdat_reserve(), runs,
 *		tdat_mark_missed()): their pages are made side by side and
 *		written to the file one batch at a time, under a lock (ext4
 *		takes one per write anyway). Everything else (metadata,
 *		tdat_flush(), tdat_close(), tdat_get_stats()) stays one
 *		thread's, while no other writes.
 * @direct:	write the data pages with O_DIRECT where the file system
 *		takes it (statx's alignments; those of tdat_write_pages()
 *		where the caller's memory meets them): no copy into the page
 *		cache and no writeback later, which are most of what a busy
 *		recorder costs the kernel; each write then waits for the
 *		disk. Elsewhere, and after a write it refuses, buffered
 *		writes as without it; tdat_is_direct() tells which
 */
struct tdat_params {
	int		version;
	uint32_t	page_size;
	int		max_cpus;
	int		cpus;
	const char	*clock;
	uint64_t	region_size;
	bool		writeback;
	uint32_t	batch_bytes;
	bool		shared;
	bool		direct;
};

#define TDAT_MAX_CPUS	4096

/**
 * struct tdat_time_shift_cpu - TIME_SHIFT samples of one guest CPU
 * @count:	number of samples (at least 1; trace-cmd readers crash on 0)
 * @ts:		guest timestamps, all different (readers keep one per ts)
 * @offset:	host = ((guest * scaling) >> frac) + offset; 0 is fine (the
 *		3.1.6 reader keeps such samples; only trace-cmd's own tsync
 *		collection drops them)
 * @scaling:	multiplier > 0, or NULL for 1; must be 1 with one sample
 *		(readers then apply ts + offset only)
 * @frac:	fraction bits 0..63, or NULL for 0
 */
struct tdat_time_shift_cpu {
	uint32_t	count;
	const uint64_t	*ts;
	const int64_t	*offset;
	const int64_t	*scaling;
	const int64_t	*frac;
};

/* Writer statistics, per CPU or summed. */
struct tdat_stats {
	uint64_t	events;		/* events encoded */
	uint64_t	pages;		/* pages written */
	uint64_t	bytes;		/* data bytes in pages, headers included */
	uint64_t	missed;		/* missed events marked (counted ones) */
	uint64_t	bad_pages;	/* raw pages rejected */
};

/**
 * tdat_open - start a new trace.dat file
 * @path:	output path; "-" is not supported (the file is patched in place)
 * @params:	the parameters above
 *
 * Returns a writer, or NULL with errno set and the reason in tcx_error().
 */
struct tdat_writer *tdat_open(const char *path, const struct tdat_params *params);

/* ---- metadata, before tdat_start_data() ---- */

/**
 * tdat_set_header_page - use a kernel's events/header_page text
 *
 * Without it the writer synthesises the layout of a 64-bit kernel (8-byte
 * commit, data at offset 16). The commit field size sets where data starts.
 */
int tdat_set_header_page(struct tdat_writer *w, const char *text, size_t len);

/**
 * tdat_header_page_text - the kernel's events/header_page text for a ring
 * buffer of @page_size-byte pages and @long_size-byte longs (4 or 8), the
 * one tdat writes by default for 8, malloc'ed, its length in @len
 *
 * Returns the text, or NULL with errno set (EINVAL, ENOMEM).
 */
char *tdat_header_page_text(uint32_t page_size, int long_size, size_t *len);

/**
 * tdat_add_event_format - add the format text of one event of @system
 * @text:	the whole format file text ("name:", "ID:", "format:", fields,
 *		"print fmt:"); the ID in it is the payload's common_type
 *
 * Systems are written in the order first seen. Returns -EEXIST for an ID
 * given twice.
 */
int tdat_add_event_format(struct tdat_writer *w, const char *system, const char *text);

/** tdat_add_ftrace_format - add a format of the "ftrace" system (e.g. print) */
int tdat_add_ftrace_format(struct tdat_writer *w, const char *text);

/** tdat_set_kallsyms - /proc/kallsyms text to store (default: empty) */
int tdat_set_kallsyms(struct tdat_writer *w, const char *text, size_t len);

/** tdat_set_printk - printk_formats text to store (default: empty) */
int tdat_set_printk(struct tdat_writer *w, const char *text, size_t len);

/**
 * tdat_add_cmdline - name task @pid @comm (comm truncated to 15 chars)
 *
 * Also after tdat_start_data() in a version 7 file: tdat_close() then
 * writes a second cmdlines section (all the lines) after the data and
 * points the chained options section at it. A file killed before that
 * keeps only the cmdlines given before tdat_start_data(). Version 6:
 * -EBUSY after tdat_start_data().
 */
int tdat_add_cmdline(struct tdat_writer *w, int pid, const char *comm);

/**
 * tdat_add_cmdlines - tdat_add_cmdline() for each "pid comm" line of @text,
 * tracefs's saved_cmdlines format (@len bytes, not necessarily
 * NUL-terminated)
 *
 * A line counts if it is a decimal pid, one space and a comm that is not
 * empty (it may hold spaces); others are skipped. Returns the lines added,
 * or the first error of tdat_add_cmdline().
 */
int tdat_add_cmdlines(struct tdat_writer *w, const char *text, size_t len);

/** tdat_set_traceid - the TRACEID option (non-zero to be matched by GUEST) */
int tdat_set_traceid(struct tdat_writer *w, uint64_t id);

/** tdat_set_uname - the UNAME option text ("sysname node release machine") */
int tdat_set_uname(struct tdat_writer *w, const char *uname);

/** tdat_set_version - the VERSION option text (default: this tool's) */
int tdat_set_version(struct tdat_writer *w, const char *version);

/**
 * tdat_set_tsc2nsec - the TSC2NSEC option: ns = (ts * mult) >> shift
 *
 * @mult > 0 and @shift <= 32 (the reader's multiply is exact only then).
 * Also makes the file's clock "x86-tsc" (unless params.clock says
 * otherwise); stock readers then show converted times (verified with
 * trace-cmd 3.1.6, versions 6 and 7).
 */
int tdat_set_tsc2nsec(struct tdat_writer *w, uint32_t mult, uint32_t shift, uint64_t offset);

/**
 * tdat_add_guest - one GUEST option: @name's vCPU i ran as host task pids[i]
 * @traceid:	the guest file's TRACEID
 */
int tdat_add_guest(struct tdat_writer *w, const char *name, uint64_t traceid,
		   uint32_t nvcpu, const uint32_t *pids);

/**
 * tdat_set_time_shift - the TIME_SHIFT option of a guest file
 * @peer_id:	the host file's TRACEID
 * @flags:	TDAT_TSHIFT_INTERPOLATE or 0
 * @ncpu:	number of entries in @cpus; every entry needs count >= 1 and all
 *		counts must be equal (trace-cmd's reader assumes so)
 */
int tdat_set_time_shift(struct tdat_writer *w, uint64_t peer_id, uint32_t flags,
			uint32_t ncpu, const struct tdat_time_shift_cpu *cpus);

/**
 * tdat_publish_time_shift - make this the file's TIME_SHIFT now, during
 * the data (version 7): a kill from here on leaves a file that carries it.
 * Each call replaces the previous one; the file holds one at a time, in
 * one of two slots before the data (the link switches in one 8-byte
 * write). May run on another thread than the one writing pages, until
 * tdat_close() starts. Arguments as tdat_set_time_shift(). Returns 0,
 * -ENOSPC when it does not fit a slot (fewer samples may),
 * -EOPNOTSUPP for version 6, -EINVAL outside the data; tcx_error() says why.
 */
int tdat_publish_time_shift(struct tdat_writer *w, uint64_t peer_id, uint32_t flags,
			    uint32_t ncpu, const struct tdat_time_shift_cpu *cpus);

/** tdat_add_cpustat - CPUSTAT text of @cpu (per_cpu/cpuN/stats format) */
int tdat_add_cpustat(struct tdat_writer *w, int cpu, const char *text);

/** tdat_add_option - any other option, raw payload in file endianness */
int tdat_add_option(struct tdat_writer *w, uint16_t id, const void *data, uint32_t size);

/**
 * tdat_start_data - write all metadata and open the per-CPU data regions
 *
 * After this, metadata calls fail with -EBUSY; options and cmdlines can
 * still be added to a version 7 file and are written by tdat_close() after
 * the data (a chained options section, a second cmdlines section).
 */
int tdat_start_data(struct tdat_writer *w);

/* ---- data ---- */

/**
 * tdat_reserve_region - give @cpu its region now, after the regions
 * reserved before it, with room for @bytes (rounded up to whole pages; 0:
 * params.region_size), instead of at the end of the file when its first
 * batch is written
 *
 * After tdat_start_data() and before any data, from one thread: the file's
 * layout is then the order of the calls, whatever order the CPUs write in
 * (threads of a params.shared writer), and a region that never fills never
 * grows. Room not used is given back by tdat_close(), as every gap is.
 * Returns 0, -EINVAL outside that window or for a CPU beyond max_cpus,
 * -EEXIST for a CPU that has its region, or the file's error.
 */
int tdat_reserve_region(struct tdat_writer *w, int cpu, uint64_t bytes);

/**
 * tdat_write_event - encode one event on @cpu
 * @ts:		absolute timestamp in the file's clock; must not go backwards on
 *		one CPU (-ERANGE)
 * @payload:	the event record, starting with common_type (u16),
 *		common_flags (u8), common_preempt_count (u8), common_pid (s32)
 * @len:	payload bytes, at least 8, at most page_size - page header -
 *		long size - 8 (4064 with 4 KiB pages and 8-byte longs), so
 *		that any page can still hold a missed-events count (-EMSGSIZE);
 *		odd sizes are zero-padded to 4 bytes as the kernel does
 *
 * Deltas of 2^27 and more get a TIME_EXTEND; gaps of 2^59 and more an
 * absolute TIME_STAMP or a new page; payloads over 112 bytes the long form.
 */
int tdat_write_event(struct tdat_writer *w, int cpu, uint64_t ts,
		     const void *payload, size_t len);

/**
 * tdat_reserve - room for a @len-byte payload on @cpu at @ts, to be filled
 * by the caller before the next call on that CPU and before tdat_flush() or
 * tdat_close() (zero-copy tdat_write_event)
 *
 * Returns a pointer into the page, or NULL (the reason in tcx_error()).
 */
void *tdat_reserve(struct tdat_writer *w, int cpu, uint64_t ts, size_t len);

/*
 * The kernel ring buffer's small events, which tdat_run_reserve() takes:
 * type_len 1..28 (payloads up to 112 bytes) and a delta in 27 bits.
 */
#define TDAT_DELTA_BITS		27
#define TDAT_DELTA_MAX		((1ull << TDAT_DELTA_BITS) - 1)
#define TDAT_SMALL_MAX		112

/** tdat_evhdr - an event's header word: type_len and delta, as the kernel's bitfield */
static inline uint32_t tdat_evhdr(uint32_t type_len, uint32_t delta)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return (type_len << 27) | delta;
#else
	return type_len | (delta << 5);
#endif
}

/**
 * struct tdat_run - a CPU's open page, lent to a writer of many small events
 * @pos:	where the next event's header goes
 * @end:	the end of the page's room
 * @ts:		the timestamp of the last event
 * @events:	events added through the run
 *
 * Between tdat_run_begin() and tdat_run_end() the CPU's page belongs to
 * the run: no other call may touch that CPU (tdat_reserve(),
 * tdat_write_event(), tdat_mark_missed(), tdat_flush(), tdat_close()...)
 * until tdat_run_end() gives it back.
 */
struct tdat_run {
	uint8_t		*pos;
	uint8_t		*end;
	uint64_t	ts;
	uint64_t	events;
};

/**
 * tdat_run_begin - lend @cpu's open page to @run
 *
 * Without an open page (none yet, or the previous one was finished) the run
 * has no room, and tdat_run_reserve() sends every event to tdat_reserve().
 */
void tdat_run_begin(struct tdat_writer *w, int cpu, struct tdat_run *run);

/** tdat_run_end - give @cpu's page back, with the events @run added to it */
void tdat_run_end(struct tdat_writer *w, int cpu, struct tdat_run *run);

/**
 * tdat_run_reserve_rounded - tdat_run_reserve() for a caller that checked
 * the payload's length once: @rlen is it rounded up to 4, from 8 to
 * TDAT_SMALL_MAX; the last 4 bytes are zeroed
 *
 * Returns NULL where tdat_reserve() must take the event (a full page, a
 * delta too large, a timestamp that goes back): end the run first.
 */
static inline void *tdat_run_reserve_rounded(struct tdat_run *run, uint64_t ts, size_t rlen)
{
	uint64_t delta = ts - run->ts;	/* going back wraps: too large */
	uint8_t *e = run->pos;
	uint32_t hdr;

	if (delta > TDAT_DELTA_MAX || (size_t)(run->end - e) < 4 + rlen)
		return NULL;
	hdr = tdat_evhdr((uint32_t)(rlen >> 2), (uint32_t)delta);
	memcpy(e, &hdr, 4);
	memset(e + rlen, 0, 4);
	run->pos = e + 4 + rlen;
	run->ts = ts;
	run->events++;
	return e + 4;
}

/**
 * tdat_run_reserve - tdat_reserve() in @run's page, inline: room for a
 * @len-byte payload at @ts, its rounding bytes zeroed
 *
 * Returns NULL where tdat_reserve() must take the event (a full page, a
 * delta or a payload too large, a timestamp that goes back): end the run
 * first.
 */
static inline void *tdat_run_reserve(struct tdat_run *run, uint64_t ts, size_t len)
{
	if (len - 8 > TDAT_SMALL_MAX - 8)
		return NULL;
	return tdat_run_reserve_rounded(run, ts, (len + 3) & ~(size_t)3);
}

/**
 * tdat_mark_missed - events were lost on @cpu before the next event
 * @count:	how many, or 0 when unknown
 *
 * Closes the current page; the next one carries MISSED_EVENTS (and the
 * count, MISSED_STORED, when known), which readers report as lost events.
 * Readers report a loss with the event after it: a loss with no later
 * event on @cpu is only counted in the stats.
 */
int tdat_mark_missed(struct tdat_writer *w, int cpu, uint64_t count);

/**
 * tdat_write_page - store one raw ring-buffer page from a kernel as it is
 *
 * The page must be page_size bytes in the file's layout (the header page's
 * long size) with a commit within it, known flag bits only, and events that
 * walk to exactly the commit; a bad page is counted in stats.bad_pages, not
 * written, and -EBADMSG returned. An empty page (commit 0) is skipped and
 * returns 0. A page starting before the CPU's last timestamp is -ERANGE.
 */
int tdat_write_page(struct tdat_writer *w, int cpu, const void *page);

/**
 * tdat_write_pages - tdat_write_page() for @n pages in a row at @pages
 * @out_of_order: incremented for each page refused with -ERANGE
 *
 * Each page is checked and counted as tdat_write_page() does; bad pages
 * (stats.bad_pages) and pages out of order are skipped, the rest are
 * written from @pages in one pwritev() per call, not copied (a page that
 * must carry a loss mark is). Returns 0, or the error that failed the
 * writer; the pages after it are not written.
 */
int tdat_write_pages(struct tdat_writer *w, int cpu, const void *pages, size_t n,
		     uint64_t *out_of_order);

/* ---- reading a ring-buffer page ---- */

/*
 * The one walk over a kernel ring-buffer page that everything in dom0 uses
 * (tdat_write_page()'s check, time sync's marker scan): it follows
 * libtraceevent's kbuffer, which trace readers use, rule for rule (padding
 * and type-0 lengths, TIME_EXTEND, TIME_STAMP keeping the top five bits, a
 * commit of 27 bits), and refuses a page on which kbuffer would read
 * outside the commit or a kernel never writes: unknown commit bits, a commit
 * past the page, an entry or its length word cut by the commit, a type-0
 * length under 4, a walk that does not end exactly at the commit.
 */

/**
 * struct tdat_page_walk - one walk over a page (tdat_page_walk_init())
 * @data:	the page's data, after its header
 * @commit:	data bytes the commit word covers
 * @pos:	offset in @data of the next entry
 * @flags:	the whole commit word
 * @ts:		the time reached: the page's base, then each entry's
 */
struct tdat_page_walk {
	const uint8_t	*data;
	uint32_t	commit;
	uint32_t	pos;
	uint64_t	flags;
	uint64_t	ts;
};

/**
 * struct tdat_page_event - one event as a reader returns it
 * @ts:		its time (kbuffer_read_event())
 * @data:	its payload, inside the commit
 * @len:	payload bytes (kbuffer_event_size()), type-0 lengths rounded up to 4
 * @offset:	where its header starts in the page's data
 */
struct tdat_page_event {
	uint64_t	ts;
	const uint8_t	*data;
	uint32_t	len;
	uint32_t	offset;
};

/**
 * tdat_page_walk_init - start walking @page (@page_size bytes, a commit word
 * of @long_size bytes, 4 or 8, in host byte order)
 *
 * Returns 0, -EINVAL for a page too small or another long size, or
 * -EBADMSG for a commit word no kernel writes (tcx_error() says which).
 */
int tdat_page_walk_init(struct tdat_page_walk *pw, const void *page, size_t page_size,
			int long_size);

/**
 * tdat_page_walk_next - the next event of the walk, past any padding and
 * time entries before it
 *
 * Returns 1 with @ev set, 0 at the commit, or -EBADMSG for an entry that
 * does not fit in the commit (tcx_error() gives its offset); keep calling
 * after an error and it stays an error.
 */
int tdat_page_walk_next(struct tdat_page_walk *pw, struct tdat_page_event *ev);

/**
 * tdat_page_check - walk a whole page: whether a reader can read it
 * @events:	the events on it (may be NULL)
 * @last_ts:	the time of its last entry, or its base (may be NULL)
 *
 * Returns 0, or the error of tdat_page_walk_init() or tdat_page_walk_next().
 */
int tdat_page_check(const void *page, size_t page_size, int long_size, uint64_t *events,
		    uint64_t *last_ts);

/**
 * tdat_flush - write out every partly filled page and patch the sizes
 *
 * Open pages are closed (padded): the next event starts a new page, so
 * flush on a timer, not per event.
 */
int tdat_flush(struct tdat_writer *w);

/**
 * tdat_is_direct - whether the pages made here are written with O_DIRECT:
 * asked for (params.direct), taken by the file system and not refused since
 */
bool tdat_is_direct(const struct tdat_writer *w);

/** tdat_get_stats - counters for @cpu, or summed over all CPUs if @cpu < 0 */
int tdat_get_stats(const struct tdat_writer *w, int cpu, struct tdat_stats *st);

/**
 * tdat_close - finish the file and free @w
 *
 * Flushes, writes the final sizes and any options added after
 * tdat_start_data(), and compacts the CPU regions. Safe on NULL. Returns
 * the first error met while finishing; the file is valid either way.
 */
int tdat_close(struct tdat_writer *w);

/* ---- appending to a finished file ---- */

struct tdat_appender;

/**
 * tdat_append_open - reopen a finished version 7 file to add options
 *
 * As trace-cmd does for TIME_SHIFT: the options go into a new options
 * section at the end of the file, chained from the last one. Version 6
 * files cannot take options after their data (EOPNOTSUPP).
 *
 * Returns the appender, or NULL with errno set and the reason in
 * tcx_error().
 */
struct tdat_appender *tdat_append_open(const char *path);

/** tdat_append_option - queue one option (raw payload, file endianness) */
int tdat_append_option(struct tdat_appender *a, uint16_t id, const void *data, uint32_t size);

/** tdat_append_time_shift - queue a TIME_SHIFT option, as tdat_set_time_shift() */
int tdat_append_time_shift(struct tdat_appender *a, uint64_t peer_id, uint32_t flags,
			   uint32_t ncpu, const struct tdat_time_shift_cpu *cpus);

/**
 * tdat_append_close - write the queued options, chain them, free @a; a
 * TIME_SHIFT among them then replaces every section of the chain that
 * held only a TIME_SHIFT (a live file's), so readers meet exactly one
 */
int tdat_append_close(struct tdat_appender *a);

/* ---- from a live tracefs instance (tdat-tracefs.c, libtracefs) ---- */

struct tracefs_instance;

/**
 * tdat_remove_stale_instances - rmdir the tracefs instances named @prefix
 * followed by the pid of a process that no longer exists (and, optionally,
 * '-' and more): what a recorder or agent killed outright left behind.
 * Each one removed is said on @log (NULL: quietly) after "@who: ".
 */
void tdat_remove_stale_instances(const char *prefix, FILE *log, const char *who);

/**
 * tdat_enable_event - trace-cmd's -e in @inst: "sys:event", or a name as a
 * system, else as an event; '*' globs. 0 or a negative value (nothing matched)
 */
int tdat_enable_event(struct tracefs_instance *inst, const char *spec);

/**
 * tdat_add_tracefs_format - the format of @system/@event from the tracing
 * directory libtracefs uses; the "ftrace" system goes to the ftrace section
 */
int tdat_add_tracefs_format(struct tdat_writer *w, const char *system, const char *event);

/**
 * tdat_add_ftrace_formats - every format of the ftrace system (print,
 * bprint, function...), as trace-cmd writes them whatever is enabled:
 * trace_marker writes are ftrace/print in every buffer. Returns how many.
 */
int tdat_add_ftrace_formats(struct tdat_writer *w);

/**
 * tdat_add_instance_formats - the formats of every event @inst has on (its
 * set_event) and the ftrace system's; how many events, or -ENOENT for none
 */
int tdat_add_instance_formats(struct tdat_writer *w, struct tracefs_instance *inst);

/**
 * tdat_add_saved_cmdlines - tdat_add_cmdlines() of the tracing directory's
 * saved_cmdlines (one list for all instances): the names of the tasks the
 * kernel has seen. 0 if it cannot be read.
 */
int tdat_add_saved_cmdlines(struct tdat_writer *w);

#endif /* TDAT_H */
