// SPDX-License-Identifier: GPL-2.0
/*
 * Xen's trace buffers (xen/common/trace.c): t_info, per-CPU t_buf with
 * mod-2X counters, wrap fillers, LOST records and the half-full VIRQ.
 * Written from the documented behaviour; the consumer in another process
 * sees exactly the bytes Xen would leave in these pages.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <stdint.h>
#include <xen/xen.h>
#include <xen/trace.h>

#include "xsim.h"

#define LOST_REC_SIZE	28u	/* header + TSC + {count, dom, vcpu, first TSC} */

struct pcpu_tb {
	pthread_mutex_t lock;
	struct t_buf *buf;	/* NULL until set_size */
	uint32_t lost;		/* Xen's per-CPU lost_records */
	uint64_t lost_first_tsc;
	struct xsim_tbuf_stats st;
};

struct xsim_tbuf {
	unsigned int nr_cpus;
	uint8_t *mem;
	unsigned int first;	/* word offset of the first MFN list */
	unsigned int pages;	/* opt_tbuf_size: 0 until set */
	unsigned int t_info_pages;
	uint32_t data_size, highwater;
	int init_done;		/* tb_init_done, accessed atomically */
	uint32_t evt_mask;	/* atomically */
	uint64_t cpu_mask[XSIM_MAX_PCPUS / 64];
	void (*notify)(void *arg);
	void *arg;
	struct pcpu_tb cpu[];
};

static unsigned int first_offset(void)
{
	/* u16 size + u16 offsets[NR_CPUS], rounded up to u32 words */
	return (2 + 2 * XSIM_NR_CPUS + 3) / 4;
}

unsigned int xsim_tbuf_max_pages(unsigned int nr_cpus)
{
	unsigned int max = 65535, per_cpu = 65535 - first_offset();

	if (nr_cpus > 1)
		per_cpu /= nr_cpus - 1;
	return per_cpu < max ? per_cpu : max;
}

static unsigned int tinfo_pages(unsigned int nr_cpus, unsigned int pages)
{
	size_t words = (size_t)nr_cpus * pages + first_offset();

	return (words * 4 + XSIM_PAGE_SIZE - 1) / XSIM_PAGE_SIZE;
}

size_t xsim_tbuf_mem_pages(unsigned int nr_cpus)
{
	unsigned int max = xsim_tbuf_max_pages(nr_cpus);

	return tinfo_pages(nr_cpus, max) + (size_t)nr_cpus * max;
}

struct xsim_tbuf *xsim_tbuf_new(unsigned int nr_cpus, void *mem,
				void (*notify)(void *arg), void *arg)
{
	struct xsim_tbuf *tb;

	if (!nr_cpus || nr_cpus > XSIM_MAX_PCPUS || !mem) {
		errno = EINVAL;
		return NULL;
	}
	tb = calloc(1, sizeof(*tb) + nr_cpus * sizeof(tb->cpu[0]));
	if (!tb)
		return NULL;
	tb->nr_cpus = nr_cpus;
	tb->mem = mem;
	tb->first = first_offset();
	tb->evt_mask = TRC_ALL;
	memset(tb->cpu_mask, 0xff, sizeof(tb->cpu_mask));
	tb->notify = notify;
	tb->arg = arg;
	for (unsigned int c = 0; c < nr_cpus; c++)
		pthread_mutex_init(&tb->cpu[c].lock, NULL);
	return tb;
}

void xsim_tbuf_free(struct xsim_tbuf *tb)
{
	if (!tb)
		return;
	for (unsigned int c = 0; c < tb->nr_cpus; c++)
		pthread_mutex_destroy(&tb->cpu[c].lock);
	free(tb);
}

int xsim_tbuf_set_size(struct xsim_tbuf *tb, unsigned int pages)
{
	uint16_t *t_info16 = (uint16_t *)tb->mem;
	uint32_t *t_info32 = (uint32_t *)tb->mem;
	unsigned int max = xsim_tbuf_max_pages(tb->nr_cpus);

	/* One-shot: a different size is refused, the same one is busy. */
	if (tb->pages && pages != tb->pages)
		return -EINVAL;
	if (tb->pages)
		return -EBUSY;
	if (!pages)
		return -EINVAL;
	if (pages > max)
		pages = max;

	tb->t_info_pages = tinfo_pages(tb->nr_cpus, pages);
	memset(tb->mem, 0, (size_t)tb->t_info_pages * XSIM_PAGE_SIZE);
	t_info16[0] = pages;
	for (unsigned int c = 0; c < tb->nr_cpus; c++) {
		unsigned int off = tb->first + c * pages;
		size_t page0 = tb->t_info_pages + (size_t)c * pages;

		t_info16[1 + c] = off;
		for (unsigned int i = 0; i < pages; i++)
			t_info32[off + i] = XSIM_MFN_BASE + page0 + i;
		tb->cpu[c].buf = (struct t_buf *)(tb->mem +
						  page0 * XSIM_PAGE_SIZE);
		tb->cpu[c].buf->cons = 0;
		tb->cpu[c].buf->prod = 0;
	}
	tb->data_size = pages * XSIM_PAGE_SIZE - sizeof(struct t_buf);
	tb->highwater = tb->data_size >> 1;
	tb->pages = pages;
	/* Buffers must be visible before the flag, as in Xen. */
	__atomic_store_n(&tb->init_done, 1, __ATOMIC_RELEASE);
	return 0;
}

int xsim_tbuf_enable(struct xsim_tbuf *tb)
{
	if (!tb->pages)
		return -EINVAL;
	__atomic_store_n(&tb->init_done, 1, __ATOMIC_RELEASE);
	return 0;
}

void xsim_tbuf_disable(struct xsim_tbuf *tb)
{
	__atomic_store_n(&tb->init_done, 0, __ATOMIC_RELEASE);
	/* Forget pending losses so a later enable shows no phantom LOST. */
	for (unsigned int c = 0; c < tb->nr_cpus; c++) {
		struct pcpu_tb *p = &tb->cpu[c];

		pthread_mutex_lock(&p->lock);
		p->st.lost_cleared += p->lost;
		p->lost = 0;
		pthread_mutex_unlock(&p->lock);
	}
}

bool xsim_tbuf_enabled(const struct xsim_tbuf *tb)
{
	return __atomic_load_n(&tb->init_done, __ATOMIC_ACQUIRE);
}

void xsim_tbuf_get_info(const struct xsim_tbuf *tb, uint32_t *evt_mask,
			uint64_t *mfn, uint32_t *size)
{
	*evt_mask = __atomic_load_n(&tb->evt_mask, __ATOMIC_RELAXED);
	*mfn = tb->pages ? XSIM_MFN_BASE : 0;
	*size = tb->t_info_pages * XSIM_PAGE_SIZE;
}

unsigned int xsim_tbuf_pages(const struct xsim_tbuf *tb)
{
	return tb->pages;
}

void xsim_tbuf_set_evt_mask(struct xsim_tbuf *tb, uint32_t mask)
{
	__atomic_store_n(&tb->evt_mask, mask, __ATOMIC_RELAXED);
}

void xsim_tbuf_set_cpu_mask(struct xsim_tbuf *tb, const uint8_t *map,
			    unsigned int nbits)
{
	for (unsigned int c = 0; c < XSIM_MAX_PCPUS; c++) {
		uint64_t bit = 1ull << (c % 64);
		bool on = c < nbits && (map[c / 8] >> (c % 8)) & 1;

		if (on)
			__atomic_or_fetch(&tb->cpu_mask[c / 64], bit,
					  __ATOMIC_RELAXED);
		else
			__atomic_and_fetch(&tb->cpu_mask[c / 64], ~bit,
					   __ATOMIC_RELAXED);
	}
}

int xsim_tbuf_mfn_kind(const struct xsim_tbuf *tb, uint64_t mfn)
{
	uint64_t page;

	if (!tb->pages || mfn < XSIM_MFN_BASE)
		return 0;
	page = mfn - XSIM_MFN_BASE;
	if (page < tb->t_info_pages)
		return 1;
	if (page < tb->t_info_pages + (uint64_t)tb->nr_cpus * tb->pages)
		return 2;
	return 0;
}

/* Xen's bogus(): a corrupt counter from the consumer stops all tracing. */
static bool bogus(struct xsim_tbuf *tb, uint32_t prod, uint32_t cons)
{
	if ((prod & 3) || prod >= 2 * tb->data_size ||
	    (cons & 3) || cons >= 2 * tb->data_size) {
		__atomic_store_n(&tb->init_done, 0, __ATOMIC_RELEASE);
		return true;
	}
	return false;
}

static uint32_t load32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static uint32_t unconsumed(struct xsim_tbuf *tb, struct t_buf *b)
{
	uint32_t prod = load32(&b->prod), cons = load32(&b->cons);
	int64_t x;

	if (bogus(tb, prod, cons))
		return tb->data_size;
	x = (int64_t)prod - cons;
	if (x < 0)
		x += 2 * (int64_t)tb->data_size;
	return x;
}

static uint32_t bytes_to_wrap(struct xsim_tbuf *tb, struct t_buf *b)
{
	uint32_t prod = load32(&b->prod), cons = load32(&b->cons);
	int64_t x;

	if (bogus(tb, prod, cons))
		return 0;
	x = (int64_t)tb->data_size - prod;
	if (x <= 0)
		x += tb->data_size;
	return x;
}

/* Write one record at prod and advance prod; false if tracing stopped. */
static bool put(struct xsim_tbuf *tb, struct pcpu_tb *p, uint32_t event,
		bool cycles, uint64_t tsc, unsigned int nextra,
		const uint32_t *extra)
{
	struct t_buf *b = p->buf;
	uint32_t words[10], prod = load32(&b->prod), cons = load32(&b->cons);
	unsigned int n = 0, size;
	uint8_t *data = (uint8_t *)(b + 1);

	if (!xsim_tbuf_enabled(tb) || bogus(tb, prod, cons))
		return false;
	words[n++] = (event & 0x0fffffff) | (nextra << TRACE_EXTRA_SHIFT) |
		     (cycles ? 0x80000000u : 0);
	if (cycles) {
		words[n++] = (uint32_t)tsc;
		words[n++] = (uint32_t)(tsc >> 32);
		if (!p->st.first_tsc)
			p->st.first_tsc = tsc;
		p->st.last_tsc = tsc;
	}
	for (unsigned int i = 0; i < nextra; i++)
		words[n++] = extra ? extra[i] : 0;
	size = n * 4;
	/* Pages are contiguous here, so a record crossing a page is one copy. */
	memcpy(data + (prod >= tb->data_size ? prod - tb->data_size : prod),
	       words, size);
	prod += size;
	if (prod >= 2 * tb->data_size)
		prod -= 2 * tb->data_size;
	__atomic_store_n(&b->prod, prod, __ATOMIC_RELEASE);
	return true;
}

/* Fill exactly the bytes left before the ring end. */
static void put_wrap(struct xsim_tbuf *tb, struct pcpu_tb *p, uint64_t tsc)
{
	uint32_t left = bytes_to_wrap(tb, p->buf);
	unsigned int extra = (left - 4) / 4;
	bool cycles = false;

	/* More than 7 words left: take 2 of them with a TSC. */
	if (extra > TRACE_EXTRA_MAX) {
		cycles = true;
		extra -= 2;
	}
	if (put(tb, p, TRC_TRACE_WRAP_BUFFER, cycles, tsc, extra, NULL))
		p->st.fillers++;
}

static void put_lost(struct xsim_tbuf *tb, struct pcpu_tb *p,
		     const struct xsim_rec *r)
{
	uint32_t ed[4];

	ed[0] = p->lost;
	ed[1] = r->dom | (uint32_t)r->vcpu << 16;
	ed[2] = (uint32_t)p->lost_first_tsc;
	ed[3] = (uint32_t)(p->lost_first_tsc >> 32);
	if (put(tb, p, TRC_LOST_RECORDS, true, r->tsc, 4, ed)) {
		p->st.lost_reported += p->lost;
		p->st.lost_recs++;
	} else {
		/* disabled under our feet: Xen zeroes the count all the same */
		p->st.lost_cleared += p->lost;
	}
	p->lost = 0;
}

static bool event_passes(struct xsim_tbuf *tb, unsigned int cpu, uint32_t ev)
{
	uint32_t mask = __atomic_load_n(&tb->evt_mask, __ATOMIC_RELAXED);
	uint64_t cm = __atomic_load_n(&tb->cpu_mask[cpu / 64],
				      __ATOMIC_RELAXED);

	if (!(mask & ev))
		return false;
	if (!((mask >> TRC_CLS_SHIFT) & (ev >> TRC_CLS_SHIFT)))
		return false;
	if (!(((mask >> TRC_SUBCLS_SHIFT) & 0xf) &
	      ((ev >> TRC_SUBCLS_SHIFT) & 0xf)))
		return false;
	return (cm >> (cpu % 64)) & 1;
}

int xsim_tbuf_trace(struct xsim_tbuf *tb, unsigned int cpu,
		    const struct xsim_rec *r)
{
	struct pcpu_tb *p;
	uint32_t rec_size, avail, wrap, total = 0;
	bool below;
	int ret = 1;

	if (cpu >= tb->nr_cpus || !xsim_tbuf_enabled(tb) ||
	    !event_passes(tb, cpu, r->event))
		return 0;
	p = &tb->cpu[cpu];
	pthread_mutex_lock(&p->lock);
	if (!p->buf) {
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	below = unconsumed(tb, p->buf) < tb->highwater;
	rec_size = 4 + (r->cycles ? 8 : 0) + 4 * r->nextra;
	avail = tb->data_size - unconsumed(tb, p->buf);
	wrap = bytes_to_wrap(tb, p->buf);

	/* Dry run: filler and LOST record first, if they are needed. */
	if (p->lost) {
		if (LOST_REC_SIZE > wrap) {
			total += wrap;
			wrap = tb->data_size;
		}
		total += LOST_REC_SIZE;
		wrap -= LOST_REC_SIZE;
		if (!wrap)
			wrap = tb->data_size;
	}
	if (rec_size > wrap)
		total += wrap;
	total += rec_size;

	if (total > avail) {
		if (++p->lost == 1)
			p->lost_first_tsc = r->tsc;
		p->st.dropped++;
		below = false;
		ret = -ENOSPC;
		goto unlock;
	}

	wrap = bytes_to_wrap(tb, p->buf);
	if (p->lost) {
		if (LOST_REC_SIZE > wrap) {
			put_wrap(tb, p, r->tsc);
			wrap = tb->data_size;
		}
		put_lost(tb, p, r);
		wrap -= LOST_REC_SIZE;
		if (!wrap)
			wrap = tb->data_size;
	}
	if (rec_size > wrap)
		put_wrap(tb, p, r->tsc);
	if (put(tb, p, r->event, r->cycles, r->tsc, r->nextra, r->extra))
		p->st.written++;
	else
		ret = 0;
unlock:
	pthread_mutex_unlock(&p->lock);
	if (below && unconsumed(tb, p->buf) >= tb->highwater && tb->notify) {
		__atomic_add_fetch(&p->st.virqs, 1, __ATOMIC_RELAXED);
		tb->notify(tb->arg);
	}
	return ret;
}

void xsim_tbuf_stats(struct xsim_tbuf *tb, unsigned int cpu,
		     struct xsim_tbuf_stats *out)
{
	struct pcpu_tb *p = &tb->cpu[cpu];

	pthread_mutex_lock(&p->lock);
	*out = p->st;
	pthread_mutex_unlock(&p->lock);
}

uint32_t xsim_tbuf_lost_pending(struct xsim_tbuf *tb, unsigned int cpu)
{
	uint32_t n;

	pthread_mutex_lock(&tb->cpu[cpu].lock);
	n = tb->cpu[cpu].lost;
	pthread_mutex_unlock(&tb->cpu[cpu].lock);
	return n;
}
