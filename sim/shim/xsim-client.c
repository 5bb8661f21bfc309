// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "xsim-client.h"
#include "xsim.h"

static int recv_fds(int fd, struct xsim_msg *m, int *fds, int max)
{
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	int n = 0;

	if (recvmsg(fd, &mh, MSG_CMSG_CLOEXEC) != sizeof(*m))
		return -1;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		int cnt;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		cnt = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (int i = 0; i < cnt; i++) {
			int f;

			memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (n < max)
				fds[n++] = f;
			else
				close(f);
		}
	}
	return n;
}

int xsim_conn_open(struct xsim_conn *c, int kind)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *dir = getenv("XENSIM_HOST"), *dom = getenv("XENSIM_DOMID");
	struct xsim_msg m = { .op = XSIM_OP_HELLO };
	int fds[2] = { -1, -1 }, n;

	memset(c, 0, sizeof(*c));
	c->fd = c->memfd = c->evtfd = -1;
	if (!dir || !*dir) {
		errno = ENOENT;
		return -1;
	}
	if (snprintf(a.sun_path, sizeof(a.sun_path), "%s/ctl", dir) >=
	    (int)sizeof(a.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	c->domid = dom && *dom ? strtoul(dom, NULL, 0) : 0;
	c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -1;
	if (connect(c->fd, (struct sockaddr *)&a, sizeof(a)))
		goto fail;
	m.a[0] = XSIM_PROTO_VERSION;
	m.a[1] = c->domid;
	m.a[2] = kind;
	if (send(c->fd, &m, sizeof(m), MSG_NOSIGNAL) != sizeof(m))
		goto fail;
	n = recv_fds(c->fd, &m, fds, 2);
	if (n < 0)
		goto fail;
	if (m.ret < 0) {
		for (int i = 0; i < n; i++)
			close(fds[i]);
		errno = -m.ret;
		goto fail;
	}
	c->mem_pages = m.a[0];
	c->pool_base = m.a[1];
	c->memfd = n > 0 ? fds[0] : -1;
	c->evtfd = n > 1 ? fds[1] : -1;
	pthread_mutex_init(&c->lock, NULL);
	return 0;
fail:
	n = errno;
	close(c->fd);
	c->fd = -1;
	errno = n;
	return -1;
}

void xsim_conn_close(struct xsim_conn *c)
{
	if (c->fd < 0)
		return;		/* never opened */
	close(c->fd);
	if (c->memfd >= 0)
		close(c->memfd);
	if (c->evtfd >= 0)
		close(c->evtfd);
	c->fd = c->memfd = c->evtfd = -1;
	pthread_mutex_destroy(&c->lock);
}

int xsim_post(struct xsim_conn *c, struct xsim_msg *m)
{
	ssize_t n;

	m->len = 0;
	pthread_mutex_lock(&c->lock);
	while ((n = send(c->fd, m, sizeof(*m), MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	pthread_mutex_unlock(&c->lock);
	return n == sizeof(*m) ? 0 : -1;
}

/*
 * The reply buffer, one per calling thread and kept: a guest that floods
 * event channels makes dom0 call often, and must not make it churn 64 KiB
 * a call. Taken on a thread's first call, not as static TLS: every shim
 * library holds a copy of this file, and 64 KiB of static TLS each would
 * be zeroed at every pthread_create() of the program under test, a cost
 * real Xen libraries do not have.
 */
#define REPLY_MAX	(sizeof(struct xsim_msg) + XSIM_MSG_MAX)

static pthread_key_t reply_key;
static pthread_once_t reply_once = PTHREAD_ONCE_INIT;
static __thread uint8_t *reply_buf;

static void reply_key_init(void)
{
	if (pthread_key_create(&reply_key, free))
		abort();
}

static uint8_t *reply_get(void)
{
	if (reply_buf)
		return reply_buf;
	pthread_once(&reply_once, reply_key_init);
	reply_buf = malloc(REPLY_MAX);
	if (reply_buf)
		pthread_setspecific(reply_key, reply_buf);
	return reply_buf;
}

int xsim_call(struct xsim_conn *c, struct xsim_msg *m, const void *data,
	      uint32_t len, void *out, uint32_t outmax)
{
	struct iovec iov[2] = { { m, sizeof(*m) }, { (void *)data, len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	uint8_t *buf = reply_get();
	ssize_t n;

	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	m->len = len;
	/* threads may share a handle, as with the real libraries */
	pthread_mutex_lock(&c->lock);
	/* a hypercall is not interrupted by signals (xentrace has SIGALRM) */
	while ((n = sendmsg(c->fd, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n >= 0)
		while ((n = recv(c->fd, buf, REPLY_MAX, 0)) < 0 &&
		       errno == EINTR)
			;
	pthread_mutex_unlock(&c->lock);
	if (n < (ssize_t)sizeof(*m)) {
		int e = n < 0 ? errno : EPIPE;

		errno = e;
		return -1;
	}
	memcpy(m, buf, sizeof(*m));
	if (out && m->len)
		memcpy(out, buf + sizeof(*m), m->len < outmax ? m->len : outmax);
	if (m->ret < 0) {
		errno = -m->ret;
		return -1;
	}
	return m->ret;
}

void *xsim_map(struct xsim_conn *c, uint32_t dom, int prot, size_t num,
	       const uint64_t *mfns, int *err)
{
	size_t len = num * XSIM_PAGE_SIZE;
	uint8_t *base;

	if (!num || c->memfd < 0) {
		errno = EINVAL;
		return NULL;
	}
	/* Reserve, then place each run of consecutive frames. */
	base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	for (size_t i = 0; i < num;) {
		struct xsim_msg m = { .op = XSIM_OP_MAPCHECK };
		size_t run = 1;
		void *p;

		while (i + run < num && mfns[i + run] == mfns[i] + run)
			run++;
		m.a[0] = dom;
		m.a[1] = mfns[i];
		m.a[2] = run;
		m.a[3] = !!(prot & PROT_WRITE);
		if (xsim_call(c, &m, NULL, 0, NULL, 0) < 0 ||
		    mfns[i] < XSIM_MFN_BASE ||
		    mfns[i] - XSIM_MFN_BASE + run > c->mem_pages)
			goto fail;
		/* privcmd maps every frame at the call: no faults on first use */
		p = mmap(base + i * XSIM_PAGE_SIZE, run * XSIM_PAGE_SIZE, prot,
			 MAP_SHARED | MAP_FIXED | MAP_POPULATE, c->memfd,
			 (off_t)(mfns[i] - XSIM_MFN_BASE) * XSIM_PAGE_SIZE);
		if (p == MAP_FAILED)
			goto fail;
		for (size_t k = 0; err && k < run; k++)
			err[i + k] = 0;
		i += run;
	}
	return base;
fail:
	{
		int e = errno ? errno : EINVAL;

		munmap(base, len);
		errno = e;
	}
	return NULL;
}
