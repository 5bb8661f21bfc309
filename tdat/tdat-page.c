// SPDX-License-Identifier: GPL-2.0
/*
 * The ring-buffer page encoder: events into kernel-format sub-buffers, one
 * open page per CPU, finished pages collected in a per-CPU batch that
 * tdat-file.c writes out.
 */
#include <stdlib.h>
#include <sys/uio.h>

#include "tdat-internal.h"

static inline void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

void *tdat_reserve(struct tdat_writer *w, int cpu, uint64_t ts, size_t len)
{
	return tdat_reserve_fast(w, cpu, ts, len, true);
}

void tdat_run_begin(struct tdat_writer *w, int cpu, struct tdat_run *run)
{
	struct tdat_cpu *c = (unsigned int)cpu < (unsigned int)w->live ? w->cpu[cpu] : NULL;

	run->pos = run->end = NULL;
	run->events = 0;
	/* a closed page has cap 0: no room, whatever used says */
	if (!c || !c->open || !c->cap)
		return;
	run->pos = c->page + w->hdr + c->used;
	run->end = c->page + w->hdr + c->cap;
	run->ts = c->ts;
}

void tdat_run_end(struct tdat_writer *w, int cpu, struct tdat_run *run)
{
	struct tdat_cpu *c;

	if (!run->pos)
		return;
	c = w->cpu[cpu];
	c->used = (uint32_t)(run->pos - (c->page + w->hdr));
	c->ts = run->ts;
	c->st.events += run->events;
	run->pos = run->end = NULL;
	run->events = 0;
}

/*
 * Payloads are mostly small: two overlapping word copies beat a call to
 * memcpy with a length only known at run time.
 */
static inline void copy_payload(uint8_t *d, const uint8_t *s, size_t n)
{
	uint64_t a, b, c, e;

	if (likely(n >= 8 && n <= 16)) {
		memcpy(&a, s, 8);
		memcpy(&b, s + n - 8, 8);
		memcpy(d, &a, 8);
		memcpy(d + n - 8, &b, 8);
	} else if (n > 16 && n <= 32) {
		memcpy(&a, s, 8);
		memcpy(&b, s + 8, 8);
		memcpy(&c, s + n - 16, 8);
		memcpy(&e, s + n - 8, 8);
		memcpy(d, &a, 8);
		memcpy(d + 8, &b, 8);
		memcpy(d + n - 16, &c, 8);
		memcpy(d + n - 8, &e, 8);
	} else {
		memcpy(d, s, n);
	}
}

int tdat_write_event(struct tdat_writer *w, int cpu, uint64_t ts,
		     const void *payload, size_t len)
{
	uint8_t *p = tdat_reserve_fast(w, cpu, ts, len, false);

	if (unlikely(!p))
		return w->first_err ? w->first_err : -EINVAL;
	/* the slow path zeroed the rounding word; here only odd sizes need it */
	if (len & 3)
		memset(p + (len & ~(size_t)3), 0, 4);
	copy_payload(p, payload, len);
	return 0;
}

static struct tdat_cpu *cpu_get(struct tdat_writer *w, int cpu)
{
	struct tdat_cpu *c = w->cpu[cpu];

	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		goto nomem;
	c->limit = TDAT_BATCH_FIRST / w->page_size;
	if (c->limit < 1)
		c->limit = 1;
	if (c->limit > w->batch_pages)
		c->limit = w->batch_pages;
	c->fill_ns = tcx_clock_ns(TDAT_BATCH_CLOCK);
	/* faulted in a few pages at a time as the batch fills: see batch_next() */
	c->populated = c->limit < TDAT_POPULATE_PAGES ? c->limit : TDAT_POPULATE_PAGES;
	c->batch = tcx_pages_alloc((size_t)w->page_size * w->batch_pages,
				   (size_t)w->page_size * c->populated, false);
	if (!c->batch) {
		free(c);
		goto nomem;
	}
	c->page = c->batch;
	c->cpu = cpu;
	w->cpu[cpu] = c;
	return c;
nomem:
	tdat_err(w, -ENOMEM, "no memory for CPU %d's page batch", cpu);
	return NULL;
}

/*
 * The next batch slot. The first pass over a batch faults its pages in
 * ahead, a few at a time: one call instead of a fault per page (a trap to
 * Xen each in a PV dom0), and a CPU that stays quiet never takes the
 * whole batch in memory.
 */
static inline void batch_next(struct tdat_writer *w, struct tdat_cpu *c)
{
	c->nbatch++;
	c->page += w->page_size;
	if (unlikely(c->nbatch == c->populated && c->populated < c->limit)) {
		uint32_t n = c->limit - c->populated;

		if (n > TDAT_POPULATE_PAGES)
			n = TDAT_POPULATE_PAGES;
		tcx_pages_populate(c->batch, (size_t)c->populated * w->page_size,
				   (size_t)n * w->page_size);
		c->populated += n;
	}
}

static void page_start(struct tdat_writer *w, struct tdat_cpu *c, uint64_t ts)
{
	memcpy(c->page, &ts, 8);
	c->used = 0;
	c->cap = w->page_size - w->hdr;
	/* leave room after the data for the count, as the kernel must */
	if (c->missed && c->missed_known)
		c->cap -= w->long_size;
	c->open = true;
	c->ts = ts;
}

/*
 * Close the open page: pad the tail as the kernel does, set the commit word
 * and the missed-events marks, and move to the next batch slot.
 */
void tdat_page_finish(struct tdat_writer *w, struct tdat_cpu *c)
{
	uint32_t dsize = w->page_size - w->hdr;
	uint8_t *d = c->page + w->hdr;
	uint64_t commit = c->used;
	uint32_t rem = c->cap - c->used;
	uint32_t tail;

	/* A padding event needs its length word: under 8 bytes stay out */
	if (rem >= 8) {
		put32(d + c->used, tdat_evhdr(TDAT_TYPE_PADDING, 0));
		put32(d + c->used + 4, rem - 4);
		/* no bytes of an earlier page in it: files do not depend on the buffer's past */
		memset(d + c->used + 8, 0, rem - 8);
		commit = c->cap;
	}
	tail = commit;
	if (c->missed) {
		if (c->missed_known) {
			tdat_put_long(w, d + commit, c->missed_count);
			tail += w->long_size;
			commit |= TDAT_MISSED_STORED;
		}
		commit |= TDAT_MISSED_EVENTS;
		c->missed = false;
		c->missed_known = false;
		c->missed_count = 0;
	}
	memset(d + tail, 0, dsize - tail);
	tdat_put_long(w, c->page + 8, commit);
	c->st.pages++;
	c->st.bytes += w->hdr + (commit & TDAT_COMMIT_MASK);
	c->open = false;
	c->cap = 0;	/* the fast path now fails its bounds check */
	c->used = 0;
	batch_next(w, c);
}

/* Finish the page and write the batch out when it is full. */
static int page_finish_flush(struct tdat_writer *w, struct tdat_cpu *c)
{
	tdat_page_finish(w, c);
	if (c->nbatch == c->limit)
		return tdat_file_flush_cpu(w, c);
	return 0;
}

int tdat_cpu_flush_all(struct tdat_writer *w, struct tdat_cpu *c)
{
	if (c->open)
		tdat_page_finish(w, c);
	if (c->nbatch)
		return tdat_file_flush_cpu(w, c);
	return 0;
}

/* Common checks of the data calls; returns the CPU state or NULL. */
static struct tdat_cpu *data_cpu(struct tdat_writer *w, int cpu, const char *what)
{
	if (!w->started) {
		tdat_err(w, -EINVAL, "%s on CPU %d before tdat_start_data()", what, cpu);
		return NULL;
	}
	if (tdat_failed(w)) {
		/* the first error again: it names the cause */
		tdat_sticky(w);
		return NULL;
	}
	if (cpu < 0 || cpu >= w->max_cpus) {
		tdat_err(w, -EINVAL, "%s: CPU %d is beyond max_cpus %d", what, cpu, w->max_cpus);
		return NULL;
	}
	return cpu_get(w, cpu);
}

void *tdat_reserve_slow(struct tdat_writer *w, int cpu, uint64_t ts, size_t len)
{
	uint32_t dsize = w->page_size - w->hdr;
	struct tdat_cpu *c;
	uint32_t rlen, evsize, ext = 0;
	uint64_t delta;
	uint8_t *e;

	c = data_cpu(w, cpu, "event");
	if (!c)
		return NULL;
	if (len < 8) {
		tdat_err(w, -EINVAL, "event of %zu bytes on CPU %d is shorter than the 8-byte common header",
			 len, cpu);
		return NULL;
	}
	/* a page may have to keep room for a missed-events count */
	if (len > dsize - w->long_size - 8) {
		tdat_err(w, -EMSGSIZE, "event of %zu bytes on CPU %d does not fit in a %u-byte page (at most %u)",
			 len, cpu, w->page_size, dsize - w->long_size - 8);
		return NULL;
	}
	if (ts < c->ts) {
		tdat_err(w, -ERANGE, "timestamp %llu on CPU %d goes back from %llu",
			 (unsigned long long)ts, cpu, (unsigned long long)c->ts);
		return NULL;
	}
	rlen = (len + 3) & ~3u;
	evsize = (len > TDAT_SMALL_MAX ? 8 : 4) + rlen;
	delta = ts - c->ts;
	if (c->open && delta > TDAT_DELTA_MAX)
		ext = 8;
	/* gaps beyond TIME_EXTEND's 59 bits start a page: its base is 64-bit */
	if (!c->open || delta >= TDAT_EXTEND_LIMIT || c->used + ext + evsize > c->cap) {
		if (c->open && page_finish_flush(w, c))
			return NULL;
		page_start(w, c, ts);
		delta = 0;
		ext = 0;
	}
	e = c->page + w->hdr + c->used;
	if (ext) {
		put32(e, tdat_evhdr(TDAT_TYPE_TIME_EXTEND, delta & TDAT_DELTA_MAX));
		put32(e + 4, delta >> TDAT_DELTA_BITS);
		e += 8;
		c->used += 8;
		delta = 0;
	}
	if (len <= TDAT_SMALL_MAX) {
		put32(e, tdat_evhdr(rlen >> 2, delta));
		e += 4;
	} else {
		/* long form: the length word counts itself, as the kernel's */
		put32(e, tdat_evhdr(0, delta));
		put32(e + 4, rlen + 4);
		e += 8;
	}
	put32(e + rlen - 4, 0);
	c->used += evsize;
	c->ts = ts;
	c->st.events++;
	return e;
}

int tdat_mark_missed(struct tdat_writer *w, int cpu, uint64_t count)
{
	struct tdat_cpu *c = data_cpu(w, cpu, "missed events");
	int ret;

	if (!c)
		return w->first_err;
	if (c->open) {
		ret = page_finish_flush(w, c);
		if (ret)
			return ret;
	}
	/* one unknown count makes the total unknown */
	c->missed_known = c->missed ? (c->missed_known && count) : count != 0;
	c->missed = true;
	c->missed_count += count;
	c->st.missed += count;
	return 0;
}

/* ---- reading a page ---- */

/* A failed walk stays failed: no commit reaches this offset. */
#define WALK_FAILED	UINT32_MAX

int tdat_page_walk_init(struct tdat_page_walk *pw, const void *page, size_t page_size,
			int long_size)
{
	const uint8_t *pg = page;
	uint64_t known = TDAT_COMMIT_MASK | TDAT_MISSED_EVENTS | TDAT_MISSED_STORED;
	size_t dsize;
	uint32_t commit;

	pw->pos = WALK_FAILED;
	if (!pg || (long_size != 4 && long_size != 8) || page_size < 8u + long_size)
		return tcx_fail(-EINVAL, "a page of %zu bytes with %d-byte longs", page_size,
				long_size);
	dsize = page_size - 8 - (size_t)long_size;
	memcpy(&pw->ts, pg, 8);
	if (long_size == 8) {
		memcpy(&pw->flags, pg + 8, 8);
		/* the kernel ORs its int (1 << 31) into a long: sign-extended */
		if ((pw->flags & TDAT_MISSED_EVENTS) && pw->flags >> 32 == 0xffffffffu)
			pw->flags &= 0xffffffffu;
	} else {
		uint32_t f32;

		memcpy(&f32, pg + 8, 4);
		pw->flags = f32;
	}
	commit = pw->flags & TDAT_COMMIT_MASK;
	if (pw->flags & ~known)
		return tcx_fail(-EBADMSG, "unknown commit bits 0x%llx",
				(unsigned long long)pw->flags);
	/* kbuffer reads a stored count right after the commit */
	if (commit > dsize || ((pw->flags & TDAT_MISSED_STORED) && commit + long_size > dsize))
		return tcx_fail(-EBADMSG, "commit %u beyond the %zu data bytes", commit, dsize);
	pw->data = pg + 8 + long_size;
	pw->commit = commit;
	pw->pos = 0;
	return 0;
}

static int walk_bad(struct tdat_page_walk *pw)
{
	uint32_t pos = pw->pos;

	pw->pos = WALK_FAILED;
	return tcx_fail(-EBADMSG, "event at data offset %u runs past commit %u", pos, pw->commit);
}

/*
 * The entry at pw->pos: the length of its header (@hlen) and of its payload
 * (@len), the walk's time moved past it. 1 for an event, 0 for padding or a
 * time entry, or -EBADMSG (the walk then stays failed). Inline: the walk
 * returns each event, the check of a whole page only counts them.
 */
static inline int walk_entry(struct tdat_page_walk *pw, uint32_t *hlen, uint32_t *len)
{
	uint32_t h, type, delta, arg = 0;
	uint64_t l;

	*hlen = 4;
	*len = 0;
	/* every read stays inside the commit: kbuffer's do not */
	if (pw->commit - pw->pos < 4)
		return walk_bad(pw);
	memcpy(&h, pw->data + pw->pos, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	type = h >> 27;
	delta = h & TDAT_DELTA_MAX;
#else
	type = h & 31;
	delta = h >> 5;
#endif
	if (type == 0 || type >= TDAT_TYPE_PADDING) {
		/* these carry a word after the header */
		if (pw->commit - pw->pos < 8)
			return walk_bad(pw);
		memcpy(&arg, pw->data + pw->pos + 4, 4);
	}
	/* 64-bit sizes: a hostile length word cannot wrap */
	switch (type) {
	case TDAT_TYPE_PADDING:
		/* kbuffer adds a discarded event's delta, and goes on after a null one */
		l = (uint64_t)arg;
		pw->ts += delta;
		break;
	case TDAT_TYPE_TIME_EXTEND:
		pw->ts += ((uint64_t)arg << TDAT_DELTA_BITS) + delta;
		*hlen = 8;
		l = 0;
		break;
	case TDAT_TYPE_TIME_STAMP:
		pw->ts = (((uint64_t)arg << TDAT_DELTA_BITS) + delta) |
			 (pw->ts & ~((1ull << 59) - 1));
		*hlen = 8;
		l = 0;
		break;
	case 0:
		/* the length word counts itself; readers round the rest */
		if (arg < 4)
			return walk_bad(pw);
		*hlen = 8;
		l = ((uint64_t)arg - 4 + 3) & ~3ull;
		pw->ts += delta;
		break;
	default:
		l = 4 * (uint64_t)type;
		pw->ts += delta;
		break;
	}
	if (*hlen + l > pw->commit - pw->pos)
		return walk_bad(pw);
	*len = (uint32_t)l;
	return type < TDAT_TYPE_PADDING;
}

int tdat_page_walk_next(struct tdat_page_walk *pw, struct tdat_page_event *ev)
{
	uint32_t hlen, len;
	int ret;

	for (;;) {
		if (pw->pos == WALK_FAILED)
			return -EBADMSG;
		if (pw->pos == pw->commit)
			return 0;
		ret = walk_entry(pw, &hlen, &len);
		if (ret < 0)
			return ret;
		if (ret) {
			ev->ts = pw->ts;
			ev->data = pw->data + pw->pos + hlen;
			ev->len = len;
			ev->offset = pw->pos;
			pw->pos += hlen + len;
			return 1;
		}
		pw->pos += hlen + len;
	}
}

int tdat_page_check(const void *page, size_t page_size, int long_size, uint64_t *events,
		    uint64_t *last_ts)
{
	struct tdat_page_walk pw;
	uint32_t hlen, len;
	uint64_t n = 0;
	int ret;

	ret = tdat_page_walk_init(&pw, page, page_size, long_size);
	if (ret)
		return ret;
	while (pw.pos != pw.commit) {
		ret = walk_entry(&pw, &hlen, &len);
		if (ret < 0)
			return ret;
		n += (uint64_t)ret;
		pw.pos += hlen + len;
	}
	if (events)
		*events = n;
	if (last_ts)
		*last_ts = pw.ts;
	return 0;
}

/*
 * The checks and counts of one raw page, and the open event page closed
 * before it: 1 when it is to be stored, 0 for an empty page, or the error.
 */
static int page_accept(struct tdat_writer *w, struct tdat_cpu *c, const void *page)
{
	uint64_t events = 0, last_ts = 0, first_ts, commit = 0;
	int ret;

	memcpy(&commit, (const uint8_t *)page + 8, w->long_size);
	if (!(commit & TDAT_COMMIT_MASK))
		return 0;
	ret = tdat_page_check(page, w->page_size, w->long_size, &events, &last_ts);
	if (ret) {
		c->st.bad_pages++;
		return tdat_err(w, ret, "raw page on CPU %d: %s", c->cpu, tcx_error());
	}
	memcpy(&first_ts, page, 8);
	if (first_ts < c->ts)
		return tdat_err(w, -ERANGE, "raw page on CPU %d starts at %llu, before %llu",
				c->cpu, (unsigned long long)first_ts, (unsigned long long)c->ts);
	if (c->open) {
		ret = page_finish_flush(w, c);
		if (ret)
			return ret;
	}
	c->ts = last_ts;
	c->st.events += events;
	c->st.pages++;
	c->st.bytes += w->hdr + (commit & TDAT_COMMIT_MASK);
	if (commit & TDAT_MISSED_STORED) {
		uint64_t n = 0;

		memcpy(&n, (const uint8_t *)page + w->hdr + (commit & TDAT_COMMIT_MASK),
		       w->long_size);
		c->st.missed += n;
	}
	return 1;
}

/* An accepted page into the batch, marked if events were lost before it. */
static int page_store(struct tdat_writer *w, struct tdat_cpu *c, const void *page)
{
	memcpy(c->page, page, w->page_size);
	if (c->missed) {
		uint64_t commit = 0;

		/* the page is the kernel's: mark the loss, store no count */
		memcpy(&commit, c->page + 8, w->long_size);
		commit |= TDAT_MISSED_EVENTS;
		tdat_put_long(w, c->page + 8, commit);
		c->missed = false;
		c->missed_known = false;
		c->missed_count = 0;
	}
	batch_next(w, c);
	if (c->nbatch == c->limit)
		return tdat_file_flush_cpu(w, c);
	return 0;
}

int tdat_write_page(struct tdat_writer *w, int cpu, const void *page)
{
	struct tdat_cpu *c = data_cpu(w, cpu, "raw page");
	int ret;

	if (!c)
		return w->first_err;
	ret = page_accept(w, c, page);
	return ret == 1 ? page_store(w, c, page) : ret;
}

#define RUNS_MAX	64	/* runs of pages per pwritev */

/*
 * Ask for a page's cache lines ahead of its check: the pages usually come
 * from another thread's receive, on another core, and the check's loads
 * wait on each other (each entry's header gives the next one's offset).
 */
static inline void prefetch_page(const uint8_t *p, size_t size)
{
	for (size_t off = 0; off < size; off += 64)
		__builtin_prefetch(p + off);
}

/* The batch, then the runs of the caller's pages, in one write. */
static int runs_out(struct tdat_writer *w, struct tdat_cpu *c, struct iovec *iov,
		    int *cnt, uint64_t *bytes)
{
	uint64_t size = c->size;
	int ret;

	if (!*cnt)
		return 0;
	ret = tdat_file_write_cpu(w, c, iov, *cnt, *bytes);
	if (c->size != size) {
		c->nbatch = 0;
		c->page = c->batch;
	}
	*cnt = 0;
	*bytes = 0;
	return ret;
}

int tdat_write_pages(struct tdat_writer *w, int cpu, const void *pages, size_t n,
		     uint64_t *out_of_order)
{
	struct tdat_cpu *c = data_cpu(w, cpu, "raw page");
	const uint8_t *p = pages;
	struct iovec iov[RUNS_MAX + 1];
	uint64_t bytes = 0;
	int cnt = 0, ret;

	if (!c)
		return w->first_err;
	if (n)
		prefetch_page(p, w->page_size);
	for (size_t i = 0; i < n; i++, p += w->page_size) {
		if (i + 1 < n)
			prefetch_page(p + w->page_size, w->page_size);
		ret = page_accept(w, c, p);
		if (ret == -EBADMSG || ret == -ERANGE) {
			if (ret == -ERANGE && out_of_order)
				(*out_of_order)++;
			continue;
		}
		if (ret < 0)
			return ret;
		if (!ret)
			continue;
		if (c->missed) {
			/* this page changes: it goes by the batch, in order */
			ret = runs_out(w, c, iov, &cnt, &bytes);
			if (!ret)
				ret = page_store(w, c, p);
			if (ret)
				return ret;
			continue;
		}
		if (!cnt && c->nbatch) {
			/* what the batch holds goes first */
			iov[cnt++] = (struct iovec){ c->batch, (size_t)c->nbatch * w->page_size };
			bytes += iov[0].iov_len;
		}
		if (cnt && (const uint8_t *)iov[cnt - 1].iov_base + iov[cnt - 1].iov_len == p &&
		    iov[cnt - 1].iov_base != c->batch) {
			iov[cnt - 1].iov_len += w->page_size;
		} else {
			if (cnt == RUNS_MAX + 1) {
				ret = runs_out(w, c, iov, &cnt, &bytes);
				if (ret)
					return ret;
			}
			iov[cnt++] = (struct iovec){ (void *)p, w->page_size };
		}
		bytes += w->page_size;
	}
	return runs_out(w, c, iov, &cnt, &bytes);
}

int tdat_flush(struct tdat_writer *w)
{
	int ret = 0, r, i;

	if (!w->started)
		return 0;
	for (i = 0; i < w->max_cpus; i++) {
		if (!w->cpu[i])
			continue;
		r = tdat_cpu_flush_all(w, w->cpu[i]);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

int tdat_get_stats(const struct tdat_writer *w, int cpu, struct tdat_stats *st)
{
	int i;

	memset(st, 0, sizeof(*st));
	if (!w->started)
		return 0;
	if (cpu >= w->max_cpus)
		return -EINVAL;
	for (i = 0; i < w->max_cpus; i++) {
		const struct tdat_cpu *c = w->cpu[i];

		if (!c || (cpu >= 0 && i != cpu))
			continue;
		st->events += c->st.events;
		st->pages += c->st.pages;
		st->bytes += c->st.bytes;
		st->missed += c->st.missed;
		st->bad_pages += c->st.bad_pages;
	}
	return 0;
}
