// SPDX-License-Identifier: GPL-2.0
/*
 * Matching a guest's trapping markers in the hypervisor's records.
 *
 * The state is per vCPU, not per pCPU: a vCPU descheduled inside its exit
 * resumes later, possibly elsewhere, and only the VMENTRY that resumes
 * that vCPU closes the bracket. "The next record with a TSC" would be an
 * EMUL record on HVM, or another domain's record after a deschedule.
 *
 * Fed per pCPU (the live recorder), only each pCPU's records are in order:
 * a vCPU's records on its previous pCPU may come after those on its next.
 * Each record then names its run (the vCPU's stretch on its pCPU), and a
 * bracket that spans two runs is dropped rather than closed by an entry
 * that may not be its own. Such a bracket holds a deschedule: it is wide
 * and bounds the offset little, so dropping it costs next to nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tsync-internal.h"

enum { ST_IDLE, ST_EXITED, ST_HCALL, ST_MARKED };

struct vst {
	uint32_t	dom, vcpu;
	int		st;
	enum tsync_kind	kind;
	uint32_t	seq;
	uint64_t	h_exit;
	bool		rdtsc;		/* an RDTSC handler record in this exit */
	uint64_t	rdtsc_val;
	bool		pv_hcall;	/* the last record was HYPERCALL_V2(hvm_op) */
	uint64_t	pv_tsc;
	uint64_t	run;		/* the run the open bracket is in */
};

struct tsync_match {
	uint32_t		dom;
	struct vst		*v;
	size_t			nv, maxv;
	struct tsync_hmark	*marks;
	size_t			nmarks, maxmarks;
	struct tsync_vpair	*pairs;
	size_t			npairs, maxpairs;
	uint64_t		dropped;	/* marks and pairs past TSYNC_MARKS_MAX */
	size_t			budget;		/* marks dom0 asked for so far */
	bool			budgeted;
};

struct tsync_match *tsync_match_new(uint32_t dom)
{
	struct tsync_match *m = calloc(1, sizeof(*m));

	if (m) {
		m->dom = dom;
		m->budget = SIZE_MAX;
	}
	return m;
}

void tsync_match_free(struct tsync_match *m)
{
	if (!m)
		return;
	free(m->v);
	free(m->marks);
	free(m->pairs);
	free(m);
}

static int grow(void **p, size_t *max, size_t need, size_t size)
{
	size_t n;
	void *q;

	if (need <= *max)
		return 0;
	n = *max ? *max * 2 : 16;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*max = n;
	return 0;
}

static struct vst *vcpu_state(struct tsync_match *m, uint32_t dom, uint32_t vcpu)
{
	for (size_t i = 0; i < m->nv; i++)
		if (m->v[i].dom == dom && m->v[i].vcpu == vcpu)
			return &m->v[i];
	if (grow((void **)&m->v, &m->maxv, m->nv + 1, sizeof(*m->v)))
		return NULL;
	memset(&m->v[m->nv], 0, sizeof(*m->v));
	m->v[m->nv].dom = dom;
	m->v[m->nv].vcpu = vcpu;
	return &m->v[m->nv++];
}

static int add_mark(struct tsync_match *m, const struct vst *v, uint64_t h_entry)
{
	/* the guest decides how often it traps: bounded by what dom0 asked, counted */
	if (m->nmarks >= TSYNC_MARKS_MAX || m->nmarks >= m->budget) {
		m->dropped++;
		return 0;
	}
	if (grow((void **)&m->marks, &m->maxmarks, m->nmarks + 1, sizeof(*m->marks)))
		return -ENOMEM;
	m->marks[m->nmarks++] = (struct tsync_hmark){
		.seq = v->seq, .dom = v->dom, .vcpu = v->vcpu,
		.h_exit = v->h_exit, .h_entry = h_entry, .kind = v->kind,
	};
	return 0;
}

static int add_pair(struct tsync_match *m, const struct vst *v, uint64_t h_entry)
{
	if (m->npairs >= TSYNC_MARKS_MAX) {
		m->dropped++;
		return 0;
	}
	if (grow((void **)&m->pairs, &m->maxpairs, m->npairs + 1, sizeof(*m->pairs)))
		return -ENOMEM;
	m->pairs[m->npairs++] = (struct tsync_vpair){
		.dom = v->dom, .vcpu = v->vcpu, .h_exit = v->h_exit,
		.h_entry = h_entry, .guest = v->rdtsc_val,
	};
	return 0;
}

void tsync_match_allow(struct tsync_match *m, size_t n)
{
	/* unbounded until the first call: tools and tests that scan a whole capture */
	if (!m->budgeted)
		m->budget = 0;
	m->budgeted = true;
	m->budget = n > SIZE_MAX - m->budget ? SIZE_MAX : m->budget + n;
}

int tsync_match_feed(struct tsync_match *m, const struct tsync_hvrec *r)
{
	uint32_t ev = r->event & 0x0fffffff;
	struct vst *v;
	bool pv_prev;
	int ret = 0;

	if (!m || !r)
		return -EINVAL;
	if ((r->event & 0x0fffffff) == TSYNC_TRC_LOST) {
		for (size_t i = 0; i < m->nv; i++) {
			m->v[i].st = ST_IDLE;
			m->v[i].rdtsc = false;
			m->v[i].pv_hcall = false;
		}
		return 0;
	}
	if (!r->known || (m->dom != UINT32_MAX && r->dom != m->dom))
		return 0;
	v = vcpu_state(m, r->dom, r->vcpu);
	if (!v)
		return -ENOMEM;
	if (v->run != r->run) {
		/* another stretch: the records between may be elsewhere, unseen */
		v->st = ST_IDLE;
		v->rdtsc = false;
		v->pv_hcall = false;
		v->run = r->run;
	}
	pv_prev = v->pv_hcall;
	v->pv_hcall = false;
	if ((ev & 0x0ffff000) == 0x00081000)	/* entry/exit: nested or not */
		ev &= ~TSYNC_TRC_NESTEDFLAG;

	switch (ev) {
	case TSYNC_TRC_VMEXIT:
	case TSYNC_TRC_VMEXIT64:
	case TSYNC_TRC_SVM_EXIT:
	case TSYNC_TRC_SVM_EXIT64:
		/* a new exit: whatever was open did not complete */
		v->st = r->has_tsc ? ST_EXITED : ST_IDLE;
		v->h_exit = r->tsc;
		v->rdtsc = false;
		return 0;
	case TSYNC_TRC_CPUID:
		if (v->st == ST_EXITED && r->nr >= 2 && r->w[0] == TSYNC_CPUID_LEAF) {
			v->st = ST_MARKED;
			v->kind = TSYNC_K_CPUID;
			v->seq = r->w[1];
		}
		return 0;
	case TSYNC_TRC_VMMCALL:
		if (v->st == ST_EXITED)
			v->st = ST_HCALL;
		return 0;
	case TSYNC_TRC_RDTSC:
		if (v->st == ST_EXITED && r->nr >= 2) {
			v->rdtsc = true;
			v->rdtsc_val = ((uint64_t)r->w[1] << 32) | r->w[0];
		}
		return 0;
	case TSYNC_TRC_PV_HCALL_V2:
		if (r->nr >= 1 && (r->w[0] & 0xfffff) == TSYNC_HVM_OP && r->has_tsc) {
			v->pv_hcall = true;
			v->pv_tsc = r->tsc;
		}
		return 0;
	case TSYNC_TRC_PV_FAULT64:
		/* a round's page: the fault's TSC is both ends, as a hypercall's */
		if (r->nr >= 4 && r->has_tsc) {
			uint64_t a = ((uint64_t)r->w[3] << 32) | r->w[2];
			uint64_t page = (a - TSYNC_PV_FAULT_BASE) >> 12;
			struct vst pv = *v;

			if (a < TSYNC_PV_FAULT_BASE || (a & 0xfff) || page >= TSYNC_PV_FAULT_PAGES)
				return 0;
			pv.kind = TSYNC_K_PV;
			pv.seq = (uint32_t)page;
			pv.h_exit = r->tsc;
			return add_mark(m, &pv, r->tsc);
		}
		return 0;
	case TSYNC_TRC_VMENTRY:
		if (v->st == ST_MARKED)
			ret = add_mark(m, v, r->tsc);
		else if (v->st == ST_EXITED && v->rdtsc)
			ret = add_pair(m, v, r->tsc);
		v->st = ST_IDLE;
		v->rdtsc = false;
		return ret;
	default:
		break;
	}
	if (ev == (TSYNC_TRC_GUEST | TSYNC_GUEST_EVENT) && r->nr >= 1) {
		if (v->st == ST_HCALL) {
			v->st = ST_MARKED;
			v->kind = TSYNC_K_HVMOP;
			v->seq = r->w[0];
		} else if (pv_prev) {
			/* PV: the hypercall's TSC is both ends; no return record */
			struct vst pv = *v;

			pv.kind = TSYNC_K_PV;
			pv.seq = r->w[0];
			pv.h_exit = v->pv_tsc;
			ret = add_mark(m, &pv, v->pv_tsc);
		}
	}
	/* EMUL, INJ_VIRQ, runstate records... leave an open exit open */
	return ret;
}

size_t tsync_match_marks(const struct tsync_match *m, const struct tsync_hmark **out)
{
	*out = m->marks;
	return m->nmarks;
}

size_t tsync_match_vpairs(const struct tsync_match *m, const struct tsync_vpair **out)
{
	*out = m->pairs;
	return m->npairs;
}

uint64_t tsync_match_dropped(const struct tsync_match *m)
{
	return m->dropped;
}
