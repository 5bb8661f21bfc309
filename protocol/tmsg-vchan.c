// SPDX-License-Identifier: GPL-2.0
/*
 * The transport over libxenvchan. The agent in a guest is the server (it
 * grants the rings under its own xenstore tree), dom0 the client. One vchan
 * carries one stream: control, one CPU's pages, or time sync.
 *
 * The vchan is used nonblocking, set explicitly because neither init sets
 * it; waiting is done here: data_ready/buffer_space arm the notification,
 * then poll on the event channel fd and acknowledge it with
 * libxenvchan_wait(), so no event is lost between the check and the poll.
 */
#include <errno.h>
#include <libxenvchan.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>

#include "tmsg-internal.h"

struct vchan_transport {
	struct tmsg_transport t;
	struct libxenvchan *v;
};

#define VT(t) (((struct vchan_transport *)(t))->v)

int tmsg_vchan_path(char *buf, size_t len, unsigned int domid,
		    unsigned int port)
{
	int n = snprintf(buf, len, "/local/domain/%u/" TMSG_XS_DIR "/%u",
			 domid, port);

	if (n < 0 || (size_t)n >= len || n > TMSG_VCHAN_PATH_MAX)
		return tcx_fail(-ENAMETOOLONG,
				 "vchan path for domain %u port %u is longer than %d",
				 domid, port, TMSG_VCHAN_PATH_MAX);
	return 0;
}

static ssize_t vchan_read(struct tmsg_transport *t, void *buf, size_t len)
{
	int n = libxenvchan_read(VT(t), buf, len);

	if (n > 0)
		return n;
	if (n == 0)
		return -EAGAIN;
	/* -1: the peer is gone (end of stream) or the ring is broken. */
	return libxenvchan_is_open(VT(t)) ? -EIO : 0;
}

static ssize_t vchan_write(struct tmsg_transport *t, const void *buf,
			   size_t len)
{
	int n = libxenvchan_write(VT(t), buf, len);

	if (n > 0)
		return n;
	if (n == 0)
		return -EAGAIN;
	return libxenvchan_is_open(VT(t)) ? -EIO : -EPIPE;
}

static bool vchan_ready(struct libxenvchan *v, short events)
{
	if (libxenvchan_is_open(v) == 0)
		return true;	/* let read/write report the close */
	if ((events & POLLIN) && libxenvchan_data_ready(v) > 0)
		return true;
	if ((events & POLLOUT) && libxenvchan_buffer_space(v) > 0)
		return true;
	return false;
}

static int vchan_wait(struct tmsg_transport *t, short events, int timeout_ms)
{
	struct libxenvchan *v = VT(t);
	struct pollfd pfd = { .fd = libxenvchan_fd_for_select(v),
			      .events = POLLIN };
	int64_t end = tmsg_now_ms() + timeout_ms;

	for (;;) {
		int left = -1, ret;

		if (vchan_ready(v, events))
			return 1;
		if (timeout_ms >= 0) {
			int64_t l = end - tmsg_now_ms();

			left = l > 0 ? (int)l : 0;
		}
		/*
		 * Even with no time left, a pending event is acknowledged:
		 * until it is, the event channel's fd stays readable, and a
		 * caller that polls it (the recorder's drain thread, which
		 * calls wait(POLLIN, 0) for an event without data) spins.
		 */
		ret = poll(&pfd, 1, left);
		if (ret < 0 && errno != EINTR)
			return -errno;
		/*
		 * Only after poll said the fd is readable: then the event is
		 * pending and libxenvchan_wait() returns without blocking.
		 */
		if (ret > 0 && libxenvchan_wait(v) < 0)
			return -EIO;
		/*
		 * The deadline is checked on every turn, whatever the event
		 * channel says: a peer that notifies without end, with or
		 * without data, must not keep this loop going past it.
		 */
		if (timeout_ms >= 0 && tmsg_now_ms() >= end)
			return vchan_ready(v, events) ? 1 : 0;
	}
}

static bool vchan_ready_op(struct tmsg_transport *t, short events)
{
	return vchan_ready(VT(t), events);
}

static int vchan_fd(struct tmsg_transport *t)
{
	return libxenvchan_fd_for_select(VT(t));
}

static void vchan_close(struct tmsg_transport *t)
{
	libxenvchan_close(VT(t));
	free(t);
}

static const struct tmsg_transport_ops vchan_ops = {
	.read	= vchan_read,
	.write	= vchan_write,
	.wait	= vchan_wait,
	.fd	= vchan_fd,
	.close	= vchan_close,
	.ready	= vchan_ready_op,
};

static struct tmsg_transport *wrap(struct libxenvchan *v, const char *role,
				   unsigned int dom, const char *path)
{
	struct vchan_transport *vt = calloc(1, sizeof(*vt));

	if (!vt) {
		libxenvchan_close(v);
		tcx_fail(-ENOMEM, "vchan: out of memory");
		return NULL;
	}
	v->blocking = 0;
	vt->v = v;
	vt->t.ops = &vchan_ops;
	vt->t.io_timeout_ms = TMSG_WAIT_MS;
	snprintf(vt->t.name, sizeof(vt->t.name), "vchan %s d%u %s", role, dom,
		 path);
	return &vt->t;
}

static int check_path(const char *path)
{
	if (strlen(path) > TMSG_VCHAN_PATH_MAX)
		return tcx_fail(-ENAMETOOLONG,
				 "vchan path \"%s\" is longer than %d bytes",
				 path, TMSG_VCHAN_PATH_MAX);
	return 0;
}

struct tmsg_transport *tmsg_vchan_server(unsigned int peer, const char *path,
					 size_t read_min, size_t write_min)
{
	struct libxenvchan *v;

	if (check_path(path))
		return NULL;
	if (read_min > TMSG_VCHAN_RING_MAX || write_min > TMSG_VCHAN_RING_MAX) {
		tcx_fail(-EINVAL, "vchan ring larger than %u bytes",
			  TMSG_VCHAN_RING_MAX);
		return NULL;
	}
	v = libxenvchan_server_init(NULL, (int)peer, path, read_min, write_min);
	if (!v) {
		tcx_fail(-errno ? -errno : -EIO,
			  "vchan server for domain %u at %s: %s", peer, path,
			  strerror(errno ? errno : EIO));
		return NULL;
	}
	return wrap(v, "server", peer, path);
}

struct tmsg_transport *tmsg_vchan_client(unsigned int server,
					 const char *path)
{
	struct libxenvchan *v;

	if (check_path(path))
		return NULL;
	v = libxenvchan_client_init(NULL, (int)server, path);
	if (!v) {
		tcx_fail(-errno ? -errno : -EIO,
			  "vchan client to domain %u at %s: %s", server, path,
			  strerror(errno ? errno : EIO));
		return NULL;
	}
	return wrap(v, "client", server, path);
}

int tmsg_vchan_wait_client(struct tmsg_transport *t, int timeout_ms)
{
	struct libxenvchan *v = VT(t);
	struct pollfd pfd = { .fd = libxenvchan_fd_for_select(v),
			      .events = POLLIN };
	int64_t end = tmsg_now_ms() + timeout_ms;

	/* is_open() is 2 while the server still waits for its client. */
	while (libxenvchan_is_open(v) == 2) {
		int left = -1, ret;

		if (timeout_ms >= 0) {
			int64_t l = end - tmsg_now_ms();

			if (l <= 0)
				return 0;
			left = (int)l;
		}
		ret = poll(&pfd, 1, left);
		if (ret < 0 && errno != EINTR)
			return tcx_fail(-errno, "%s: %s", t->name,
					 strerror(errno));
		if (ret > 0 && libxenvchan_wait(v) < 0)
			return tcx_fail(-EIO, "%s: event channel", t->name);
	}
	return libxenvchan_is_open(v) == 1 ? 1 :
	       tcx_fail(-ECONNRESET, "%s: client went away", t->name);
}
