// SPDX-License-Identifier: GPL-2.0
/*
 * The xentrace file: a sequence of windows, each a cpu_change record
 * (event 0x1f003, words: pCPU, window size) and that many raw ring bytes.
 * Read sequentially in bounded memory, so pipes work and a window size of
 * any value costs no memory. A regular file is mapped a slab at a time and
 * fed from the mapping (no copy into a read buffer); a pipe is read.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recorder-internal.h"

#define TRC_CPU_CHANGE	0x0001f003u
#define CHUNK		(1u << 20)
#define SLAB		(4u << 20)	/* mapped at once: bounds the resident input */
#define PROGRESS_EVERY	(64u << 20)

static ssize_t read_full(int fd, uint8_t *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

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

/* Where the bytes come from: a mapped regular file, or read() chunks. */
struct src {
	int		fd;
	bool		map;
	bool		from_start;	/* pread-like: leave the fd offset alone */
	uint64_t	pos;		/* file offset of the next chunk (map) */
	uint64_t	size;		/* file size (map) */
	uint64_t	limit;		/* bytes to deliver at most */
	uint64_t	given;
	uint8_t		*buf;		/* read buffer, or the current slab */
	size_t		slab_len;
};

static int src_open(struct src *r, int fd, uint64_t limit, bool from_start)
{
	struct stat st;
	off_t at = 0;

	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->from_start = from_start;
	r->limit = limit ? limit : UINT64_MAX;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) &&
	    (from_start || (at = lseek(fd, 0, SEEK_CUR)) >= 0)) {
		r->map = true;
		r->pos = at;
		r->size = st.st_size;
		return 0;
	}
	if (from_start)
		return -ESPIPE;
	r->buf = malloc(CHUNK);
	return r->buf ? 0 : -ENOMEM;
}

static void src_close(struct src *r)
{
	if (r->map) {
		if (r->buf)
			munmap(r->buf, r->slab_len);
		/* a later reader of @fd starts after what was consumed */
		if (!r->from_start)
			lseek(r->fd, r->pos, SEEK_SET);
	} else {
		free(r->buf);
	}
	r->buf = NULL;
}

/* The next piece of input into *p; returns its length, 0 at the end. */
static ssize_t src_next(struct src *r, const uint8_t **p)
{
	uint64_t want = r->limit - r->given;
	ssize_t n;

	if (!want)
		return 0;
	if (r->map) {
		uint64_t base = r->pos & ~(uint64_t)(SLAB - 1), len;
		void *m;

		if (r->buf)
			munmap(r->buf, r->slab_len);
		r->buf = NULL;
		if (r->pos >= r->size)
			return 0;
		len = r->size - base < SLAB ? r->size - base : SLAB;
		/* populated at once: one call maps the slab's pages */
		m = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, r->fd, base);
		if (m == MAP_FAILED)
			return -errno;
		r->buf = m;
		r->slab_len = len;
		n = base + len - r->pos;
		if ((uint64_t)n > want)
			n = want;
		*p = r->buf + (r->pos - base);
		r->pos += n;
		r->given += n;
		return n;
	}
	n = read_full(r->fd, r->buf, want < CHUNK ? want : CHUNK);
	if (n > 0)
		r->given += n;
	*p = r->buf;
	return n;
}

int rec_xentrace_cpus(int fd, bool *has_data, int max_cpus, int *max_cpu)
{
	uint64_t off = 0;
	uint8_t h[40];
	ssize_t n;

	*max_cpu = -1;
	for (;;) {
		uint32_t hdr, size, words;
		unsigned int w;
		int32_t c;

		/* one read per window: the header with a TSC is 20 bytes */
		n = pread(fd, h, 20, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n < 12)
			return 0;
		memcpy(&hdr, h, 4);
		words = (hdr >> 28) & 7;
		if ((hdr & 0x0fffffff) != TRC_CPU_CHANGE || words < 2)
			return 0;	/* the reading reports it */
		w = (hdr >> 31) ? 12 : 4;
		if (n < (ssize_t)(w + 8))
			return 0;
		memcpy(&c, h + w, 4);
		memcpy(&size, h + w + 4, 4);
		if (c < 0 || c >= max_cpus)
			return 0;
		if (size) {
			has_data[c] = true;
			if (c > *max_cpu)
				*max_cpu = c;
		}
		off += w + words * 4 + (uint64_t)size;
	}
}

static int read_windows(int fd, uint64_t limit, bool from_start, struct rec_stream *s,
			struct rec_read_result *res, rec_progress_fn progress, void *pctx)
{
	struct src src;
	uint8_t hdr[40];
	unsigned int hlen = 0, hneed = 12;
	uint64_t remain = 0, off = 0, next_progress = PROGRESS_EVERY;
	bool in_window = false;
	int cpu = -1, ret = 0;

	memset(res, 0, sizeof(*res));
	res->corrupt_at = -1;
	ret = src_open(&src, fd, limit, from_start);
	if (ret)
		return ret;

	for (;;) {
		const uint8_t *buf = NULL;
		ssize_t n = src_next(&src, &buf);
		size_t pos = 0;

		if (n < 0) {
			ret = n;
			snprintf(res->msg, sizeof(res->msg), "read error at offset %" PRIu64 ": %s",
				 off, strerror(-ret));
			goto out;
		}
		if (n == 0)
			break;
		while (pos < (size_t)n) {
			if (in_window) {
				size_t take = (size_t)n - pos;

				if (take > remain)
					take = remain;
				ret = rec_stream_feed(s, cpu, buf + pos, take);
				if (ret)
					goto out;
				pos += take;
				remain -= take;
				if (!remain) {
					in_window = false;
					ret = rec_stream_end_window(s, cpu);
					if (ret)
						goto out;
				}
				continue;
			}
			/* Collect a cpu_change header across chunk ends. */
			if (hlen < 4) {
				uint32_t h;

				while (hlen < 4 && pos < (size_t)n)
					hdr[hlen++] = buf[pos++];
				if (hlen < 4)
					continue;
				memcpy(&h, hdr, 4);
				hneed = 4 + ((h >> 31) ? 8 : 0) + ((h >> 28) & 7) * 4;
				if ((h & 0x0fffffff) != TRC_CPU_CHANGE || ((h >> 28) & 7) < 2) {
					uint64_t at = off + pos - hlen;

					if (!res->windows) {
						snprintf(res->msg, sizeof(res->msg),
							 "not a xentrace capture: no cpu_change record at offset 0 (found 0x%08x)",
							 h);
						ret = -EINVAL;
					} else {
						snprintf(res->msg, sizeof(res->msg),
							 "invalid window header 0x%08x at offset %" PRIu64
							 "; ignoring the rest", h, at);
						res->corrupt_at = at;
						ret = -EBADMSG;
					}
					goto out;
				}
			}
			while (hlen < hneed && pos < (size_t)n)
				hdr[hlen++] = buf[pos++];
			if (hlen == hneed) {
				unsigned int w = (hdr[3] & 0x80) ? 12 : 4;
				int32_t c;
				uint32_t size;

				memcpy(&c, hdr + w, 4);
				memcpy(&size, hdr + w + 4, 4);
				if (c < 0 || c >= REC_MAX_CPUS) {
					uint64_t at = off + pos - hlen;

					snprintf(res->msg, sizeof(res->msg),
						 "invalid pCPU %d in the window header at offset %" PRIu64
						 "; ignoring the rest", c, at);
					if (!res->windows)
						ret = -EINVAL;
					else {
						res->corrupt_at = at;
						ret = -EBADMSG;
					}
					goto out;
				}
				res->windows++;
				cpu = c;
				remain = size;
				hlen = 0;
				hneed = 12;
				if (remain)
					in_window = true;
				else
					rec_stream_end_window(s, cpu);
			}
		}
		off += n;
		res->bytes = off;
		if (progress && off >= next_progress) {
			progress(pctx, off);
			next_progress = off + PROGRESS_EVERY;
		}
	}
	if (!off) {
		snprintf(res->msg, sizeof(res->msg), "empty input: not a xentrace capture");
		ret = -EINVAL;
		goto out;
	}
	if (in_window || hlen) {
		res->truncated = in_window ? remain : hneed - hlen;
		snprintf(res->msg, sizeof(res->msg),
			 "truncated capture: the last %s at offset %" PRIu64 " lacks %" PRIu64 " bytes",
			 in_window ? "window" : "window header", off, res->truncated);
		if (in_window)
			rec_stream_end_window(s, cpu);
	}
out:
	res->bytes = off;
	src_close(&src);
	return ret;
}

int rec_read_xentrace(int fd, struct rec_stream *s, struct rec_read_result *res,
		      rec_progress_fn progress, void *pctx)
{
	return read_windows(fd, 0, false, s, res, progress, pctx);
}

int rec_read_xentrace_prefix(int fd, uint64_t max_bytes, struct rec_stream *s,
			     struct rec_read_result *res)
{
	return read_windows(fd, max_bytes, true, s, res, NULL, NULL);
}
