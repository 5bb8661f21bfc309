// SPDX-License-Identifier: GPL-2.0
/*
 * The control socket: one connection per shim library handle, answered as
 * the hypervisor (sysctls, domctls, mappings, event channels, grants,
 * hypercalls) or xenstored would. Single-threaded; the pCPU threads reach
 * it through eventfds (VIRQ_TBUF, finished hypercalls).
 */
/* sysctl.h is a tools-only header */
#define __XEN_TOOLS__ 1

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdint.h>
#include <xen/xen.h>
#include <xen/sysctl.h>
#include <xen/trace.h>

#include "xsim-chan.h"
#include "xsim-internal.h"
#include "xsim-proto.h"
#include "xsim-xs.h"

#define MAX_CLIENTS	1024	/* a shim handle each: ~40 per recorded 4-vCPU guest */
#define MAX_WATCHES	512
#define TBUF_FIRST_PORT	5

struct client {
	int fd;			/* -1: free slot */
	uint32_t gen;		/* tells a reused slot from the old client */
	uint32_t domid;
	int kind;
	int evt_wfd;		/* evtchn handles: ports are written here */
};

struct watch {
	int client;		/* -1: free */
	char path[256];
	char token[128];
};

struct server {
	struct xsim_host *h;
	struct client cl[MAX_CLIENTS];
	struct watch w[MAX_WATCHES];
	uint32_t next_txn;
	struct xsim_chan *ch;
	int virq_owner;		/* client index bound to VIRQ_TBUF, or -1 */
	int virq_port;
	bool masked, pending;
	_Alignas(8) uint8_t buf[sizeof(struct xsim_msg) + XSIM_MSG_MAX];
};

static int op_hvm_xentrace(struct server *s, int i, struct xsim_msg *m,
			   const uint8_t *data);

static const struct xsim_dom_conf *find_dom(const struct xsim_host *h,
					    uint32_t domid)
{
	for (unsigned int i = 0; i < h->conf.ndoms; i++)
		if (h->conf.dom[i].domid == domid)
			return &h->conf.dom[i];
	return NULL;
}

static void deliver_virq(struct server *s)
{
	struct client *c;
	uint32_t port = s->virq_port;

	if (s->virq_owner < 0)
		return;
	c = &s->cl[s->virq_owner];
	if (s->masked) {
		s->pending = true;
		return;
	}
	/* The kernel driver masks a port when it queues it. */
	if (write(c->evt_wfd, &port, sizeof(port)) == sizeof(port)) {
		s->masked = true;
		s->pending = false;
	}
}

static void drop_client(struct server *s, int i)
{
	struct client *c = &s->cl[i];

	for (int k = 0; k < MAX_WATCHES; k++)
		if (s->w[k].client == i)
			s->w[k].client = -1;
	close(c->fd);
	c->fd = -1;
	/* after the slot is dead: notifications go to the peers only */
	xsim_chan_drop(s->ch, i);

	if (s->virq_owner == i)
		s->virq_owner = -1;
	if (c->evt_wfd >= 0)
		close(c->evt_wfd);
	c->fd = c->evt_wfd = -1;
}

/* Send @m, @len bytes of @data and @nfds fds. Returns 0 or -errno. */
static int reply(int fd, struct xsim_msg *m, const void *data, uint32_t len,
		 const int *fds, int nfds)
{
	struct iovec iov[2] = { { m, sizeof(*m) }, { (void *)data, len } };
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };

	m->len = len;
	if (nfds) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/* Returns 1 (answered here), or -errno for handle() to answer. */
static int op_hello(struct server *s, int i, struct xsim_msg *m)
{
	struct client *c = &s->cl[i];
	int fds[2] = { s->h->memfd, -1 }, pfd[2], ret;

	if (m->a[0] != XSIM_PROTO_VERSION)
		return -EPROTO;
	if (!find_dom(s->h, m->a[1]))
		return -ESRCH;
	c->domid = m->a[1];
	c->kind = m->a[2];
	m->a[0] = s->h->mem_pages;
	m->a[1] = s->h->pool_base;
	m->ret = 0;
	if (c->kind != XSIM_KIND_EVTCHN && c->kind != XSIM_KIND_XS)
		return (ret = reply(c->fd, m, NULL, 0, fds, 1)) ? ret : 1;
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	/* a watcher that does not read loses events, never stalls us */
	if (c->kind == XSIM_KIND_XS)
		fcntl(pfd[1], F_SETFL, O_NONBLOCK);
	c->evt_wfd = pfd[1];
	fds[1] = pfd[0];
	ret = reply(c->fd, m, NULL, 0, fds, 2);
	close(pfd[0]);
	return ret ? ret : 1;
}

static int op_tbuf(struct server *s, struct client *c, struct xsim_msg *m,
		   const uint8_t *data)
{
	struct xsim_host *h = s->h;
	uint32_t mask, size;
	uint64_t mfn;
	int ret = 0;

	if (c->domid != 0)
		return -EPERM;
	switch (m->a[0]) {
	case XEN_SYSCTL_TBUFOP_get_info:
		break;
	case XEN_SYSCTL_TBUFOP_set_cpu_mask:
		if (m->len * 8ull < m->a[1])
			return -EINVAL;
		xsim_tbuf_set_cpu_mask(h->tb, data, m->a[1]);
		break;
	case XEN_SYSCTL_TBUFOP_set_evt_mask:
		xsim_tbuf_set_evt_mask(h->tb, m->a[1]);
		xsim_truth(h, "tbuf evt_mask=%#x at=%lu\n", (unsigned int)m->a[1],
			   (unsigned long)xsim_rdtsc());
		break;
	case XEN_SYSCTL_TBUFOP_set_size:
		ret = xsim_tbuf_set_size(h->tb, m->a[1]);
		if (!ret)
			xsim_truth(h, "tbuf size pages=%u at=%lu\n",
				   xsim_tbuf_pages(h->tb),
				   (unsigned long)xsim_rdtsc());
		break;
	case XEN_SYSCTL_TBUFOP_enable:
		ret = xsim_tbuf_enable(h->tb);
		if (!ret)
			xsim_truth(h, "tbuf enable at=%lu\n",
				   (unsigned long)xsim_rdtsc());
		break;
	case XEN_SYSCTL_TBUFOP_disable:
		xsim_tbuf_disable(h->tb);
		xsim_truth(h, "tbuf disable at=%lu\n",
			   (unsigned long)xsim_rdtsc());
		break;
	default:
		return -EINVAL;
	}
	xsim_tbuf_get_info(h->tb, &mask, &mfn, &size);
	m->a[0] = mask;
	m->a[1] = mfn;
	m->a[2] = size;
	return ret;
}

static int op_mapcheck(struct server *s, struct client *c, struct xsim_msg *m)
{
	/* Only dom0 maps Xen's pages; t_info is shared read-only. */
	if (c->domid != 0 || m->a[0] != DOMID_XEN)
		return -EPERM;
	for (uint64_t i = 0; i < m->a[2]; i++) {
		int kind = xsim_tbuf_mfn_kind(s->h->tb, m->a[1] + i);

		if (!kind)
			return -EINVAL;
		if (kind == 1 && m->a[3])
			return -EPERM;
	}
	return 0;
}

static int op_dominfo(struct server *s, struct client *c, struct xsim_msg *m,
		      struct xsim_wdom *out, uint32_t *len)
{
	struct xsim_host *h = s->h;
	unsigned int n = 0;
	uint32_t next = m->a[0];

	if (c->domid != 0)
		return -EPERM;
	/* ascending domid order, as Xen enumerates */
	while (n < m->a[1] && n < XSIM_MSG_MAX / sizeof(*out)) {
		const struct xsim_dom_conf *best = NULL;

		for (unsigned int i = 0; i < h->conf.ndoms; i++) {
			const struct xsim_dom_conf *d = &h->conf.dom[i];

			if (d->domid >= next && (!best || d->domid < best->domid))
				best = d;
		}
		if (!best)
			break;
		memset(&out[n], 0, sizeof(out[n]));
		out[n].domid = best->domid;
		out[n].type = best->type;
		out[n].vcpus = best->vcpus;
		pthread_mutex_lock(&h->slock);
		for (unsigned int i = 0; i < h->nvcpus; i++) {
			const struct xsim_vcpu *v = &h->vcpu[i];

			if (v->domid != best->domid)
				continue;
			out[n].running += v->state == VS_RUNNING;
			out[n].cpu_time_ns += v->cpu_time * 1000000ull /
					      h->conf.cpu_khz;
		}
		pthread_mutex_unlock(&h->slock);
		snprintf(out[n].name, sizeof(out[n].name), "%s", best->name);
		next = best->domid + 1;
		n++;
	}
	*len = n * sizeof(*out);
	return n;
}

static int op_tscinfo(struct server *s, struct client *c, struct xsim_msg *m)
{
	const struct xsim_dom_conf *d = find_dom(s->h, m->a[0]);

	if (c->domid != 0 && c->domid != m->a[0])
		return -EPERM;
	if (!d)
		return -ESRCH;
	m->a[0] = d->tsc_mode;
	m->a[1] = d->gtsc_khz ? d->gtsc_khz : s->h->conf.cpu_khz;
	m->a[2] = xsim_host_incarnation(s->h, (unsigned int)(d - s->h->conf.dom),
					xsim_rdtsc());
	return 0;
}

/*
 * A vCPU's clock as xsim_host_gtsc() computes it, valid until the next offset
 * change: the shim's xensim_guest_rdtsc() computes guest(h) in the caller from
 * this, as a round trip per read would put the daemon's latency into the read.
 */
static int op_gtsc(struct server *s, struct client *c, struct xsim_msg *m)
{
	const struct xsim_host *h = s->h;
	const struct xsim_dom_conf *d = find_dom(h, m->a[0]);
	uint64_t at = m->a[2], until = UINT64_MAX;
	unsigned int di, v;
	int64_t off;

	if (c->domid != 0 && c->domid != m->a[0])
		return -EPERM;
	if (!d)
		return -ESRCH;
	di = (unsigned int)(d - h->conf.dom);
	v = m->a[1] < d->vcpus ? (unsigned int)m->a[1] : 0;
	off = d->tsc_offset[v];
	for (unsigned int k = 0; k < d->nchanges; k++) {
		if (at >= h->dclk[di].change_tsc[k])
			off = d->change[k].offset[v];
		else if (h->dclk[di].change_tsc[k] < until)
			until = h->dclk[di].change_tsc[k];
	}
	m->a[0] = h->dclk[di].ratio;
	m->a[1] = xsim_frac_bits(h->conf.vendor);
	m->a[2] = h->dclk[di].s0;
	m->a[3] = (uint64_t)(int64_t)d->drift_ppm;
	m->a[4] = (uint64_t)off;
	m->a[5] = until;
	return 0;
}

static int op_vcpuinfo(struct server *s, struct client *c, struct xsim_msg *m)
{
	struct xsim_host *h = s->h;

	if (c->domid != 0)
		return -EPERM;
	for (unsigned int i = 0; i < h->nvcpus; i++) {
		const struct xsim_vcpu *v = &h->vcpu[i];

		if (v->domid != m->a[0] || v->id != m->a[1])
			continue;
		pthread_mutex_lock(&h->slock);
		m->a[0] = 1;
		m->a[1] = v->state == VS_BLOCKED;
		m->a[2] = v->state == VS_RUNNING;
		m->a[3] = v->cpu_time * 1000000ull / h->conf.cpu_khz;
		m->a[4] = v->pcpu;
		pthread_mutex_unlock(&h->slock);
		return 0;
	}
	return -ESRCH;
}

static int op_bind_virq(struct server *s, int i, struct xsim_msg *m)
{
	if (s->cl[i].kind != XSIM_KIND_EVTCHN || m->a[0] != VIRQ_TBUF)
		return -EINVAL;
	/* A global VIRQ goes to dom0, and only one port can take it. */
	if (s->cl[i].domid != 0)
		return -EPERM;
	if (s->virq_owner >= 0)
		return -EEXIST;
	s->virq_owner = i;
	s->virq_port = TBUF_FIRST_PORT;
	s->masked = false;
	s->pending = false;
	return s->virq_port;
}

static void watch_event(struct server *s, const struct watch *w,
			const char *path)
{
	struct client *c = &s->cl[w->client];
	char buf[4 + 256 + 128 + 2];
	uint32_t len = strlen(path) + 1 + strlen(w->token) + 1;

	if (c->evt_wfd < 0 || len + 4 > sizeof(buf))
		return;
	memcpy(buf, &len, 4);
	memcpy(buf + 4, path, strlen(path) + 1);
	memcpy(buf + 4 + strlen(path) + 1, w->token, strlen(w->token) + 1);
	if (write(c->evt_wfd, buf, 4 + len) < 0)
		return;
}

static bool is_under(const char *parent, const char *child)
{
	size_t l = strlen(parent);

	if (!strcmp(parent, "/"))
		return child[0] == '/';
	return !strncmp(parent, child, l) && (child[l] == '/' || !child[l]);
}

/* Watches fire on the node, anything below it, and removal above it. */
static void fire(struct server *s, const char *path, bool removed)
{
	for (int k = 0; k < MAX_WATCHES; k++) {
		struct watch *w = &s->w[k];
		const char *ev = path;

		if (w->client < 0)
			continue;
		if (removed && is_under(path, w->path))
			ev = w->path;
		else if (!is_under(w->path, path))
			continue;
		if (!xsim_xs_can_read(s->h->xs, s->cl[w->client].domid, ev) &&
		    !removed)
			continue;
		watch_event(s, w, ev);
	}
}

static int op_xs(struct server *s, int i, struct xsim_msg *m, uint8_t *data,
		 uint32_t *rlen)
{
	struct client *c = &s->cl[i];
	char path[3100];
	const char *raw = (const char *)data, *arg;
	uint32_t arglen, max = XSIM_MSG_MAX;
	size_t plen = strnlen(raw, m->len);
	static uint8_t out[XSIM_MSG_MAX];
	int ret;

	if (c->kind != XSIM_KIND_XS || plen == m->len)
		return -EINVAL;
	arg = raw + plen + 1;
	arglen = m->len - plen - 1;
	if (m->a[0] == XS_TRANSACTION_START)
		return ++s->next_txn;
	if (m->a[0] == XS_TRANSACTION_END)
		return 0;
	ret = xsim_xs_canon(c->domid, raw, path, sizeof(path));
	if (ret)
		return ret;
	if (m->a[0] == XS_WATCH || m->a[0] == XS_UNWATCH) {
		char token[128];

		snprintf(token, sizeof(token), "%.*s", (int)arglen, arg);
		for (int k = 0; k < MAX_WATCHES; k++) {
			struct watch *w = &s->w[k];

			if (m->a[0] == XS_UNWATCH) {
				if (w->client == i && !strcmp(w->path, path) &&
				    !strcmp(w->token, token)) {
					w->client = -1;
					return 0;
				}
				continue;
			}
			if (w->client >= 0)
				continue;
			if (strlen(path) >= sizeof(w->path))
				return -E2BIG;
			w->client = i;
			snprintf(w->path, sizeof(w->path), "%s", path);
			snprintf(w->token, sizeof(w->token), "%s", token);
			/* a new watch fires once at once */
			watch_event(s, w, path);
			return 0;
		}
		return m->a[0] == XS_UNWATCH ? -ENOENT : -ENOSPC;
	}
	ret = xsim_xs_op(s->h->xs, c->domid, m->a[0], path, arg, arglen, out,
			 &max);
	if (ret == 1) {
		fire(s, path, m->a[0] == XS_RM);
		ret = 0;
	}
	if (!ret && max) {
		memcpy(data, out, max);
		*rlen = max;
	}
	return ret;
}

static void deliver_port(void *arg, int client, uint32_t gen, uint32_t port)
{
	struct server *s = arg;
	struct client *c = &s->cl[client];

	if (c->fd >= 0 && c->gen == gen && c->evt_wfd >= 0 &&
	    write(c->evt_wfd, &port, sizeof(port)) < 0)
		return;
}

static int op_gnt(struct server *s, int i, struct xsim_msg *m, uint8_t *data,
		  uint32_t *rlen)
{
	struct client *c = &s->cl[i];
	uint32_t count = m->a[1];
	int ret;

	if (c->kind != XSIM_KIND_GNT)
		return -EINVAL;
	switch (m->op) {
	case XSIM_OP_GNT_SHARE:
		if (count > XSIM_MSG_MAX / 4)
			return -EINVAL;
		ret = xsim_chan_share(s->ch, i, c->gen, c->domid, m->a[0], count,
				      (int32_t)m->a[2], m->a[3],
				      (uint32_t *)data);
		if (!ret) {
			*rlen = count * 4;
			m->a[0] = s->h->pool_base +
				  xsim_chan_page(s->ch, c->domid, ((uint32_t *)data)[0]);
		}
		return ret;
	case XSIM_OP_GNT_UNSHARE:
		return xsim_chan_unshare(s->ch, i, c->domid, m->a[0]);
	case XSIM_OP_GNT_MAP: {
		uint32_t page;

		if (m->len < count * 4ull || !count)
			return -EINVAL;
		ret = xsim_chan_map(s->ch, i, c->domid, m->a[0], count,
				    (const uint32_t *)data, (int32_t)m->a[2],
				    m->a[3], &page);
		if (!ret)
			m->a[0] = s->h->pool_base + page;
		return ret;
	}
	case XSIM_OP_GNT_UNMAP:
		return xsim_chan_unmap(s->ch, i, m->a[1], m->a[0]);
	}
	return -EINVAL;
}

/* One request of client @i. Returns 0, or -errno: drop the client. */
static int handle(struct server *s, int i)
{
	struct client *c = &s->cl[i];
	struct xsim_msg *m = (struct xsim_msg *)s->buf;
	uint8_t *data = s->buf + sizeof(*m);
	uint32_t rlen = 0;
	ssize_t n;
	int ret;

	n = recv(c->fd, s->buf, sizeof(s->buf), 0);
	if (n < 0)
		return -errno;
	if (!n)
		return -ECONNRESET;	/* the peer closed */
	if ((size_t)n < sizeof(*m) || m->len != n - sizeof(*m)) {
		m->ret = -EPROTO;
		return reply(c->fd, m, NULL, 0, NULL, 0);
	}
	if (!c->kind && m->op != XSIM_OP_HELLO)
		return -EPROTO;
	switch (m->op) {
	case XSIM_OP_HELLO:
		ret = op_hello(s, i, m);
		if (ret == 1)
			return 0;
		break;
	case XSIM_OP_PHYSINFO:
		m->a[0] = s->h->conf.pcpus;
		m->a[1] = s->h->conf.cpu_khz;
		m->a[2] = s->h->conf.vendor;
		ret = 0;
		break;
	case XSIM_OP_TBUF:
		ret = op_tbuf(s, c, m, data);
		break;
	case XSIM_OP_MAPCHECK:
		ret = op_mapcheck(s, c, m);
		break;
	case XSIM_OP_DOMINFO:
		ret = op_dominfo(s, c, m, (struct xsim_wdom *)data, &rlen);
		break;
	case XSIM_OP_TSCINFO:
		ret = op_tscinfo(s, c, m);
		break;
	case XSIM_OP_VCPUINFO:
		ret = op_vcpuinfo(s, c, m);
		break;
	case XSIM_OP_GTSC:
		ret = op_gtsc(s, c, m);
		break;
	case XSIM_OP_BIND_VIRQ:
		ret = op_bind_virq(s, i, m);
		break;
	case XSIM_OP_XS:
		ret = op_xs(s, i, m, data, &rlen);
		break;
	case XSIM_OP_HVM_XENTRACE:
		ret = op_hvm_xentrace(s, i, m, data);
		if (ret == 1)
			return 0;	/* answered once a vCPU did it */
		break;
	case XSIM_OP_UNMASK:
		if (s->virq_owner == i && m->a[0] == (uint64_t)s->virq_port) {
			s->masked = false;
			if (s->pending)
				deliver_virq(s);
			ret = 0;
		} else {
			ret = xsim_chan_unmask(s->ch, i, c->domid, m->a[0]);
		}
		break;
	case XSIM_OP_UNBIND:
		if (s->virq_owner == i && m->a[0] == (uint64_t)s->virq_port) {
			s->virq_owner = -1;
			ret = 0;
		} else {
			ret = xsim_chan_unbind(s->ch, i, c->domid, m->a[0]);
		}
		break;
	case XSIM_OP_EVT_UNBOUND:
		ret = c->kind != XSIM_KIND_EVTCHN ? -EINVAL :
		      xsim_chan_unbound(s->ch, i, c->gen, c->domid, m->a[0]);
		break;
	case XSIM_OP_EVT_INTERDOMAIN:
		ret = c->kind != XSIM_KIND_EVTCHN ? -EINVAL :
		      xsim_chan_interdomain(s->ch, i, c->gen, c->domid,
					    m->a[0], m->a[1]);
		break;
	case XSIM_OP_EVT_NOTIFY:
		/* posted: nobody waits for the answer (a bad port is dropped) */
		xsim_chan_notify(s->ch, c->domid, m->a[0]);
		return 0;
	case XSIM_OP_GNT_SHARE:
	case XSIM_OP_GNT_UNSHARE:
	case XSIM_OP_GNT_MAP:
	case XSIM_OP_GNT_UNMAP:
		ret = op_gnt(s, i, m, data, &rlen);
		break;
	default:
		ret = -ENOSYS;
		break;
	}
	m->ret = ret;
	return reply(c->fd, m, data, rlen, NULL, 0);
}

static void accept_client(struct server *s)
{
	static uint32_t gen;
	int fd = accept4(s->h->listen_fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	for (int i = 0; i < MAX_CLIENTS; i++) {
		if (s->cl[i].fd < 0) {
			s->cl[i] = (struct client){ .fd = fd, .evt_wfd = -1,
						    .gen = ++gen };
			return;
		}
	}
	close(fd);
}

/* Answer the hypercalls the pCPU threads have carried out. */
static void reply_done(struct server *s)
{
	struct xsim_host *h = s->h;
	uint64_t cnt;

	if (read(h->done_fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&h->dlock);
	for (unsigned int i = 0; i < h->ndone; i++) {
		struct client *c = &s->cl[h->done[i].client];
		struct xsim_msg m = { .op = XSIM_OP_HVM_XENTRACE };

		if (c->fd >= 0 && c->gen == h->done[i].gen)
			reply(c->fd, &m, NULL, 0, NULL, 0);
	}
	h->ndone = 0;
	pthread_mutex_unlock(&h->dlock);
}

/* HVMOP_xentrace: checked here, carried out by a vCPU of the caller. */
static int op_hvm_xentrace(struct server *s, int i, struct xsim_msg *m,
			   const uint8_t *data)
{
	struct client *c = &s->cl[i];
	struct xsim_action a = { .kind = XA_XENTRACE, .client = i,
				 .gen = c->gen };
	const struct xsim_dom_conf *d = find_dom(s->h, c->domid);
	struct xsim_guest *g = NULL;
	uint16_t event, bytes;

	for (unsigned int k = 0; k < s->h->conf.ndoms; k++)
		if (&s->h->conf.dom[k] == d)
			g = s->h->guest[k];
	/* 4.17 lets PV domains make it too */
	if (!d || !g)
		return -ENOSYS;
	if (m->len < 4 + 28)
		return -EFAULT;
	memcpy(&event, data, 2);
	memcpy(&bytes, data + 2, 2);
	/* as Xen: 12-bit event numbers, at most 28 payload bytes */
	if (bytes > 28 || event >= 0x1000)
		return -EINVAL;
	a.event = event;
	a.len = bytes;
	memcpy(a.data, data + 4, bytes);
	/*
	 * The caller's vCPU (a0 = 1 + the CPU its thread is pinned to): the
	 * call traps on that vCPU when it next runs. Not pinned, or pinned to
	 * a CPU the guest does not have: whichever vCPU runs next.
	 */
	a.vcpu = m->a[0] && m->a[0] <= d->vcpus ? (int16_t)(m->a[0] - 1) : -1;
	/*
	 * A marker written before the call may not have been flagged by the
	 * poll that saw the call (its FIFO was scanned first): read them now,
	 * so they are queued before it.
	 */
	{
		int fds[XSIM_GUEST_FDS], nf = xsim_guest_fds(g, fds);

		for (int k = 0; k < nf; k++)
			xsim_guest_input(g, fds[k]);
	}
	return xsim_guest_push(g, &a) ? 1 : -EBUSY;
}

int xsim_host_serve(struct xsim_host *h, volatile int *stop)
{
	struct server *s = calloc(1, sizeof(*s));
	struct pollfd pf[MAX_CLIENTS + 3 + XSIM_GUEST_FDS * XSIM_MAX_DOMAINS];
	int idx[MAX_CLIENTS + 3 + XSIM_GUEST_FDS * XSIM_MAX_DOMAINS];
	uint64_t next_tick = 0;
	int ret = 0;

	if (!s)
		return -ENOMEM;
	s->h = h;
	s->virq_owner = -1;
	s->ch = xsim_chan_new(h->mem + h->pool_base * XSIM_PAGE_SIZE,
			      deliver_port, s);
	if (!s->ch) {
		free(s);
		return -ENOMEM;
	}
	for (int k = 0; k < MAX_WATCHES; k++)
		s->w[k].client = -1;
	for (int i = 0; i < MAX_CLIENTS; i++)
		s->cl[i].fd = s->cl[i].evt_wfd = -1;
	while (!*stop) {
		int n = 0, r;

		pf[n] = (struct pollfd){ .fd = h->listen_fd, .events = POLLIN };
		idx[n++] = -1;
		pf[n] = (struct pollfd){ .fd = h->notify_fd, .events = POLLIN };
		idx[n++] = -2;
		pf[n] = (struct pollfd){ .fd = h->done_fd, .events = POLLIN };
		idx[n++] = -1000;
		/* markers before requests: a marker written before a hypercall
		 * is queued before it */
		for (unsigned int g = 0; g < h->conf.ndoms; g++) {
			int fds[XSIM_GUEST_FDS], nf;

			if (!h->guest[g])
				continue;
			nf = xsim_guest_fds(h->guest[g], fds);
			for (int k = 0; k < nf; k++) {
				pf[n] = (struct pollfd){ .fd = fds[k],
							 .events = POLLIN };
				idx[n++] = -3 - (int)g;
			}
		}
		for (int i = 0; i < MAX_CLIENTS; i++) {
			if (s->cl[i].fd < 0)
				continue;
			pf[n] = (struct pollfd){ .fd = s->cl[i].fd,
						 .events = POLLIN };
			idx[n++] = i;
		}
		r = poll(pf, n, 20);
		if (r < 0 && errno != EINTR) {
			ret = -errno;
			break;
		}
		if (xsim_rdtsc() >= next_tick) {
			for (unsigned int g = 0; g < h->conf.ndoms; g++)
				if (h->guest[g])
					xsim_guest_tick(h->guest[g], false);
			next_tick = xsim_rdtsc() + 20ull * h->conf.cpu_khz;
		}
		for (int k = 0; r > 0 && k < n; k++) {
			if (!pf[k].revents)
				continue;
			if (idx[k] == -1) {
				accept_client(s);
			} else if (idx[k] == -1000) {
				reply_done(s);
			} else if (idx[k] <= -3) {
				xsim_guest_input(h->guest[-3 - idx[k]],
						 pf[k].fd);
			} else if (idx[k] == -2) {
				uint64_t cnt;

				if (read(h->notify_fd, &cnt, sizeof(cnt)) > 0)
					deliver_virq(s);
			} else if (handle(s, idx[k])) {
				drop_client(s, idx[k]);
			}
		}
	}
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (s->cl[i].fd >= 0)
			drop_client(s, i);
	xsim_chan_free(s->ch);
	free(s);
	return ret;
}

