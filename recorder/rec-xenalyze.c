// SPDX-License-Identifier: GPL-2.0
/*
 * A copy of a xentrace capture that xenalyze reads: every record but those
 * of the TRC_GUEST class, on which xenalyze stops ("unexpected number
 * bits"). Time sync's markers are TRC_GUEST records, so a --raw file of a
 * recording with guests has them.
 *
 * The windows come from the capture's reader (rec-xentrace.c) and are
 * written in their order, each cut down to the records kept (and split
 * when longer than the output buffer); a record that a window boundary
 * cuts is completed from that pCPU's next window, as xentrace's readers
 * do. Memory stays bounded whatever a window header claims.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xen/trace.h>

#include "recorder-internal.h"
#include "tcx-util.h"

#define OUT_WINDOW	(1u << 20)
#define MAX_REC		40		/* header, TSC, 7 extra words */

/* The bytes of a record a window boundary cut, per pCPU. */
struct carry {
	uint8_t		b[MAX_REC];
	uint8_t		len;
};

struct xa {
	int			out;
	const char		*out_name;
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
	uint32_t hdr[3] = { TRC_TRACE_CPU_CHANGE | (2u << 28), (uint32_t)x->ocpu, (uint32_t)x->olen };
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
	if (rec_event_class(h) == REC_CLASS_GUEST) {
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

/* Bytes of pCPU @cpu's window: whole records straight, cut ones through its carry. */
static int window_feed(void *ctx, int cpu, const uint8_t *p, size_t n)
{
	struct xa *x = ctx;
	struct carry *c = &x->carry[cpu];
	uint32_t h;
	int ret;

	while (n) {
		if (!c->len && n >= 4) {
			size_t len;

			memcpy(&h, p, 4);
			len = rec_record_size(h);
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
		if (c->len < rec_record_size(h))
			continue;
		c->len = 0;
		ret = put_record(x, cpu, c->b, rec_record_size(h));
		if (ret)
			return ret;
	}
	return 0;
}

/* The end of an input window ends its output window: the order is kept. */
static int window_end(void *ctx, int cpu)
{
	return flush(ctx);
}

static const struct rec_window_ops xa_ops = { window_feed, window_end };

int rec_xenalyze_copy(int in, int out, const char *out_name, struct rec_xa_stats *st)
{
	struct xa x = { .out = out, .out_name = out_name, .st = st };
	struct rec_read_result res;
	int ret, fret;

	memset(st, 0, sizeof(*st));
	x.obuf = malloc(OUT_WINDOW);
	x.carry = calloc(REC_MAX_CPUS, sizeof(*x.carry));
	if (!x.obuf || !x.carry) {
		ret = tcx_fail(-ENOMEM, "out of memory");
		goto out;
	}
	ret = rec_read_xentrace_windows(in, &xa_ops, &x, &res);
	/* the reader's problems are in res.msg; the copy's own in tcx_error() */
	if (ret && res.msg[0])
		tcx_fail(ret, "%s", res.msg);
	/* what was read before a bad header is still written */
	fret = flush(&x);
	if (!ret)
		ret = fret;
	st->bytes_in = res.bytes;
	st->truncated = res.truncated;
	for (int c = 0; c < REC_MAX_CPUS; c++)
		if (x.carry[c].len)
			st->truncated = true;
out:
	free(x.obuf);
	free(x.carry);
	return ret;
}
