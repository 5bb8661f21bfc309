// SPDX-License-Identifier: GPL-2.0
/*
 * convert's records on several threads: the calling thread reads the
 * capture, 1 MiB at a time as rec_read_xentrace() does, into a ring of a
 * few chunks that every worker walks (struct rec_walk); each worker takes
 * the windows of its own pCPUs, decodes them through a stream and a sink
 * of its own, and writes their pages into their regions of the one file
 * (a tdat writer with params.shared, every region reserved before). What
 * a record becomes depends only on its own pCPU's records, so the pages
 * are those of one thread.
 *
 * What is not per pCPU is put together after the workers are done: the
 * counters (sums, minima, maxima), the vCPUs seen (a set), the TSC given
 * to the records of a pCPU that never had one (the newest of them all).
 * The one thing that depends on the order across pCPUs is the switch to
 * SVM names for exit reasons only AMD has, first seen past the look-ahead:
 * a worker that sees one stops them all, and the caller converts again on
 * one thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "recorder-internal.h"
#include "tcx-util.h"
#include "tdat.h"

enum { RUN, STOP_FAILED, STOP_SVM };

#define CHUNK	(1u << 20)	/* as rec_read_xentrace() reads: the same results */
#define NSLOTS	4		/* chunks read ahead of the slowest worker, at most */

struct par;

struct worker {
	struct par		*p;
	int			idx;
	bool			mine[REC_MAX_CPUS];
	uint64_t		load;		/* bytes of its pCPUs' windows */
	struct rec_sink		*sink;
	struct rec_stream	*s;
	struct rec_walk		*walk;
	struct rec_read_result	res;
	int			ret;		/* the walk's */
	pthread_t		th;
	bool			running;
};

/* A chunk of the input, until every worker has walked it. */
struct slot {
	uint8_t		*buf;
	size_t		n;
	int		left;		/* workers still to walk it */
};

struct par {
	const struct rec_convert_par	*a;
	struct worker			*wk;
	int				n;
	int				stop;	/* RUN, or why everyone stops */
	pthread_mutex_t			lock;
	pthread_cond_t			filled;	/* a chunk, or the end, is there */
	pthread_cond_t			freed;	/* a slot is free */
	struct slot			slot[NSLOTS];
	uint64_t			nread;	/* chunks there so far */
	bool				ended;	/* no chunk after them */
	int				walked_out;	/* workers whose walk has ended */
	int				err;	/* then: 0, or the read's -errno */
};

static int w_feed(void *ctx, int cpu, const uint8_t *p, size_t len)
{
	struct worker *wk = ctx;

	return rec_stream_feed(wk->s, cpu, p, len);
}

/* After each window: whether this worker, or another, must stop. */
static int w_end(void *ctx, int cpu)
{
	struct worker *wk = ctx;
	struct rec_sink_stats st;
	int ret = rec_stream_end_window(wk->s, cpu);

	if (ret)
		return ret;
	if (__atomic_load_n(&wk->p->stop, __ATOMIC_RELAXED) != RUN)
		return -ECANCELED;
	if (rec_sink_error(wk->sink)) {
		__atomic_store_n(&wk->p->stop, STOP_FAILED, __ATOMIC_RELAXED);
		return -ECANCELED;
	}
	if (wk->p->a->so.svm_auto && !wk->p->a->so.svm) {
		rec_sink_get_stats(wk->sink, &st);
		if (st.svm_switched) {
			__atomic_store_n(&wk->p->stop, STOP_SVM, __ATOMIC_RELAXED);
			return -ECANCELED;
		}
	}
	return 0;
}

static const struct rec_window_ops w_ops = { w_feed, w_end };

/*
 * Every chunk in order through the worker's walk; after a failure (or a
 * stop) the chunks are only given back, so the reader never waits on it.
 */
static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct par *p = wk->p;
	bool counted = false;
	int ret = 0, err;

	for (uint64_t seq = 0;; seq++) {
		struct slot *s = &p->slot[seq % NSLOTS];

		pthread_mutex_lock(&p->lock);
		while (p->nread <= seq && !p->ended)
			pthread_cond_wait(&p->filled, &p->lock);
		if (p->nread <= seq) {
			err = p->err;
			pthread_mutex_unlock(&p->lock);
			break;
		}
		pthread_mutex_unlock(&p->lock);
		if (!ret) {
			ret = rec_walk_chunk(wk->walk, s->buf, s->n);
			/*
			 * A bad header is the input's: every worker meets it
			 * in this chunk and writes what comes before it, so
			 * it stops no other. Anything else stops them all.
			 */
			if (ret && ret != -ECANCELED && ret != -EBADMSG && ret != -EINVAL)
				__atomic_store_n(&p->stop, STOP_FAILED, __ATOMIC_RELAXED);
		}
		pthread_mutex_lock(&p->lock);
		if (ret && !counted) {
			/* the reader stops once no worker walks on */
			counted = true;
			p->walked_out++;
		}
		if (!--s->left)
			pthread_cond_signal(&p->freed);
		pthread_mutex_unlock(&p->lock);
	}
	wk->ret = ret ? ret : rec_walk_end(wk->walk, err);
	return NULL;
}

/* No chunk after those there: @err 0 at the input's end, or the read's -errno. */
static void end_input(struct par *p, int err)
{
	pthread_mutex_lock(&p->lock);
	p->ended = true;
	p->err = err;
	pthread_cond_broadcast(&p->filled);
	pthread_mutex_unlock(&p->lock);
}

/*
 * The calling thread's part: the input, 1 MiB at a time from offset 0,
 * into the next free slot, until its end, a read error, or a stop.
 */
static void read_input(struct par *p)
{
	const struct rec_convert_par *a = p->a;
	uint64_t off = 0, next_progress = 64u << 20;
	int err = 0;

	for (uint64_t seq = 0;; seq++) {
		struct slot *s = &p->slot[seq % NSLOTS];
		ssize_t n;

		pthread_mutex_lock(&p->lock);
		while (s->left)
			pthread_cond_wait(&p->freed, &p->lock);
		if (p->walked_out == p->n) {
			pthread_mutex_unlock(&p->lock);
			break;
		}
		pthread_mutex_unlock(&p->lock);
		if (__atomic_load_n(&p->stop, __ATOMIC_RELAXED) != RUN)
			break;
		n = rec_read_full(a->fd, s->buf, CHUNK, off);
		if (n <= 0) {
			err = n;
			break;
		}
		off += n;
		pthread_mutex_lock(&p->lock);
		s->n = n;
		s->left = p->n;
		p->nread++;
		pthread_cond_broadcast(&p->filled);
		pthread_mutex_unlock(&p->lock);
		if (a->progress && off >= next_progress) {
			a->progress(a->pctx, off);
			next_progress = off + (64u << 20);
		}
	}
	end_input(p, err);
}

/*
 * The heaviest pCPUs first, each to the least loaded worker: as even as
 * it gets. pCPUs the header walk saw no bytes of go by number.
 */
static void assign(struct par *p)
{
	const uint64_t *bytes = p->a->bytes;
	int n = 0, *order = malloc(REC_MAX_CPUS * sizeof(*order));

	for (int c = 0; c < REC_MAX_CPUS; c++) {
		if (bytes[c] && order)
			order[n++] = c;
		else
			p->wk[c % p->n].mine[c] = true;
	}
	/* a stable insertion sort by bytes, largest first: a few pCPUs */
	for (int i = 1; i < n; i++) {
		int c = order[i], j = i;

		while (j > 0 && bytes[order[j - 1]] < bytes[c]) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = c;
	}
	for (int i = 0; i < n; i++) {
		int to = 0;

		for (int k = 1; k < p->n; k++)
			if (p->wk[k].load < p->wk[to].load)
				to = k;
		p->wk[to].mine[order[i]] = true;
		p->wk[to].load += bytes[order[i]];
	}
	free(order);
}

static int workers_new(struct par *p)
{
	const struct rec_convert_par *a = p->a;

	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->filled, NULL);
	pthread_cond_init(&p->freed, NULL);
	for (int i = 0; i < NSLOTS; i++) {
		p->slot[i].buf = malloc(CHUNK);
		if (!p->slot[i].buf)
			return tcx_fail(-ENOMEM, "out of memory");
	}
	p->wk = calloc(p->n, sizeof(*p->wk));
	if (!p->wk)
		return tcx_fail(-ENOMEM, "out of memory");
	for (int i = 0; i < p->n; i++) {
		struct worker *wk = &p->wk[i];

		wk->p = p;
		wk->idx = i;
		wk->sink = rec_sink_new(a->w, &a->so);
		wk->s = rec_stream_new_batched(&(struct rec_stream_params){
							.max_cpus = a->so.ncpus,
							.per_cpu = true },
					       rec_sink_emit_batch, wk->sink);
		if (!wk->sink || !wk->s)
			return tcx_fail(-ENOMEM, "out of memory");
		rec_stream_set_raw(wk->s, rec_sink_emit_raw, rec_sink_emit);
	}
	assign(p);
	for (int i = 0; i < p->n; i++) {
		p->wk[i].walk = rec_walk_new(p->wk[i].mine, &w_ops, &p->wk[i], &p->wk[i].res);
		if (!p->wk[i].walk)
			return tcx_fail(-ENOMEM, "out of memory");
	}
	return 0;
}

static void workers_free(struct par *p)
{
	for (int i = 0; p->wk && i < p->n; i++) {
		rec_walk_free(p->wk[i].walk);
		rec_stream_free(p->wk[i].s);
		rec_sink_free(p->wk[i].sink);
	}
	free(p->wk);
	for (int i = 0; i < NSLOTS; i++)
		free(p->slot[i].buf);
	pthread_cond_destroy(&p->filled);
	pthread_cond_destroy(&p->freed);
	pthread_mutex_destroy(&p->lock);
}

/* The counters of @b added to @a's, as one stream over all the pCPUs would count. */
static void stream_stats_add(struct rec_stream_stats *a, const struct rec_stream_stats *b)
{
	if (b->records && (!a->records || b->first_tsc < a->first_tsc))
		a->first_tsc = b->first_tsc;
	if (b->last_tsc > a->last_tsc)
		a->last_tsc = b->last_tsc;
	if (b->max_skew > a->max_skew)
		a->max_skew = b->max_skew;
	if (b->max_cpu > a->max_cpu)
		a->max_cpu = b->max_cpu;
	a->records += b->records;
	a->fillers += b->fillers;
	a->lost_records += b->lost_records;
	a->lost += b->lost;
	a->no_tsc += b->no_tsc;
	a->no_tsc_dropped += b->no_tsc_dropped;
	a->skew += b->skew;
	a->late += b->late;
	a->cut_bytes += b->cut_bytes;
	a->windows += b->windows;
	a->cpus += b->cpus;
	a->peak_buffered += b->peak_buffered;
}

static void sink_stats_add(struct rec_sink_stats *a, const struct rec_sink_stats *b)
{
	for (int i = 0; i < REC_NR_CLASSES; i++)
		a->classes[i] += b->classes[i];
	a->unknown += b->unknown;
	a->switches += b->switches;
	a->events += b->events;
	a->vmx_before_svm += b->vmx_before_svm;
	a->svm_switched |= b->svm_switched;
}

/*
 * The workers joined: their streams finished (the records held for a pCPU
 * without a TSC take the newest TSC of all), their counters and vCPUs put
 * together. @rret: the reading's result as rec_read_xentrace() gives it.
 * Returns 0 or -ENOMEM.
 */
static int gather(struct par *p, struct rec_convert_summary *sum, struct rec_sink_stats *kst,
		  int *rret)
{
	const struct rec_convert_par *a = p->a;
	struct rec_stream_stats st;
	uint64_t latest = 0;
	int pick = 0;

	*rret = 0;
	for (int i = 0; i < p->n; i++) {
		rec_stream_get_stats(p->wk[i].s, &st);
		if (st.last_tsc > latest)
			latest = st.last_tsc;
	}
	memset(&sum->stream, 0, sizeof(sum->stream));
	sum->stream.max_cpu = -1;
	memset(kst, 0, sizeof(*kst));
	for (int i = 0; i < p->n; i++) {
		struct worker *wk = &p->wk[i];
		struct rec_sink_stats ks;
		uint32_t *v = NULL;
		size_t nv = 0;
		int ret;

		rec_stream_raise_last(wk->s, latest);
		rec_stream_finish(wk->s);
		rec_stream_get_stats(wk->s, &st);
		stream_stats_add(&sum->stream, &st);
		rec_sink_get_stats(wk->sink, &ks);
		sink_stats_add(kst, &ks);
		ret = rec_sink_vcpus(wk->sink, &v, &nv);
		for (size_t j = 0; !ret && j < nv; j++)
			ret = rec_sink_note_vcpu(a->out, v[j] >> 16, v[j] & 0xffff);
		free(v);
		if (ret)
			return tcx_fail(ret, "out of memory for the vCPUs");
		/* every reader met the same headers: the first failure that is no stop */
		if (wk->ret < 0 && wk->ret != -ECANCELED && !*rret) {
			*rret = wk->ret;
			pick = i;
		}
	}
	sum->read = p->wk[pick].res;
	return 0;
}

int rec_convert_records_par(const struct rec_convert_par *a, struct rec_convert_summary *sum,
			    struct rec_sink_stats *kst)
{
	struct par p = { .a = a, .n = a->jobs };
	int ret, rret;

	if (p.n < 2 || p.n > REC_MAX_CPUS)
		return tcx_fail(-EINVAL, "%d workers", p.n);
	ret = workers_new(&p);
	for (int i = 0; !ret && i < p.n; i++) {
		ret = -pthread_create(&p.wk[i].th, NULL, worker_main, &p.wk[i]);
		if (ret) {
			__atomic_store_n(&p.stop, STOP_FAILED, __ATOMIC_RELAXED);
			tcx_fail(ret, "cannot start a worker thread: %s", strerror(-ret));
		} else {
			p.wk[i].running = true;
		}
	}
	if (!ret)
		read_input(&p);
	else if (p.wk)
		end_input(&p, 0);	/* the workers started see the end at once */
	for (int i = 0; p.wk && i < p.n; i++)
		if (p.wk[i].running)
			pthread_join(p.wk[i].th, NULL);
	if (ret) {
		workers_free(&p);
		return ret;
	}
	ret = gather(&p, sum, kst, &rret);
	for (int i = 0; !ret && i < p.n; i++) {
		ret = rec_sink_error(p.wk[i].sink);
		if (ret)
			tcx_fail(ret, "%s: %s", a->output, tcx_error());
	}
	if (!ret && (p.stop == STOP_SVM || kst->svm_switched)) {
		ret = -EAGAIN;
	} else if (!ret && rret < 0) {
		ret = rret;
		if (rret != -EBADMSG)
			tcx_fail(rret, "%s: %s", a->input, sum->read.msg);
	}
	workers_free(&p);
	return ret;
}
