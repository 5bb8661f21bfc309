// SPDX-License-Identifier: GPL-2.0
/*
 * record -A: the guest's thread. It polls the guest's per-CPU streams and
 * its control stream, hands every whole page to time sync and to the
 * guest file, flushes the file every second and sends CLOSE when the stop
 * comes; a guest that stalls or dies stalls only this thread.
 *
 * The pages of a read go to the file on a writer thread of the guest's
 * own, so that reading the next ones (the copy out of the socket or
 * vchan) and writing these (the page check, the copy into the page
 * cache, a region's growth) run at once: each stream has two buffers,
 * one being read into while the other is written.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tdat.h"
#include "tmsg.h"
#include "rec-guest-local.h"
#include "tcx-util.h"

void rec_guest_note(struct rec_guest *g, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&g->lock);
	if (!g->sum.note[0]) {
		va_start(ap, fmt);
		vsnprintf(g->sum.note, sizeof(g->sum.note), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&g->lock);
}

/* --guest-max-bytes: the guest's stream ends here, the recording goes on. */
static void over_limit(struct rec_guest *g)
{
	g->over = true;
	pthread_mutex_lock(&g->lock);
	snprintf(g->sum.limit, sizeof(g->sum.limit), "max-bytes");
	pthread_mutex_unlock(&g->lock);
	rec_guest_note(g, "its stream reached --guest-max-bytes (%llu bytes): ended there",
		       (unsigned long long)g->max_bytes);
}

/* ---- the writer thread ---- */

/* A read's whole pages, on their way into the file. */
struct wjob {
	int cpu;
	uint8_t *buf;
	size_t pages;
	uint64_t bytes;		/* in the file once written */
};

/*
 * The guest's writer: a FIFO of at most one buffer per CPU (the stream's
 * other buffer is being read into), so each CPU's pages stay in order.
 * @lock guards the queue, @spare, @inflight, @bad and the flags; @wlock
 * the file (g->w) between the writer and the guest's thread (flush,
 * counters). The guest's thread waits for a CPU's spare buffer: the
 * writer's pace is the reader's, as when it wrote itself.
 */
struct writer {
	struct rec_guest	*g;
	pthread_t		th;
	bool			started;
	pthread_mutex_t		lock, wlock;
	pthread_cond_t		cond;
	struct wjob		*q;
	int			head, n;
	uint8_t			**spare;	/* per CPU; NULL while queued */
	uint64_t		inflight;	/* bytes queued, not in the file yet */
	uint64_t		bad;		/* pages refused for their order */
	bool			quit;
	bool			want_idle;	/* wake the guest's thread when empty */
	atomic_bool		failed;		/* the file failed: drop pages */
};

/* The file failed: its first error into the summary. */
static void write_failed(struct rec_guest *g, struct writer *wr, int ret)
{
	pthread_mutex_lock(&g->lock);
	if (!g->sum.error) {
		g->sum.error = ret;
		snprintf(g->sum.note, sizeof(g->sum.note), "%.120s: %.120s",
			 g->path, tcx_error());
	}
	pthread_mutex_unlock(&g->lock);
	atomic_store(&wr->failed, true);
}

static void *writer_main(void *arg)
{
	struct writer *wr = arg;
	struct rec_guest *g = wr->g;
	uint64_t one = 1;

	for (;;) {
		struct wjob j;
		uint64_t bad = 0;
		bool wake;
		int ret;

		pthread_mutex_lock(&wr->lock);
		while (!wr->n && !wr->quit)
			pthread_cond_wait(&wr->cond, &wr->lock);
		if (!wr->n) {
			pthread_mutex_unlock(&wr->lock);
			break;
		}
		j = wr->q[wr->head];
		pthread_mutex_unlock(&wr->lock);

		pthread_mutex_lock(&wr->wlock);
		ret = atomic_load(&wr->failed) ? 0 :
		      tdat_write_pages(g->w, j.cpu, j.buf, j.pages, &bad);
		pthread_mutex_unlock(&wr->wlock);
		if (ret)
			write_failed(g, wr, ret);

		pthread_mutex_lock(&wr->lock);
		wr->head = (wr->head + 1) % g->cpus;
		wr->n--;
		wr->spare[j.cpu] = j.buf;
		wr->inflight -= j.bytes;
		wr->bad += bad;
		wake = !wr->n && wr->want_idle;
		if (wake)
			wr->want_idle = false;
		pthread_cond_broadcast(&wr->cond);
		pthread_mutex_unlock(&wr->lock);
		/* caught up: the guest's thread flushes and publishes */
		if (wake && write(g->wakefd, &one, sizeof(one)) < 0)
			continue;	/* the counter is full: a wakeup is pending */
	}
	return NULL;
}

/* The spare buffers and the thread; without them the guest's thread writes. */
static void writer_open(struct writer *wr, struct rec_guest *g)
{
	*wr = (struct writer){ .g = g };
	pthread_mutex_init(&wr->lock, NULL);
	pthread_mutex_init(&wr->wlock, NULL);
	pthread_cond_init(&wr->cond, NULL);
	wr->q = calloc((size_t)g->cpus, sizeof(*wr->q));
	wr->spare = calloc((size_t)g->cpus, sizeof(*wr->spare));
	if (!wr->q || !wr->spare)
		return;
	for (int c = 0; c < g->cpus; c++) {
		wr->spare[c] = malloc(READ_CHUNK + g->page_size);
		if (!wr->spare[c])
			return;
	}
	/* the guest's thread blocks every signal: so does this one */
	wr->started = !pthread_create(&wr->th, NULL, writer_main, wr);
	if (wr->started)
		pthread_setname_np(wr->th, "tcx-gwrite");
}

/* Write what is queued and end the thread: the guest's thread writes now. */
static void writer_stop(struct writer *wr)
{
	if (!wr->started)
		return;
	pthread_mutex_lock(&wr->lock);
	wr->quit = true;
	pthread_cond_broadcast(&wr->cond);
	pthread_mutex_unlock(&wr->lock);
	pthread_join(wr->th, NULL);
	wr->started = false;
}

/* After writer_stop(): the spare buffers and the locks. */
static void writer_free(struct writer *wr)
{
	for (int c = 0; wr->spare && c < wr->g->cpus; c++)
		free(wr->spare[c]);
	free(wr->spare);
	free(wr->q);
	pthread_cond_destroy(&wr->cond);
	pthread_mutex_destroy(&wr->wlock);
	pthread_mutex_destroy(&wr->lock);
}

/* Whether nothing is queued; if not, the writer wakes us when it is. */
static bool writer_idle(struct writer *wr)
{
	bool idle;

	if (!wr->started)
		return true;
	pthread_mutex_lock(&wr->lock);
	idle = !wr->n;
	wr->want_idle = !idle;
	pthread_mutex_unlock(&wr->lock);
	return idle;
}

/*
 * Queue @take of the @n whole pages in stream @cpu's buffer and go on in
 * its spare one, with the piece of a page that followed them.
 */
static void writer_queue(struct writer *wr, int cpu, struct stream *s, size_t n,
			 size_t take)
{
	struct rec_guest *g = wr->g;
	size_t ps = g->page_size, rest = s->fill - n * ps;
	uint8_t *next;

	pthread_mutex_lock(&wr->lock);
	while (!wr->spare[cpu])
		pthread_cond_wait(&wr->cond, &wr->lock);
	next = wr->spare[cpu];
	wr->spare[cpu] = NULL;
	wr->q[(wr->head + wr->n) % g->cpus] = (struct wjob){
		.cpu = cpu, .buf = s->buf, .pages = take, .bytes = n * ps,
	};
	wr->n++;
	wr->inflight += n * ps;
	pthread_cond_broadcast(&wr->cond);
	pthread_mutex_unlock(&wr->lock);
	memcpy(next, s->buf + n * ps, rest);
	s->buf = next;
	s->fill = rest;
}

/*
 * The whole pages in the stream's buffer to time sync and into the file:
 * checked and written in one call, without a copy, by the writer thread
 * (or here, without one).
 */
static void put_pages(struct rec_guest *g, struct writer *wr, int cpu, struct stream *s)
{
	size_t ps = g->page_size, n = s->fill / ps, take = n;
	uint64_t bad = 0;
	int ret;

	if (!n)
		return;
	/* a page the writer refuses may still carry markers */
	if (g->tsh)
		for (size_t i = 0; i < n; i++)
			tsync_host_page(g->tsh, s->buf + i * ps, ps, (uint32_t)cpu);
	if (atomic_load(&wr->failed) || g->over) {
		take = 0;	/* the file failed: drain, drop */
	} else if (g->max_bytes && g->written + n * ps > g->max_bytes) {
		take = (g->max_bytes - g->written) / ps;
		over_limit(g);
	}
	g->written += take * ps;
	if (take && wr->started) {
		writer_queue(wr, cpu, s, n, take);
		return;
	}
	if (take) {
		/* bad pages are skipped, those out of order counted here */
		pthread_mutex_lock(&wr->wlock);
		ret = tdat_write_pages(g->w, cpu, s->buf, take, &bad);
		wr->bad += bad;
		pthread_mutex_unlock(&wr->wlock);
		if (ret)
			write_failed(g, wr, ret);
	}
	s->fill -= n * ps;
	if (s->fill)
		memmove(s->buf, s->buf + n * ps, s->fill);
}

/* Read what stream @cpu has now; 1 progress, 0 nothing, -1 it ended. */
static int pump(struct rec_guest *g, struct writer *wr, int cpu, uint64_t *bytes)
{
	struct stream *s = &g->st[cpu];
	size_t round = 0;

	while (round < ROUND_MAX) {
		ssize_t n = s->t->ops->read(s->t, s->buf + s->fill, READ_CHUNK + g->page_size - s->fill);

		if (n == -EAGAIN || n == -EINTR)
			return round > 0;
		if (n <= 0) {
			s->open = false;
			if (n < 0)
				rec_guest_note(g, "cpu%d: %s", cpu, strerror((int)-n));
			return -1;
		}
		s->fill += (size_t)n;
		s->bytes += (uint64_t)n;
		*bytes += (uint64_t)n;
		round += (size_t)n;
		put_pages(g, wr, cpu, s);
	}
	return 1;
}

/* The counters of what is in the file: bytes still queued are not yet. */
static void publish(struct rec_guest *g, struct writer *wr, uint64_t bytes)
{
	struct tdat_stats st;
	uint64_t bad;

	pthread_mutex_lock(&wr->wlock);
	tdat_get_stats(g->w, -1, &st);
	pthread_mutex_unlock(&wr->wlock);
	pthread_mutex_lock(&wr->lock);
	bytes -= wr->inflight;
	bad = wr->bad;
	pthread_mutex_unlock(&wr->lock);
	pthread_mutex_lock(&g->lock);
	g->sum.bytes = bytes;
	g->sum.pages = st.pages;
	g->sum.events = st.events;
	g->sum.missed = st.missed;
	g->sum.bad_pages = st.bad_pages + bad;
	pthread_mutex_unlock(&g->lock);
}

/* What the writer took is readable in the file (under its lock). */
static void flush_file(struct rec_guest *g, struct writer *wr)
{
	pthread_mutex_lock(&wr->wlock);
	if (!atomic_load(&wr->failed))
		tdat_flush(g->w);
	pthread_mutex_unlock(&wr->wlock);
}

/* The drain thread's state between its steps. */
struct drain {
	struct rec_guest	*g;
	struct pollfd		*pfd;
	struct tmsg		*m;
	struct writer		wr;
	uint64_t		bytes, deadline;
	uint64_t		next_flush, next_publish;
	bool			closing, ctl_open, resp, lost, dirty;
	int			nopen;
	int			ctl_at;
};

/* Every open stream once; whether any moved. */
static bool pump_all(struct drain *d)
{
	struct rec_guest *g = d->g;
	bool progress = false;

	for (int c = 0; c < g->cpus; c++) {
		int r;

		if (!g->st[c].open)
			continue;
		r = pump(g, &d->wr, c, &d->bytes);
		if (g->over) {
			/* no more reading: the guest's pages cost dom0 nothing now */
			tmsg_close(g->st[c].t);
			g->st[c].t = NULL;
			g->st[c].open = false;
			g->st[c].fill = 0;
			d->nopen--;
			continue;
		}
		if (r < 0) {
			d->nopen--;
			/* before CLOSE: the guest or its agent went away */
			d->lost |= !d->closing;
			if (d->lost)
				atomic_store(&g->gone, true);
		}
		progress |= r != 0;
	}
	return progress;
}

/* rec_guest_stop() asked: CLOSE, then wait so long for the end of data. */
static void maybe_close(struct drain *d)
{
	struct rec_guest *g = d->g;

	uint64_t cut = atomic_load(&g->cutoff);

	if (d->closing || !atomic_load(&g->stop))
		return;
	d->closing = true;
	d->deadline = tcx_now_ns() + (uint64_t)g->close_ms * 1000000ull;
	if (cut && cut < d->deadline)
		d->deadline = cut;
	if (d->ctl_open && tmsg_send_cmd(g->ctl, TMSG_CLOSE)) {
		rec_guest_note(g, "CLOSE: %s", tcx_error());
		d->ctl_open = false;
	}
}

/* The periodic flush and counters; false once the CLOSE deadline passed. */
static bool tick(struct drain *d, uint64_t now)
{
	struct rec_guest *g = d->g;
	uint64_t cut;

	if (now >= d->next_flush) {
		flush_file(g, &d->wr);
		d->dirty = false;
		d->next_flush = now + FLUSH_NS;
	}
	if (now >= d->next_publish) {
		publish(g, &d->wr, d->bytes);
		d->next_publish = now + PUBLISH_NS;
	}
	cut = atomic_load(&g->cutoff);
	if (cut && now >= cut) {
		pthread_mutex_lock(&g->lock);
		snprintf(g->sum.abandoned, sizeof(g->sum.abandoned), "stop");
		pthread_mutex_unlock(&g->lock);
		rec_guest_note(g, "abandoned at the stop deadline (--guest-stop-timeout)");
		return false;
	}
	if (d->closing && now >= d->deadline) {
		rec_guest_note(g, "no end of data %d s after CLOSE: stopped waiting", g->close_ms / 1000);
		return false;
	}
	return true;
}

/* The fds to wait on: the open streams, the control channel, the wakeup. */
static int poll_set(struct drain *d)
{
	struct rec_guest *g = d->g;
	int np = 0;

	for (int c = 0; c < g->cpus; c++)
		if (g->st[c].open)
			d->pfd[np++] = (struct pollfd){ .fd = g->st[c].t->ops->fd(g->st[c].t),
							.events = POLLIN };
	d->ctl_at = -1;
	if (d->ctl_open) {
		d->ctl_at = np;
		d->pfd[np++] = (struct pollfd){ .fd = g->ctl->ops->fd(g->ctl), .events = POLLIN };
	}
	d->pfd[np++] = (struct pollfd){ .fd = g->wakefd, .events = POLLIN };
	return np;
}

/* After the poll: the wakeup, the streams' events, the agent's answer. */
static void after_poll(struct drain *d, int np)
{
	struct rec_guest *g = d->g;

	if (d->pfd[np - 1].revents) {
		uint64_t v;

		if (read(g->wakefd, &v, sizeof(v)) < 0)
			v = 0;
	}
	/* vchan: an event seen but no data yet must be acknowledged */
	for (int c = 0, i = 0; c < g->cpus; c++) {
		struct tmsg_transport *t = g->st[c].t;

		if (!g->st[c].open)
			continue;
		if (d->pfd[i++].revents)
			t->ops->wait(t, POLLIN, 0);
	}
	/*
	 * The same for the control channel: a receive with no byte there
	 * fails at once and acknowledges nothing, so an event without data
	 * (the agent's notify for a message already read) would keep its
	 * fd readable and this loop spinning until the next message. An
	 * error is left to the receive to report.
	 */
	if (d->ctl_at >= 0 && d->pfd[d->ctl_at].revents &&
	    g->ctl->ops->wait(g->ctl, POLLIN, 0) != 0) {
		/*
		 * A message that started is due whole within the control
		 * channel's timeout, and after CLOSE by the close deadline:
		 * a guest that dribbles its CLOSE_RESP cannot stretch the
		 * stop. No byte yet: -ETIMEDOUT at once, nothing consumed.
		 */
		uint64_t by = g->ctl->io_timeout_ms < 0 ? TMSG_FOREVER :
			      tcx_now_ns() + (uint64_t)g->ctl->io_timeout_ms * 1000000ull;
		int ret;

		if (d->closing && d->deadline < by)
			by = d->deadline;
		ret = tmsg_recv_until(g->ctl, d->m, 0, by);

		if (!ret && d->m->cmd == TMSG_CLOSE_RESP && d->closing) {
			d->resp = true;
		} else if (ret && ret != -ETIMEDOUT) {
			/* the agent is gone: its streams end too */
			d->ctl_open = false;
			d->lost |= !d->closing;
			if (d->lost)
				atomic_store(&g->gone, true);
		}
	}
}

/* The last counters, and why the guest's side ended if it ended early. */
static void drain_done(struct drain *d)
{
	struct rec_guest *g = d->g;

	if (d->nopen)
		for (int c = 0; c < g->cpus; c++)
			if (g->st[c].open) {
				g->st[c].open = false;
				d->lost = true;
			}
	/* every queued page into the file before the last counters */
	writer_stop(&d->wr);
	flush_file(g, &d->wr);
	publish(g, &d->wr, d->bytes);
	pthread_mutex_lock(&g->lock);
	for (int c = 0; c < g->cpus; c++)
		/* a page cut short: the agent died mid-page */
		g->sum.cut_bytes += g->st[c].fill;
	g->sum.seconds = (double)(tcx_now_ns() - g->t0_ns) / 1e9;
	/* the stop's deadline cut a CLOSE_RESP that was still coming */
	if (d->closing && !d->resp && !g->sum.abandoned[0]) {
		uint64_t cut = atomic_load(&g->cutoff);

		if (cut && tcx_now_ns() >= cut)
			snprintf(g->sum.abandoned, sizeof(g->sum.abandoned), "stop");
	}
	/* a guest cut off at its limit owes us no CLOSE_RESP */
	g->sum.died = !g->over && (d->lost || !d->resp);
	if (g->sum.died && !g->sum.note[0])
		snprintf(g->sum.note, sizeof(g->sum.note), "%s",
			 d->lost ? "the guest's agent went away before the end" :
				   "no CLOSE_RESP from the agent");
	pthread_mutex_unlock(&g->lock);
}

void *rec_guest_drain_main(void *arg)
{
	struct rec_guest *g = arg;
	struct drain d = {
		.g = g, .pfd = calloc((size_t)g->cpus + 2, sizeof(*d.pfd)),
		.m = malloc(sizeof(*d.m)), .next_flush = tcx_now_ns() + FLUSH_NS,
		.ctl_open = true, .nopen = g->cpus,
	};

	if (!d.pfd || !d.m) {
		rec_guest_note(g, "out of memory");
		d.nopen = 0;	/* no loop: straight to the summary */
	}
	writer_open(&d.wr, g);
	while (d.nopen || (d.closing && d.ctl_open && !d.resp) ||
	       (g->over && !d.closing && d.ctl_open)) {
		bool progress = pump_all(&d);
		uint64_t now;
		int np;

		maybe_close(&d);
		now = tcx_now_ns();
		if (!tick(&d, now))
			break;
		if (progress) {
			d.dirty = true;
			continue;
		}
		/* a quiet moment, once the writer caught up too (it wakes us) */
		if (d.dirty && writer_idle(&d.wr)) {
			/* what came is on disk, readable */
			flush_file(g, &d.wr);
			d.dirty = false;
			d.next_flush = now + FLUSH_NS;
			/* and counted: caught up, the counters are exact */
			publish(g, &d.wr, d.bytes);
			d.next_publish = now + PUBLISH_NS;
		}
		np = poll_set(&d);
		if (poll(d.pfd, (nfds_t)np, POLL_MS) > 0)
			after_poll(&d, np);
	}
	drain_done(&d);
	writer_free(&d.wr);
	free(d.pfd);
	free(d.m);
	atomic_store(&g->done, true);
	return NULL;
}
