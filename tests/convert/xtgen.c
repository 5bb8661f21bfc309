// SPDX-License-Identifier: GPL-2.0
/*
 * xtgen: synthetic xentrace captures with ground truth (see xtgen.h).
 * Independent of the decoder: ids come from Xen's public trace.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <stdint.h>
#include <xen/trace.h>

#include "xtgen.h"

#define IDLE_DOM	32767
#define NO_TSC		UINT64_MAX
#define SVM_EXIT64	(TRC_HVM_ENTRYEXIT + TRC_64_FLAG + 0x03)

struct cpu {
	uint8_t		*buf;
	size_t		len, cap;
	uint64_t	ring_pos;
	uint64_t	last_tsc;
	int		cur_dom, cur_vcpu;	/* running now; cur_dom -1: none */
};

struct gen {
	const struct xtgen_params	*p;
	struct xtgen_truth		*t;
	struct cpu			*cpus;
	uint64_t			rnd;
	bool				blocked[XTGEN_MAX_DOMS][XTGEN_MAX_VCPUS];
	uint64_t			run_start[XTGEN_MAX_DOMS][XTGEN_MAX_VCPUS];
};

static uint32_t rnd(struct gen *g)
{
	/* xorshift64*: reproducible from the seed */
	g->rnd ^= g->rnd >> 12;
	g->rnd ^= g->rnd << 25;
	g->rnd ^= g->rnd >> 27;
	return (uint32_t)((g->rnd * 0x2545f4914f6cdd1dull) >> 32);
}

int xtgen_class_index(uint32_t event)
{
	uint32_t cls = (event >> 16) & 0xfff;

	if (!cls || (cls & (cls - 1)))
		return -1;
	return __builtin_ctz(cls);
}

static int grow(struct cpu *c, size_t need)
{
	if (c->len + need <= c->cap)
		return 0;
	size_t ncap = c->cap ? c->cap * 2 : 65536;

	while (ncap < c->len + need)
		ncap *= 2;
	uint8_t *nb = realloc(c->buf, ncap);

	if (!nb)
		return -ENOMEM;
	c->buf = nb;
	c->cap = ncap;
	return 0;
}

static void raw(struct cpu *c, uint32_t hdr, uint64_t tsc, int n, const uint32_t *w)
{
	memcpy(c->buf + c->len, &hdr, 4);
	c->len += 4;
	if (hdr & TRC_HD_CYCLE_FLAG) {
		uint32_t lo = (uint32_t)tsc, hi = tsc >> 32;

		memcpy(c->buf + c->len, &lo, 4);
		memcpy(c->buf + c->len + 4, &hi, 4);
		c->len += 8;
	}
	memcpy(c->buf + c->len, w, n * 4);
	c->len += n * 4;
}

static void count_id(struct xtgen_truth *t, uint32_t id)
{
	for (int i = 0; i < t->nids; i++) {
		if (t->ids[i] == id) {
			t->id_count[i]++;
			return;
		}
	}
	if (t->nids < XTGEN_MAX_IDS) {
		t->ids[t->nids] = id;
		t->id_count[t->nids++] = 1;
	}
}

/* One record on @cpu, preceded by a wrap filler where Xen would put one. */
static int put(struct gen *g, int cpu, uint32_t id, uint64_t tsc, int n, const uint32_t *w)
{
	struct cpu *c = &g->cpus[cpu];
	struct xtgen_truth *t = g->t;
	unsigned int size = 4 + (tsc != NO_TSC ? 8 : 0) + 4 * n;
	uint32_t ring = g->p->ring_bytes;

	if (grow(c, size + 40))
		return -ENOMEM;
	if (ring) {
		uint32_t left = ring - c->ring_pos % ring;

		if (left < size) {
			static const uint32_t junk[7];
			uint32_t hdr = TRC_TRACE_WRAP_BUFFER;

			/* the filler carries a TSC only when it needs more than 7 words */
			if (left > 32)
				raw(c, hdr | TRC_HD_CYCLE_FLAG | ((left - 12) / 4) << TRACE_EXTRA_SHIFT,
				    c->last_tsc, (left - 12) / 4, junk);
			else
				raw(c, hdr | ((left - 4) / 4) << TRACE_EXTRA_SHIFT, 0, (left - 4) / 4, junk);
			c->ring_pos += left;
			t->fillers++;
		}
		c->ring_pos += size;
	}
	raw(c, id | (uint32_t)n << TRACE_EXTRA_SHIFT | (tsc != NO_TSC ? TRC_HD_CYCLE_FLAG : 0),
	    tsc, n, w);
	t->records++;
	t->bytes += size;
	if (xtgen_class_index(id) >= 0)
		t->per_class[xtgen_class_index(id)]++;
	count_id(t, id);
	if (tsc == NO_TSC) {
		t->no_tsc++;
		tsc = c->last_tsc;
	} else {
		c->last_tsc = tsc;
	}
	if (t->records == 1 || tsc < t->first_tsc)
		t->first_tsc = tsc;
	if (tsc > t->last_tsc)
		t->last_tsc = tsc;
	if (cpu > t->max_cpu)
		t->max_cpu = cpu;
	return 0;
}

#define PUT(cpu, id, tsc, ...) ({ \
		const uint32_t _w[] = { 0, ##__VA_ARGS__ }; \
		put(g, cpu, id, tsc, sizeof(_w) / 4 - 1, _w + 1); })

static uint32_t packed(int dom, int vcpu)
{
	return (uint32_t)dom << 16 | (uint32_t)vcpu;
}

/* Switch @cpu to (dom, vcpu) at @tsc, as Xen logs it. */
static int do_switch(struct gen *g, int cpu, int dom, int vcpu, uint64_t tsc)
{
	struct cpu *c = &g->cpus[cpu];
	int pd = c->cur_dom < 0 ? IDLE_DOM : c->cur_dom;
	int pv = c->cur_dom < 0 ? cpu : c->cur_vcpu;
	bool block = pd != IDLE_DOM && rnd(g) % 3 == 0;
	int ret = 0;

	if (g->p->switch_records) {
		ret |= PUT(cpu, TRC_SCHED_SWITCH_INFPREV, tsc, pd, pv, 1000);
		ret |= PUT(cpu, TRC_SCHED_SWITCH_INFNEXT, tsc, dom, vcpu, 0, 30000000);
		ret |= PUT(cpu, TRC_SCHED_SWITCH, tsc, pd, pv, dom, vcpu);
	}
	/* running -> runnable (preempted) or blocked */
	ret |= PUT(cpu, TRC_SCHED_RUNSTATE_CHANGE | (0 << 8) | ((block ? 2 : 1) << 4), tsc,
		   packed(pd, pv));
	if (pd != IDLE_DOM) {
		g->t->run_ticks[pd][pv] += tsc - g->run_start[pd][pv];
		g->blocked[pd][pv] = block;
	}
	if (dom != IDLE_DOM && g->blocked[dom][vcpu]) {
		/* the wakeup, here on the pCPU that runs it next */
		ret |= PUT(cpu, TRC_SCHED_WAKE, tsc, dom, vcpu);
		ret |= PUT(cpu, TRC_SCHED_RUNSTATE_CHANGE | (2 << 8) | (1 << 4), tsc,
			   packed(dom, vcpu));
		g->blocked[dom][vcpu] = false;
	}
	ret |= PUT(cpu, TRC_SCHED_RUNSTATE_CHANGE | (1 << 8) | (0 << 4), tsc, packed(dom, vcpu));
	g->t->switches++;
	if (dom != IDLE_DOM)
		g->run_start[dom][vcpu] = tsc;
	c->cur_dom = dom == IDLE_DOM ? -1 : dom;
	c->cur_vcpu = vcpu;
	return ret;
}

/* The records of a running slice [t0, t1) of (dom, vcpu) on @cpu. */
static int slice_events(struct gen *g, int cpu, int dom, uint64_t t0, uint64_t t1)
{
	const struct xtgen_params *p = g->p;
	int k = p->events_per_slice ? p->events_per_slice : 4;
	uint64_t step = (t1 - t0) / (2 * k + 2);
	int ret = 0;

	if (step < 2)
		return 0;
	for (int i = 0; i < k; i++) {
		uint64_t t = t0 + step * (2 * i + 1);

		if (dom == IDLE_DOM) {
			ret |= PUT(cpu, TRC_PM_IDLE_ENTRY, t, 1, (uint32_t)t, 100, 90);
			ret |= PUT(cpu, TRC_HW_IRQ_HANDLED, t + step / 2, 30, (uint32_t)t,
				   (uint32_t)t + 50);
			ret |= PUT(cpu, TRC_PM_IDLE_EXIT, t + step - 1, 1, (uint32_t)t, 0xef);
		} else if (dom >= 1 && p->hvm) {
			uint32_t reason = p->svm ? 0x7b : i == 0 ? 10 : 30;	/* IOIO; CPUID, IO_INSTRUCTION */

			ret |= PUT(cpu, TRC_HVM_VMENTRY, t);
			ret |= PUT(cpu, p->svm && !p->legacy_ids ? SVM_EXIT64 : TRC_HVM_VMEXIT64, t + step,
				   reason, 0x81000000u + i, 0xffffffffu);
			g->t->vmentry++;
			g->t->vmexit++;
			/* one handler record per exit, as Xen does */
			if (i == 0 && !p->svm)
				ret |= PUT(cpu, TRC_HVM_CPUID, NO_TSC, 0x40000000, 0, 1, 2, 3, 4);
			else
				ret |= PUT(cpu, TRC_HVM_IOPORT_READ, NO_TSC, 0x3f8, 1, 0x41);
			if (p->guest && i == 1)
				ret |= PUT(cpu, TRC_GUEST | 0x42, NO_TSC, 7, (uint32_t)t);
		} else if (p->pv) {
			ret |= PUT(cpu, TRC_PV_HYPERCALL_V2, t,
				   29 | TRC_PV_HYPERCALL_V2_ARG_32(0) | TRC_PV_HYPERCALL_V2_ARG_64(1),
				   1, 0x1000, 0xffff8000);
			ret |= PUT(cpu, TRC_PV_TRAP | TRC_64_FLAG, t + step / 2, 0x810000, 0xffffffff, 14);
			ret |= PUT(cpu, TRC_PV_PAGE_FAULT | TRC_64_FLAG, t + step - 1,
				   0x81001000, 0xffffffff, 0x7000, 0, 2);
		}
	}
	return ret;
}

/*
 * One record of every id Xen 4.17 defines (and the 4.19+ exits), with the
 * word counts Xen writes (a struct's tail padding included).
 */
static int all_ids(struct gen *g, int cpu, uint64_t t)
{
	static const struct { uint32_t id; int n; } ids[] = {
		{ TRC_GEN + 4, 2 },
		{ TRC_SCHED_RUNSTATE_CHANGE | 1 << 8 | 2 << 4, 1 },
		{ TRC_SCHED_RUNSTATE_CHANGE | 2 << 8 | 3 << 4, 1 },
		{ TRC_SCHED_RUNSTATE_CHANGE | 3 << 8 | 1 << 4, 1 },
		{ TRC_SCHED_DOM_ADD, 1 }, { TRC_SCHED_DOM_REM, 1 }, { TRC_SCHED_SLEEP, 2 },
		{ TRC_SCHED_WAKE, 2 }, { TRC_SCHED_YIELD, 2 }, { TRC_SCHED_BLOCK, 2 },
		{ TRC_SCHED_SHUTDOWN, 3 }, { TRC_SCHED_CTL, 0 }, { TRC_SCHED_ADJDOM, 1 },
		{ TRC_SCHED_SWITCH, 4 }, { TRC_SCHED_S_TIMER_FN, 0 }, { TRC_SCHED_T_TIMER_FN, 0 },
		{ TRC_SCHED_DOM_TIMER_FN, 0 }, { TRC_SCHED_SWITCH_INFPREV, 3 },
		{ TRC_SCHED_SWITCH_INFNEXT, 4 }, { TRC_SCHED_SHUTDOWN_CODE, 3 },
		{ TRC_SCHED_SWITCH_INFCONT, 4 },
		{ TRC_DOM0_DOM_ADD, 1 }, { TRC_DOM0_DOM_REM, 1 },
		{ TRC_HVM_PF_XEN, 2 }, { TRC_HVM_PF_XEN64, 3 }, { TRC_HVM_PF_INJECT, 2 },
		{ TRC_HVM_PF_INJECT64, 3 }, { TRC_HVM_INJ_EXC, 2 }, { TRC_HVM_INJ_VIRQ, 2 },
		{ TRC_HVM_REINJ_VIRQ, 1 }, { TRC_HVM_IO_READ, 2 }, { TRC_HVM_IO_WRITE, 2 },
		{ TRC_HVM_CR_READ, 2 }, { TRC_HVM_CR_READ64, 3 }, { TRC_HVM_CR_WRITE, 2 },
		{ TRC_HVM_CR_WRITE64, 3 }, { TRC_HVM_DR_READ, 0 }, { TRC_HVM_DR_WRITE, 0 },
		{ TRC_HVM_MSR_READ, 3 }, { TRC_HVM_MSR_WRITE, 3 }, { TRC_HVM_CPUID, 6 },
		{ TRC_HVM_INTR, 1 }, { TRC_HVM_NMI, 0 }, { TRC_HVM_SMI, 0 }, { TRC_HVM_VMMCALL, 1 },
		{ TRC_HVM_HLT, 1 }, { TRC_HVM_INVLPG, 2 }, { TRC_HVM_INVLPG64, 3 },
		{ TRC_HVM_MCE, 0 }, { TRC_HVM_IOPORT_READ, 3 }, { TRC_HVM_IOMEM_READ, 3 },
		{ TRC_HVM_CLTS, 0 }, { TRC_HVM_LMSW, 1 }, { TRC_HVM_LMSW64, 2 },
		{ TRC_HVM_RDTSC, 2 }, { TRC_HVM_INTR_WINDOW, 3 }, { TRC_HVM_NPF, 6 },
		{ TRC_HVM_REALMODE_EMULATE, 0 }, { TRC_HVM_TRAP, 1 }, { TRC_HVM_TRAP_DEBUG, 1 },
		{ TRC_HVM_VLAPIC, 0 }, { TRC_HVM_XCR_READ64, 3 }, { TRC_HVM_XCR_WRITE64, 3 },
		{ TRC_HVM_IOPORT_WRITE, 3 }, { TRC_HVM_IOMEM_WRITE, 3 },
		{ TRC_HVM_EMUL_HPET_START_TIMER, 6 }, { TRC_HVM_EMUL_PIT_START_TIMER, 2 },
		{ TRC_HVM_EMUL_RTC_START_TIMER, 2 }, { TRC_HVM_EMUL_LAPIC_START_TIMER, 3 },
		{ TRC_HVM_EMUL_HPET_STOP_TIMER, 1 }, { TRC_HVM_EMUL_PIT_STOP_TIMER, 1 },
		{ TRC_HVM_EMUL_RTC_STOP_TIMER, 1 }, { TRC_HVM_EMUL_LAPIC_STOP_TIMER, 1 },
		{ TRC_HVM_EMUL_PIT_TIMER_CB, 1 }, { TRC_HVM_EMUL_LAPIC_TIMER_CB, 1 },
		{ TRC_HVM_EMUL_PIC_INT_OUTPUT, 2 }, { TRC_HVM_EMUL_PIC_KICK, 1 },
		{ TRC_HVM_EMUL_PIC_INTACK, 2 }, { TRC_HVM_EMUL_PIC_POSEDGE, 2 },
		{ TRC_HVM_EMUL_PIC_NEGEDGE, 2 }, { TRC_HVM_EMUL_PIC_PEND_IRQ_CALL, 1 },
		{ TRC_HVM_EMUL_LAPIC_PIC_INTR, 3 },
		{ TRC_MEM_PAGE_GRANT_MAP, 1 }, { TRC_MEM_PAGE_GRANT_UNMAP, 1 },
		{ TRC_MEM_PAGE_GRANT_TRANSFER, 1 }, { TRC_MEM_SET_P2M_ENTRY, 6 },
		{ TRC_MEM_DECREASE_RESERVATION, 4 }, { TRC_MEM_POD_POPULATE, 6 },
		{ TRC_MEM_POD_ZERO_RECLAIM, 6 }, { TRC_MEM_POD_SUPERPAGE_SPLINTER, 4 },
		{ TRC_PV_HYPERCALL, 2 }, { TRC_PV_HYPERCALL | TRC_64_FLAG, 3 },
		{ TRC_PV_TRAP, 2 }, { TRC_PV_TRAP | TRC_64_FLAG, 3 },
		{ TRC_PV_PAGE_FAULT, 3 }, { TRC_PV_PAGE_FAULT | TRC_64_FLAG, 5 },
		{ TRC_PV_FORCED_INVALID_OP, 1 }, { TRC_PV_EMULATE_PRIVOP, 1 },
		{ TRC_PV_EMULATE_4GB, 1 }, { TRC_PV_MATH_STATE_RESTORE, 0 },
		{ TRC_PV_PAGING_FIXUP, 2 }, { TRC_PV_GDT_LDT_MAPPING_FAULT, 2 },
		{ TRC_PV_PTWR_EMULATION, 4 }, { TRC_PV_PTWR_EMULATION | TRC_64_FLAG, 6 },
		{ TRC_PV_PTWR_EMULATION_PAE, 4 },
		{ TRC_PV_HYPERCALL_SUBCALL, 2 },
		{ TRC_SHADOW_NOT_SHADOW | 0x200, 5 }, { TRC_SHADOW_FAST_PROPAGATE | 0x200, 3 },
		{ TRC_SHADOW_FAST_MMIO, 2 }, { TRC_SHADOW_FALSE_FAST_PATH, 2 },
		{ TRC_SHADOW_MMIO, 2 }, { TRC_SHADOW_FIXUP, 4 }, { TRC_SHADOW_DOMF_DYING, 2 },
		{ TRC_SHADOW_EMULATE, 7 }, { TRC_SHADOW_EMULATE_UNSHADOW_USER, 3 },
		{ TRC_SHADOW_EMULATE_UNSHADOW_EVTINJ, 3 },
		{ TRC_SHADOW_EMULATE_UNSHADOW_UNHANDLED, 3 }, { TRC_SHADOW_WRMAP_BF, 2 },
		{ TRC_SHADOW_PREALLOC_UNPIN, 2 }, { TRC_SHADOW_RESYNC_FULL, 2 },
		{ TRC_SHADOW_RESYNC_ONLY, 2 },
		{ TRC_PM_FREQ_CHANGE, 2 }, { TRC_PM_IDLE_ENTRY, 4 }, { TRC_PM_IDLE_EXIT, 6 },
		{ TRC_HW_IRQ_MOVE_CLEANUP_DELAY, 3 }, { TRC_HW_IRQ_MOVE_CLEANUP, 3 },
		{ TRC_HW_IRQ_BIND_VECTOR, 2 }, { TRC_HW_IRQ_CLEAR_VECTOR, 2 },
		{ TRC_HW_IRQ_MOVE_FINISH, 3 }, { TRC_HW_IRQ_ASSIGN_VECTOR, 7 },
		{ TRC_HW_IRQ_UNMAPPED_VECTOR, 1 }, { TRC_HW_IRQ_HANDLED, 3 },
		/* credit, credit2, rtds, null: 0x00022000 | sched << 9 | n */
		{ 0x00022001, 0 }, { 0x00022002, 3 }, { 0x00022003, 3 }, { 0x00022004, 3 },
		{ 0x00022005, 3 }, { 0x00022006, 1 }, { 0x00022007, 2 }, { 0x00022008, 2 },
		{ 0x00022009, 1 }, { 0x0002200a, 2 }, { 0x0002200b, 2 },
		{ 0x00022201, 0 }, { 0x00022202, 2 }, { 0x00022203, 4 }, { 0x00022204, 2 },
		{ 0x00022205, 3 }, { 0x00022206, 1 }, { 0x00022207, 3 }, { 0x00022208, 0 },
		{ 0x00022209, 0 }, { 0x0002220a, 2 }, { 0x0002220b, 4 }, { 0x0002220c, 6 },
		{ 0x0002220d, 3 }, { 0x0002220e, 1 }, { 0x0002220f, 2 }, { 0x00022210, 2 },
		{ 0x00022211, 6 }, { 0x00022213, 4 }, { 0x00022214, 3 }, { 0x00022215, 2 },
		{ 0x00022216, 2 }, { 0x00022217, 1 },
		{ 0x00022801, 1 }, { 0x00022802, 5 }, { 0x00022803, 6 }, { 0x00022804, 6 },
		{ 0x00022805, 0 }, { 0x00022806, 1 },
		{ 0x00022a01, 2 }, { 0x00022a02, 2 }, { 0x00022a03, 2 }, { 0x00022a04, 2 },
		{ 0x00022a05, 2 }, { 0x00022a06, 0 },
		/* outside every catalogue: must come out as xen/unknown */
		{ 0x00022018, 1 }, { 0x0000f00f, 3 },
	};
	int ret = 0;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		uint32_t w[7] = { IDLE_DOM, cpu, 3, 4, 5, 6, 7 };

		if ((ids[i].id & 0x0ffff00f) == TRC_SCHED_RUNSTATE_CHANGE)
			w[0] = packed(IDLE_DOM, cpu + 1);	/* not the running idle vCPU */
		if (ids[i].id == TRC_SCHED_SWITCH)
			w[2] = IDLE_DOM, w[3] = cpu;	/* SWITCH to what already runs */
		if (ids[i].id == TRC_PV_HYPERCALL_SUBCALL)
			w[0] = 3 | TRC_PV_HYPERCALL_V2_ARG_32(0);
		/* HVM handler records carry no TSC */
		ret |= put(g, cpu, ids[i].id, (ids[i].id & 0xfffff000) == TRC_HVM_HANDLER ?
			   NO_TSC : t + i, ids[i].n, w);
	}
	return ret;
}

static int flush_windows(struct gen *g, FILE *f)
{
	for (int cpu = 0; cpu < g->p->ncpus; cpu++) {
		struct cpu *c = &g->cpus[cpu];
		uint32_t hdr[3] = { TRC_TRACE_CPU_CHANGE | 2u << TRACE_EXTRA_SHIFT, cpu, c->len };

		if (!c->len)
			continue;
		if (fwrite(hdr, 4, 3, f) != 3 || fwrite(c->buf, 1, c->len, f) != c->len)
			return -EIO;
		g->t->bytes += 12;
		c->len = 0;
	}
	return 0;
}

void xtgen_defaults(struct xtgen_params *p)
{
	memset(p, 0, sizeof(*p));
	p->ncpus = 4;
	p->ndoms = 3;
	p->nvcpus = 2;
	p->epochs = 20;
	p->epoch_ticks = 24000000;	/* 10 ms at 2.4 GHz */
	p->tsc0 = 1000000000000ull;
	p->seed = 1;
	p->hvm = true;
	p->pv = true;
	p->switch_records = true;
	p->ring_bytes = 4 * 4096 - 8;
}

int xtgen_write(const struct xtgen_params *p, FILE *f, struct xtgen_truth *t)
{
	struct gen gs = { .p = p, .t = t, .rnd = 0x9e3779b97f4a7c15ull ^ p->seed }, *g = &gs;
	int nglob = p->ndoms * p->nvcpus, ret = 0;

	memset(t, 0, sizeof(*t));
	t->max_cpu = -1;
	if (p->ncpus < 1 || p->ncpus > 256 || p->ndoms < 1 || p->ndoms > XTGEN_MAX_DOMS ||
	    p->nvcpus < 1 || p->nvcpus > XTGEN_MAX_VCPUS)
		return -EINVAL;
	g->cpus = calloc(p->ncpus, sizeof(*g->cpus));
	if (!g->cpus)
		return -ENOMEM;
	for (int c = 0; c < p->ncpus; c++) {
		g->cpus[c].cur_dom = -1;	/* idle vCPU c */
		g->cpus[c].cur_vcpu = c;
	}

	for (uint64_t e = 0; e < p->epochs && !ret; e++) {
		uint64_t t0 = p->tsc0 + e * p->epoch_ticks, t1 = t0 + p->epoch_ticks;
		int late = p->late_domain ? p->ndoms - 1 : -1;

		if (late >= 0 && e == p->epochs / 2) {
			ret |= PUT(0, TRC_DOM0_DOM_ADD, t0, late);
			ret |= PUT(0, TRC_SCHED_DOM_ADD, t0, late);
		}
		for (int cpu = 0; cpu < p->ncpus && !ret; cpu++) {
			int mine[XTGEN_MAX_DOMS * XTGEN_MAX_VCPUS], n = 0, nsl;

			for (int gi = 0; gi < nglob; gi++) {
				int d = gi / p->nvcpus;

				if (d == late && e < p->epochs / 2)
					continue;
				if ((uint64_t)(gi + e) % p->ncpus == (uint64_t)cpu)
					mine[n++] = gi;
			}
			if (p->lost_every && e % p->lost_every == (uint64_t)cpu % p->lost_every) {
				uint32_t nl = 1 + rnd(g) % 1000;

				ret |= PUT(cpu, TRC_LOST_RECORDS, t0, nl, IDLE_DOM | (uint32_t)cpu << 16, (uint32_t)(t0 - 5), (t0 - 5) >> 32);
				t->lost_records++;
				t->lost += nl;
			}
			/* slices: vCPU, idle, vCPU, idle, ... then idle to the end */
			nsl = 2 * n + 1;
			for (int s = 0; s < nsl && !ret; s++) {
				uint64_t a = t0 + p->epoch_ticks * s / nsl;
				uint64_t b = t0 + p->epoch_ticks * (s + 1) / nsl;
				int dom = IDLE_DOM, vcpu = cpu;

				if (s % 2 == 0 && s / 2 < n) {
					dom = mine[s / 2] / p->nvcpus;
					vcpu = mine[s / 2] % p->nvcpus;
				}
				if (s == 0 && e == 0 && dom == IDLE_DOM)
					ret |= PUT(cpu, TRC_SCHED_RUNSTATE_CHANGE | 1 << 8, a,
						   packed(IDLE_DOM, cpu));
				else if (!(dom == IDLE_DOM && g->cpus[cpu].cur_dom < 0 &&
					   g->cpus[cpu].cur_vcpu == cpu))
					ret |= do_switch(g, cpu, dom, vcpu, a);
				ret |= slice_events(g, cpu, dom, a, b);
				if (p->skew_every && s == 1 && e % p->skew_every == 0) {
					/* a record stamped before its predecessor */
					ret |= PUT(cpu, TRC_HW_IRQ_HANDLED, g->cpus[cpu].last_tsc - 777,
						   99, 0, 0);
					g->cpus[cpu].last_tsc += 777;
					t->skew++;
				}
			}
			(void)t1;
		}
		/* the epoch ends with every pCPU idle: close all intervals */
		for (int cpu = 0; cpu < p->ncpus && !ret; cpu++)
			if (g->cpus[cpu].cur_dom >= 0)
				ret |= do_switch(g, cpu, IDLE_DOM, cpu, t1 - 1);
		if (!ret && p->all_ids && e + 1 == p->epochs)
			ret = all_ids(g, 0, t1);
		if (!ret)
			ret = flush_windows(g, f);
	}
	for (int c = 0; c < p->ncpus; c++)
		free(g->cpus[c].buf);
	free(g->cpus);
	return ret;
}
