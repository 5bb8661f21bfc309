// SPDX-License-Identifier: GPL-2.0
/*
 * The trace-buffer producer against the fidelity checklist
 * (xen/common/trace.c): t_info layout and clamp, the one-shot size,
 * wrap fillers at every offset, the LOST dry run and record, the half-full
 * VIRQ, masks, disable, and bogus counters. Records are read back the way
 * xentrace does: from cons to prod, modulo 2X.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <xen/xen.h>
#include <xen/trace.h>

#include "xsim.h"

struct fix {
	unsigned int cpus;
	uint8_t *mem;
	struct xsim_tbuf *tb;
	int notified;
};

static void count_notify(void *arg)
{
	struct fix *f = arg;

	f->notified++;
}

static struct fix *fix_new(unsigned int cpus, unsigned int pages)
{
	struct fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->cpus = cpus;
	f->mem = calloc(xsim_tbuf_mem_pages(cpus), XSIM_PAGE_SIZE);
	assert_non_null(f->mem);
	f->tb = xsim_tbuf_new(cpus, f->mem, count_notify, f);
	assert_non_null(f->tb);
	if (pages)
		assert_int_equal(xsim_tbuf_set_size(f->tb, pages), 0);
	return f;
}

static void fix_free(struct fix *f)
{
	xsim_tbuf_free(f->tb);
	free(f->mem);
	free(f);
}

/* CPU c's buffer, found through t_info as a consumer would. */
static struct t_buf *cpu_buf(struct fix *f, unsigned int c)
{
	const uint16_t *t16 = (const uint16_t *)f->mem;
	const uint32_t *t32 = (const uint32_t *)f->mem;
	uint32_t mfn = t32[t16[1 + c]];

	return (struct t_buf *)(f->mem +
				(size_t)(mfn - XSIM_MFN_BASE) * XSIM_PAGE_SIZE);
}

static uint32_t data_size(struct fix *f)
{
	return xsim_tbuf_pages(f->tb) * XSIM_PAGE_SIZE - 8;
}

static struct xsim_rec rec(uint32_t event, bool cycles, uint64_t tsc,
			   unsigned int n)
{
	struct xsim_rec r = { .event = event, .cycles = cycles, .tsc = tsc,
			      .nextra = n, .dom = 3, .vcpu = 5 };

	for (unsigned int i = 0; i < n; i++)
		r.extra[i] = 0xa0000000u + i;
	return r;
}

/* Size of the record whose header is @h. */
static unsigned int rsize(uint32_t h)
{
	return 4 + ((h >> 31) ? 8 : 0) + 4 * ((h >> 28) & 7);
}

struct parsed {
	unsigned int n;
	uint32_t off[1200];	/* offset in the data area */
	uint32_t hdr[1200];
	uint32_t w[1200][9];	/* words after the header */
};

/* Walk cons..prod like xentrace (window contiguous after unwrapping). */
static void walk(struct fix *f, unsigned int c, struct parsed *p)
{
	struct t_buf *b = cpu_buf(f, c);
	uint8_t *data = (uint8_t *)(b + 1);
	uint32_t x = data_size(f), cons = b->cons, prod = b->prod;
	uint32_t win = prod >= cons ? prod - cons : prod + 2 * x - cons;
	uint32_t pos = cons % x, done = 0;

	p->n = 0;
	while (done < win) {
		uint32_t h;
		unsigned int sz;

		/* records never straddle the ring end */
		memcpy(&h, data + pos, 4);
		sz = rsize(h);
		assert_true(pos + sz <= x);
		assert_true(p->n < 1200);
		p->off[p->n] = pos;
		p->hdr[p->n] = h;
		memcpy(p->w[p->n], data + pos + 4, sz - 4);
		p->n++;
		done += sz;
		pos = (pos + sz) % x;
	}
	assert_int_equal(done, win);
}

static void consume(struct fix *f, unsigned int c)
{
	cpu_buf(f, c)->cons = cpu_buf(f, c)->prod;
}

/* ---- layout ---- */

static void test_tinfo_layout(void **state)
{
	struct fix *f = fix_new(3, 5);
	const uint16_t *t16 = (const uint16_t *)f->mem;
	const uint32_t *t32 = (const uint32_t *)f->mem;
	uint32_t mask, size;
	uint64_t mfn;

	/* first MFN list at ceil((2 + 2*256)/4) = 129 words */
	assert_int_equal(t16[0], 5);
	for (unsigned int c = 0; c < 3; c++) {
		assert_int_equal(t16[1 + c], 129 + c * 5);
		for (unsigned int i = 0; i < 5; i++)
			assert_int_equal(t32[129 + c * 5 + i],
					 t32[129 + c * 5] + i);
	}
	assert_int_equal(t16[4], 0);	/* no fourth CPU */
	xsim_tbuf_get_info(f->tb, &mask, &mfn, &size);
	assert_int_equal(mask, TRC_ALL);
	assert_int_equal(mfn, XSIM_MFN_BASE);
	/* (3*5 + 129) words = 576 bytes: one t_info page, reported in bytes */
	assert_int_equal(size, 4096);
	assert_int_equal(xsim_tbuf_mfn_kind(f->tb, mfn), 1);
	assert_int_equal(xsim_tbuf_mfn_kind(f->tb, t32[129]), 2);
	assert_int_equal(xsim_tbuf_mfn_kind(f->tb, t32[129 + 14] + 1), 0);
	assert_int_equal(xsim_tbuf_mfn_kind(f->tb, 5), 0);
	assert_true(xsim_tbuf_enabled(f->tb));	/* set_size starts tracing */
	fix_free(f);
}

static void test_size_clamp(void **state)
{
	/* min(65535, (65535 - 129) / (cpus - 1)) */
	assert_int_equal(xsim_tbuf_max_pages(1), 65406);
	assert_int_equal(xsim_tbuf_max_pages(2), 65406);
	assert_int_equal(xsim_tbuf_max_pages(4), 21802);
	assert_int_equal(xsim_tbuf_max_pages(8), 9343);
	assert_int_equal(xsim_tbuf_max_pages(64), 1038);

	struct fix *f = fix_new(8, 0);
	uint32_t mask, size;
	uint64_t mfn;

	assert_int_equal(xsim_tbuf_set_size(f->tb, 100000), 0);
	assert_int_equal(xsim_tbuf_pages(f->tb), 9343);
	xsim_tbuf_get_info(f->tb, &mask, &mfn, &size);
	/* (8*9343 + 129) words -> 74 pages of t_info */
	assert_int_equal(size, 74 * 4096);
	fix_free(f);
}

static void test_size_one_shot(void **state)
{
	struct fix *f = fix_new(2, 0);

	assert_int_equal(xsim_tbuf_enable(f->tb), -EINVAL);	/* no buffers */
	assert_int_equal(xsim_tbuf_set_size(f->tb, 0), -EINVAL);
	assert_int_equal(xsim_tbuf_set_size(f->tb, 4), 0);
	assert_int_equal(xsim_tbuf_set_size(f->tb, 8), -EINVAL);
	assert_int_equal(xsim_tbuf_set_size(f->tb, 4), -EBUSY);
	assert_int_equal(xsim_tbuf_pages(f->tb), 4);
	assert_int_equal(xsim_tbuf_enable(f->tb), 0);
	fix_free(f);
}

/* ---- records ---- */

static void test_record_format(void **state)
{
	struct fix *f = fix_new(1, 1);
	struct xsim_rec a = rec(0x00081102, true, 0x1122334455667788ull, 3);
	struct xsim_rec b = rec(0x0008200f, false, 99, 1);
	struct parsed *p = calloc(1, sizeof(*p));

	assert_int_equal(xsim_tbuf_trace(f->tb, 0, &a), 1);
	assert_int_equal(xsim_tbuf_trace(f->tb, 0, &b), 1);
	walk(f, 0, p);
	assert_int_equal(p->n, 2);
	assert_int_equal(p->hdr[0], 0x80000000u | 3u << 28 | 0x00081102);
	assert_int_equal(p->w[0][0], 0x55667788);
	assert_int_equal(p->w[0][1], 0x11223344);
	assert_int_equal(p->w[0][2], 0xa0000000u);
	assert_int_equal(p->hdr[1], 1u << 28 | 0x0008200f);	/* no TSC */
	assert_int_equal(p->w[1][0], 0xa0000000u);
	assert_int_equal(cpu_buf(f, 0)->prod, 24 + 8);
	free(p);
	fix_free(f);
}

/*
 * For every 4-byte offset of the ring, in both halves of the 2X counter
 * space, and every record size: a record that does not fit before the ring
 * end is preceded by a filler of exactly the bytes left, with a TSC only
 * when more than 32 bytes are left.
 */
static void test_wrap_every_offset(void **state)
{
	struct fix *f = fix_new(1, 1);
	struct t_buf *b = cpu_buf(f, 0);
	uint32_t x = data_size(f);
	struct parsed *p = calloc(1, sizeof(*p));
	unsigned int checked = 0, fillers = 0;

	assert_int_equal(x, 4088);
	for (uint32_t base = 0; base < 2 * x; base += 4) {
		for (unsigned int n = 0; n <= 7; n++) {
			for (int cyc = 0; cyc <= 1; cyc++) {
				struct xsim_rec r = rec(0x0002800a, cyc, 1000 + base, n);
				uint32_t sz = 4 + 8 * cyc + 4 * n;
				uint32_t left = x - base % x;
				uint32_t expect = base + sz + (sz > left ? left : 0);

				b->cons = b->prod = base;
				assert_int_equal(xsim_tbuf_trace(f->tb, 0, &r), 1);
				assert_int_equal(b->prod, expect % (2 * x));
				walk(f, 0, p);
				if (sz > left) {
					uint32_t h = p->hdr[0];

					assert_int_equal(p->n, 2);
					assert_int_equal(h & 0x0fffffff,
							 TRC_TRACE_WRAP_BUFFER);
					assert_int_equal(rsize(h), left);
					assert_int_equal(h >> 31, left > 32);
					assert_int_equal(p->off[1], 0);
					fillers++;
				} else {
					assert_int_equal(p->n, 1);
				}
				assert_int_equal(p->hdr[p->n - 1] & 0x0fffffff,
						 0x0002800a);
				checked++;
			}
		}
	}
	assert_int_equal(checked, 2 * (x / 4) * 16);
	assert_true(fillers > 0);
	free(p);
	fix_free(f);
}

static void test_fill_and_lost(void **state)
{
	struct fix *f = fix_new(1, 1);
	struct parsed *p = calloc(1, sizeof(*p));
	struct xsim_tbuf_stats st;
	unsigned int written = 0, dropped = 0;
	uint64_t t = 5000;

	/* 16-byte records: 255 fit in 4088 bytes (8 left over) */
	for (int i = 0; i < 300; i++) {
		struct xsim_rec r = rec(0x00021011, true, t++, 1);
		int ret = xsim_tbuf_trace(f->tb, 0, &r);

		if (ret == 1)
			written++;
		else if (ret == -ENOSPC)
			dropped++;
	}
	assert_int_equal(written, 255);
	assert_int_equal(dropped, 45);
	assert_int_equal(xsim_tbuf_lost_pending(f->tb, 0), 45);

	/* The consumer empties the ring; the next record brings the LOST. */
	consume(f, 0);
	{
		struct xsim_rec r = rec(0x00028004, true, 9999, 2);

		assert_int_equal(xsim_tbuf_trace(f->tb, 0, &r), 1);
	}
	walk(f, 0, p);
	/* at 4080 only 8 bytes are left: filler, then LOST at 0, then ours */
	assert_int_equal(p->n, 3);
	assert_int_equal(p->hdr[0] & 0x0fffffff, TRC_TRACE_WRAP_BUFFER);
	assert_int_equal(rsize(p->hdr[0]), 8);
	assert_int_equal(p->hdr[1], 0x80000000u | 4u << 28 | TRC_LOST_RECORDS);
	assert_int_equal(rsize(p->hdr[1]), 28);
	assert_int_equal(p->w[1][0], 9999);		/* TSC of the write */
	assert_int_equal(p->w[1][2], 45);		/* lost count */
	assert_int_equal(p->w[1][3], 3 | 5u << 16);	/* dom, vcpu */
	assert_int_equal(p->w[1][4], 5000 + 255);	/* first lost TSC */
	assert_int_equal(p->w[1][5], 0);
	assert_int_equal(p->off[2], 28);
	xsim_tbuf_stats(f->tb, 0, &st);
	assert_int_equal(st.dropped, 45);
	assert_int_equal(st.lost_reported, 45);
	assert_int_equal(st.lost_recs, 1);
	assert_int_equal(xsim_tbuf_lost_pending(f->tb, 0), 0);
	free(p);
	fix_free(f);
}

/* Put prod at @pos with @lost drops pending and an empty ring. */
static void at_with_lost(struct fix *f, uint32_t pos, unsigned int lost)
{
	struct t_buf *b = cpu_buf(f, 0);
	uint32_t x = data_size(f);

	/* fill so that drops happen, then move the window */
	b->cons = b->prod = 0;
	while (xsim_tbuf_lost_pending(f->tb, 0) < lost) {
		struct xsim_rec r = rec(0x00021011, true, 1, 7);

		if (xsim_tbuf_trace(f->tb, 0, &r) == 1 && b->prod > x - 40)
			b->cons = b->prod - (x - 40);
	}
	b->cons = b->prod = pos;
}

static void test_lost_dry_run(void **state)
{
	struct fix *f = fix_new(1, 1);
	struct parsed *p = calloc(1, sizeof(*p));
	uint32_t x = data_size(f);

	/* LOST fits exactly before the end: no filler, record at 0 */
	at_with_lost(f, x - 28, 1);
	{
		struct xsim_rec r = rec(0x00028004, true, 7, 2);

		assert_int_equal(xsim_tbuf_trace(f->tb, 0, &r), 1);
	}
	walk(f, 0, p);
	assert_int_equal(p->n, 2);
	assert_int_equal(p->hdr[0] & 0x0fffffff, TRC_LOST_RECORDS);
	assert_int_equal(p->off[0], x - 28);
	assert_int_equal(p->off[1], 0);

	/* LOST fits, the record does not: LOST, filler, record */
	at_with_lost(f, x - 40, 1);
	{
		struct xsim_rec r = rec(0x00028004, true, 7, 2);

		assert_int_equal(xsim_tbuf_trace(f->tb, 0, &r), 1);
	}
	walk(f, 0, p);
	assert_int_equal(p->n, 3);
	assert_int_equal(p->hdr[0] & 0x0fffffff, TRC_LOST_RECORDS);
	assert_int_equal(p->hdr[1] & 0x0fffffff, TRC_TRACE_WRAP_BUFFER);
	assert_int_equal(rsize(p->hdr[1]), 12);
	assert_int_equal(p->off[2], 0);

	free(p);
	fix_free(f);
}

/*
 * Room for the record alone but not for LOST + record: the dry run counts
 * the LOST record, so this record is dropped too.
 */
static void test_lost_needs_room_for_both(void **state)
{
	struct fix *f = fix_new(1, 1);
	struct t_buf *b = cpu_buf(f, 0);
	uint32_t x = data_size(f);
	struct xsim_rec r = rec(0x00028004, true, 7, 2);	/* 20 bytes */

	at_with_lost(f, 0, 2);
	/* 40 bytes free: enough for the record (20), not for LOST+record (48) */
	b->prod = 0;
	b->cons = (2 * x - (x - 40)) % (2 * x);
	assert_int_equal(xsim_tbuf_trace(f->tb, 0, &r), -ENOSPC);
	assert_int_equal(xsim_tbuf_lost_pending(f->tb, 0), 3);
	assert_int_equal(b->prod, 0);
	/* 48 free: both fit */
	b->cons = (2 * x - (x - 48)) % (2 * x);
	assert_int_equal(xsim_tbuf_trace(f->tb, 0, &r), 1);
	assert_int_equal(xsim_tbuf_lost_pending(f->tb, 0), 0);
	assert_int_equal(b->prod, 48);
	fix_free(f);
}

static void test_half_full_virq(void **state)
{
	struct fix *f = fix_new(2, 1);
	uint32_t x = data_size(f);
	unsigned int i;

	/* 16-byte records: crossing X/2 = 2044 happens on record 128 */
	for (i = 1; i <= 127; i++) {
		struct xsim_rec r = rec(0x00021011, true, i, 1);

		assert_int_equal(xsim_tbuf_trace(f->tb, 1, &r), 1);
	}
	assert_int_equal(f->notified, 0);
	{
		struct xsim_rec r = rec(0x00021011, true, i, 1);

		assert_int_equal(xsim_tbuf_trace(f->tb, 1, &r), 1);
	}
	assert_int_equal(f->notified, 1);
	assert_true(cpu_buf(f, 1)->prod >= x / 2);
	/* staying above does not signal again, nor do drops */
	for (i = 0; i < 200; i++) {
		struct xsim_rec r = rec(0x00021011, true, i, 1);

		xsim_tbuf_trace(f->tb, 1, &r);
	}
	assert_int_equal(f->notified, 1);
	/* drained below half, crossing again signals again */
	consume(f, 1);
	for (i = 0; i < 128; i++) {
		struct xsim_rec r = rec(0x00021011, true, i, 1);

		xsim_tbuf_trace(f->tb, 1, &r);
	}
	assert_int_equal(f->notified, 2);
	/* the other CPU's buffer is independent */
	assert_int_equal(cpu_buf(f, 0)->prod, 0);
	fix_free(f);
}

static void test_masks(void **state)
{
	struct fix *f = fix_new(2, 1);
	struct xsim_rec sched = rec(0x00021011, true, 1, 1);
	struct xsim_rec hvm = rec(0x00081002, true, 1, 2);
	struct xsim_rec handler = rec(0x00082003, false, 1, 1);
	uint8_t cpus = 0x2;

	xsim_tbuf_set_evt_mask(f->tb, TRC_SCHED);
	assert_int_equal(xsim_tbuf_trace(f->tb, 0, &sched), 1);
	assert_int_equal(xsim_tbuf_trace(f->tb, 0, &hvm), 0);
	/* 0x00081000: HVM class, subclass 1: entry/exit yes, handlers no */
	xsim_tbuf_set_evt_mask(f->tb, 0x00081000);
	assert_int_equal(xsim_tbuf_trace(f->tb, 0, &hvm), 1);
	assert_int_equal(xsim_tbuf_trace(f->tb, 0, &handler), 0);
	assert_int_equal(xsim_tbuf_trace(f->tb, 0, &sched), 0);
	/* class bits must overlap: GEN|SCHED minor bits alone are not enough */
	xsim_tbuf_set_evt_mask(f->tb, 0x0000f011);
	assert_int_equal(xsim_tbuf_trace(f->tb, 0, &sched), 0);
	xsim_tbuf_set_evt_mask(f->tb, TRC_ALL);
	xsim_tbuf_set_cpu_mask(f->tb, &cpus, 2);
	assert_int_equal(xsim_tbuf_trace(f->tb, 0, &sched), 0);
	assert_int_equal(xsim_tbuf_trace(f->tb, 1, &sched), 1);
	fix_free(f);
}

static void test_disable_keeps_data(void **state)
{
	struct fix *f = fix_new(1, 1);
	struct t_buf *b = cpu_buf(f, 0);
	struct parsed *p = calloc(1, sizeof(*p));
	struct xsim_tbuf_stats st;
	uint32_t prod;

	for (int i = 0; i < 300; i++) {
		struct xsim_rec r = rec(0x00021011, true, i, 1);

		xsim_tbuf_trace(f->tb, 0, &r);
	}
	prod = b->prod;
	assert_int_equal(xsim_tbuf_lost_pending(f->tb, 0), 45);
	xsim_tbuf_disable(f->tb);
	assert_false(xsim_tbuf_enabled(f->tb));
	{
		struct xsim_rec r = rec(0x00021011, true, 1, 1);

		assert_int_equal(xsim_tbuf_trace(f->tb, 0, &r), 0);
	}
	assert_int_equal(b->prod, prod);	/* data kept */
	xsim_tbuf_stats(f->tb, 0, &st);
	assert_int_equal(st.lost_cleared, 45);
	/* re-enabled: no phantom LOST */
	consume(f, 0);
	assert_int_equal(xsim_tbuf_enable(f->tb), 0);
	{
		struct xsim_rec r = rec(0x00021011, true, 1, 1);

		assert_int_equal(xsim_tbuf_trace(f->tb, 0, &r), 1);
	}
	walk(f, 0, p);
	for (unsigned int i = 0; i < p->n; i++)
		assert_int_not_equal(p->hdr[i] & 0x0fffffff, TRC_LOST_RECORDS);
	free(p);
	fix_free(f);
}

static void test_bogus_disables(void **state)
{
	struct fix *f = fix_new(1, 2);
	struct t_buf *b = cpu_buf(f, 0);
	uint32_t x = data_size(f);
	struct xsim_rec r = rec(0x00021011, true, 1, 1);

	b->prod = 2;			/* not 4-aligned */
	assert_int_equal(xsim_tbuf_trace(f->tb, 0, &r), -ENOSPC);
	assert_false(xsim_tbuf_enabled(f->tb));
	assert_int_equal(b->prod, 2);

	b->prod = b->cons = 0;
	assert_int_equal(xsim_tbuf_enable(f->tb), 0);
	assert_int_equal(xsim_tbuf_trace(f->tb, 0, &r), 1);
	b->cons = 2 * x;		/* out of range */
	xsim_tbuf_trace(f->tb, 0, &r);
	assert_false(xsim_tbuf_enabled(f->tb));
	fix_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tinfo_layout),
		cmocka_unit_test(test_size_clamp),
		cmocka_unit_test(test_size_one_shot),
		cmocka_unit_test(test_record_format),
		cmocka_unit_test(test_wrap_every_offset),
		cmocka_unit_test(test_fill_and_lost),
		cmocka_unit_test(test_lost_dry_run),
		cmocka_unit_test(test_lost_needs_room_for_both),
		cmocka_unit_test(test_half_full_virq),
		cmocka_unit_test(test_masks),
		cmocka_unit_test(test_disable_keeps_data),
		cmocka_unit_test(test_bogus_disables),
	};

	return cmocka_run_group_tests_name("xensim trace buffers", tests,
					   NULL, NULL);
}
