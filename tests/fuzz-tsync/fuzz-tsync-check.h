/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The invariants every time-sync solution must keep, whatever the input:
 * shared by the matcher's and the solvers' fuzz targets.
 */
#ifndef FUZZ_TSYNC_CHECK_H
#define FUZZ_TSYNC_CHECK_H

#include <stdlib.h>

#include "tsync-internal.h"

/* A solution's shape: epochs bracketed, samples per CPU strictly rising. */
static inline void check_solution(const struct tsync_solution *s, uint32_t ncpu)
{
	if (!s->ncpu || s->ncpu != ncpu || !s->count || !s->ts || !s->offset)
		abort();
	for (uint32_t e = 0; e < s->nepochs; e++) {
		const struct tsync_epoch *ep = &s->epochs[e];

		if (ep->lo > ep->hi || ep->off < ep->lo || ep->off > ep->hi)
			abort();
	}
	for (uint32_t c = 0; c < s->ncpu; c++) {
		const uint64_t *ts = s->ts + (size_t)c * s->count;
		const int64_t *off = s->offset + (size_t)c * s->count;

		for (uint32_t i = 0; i < s->count; i++) {
			if (i && ts[i] <= ts[i - 1])
				abort();
			/* host - guest, a guest's word, is bounded; scaled, not in these units */
			if (tsync_scale_identity(&s->scale) &&
			    (off[i] > TSYNC_OFFSET_MAX || off[i] < -TSYNC_OFFSET_MAX))
				abort();
		}
		/* what a reader computes, anywhere: no UB */
		(void)tsync_apply(s, c, 0);
		(void)tsync_apply(s, c, ts[0]);
		(void)tsync_apply(s, c, ts[s->count - 1] + 1);
		(void)tsync_apply(s, c, UINT64_MAX);
	}
}

#endif /* FUZZ_TSYNC_CHECK_H */
