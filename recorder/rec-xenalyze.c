// SPDX-License-Identifier: GPL-2.0
/*
 * A copy of a xentrace capture that xenalyze reads: every record but those
 * of the TRC_GUEST class, on which xenalyze stops ("unexpected number
 * bits"). Time sync's markers are TRC_GUEST records, so a --raw file of a
 * recording with guests has them.
 *
 * Windows are copied in their order, each cut down to the records kept
 * (and split when longer than the output buffer); a record that a window
 * boundary cuts is completed from that pCPU's next window, as xentrace's
 * readers do. Input and output are streamed: memory stays bounded whatever
 * a window header claims.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder-internal.h"
#include "tcx-util.h"

#define TRC_CPU_CHANGE	0x0001f003u
#define CLS_GUEST	0x0800u		/* bits 16-27 of TRC_GUEST */
#define IN_CHUNK	(1u << 20)
#define OUT_WINDOW	(1u << 20)
#define MAX_REC		40		/* header, TSC, 7 extra words */

/* A record's length from its first word. */
static size_t rec_len(uint32_t h)
{
	return 4 + ((h >> 31) ? 8 : 0) + ((h >> 28) & 7) * 4;
}

/* The bytes of a record a window boundary cut, per pCPU. */
struct carry {
	uint8_t		b[MAX_REC];
	uint8_t		len;
};

struct xa {
	int			in, out;
	const char		*out_name;
	uint8_t			*ibuf;
	size_t			ipos, ilen;
	bool			eof;
	uint8_t			*obuf;
	size_t			olen;
	int			ocpu;
	struct carry		*carry;
	struct rec_xa_stats	*st;
};

static int write_all(struct xa *x, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = write(x->out, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return tcx_fail(-errno, "%s: %s", x->out_name, strerror(errno));
		b += w;
		n -= w;
		x->st->bytes_out += w;
	}
	return 0;
}

/* The kept records of the current output window, behind their header. */
static int flush(struct xa *x)
{
	uint32_t hdr[3] = { TRC_CPU_CHANGE | (2u << 28), (uint32_t)x->ocpu, (uint32_t)x->olen };
	int ret;

	if (!x->olen)
		return 0;
	ret = write_all(x, hdr, sizeof(hdr));
	if (!ret)
		ret = write_all(x, x->obuf, x->olen);
	x->st->windows++;
	x->olen = 0;
	return ret;
}

static int put_record(struct xa *x, int cpu, const uint8_t *p, size_t len)
{
	uint32_t h;
	int ret;

	memcpy(&h, p, 4);
	if (((h >> 16) & 0xfff) == CLS_GUEST) {
		x->st->dropped++;
		return 0;
	}
	if (x->olen && (x->ocpu != cpu || x->olen + len > OUT_WINDOW)) {
		ret = flush(x);
		if (ret)
			return ret;
	}
	x->ocpu = cpu;
	memcpy(x->obuf + x->olen, p, len);
	x->olen += len;
	x->st->records++;
	return 0;
}

/* @n bytes of pCPU @cpu's window: whole records straight, cut ones through its carry. */
static int window_bytes(struct xa *x, int cpu, const uint8_t *p, size_t n)
{
	struct carry *c = &x->carry[cpu];
	uint32_t h;
	int ret;

	while (n) {
		if (!c->len && n >= 4) {
			size_t len;

			memcpy(&h, p, 4);
			len = rec_len(h);
			if (n >= len) {
				ret = put_record(x, cpu, p, len);
				if (ret)
					return ret;
				p += len;
				n -= len;
				continue;
			}
		}
		c->b[c->len++] = *p++;
		n--;
		if (c->len < 4)
			continue;
		memcpy(&h, c->b, 4);
		if (c->len < rec_len(h))
			continue;
		c->len = 0;
		ret = put_record(x, cpu, c->b, rec_len(h));
		if (ret)
			return ret;
	}
	return 0;
}

/* Bytes available at the input, refilled when empty; 0 at its end. */
static ssize_t avail(struct xa *x, const uint8_t **p)
{
	while (x->ipos == x->ilen && !x->eof) {
		ssize_t n = read(x->in, x->ibuf, IN_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return tcx_fail(-errno, "read error at offset %" PRIu64 ": %s",
					x->st->bytes_in, strerror(errno));
		x->ipos = 0;
		x->ilen = n;
		x->eof = !n;
	}
	*p = x->ibuf + x->ipos;
	return x->ilen - x->ipos;
}

static void consume(struct xa *x, size_t n)
{
	x->ipos += n;
	x->st->bytes_in += n;
}

/* Exactly @n header bytes into @dst; returns how many the input had. */
static ssize_t get(struct xa *x, uint8_t *dst, size_t n)
{
	size_t got = 0;

	while (got < n) {
		const uint8_t *p;
		ssize_t a = avail(x, &p);

		if (a <= 0)
			return a < 0 ? a : (ssize_t)got;
		if ((size_t)a > n - got)
			a = n - got;
		memcpy(dst + got, p, a);
		consume(x, a);
		got += a;
	}
	return got;
}

/* One window header: its pCPU and size; 1 at a clean end of input. */
static int header(struct xa *x, int *cpu, uint32_t *size)
{
	uint64_t at = x->st->bytes_in;
	uint8_t h[MAX_REC];
	uint32_t w0, words;
	size_t len;
	ssize_t n;
	int32_t c;

	n = get(x, h, 4);
	if (n < 0)
		return n;
	if (n == 0 && at)
		return 1;
	if (n == 0)
		return tcx_fail(-EINVAL, "empty input: not a xentrace capture");
	if (n < 4)
		goto truncated;
	memcpy(&w0, h, 4);
	words = (w0 >> 28) & 7;
	if ((w0 & 0x0fffffff) != TRC_CPU_CHANGE || words < 2) {
		if (!at)
			return tcx_fail(-EINVAL, "not a xentrace capture: no cpu_change record "
					"at offset 0 (found 0x%08x)", w0);
		return tcx_fail(-EBADMSG, "invalid window header 0x%08x at offset %" PRIu64
				"; the copy stops there", w0, at);
	}
	len = rec_len(w0);
	n = get(x, h + 4, len - 4);
	if (n < 0)
		return n;
	if ((size_t)n < len - 4)
		goto truncated;
	memcpy(&c, h + len - words * 4, 4);
	memcpy(size, h + len - words * 4 + 4, 4);
	if (c < 0 || c >= REC_MAX_CPUS)
		return tcx_fail(-EBADMSG, "invalid pCPU %d in the window header at offset %"
				PRIu64 "; the copy stops there", c, at);
	*cpu = c;
	return 0;
truncated:
	x->st->truncated = true;
	return 1;
}

static int copy_windows(struct xa *x)
{
	for (;;) {
		uint32_t size;
		int cpu, ret;

		ret = header(x, &cpu, &size);
		if (ret)
			return ret < 0 ? ret : 0;
		while (size) {
			const uint8_t *p;
			ssize_t a = avail(x, &p);

			if (a < 0)
				return a;
			if (!a) {
				x->st->truncated = true;
				return 0;
			}
			if ((size_t)a > size)
				a = size;
			ret = window_bytes(x, cpu, p, a);
			if (ret)
				return ret;
			consume(x, a);
			size -= a;
		}
		ret = flush(x);
		if (ret)
			return ret;
	}
}

int rec_xenalyze_copy(int in, int out, const char *out_name, struct rec_xa_stats *st)
{
	struct xa x = { .in = in, .out = out, .out_name = out_name, .st = st };
	int ret = -ENOMEM, fret;

	memset(st, 0, sizeof(*st));
	x.ibuf = malloc(IN_CHUNK);
	x.obuf = malloc(OUT_WINDOW);
	x.carry = calloc(REC_MAX_CPUS, sizeof(*x.carry));
	if (!x.ibuf || !x.obuf || !x.carry) {
		tcx_fail(ret, "out of memory");
		goto out;
	}
	ret = copy_windows(&x);
	/* what was read before a bad header is still written */
	fret = flush(&x);
	if (!ret)
		ret = fret;
	for (int c = 0; c < REC_MAX_CPUS; c++)
		if (x.carry[c].len)
			st->truncated = true;
out:
	free(x.ibuf);
	free(x.obuf);
	free(x.carry);
	return ret;
}
