// SPDX-License-Identifier: GPL-2.0
/*
 * One CPU's page stream: accept the host's data connection (only from the
 * session's peer), then copy whole ring-buffer pages from the instance's
 * trace_pipe_raw to it, unframed, as trace-cmd's agent does. On stop it
 * drains what is left; every write is a whole page, so the stream is a page
 * multiple without extra padding.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent-priv.h"

#define ACCEPT_WAIT_MS	30000	/* the host connects right after TRACE_RESP */
#define POLL_MS		100
#define BATCH_PAGES	16	/* pages per send on a busy CPU */

static int accept_peer(struct agent_stream *s)
{
	struct sockaddr_storage peer;
	int waited = 0;

	while (waited < ACCEPT_WAIT_MS && !*s->stop) {
		char who[64];
		int fd = tmsg_accept(s->lfd, POLL_MS, &peer, NULL);

		if (fd == -ETIMEDOUT) {
			waited += POLL_MS;
			continue;
		}
		if (fd < 0)
			return fd;
		if (!s->peer_host || tmsg_addr_matches(&peer, s->peer_host))
			return fd;
		tmsg_addr_string(&peer, who, sizeof(who));
		fprintf(s->log, "agent: cpu%d: refused data connection from %s\n",
			s->cpu, who);
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

/* POLL_MS, but wake up early on stop. */
static void nap(struct agent_stream *s)
{
	for (int i = 0; i < POLL_MS / 10 && !*s->stop; i++)
		usleep(10 * 1000);
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

/* The data connection of this CPU, once the host is there. */
static struct tmsg_transport *connect_host(struct agent_stream *s)
{
	char name[32];
	int fd;

	if (s->vchan) {
		struct tmsg_transport *t = s->vchan;

		s->err = wait_vchan_client(s);
		if (s->err)
			return NULL;
		s->vchan = NULL;	/* the stream owns it now */
		return t;
	}
	fd = accept_peer(s);
	if (fd < 0) {
		s->err = fd;
		return NULL;
	}
	snprintf(name, sizeof(name), "cpu%d data", s->cpu);
	return tmsg_fd_transport(fd, name);
}

/* Send the batched pages; 0 or the error (logged). */
static int flush(struct agent_stream *s, struct tmsg_transport *out,
		 const uint8_t *buf, size_t *used)
{
	int ret = *used ? tmsg_write_full(out, buf, *used) : 0;

	if (ret)
		fprintf(s->log, "agent: %s\n", tmsg_error());
	*used = 0;
	return ret;
}

/*
 * Copy pages until stopped. Full pages are batched (a read of
 * trace_pipe_raw gives one page) so that a busy CPU costs one send per
 * BATCH_PAGES; a partial page means the buffer is empty for now, so the
 * batch goes out and the stream waits for more rather than sending a page
 * per event.
 */
static int copy_pages(struct agent_stream *s, int raw,
		      struct tmsg_transport *out, uint8_t *buf)
{
	const size_t cap = (size_t)BATCH_PAGES * s->page_size;
	size_t used = 0;

	for (;;) {
		struct pollfd pfd = { .fd = raw, .events = POLLIN };
		ssize_t n = read(raw, buf + used, s->page_size);
		bool partial;

		if (n > 0) {
			if ((size_t)n < s->page_size)
				memset(buf + used + n, 0, s->page_size - n);
			partial = page_fill(buf + used, s->page_size) < 3;
			used += s->page_size;
			s->pages++;
			if (used < cap && !partial)
				continue;
			if (flush(s, out, buf, &used))
				return -EIO;
			if (partial && !*s->stop)
				nap(s);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN) {
			fprintf(s->log, "agent: cpu%d: read: %s\n", s->cpu,
				strerror(errno));
			return -errno;
		}
		if (flush(s, out, buf, &used))
			return -EIO;
		if (*s->stop)
			return 0;	/* tracing is off and the buffer empty */
		if (n == 0)
			nap(s);		/* a file or FIFO at its end for now */
		else
			poll(&pfd, 1, POLL_MS);
	}
}

static void *stream_main(void *arg)
{
	struct agent_stream *s = arg;
	struct tmsg_transport *out = NULL;
	uint8_t *buf = malloc((size_t)BATCH_PAGES * s->page_size);
	int raw = -1;

	if (!buf) {
		s->err = -ENOMEM;
		return NULL;
	}
	out = connect_host(s);
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
	s->err = copy_pages(s, raw, out, buf);
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
