// SPDX-License-Identifier: GPL-2.0
/*
 * The xentrace file: a sequence of windows, each a cpu_change record
 * (event 0x1f003, words: pCPU, window size) and that many raw ring bytes.
 * Read sequentially in bounded memory, so pipes work and a window size of
 * any value costs no memory. Files and pipes alike are read a chunk at a
 * time into one buffer.
 *
 * Not mapped: a file that shrinks while it is read (truncated by another
 * process) faults with SIGBUS on the first mapped page past its new end,
 * and checking its size before mapping each slab leaves the same fault
 * between the check and the access. read() returns what is left, so a
 * shrinking file is a truncated capture with everything before the cut.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xen/trace.h>

#include "recorder-internal.h"

#define CHUNK		(1u << 20)
#define PROGRESS_EVERY	(64u << 20)

/* @len bytes or up to the end; at @off with @at, else at the fd's offset. */
static ssize_t read_full(int fd, uint8_t *buf, size_t len, bool at, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = at ? pread(fd, buf + got, len - got, off + got) :
				 read(fd, buf + got, len - got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += n;
	}
	return got;
}

ssize_t rec_read_full(int fd, void *buf, size_t len, uint64_t off)
{
	return read_full(fd, buf, len, true, off);
}

/* Where the bytes come from: read() chunks, or pread() from offset 0. */
struct src {
	int		fd;
	bool		from_start;	/* pread: leave the fd offset alone */
	uint64_t	limit;		/* bytes to deliver at most */
	uint64_t	given;
	uint8_t		*buf;		/* the read buffer */
};

static int src_open(struct src *r, int fd, uint64_t limit, bool from_start)
{
	struct stat st;

	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->from_start = from_start;
	r->limit = limit ? limit : UINT64_MAX;
	if (from_start && (fstat(fd, &st) || !S_ISREG(st.st_mode)))
		return -ESPIPE;
	r->buf = malloc(CHUNK);
	return r->buf ? 0 : -ENOMEM;
}

static void src_close(struct src *r)
{
	free(r->buf);
	r->buf = NULL;
}

/* The next piece of input into *p; returns its length, 0 at the end. */
static ssize_t src_next(struct src *r, const uint8_t **p)
{
	uint64_t want = r->limit - r->given;
	ssize_t n;

	if (!want)
		return 0;
	n = read_full(r->fd, r->buf, want < CHUNK ? want : CHUNK, r->from_start, r->given);
	if (n > 0)
		r->given += n;
	*p = r->buf;
	return n;
}

/* Where the reader is in the sequence of windows. */
struct wread {
	const struct rec_window_ops *ops;
	void			*ctx;
	struct rec_read_result	*res;
	uint8_t			hdr[40];	/* a cpu_change record being collected */
	unsigned int		hlen, hneed;
	uint64_t		remain;		/* bytes left in the current window */
	bool			in_window;
	int			cpu;
	uint64_t		off;		/* input offset of the current chunk */
	const bool		*mine;		/* NULL: every pCPU's windows are fed */
};

/* Are the current window's bytes fed (a struct rec_walk skips others')? */
static inline bool feeds(const struct wread *r)
{
	return !r->mine || r->mine[r->cpu];
}

/* A bad window header at @at: -EINVAL before any window, -EBADMSG after. */
static int bad_header(struct wread *r, uint64_t at)
{
	if (!r->res->windows)
		return -EINVAL;
	r->res->corrupt_at = at;
	return -EBADMSG;
}

/* Bytes of the current window: fed, and the window ended once complete. */
static int take_window(struct wread *r, const uint8_t *buf, size_t n, size_t *pos)
{
	size_t take = n - *pos;
	int ret;

	if (take > r->remain)
		take = r->remain;
	ret = feeds(r) ? r->ops->feed(r->ctx, r->cpu, buf + *pos, take) : 0;
	if (ret)
		return ret;
	*pos += take;
	r->remain -= take;
	if (r->remain)
		return 0;
	r->in_window = false;
	return feeds(r) ? r->ops->end(r->ctx, r->cpu) : 0;
}

/* The first word of a cpu_change record: its length, or a bad header. */
static int check_first_word(struct wread *r, size_t pos)
{
	uint32_t h;
	uint64_t at = r->off + pos - r->hlen;

	memcpy(&h, r->hdr, 4);
	r->hneed = 4 + ((h >> 31) ? 8 : 0) + ((h >> 28) & 7) * 4;
	if ((h & 0x0fffffff) == TRC_TRACE_CPU_CHANGE && ((h >> 28) & 7) >= 2)
		return 0;
	if (!r->res->windows)
		snprintf(r->res->msg, sizeof(r->res->msg),
			 "not a xentrace capture: no cpu_change record at offset 0 (found 0x%08x)",
			 h);
	else
		snprintf(r->res->msg, sizeof(r->res->msg),
			 "invalid window header 0x%08x at offset %" PRIu64 "; ignoring the rest",
			 h, at);
	return bad_header(r, at);
}

/* A complete cpu_change record: the window it opens. */
static int open_window(struct wread *r, size_t pos)
{
	unsigned int w = (r->hdr[3] & 0x80) ? 12 : 4;
	int32_t c;
	uint32_t size;

	memcpy(&c, r->hdr + w, 4);
	memcpy(&size, r->hdr + w + 4, 4);
	if (c < 0 || c >= REC_MAX_CPUS) {
		uint64_t at = r->off + pos - r->hlen;

		snprintf(r->res->msg, sizeof(r->res->msg),
			 "invalid pCPU %d in the window header at offset %" PRIu64
			 "; ignoring the rest", c, at);
		return bad_header(r, at);
	}
	r->res->windows++;
	r->cpu = c;
	r->remain = size;
	r->hlen = 0;
	r->hneed = 12;
	if (r->remain)
		r->in_window = true;
	else if (feeds(r))	/* empty: nothing to lose, even on a pCPU the reader ignores */
		r->ops->end(r->ctx, r->cpu);
	return 0;
}

/* Bytes of a cpu_change record, collected across chunk ends. */
static int take_header(struct wread *r, const uint8_t *buf, size_t n, size_t *pos)
{
	int ret;

	if (r->hlen < 4) {
		while (r->hlen < 4 && *pos < n)
			r->hdr[r->hlen++] = buf[(*pos)++];
		if (r->hlen < 4)
			return 0;
		ret = check_first_word(r, *pos);
		if (ret)
			return ret;
	}
	while (r->hlen < r->hneed && *pos < n)
		r->hdr[r->hlen++] = buf[(*pos)++];
	return r->hlen == r->hneed ? open_window(r, *pos) : 0;
}

static int take_chunk(struct wread *r, const uint8_t *buf, size_t n)
{
	size_t pos = 0;
	int ret = 0;

	while (!ret && pos < n)
		ret = r->in_window ? take_window(r, buf, n, &pos) : take_header(r, buf, n, &pos);
	return ret;
}

/* The end of the input: empty, complete, or cut inside a window or header. */
static int end_of_input(struct wread *r)
{
	struct rec_read_result *res = r->res;

	if (!r->off) {
		snprintf(res->msg, sizeof(res->msg), "empty input: not a xentrace capture");
		return -EINVAL;
	}
	if (!r->in_window && !r->hlen)
		return 0;
	res->truncated = r->in_window ? r->remain : r->hneed - r->hlen;
	snprintf(res->msg, sizeof(res->msg),
		 "truncated capture: the last %s at offset %" PRIu64 " lacks %" PRIu64 " bytes",
		 r->in_window ? "window" : "window header", r->off, res->truncated);
	if (r->in_window && feeds(r))
		r->ops->end(r->ctx, r->cpu);	/* the reading's result is the cut */
	return 0;
}

/* A chunk of input, the next after r->off; 0 or the error that stops the reading. */
static int walk_chunk(struct wread *r, const uint8_t *buf, size_t n)
{
	int ret = take_chunk(r, buf, n);

	if (ret)
		return ret;
	r->off += n;
	r->res->bytes = r->off;
	return 0;
}

/* The input ended (@err 0) or could not be read (-errno). */
static int walk_end(struct wread *r, int err)
{
	if (err) {
		snprintf(r->res->msg, sizeof(r->res->msg), "read error at offset %" PRIu64 ": %s",
			 r->off, strerror(-err));
		return err;
	}
	return end_of_input(r);
}

static int read_windows(int fd, uint64_t limit, bool from_start,
			const struct rec_window_ops *ops, void *ctx,
			struct rec_read_result *res, rec_progress_fn progress, void *pctx)
{
	struct wread r = { .ops = ops, .ctx = ctx, .res = res, .hneed = 12, .cpu = -1 };
	uint64_t next_progress = PROGRESS_EVERY;
	struct src src;
	int ret;

	memset(res, 0, sizeof(*res));
	res->corrupt_at = -1;
	ret = src_open(&src, fd, limit, from_start);
	if (ret)
		return ret;
	for (;;) {
		const uint8_t *buf = NULL;
		ssize_t n = src_next(&src, &buf);

		if (n <= 0) {
			ret = walk_end(&r, n);
			break;
		}
		ret = walk_chunk(&r, buf, n);
		if (ret)
			break;
		if (progress && r.off >= next_progress) {
			progress(pctx, r.off);
			next_progress = r.off + PROGRESS_EVERY;
		}
	}
	res->bytes = r.off;
	src_close(&src);
	return ret;
}

static int stream_feed(void *s, int cpu, const uint8_t *p, size_t len)
{
	return rec_stream_feed(s, cpu, p, len);
}

static int stream_end(void *s, int cpu)
{
	return rec_stream_end_window(s, cpu);
}

static const struct rec_window_ops stream_ops = { stream_feed, stream_end };

int rec_read_xentrace(int fd, struct rec_stream *s, struct rec_read_result *res,
		      rec_progress_fn progress, void *pctx)
{
	return read_windows(fd, 0, false, &stream_ops, s, res, progress, pctx);
}

int rec_read_xentrace_prefix(int fd, uint64_t max_bytes, struct rec_stream *s,
			     struct rec_read_result *res)
{
	return read_windows(fd, max_bytes, true, &stream_ops, s, res, NULL, NULL);
}

int rec_read_xentrace_windows(int fd, const struct rec_window_ops *ops, void *ctx,
			      struct rec_read_result *res)
{
	return read_windows(fd, 0, false, ops, ctx, res, NULL, NULL);
}

/* ---- the same walk over chunks read elsewhere ---- */

struct rec_walk {
	struct wread	r;
	bool		mine[REC_MAX_CPUS];
};

struct rec_walk *rec_walk_new(const bool *mine, const struct rec_window_ops *ops, void *ctx,
			      struct rec_read_result *res)
{
	struct rec_walk *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	memcpy(w->mine, mine, sizeof(w->mine));
	w->r = (struct wread){ .ops = ops, .ctx = ctx, .res = res, .hneed = 12, .cpu = -1,
			       .mine = w->mine };
	memset(res, 0, sizeof(*res));
	res->corrupt_at = -1;
	return w;
}

int rec_walk_chunk(struct rec_walk *w, const uint8_t *buf, size_t n)
{
	return walk_chunk(&w->r, buf, n);
}

int rec_walk_end(struct rec_walk *w, int err)
{
	return walk_end(&w->r, err);
}

void rec_walk_free(struct rec_walk *w)
{
	free(w);
}
