/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The deterministic content of the conformance files, shared by the
 * generator (which writes it with tdat) and the checker (which reads it
 * back through libtracecmd and compares).
 */
#ifndef GEN_SEQ_H
#define GEN_SEQ_H

#include <stdint.h>

#define SEQ_ID		5001
#define SEQ_SYSTEM	"xen"
#define SEQ_PID		4242
#define SEQ_COMM	"seqtask"
#define SEQ_LOST_AT	100	/* events lost before event 100 */
#define SEQ_LOST	5

/* Event i: its CPU, timestamp (strictly increasing) and payload length. */
static inline int seq_cpu(int i, int ncpu)
{
	return (i * 7 + i / 5) % ncpu;
}

static inline uint64_t seq_ts(int i)
{
	/* steps of 2^28 every 50 events: TIME_EXTENDs on every CPU */
	return 1000000ull + (uint64_t)i * 1237 + (uint64_t)(i / 50) * (1ull << 28);
}

static inline unsigned int seq_len(int i)
{
	static const unsigned int len[] = { 16, 16, 24, 112, 116, 200, 13, 16 };

	return len[i % 8];
}

/* Host and guest files (Xen style: TSC clock, vCPUs as host tasks). */
#define HG_NVCPU	2
#define HG_HOST_ID	0x1111222233334444ull
#define HG_GUEST_ID	0x5555666677778888ull
#define HG_PID(v)	(65537 + (v))	/* ((domid << 16) | vcpu) + 1, domid 1 */
#define HG_EVENTS	400		/* per file */
#define HG_TSC_MULT	1398101u	/* ~1/3: a 3 GHz TSC */
#define HG_TSC_SHIFT	22u

/* Guest event i: vCPU and guest TSC. */
static inline int hg_guest_cpu(int i)
{
	return i & 1;
}

static inline uint64_t hg_guest_ts(int i)
{
	return 3000000ull + (uint64_t)i * 30011;
}

static inline uint64_t hg_host_ts(int i)
{
	return 9000000ull + (uint64_t)i * 29989;
}

/* TIME_SHIFT samples: two per vCPU, interpolated. */
static const uint64_t hg_ts_t[HG_NVCPU][2] = {
	{ 2000000, 20000000 }, { 0, 21000000 },	/* ts 0 is kept too */
};
static const int64_t hg_ts_off[HG_NVCPU][2] = {
	{ 6000000, 6000900 }, { 0, -12345 },	/* offset 0 is kept by readers */
};
static const int64_t hg_ts_scale[HG_NVCPU][2] = { { 1, 1 }, { 3, 3 } };
static const int64_t hg_ts_frac[HG_NVCPU][2] = { { 0, 0 }, { 1, 1 } };

/* What libtracecmd must compute for guest ts @g on vCPU @v, in TSC ticks. */
static inline uint64_t hg_expect_shift(uint64_t g, int v)
{
	const uint64_t *t = hg_ts_t[v];
	const int64_t *o = hg_ts_off[v];
	__int128 dt = (__int128)t[1] - t[0];
	__int128 num = ((__int128)g - t[0]) * (o[1] - o[0]);
	__int128 cor, r;

	/* interpolate with rounding; C division truncates toward zero */
	cor = o[0] + (num + dt / 2) / dt;
	r = (((__int128)g * hg_ts_scale[v][0]) >> hg_ts_frac[v][0]) + cor;
	return (uint64_t)r;
}

static inline uint64_t hg_tsc2ns(uint64_t tsc)
{
	return (uint64_t)(((unsigned __int128)tsc * HG_TSC_MULT) >> HG_TSC_SHIFT);
}

#endif
