// SPDX-License-Identifier: GPL-2.0
/*
 * A thread that gives Xen its buffer space back as fast as xentrace does:
 * woken by VIRQ_TBUF or its own timer (see WAKE_NUM), it copies every
 * pCPU window into a staging ring and advances cons, nothing else. Decoding and
 * writing happen in the caller's thread from the ring. On two busy cores
 * the converter may lag a little; the buffers do not wait for it.
 *
 * The ring is single-producer single-consumer: byte counters head and tail
 * only grow; entries (a 16-byte header and data padded to 8) never wrap:
 * a window that does not fit before the end is split into chunks.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "recorder-internal.h"
#include "tcx-util.h"

enum { ENT_DATA, ENT_PAD };

/*
 * Xen raises VIRQ_TBUF at half-full buffers; the timeout only picks up
 * what a quiet pCPU logged. xentrace's default: each wake-up of an idle
 * recorder costs dom0 a context switch.
 */
#define DRAIN_POLL_MS	100

/*
 * The drain wakes on its own when the busiest pCPU, at the last round's
 * rate, is this fraction of the way to Xen's VIRQ (half full): early
 * enough that a VIRQ delivered late costs nothing, and no VIRQ (nor its
 * unmask) while the rate holds. Never sooner than MIN_WAIT_NS, nor than
 * BUSY_MUL times the last round's own length.
 */
#define WAKE_NUM	3
#define WAKE_DEN	4
#define MIN_WAIT_NS	1000000ull
#define BUSY_MUL	4

/* The drain thread's slice: a round takes tens of microseconds. */
#define DRAIN_SLICE_NS	100000ull

/* The stop's wait for the drain thread between its notifications (a safety net). */
#define STOP_POLL_MS	100

/* An empty ring restarts at its beginning once past this: RSS stays small at low rates. */
#define REWIND_AT	(1u << 20)

/*
 * The consumer is woken once this much is staged (or at the stop); below
 * it, its own poll timeout picks the data up. A wake-up per Xen round
 * costs dom0 two context switches for a few KiB.
 */
#define NOTIFY_DIV	32

/*
 * The copy that frees Xen's buffers must not stall on page faults (tens
 * of microseconds each in a PV dom0) while they fill: the thread keeps
 * what one round can stage (round_max) faulted in past its head, and
 * grows that in steps of at least POPULATE_STEP after a round. The ring
 * starts with PREFAULT bytes, before Xen's buffers are enabled; a low
 * rate never goes far past the rewind point, so it never takes the rest.
 */
#define PREFAULT	(512u << 10)
#define POPULATE_STEP	(64u << 10)

#define ENT_FIRST	0x1	/* the first chunk of a window */
#define ENT_LAST	0x2	/* the last chunk of a window */
#define HDR		16u

struct ent {
	uint8_t		type;
	uint8_t		flags;
	uint16_t	cpu;
	uint32_t	len;		/* data bytes in this chunk */
	uint64_t	val;		/* DATA+FIRST: window bytes */
};

struct rec_hvdrain {
	struct rec_hvbuf	*hv;
	uint8_t			*ring;
	size_t			cap;
	uint64_t		head;		/* written by the thread */
	uint64_t		tail;		/* written by the consumer */
	uint64_t		peak;
	size_t			populated;	/* ring bytes faulted in (the thread's) */
	size_t			round_max;	/* the most one round stages */
	int			poll_ms;
	size_t			half;		/* half a pCPU buffer: Xen's VIRQ */
	size_t			win_max;	/* this round's largest window */
	uint64_t		last_ns;	/* when the last round that found data began */
	uint64_t		wait;		/* the timer's last sleep */
	struct rec_hvdrain_stats st;		/* the thread's */
	int			efd;
	int			kick;		/* eventfd: the stop wakes the thread's poll */
	int			done;		/* 1: the thread's last round is staged */
	int			err;		/* the thread's first error */
	char			errmsg[TCX_ERROR_MAX];	/* its message */
	int			stop;		/* 1: last round and exit */
	pthread_t		thread;
	bool			started;
};

static void notify(struct rec_hvdrain *d)
{
	uint64_t one = 1;

	if (write(d->efd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the consumer is awake anyway */
	}
}

static size_t room_at_end(const struct rec_hvdrain *d, uint64_t pos)
{
	return d->cap - pos % d->cap;
}

/* Wait until @need contiguous-or-not bytes are free (the consumer frees them). */
static void wait_room(struct rec_hvdrain *d, size_t need)
{
	bool told = false;

	while (d->cap - (d->head - __atomic_load_n(&d->tail, __ATOMIC_ACQUIRE)) < need) {
		struct timespec ts = { 0, 100000 };

		/* the consumer may be waiting for a notification: room needs it awake */
		if (!told) {
			notify(d);
			told = true;
		}
		nanosleep(&ts, NULL);
	}
}

/* Where the next entry goes: skip an end too short for a header and 8 bytes. */
static uint8_t *slot(struct rec_hvdrain *d, size_t *avail)
{
	size_t end = room_at_end(d, d->head);

	if (end < HDR + 8) {
		wait_room(d, end);
		__atomic_store_n(&d->head, d->head + end, __ATOMIC_RELEASE);
		end = d->cap;
	}
	*avail = end;
	return d->ring + d->head % d->cap;
}

/* Data bytes the next chunk may hold (at most @left), waiting for room. */
static size_t reserve(struct rec_hvdrain *d, size_t left)
{
	for (;;) {
		size_t avail, n;
		uint64_t free_now;

		slot(d, &avail);
		free_now = d->cap - (d->head - __atomic_load_n(&d->tail, __ATOMIC_ACQUIRE));
		if (free_now < HDR + 8) {
			wait_room(d, HDR + 8 + (left < 4096 ? left : 4096));
			continue;
		}
		n = avail - HDR;
		if (n > free_now - HDR)
			n = free_now - HDR;
		/* room is counted in 8-byte units, so a whole tail still fits */
		return n >= left ? left : n;
	}
}

static void publish(struct rec_hvdrain *d, size_t bytes)
{
	uint64_t used;

	__atomic_store_n(&d->head, d->head + bytes, __ATOMIC_RELEASE);
	used = d->head - __atomic_load_n(&d->tail, __ATOMIC_ACQUIRE);
	if (used > d->peak)
		d->peak = used;
}

static void put_chunk(struct rec_hvdrain *d, int cpu, uint8_t flags, uint64_t val,
		      const uint8_t *p, size_t len)
{
	struct ent e = { .type = ENT_DATA, .flags = flags, .cpu = (uint16_t)cpu,
			 .len = (uint32_t)len, .val = val };
	size_t avail;
	uint8_t *s = slot(d, &avail);

	memcpy(s, &e, HDR);
	memcpy(s + HDR, p, len);
	publish(d, HDR + ((len + 7) & ~(size_t)7));
}

/* A pCPU's window (rec_window_fn): into the ring, in as many chunks as it takes. */
static int stage(void *ctx, int cpu, const void *a, size_t alen, const void *b, size_t blen)
{
	struct rec_hvdrain *d = ctx;
	const uint8_t *part[2] = { a, b };
	size_t plen[2] = { alen, blen };
	uint8_t flags = ENT_FIRST;

	if (alen + blen > d->win_max)
		d->win_max = alen + blen;

	for (int i = 0; i < 2; i++) {
		const uint8_t *p = part[i];
		size_t left = plen[i];

		while (left) {
			size_t n = reserve(d, left);
			bool last = n == left && (i == 1 || !plen[1]);

			put_chunk(d, cpu, flags | (last ? ENT_LAST : 0), alen + blen, p, n);
			flags = 0;
			p += n;
			left -= n;
		}
	}
	return 0;
}

/* Nothing staged and far into the ring: pad to its end, start again at 0. */
static void rewind_if_empty(struct rec_hvdrain *d)
{
	size_t end = room_at_end(d, d->head);
	struct ent e = { .type = ENT_PAD };

	if (d->head != __atomic_load_n(&d->tail, __ATOMIC_ACQUIRE) ||
	    d->head % d->cap < REWIND_AT || end < HDR)
		return;
	e.len = (uint32_t)(end - HDR);
	memcpy(d->ring + d->head % d->cap, &e, HDR);
	publish(d, end);
}

static void round_(struct rec_hvdrain *d)
{
	uint64_t before;
	int ret;

	rewind_if_empty(d);
	before = d->head;
	d->win_max = 0;
	ret = rec_hvbuf_drain(d->hv, stage, d);

	if (ret < 0 && !d->err) {
		/* the message first: it is read once err is */
		snprintf(d->errmsg, sizeof(d->errmsg), "%s", tcx_error());
		__atomic_store_n(&d->err, ret, __ATOMIC_RELEASE);
	}
	if (d->head != before &&
	    (d->head - __atomic_load_n(&d->tail, __ATOMIC_ACQUIRE) >= d->cap / NOTIFY_DIV ||
	     __atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)))
		notify(d);
}

/*
 * How long the drain may sleep after a round that ran from @start to @end:
 * see WAKE_NUM. Never less than BUSY_MUL times the round's own length, so
 * that on a slow dom0 the timer cannot turn the drain into a busy loop.
 * A round that found nothing new measures nothing: the rate is taken
 * from the last round that found some, and the sleep backs off towards
 * the poll.
 */
static uint64_t next_wait(struct rec_hvdrain *d, uint64_t start, uint64_t end)
{
	uint64_t poll = (uint64_t)d->poll_ms * 1000000, wait = poll;
	uint64_t dt = start - d->last_ns, floor = (end - start) * BUSY_MUL;

	if (!d->win_max) {
		d->wait = d->wait && d->wait < poll / 2 ? 2 * d->wait : poll;
		return d->wait;
	}
	if (floor < MIN_WAIT_NS)
		floor = MIN_WAIT_NS;
	/* a gap of seconds (a stopped dom0) says nothing of the rate */
	if (d->half && dt < 10 * poll) {
		uint64_t t = dt * d->half / d->win_max * WAKE_NUM / WAKE_DEN;

		if (t < wait)
			wait = t > floor ? t : floor;
	}
	d->last_ns = start;
	d->wait = wait;
	return wait;
}

/* struct sched_attr as sched_setattr(2) first had it (glibc has no wrapper) */
struct drain_sched_attr {
	uint32_t	size, policy;
	uint64_t	flags;
	int32_t		nice;
	uint32_t	priority;
	uint64_t	runtime, deadline, period;
};

/*
 * It only copies, but it must run when Xen's buffers fill: at nice - 10
 * (root may), ahead of the converter and of busy neighbours, and with a
 * short slice where the kernel takes one (EEVDF, Linux 6.12): a waking
 * thread with a short slice runs at once instead of after the running
 * one's slice. Older kernels ignore it. A session run under a real-time
 * policy keeps it.
 */
static void drain_priority(void)
{
	struct drain_sched_attr a = { .size = sizeof(a), .policy = SCHED_OTHER,
				      .runtime = DRAIN_SLICE_NS };
	int prio;

	errno = 0;
	prio = getpriority(PRIO_PROCESS, 0);
	if (errno)
		return;
#ifdef SYS_sched_setattr
	if (sched_getscheduler(0) == SCHED_OTHER) {
		a.nice = prio - 10;
		if (!syscall(SYS_sched_setattr, 0, &a, 0))
			return;
		/* not root: the slice alone */
		a.nice = prio;
		if (errno == EPERM && !syscall(SYS_sched_setattr, 0, &a, 0))
			return;
	}
#endif
	if (setpriority(PRIO_PROCESS, gettid(), prio - 10)) {
		/* not permitted: the session's priority then */
	}
}

/*
 * Room for the next round faulted in past the head (see PREFAULT): a
 * round writes at most round_max bytes from there, wrapping into the start.
 */
static void populate_ahead(struct rec_hvdrain *d)
{
	size_t want = d->head % d->cap + d->round_max;

	if (want > d->cap)
		want = d->cap;
	if (want <= d->populated)
		return;
	/* whole steps: a syscall per step, not per round */
	want = d->populated + ((want - d->populated + POPULATE_STEP - 1) &
			       ~(size_t)(POPULATE_STEP - 1));
	if (want > d->cap)
		want = d->cap;
	tcx_pages_populate(d->ring, d->populated, want - d->populated);
	d->populated = want;
}

static void *thread_fn(void *arg)
{
	struct rec_hvdrain *d = arg;
	/* a first round soon: it measures the rate since the enable */
	uint64_t wait = MIN_WAIT_NS;
	sigset_t all;

	/* signals belong to the session's thread */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	drain_priority();
	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		struct pollfd p[2] = { { .fd = rec_hvbuf_fd(d->hv), .events = POLLIN },
				       { .fd = d->kick, .events = POLLIN } };
		struct timespec ts = { (time_t)(wait / 1000000000), (long)(wait % 1000000000) };
		uint64_t start;
		bool virq;

		virq = ppoll(p, 2, &ts, NULL) > 0 && (p[0].revents & POLLIN);
		start = tcx_now_ns();
		/*
		 * The copy first, then the unmask: Xen's buffers wait for
		 * nothing else, and a VIRQ raised meanwhile is delivered at
		 * the unmask.
		 */
		round_(d);
		wait = next_wait(d, start, tcx_now_ns());
		/* after the copy and the clock: the faults are the next round's */
		populate_ahead(d);
		d->st.rounds++;
		d->st.virqs += virq;
		if (wait < d->st.min_wait_ns || !d->st.min_wait_ns)
			d->st.min_wait_ns = wait;
		if (virq)
			rec_hvbuf_ack(d->hv);
		if (d->err)
			break;
	}
	/* the caller disabled tracing: what is left is all there is */
	if (!d->err)
		round_(d);
	__atomic_store_n(&d->done, 1, __ATOMIC_RELEASE);
	notify(d);
	return NULL;
}

int rec_hvdrain_open(struct rec_hvdrain **out, size_t ring_bytes, int poll_ms)
{
	struct rec_hvdrain *d = calloc(1, sizeof(*d));
	int ret;

	*out = NULL;
	if (!d)
		return tcx_fail(-ENOMEM, "out of memory");
	d->cap = (ring_bytes ? ring_bytes : (32u << 20)) & ~(size_t)7;
	if (d->cap < (1u << 16))
		d->cap = 1u << 16;
	d->poll_ms = poll_ms > 0 ? poll_ms : DRAIN_POLL_MS;
	/*
	 * The first rounds' room is faulted in now (see PREFAULT). 4 KiB
	 * pages: a 2 MiB page is cleared whole at its first touch, which
	 * cost more CPU than it saved at every rate.
	 */
	d->populated = PREFAULT < d->cap ? PREFAULT : d->cap;
	d->ring = tcx_pages_alloc(d->cap, d->populated, false);
	d->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	d->kick = d->efd < 0 ? -1 : eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!d->ring || d->efd < 0 || d->kick < 0) {
		ret = d->ring ? -errno : -ENOMEM;
		tcx_fail(ret, "the drain's %s: %s", d->ring ? "eventfd" : "staging ring",
			 strerror(-ret));
		rec_hvdrain_close(d);
		return ret;
	}
	*out = d;
	return 0;
}

int rec_hvdrain_start(struct rec_hvdrain *d, struct rec_hvbuf *hv)
{
	size_t buf = (size_t)rec_hvbuf_pages(hv) * 4096;
	int ret;

	d->hv = hv;
	d->half = buf / 2;
	/*
	 * A round stages each pCPU's window once, at most its buffer, in
	 * chunks of a header and padding each: a chunk ends at the ring's end,
	 * at either part of the window, or after a wait for room (a page of
	 * data or the rest at least), and an end too short is skipped.
	 */
	d->round_max = (size_t)rec_hvbuf_ncpus(hv) *
		       (buf + (buf / 4096 + 4) * 2 * (HDR + 8 + HDR + 8));
	populate_ahead(d);
	/* Xen's buffers were enabled just now: the first round measures from here */
	d->last_ns = tcx_now_ns();
	ret = -pthread_create(&d->thread, NULL, thread_fn, d);
	if (ret)
		return tcx_fail(ret, "cannot start the drain thread: %s", strerror(-ret));
	d->started = true;
	return 0;
}

void rec_hvdrain_get_stats(const struct rec_hvdrain *d, struct rec_hvdrain_stats *st)
{
	/* the thread's counters: read once it is joined */
	if (d->started) {
		*st = (struct rec_hvdrain_stats){ 0 };
		return;
	}
	*st = d->st;
	st->ring_bytes = d->populated;
}

int rec_hvdrain_fd(const struct rec_hvdrain *d)
{
	return d->efd;
}

int rec_hvdrain_consume(struct rec_hvdrain *d, const struct rec_hvdrain_ops *ops, void *ctx)
{
	return rec_hvdrain_consume_for(d, ops, ctx, 0);
}

uint64_t rec_hvdrain_backlog(const struct rec_hvdrain *d)
{
	return __atomic_load_n(&d->head, __ATOMIC_ACQUIRE) - d->tail;
}

int rec_hvdrain_consume_for(struct rec_hvdrain *d, const struct rec_hvdrain_ops *ops, void *ctx,
			    uint64_t budget_ns)
{
	uint64_t head = __atomic_load_n(&d->head, __ATOMIC_ACQUIRE);
	uint64_t tail = d->tail, cnt;
	uint64_t until = budget_ns ? tcx_clock_ns(CLOCK_MONOTONIC_COARSE) + budget_ns : 0;
	int n = 0;

	if (read(d->efd, &cnt, sizeof(cnt)) < 0) {
		/* nothing signalled: consume what is there all the same */
	}
	while (tail < head) {
		struct ent e;
		int ret = 0;

		if (room_at_end(d, tail) < HDR + 8) {
			tail += room_at_end(d, tail);
			continue;
		}
		memcpy(&e, d->ring + tail % d->cap, HDR);
		if (e.type == ENT_PAD) {
			tail += HDR + e.len;
		} else {
			const uint8_t *p = d->ring + tail % d->cap + HDR;

			if ((e.flags & ENT_FIRST) && ops->window)
				ret = ops->window(ctx, e.cpu, e.val);
			if (!ret && e.len && ops->data)
				ret = ops->data(ctx, e.cpu, p, e.len);
			if (!ret && (e.flags & ENT_LAST) && ops->end)
				ret = ops->end(ctx, e.cpu);
			tail += HDR + ((e.len + 7) & ~(uint64_t)7);
		}
		__atomic_store_n(&d->tail, tail, __ATOMIC_RELEASE);
		n++;
		if (ret < 0)
			return ret;
		/* a decoder slower than Xen must still let its caller see the
		 * clock and signals; the rest stays staged */
		if (until && !(n & 15) && tcx_clock_ns(CLOCK_MONOTONIC_COARSE) >= until)
			break;
	}
	return n;
}

int rec_hvdrain_stop(struct rec_hvdrain *d, const struct rec_hvdrain_ops *ops, void *ctx)
{
	int ret;

	if (!d->started)
		return 0;
	__atomic_store_n(&d->stop, 1, __ATOMIC_RELEASE);
	/* now, not at the end of the thread's sleep (up to the poll interval) */
	if (write(d->kick, &(uint64_t){ 1 }, sizeof(uint64_t)) < 0) {
		/* saturated: the thread was woken already */
	}
	/* keep consuming: the last round may need room in the ring */
	for (;;) {
		struct pollfd p = { .fd = d->efd, .events = POLLIN };

		ret = rec_hvdrain_consume(d, ops, ctx);
		if (ret < 0)
			break;
		if (__atomic_load_n(&d->done, __ATOMIC_ACQUIRE)) {
			/* the last round is staged: the thread only returns now */
			pthread_join(d->thread, NULL);
			d->started = false;
			ret = rec_hvdrain_consume(d, ops, ctx);
			break;
		}
		/* the thread notifies when the ring needs room and when it is done */
		if (poll(&p, 1, STOP_POLL_MS) < 0 && errno != EINTR) {
			ret = tcx_fail(-errno, "waiting for the drain thread: %s", strerror(errno));
			break;
		}
	}
	if (d->started) {
		/* the consumer failed: let the thread finish into a ring nobody reads */
		__atomic_store_n(&d->tail, __atomic_load_n(&d->head, __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
		while (pthread_tryjoin_np(d->thread, NULL)) {
			struct timespec ts = { 0, 1000000 };

			__atomic_store_n(&d->tail, __atomic_load_n(&d->head, __ATOMIC_ACQUIRE),
					 __ATOMIC_RELEASE);
			nanosleep(&ts, NULL);
		}
		d->started = false;
	}
	if (ret >= 0 && d->err)
		ret = rec_hvdrain_error(d);
	return ret < 0 ? ret : 0;
}

uint64_t rec_hvdrain_peak(const struct rec_hvdrain *d)
{
	return d->peak;
}

int rec_hvdrain_error(const struct rec_hvdrain *d)
{
	int err = __atomic_load_n(&d->err, __ATOMIC_ACQUIRE);

	return err ? tcx_fail(err, "%s", d->errmsg) : 0;
}

void rec_hvdrain_close(struct rec_hvdrain *d)
{
	if (!d)
		return;
	if (d->started)
		rec_hvdrain_stop(d, &(struct rec_hvdrain_ops){ 0 }, NULL);
	if (d->efd >= 0)
		close(d->efd);
	if (d->kick >= 0)
		close(d->kick);
	tcx_pages_free(d->ring, d->cap);
	free(d);
}
