// SPDX-License-Identifier: GPL-2.0
/*
 * One CPU's page stream: accept the host's data connection (only from the
 * session's peer, and with a session key only once it sent its token),
 * then copy whole ring-buffer pages from the instance's
 * trace_pipe_raw to it, unframed, as trace-cmd's agent does. On stop it
 * drains what is left; every page goes out whole, so the stream is a page
 * multiple without extra padding.
 *
 * Over a socket (TCP, vsock) full pages move as trace-cmd's recorder moves
 * them: splice(2) from trace_pipe_raw into a pipe and from the pipe into the
 * socket, many pages per call, never copied through user space. The kernel
 * splices whole full pages only; a partial page (a quiet CPU, or what is
 * left at stop) comes by read(), as on every other path. Over a vchan (no
 * descriptor to splice into), or when the source cannot splice, pages are
 * read() and sent in batches.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent-internal.h"
#include "tcx-hmac.h"
#include "tcx-util.h"

#define ACCEPT_WAIT_MS	30000	/* the host connects right after TRACE_RESP */
#define POLL_MS		100
/*
 * A simulated kernel hands a partial page to readers only some time after
 * its first event (xensim: 50 ms, then its next 20 ms tick), and the last
 * one holds the last time sync sample's markers: after the stop, its
 * streams read on until this long after the first empty read, counted
 * once (it keeps producing: "until nothing comes" could last for ever). A
 * real kernel's read() gives the partial page at once.
 */
#define LATE_PARTIAL_MS	100
#define BATCH_PAGES	16	/* read path: pages per send on a busy CPU */
#define SPLICE_BYTES	(256 << 10)	/* splice path: the pipe, pages per call */

/* A connection from the session's peer by @deadline_ns, or -errno. */
static int accept_peer(struct agent_stream *s, uint64_t deadline_ns)
{
	struct sockaddr_storage peer;

	while (tcx_now_ns() < deadline_ns && !*s->stop) {
		char who[64];
		int fd = tmsg_accept(s->lfd, POLL_MS, &peer, NULL);

		if (fd == -ETIMEDOUT)
			continue;
		if (fd < 0)
			return fd;
		if (!s->peer_host || tmsg_addr_matches(&peer, s->peer_host))
			return fd;
		tmsg_addr_string(&peer, who, sizeof(who));
		fprintf(s->log, "agent: cpu%d: refused data connection from %s\n",
			s->cpu, who);
		s->refused++;
		close(fd);
	}
	return -ETIMEDOUT;
}

/* How full a raw page is, in quarters of its data area (0..4). */
static unsigned int page_fill(const uint8_t *page, uint32_t page_size)
{
	/* Kernel layout: u64 timestamp, long commit, then the events. */
	const size_t hdr = 8 + sizeof(long);
	unsigned long commit;

	memcpy(&commit, page + 8, sizeof(commit));
	commit &= (1UL << 27) - 1;	/* flag bits above */
	if (page_size <= hdr)
		return 4;
	return (unsigned int)(commit * 4 / (page_size - hdr));
}

/* POLL_MS (or -s), but wake up early on stop. */
static void nap(struct agent_stream *s)
{
	unsigned int left = s->nap_us ? s->nap_us : POLL_MS * 1000;

	while (left && !*s->stop) {
		unsigned int n = left < 10000 ? left : 10000;

		usleep(n);
		left -= n;
	}
}

/* A connection waiting for its token. */
struct pending {
	int fd;
	uint64_t deadline;
	size_t got;
	uint8_t tok[TMSG_AUTH_MAC];
	char who[64];
};

static void refuse_pending(struct agent_stream *s, struct pending *p, int *np,
			   int i, const char *why)
{
	fprintf(s->log, "agent: cpu%d: refused data connection from %s: %s\n",
		s->cpu, p[i].who, why);
	s->refused++;
	close(p[i].fd);
	p[i] = p[--*np];
}

/*
 * With a session key a connection counts only once its first bytes are
 * this CPU's token. Up to MAX_PENDING connections wait for theirs at once,
 * each for token_ms: one that stays silent neither holds the port nor
 * delays the host's. The others are closed, counted and logged.
 */
#define MAX_PENDING	8

static struct tmsg_transport *accept_with_token(struct agent_stream *s,
						uint64_t deadline, int *sock)
{
	struct pending p[MAX_PENDING];
	uint8_t want[TMSG_AUTH_MAC];
	struct tmsg_transport *t = NULL;
	int np = 0;

	tmsg_auth_token(s->auth, (uint32_t)s->cpu, want);
	while (!t && (np || (tcx_now_ns() < deadline && !*s->stop))) {
		struct pollfd pfd[MAX_PENDING + 1];
		uint64_t now;
		int n = 0;

		if (np < MAX_PENDING && !*s->stop)
			pfd[n++] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
		for (int i = 0; i < np; i++)
			pfd[n++] = (struct pollfd){ .fd = p[i].fd, .events = POLLIN };
		if (poll(pfd, (nfds_t)n, POLL_MS) < 0 && errno != EINTR)
			break;
		/* tokens first: the array moves as connections go */
		for (int i = np - 1; i >= 0 && !t; i--) {
			ssize_t got = read(p[i].fd, p[i].tok + p[i].got,
					   sizeof(p[i].tok) - p[i].got);

			if (got < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (got <= 0) {
				refuse_pending(s, p, &np, i, "closed before its token");
				continue;
			}
			p[i].got += (size_t)got;
			if (p[i].got < sizeof(p[i].tok))
				continue;
			if (!tcx_mem_equal(p[i].tok, want, sizeof(want))) {
				refuse_pending(s, p, &np, i,
					       "wrong token (not this session's)");
				continue;
			}
			*sock = p[i].fd;
			p[i] = p[--np];
			t = tmsg_fd_transport(*sock, "data");
			if (t)
				snprintf(t->name, sizeof(t->name), "cpu%d data", s->cpu);
		}
		now = tcx_now_ns();
		for (int i = np - 1; i >= 0; i--)
			if (t || now >= p[i].deadline)
				refuse_pending(s, p, &np, i, t ? "the host's came first" :
					       "no token in time");
		if (!t && n && pfd[0].fd == s->lfd && (pfd[0].revents & POLLIN)) {
			struct sockaddr_storage peer;
			int fd = tmsg_accept(s->lfd, 0, &peer, NULL);

			if (fd < 0)
				continue;
			p[np] = (struct pending){ .fd = fd,
				.deadline = now + (uint64_t)s->token_ms * 1000000ull };
			tmsg_addr_string(&peer, p[np].who, sizeof(p[np].who));
			if (s->peer_host && !tmsg_addr_matches(&peer, s->peer_host)) {
				np++;
				refuse_pending(s, p, &np, np - 1, "not the session's host");
				continue;
			}
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
			np++;
		}
	}
	explicit_bzero(want, sizeof(want));
	if (!t)
		s->err = -ETIMEDOUT;
	return t;
}

/* Xen: the vchan exists already; wait for dom0 to map it. */
static int wait_vchan_client(struct agent_stream *s)
{
	for (int waited = 0; waited < ACCEPT_WAIT_MS && !*s->stop;
	     waited += POLL_MS) {
		int ret = tmsg_vchan_wait_client(s->vchan, POLL_MS);

		if (ret)
			return ret < 0 ? ret : 0;
	}
	return -ETIMEDOUT;
}

/*
 * The data connection of this CPU, once the host is there. *@sock is its
 * socket for splice (owned by the transport), or -1 for a vchan.
 */
static struct tmsg_transport *connect_host(struct agent_stream *s, int *sock)
{
	uint64_t deadline = tcx_now_ns() + ACCEPT_WAIT_MS * 1000000ull;
	char name[32];
	int fd;

	*sock = -1;
	if (s->vchan) {
		struct tmsg_transport *t = s->vchan;

		s->err = wait_vchan_client(s);
		if (s->err)
			return NULL;
		s->vchan = NULL;	/* the stream owns it now */
		return t;
	}
	if (s->auth)
		return accept_with_token(s, deadline, sock);
	fd = accept_peer(s, deadline);
	if (fd < 0) {
		s->err = fd;
		return NULL;
	}
	snprintf(name, sizeof(name), "cpu%d data", s->cpu);
	*sock = fd;
	return tmsg_fd_transport(fd, name);
}

/* Send the batched pages; 0 or the error (logged). */
static int flush(struct agent_stream *s, struct tmsg_transport *out,
		 const uint8_t *buf, size_t *used)
{
	int ret = *used ? tmsg_write_full(out, buf, *used) : 0;

	if (ret)
		fprintf(s->log, "agent: %s\n", tcx_error());
	*used = 0;
	return ret;
}

/* The splice path's pipe and the data socket; pipe[0] < 0: not splicing. */
struct splicer {
	int pipe[2];
	int sock;
	size_t len;		/* bytes asked of one splice: whole pages */
	bool out_ok;		/* the socket takes splice (else write) */
};

static void splicer_close(struct splicer *sp)
{
	if (sp->pipe[0] >= 0) {
		close(sp->pipe[0]);
		close(sp->pipe[1]);
	}
	sp->pipe[0] = sp->pipe[1] = -1;
}

static void splicer_open(struct agent_stream *s, struct splicer *sp, int sock)
{
	int size;

	sp->pipe[0] = sp->pipe[1] = -1;
	sp->sock = sock;
	sp->out_ok = true;
	if (sock < 0 || s->no_splice || pipe2(sp->pipe, O_CLOEXEC))
		return;
	/* as large as allowed up to SPLICE_BYTES; the default is 16 pages */
	fcntl(sp->pipe[1], F_SETPIPE_SZ, SPLICE_BYTES);
	size = fcntl(sp->pipe[1], F_GETPIPE_SZ);
	if (size < (int)s->page_size) {
		splicer_close(sp);
		return;
	}
	sp->len = (size_t)size / s->page_size * s->page_size;
}

/* Wait until the socket takes more; 0, or -ETIMEDOUT / -errno (logged). */
static int wait_sock(struct agent_stream *s, struct tmsg_transport *out,
		     int sock)
{
	struct pollfd pfd = { .fd = sock, .events = POLLOUT };
	int ret;

	do
		ret = poll(&pfd, 1, out->io_timeout_ms);
	while (ret < 0 && errno == EINTR);
	if (ret > 0)
		return 0;
	ret = ret ? -errno : -ETIMEDOUT;
	fprintf(s->log, "agent: cpu%d: data connection: %s\n", s->cpu,
		ret == -ETIMEDOUT ? "the host stopped reading" : strerror(-ret));
	return ret;
}

/*
 * Empty @len bytes of the pipe into the socket: splice, or read and
 * write when the socket will not take splice. A tail shorter than a page
 * (only a simulated kernel's FIFO or file gives one) becomes one page,
 * zero-padded, as a short read() does. 0 or -errno (logged).
 */
static int pipe_out(struct agent_stream *s, struct splicer *sp,
		    struct tmsg_transport *out, uint8_t *buf, size_t len)
{
	size_t full = len / s->page_size * s->page_size;

	while (full && sp->out_ok) {
		ssize_t n = splice(sp->pipe[0], NULL, sp->sock, NULL, full,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

		if (n > 0) {
			full -= (size_t)n;
			len -= (size_t)n;
		} else if (n < 0 && errno == EAGAIN) {
			int ret = wait_sock(s, out, sp->sock);

			if (ret)
				return ret;
		} else if (n < 0 && (errno == EINVAL || errno == ENOSYS ||
				     errno == EOPNOTSUPP)) {
			sp->out_ok = false;	/* write what is in the pipe */
		} else if (n < 0 && errno != EINTR) {
			int ret = -errno;

			fprintf(s->log, "agent: cpu%d: data connection: %s\n",
				s->cpu, strerror(errno));
			return ret;
		}
	}
	while (len) {
		size_t chunk = len < (size_t)BATCH_PAGES * s->page_size ?
			       len : (size_t)BATCH_PAGES * s->page_size;
		size_t used = 0;

		while (used < chunk) {
			ssize_t n = read(sp->pipe[0], buf + used, chunk - used);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {	/* cannot be: the bytes are there */
				fprintf(s->log, "agent: cpu%d: pipe: %s\n", s->cpu,
					n ? strerror(errno) : "short");
				return n ? -errno : -EIO;
			}
			used += (size_t)n;
		}
		len -= chunk;
		if (used % s->page_size) {
			size_t pad = s->page_size - used % s->page_size;

			memset(buf + used, 0, pad);
			used += pad;
			s->pages++;	/* the padded page */
		}
		if (flush(s, out, buf, &used))
			return -EIO;
	}
	return 0;
}

/*
 * One splice from trace_pipe_raw into the pipe, then out to the socket.
 * Returns >0 when pages went out, -EAGAIN when there is no full page now
 * (or 0 at the end of a simulated kernel's file), another -errno when the
 * stream must end. A source that cannot splice turns splicing off (and
 * -EAGAIN: nothing was taken from it, read() goes on from there).
 */
static int splice_pages(struct agent_stream *s, struct splicer *sp, int raw,
			struct tmsg_transport *out, uint8_t *buf)
{
	ssize_t n = splice(raw, NULL, sp->pipe[1], NULL, sp->len,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	int ret;

	if (n == 0)
		return 0;
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return -EAGAIN;
		if (errno != EINVAL && errno != ENOSYS)
			fprintf(s->log, "agent: cpu%d: splice: %s; reading instead\n",
				s->cpu, strerror(errno));
		splicer_close(sp);
		return -EAGAIN;
	}
	s->pages += (uint64_t)n / s->page_size;
	s->spliced_pages += (uint64_t)n / s->page_size;
	ret = pipe_out(s, sp, out, buf, (size_t)n);
	return ret ? ret : 1;
}

/*
 * Copy pages until stopped. Over a socket, full pages are spliced. Read
 * pages are batched (a read of a kernel's trace_pipe_raw gives one page; a
 * simulated kernel's FIFO or file may give more) so that a busy CPU costs
 * one send per BATCH_PAGES; a partial page means the buffer is empty for
 * now, so the batch goes out and the stream waits for more rather than
 * sending a page per event. Read pages go out before the next splice, so
 * the order is the source's.
 */
static int copy_pages(struct agent_stream *s, int raw,
		      struct tmsg_transport *out, int sock, uint8_t *buf)
{
	const size_t cap = (size_t)BATCH_PAGES * s->page_size;
	struct splicer sp;
	uint64_t drain_until = 0;
	size_t used = 0;
	int ret = 0;

	/* -m: the kernel's ring keeps the newest pages until tracing is off */
	while (s->hold && !*s->stop)
		usleep(POLL_MS * 1000);
	splicer_open(s, &sp, sock);
	for (;;) {
		struct pollfd pfd = { .fd = raw, .events = POLLIN };
		bool partial;
		ssize_t n;

		if (sp.pipe[0] >= 0) {
			if (flush(s, out, buf, &used)) {
				ret = -EIO;
				break;
			}
			ret = splice_pages(s, &sp, raw, out, buf);
			if (ret > 0)
				continue;
			if (ret && ret != -EAGAIN)
				break;
			ret = 0;
			/* no full page: a partial one, if any, by read() */
		}
		n = read(raw, buf + used, cap - used);
		if (n > 0) {
			size_t got = ((size_t)n + s->page_size - 1) /
				     s->page_size * s->page_size;

			/* a short read of a FIFO or file: pad its last page */
			memset(buf + used + n, 0, got - (size_t)n);
			partial = page_fill(buf + used + got - s->page_size,
					    s->page_size) < 3;
			used += got;
			s->pages += got / s->page_size;
			if (used < cap && !partial)
				continue;
			if (flush(s, out, buf, &used)) {
				ret = -EIO;
				break;
			}
			if (partial && !*s->stop)
				nap(s);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN) {
			ret = -errno;
			fprintf(s->log, "agent: cpu%d: read: %s\n", s->cpu,
				strerror(errno));
			break;
		}
		if (flush(s, out, buf, &used)) {
			ret = -EIO;
			break;
		}
		if (*s->stop && s->late_partial && !drain_until)
			drain_until = tcx_now_ns() + LATE_PARTIAL_MS * 1000000ull;
		if (*s->stop && (!drain_until || tcx_now_ns() >= drain_until))
			break;		/* tracing is off and the buffer empty */
		if (*s->stop) {
			usleep(10 * 1000);
			continue;
		}
		if (n == 0)
			nap(s);		/* a file or FIFO at its end for now */
		else
			poll(&pfd, 1, POLL_MS);
	}
	splicer_close(&sp);
	return ret;
}

static void *stream_main(void *arg)
{
	struct agent_stream *s = arg;
	struct tmsg_transport *out = NULL;
	uint8_t *buf = malloc((size_t)BATCH_PAGES * s->page_size);
	int raw = -1, sock;
	sigset_t pipe_sig;

	/* splice() into a socket the host closed raises SIGPIPE (it cannot
	 * say MSG_NOSIGNAL); the agent ignores it, and here it stays pending
	 * on this thread, whatever the process does: EPIPE is the error */
	sigemptyset(&pipe_sig);
	sigaddset(&pipe_sig, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_sig, NULL);
	if (!buf) {
		s->err = -ENOMEM;
		return NULL;
	}
	out = connect_host(s, &sock);
	if (!out) {
		if (!*s->stop)
			fprintf(s->log, "agent: cpu%d: no data connection\n", s->cpu);
		goto out;
	}
	raw = open(s->raw_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (raw < 0) {
		s->err = -errno;
		fprintf(s->log, "agent: cpu%d: %s: %s\n", s->cpu, s->raw_path,
			strerror(errno));
		goto out;
	}
	s->err = copy_pages(s, raw, out, sock, buf);
out:
	if (raw >= 0)
		close(raw);
	tmsg_close(out);
	free(buf);
	return NULL;
}

int agent_stream_start(struct agent_stream *s)
{
	int ret = pthread_create(&s->th, NULL, stream_main, s);

	s->started = !ret;
	return -ret;
}

int agent_stream_join(struct agent_stream *s)
{
	if (s->started)
		pthread_join(s->th, NULL);
	s->started = false;
	/* a vchan the thread never took over */
	tmsg_close(s->vchan);
	s->vchan = NULL;
	return s->err;
}
