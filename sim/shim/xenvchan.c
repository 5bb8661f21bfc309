// SPDX-License-Identifier: GPL-2.0
/*
 * libxenvchan.so.4.17 on xensim, written from the documented protocol
 * (Xen's tools/libs/vchan/ and xen/include/public/io/libxenvchan.h): a control page (struct vchan_interface) and two
 * rings in pages the server grants, rings of 1 KiB or 2 KiB inside the
 * control page or 2^n >= 4 KiB pages up to 1 MiB, the ring-ref and
 * event-channel nodes in xenstore readable by the peer, notify bits, live
 * flags cleared by the "driver" when a side vanishes, and a server close
 * that removes the whole xenstore path. The event channel goes through
 * libxenevtchn; grants through the simulator directly.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <libxenvchan.h>
#include <xenstore.h>

#include "xsim-client.h"
#include "xsim.h"

#define SMALL_RING	1024
#define LARGE_RING	2048
#define MAX_ORDER	20

/* Kept behind the gntshr/gnttab pointer of the public struct. */
struct vpriv {
	struct xsim_conn conn;
	uint8_t *map;		/* control page, then ring pages */
	size_t pages;
	uint32_t ref0;		/* first ref (server: of the share) */
	uint32_t ring_ref[2];	/* client: first ref of each mapped ring */
	uint8_t *ring_map[2];
	size_t ring_pages[2];
};

static struct vpriv *priv(struct libxenvchan *c)
{
	return (struct vpriv *)c->gntshr;
}

static int order_for(size_t min)
{
	int o = 12;

	while (((size_t)1 << o) < min)
		o++;
	return o;
}

static size_t ring_pages(int order)
{
	return order >= 12 ? (size_t)1 << (order - 12) : 0;
}

static uint8_t *map_pool(struct vpriv *p, uint32_t page, size_t n)
{
	/* gntdev maps the grants at the mmap: no faults on first use */
	void *m = mmap(NULL, n * XSIM_PAGE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, p->conn.memfd, (off_t)page * XSIM_PAGE_SIZE);

	return m == MAP_FAILED ? NULL : m;
}

static void set_ring(struct libxenvchan_ring *r, struct ring_shared *shr,
		     int order, uint8_t *page0, uint8_t *pages)
{
	r->shr = shr;
	r->order = order;
	if (order == 10)
		r->buffer = page0 + 1024;
	else if (order == 11)
		r->buffer = page0 + 2048;
	else
		r->buffer = pages;
}

static void release(struct libxenvchan *c)
{
	struct vpriv *p = priv(c);

	if (c->event)
		xenevtchn_close(c->event);
	if (p) {
		if (p->map)
			munmap(p->map, p->pages * XSIM_PAGE_SIZE);
		for (int i = 0; i < 2; i++)
			if (p->ring_map[i])
				munmap(p->ring_map[i],
				       p->ring_pages[i] * XSIM_PAGE_SIZE);
		xsim_conn_close(&p->conn);
		free(p);
	}
	free(c->xs_path);
	free(c);
}

static int gnt_call(struct vpriv *p, struct xsim_msg *m, const void *data,
		    uint32_t len, void *out, uint32_t outmax)
{
	return xsim_call(&p->conn, m, data, len, out, outmax);
}

/* ring-ref and event-channel, owned by us, readable by the peer. */
static int advertise(struct libxenvchan *c, int peer, uint32_t ref)
{
	struct xs_permissions perms[2];
	struct xs_handle *xs = xs_open(0);
	char path[4096], val[32], *self;
	unsigned int len;
	int ret = -1;

	if (!xs)
		return -1;
	self = xs_read(xs, XBT_NULL, "domid", &len);
	if (!self)
		goto out;
	perms[0].id = strtoul(self, NULL, 10);
	perms[0].perms = XS_PERM_NONE;
	perms[1].id = peer;
	perms[1].perms = XS_PERM_READ;
	free(self);
	snprintf(path, sizeof(path), "%s/ring-ref", c->xs_path);
	snprintf(val, sizeof(val), "%u", ref);
	if (!xs_write(xs, XBT_NULL, path, val, strlen(val)) ||
	    !xs_set_permissions(xs, XBT_NULL, path, perms, 2))
		goto out;
	snprintf(path, sizeof(path), "%s/event-channel", c->xs_path);
	snprintf(val, sizeof(val), "%u", c->event_port);
	if (!xs_write(xs, XBT_NULL, path, val, strlen(val)) ||
	    !xs_set_permissions(xs, XBT_NULL, path, perms, 2))
		goto out;
	ret = 0;
out:
	xs_close(xs);
	return ret;
}

struct libxenvchan *libxenvchan_server_init(struct xentoollog_logger *logger,
					    int domain, const char *xs_path,
					    size_t read_min, size_t write_min)
{
	struct libxenvchan *c = calloc(1, sizeof(*c));
	struct vpriv *p = calloc(1, sizeof(*p));
	struct xsim_msg m = { .op = XSIM_OP_GNT_SHARE };
	uint32_t refs[1 + 2 * 256];
	int lo, ro;
	size_t lp, rp;

	if (!c || !p)
		goto fail_alloc;
	p->conn.fd = p->conn.memfd = p->conn.evtfd = -1;
	c->gntshr = (xengntshr_handle *)p;
	c->is_server = 1;
	/* left: client to server (we read); right: server to client */
	if (read_min <= SMALL_RING && write_min <= LARGE_RING) {
		lo = 10;
		ro = 11;
	} else if (read_min <= LARGE_RING && write_min <= SMALL_RING) {
		lo = 11;
		ro = 10;
	} else {
		lo = order_for(read_min);
		ro = order_for(write_min);
	}
	if (lo > MAX_ORDER || ro > MAX_ORDER) {
		errno = EINVAL;
		goto fail;
	}
	lp = ring_pages(lo);
	rp = ring_pages(ro);
	p->pages = 1 + lp + rp;
	c->xs_path = strdup(xs_path);
	if (!c->xs_path || xsim_conn_open(&p->conn, XSIM_KIND_GNT))
		goto fail;
	c->event = xenevtchn_open(NULL, 0);
	if (!c->event)
		goto fail;
	{
		int port = xenevtchn_bind_unbound_port(c->event, domain);

		if (port < 0)
			goto fail;
		c->event_port = port;
	}
	m.a[0] = domain;
	m.a[1] = p->pages;
	m.a[2] = offsetof(struct vchan_interface, srv_live);
	m.a[3] = c->event_port;
	if (gnt_call(p, &m, NULL, 0, refs, sizeof(refs)) < 0)
		goto fail;
	p->ref0 = refs[0];
	/* the refs are our table's; the reply says where its pages are */
	p->map = map_pool(p, m.a[0], p->pages);
	if (!p->map)
		goto fail;
	c->ring = (struct vchan_interface *)p->map;
	c->ring->left_order = lo;
	c->ring->right_order = ro;
	c->ring->cli_live = 2;
	c->ring->srv_live = 1;
	c->ring->cli_notify = VCHAN_NOTIFY_WRITE;
	c->ring->srv_notify = VCHAN_NOTIFY_WRITE;
	for (size_t i = 1; i < p->pages; i++)
		c->ring->grants[i - 1] = refs[i];
	set_ring(&c->read, &c->ring->left, lo, p->map, p->map + XSIM_PAGE_SIZE);
	set_ring(&c->write, &c->ring->right, ro, p->map,
		 p->map + (1 + lp) * XSIM_PAGE_SIZE);
	if (advertise(c, domain, refs[0]))
		goto fail;
	return c;
fail: {
	int err = errno;	/* what failed, not what the cleanup did */

	release(c);
	errno = err;
	return NULL;
}
fail_alloc:
	free(c);
	free(p);
	return NULL;
}

static uint8_t *map_refs(struct vpriv *p, int granter, const uint32_t *refs,
			 size_t n, int32_t nt_off, uint32_t nt_port)
{
	struct xsim_msg m = { .op = XSIM_OP_GNT_MAP };

	m.a[0] = granter;
	m.a[1] = n;
	m.a[2] = (uint64_t)(int64_t)nt_off;
	m.a[3] = nt_port;
	if (gnt_call(p, &m, refs, n * 4, NULL, 0) < 0)
		return NULL;
	return map_pool(p, m.a[0], n);
}

struct libxenvchan *libxenvchan_client_init(struct xentoollog_logger *logger,
					    int domain, const char *xs_path)
{
	struct libxenvchan *c = calloc(1, sizeof(*c));
	struct vpriv *p = calloc(1, sizeof(*p));
	struct xs_handle *xs = NULL;
	char path[4096], *v;
	unsigned int len;
	uint32_t ref, rport;
	int port, lo, ro;
	size_t lp, rp;

	if (!c || !p) {
		free(c);
		free(p);
		return NULL;
	}
	p->conn.fd = p->conn.memfd = p->conn.evtfd = -1;
	c->gntshr = (xengntshr_handle *)p;
	xs = xs_open(0);
	if (!xs)
		goto fail;
	snprintf(path, sizeof(path), "%s/ring-ref", xs_path);
	v = xs_read(xs, XBT_NULL, path, &len);
	if (!v)
		goto fail;
	ref = strtoul(v, NULL, 10);
	free(v);
	snprintf(path, sizeof(path), "%s/event-channel", xs_path);
	v = xs_read(xs, XBT_NULL, path, &len);
	if (!v)
		goto fail;
	rport = strtoul(v, NULL, 10);
	free(v);
	xs_close(xs);
	xs = NULL;

	if (xsim_conn_open(&p->conn, XSIM_KIND_GNT))
		goto fail;
	c->event = xenevtchn_open(NULL, 0);
	if (!c->event)
		goto fail;
	/* fails for a second client: the server's port is taken */
	port = xenevtchn_bind_interdomain(c->event, domain, rport);
	if (port < 0)
		goto fail;
	c->event_port = port;
	p->pages = 1;
	p->map = map_refs(p, domain, &ref, 1,
			  offsetof(struct vchan_interface, cli_live), port);
	if (!p->map)
		goto fail;
	c->ring = (struct vchan_interface *)p->map;
	lo = c->ring->left_order;
	ro = c->ring->right_order;
	if (lo < 10 || lo > MAX_ORDER || ro < 10 || ro > MAX_ORDER) {
		errno = EINVAL;
		goto fail;
	}
	lp = ring_pages(lo);
	rp = ring_pages(ro);
	if (lp) {
		p->ring_map[0] = map_refs(p, domain, c->ring->grants, lp, -1, 0);
		p->ring_pages[0] = lp;
		if (!p->ring_map[0])
			goto fail;
	}
	if (rp) {
		p->ring_map[1] = map_refs(p, domain, c->ring->grants + lp, rp,
					  -1, 0);
		p->ring_pages[1] = rp;
		if (!p->ring_map[1])
			goto fail;
	}
	/* we read what the server writes (right), write left */
	set_ring(&c->read, &c->ring->right, ro, p->map, p->ring_map[1]);
	set_ring(&c->write, &c->ring->left, lo, p->map, p->ring_map[0]);
	__atomic_store_n(&c->ring->cli_live, 1, __ATOMIC_RELEASE);
	xenevtchn_notify(c->event, c->event_port);
	return c;
fail:
	if (xs)
		xs_close(xs);
	release(c);
	return NULL;
}

static uint32_t rsize(const struct libxenvchan_ring *r)
{
	return 1u << r->order;
}

static uint32_t ready_raw(struct libxenvchan *c)
{
	return __atomic_load_n(&c->read.shr->prod, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&c->read.shr->cons, __ATOMIC_RELAXED);
}

static uint32_t space_raw(struct libxenvchan *c)
{
	return rsize(&c->write) -
	       (__atomic_load_n(&c->write.shr->prod, __ATOMIC_RELAXED) -
		__atomic_load_n(&c->write.shr->cons, __ATOMIC_ACQUIRE));
}

/* Our byte says what we want to hear about; the peer's what it wants. */
static void request_notify(struct libxenvchan *c, uint8_t bit)
{
	uint8_t *own = c->is_server ? &c->ring->srv_notify : &c->ring->cli_notify;

	__atomic_or_fetch(own, bit, __ATOMIC_SEQ_CST);
}

static int send_notify(struct libxenvchan *c, uint8_t bit)
{
	uint8_t *peer = c->is_server ? &c->ring->cli_notify : &c->ring->srv_notify;
	uint8_t prev = __atomic_fetch_and(peer, (uint8_t)~bit, __ATOMIC_SEQ_CST);

	return prev & bit ? xenevtchn_notify(c->event, c->event_port) : 0;
}

/* Ask first, then look again, so a wakeup is never missed. */
static uint32_t fast_ready(struct libxenvchan *c, uint32_t want)
{
	uint32_t n = ready_raw(c);

	if (n >= want)
		return n;
	request_notify(c, VCHAN_NOTIFY_WRITE);
	return ready_raw(c);
}

static uint32_t fast_space(struct libxenvchan *c, uint32_t want)
{
	uint32_t n = space_raw(c);

	if (n >= want)
		return n;
	request_notify(c, VCHAN_NOTIFY_READ);
	return space_raw(c);
}

static int do_send(struct libxenvchan *c, const void *data, size_t size)
{
	uint32_t prod = c->write.shr->prod, mask = rsize(&c->write) - 1;
	uint32_t at = prod & mask, first = rsize(&c->write) - at;
	uint8_t *buf = c->write.buffer;

	if (first > size)
		first = size;
	memcpy(buf + at, data, first);
	memcpy(buf, (const uint8_t *)data + first, size - first);
	__atomic_store_n(&c->write.shr->prod, prod + (uint32_t)size,
			 __ATOMIC_RELEASE);
	if (send_notify(c, VCHAN_NOTIFY_WRITE) < 0)
		return -1;
	return size;
}

static int do_recv(struct libxenvchan *c, void *data, size_t size)
{
	uint32_t cons = c->read.shr->cons, mask = rsize(&c->read) - 1;
	uint32_t at = cons & mask, first = rsize(&c->read) - at;
	const uint8_t *buf = c->read.buffer;

	if (first > size)
		first = size;
	memcpy(data, buf + at, first);
	memcpy((uint8_t *)data + first, buf, size - first);
	__atomic_store_n(&c->read.shr->cons, cons + (uint32_t)size,
			 __ATOMIC_RELEASE);
	if (send_notify(c, VCHAN_NOTIFY_READ) < 0)
		return -1;
	return size;
}

int libxenvchan_is_open(struct libxenvchan *ctrl)
{
	if (ctrl->is_server)
		return ctrl->server_persist ? 1 :
		       __atomic_load_n(&ctrl->ring->cli_live, __ATOMIC_ACQUIRE);
	return __atomic_load_n(&ctrl->ring->srv_live, __ATOMIC_ACQUIRE);
}

int libxenvchan_wait(struct libxenvchan *ctrl)
{
	int port = xenevtchn_pending(ctrl->event);

	if (port < 0)
		return -1;
	return xenevtchn_unmask(ctrl->event, port);
}

int libxenvchan_fd_for_select(struct libxenvchan *ctrl)
{
	return xenevtchn_fd(ctrl->event);
}

int libxenvchan_data_ready(struct libxenvchan *ctrl)
{
	request_notify(ctrl, VCHAN_NOTIFY_WRITE);
	return ready_raw(ctrl);
}

int libxenvchan_buffer_space(struct libxenvchan *ctrl)
{
	request_notify(ctrl, VCHAN_NOTIFY_READ);
	return space_raw(ctrl);
}

int libxenvchan_send(struct libxenvchan *ctrl, const void *data, size_t size)
{
	for (;;) {
		if (fast_space(ctrl, size) >= size)
			return do_send(ctrl, data, size);
		if (libxenvchan_is_open(ctrl) != 1)
			return -1;
		if (!ctrl->blocking)
			return 0;
		if (size > rsize(&ctrl->write))
			return -1;
		if (libxenvchan_wait(ctrl))
			return -1;
	}
}

int libxenvchan_write(struct libxenvchan *ctrl, const void *data, size_t size)
{
	for (;;) {
		uint32_t n = fast_space(ctrl, 1);

		if (libxenvchan_is_open(ctrl) != 1)
			return -1;
		if (n)
			return do_send(ctrl, data, size < n ? size : n);
		if (!ctrl->blocking)
			return 0;
		if (libxenvchan_wait(ctrl))
			return -1;
	}
}

int libxenvchan_recv(struct libxenvchan *ctrl, void *data, size_t size)
{
	for (;;) {
		if (fast_ready(ctrl, size) >= size)
			return do_recv(ctrl, data, size);
		/* a closed peer's data can still be drained, then -1 */
		if (libxenvchan_is_open(ctrl) != 1 &&
		    libxenvchan_is_open(ctrl) != 2)
			return -1;
		if (!ctrl->blocking)
			return 0;
		if (size > rsize(&ctrl->read))
			return -1;
		if (libxenvchan_wait(ctrl))
			return -1;
	}
}

int libxenvchan_read(struct libxenvchan *ctrl, void *data, size_t size)
{
	for (;;) {
		uint32_t n = fast_ready(ctrl, 1);

		if (n)
			return do_recv(ctrl, data, size < n ? size : n);
		if (libxenvchan_is_open(ctrl) != 1 &&
		    libxenvchan_is_open(ctrl) != 2)
			return -1;
		if (!ctrl->blocking)
			return 0;
		if (libxenvchan_wait(ctrl))
			return -1;
	}
}

void libxenvchan_close(struct libxenvchan *ctrl)
{
	struct vpriv *p;

	if (!ctrl)
		return;
	p = priv(ctrl);
	if (ctrl->ring) {
		if (ctrl->is_server)
			__atomic_store_n(&ctrl->ring->srv_live, 0, __ATOMIC_RELEASE);
		else
			__atomic_store_n(&ctrl->ring->cli_live, 0, __ATOMIC_RELEASE);
		if (ctrl->event)
			xenevtchn_notify(ctrl->event, ctrl->event_port);
	}
	/* a clean unshare: the live flag above already told the peer;
	 * a client's maps go with its connection */
	if (p && p->map && ctrl->is_server) {
		struct xsim_msg m = { .op = XSIM_OP_GNT_UNSHARE };

		m.a[0] = p->ref0;
		gnt_call(p, &m, NULL, 0, NULL, 0);
	}
	if (ctrl->event && ctrl->event_port)
		xenevtchn_unbind(ctrl->event, ctrl->event_port);
	/* a server removes everything under its path */
	if (ctrl->is_server && ctrl->xs_path) {
		struct xs_handle *xs = xs_open(0);

		if (xs) {
			xs_rm(xs, XBT_NULL, ctrl->xs_path);
			xs_close(xs);
		}
	}
	release(ctrl);
}
