// SPDX-License-Identifier: GPL-2.0
/*
 * The window headers of a xentrace file, walked without reading the
 * records: a pread of a header per window, its size giving the next. A
 * 1 GB capture has about 100 000 windows, 0.16 s of reads on one thread
 * before convert can lay out its file, so a large file is walked in
 * stretches on several threads. A stretch after the first starts at a
 * window header found by looking (a header whose next ones chain up);
 * the stretch before it must end exactly there, or the walk goes on from
 * where that one did end, on one thread: the result is always the
 * sequential walk's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xen/trace.h>

#include "recorder-internal.h"

#define SPLIT_MAX	8		/* stretches at most */
#define SYNC_BLOCK	(64u << 10)	/* looked through for a header at a time */
#define SYNC_LIMIT	(8u << 20)	/* how far a stretch's start is looked for */
#define SYNC_CHAIN	4		/* headers after it that must follow */
#define SPLIT_MIN	(64ull << 20)	/* smaller files: one thread is soon done */

/* One stretch: windows from @from until one starts at or past @to. */
struct stretch {
	int		fd;
	int		max_cpus;
	uint64_t	from, to;
	uint64_t	end;		/* where the walk stopped */
	bool		stopped;	/* a bad header or the file's end */
	int		err;
	int		max_cpu;
	bool		*has_data;
	uint64_t	*bytes;
	pthread_t	th;
	bool		threaded;
};

/*
 * The window header at the start of @h (@n bytes read): its pCPU and size,
 * and its length in *@len. False if it is not one.
 */
static bool parse_header(const uint8_t *h, ssize_t n, int max_cpus, int32_t *cpu,
			 uint32_t *size, uint64_t *len)
{
	uint32_t hdr, words, w;

	if (n < 12)
		return false;
	memcpy(&hdr, h, 4);
	words = (hdr >> 28) & 7;
	if ((hdr & 0x0fffffff) != TRC_TRACE_CPU_CHANGE || words < 2)
		return false;
	w = (hdr >> 31) ? 12 : 4;
	if (n < (ssize_t)(w + 8))
		return false;
	memcpy(cpu, h + w, 4);
	memcpy(size, h + w + 4, 4);
	if (*cpu < 0 || *cpu >= max_cpus)
		return false;
	*len = w + words * 4 + (uint64_t)*size;
	return true;
}

static void walk_stretch(struct stretch *s)
{
	uint64_t off = s->from;
	uint8_t h[20];	/* a header with a TSC */

	s->max_cpu = -1;
	while (off < s->to) {
		ssize_t n = rec_read_full(s->fd, h, sizeof(h), off);
		uint64_t len;
		uint32_t size;
		int32_t c;

		if (n < 0) {
			s->err = (int)n;
			break;
		}
		/* the end of the file, or a header the reading reports */
		if (!parse_header(h, n, s->max_cpus, &c, &size, &len)) {
			s->stopped = true;
			break;
		}
		if (size) {
			if (s->has_data)
				s->has_data[c] = true;
			if (s->bytes)
				s->bytes[c] += size;
			if (c > s->max_cpu)
				s->max_cpu = c;
		}
		off += len;
	}
	s->end = off;
}

static void *stretch_fn(void *arg)
{
	walk_stretch(arg);
	return NULL;
}

/* Does a chain of window headers start at @off (or end the file there)? */
static bool chain_at(int fd, uint64_t off, uint64_t fsize, int max_cpus)
{
	for (int i = 0; i <= SYNC_CHAIN; i++) {
		uint8_t h[20];
		ssize_t n;
		uint64_t len;
		uint32_t size;
		int32_t c;

		if (i && off == fsize)
			return true;
		n = rec_read_full(fd, h, sizeof(h), off);
		if (!parse_header(h, n, max_cpus, &c, &size, &len))
			return false;
		off += len;
	}
	return true;
}

/* The first offset at or after @at where a chain of headers starts, or 0. */
static uint64_t find_header(int fd, uint64_t at, uint64_t fsize, int max_cpus)
{
	uint8_t *buf = malloc(SYNC_BLOCK + 20);
	uint64_t found = 0;

	at = (at + 3) & ~(uint64_t)3;	/* records are whole words */
	for (uint64_t base = at; buf && !found && base < at + SYNC_LIMIT && base < fsize;
	     base += SYNC_BLOCK) {
		ssize_t n = rec_read_full(fd, buf, SYNC_BLOCK + 20, base);

		for (ssize_t p = 0; p + 12 <= n && p < SYNC_BLOCK; p += 4) {
			uint64_t len;
			uint32_t size;
			int32_t c;

			if (parse_header(buf + p, n - p, max_cpus, &c, &size, &len) &&
			    chain_at(fd, base + p, fsize, max_cpus)) {
				found = base + p;
				break;
			}
		}
		if (n <= 0)
			break;
	}
	free(buf);
	return found;
}

/* Stretch @s's counts into the totals. */
static void add_stretch(const struct stretch *s, bool *has_data, uint64_t *bytes, int *max_cpu)
{
	for (int c = 0; c <= s->max_cpu; c++) {
		if (has_data && s->has_data[c])
			has_data[c] = true;
		if (bytes)
			bytes[c] += s->bytes[c];
	}
	if (s->max_cpu > *max_cpu)
		*max_cpu = s->max_cpu;
}

int rec_xentrace_walk(int fd, bool *has_data, uint64_t *bytes, int max_cpus, int *max_cpu,
		      int nthreads, uint64_t min_split)
{
	struct stretch st[SPLIT_MAX];
	struct stat sb;
	int n = 0, ret = 0;

	*max_cpu = -1;
	memset(st, 0, sizeof(st));
	if (nthreads > SPLIT_MAX)
		nthreads = SPLIT_MAX;
	if (nthreads < 2 || fstat(fd, &sb) || !S_ISREG(sb.st_mode) ||
	    (uint64_t)sb.st_size < min_split || (uint64_t)sb.st_size < 2 * SYNC_LIMIT)
		nthreads = 1;
	/* where each stretch starts: the first at 0, the others found */
	for (int i = 0; i < nthreads; i++) {
		uint64_t from = i ? find_header(fd, (uint64_t)sb.st_size / nthreads * i,
						(uint64_t)sb.st_size, max_cpus) : 0;

		if (i && (!from || from <= st[n - 1].from))
			continue;
		st[n].fd = fd;
		st[n].max_cpus = max_cpus;
		st[n].from = from;
		st[n].to = UINT64_MAX;
		if (n)
			st[n - 1].to = from;
		st[n].has_data = calloc(max_cpus, sizeof(bool));
		st[n].bytes = calloc(max_cpus, sizeof(uint64_t));
		if (!st[n].has_data || !st[n].bytes) {
			free(st[n].has_data);
			free(st[n].bytes);
			ret = -ENOMEM;
			goto out;
		}
		n++;
	}
	for (int i = 1; i < n; i++)
		st[i].threaded = !pthread_create(&st[i].th, NULL, stretch_fn, &st[i]);
	walk_stretch(&st[0]);
	for (int i = 1; i < n; i++) {
		if (st[i].threaded)
			pthread_join(st[i].th, NULL);
		else
			walk_stretch(&st[i]);	/* no thread: here, in turn */
	}
	/* in order, as one thread would have walked them */
	for (int i = 0; i < n; i++) {
		if (st[i].err) {
			ret = st[i].err;
			goto out;
		}
		add_stretch(&st[i], has_data, bytes, max_cpu);
		if (st[i].stopped)
			goto out;
		if (i + 1 < n && st[i].end != st[i + 1].from) {
			/* the next one's start was not a window's: the rest from here */
			struct stretch *rest = &st[i + 1];

			memset(rest->has_data, 0, max_cpus * sizeof(bool));
			memset(rest->bytes, 0, max_cpus * sizeof(uint64_t));
			rest->from = st[i].end;
			rest->to = UINT64_MAX;
			rest->stopped = false;
			rest->err = 0;
			walk_stretch(rest);
			ret = rest->err;
			if (!ret)
				add_stretch(rest, has_data, bytes, max_cpu);
			goto out;
		}
	}
out:
	for (int i = 0; i < n; i++) {
		free(st[i].has_data);
		free(st[i].bytes);
	}
	return ret;
}

int rec_xentrace_cpus(int fd, bool *has_data, int max_cpus, int *max_cpu)
{
	return rec_xentrace_walk(fd, has_data, NULL, max_cpus, max_cpu, 1, 0);
}

int rec_xentrace_cpu_bytes(int fd, uint64_t *bytes, int max_cpus, int *max_cpu, int nthreads)
{
	return rec_xentrace_walk(fd, NULL, bytes, max_cpus, max_cpu, nthreads, SPLIT_MIN);
}
