// SPDX-License-Identifier: GPL-2.0
/*
 * The transport over a file descriptor: TCP and vsock sockets, and pipes
 * or socketpairs in tests. The descriptor is made nonblocking so that a
 * peer that stops reading shows up as a timeout, never a hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tmsg-internal.h"

struct fd_transport {
	struct tmsg_transport t;
	int fd;
	bool is_socket;
};

#define FDT(t) ((struct fd_transport *)(t))

static ssize_t fd_read(struct tmsg_transport *t, void *buf, size_t len)
{
	ssize_t n = read(FDT(t)->fd, buf, len);

	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

static ssize_t fd_write(struct tmsg_transport *t, const void *buf, size_t len)
{
	ssize_t n;

	/* MSG_NOSIGNAL: a vanished peer is an error to report, not SIGPIPE. */
	if (FDT(t)->is_socket)
		n = send(FDT(t)->fd, buf, len, MSG_NOSIGNAL);
	else
		n = write(FDT(t)->fd, buf, len);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

static int fd_wait(struct tmsg_transport *t, short events, int timeout_ms)
{
	struct pollfd pfd = { .fd = FDT(t)->fd, .events = events };
	int64_t end = tmsg_now_ms() + timeout_ms;
	int ret;

	for (;;) {
		ret = poll(&pfd, 1, timeout_ms);
		if (ret >= 0)
			/* POLLHUP/POLLERR: let read/write report it. */
			return ret > 0;
		if (errno != EINTR)
			return -errno;
		if (timeout_ms >= 0) {
			timeout_ms = (int)(end - tmsg_now_ms());
			if (timeout_ms < 0)
				timeout_ms = 0;
		}
	}
}

static int fd_fd(struct tmsg_transport *t)
{
	return FDT(t)->fd;
}

static void fd_close(struct tmsg_transport *t)
{
	close(FDT(t)->fd);
	free(t);
}

static const struct tmsg_transport_ops fd_ops = {
	.read	= fd_read,
	.write	= fd_write,
	.wait	= fd_wait,
	.fd	= fd_fd,
	.close	= fd_close,
};

struct tmsg_transport *tmsg_fd_transport(int fd, const char *name)
{
	struct fd_transport *ft = calloc(1, sizeof(*ft));
	struct stat st;
	int fl;

	if (!ft) {
		close(fd);
		tcx_fail(-ENOMEM, "%s: out of memory", name);
		errno = ENOMEM;
		return NULL;
	}
	ft->t.ops = &fd_ops;
	snprintf(ft->t.name, sizeof(ft->t.name), "%s", name);
	ft->t.io_timeout_ms = TMSG_WAIT_MS;
	ft->fd = fd;
	ft->is_socket = !fstat(fd, &st) && S_ISSOCK(st.st_mode);
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	return &ft->t;
}
