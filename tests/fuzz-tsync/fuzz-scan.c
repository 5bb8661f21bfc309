// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for time sync's scan of a guest's pages
 * (tsync_gcollect_page()): arbitrary 4 KiB pages, 8- or 4-byte longs (the
 * first byte chooses), against libtraceevent's kbuffer. Where the scan
 * takes a page, kbuffer must read the same events at the same times, and
 * the scan's markers must be kbuffer's print events that parse as markers.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <kbuffer.h>

#include "tdat.h"
#include "tsync-internal.h"

#define PAGE	4096
#define MAXEV	(PAGE / 4)

struct seen {
	uint32_t	n;
	uint64_t	ts[MAXEV];
	uint16_t	id[MAXEV];
};

static void on_event(void *ctx, uint32_t cpu, uint64_t ts, uint16_t id)
{
	struct seen *s = ctx;

	if (s->n >= MAXEV)
		abort();
	s->ts[s->n] = ts;
	s->id[s->n++] = id;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct seen s;
	struct tsync_gcollect *c;
	struct kbuffer *k;
	uint8_t *page;
	int long_size, found, marks = 0;
	uint32_t i = 0;
	unsigned long long t;
	void *d;

	if (size < 1)
		return 0;
	long_size = data[0] & 1 ? 4 : 8;
	data++;
	size--;
	/* exact-size heap copy: ASan catches a read past the page */
	page = calloc(1, PAGE);
	if (!page)
		abort();
	memcpy(page, data, size < PAGE ? size : PAGE);
	c = tsync_gcollect_new();
	if (!c)
		abort();
	s.n = 0;
	tsync_gcollect_set_hook(c, on_event, &s);
	found = tsync_gcollect_page(c, page, PAGE, long_size, 0, 5);
	if (found < 0) {
		/* a refused page gives nothing, and the file refuses it too */
		if (s.n || tsync_gcollect_marks(c, NULL, NULL, NULL) ||
		    !tdat_page_check(page, PAGE, long_size, NULL, NULL))
			abort();
		goto out;
	}
	k = kbuffer_alloc(long_size == 8 ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4,
			  KBUFFER_ENDIAN_LITTLE);
	if (!k)
		abort();
	kbuffer_load_subbuffer(k, page);
	for (d = kbuffer_read_event(k, &t); d; d = kbuffer_next_event(k, &t)) {
		const uint8_t *p = d;
		unsigned int len = (unsigned int)kbuffer_event_size(k);
		uint32_t seq;
		bool before;

		if (p < page || p + len > page + PAGE)
			abort();
		if (len < 2)
			continue;	/* the hook sees ids only */
		if (i >= s.n || s.ts[i] != t || s.id[i] != (uint16_t)(p[0] | p[1] << 8))
			abort();
		i++;
		if (s.id[i - 1] == 5 && len > 16 &&
		    tsync_marker_parse((const char *)p + 16,
				       strnlen((const char *)p + 16, len - 16), &seq, &before))
			marks++;
	}
	if (i != s.n || marks != found)
		abort();
	kbuffer_free(k);
out:
	tsync_gcollect_free(c);
	free(page);
	return 0;
}
