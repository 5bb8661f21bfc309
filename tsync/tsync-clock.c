// SPDX-License-Identifier: GPL-2.0
/*
 * The clock model (host TSC -> ns) and Xen's TSC scaling, in integers only:
 * a float or a rounded Hz would put a fixed relative error on every
 * timestamp of the capture.
 */
#include <errno.h>
#include <time.h>

#include "tcx-util.h"
#include "tsync-internal.h"

typedef unsigned __int128 u128;
typedef __int128 s128;

int tsync_mult_shift(uint64_t num, uint64_t den, uint32_t *mult, uint32_t *shift)
{
	if (!num || !den)
		return -EINVAL;
	/* trace-cmd multiplies in two 32-bit halves with "<< (32 - shift)" */
	for (int s = 32; s >= 0; s--) {
		u128 m = (((u128)num << s) + den / 2) / den;

		if (m && m <= UINT32_MAX) {
			*mult = (uint32_t)m;
			*shift = (uint32_t)s;
			return 0;
		}
	}
	return -ERANGE;
}

static void set_quant(struct tsync_clock *c)
{
	/* mult is off by at most 0.5 of its last unit */
	c->quant_ppb = (uint32_t)((500000000ull + c->mult - 1) / c->mult);
}

int tsync_clock_init(struct tsync_clock *c, uint32_t cpu_khz,
		     const struct tsync_pair *p, size_t n)
{
	s128 sx = 0, sy = 0, sxx = 0, sxy = 0, num, den;
	uint64_t x0, y0, xmin = UINT64_MAX, xmax = 0;
	int ret;

	if (!c || !cpu_khz)
		return -EINVAL;
	*c = (struct tsync_clock){ .cpu_khz = cpu_khz };
	/* 1e6 ns per cpu_khz ticks */
	ret = tsync_mult_shift(1000000, cpu_khz, &c->mult, &c->shift);
	if (ret)
		return ret;
	set_quant(c);
	if (!p || n < 2)
		return 0;
	x0 = p[0].tsc;
	y0 = p[0].ns;
	for (size_t i = 0; i < n; i++) {
		/* centred on the first pair: products stay far below 2^127 */
		s128 x = (s128)p[i].tsc - x0, y = (s128)p[i].ns - y0;

		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
		if (p[i].tsc < xmin)
			xmin = p[i].tsc;
		if (p[i].tsc > xmax)
			xmax = p[i].tsc;
	}
	if (xmax - xmin < cpu_khz)	/* under 1 ms: too short to beat cpu_khz */
		return 0;
	num = (s128)n * sxy - sx * sy;
	den = (s128)n * sxx - sx * sx;
	if (num <= 0 || den <= 0)
		return 0;
	while (num > ((s128)1 << 90) || den > ((s128)1 << 90)) {
		num >>= 1;
		den >>= 1;
	}
	if (!den)
		return 0;
	/* num/den ns per tick against 1e6/cpu_khz, in ppb */
	{
		s128 ref = (s128)1000000 * den;
		s128 fit = num * cpu_khz;
		s128 ppb = (fit - ref) * 1000000000 / ref;

		if (ppb > 1000000 || ppb < -1000000)
			return 0;
		c->ppb = (int64_t)ppb;
	}
	for (int sh = 32; sh >= 0; sh--) {
		u128 mm = (((u128)num << sh) + (u128)den / 2) / (u128)den;

		if (mm && mm <= UINT32_MAX) {
			c->mult = (uint32_t)mm;
			c->shift = (uint32_t)sh;
			break;
		}
	}
	set_quant(c);
	c->fitted = true;
	/* residuals against the line through the means, for the summary */
	for (size_t i = 0; i < n; i++) {
		s128 x = (s128)p[i].tsc - x0, y = (s128)p[i].ns - y0;
		/* y_fit = mean_y + slope (x - mean_x), slope = num/den */
		s128 yf = (sy * den + num * ((s128)n * x - sx)) / ((s128)n * den);
		s128 r = y - yf;
		uint64_t a = (uint64_t)(r < 0 ? -r : r);

		if (a > c->resid_ns)
			c->resid_ns = a;
	}
	return 0;
}

uint64_t tsync_clock_ns(const struct tsync_clock *c, uint64_t tsc)
{
	return (uint64_t)(((u128)tsc * c->mult) >> c->shift);
}

uint64_t tsync_clock_ticks_to_ns(const struct tsync_clock *c, uint64_t ticks)
{
	u128 v = (u128)ticks * c->mult;

	return (uint64_t)((v + ((u128)1 << c->shift) - 1) >> c->shift);
}

uint64_t tsync_rdtsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#else
	return tcx_clock_ns(CLOCK_MONOTONIC_RAW);
#endif
}

int tsync_read_pair(struct tsync_pair *p)
{
	uint64_t best = UINT64_MAX;

	/* the tightest of a few tries: a preemption between the reads only
	 * widens that try */
	for (int i = 0; i < 8; i++) {
		uint64_t na = tcx_clock_ns(CLOCK_MONOTONIC_RAW);
		uint64_t t = tsync_rdtsc();
		uint64_t nb = tcx_clock_ns(CLOCK_MONOTONIC_RAW);

		if (!na || !nb)
			return -EINVAL;		/* no such clock here */
		if (nb - na < best) {
			best = nb - na;
			p->tsc = t;
			p->ns = na + (nb - na) / 2;
		}
	}
	return 0;
}

/* ---- Xen's scaling ---- */

int tsync_xen_ratio(uint32_t cpu_khz, uint32_t gtsc_khz, enum tsync_vendor v,
		    bool supported, struct tsync_scale *s)
{
	unsigned int frac = v == TSYNC_AMD ? 32 : 48;
	/* VMX: any 64-bit multiplier; SVM: 8 integer bits, 32 fraction bits */
	uint64_t max = v == TSYNC_AMD ? 0x000000ffffffffffull : UINT64_MAX;
	u128 r;

	if (!cpu_khz || !s)
		return -EINVAL;
	s->frac = frac;
	s->ratio = 1ull << frac;
	/* libxl asks for 0, which Xen turns into cpu_khz: no scaling */
	if (!gtsc_khz || gtsc_khz == cpu_khz)
		return 0;
	if (!supported)
		return -ERANGE;
	/* hvm_get_tsc_scaling_ratio(): early out, 128-bit divq, max check */
	if (gtsc_khz / cpu_khz > (max >> frac))
		return -ERANGE;
	r = ((u128)gtsc_khz << frac) / cpu_khz;
	if (!r || r > max)
		return -ERANGE;
	s->ratio = (uint64_t)r;
	return 0;
}

bool tsync_scale_identity(const struct tsync_scale *s)
{
	return s->frac < 64 && s->ratio == 1ull << s->frac;
}

uint64_t tsync_scale_fwd(const struct tsync_scale *s, uint64_t host)
{
	if (tsync_scale_identity(s))
		return host;
	return (uint64_t)(((u128)host * s->ratio) >> s->frac);
}

uint64_t tsync_scale_inv(const struct tsync_scale *s, uint64_t g)
{
	u128 h;

	if (tsync_scale_identity(s))
		return g;
	if (!s->ratio)
		return UINT64_MAX;
	h = (((u128)g << s->frac) + s->ratio - 1) / s->ratio;
	return h > UINT64_MAX ? UINT64_MAX : (uint64_t)h;
}

uint64_t tsync_guest_of(const struct tsync_scale *s, int64_t off, uint64_t host)
{
	return tsync_scale_fwd(s, host) + (uint64_t)off;
}

uint64_t tsync_host_of(const struct tsync_scale *s, int64_t off, uint64_t g)
{
	s128 v = (s128)g - off;

	if (v < 0)
		return 0;
	if (v > (s128)UINT64_MAX)
		return UINT64_MAX;
	return tsync_scale_inv(s, (uint64_t)v);
}
