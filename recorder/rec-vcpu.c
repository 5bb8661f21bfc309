// SPDX-License-Identifier: GPL-2.0
/*
 * The vCPU model: which vCPU runs on each pCPU. Xen logs a context switch
 * as running->x for the vCPU that leaves, then x->running for the one that
 * comes in, both on the pCPU that switches; a wakeup (blocked->runnable)
 * is logged on the waker's pCPU and says nothing about where it runs.
 * SWITCH comes first but drives the model only for captures without
 * runstate records (a SCHED_VERBOSE-only mask): it lacks the prev_state.
 */
#include <stdlib.h>

#include <stdint.h>
#include <xen/trace.h>

#include "recorder-internal.h"

#define NONE	UINT32_MAX

/* Xen runstates (public vcpu.h) */
#define RUNSTATE_running	0
#define RUNSTATE_runnable	1

struct pstate {
	uint32_t	dom, vcpu;	/* dom NONE: not known yet */
	bool		leaving;	/* it logged running->x, nobody came in yet */
	long		leave_state;
};

struct rec_vcpus {
	int		ncpus;
	bool		use_switch;
	struct pstate	p[];
};

struct rec_vcpus *rec_vcpus_new(int ncpus, bool use_switch)
{
	struct rec_vcpus *m;

	if (ncpus <= 0)
		ncpus = 1;
	m = calloc(1, sizeof(*m) + ncpus * sizeof(m->p[0]));
	if (!m)
		return NULL;
	m->ncpus = ncpus;
	m->use_switch = use_switch;
	for (int i = 0; i < ncpus; i++)
		m->p[i].dom = NONE;
	return m;
}

void rec_vcpus_free(struct rec_vcpus *m)
{
	free(m);
}

bool rec_vcpus_current(const struct rec_vcpus *m, int cpu, uint32_t *dom, uint32_t *vcpu)
{
	const struct pstate *p;

	if (cpu < 0 || cpu >= m->ncpus)
		return false;
	p = &m->p[cpu];
	if (p->dom == NONE || p->dom == REC_DOMID_IDLE)
		return false;
	*dom = p->dom;
	*vcpu = p->vcpu;
	return true;
}

static inline bool is_runstate(uint32_t ev)
{
	return (ev & 0x0ffff00f) == TRC_SCHED_RUNSTATE_CHANGE;
}

/* Switch @p (on @cpu) to (dom, vcpu); fills @sw. */
static int switch_to(struct pstate *p, int cpu, uint32_t dom, uint32_t vcpu,
		     struct rec_switch *sw)
{
	if (p->dom == NONE && dom == REC_DOMID_IDLE) {
		/* idle from the start: nothing to draw */
		p->dom = dom;
		p->vcpu = vcpu;
		p->leaving = false;
		return 0;
	}
	if (p->dom == NONE) {
		sw->prev_dom = REC_DOMID_IDLE;
		sw->prev_vcpu = cpu;
	} else {
		sw->prev_dom = p->dom;
		sw->prev_vcpu = p->vcpu;
	}
	sw->prev_state = p->leaving ? p->leave_state : REC_STATE_RUNNING;
	sw->next_dom = dom;
	sw->next_vcpu = vcpu;
	p->dom = dom;
	p->vcpu = vcpu;
	p->leaving = false;
	return 1;
}

int rec_vcpus_update(struct rec_vcpus *m, const struct rec_record *r, struct rec_switch *sw)
{
	struct pstate *p;
	uint32_t dom, vcpu;

	if (r->cpu >= m->ncpus)
		return 0;
	p = &m->p[r->cpu];
	if (is_runstate(r->event) && r->nr >= 1 && !m->use_switch) {
		unsigned int old = (r->event >> 8) & 0xf, new = (r->event >> 4) & 0xf;

		vcpu = r->w[0] & 0xffff;
		dom = r->w[0] >> 16;
		if (new == RUNSTATE_running && old != RUNSTATE_running) {
			if (p->dom == dom && p->vcpu == vcpu) {
				p->leaving = false;
				return 0;
			}
			return switch_to(p, r->cpu, dom, vcpu, sw);
		}
		if (old == RUNSTATE_running && new != RUNSTATE_running) {
			p->dom = dom;
			p->vcpu = vcpu;
			p->leaving = true;
			p->leave_state = new == RUNSTATE_runnable ? REC_STATE_RUNNING
								  : REC_STATE_BLOCKED;
		}
		return 0;
	}
	if (r->event == TRC_SCHED_CONTINUE_RUNNING && r->nr >= 1 && !m->use_switch) {
		vcpu = r->w[0] & 0xffff;
		dom = r->w[0] >> 16;
		if (p->dom == dom && p->vcpu == vcpu) {
			p->leaving = false;
			return 0;
		}
		return switch_to(p, r->cpu, dom, vcpu, sw);
	}
	if (r->event == TRC_SCHED_SWITCH && r->nr >= 4 && m->use_switch) {
		if (p->dom == r->w[2] && p->vcpu == r->w[3])
			return 0;
		if (p->dom == NONE) {
			p->dom = r->w[0];
			p->vcpu = r->w[1];
		}
		return switch_to(p, r->cpu, r->w[2], r->w[3], sw);
	}
	return 0;
}

int rec_record_vcpus(const struct rec_record *r, uint32_t dom[2], uint32_t vcpu[2])
{
	uint32_t ev = r->event;

	if ((is_runstate(ev) || ev == TRC_SCHED_CONTINUE_RUNNING) && r->nr >= 1) {
		dom[0] = r->w[0] >> 16;
		vcpu[0] = r->w[0] & 0xffff;
		return 1;
	}
	switch (ev) {
	case TRC_SCHED_SWITCH:
		if (r->nr < 4)
			return 0;
		dom[0] = r->w[0];
		vcpu[0] = r->w[1];
		dom[1] = r->w[2];
		vcpu[1] = r->w[3];
		return 2;
	case TRC_SCHED_SLEEP:
	case TRC_SCHED_WAKE:
	case TRC_SCHED_YIELD:
	case TRC_SCHED_BLOCK:
	case TRC_SCHED_SWITCH_INFPREV:
	case TRC_SCHED_SWITCH_INFNEXT:
	case TRC_SCHED_SWITCH_INFCONT:
		if (r->nr < 2)
			return 0;
		dom[0] = r->w[0];
		vcpu[0] = r->w[1];
		return 1;
	case TRC_LOST_RECORDS:
		/* domid low, vcpu high: the reverse of the runstate packing */
		if (r->nr < 2)
			return 0;
		dom[0] = r->w[1] & 0xffff;
		vcpu[0] = r->w[1] >> 16;
		return 1;
	}
	return 0;
}
