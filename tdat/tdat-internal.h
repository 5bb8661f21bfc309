/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tdat internals shared by the writer's source files. Not installed.
 */
#ifndef TDAT_INTERNAL_H
#define TDAT_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <sys/uio.h>

#include "tcx-util.h"
#include "tdat.h"

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

#define TDAT_EXTEND_LIMIT	(1ull << 59)	/* 27 + 32 bits of TIME_EXTEND */
#define TDAT_DEF_REGION		(4ull << 20)	/* first room, and the least growth step */
#define TDAT_GROW_DIV		8		/* grow by 1/8 of the room: st_size stays near the data */
#define TDAT_LIVE_BASE		(4u << 10)	/* live options slot: base ... */
#define TDAT_LIVE_PER_CPU	(4u << 10)	/* ... plus 128 samples per CPU */
#define TDAT_LIVE_MAX		(128u << 10)
#define TDAT_BATCH_BYTES	(128u << 10)	/* per pwrite: 32 pages of 4 KiB */
#define TDAT_BATCH_MAX		(4u << 20)	/* the most tdat_params.batch_bytes asks */
/*
 * A CPU's batch starts at TDAT_BATCH_FIRST and doubles, up to batch_bytes,
 * each time it fills in under TDAT_BATCH_GROW_NS: a busy CPU gets the few
 * large writes it needs, a quiet one touches only the pages its rate uses
 * (a page's first touch costs more than a smaller write).
 */
#define TDAT_BATCH_FIRST	(128u << 10)
/* fill times: the coarse clock is precise enough and costs no syscall */
#define TDAT_BATCH_CLOCK	CLOCK_MONOTONIC_COARSE
#define TDAT_BATCH_GROW_NS	100000000ull
#define TDAT_WRITEBACK_STEP	(4u << 20)	/* params.writeback: per CPU, per call */

/* A growable byte buffer for metadata. */
struct tdat_buf {
	char		*data;
	size_t		len;
	size_t		cap;
};

int tdat_buf_put(struct tdat_buf *b, const void *p, size_t n);
/* room for @n more bytes, exactly: a big section is not doubled */
int tdat_buf_reserve(struct tdat_buf *b, size_t n);
int tdat_buf_zero(struct tdat_buf *b, size_t n);
static inline int tdat_buf_u16(struct tdat_buf *b, uint16_t v)
{
	return tdat_buf_put(b, &v, 2);
}

static inline int tdat_buf_u32(struct tdat_buf *b, uint32_t v)
{
	return tdat_buf_put(b, &v, 4);
}

static inline int tdat_buf_u64(struct tdat_buf *b, uint64_t v)
{
	return tdat_buf_put(b, &v, 8);
}

static inline int tdat_buf_str(struct tdat_buf *b, const char *s)
{
	return tdat_buf_put(b, s, strlen(s) + 1);
}
void tdat_buf_free(struct tdat_buf *b);

/* One queued option: id and payload (file endianness). */
struct tdat_opt {
	uint16_t	id;
	uint32_t	size;
	char		*data;
};

struct tdat_optlist {
	struct tdat_opt	*v;
	int		n;
};

int tdat_optlist_add(struct tdat_optlist *l, uint16_t id, const void *data, uint32_t size);
void tdat_optlist_free(struct tdat_optlist *l);
/* Serialise a TIME_SHIFT payload after checking it; tcx_fail() says why not. */
int tdat_time_shift_build(struct tdat_buf *out, uint64_t peer_id, uint32_t flags,
			  uint32_t ncpu, const struct tdat_time_shift_cpu *cpus);

struct tdat_system {
	char		*name;
	struct tdat_buf	formats;	/* {u64 size, text} ... */
	uint32_t	count;
};

/* Batch pages faulted in at a time, ahead of the encoder (tcx_pages_alloc()). */
#define TDAT_POPULATE_PAGES	16

/* Per-CPU encoder state; the first members are the hot path's. */
struct tdat_cpu {
	uint8_t		*page;		/* current page inside batch */
	uint32_t	used;		/* data bytes used in the page */
	uint32_t	cap;		/* data bytes usable in the page */
	uint64_t	ts;		/* timestamp of the last event */
	bool		open;		/* page has a base timestamp */
	bool		missed;		/* next page carries MISSED_EVENTS */
	bool		missed_known;	/* ... and a stored count */
	uint64_t	missed_count;
	uint8_t		*batch;		/* w->batch_pages pages */
	uint32_t	nbatch;		/* finished pages in batch */
	uint32_t	limit;		/* pages the batch is written at: TDAT_BATCH_FIRST, growing */
	uint32_t	populated;	/* batch pages faulted in ahead */
	uint64_t	fill_ns;	/* when the batch began to fill */
	int		cpu;
	bool		has_region;
	bool		hidden;		/* size 0 on disk while data moves */
	uint64_t	region_off;	/* absolute file offset */
	uint64_t	region_cap;	/* bytes reserved */
	uint64_t	size;		/* bytes of pages on disk */
	uint64_t	wb_size;	/* ... of which writeback was started */
	uint64_t	wb_behind;	/* size at which the regions behind are next written back */
	struct tdat_stats st;
};

struct tdat_writer {
	/* hot */
	struct tdat_cpu	**cpu;		/* max_cpus slots, after start */
	int		live;		/* max_cpus once started, else 0 */
	uint32_t	page_size;
	uint32_t	hdr;		/* page header bytes: 8 + long size */
	uint32_t	batch_pages;	/* pages per write */

	int		fd;
	int		dfd;		/* O_DIRECT for the pages made here, or -1 */
	uint32_t	dio_mem;	/* its alignments: memory, and offsets and lengths */
	uint32_t	dio_off;
	int		version;
	int		long_size;
	int		max_cpus;
	int		want_cpus;	/* params.cpus */
	int		ncpus;		/* CPU count declared on disk */
	uint64_t	region_size;
	bool		writeback;	/* params.writeback */
	bool		shared;		/* params.shared */
	/*
	 * shared: io_lock makes batch writes (with a region's allocation
	 * or growth, which move other CPUs' regions) one at a time;
	 * err_lock (recursive) orders the first error.
	 */
	pthread_mutex_t	io_lock;
	pthread_mutex_t	err_lock;
	/* tdat_reserve_region()'s rooms, by CPU, until the region is made */
	struct tdat_resv {
		uint64_t	off;
		uint64_t	cap;	/* 0: none */
	}		*resv;
	char		*path;
	char		*clock;
	bool		started;
	bool		failed;		/* an I/O error: stop writing */
	int		first_err;	/* the failure's errno, once failed */
	char		err[TCX_ERROR_MAX];	/* and its message */

	/* metadata */
	char		*header_page;
	size_t		header_page_len;
	struct tdat_buf	ftrace;		/* {u64 size, text} ... */
	uint32_t	nftrace;
	struct tdat_system *sys;
	int		nsys;
	int		*ids;
	int		nids;
	char		*kallsyms;
	size_t		kallsyms_len;
	char		*printk;
	size_t		printk_len;
	struct tdat_buf	cmdlines;
	struct tdat_buf	late_cmdlines;	/* added after start (v7) */
	uint64_t	traceid;
	bool		has_traceid;
	char		*uname;
	char		*version_str;
	bool		has_tsc2nsec;
	uint32_t	tsc_mult, tsc_shift;
	uint64_t	tsc_offset;
	struct tdat_optlist opts;	/* GUEST, TIME_SHIFT, CPUSTAT, others */
	struct tdat_optlist late_opts;	/* added after start (v7) */

	/* file layout */
	uint64_t	cpus_field_off;	/* v6 u32 cpus / v7 CPUCOUNT payload */
	uint64_t	table_off;	/* v6 table / v7 BUFFER entries (the n) */
	uint64_t	buf_opt_off;	/* v7 BUFFER option header */
	uint64_t	table_room;	/* v6 bytes reserved for table + clock */
	uint64_t	flyrec_off;	/* v7 flyrecord section header */
	uint64_t	done_off;	/* v7 DONE payload of the last options */
	uint64_t	data_start;	/* first region */
	uint64_t	file_end;	/* logical end: regions included */
	int		nactive;	/* CPUs with a region */
	int		*active;	/* their numbers, sorted */
	bool		compacting;

	/*
	 * v7 live options (tdat_publish_time_shift(), from any thread): two
	 * slots before data_start, one linked from the first DONE at a time.
	 * live_lock orders that link against build_table()'s rewrite of DONE.
	 */
	pthread_mutex_t	live_lock;
	uint64_t	live_off;	/* slot 0; slot 1 follows */
	uint32_t	live_size;	/* bytes per slot, 0: none */
	uint64_t	live_link;	/* offset linked now, 0: none */
	uint64_t	live_next;	/* its DONE's link */
	bool		live_done;	/* finished: no more publishing */
};

/*
 * tdat_err - tcx_fail() for a call on @w: until @w has failed, also keep
 * @ret and the message for tdat_sticky()
 */
int tdat_err(struct tdat_writer *w, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* tdat_failed - whether @w has failed; a shared writer's threads may set it meanwhile */
static inline bool tdat_failed(const struct tdat_writer *w)
{
	return __atomic_load_n(&w->failed, __ATOMIC_RELAXED);
}

/* tdat_sticky - a call on a failed @w: its first error, message again */
int tdat_sticky(const struct tdat_writer *w);
void *tdat_reserve_slow(struct tdat_writer *w, int cpu, uint64_t ts, size_t len);

/* tdat-file.c */
int tdat_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
int tdat_file_flush_cpu(struct tdat_writer *w, struct tdat_cpu *c);
/* @cnt buffers of whole pages (@bytes in all) at the end of @c's region, then its size */
int tdat_file_write_cpu(struct tdat_writer *w, struct tdat_cpu *c, struct iovec *iov,
			int cnt, uint64_t bytes);
int tdat_file_patch_cpus(struct tdat_writer *w);
int tdat_file_finish(struct tdat_writer *w);
int tdat_write_metadata(struct tdat_writer *w);
int tdat_append_options_section(int fd, uint64_t done_off, const struct tdat_optlist *l,
				uint64_t *new_done_off);

/* tdat-meta.c */
void tdat_free(struct tdat_writer *w);
const char *tdat_header_event_text(void);

/* tdat-page.c */
void tdat_page_finish(struct tdat_writer *w, struct tdat_cpu *c);
int tdat_cpu_flush_all(struct tdat_writer *w, struct tdat_cpu *c);

static inline void tdat_put_long(const struct tdat_writer *w, uint8_t *p, uint64_t v)
{
	if (w->long_size == 8) {
		memcpy(p, &v, 8);
	} else {
		uint32_t v32 = v;

		memcpy(p, &v32, 4);
	}
}

/*
 * tdat_reserve()'s fast path: a small event with a small delta on an open
 * page (a closed page has cap 0, so one bounds check covers both).
 * Anything else (new page, TIME_EXTEND, long form, errors) goes to the
 * slow path.
 */
static inline __attribute__((always_inline)) uint8_t *
tdat_reserve_fast(struct tdat_writer *w, int cpu, uint64_t ts, size_t len, bool zero_tail)
{
	struct tdat_cpu *c;
	uint64_t delta;
	uint32_t rlen, hdr;
	uint8_t *e;

	if (likely((unsigned int)cpu < (unsigned int)w->live)) {
		c = w->cpu[cpu];
		if (likely(c != NULL)) {
			/* ts < c->ts wraps to a huge delta: also slow path */
			delta = ts - c->ts;
			rlen = (len + 3) & ~3u;
			if (likely(delta <= TDAT_DELTA_MAX && len - 8 <= TDAT_SMALL_MAX - 8 &&
				   c->used + 4 + rlen <= c->cap)) {
				e = c->page + w->hdr + c->used;
				hdr = tdat_evhdr(rlen >> 2, delta);
				memcpy(e, &hdr, 4);
				/* zero the rounding bytes; the caller fills len */
				if (zero_tail)
					memset(e + rlen, 0, 4);
				c->used += 4 + rlen;
				c->ts = ts;
				c->st.events++;
				return e + 4;
			}
		}
	}
	return tdat_reserve_slow(w, cpu, ts, len);
}

#endif /* TDAT_INTERNAL_H */
