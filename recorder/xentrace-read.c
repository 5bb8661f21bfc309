// SPDX-License-Identifier: GPL-2.0
/*
 * The xentrace file: a sequence of windows, each a cpu_change record
 * (event 0x1f003, words: pCPU, window size) and that many raw ring bytes.
 * Read sequentially in fixed-size chunks, so pipes work and a window size
 * of any value costs no memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder.h"

#define TRC_CPU_CHANGE	0x0001f003u
#define CHUNK		(1u << 20)
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

int rec_read_xentrace(int fd, struct rec_stream *s, struct rec_read_result *res,
		      rec_progress_fn progress, void *pctx)
{
	uint8_t *buf = malloc(CHUNK);
	uint8_t hdr[40];
	unsigned int hlen = 0, hneed = 12;
	uint64_t remain = 0, off = 0, next_progress = PROGRESS_EVERY;
	bool in_window = false;
	int cpu = -1, ret = 0;

	memset(res, 0, sizeof(*res));
	res->corrupt_at = -1;
	if (!buf)
		return -ENOMEM;

	for (;;) {
		ssize_t n = read_full(fd, buf, CHUNK);
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
	free(buf);
	return ret;
}
