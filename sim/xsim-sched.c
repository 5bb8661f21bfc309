// SPDX-License-Identifier: GPL-2.0
/*
 * The simulated scheduler and workloads: one thread per pCPU runs its vCPUs
 * in real time (a woken vCPU moves to an idle pCPU) and emits the records
 * Xen would (xen/common/sched/core.c): runstate changes, INFPREV/INFNEXT/
 * SWITCH, CONTINUE_RUNNING, WAKE (on the waker's pCPU), BLOCK, HVM VMEXIT ->
 * handler -> VMENTRY, PV HYPERCALL_V2.
 * Every run interval goes to the ground-truth log with the stamps of the
 * runstate records that open and close it.
 */
/* the current hypercall numbers, not the pre-3.2 compat aliases */
#define __XEN_TOOLS__ 1

#include <stdarg.h>
#include <string.h>
#include <time.h>

#include <stdint.h>
#include <xen/xen.h>
#include <xen/sched.h>
#include <xen/trace.h>

#include "xsim-internal.h"

#define NEVER		UINT64_MAX
#define STEP		16	/* ticks between records of one event */
#define ACT_GAP		128	/* ticks between a guest's back-to-back actions */

/* VMX and SVM exit codes for the reasons simulated. */
enum exit_kind { EX_INTR, EX_CPUID, EX_IO, EX_MSR, EX_HLT, EX_RDTSC, EX_NKINDS };
static const uint32_t vmx_reason[EX_NKINDS] = { 1, 10, 30, 31, 12, 16 };
static const uint32_t svm_reason[EX_NKINDS] = { 0x60, 0x72, 0x7b, 0x7c, 0x78, 0x6e };

void xsim_truth(struct xsim_host *h, const char *fmt, ...)
{
	va_list ap;

	if (!h->truth)
		return;
	va_start(ap, fmt);
	vfprintf(h->truth, fmt, ap);
	va_end(ap);
}

static uint64_t rnd(uint64_t *s)
{
	/* xorshift64*: cheap, and seeded per vCPU so runs are repeatable */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* Around @mean (50%..150%), never 0. */
static uint64_t jitter(uint64_t *s, uint64_t mean)
{
	if (mean < 2)
		return 1;
	return mean / 2 + rnd(s) % mean + 1;
}

static uint64_t us2tsc(const struct xsim_host *h, uint64_t us)
{
	return us * h->conf.cpu_khz / 1000;
}

static uint32_t tsc2ns(const struct xsim_host *h, uint64_t t)
{
	return (uint32_t)(t * 1000000ull / h->conf.cpu_khz);
}

static const struct xsim_dom_conf *dconf(const struct xsim_host *h,
					 const struct xsim_vcpu *v)
{
	return &h->conf.dom[v->dom];
}

static bool is_hvm(const struct xsim_host *h, const struct xsim_vcpu *v)
{
	return v && dconf(h, v)->type != XSIM_PV;
}

static uint64_t stamp(struct xsim_pcpu *p, uint64_t want)
{
	p->clk = want > p->clk ? want : p->clk + STEP;
	return p->clk;
}

/* Returns xsim_tbuf_trace()'s (1 written, 0 filtered, -ENOSPC lost). */
static int emit(struct xsim_pcpu *p, uint32_t event, bool cycles,
		uint64_t tsc, unsigned int n, const uint32_t *extra)
{
	/*
	 * A record without a TSC still lends "now" to a filler or LOST
	 * record written before it; time moves on, as get_cycles() would.
	 */
	struct xsim_rec r = { .event = event, .cycles = cycles,
			      .tsc = cycles ? tsc : stamp(p, 0), .nextra = n };

	if (n)
		memcpy(r.extra, extra, n * 4);
	r.dom = p->cur ? p->cur->domid : DOMID_IDLE;
	r.vcpu = p->cur ? p->cur->id : p->id;
	return xsim_tbuf_trace(p->h->tb, p->id, &r);
}

static uint32_t packed(const struct xsim_vcpu *v, unsigned int pcpu)
{
	/* runstate word: vcpu in bits 0-15, domid in 16-31; idle = pCPU */
	return v ? (uint32_t)v->domid << 16 | v->id
		 : (uint32_t)DOMID_IDLE << 16 | pcpu;
}

static int runstate(struct xsim_pcpu *p, const struct xsim_vcpu *v,
		    unsigned int from, unsigned int to, uint64_t t)
{
	uint32_t w = packed(v, p->id);

	return emit(p, TRC_SCHED_RUNSTATE_CHANGE | from << 8 | to << 4, true, t, 1, &w);
}

static uint64_t exit_interval(const struct xsim_host *h,
			      const struct xsim_vcpu *v)
{
	uint32_t rate = dconf(h, v)->rate;

	return rate ? (uint64_t)h->conf.cpu_khz * 1000 / rate : NEVER;
}

static void vmexit(struct xsim_pcpu *p, enum exit_kind k, uint64_t t)
{
	const uint32_t *reasons = p->h->conf.vendor == XSIM_AMD ?
				  svm_reason : vmx_reason;
	uint32_t rip = 0x81000000u + (uint32_t)(rnd(&p->rng) & 0xffff0);
	uint32_t d[7] = { reasons[k], rip, 0xffffffffu };

	emit(p, TRC_HVM_VMEXIT64, true, stamp(p, t), 3, d);
	/* Handler records carry no TSC: they take the VMEXIT's time. */
	switch (k) {
	/* payloads as Xen 4.17's vmx.c/svm.c/hvm.c/emulate.c fill them */
	case EX_INTR:
		d[0] = 0xef;	/* vector on VMX; SVM logs none */
		emit(p, TRC_HVM_INTR, false, 0,
		     p->h->conf.vendor == XSIM_AMD ? 0 : 1, d);
		break;
	case EX_CPUID:
		d[0] = 0x40000000;	/* leaf, subleaf, eax..edx */
		d[1] = 0;
		d[2] = 0x40000105;
		d[3] = 0x566e6558;	/* "XenV" */
		d[4] = 0x65584d4d;
		d[5] = 0x4d4d566e;
		emit(p, TRC_HVM_CPUID, false, 0, 6, d);
		break;
	case EX_IO:
		d[0] = 0x70;		/* port, data (32-bit address) */
		d[1] = 0x42;
		emit(p, TRC_HVM_IOPORT_READ, false, 0, 2, d);
		break;
	case EX_MSR:
		d[0] = 0x10;		/* IA32_TSC */
		d[1] = 0x1234;
		d[2] = 0;
		emit(p, TRC_HVM_MSR_READ, false, 0, 3, d);
		break;
	case EX_HLT:
		d[0] = 0;
		emit(p, TRC_HVM_HLT, false, 0, 1, d);
		break;
	default:
		break;
	}
}

static void vmentry(struct xsim_pcpu *p, uint64_t t)
{
	emit(p, TRC_HVM_VMENTRY, true, stamp(p, t), 0, NULL);
}

/* A domain whose TSC Xen emulates (tsc_mode 1, always_emulate): HVM/PVH. */
static bool vtsc(const struct xsim_host *h, const struct xsim_vcpu *v)
{
	return is_hvm(h, v) && dconf(h, v)->tsc_mode == 1;
}

/*
 * An emulated RDTSC, as hvm_rdtsc_intercept() traces it: VMEXIT(RDTSC)
 * [T], RDTSC(eax, edx: the value returned, no TSC), VMENTRY [T]. The exit
 * lasts 2..65 STEPs and Xen reads the guest's TSC anywhere inside it.
 */
static void rdtsc_exit(struct xsim_pcpu *p, uint64_t t)
{
	struct xsim_vcpu *v = p->cur;
	uint64_t len = STEP * (2 + rnd(&p->rng) % 64), at, g;
	uint32_t d[2];

	vmexit(p, EX_RDTSC, t);
	t = p->clk;		/* the exit's stamp */
	at = t + rnd(&p->rng) % (len + 1);
	g = xsim_host_gtsc(p->h, v->dom, v->id, at);
	d[0] = (uint32_t)g;
	d[1] = (uint32_t)(g >> 32);
	emit(p, TRC_HVM_RDTSC, false, 0, 2, d);
	vmentry(p, t + len);
	v->rdtsc_n++;
}

static void hypercall(struct xsim_pcpu *p, unsigned int op, uint64_t t)
{
	uint32_t d[3], n = 1;

	d[0] = op;
	switch (op) {
	case __HYPERVISOR_sched_op:
		d[n++] = SCHEDOP_block;
		d[0] |= TRC_PV_HYPERCALL_V2_ARG_32(0);
		break;
	case __HYPERVISOR_mmu_update:
		d[n++] = 1 + rnd(&p->rng) % 16;
		d[0] |= TRC_PV_HYPERCALL_V2_ARG_32(1);
		break;
	case __HYPERVISOR_vcpu_op:
		d[n++] = 7;	/* VCPUOP_stop_periodic_timer */
		d[n++] = p->cur ? p->cur->id : 0;
		d[0] |= TRC_PV_HYPERCALL_V2_ARG_32(0) |
			TRC_PV_HYPERCALL_V2_ARG_32(1);
		break;
	default:
		break;
	}
	emit(p, TRC_PV_HYPERCALL_V2, true, stamp(p, t), n, d);
}

/* One guest event while running: an HVM exit or a PV hypercall. */
static void guest_event(struct xsim_pcpu *p, uint64_t t)
{
	static const unsigned int ops[] = { __HYPERVISOR_event_channel_op,
					    __HYPERVISOR_mmu_update,
					    __HYPERVISOR_vcpu_op,
					    __HYPERVISOR_xen_version };
	struct xsim_vcpu *v = p->cur;
	struct xsim_guest *g = p->h->guest[v->dom];

	/* what the guest kernel was doing when it trapped */
	if (g)
		xsim_guest_activity(g, v->id, stamp(p, t));
	if (vtsc(p->h, v) && rnd(&v->rng) % 2) {
		/* half the exits of an emulated-TSC guest are its rdtsc */
		rdtsc_exit(p, t);
	} else if (is_hvm(p->h, v)) {
		vmexit(p, rnd(&p->rng) % EX_HLT, t);
		vmentry(p, p->clk + STEP);
	} else {
		hypercall(p, ops[rnd(&p->rng) % 4], t);
	}
	v->next_exit = p->clk + jitter(&v->rng, exit_interval(p->h, v));
}

static void start_running(struct xsim_pcpu *p, struct xsim_vcpu *v)
{
	const struct xsim_dom_conf *d = dconf(p->h, v);

	v->run_end = d->profile == XSIM_BUSY ? NEVER :
		     p->clk + jitter(&v->rng, us2tsc(p->h, d->run_us));
	v->next_exit = p->clk + jitter(&v->rng, exit_interval(p->h, v));
	p->slice_end = p->clk + us2tsc(p->h, p->h->conf.slice_us);
}

static void balance(struct xsim_pcpu *p, uint64_t t);

/* Context switch at @t from cur to @next (NULL = idle); cur goes to @to. */
static void do_switch(struct xsim_pcpu *p, struct xsim_vcpu *next,
		      enum vstate to, uint64_t t)
{
	struct xsim_host *h = p->h;
	struct xsim_vcpu *prev = p->cur;
	uint32_t d[4];
	uint64_t start, end, waited = 0;
	bool logged;

	t = stamp(p, t);
	d[0] = prev ? prev->domid : DOMID_IDLE;
	d[1] = prev ? prev->id : p->id;
	d[2] = tsc2ns(h, t - p->run_start);
	emit(p, TRC_SCHED_SWITCH_INFPREV, true, t, 3, d);

	pthread_mutex_lock(&h->slock);
	if (next && next->state == VS_RUNNABLE)
		waited = t > next->wake_tsc ? t - next->wake_tsc : 0;
	pthread_mutex_unlock(&h->slock);
	d[0] = next ? next->domid : DOMID_IDLE;
	d[1] = next ? next->id : p->id;
	d[2] = tsc2ns(h, waited);
	d[3] = next ? tsc2ns(h, us2tsc(h, h->conf.slice_us)) : (uint32_t)-1;
	emit(p, TRC_SCHED_SWITCH_INFNEXT, true, stamp(p, t), 4, d);
	d[0] = prev ? prev->domid : DOMID_IDLE;
	d[1] = prev ? prev->id : p->id;
	d[2] = next ? next->domid : DOMID_IDLE;
	d[3] = next ? next->id : p->id;
	emit(p, TRC_SCHED_SWITCH, true, stamp(p, t), 4, d);

	/* Xen's order: SWITCH, then prev's and next's runstate changes */
	/* prev leaves running: its interval closes on this stamp */
	end = stamp(p, t);
	logged = runstate(p, prev, VS_RUNNING, prev ? to : VS_RUNNABLE, end) > 0;
	start = p->run_start;
	pthread_mutex_lock(&h->slock);
	if (prev) {
		prev->state = to;
		prev->state_tsc = end;
		prev->cpu_time += end - start;
		if (to == VS_RUNNABLE)
			prev->wake_tsc = end;
	}
	if (next) {
		next->state = VS_RUNNING;
	}
	pthread_mutex_unlock(&h->slock);
	/* and whether each of its runstate records reached the buffer */
	xsim_truth(h, "run %u %u %u %lu %lu %d %d\n",
		   prev ? prev->domid : DOMID_IDLE, prev ? prev->id : p->id,
		   p->id, (unsigned long)start, (unsigned long)end,
		   p->run_logged, logged);

	p->cur = next;
	__atomic_store_n(&p->busy, next != NULL, __ATOMIC_RELEASE);
	p->run_start = stamp(p, t);
	p->run_logged = runstate(p, next, VS_RUNNABLE, VS_RUNNING,
				 p->run_start) > 0;
	if (next)
		next->state_tsc = p->run_start;
	if (next) {
		start_running(p, next);
		if (is_hvm(h, next))
			vmentry(p, p->clk + STEP);
		/* back from a block, the guest runs its task again */
		if (h->guest[next->dom])
			xsim_guest_switch(h->guest[next->dom], next->id,
					  stamp(p, p->clk), true);
	}
	balance(p, end);
}

/* The runnable vCPU of this pCPU that waits longest and is eligible at @t. */
static struct xsim_vcpu *pick(struct xsim_pcpu *p, uint64_t t,
			      uint64_t *earliest)
{
	struct xsim_vcpu *best = NULL;

	*earliest = NEVER;
	pthread_mutex_lock(&p->h->slock);
	for (unsigned int i = 0; i < p->nv; i++) {
		struct xsim_vcpu *v = p->v[i];

		if (v->state != VS_RUNNABLE)
			continue;
		if (v->wake_tsc < *earliest)
			*earliest = v->wake_tsc;
		if (v->wake_tsc <= t && (!best || v->wake_tsc < best->wake_tsc))
			best = v;
	}
	pthread_mutex_unlock(&p->h->slock);
	return best;
}

/* Wake @v at @t, logged on this (the waker's) pCPU. Under slock. */
/*
 * A woken vCPU whose pCPU is busy moves to an idle one, as the schedulers'
 * tickling does; the new pCPU picks it up at its next step. Under slock.
 */
static void migrate_locked(struct xsim_host *h, struct xsim_vcpu *v,
			   uint64_t t)
{
	struct xsim_pcpu *from = &h->pcpu[v->pcpu], *to = NULL;

	if (!h->conf.migrate ||
	    !__atomic_load_n(&from->busy, __ATOMIC_ACQUIRE))
		return;
	for (unsigned int i = 1; i < h->conf.pcpus && !to; i++) {
		struct xsim_pcpu *q = &h->pcpu[(v->pcpu + i) % h->conf.pcpus];

		if (!__atomic_load_n(&q->busy, __ATOMIC_ACQUIRE))
			to = q;
	}
	if (!to)
		return;
	for (unsigned int i = 0; i < from->nv; i++) {
		if (from->v[i] == v) {
			from->v[i] = from->v[--from->nv];
			break;
		}
	}
	to->v[to->nv++] = v;
	v->pcpu = to->id;
	xsim_truth(h, "migrate %u %u %u %u %lu\n", v->domid, v->id, from->id,
		   to->id, (unsigned long)t);
}

/*
 * A vCPU left waiting on this pCPU while another is idle moves there, as
 * an idle pCPU steals work in Xen's schedulers: without it a vCPU that
 * never blocks stays queued behind a busy one for good (2 busy vCPUs on
 * one of 2 pCPUs). Only this pCPU's thread moves its waiting vCPUs, so
 * none moves between its pick and its switch.
 */
static void balance(struct xsim_pcpu *p, uint64_t t)
{
	struct xsim_host *h = p->h;

	if (!p->cur || h->conf.pcpus < 2)
		return;
	pthread_mutex_lock(&h->slock);
	for (unsigned int i = 0; i < p->nv; i++) {
		struct xsim_vcpu *v = p->v[i];

		if (v != p->cur && v->state == VS_RUNNABLE) {
			migrate_locked(h, v, t);
			break;
		}
	}
	pthread_mutex_unlock(&h->slock);
}

static void wake_locked(struct xsim_pcpu *p, struct xsim_vcpu *v, uint64_t t)
{
	uint32_t d[2] = { v->domid, v->id };

	/* vcpu_wake(): WAKE first, then blocked->runnable */
	emit(p, TRC_SCHED_WAKE, true, t, 2, d);
	t = stamp(p, t);
	v->state = VS_RUNNABLE;
	v->wake_tsc = t;
	v->state_tsc = t;
	runstate(p, v, VS_BLOCKED, VS_RUNNABLE, t);
	migrate_locked(p->h, v, t);
}

/* A blocking vCPU sometimes kicks a blocked vCPU of another pCPU. */
static void remote_wake(struct xsim_pcpu *p, uint64_t t)
{
	struct xsim_host *h = p->h;
	unsigned int n = h->nvcpus, start;

	if (h->conf.pcpus < 2 || rnd(&p->rng) % 100 >= h->conf.xwake_pct)
		return;
	start = rnd(&p->rng) % n;
	pthread_mutex_lock(&h->slock);
	for (unsigned int i = 0; i < n; i++) {
		struct xsim_vcpu *v = &h->vcpu[(start + i) % n];

		/* only a block that happened before now can be ended now */
		if (v->pcpu != p->id && v->state == VS_BLOCKED &&
		    v->state_tsc < t) {
			wake_locked(p, v, stamp(p, t));
			/* a vCPU of its own domain: the guest woke its task */
			if (v->dom == p->cur->dom && h->guest[v->dom])
				xsim_guest_kick(h->guest[v->dom], p->cur->id,
						v->id, v->wake_tsc);
			break;
		}
	}
	pthread_mutex_unlock(&h->slock);
}

/* Earliest timer wake among this pCPU's blocked vCPUs. */
static struct xsim_vcpu *next_timer(struct xsim_pcpu *p, uint64_t *when)
{
	struct xsim_vcpu *best = NULL;

	*when = NEVER;
	pthread_mutex_lock(&p->h->slock);
	for (unsigned int i = 0; i < p->nv; i++) {
		struct xsim_vcpu *v = p->v[i];

		if (v->state == VS_BLOCKED && v->wake_tsc < *when) {
			*when = v->wake_tsc;
			best = v;
		}
	}
	pthread_mutex_unlock(&p->h->slock);
	return best;
}

static void block_cur(struct xsim_pcpu *p, uint64_t t)
{
	struct xsim_vcpu *v = p->cur, *next;
	const struct xsim_dom_conf *d = dconf(p->h, v);
	uint32_t w[2] = { v->domid, v->id };
	uint64_t e;

	/* the guest goes idle, then halts or blocks */
	if (p->h->guest[v->dom])
		xsim_guest_switch(p->h->guest[v->dom], v->id, stamp(p, t), false);
	if (is_hvm(p->h, v))
		vmexit(p, EX_HLT, t);
	else
		hypercall(p, __HYPERVISOR_sched_op, t);
	emit(p, TRC_SCHED_BLOCK, true, stamp(p, t), 2, w);
	remote_wake(p, p->clk);
	pthread_mutex_lock(&p->h->slock);
	v->wake_tsc = p->clk + jitter(&v->rng, us2tsc(p->h, d->block_us));
	pthread_mutex_unlock(&p->h->slock);
	next = pick(p, p->clk, &e);
	do_switch(p, next, VS_BLOCKED, p->clk);
}

static void slice_end(struct xsim_pcpu *p, uint64_t t)
{
	struct xsim_vcpu *v = p->cur, *next;
	uint64_t e;
	uint32_t d[4];

	if (is_hvm(p->h, v))
		vmexit(p, EX_INTR, t);
	/*
	 * The switch happens when the pick does: a PV vCPU wrote nothing
	 * since its slice began, so the clock may still be far before @t,
	 * and a vCPU another pCPU woke after the clock but before @t must
	 * not be seen running before its wake.
	 */
	if (t < p->clk)
		t = p->clk;
	next = pick(p, t, &e);
	if (next) {
		do_switch(p, next, VS_RUNNABLE, t);
		return;
	}
	t = stamp(p, t);
	d[0] = v->domid;
	d[1] = v->id;
	d[2] = tsc2ns(p->h, t - p->run_start);
	d[3] = tsc2ns(p->h, us2tsc(p->h, p->h->conf.slice_us));
	emit(p, TRC_SCHED_SWITCH_INFCONT, true, t, 4, d);
	d[0] = packed(v, p->id);
	t = stamp(p, t);
	xsim_truth(p->h, "cont %u %u %u %lu %d\n", v->domid, v->id, p->id,
		   (unsigned long)t,
		   emit(p, TRC_SCHED_CONTINUE_RUNNING, true, t, 1, d) > 0);
	p->slice_end = p->clk + us2tsc(p->h, p->h->conf.slice_us);
	if (is_hvm(p->h, v))
		vmentry(p, p->clk + STEP);
}

/* Process every event of this pCPU due up to @now; false if none left. */
static bool step(struct xsim_pcpu *p, uint64_t now)
{
	struct xsim_vcpu *tv, *rv, *v = p->cur;
	uint64_t tw, re, t = NEVER;
	int what = -1;

	tv = next_timer(p, &tw);
	if (tw < t) {
		t = tw;
		what = 0;
	}
	if (v) {
		if (v->next_exit < t) {
			t = v->next_exit;
			what = 1;
		}
		if (v->run_end < t) {
			t = v->run_end;
			what = 2;
		}
		if (p->slice_end < t) {
			t = p->slice_end;
			what = 3;
		}
	} else {
		rv = pick(p, NEVER, &re);
		if (rv && re < t) {
			t = re;
			what = 4;
		}
	}
	if (what < 0 || t > now)
		return false;
	/*
	 * Xen stamps a record when it writes it. A thread that fell behind
	 * (a rate beyond what it can produce, or a busy machine) does not
	 * replay the past: the overdue event happens now, give or take the
	 * allowed lag, and the schedule continues from there.
	 */
	if (now - t > p->h->max_lag)
		t = now - p->h->max_lag;
	if (t < p->clk)
		t = p->clk;

	switch (what) {
	case 0:
		pthread_mutex_lock(&p->h->slock);
		if (tv->state == VS_BLOCKED)
			wake_locked(p, tv, stamp(p, t));
		pthread_mutex_unlock(&p->h->slock);
		break;
	case 1:
		guest_event(p, t);
		break;
	case 2:
		block_cur(p, t);
		break;
	case 3:
		slice_end(p, t);
		break;
	case 4:
		/* it may have moved to another idle pCPU meanwhile */
		rv = pick(p, t, &re);
		if (rv)
			do_switch(p, rv, VS_RUNNABLE, t);
		break;
	}
	return true;
}

/*
 * HVMOP_xentrace as Xen traces it: the VMCALL exit [T], the VMMCALL
 * handler (eax = hypercall number), the GUEST record without TSC, and
 * VMENTRY [T] when the guest resumes.
 */
static void xentrace_hypercall(struct xsim_pcpu *p, const struct xsim_action *a,
			       uint64_t now)
{
	const struct xsim_dom_conf *dc = dconf(p->h, p->cur);
	uint32_t d[7] = { 0 };
	uint32_t reason = p->h->conf.vendor == XSIM_AMD ? 0x81 : 18;
	uint32_t rip = 0x81001000u;
	uint64_t t = stamp(p, now);

	if (dc->type == XSIM_PV) {
		/* the PV entry point logs the hypercall; no return record */
		d[0] = __HYPERVISOR_hvm_op;
		emit(p, TRC_PV_HYPERCALL_V2, true, t, 1, d);
	} else {
		d[0] = reason;
		d[1] = rip;
		d[2] = 0xffffffffu;
		emit(p, TRC_HVM_VMEXIT64, true, t, 3, d);
		d[0] = __HYPERVISOR_hvm_op;
		emit(p, TRC_HVM_VMMCALL, false, 0, 1, d);
	}
	memset(d, 0, sizeof(d));
	memcpy(d, a->data, a->len);
	emit(p, TRC_GUEST | a->event, false, 0, (a->len + 3) / 4, d);
	if (dc->type == XSIM_HVM) {
		/* an HVM guest's emulated LAPIC/PIC checks before resuming */
		d[0] = 0;
		d[1] = 0;
		emit(p, TRC_HVM_EMUL_LAPIC_PIC_INTR, true, stamp(p, t), 2, d);
	}
	if (dc->type != XSIM_PV)
		vmentry(p, p->clk + STEP);
	xsim_truth(p->h, "xentrace %u %u %u %lu %#x\n", p->cur->domid,
		   p->cur->id, p->id, (unsigned long)t, a->event);
}

/*
 * When a guest action is done. The vCPU runs the guest's process, which
 * wrote it at once after its previous one; what came between is only the
 * simulator delivering it (FIFO, socket, a pCPU wake-up). So when nothing
 * else happened on this pCPU since that previous action (no record, no
 * guest event, the same vCPU: p->clk untouched) and not longer ago than
 * the host's act_lag_us (default: as far as stamps may trail real time),
 * it follows ACT_GAP ticks after it: a marker
 * then the trap it precedes, the VMENTRY then the marker after it. Else
 * it is done now.
 */
static uint64_t action_time(struct xsim_pcpu *p, uint64_t now)
{
	if (p->act_vcpu == p->cur && p->act_end == p->clk &&
	    (now <= p->clk || now - p->clk <= p->h->act_lag))
		return p->clk + ACT_GAP;
	return now;
}

/* The guest's oldest action for the running vCPU (or any), if one waits. */
static bool guest_action(struct xsim_pcpu *p, struct xsim_guest *g)
{
	struct xsim_action a;
	uint64_t now;

	if (!xsim_guest_pop(g, p->cur->id, &a, &now))
		return false;
	now = action_time(p, now);
	if (a.kind == XA_XENTRACE) {
		xentrace_hypercall(p, &a, now);
		xsim_host_done(p->h, a.client, a.gen);
	} else {
		xsim_guest_mark(g, p->cur->id, stamp(p, now), &a);
	}
	p->act_vcpu = p->cur;
	p->act_end = p->clk;
	p->hold = a.kind == XA_XENTRACE && a.vcpu >= 0;
	return true;
}

/*
 * After an HVMOP_xentrace made for a caller pinned to the running vCPU,
 * Xen returns to that caller, which goes on at once (a marker b within a
 * µs on hardware). Its next action reaches the simulator later; until it
 * does, within the stamps' allowed lag, nothing else runs on this pCPU,
 * so the action follows ACT_GAP ticks after the VMENTRY and what fell due
 * meanwhile comes after it. Returns true while still waiting.
 */
static bool hold_for_caller(struct xsim_pcpu *p)
{
	static const struct timespec poll_gap = { 0, 10 * 1000 };
	struct xsim_guest *g = p->cur ? p->h->guest[p->cur->dom] : NULL;
	uint64_t now;

	if (!g) {
		p->hold = false;
		return false;
	}
	if (xsim_guest_pending(g) && guest_action(p, g))
		return true;
	now = xsim_rdtsc();
	if (now <= p->act_end || now - p->act_end <= p->h->max_lag) {
		nanosleep(&poll_gap, NULL);
		return true;
	}
	p->hold = false;
	return false;
}

static void *pcpu_main(void *arg)
{
	struct xsim_pcpu *p = arg;
	struct xsim_host *h = p->h;
	struct timespec tick = { 0, (long)h->conf.tick_us * 1000 };

	while (!__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE)) {
		unsigned int n = 0;

		if (p->hold && hold_for_caller(p))
			continue;

		/* "now" is read per event, so stamps follow real time */
		while (step(p, xsim_rdtsc()) && ++n < 100000)
			;
		/*
		 * what the guest asked meanwhile, done now on the running vCPU:
		 * what a process pinned to it asked, or what any vCPU may do
		 */
		while (p->cur && h->guest[p->cur->dom] &&
		       xsim_guest_pending(h->guest[p->cur->dom]) &&
		       guest_action(p, h->guest[p->cur->dom]))
			;
		if (n < 100000)
			nanosleep(&tick, NULL);
	}
	return NULL;
}

int xsim_sched_start(struct xsim_host *h)
{
	const struct xsim_conf *c = &h->conf;
	unsigned int next_pcpu = 0;

	h->nvcpus = 0;
	/* stamps trail real time by at most two wake-ups (or 200 us) */
	h->max_lag = us2tsc(h, c->tick_us * 2 > 200 ? c->tick_us * 2 : 200);
	h->act_lag = c->act_lag_us ? us2tsc(h, c->act_lag_us) : h->max_lag;
	for (unsigned int i = 0; i < c->pcpus; i++) {
		struct xsim_pcpu *p = &h->pcpu[i];

		p->h = h;
		p->id = i;
		p->clk = h->t0;
		p->run_start = h->t0;
		p->rng = c->seed * 0x9e3779b97f4a7c15ull + i + 1;
	}
	/* vCPUs placed round-robin; all start blocked with staggered timers */
	for (unsigned int d = 0; d < c->ndoms; d++) {
		for (unsigned int i = 0; i < c->dom[d].vcpus; i++) {
			struct xsim_vcpu *v = &h->vcpu[h->nvcpus++];
			struct xsim_pcpu *p = &h->pcpu[next_pcpu++ % c->pcpus];

			v->dom = d;
			v->domid = c->dom[d].domid;
			v->id = i;
			v->pcpu = p->id;
			v->state = VS_BLOCKED;
			v->state_tsc = h->t0;
			v->rng = (c->seed + 1) * 0xbf58476d1ce4e5b9ull +
				 (uint64_t)v->domid * 131 + i + 7;
			v->wake_tsc = h->t0 + jitter(&v->rng, us2tsc(h, 500));
			p->v[p->nv++] = v;
		}
	}
	for (unsigned int i = 0; i < c->pcpus; i++) {
		int err = pthread_create(&h->pcpu[i].thread, NULL, pcpu_main,
					 &h->pcpu[i]);

		if (err) {
			__atomic_store_n(&h->stop, 1, __ATOMIC_RELEASE);
			while (i--)
				pthread_join(h->pcpu[i].thread, NULL);
			return -err;
		}
	}
	return 0;
}

void xsim_sched_stop(struct xsim_host *h)
{
	__atomic_store_n(&h->stop, 1, __ATOMIC_RELEASE);
	for (unsigned int i = 0; i < h->conf.pcpus; i++)
		pthread_join(h->pcpu[i].thread, NULL);
	/* the intervals still running when the host stops */
	for (unsigned int i = 0; i < h->conf.pcpus; i++) {
		const struct xsim_pcpu *p = &h->pcpu[i];

		xsim_truth(h, "open %u %u %u %lu %d\n",
			   p->cur ? p->cur->domid : DOMID_IDLE,
			   p->cur ? p->cur->id : p->id, p->id,
			   (unsigned long)p->run_start, p->run_logged);
	}
	/* emulated RDTSC exits done, per vCPU of a tsc_mode 1 domain */
	for (unsigned int i = 0; i < h->nvcpus; i++)
		if (vtsc(h, &h->vcpu[i]))
			xsim_truth(h, "vtsc domid=%u vcpu=%u rdtsc=%lu\n",
				   h->vcpu[i].domid, h->vcpu[i].id,
				   (unsigned long)h->vcpu[i].rdtsc_n);
}
