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
	if (h->m)
		return tsync_xen_ask(h->o.t, h->o.rounds, ASK_MS, &d);
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

int tsync_host_finish(struct tsync_host *h, struct tsync_solution *sol,
		      char *summary, size_t len, const struct tsync_clock *c)
{
	int ret;

	if (!h || !sol)
		return -EINVAL;
	tsync_host_stop(h);
	pthread_mutex_lock(&h->lock);
	if (h->m) {
		struct tsync_solve_opts so = { .scale = h->o.scale, .nvcpu = h->o.nvcpu,
					       .pv = h->o.pv };
		const struct tsync_gmark *g;
		const struct tsync_hmark *hm;
		size_t ng = tsync_gcollect_marks(h->g, &g, &so.g_start, &so.g_end);
		size_t nh = tsync_match_marks(h->m, &hm);

		if (so.g_start > so.g_end)
			so.g_start = so.g_end = 1;	/* no guest event at all */
		if (h->o.vtsc) {
			const struct tsync_vpair *vp;
			size_t nv = tsync_match_vpairs(h->m, &vp);

			ret = tsync_solve_vtsc(&so, vp, nv, sol);
		} else {
			ret = tsync_solve(&so, g, ng, hm, nh, sol);
		}
		if (!ret)
			sol->marks_dropped = tsync_match_dropped(h->m) +
					     tsync_gcollect_dropped(h->g);
		if (ret == -ENODATA && h->o.pv) {
			/* a PV guest reads the host TSC: assumed, not confirmed */
			uint32_t nv = h->o.nvcpu, *n = calloc(nv, sizeof(*n));
			const uint64_t **tp = calloc(nv, sizeof(*tp));
			const int64_t **op = calloc(nv, sizeof(*op));
			const uint64_t t0 = so.g_start ? so.g_start : 1;
			const int64_t o0 = 0;

			ret = n && tp && op ? 0 : -ENOMEM;
			for (uint32_t i = 0; !ret && i < nv; i++) {
				n[i] = 1;
				tp[i] = &t0;
				op[i] = &o0;
			}
			if (!ret)
				ret = tsync_solution_from_samples(nv, n, tp, op, sol);
			free(n);
			free(tp);
			free(op);
			if (!ret && summary)
				snprintf(summary, len, "tsync xen: PV guest, no round reached the "
					 "hypervisor trace: offset 0 assumed, not confirmed");
			pthread_mutex_unlock(&h->lock);
			return ret;
		}
	} else {
		ret = tsync_solution_from_samples(h->o.nvcpu, h->pn,
						  (const uint64_t *const *)h->pts,
						  (const int64_t *const *)h->poff, sol);
		if (!ret)
			sol->samples_refused += h->prefused;
	}
	pthread_mutex_unlock(&h->lock);
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
