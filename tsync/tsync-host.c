// SPDX-License-Identifier: GPL-2.0
/*
 * The host's side of one guest's time sync, whatever the protocol: the
 * recorder samples at the start, at intervals and at the end, hands over
 * the hypervisor's records and the guest's pages as they pass, and solves
 * after the stop.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsync-internal.h"

#define XEN_ROUNDS	10
#define ASK_MS		30000

struct tsync_host {
	struct tsync_host_opts	o;
	const struct tsync_proto *p;
	pthread_mutex_t		lock;
	struct tsync_match	*m;
	struct tsync_gcollect	*g;
	/* ptp samples per CPU */
	uint64_t		**pts;
	int64_t			**poff;
	uint32_t		*pn, pmax;
	uint32_t		prefused;	/* samples refused (their pass left out) */
	bool			stopped;
};

static uint64_t tsc(void *ctx)
{
	(void)ctx;
	return tsync_rdtsc();
}

int tsync_host_new(struct tsync_host **out, const struct tsync_host_opts *o)
{
	const struct tsync_proto *p;
	struct tsync_host *h;

	if (!out || !o || !o->proto || !o->t || !o->nvcpu)
		return -EINVAL;
	p = tsync_proto_find(o->proto);
	if (!p || !(p->flags & TSYNC_ROLE_HOST))
		return -EPROTONOSUPPORT;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->o = *o;
	h->p = p;
	if (!h->o.long_size)
		h->o.long_size = 8;
	if (!h->o.rounds)
		h->o.rounds = XEN_ROUNDS;
	if (!h->o.clk)
		h->o.clk = tsc;
	pthread_mutex_init(&h->lock, NULL);
	if (p->flags & TSYNC_PROTO_XEN_GUEST) {
		/* measured from the hypervisor's records and the guest's pages */
		h->m = tsync_match_new(o->dom);
		h->g = tsync_gcollect_new();
		if (!h->m || !h->g)
			goto fail;
	} else {
		h->pts = calloc(o->nvcpu, sizeof(*h->pts));
		h->poff = calloc(o->nvcpu, sizeof(*h->poff));
		h->pn = calloc(o->nvcpu, sizeof(*h->pn));
		if (!h->pts || !h->poff || !h->pn)
			goto fail;
	}
	*out = h;
	return 0;
fail:
	tsync_host_free(h);
	return -ENOMEM;
}

void tsync_host_free(struct tsync_host *h)
{
	if (!h)
		return;
	tsync_match_free(h->m);
	tsync_gcollect_free(h->g);
	for (uint32_t c = 0; h->pts && c < h->o.nvcpu; c++) {
		free(h->pts[c]);
		free(h->poff[c]);
	}
	free(h->pts);
	free(h->poff);
	free(h->pn);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

static int ptp_pass(struct tsync_host *h)
{
	int64_t *ts = calloc(h->o.nvcpu, sizeof(*ts));
	int64_t *off = calloc(h->o.nvcpu, sizeof(*off));
	bool *ok = calloc(h->o.nvcpu, sizeof(*ok));
	int ret = ts && off && ok ? 0 : -ENOMEM;
	uint32_t bad = 0;

	if (!ret)
		ret = tsync_ptp_host(h->o.t, h->o.nvcpu, h->o.clk, h->o.clk_ctx, ts, off, ok);
	/* the samples are the guest's word: one outside the host's window, or
	 * with an offset no clock has, is refused with its whole pass (every
	 * CPU keeps the same count) */
	for (uint32_t c = 0; c < h->o.nvcpu && !ret; c++)
		bad += !ok[c];
	if (bad) {
		h->prefused += bad;
		free(ts);
		free(off);
		free(ok);
		return 0;
	}
	if (!ret && h->pmax % 16 == 0 && h->pn[0] == h->pmax) {
		uint32_t n = h->pmax + 16;

		for (uint32_t c = 0; c < h->o.nvcpu && !ret; c++) {
			uint64_t *t2 = realloc(h->pts[c], n * sizeof(*t2));
			int64_t *o2;

			if (t2)
				h->pts[c] = t2;
			o2 = realloc(h->poff[c], n * sizeof(*o2));
			if (o2)
				h->poff[c] = o2;
			if (!t2 || !o2)
				ret = -ENOMEM;
		}
		if (!ret)
			h->pmax = n;
	}
	for (uint32_t c = 0; c < h->o.nvcpu && !ret; c++) {
		h->pts[c][h->pn[c]] = (uint64_t)ts[c];
		h->poff[c][h->pn[c]++] = off[c];
	}
	free(ts);
	free(off);
	free(ok);
	return ret;
}

int tsync_host_sample(struct tsync_host *h)
{
	struct tsync_xen_done d;

	if (!h || h->stopped)
		return -EINVAL;
	if (h->m) {
		/* what this ask may bring, with room for warm-ups and retries */
		size_t n = ((size_t)(h->o.rounds ? h->o.rounds : 10) + 4) * (h->o.nvcpu + 1) * 2;

		pthread_mutex_lock(&h->lock);
		tsync_match_allow(h->m, n);
		if (h->g)
			tsync_gcollect_allow(h->g, n);
		pthread_mutex_unlock(&h->lock);
		return tsync_xen_ask(h->o.t, h->o.rounds, ASK_MS, &d);
	}
	return ptp_pass(h);
}

int tsync_host_record(struct tsync_host *h, const struct tsync_hvrec *r)
{
	int ret;

	if (!h || !h->m)
		return 0;
	pthread_mutex_lock(&h->lock);
	ret = tsync_match_feed(h->m, r);
	pthread_mutex_unlock(&h->lock);
	return ret;
}

int tsync_host_page(struct tsync_host *h, const void *page, size_t size, uint32_t cpu)
{
	int ret;

	if (!h || !h->g)
		return 0;
	pthread_mutex_lock(&h->lock);
	ret = tsync_gcollect_page(h->g, page, size, h->o.long_size, cpu, h->o.print_id);
	pthread_mutex_unlock(&h->lock);
	return ret < 0 ? ret : 0;
}

void tsync_host_marks(struct tsync_host *h, const struct tsync_gmark **g, size_t *ng,
		      const struct tsync_hmark **hm, size_t *nh)
{
	*ng = h->g ? tsync_gcollect_marks(h->g, g, NULL, NULL) : 0;
	*nh = h->m ? tsync_match_marks(h->m, hm) : 0;
}

int tsync_host_stop(struct tsync_host *h)
{
	int ret;

	if (!h)
		return -EINVAL;
	if (h->stopped)
		return 0;
	/* the agent's loop ends; a lost stream only loses that */
	ret = h->p->stop(h->o.t);
	h->stopped = true;
	return ret;
}

/* A copy of @n elements of @size, NULL for none (the caller checks @n). */
static void *dup_array(const void *p, size_t n, size_t size, int *ret)
{
	void *q;

	if (!n)
		return NULL;
	q = malloc(n * size);
	if (!q)
		*ret = -ENOMEM;
	else
		memcpy(q, p, n * size);
	return q;
}

/*
 * xen: the rounds so far, copied under the lock (the record loop and the
 * guest's thread feed them), solved outside it: a solve never holds up
 * a feed.
 */
static int solve_xen(struct tsync_host *h, struct tsync_solution *sol, char *summary,
		     size_t len)
{
	struct tsync_solve_opts so = { .scale = h->o.scale, .nvcpu = h->o.nvcpu, .pv = h->o.pv };
	const struct tsync_gmark *g0;
	const struct tsync_hmark *hm0;
	const struct tsync_vpair *vp0;
	struct tsync_gmark *g = NULL;
	struct tsync_hmark *hm = NULL;
	struct tsync_vpair *vp = NULL;
	size_t ng, nh, nv = 0;
	uint64_t dropped;
	int ret = 0;

	pthread_mutex_lock(&h->lock);
	ng = tsync_gcollect_marks(h->g, &g0, &so.g_start, &so.g_end);
	nh = tsync_match_marks(h->m, &hm0);
	if (h->o.vtsc) {
		nv = tsync_match_vpairs(h->m, &vp0);
		vp = dup_array(vp0, nv, sizeof(*vp), &ret);
	} else {
		g = dup_array(g0, ng, sizeof(*g), &ret);
		hm = dup_array(hm0, nh, sizeof(*hm), &ret);
	}
	dropped = tsync_match_dropped(h->m) + tsync_gcollect_dropped(h->g);
	pthread_mutex_unlock(&h->lock);
	if (so.g_start > so.g_end)
		so.g_start = so.g_end = 1;	/* no guest event at all */
	if (!ret)
		ret = h->o.vtsc ? tsync_solve_vtsc(&so, vp, nv, sol) :
				  tsync_solve(&so, g, ng, hm, nh, sol);
	free(g);
	free(hm);
	free(vp);
	if (!ret)
		sol->marks_dropped = dropped;
	if (ret == -ENODATA && h->o.pv) {
		/* a PV guest reads the host TSC: assumed, not confirmed */
		uint32_t nvc = h->o.nvcpu, *n = calloc(nvc, sizeof(*n));
		const uint64_t **tp = calloc(nvc, sizeof(*tp));
		const int64_t **op = calloc(nvc, sizeof(*op));
		const uint64_t t0 = so.g_start ? so.g_start : 1;
		const int64_t o0 = 0;

		ret = n && tp && op ? 0 : -ENOMEM;
		for (uint32_t i = 0; !ret && i < nvc; i++) {
			n[i] = 1;
			tp[i] = &t0;
			op[i] = &o0;
		}
		if (!ret)
			ret = tsync_solution_from_samples(nvc, n, tp, op, sol);
		free(n);
		free(tp);
		free(op);
		if (!ret && summary)
			snprintf(summary, len, "tsync xen: PV guest, no round reached the "
				 "hypervisor trace: offset 0 assumed, not confirmed");
		return ret ? ret : 1;	/* 1: the summary is written */
	}
	return ret;
}

static int solve(struct tsync_host *h, struct tsync_solution *sol, char *summary, size_t len,
		 const struct tsync_clock *c)
{
	int ret;

	if (h->m) {
		ret = solve_xen(h, sol, summary, len);
		if (ret == 1)
			return 0;
	} else {
		pthread_mutex_lock(&h->lock);
		ret = tsync_solution_from_samples(h->o.nvcpu, h->pn,
						  (const uint64_t *const *)h->pts,
						  (const int64_t *const *)h->poff, sol);
		/* said even when nothing went through: why is the point */
		sol->samples_refused += h->prefused;
		pthread_mutex_unlock(&h->lock);
	}
	if (!ret && summary) {
		if (h->m)
			tsync_summary_line(sol, h->o.proto, c, summary, len);
		else
			snprintf(summary, len, "tsync ptp: %u sample%s per vCPU, %u dropped as "
				 "out of order, %u refused (trace-cmd's protocol: no error bound)",
				 h->pn[0], h->pn[0] == 1 ? "" : "s", sol->samples_dropped,
				 sol->samples_refused);
	}
	return ret;
}

int tsync_host_solve(struct tsync_host *h, struct tsync_solution *sol)
{
	if (!h || !sol)
		return -EINVAL;
	return solve(h, sol, NULL, 0, NULL);
}

int tsync_host_finish(struct tsync_host *h, struct tsync_solution *sol,
		      char *summary, size_t len, const struct tsync_clock *c)
{
	if (!h || !sol)
		return -EINVAL;
	tsync_host_stop(h);
	return solve(h, sol, summary, len, c);
}
