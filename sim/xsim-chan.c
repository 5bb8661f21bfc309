// SPDX-License-Identifier: GPL-2.0
/*
 * Interdomain event channels and grants of the simulated host, enough for
 * libxenvchan: unbound ports bound once by the peer (so one client per
 * server), notify/mask/unmask as the evtchn driver does, pages shared from
 * a pool in the machine memory, and the notify-on-unmap the gntalloc and
 * gntdev drivers perform when a process goes away.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xsim-chan.h"

#define MAX_PORTS	1024
#define MAX_MAPS	1024
#define FIRST_PORT	10

struct port {
	bool used;
	uint32_t dom, port;
	int client;
	uint32_t gen;
	bool connected;
	uint32_t rdom, rport;	/* unbound: who may bind; else the peer */
	bool pending, masked;
};

struct unmap_notify {
	bool on;
	uint32_t off, dom, port;
};

struct share {
	bool used, head;	/* head: first page of one share call */
	uint32_t dom, peer;
	uint32_t count;		/* on the head */
	int client;
	uint32_t gen;
	bool released;		/* unshared or its process gone */
	struct unmap_notify nt;	/* on the head */
	unsigned int maps;
};

struct map {
	bool used;
	int client;
	uint32_t page, count;
	struct unmap_notify nt;
};

struct xsim_chan {
	uint8_t *pool;
	uint32_t pages;
	void (*deliver)(void *arg, int client, uint32_t gen, uint32_t port);
	void *arg;
	struct port p[MAX_PORTS];
	struct map m[MAX_MAPS];
	struct share s[];
};

struct xsim_chan *xsim_chan_new(uint8_t *pool, uint32_t pages,
				void (*deliver)(void *, int, uint32_t, uint32_t),
				void *arg)
{
	struct xsim_chan *ch = calloc(1, sizeof(*ch) + pages * sizeof(ch->s[0]));

	if (!ch)
		return NULL;
	ch->pool = pool;
	ch->pages = pages;
	ch->deliver = deliver;
	ch->arg = arg;
	return ch;
}

void xsim_chan_free(struct xsim_chan *ch)
{
	free(ch);
}

static struct port *find(struct xsim_chan *ch, uint32_t dom, uint32_t port)
{
	for (int i = 0; i < MAX_PORTS; i++)
		if (ch->p[i].used && ch->p[i].dom == dom && ch->p[i].port == port)
			return &ch->p[i];
	return NULL;
}

static struct port *alloc_port(struct xsim_chan *ch, int client, uint32_t gen,
			       uint32_t dom)
{
	uint32_t port = FIRST_PORT;
	struct port *free_slot = NULL;

	for (int i = 0; i < MAX_PORTS; i++) {
		if (!ch->p[i].used) {
			if (!free_slot)
				free_slot = &ch->p[i];
			continue;
		}
		if (ch->p[i].dom == dom && ch->p[i].port >= port)
			port = ch->p[i].port + 1;
	}
	if (!free_slot)
		return NULL;
	*free_slot = (struct port){ .used = true, .dom = dom, .port = port,
				    .client = client, .gen = gen };
	return free_slot;
}

static void raise_port(struct xsim_chan *ch, struct port *p)
{
	if (p->masked) {
		p->pending = true;
		return;
	}
	/* the driver masks a port as it queues it */
	p->masked = true;
	p->pending = false;
	ch->deliver(ch->arg, p->client, p->gen, p->port);
}

int xsim_chan_unbound(struct xsim_chan *ch, int client, uint32_t gen,
		      uint32_t dom, uint32_t remote_dom)
{
	struct port *p = alloc_port(ch, client, gen, dom);

	if (!p)
		return -ENOSPC;
	p->rdom = remote_dom;
	return p->port;
}

int xsim_chan_interdomain(struct xsim_chan *ch, int client, uint32_t gen,
			  uint32_t dom, uint32_t remote_dom, uint32_t remote_port)
{
	struct port *r = find(ch, remote_dom, remote_port), *p;

	/* only an unbound port offered to us, and only once */
	if (!r || r->connected || r->rdom != dom)
		return -EINVAL;
	p = alloc_port(ch, client, gen, dom);
	if (!p)
		return -ENOSPC;
	p->connected = r->connected = true;
	p->rdom = remote_dom;
	p->rport = remote_port;
	r->rport = p->port;
	return p->port;
}

int xsim_chan_notify(struct xsim_chan *ch, uint32_t dom, uint32_t port)
{
	struct port *p = find(ch, dom, port), *r;

	if (!p)
		return -EINVAL;
	if (!p->connected)
		return 0;	/* nobody there yet */
	r = find(ch, p->rdom, p->rport);
	if (r)
		raise_port(ch, r);
	return 0;
}

int xsim_chan_unmask(struct xsim_chan *ch, int client, uint32_t dom,
		     uint32_t port)
{
	struct port *p = find(ch, dom, port);

	if (!p || p->client != client)
		return -EINVAL;
	p->masked = false;
	if (p->pending)
		raise_port(ch, p);
	return 0;
}

static void close_port(struct xsim_chan *ch, struct port *p)
{
	struct port *r = p->connected ? find(ch, p->rdom, p->rport) : NULL;

	/* the peer's port stays, unbound again, as Xen leaves it */
	if (r) {
		r->connected = false;
		r->rdom = p->dom;
	}
	memset(p, 0, sizeof(*p));
}

int xsim_chan_unbind(struct xsim_chan *ch, int client, uint32_t dom,
		     uint32_t port)
{
	struct port *p = find(ch, dom, port);

	if (!p || p->client != client)
		return -EINVAL;
	close_port(ch, p);
	return 0;
}

static void fire_unmap_notify(struct xsim_chan *ch, uint32_t page,
			      struct unmap_notify *nt)
{
	if (!nt->on)
		return;
	nt->on = false;
	ch->pool[(size_t)page * XSIM_PAGE_SIZE + nt->off] = 0;
	xsim_chan_notify(ch, nt->dom, nt->port);
}

int xsim_chan_share(struct xsim_chan *ch, int client, uint32_t gen,
		    uint32_t dom, uint32_t peer, uint32_t count, int32_t nt_off,
		    uint32_t nt_port, uint32_t *refs)
{
	uint32_t run = 0;

	if (!count || count > ch->pages || nt_off >= (int32_t)XSIM_PAGE_SIZE)
		return -EINVAL;
	for (uint32_t i = 0; i < ch->pages; i++) {
		run = ch->s[i].used ? 0 : run + 1;
		if (run < count)
			continue;
		i = i + 1 - count;
		memset(ch->pool + (size_t)i * XSIM_PAGE_SIZE, 0,
		       (size_t)count * XSIM_PAGE_SIZE);
		for (uint32_t k = 0; k < count; k++) {
			ch->s[i + k] = (struct share){ .used = true, .dom = dom,
						       .peer = peer,
						       .client = client,
						       .gen = gen };
			refs[k] = i + k;	/* the grant ref is the page */
		}
		ch->s[i].head = true;
		ch->s[i].count = count;
		if (nt_off >= 0)
			ch->s[i].nt = (struct unmap_notify){ true, nt_off, dom,
							     nt_port };
		return 0;
	}
	return -ENOMEM;
}

static void maybe_free(struct xsim_chan *ch, uint32_t head)
{
	struct share *h = &ch->s[head];
	uint32_t n = h->count;

	if (!h->released)
		return;
	for (uint32_t k = 0; k < n; k++)
		if (ch->s[head + k].maps)
			return;
	for (uint32_t k = 0; k < n; k++)
		memset(&ch->s[head + k], 0, sizeof(ch->s[0]));
}

static uint32_t head_of(struct xsim_chan *ch, uint32_t page)
{
	while (page && !ch->s[page].head)
		page--;
	return page;
}

int xsim_chan_unshare(struct xsim_chan *ch, int client, uint32_t dom,
		      uint32_t ref)
{
	struct share *h;

	if (ref >= ch->pages || !ch->s[ref].head || ch->s[ref].dom != dom ||
	    ch->s[ref].client != client || ch->s[ref].released)
		return -EINVAL;
	h = &ch->s[ref];
	h->nt.on = false;	/* a clean unshare notifies through the ring */
	h->released = true;
	maybe_free(ch, ref);
	return 0;
}

int xsim_chan_map(struct xsim_chan *ch, int client, uint32_t dom,
		  uint32_t granter, uint32_t count, const uint32_t *refs,
		  int32_t nt_off, uint32_t nt_port)
{
	struct map *m = NULL;

	/* a map is remembered by its first page: runs of refs only */
	for (uint32_t k = 1; k < count; k++)
		if (refs[k] != refs[0] + k)
			return -EINVAL;
	for (uint32_t k = 0; k < count; k++) {
		const struct share *s = refs[k] < ch->pages ? &ch->s[refs[k]] : NULL;

		if (!s || !s->used || s->released || s->dom != granter ||
		    s->peer != dom)
			return -EINVAL;
	}
	for (int i = 0; i < MAX_MAPS; i++)
		if (!ch->m[i].used) {
			m = &ch->m[i];
			break;
		}
	if (!m)
		return -ENOSPC;
	for (uint32_t k = 0; k < count; k++)
		ch->s[refs[k]].maps++;
	*m = (struct map){ .used = true, .client = client, .page = refs[0],
			   .count = count };
	if (nt_off >= 0 && nt_off < (int32_t)XSIM_PAGE_SIZE)
		m->nt = (struct unmap_notify){ true, nt_off, dom, nt_port };
	return 0;
}

static void drop_map(struct xsim_chan *ch, struct map *m, bool notify)
{
	if (notify)
		fire_unmap_notify(ch, m->page, &m->nt);
	for (uint32_t k = 0; k < m->count; k++)
		if (ch->s[m->page + k].maps)
			ch->s[m->page + k].maps--;
	maybe_free(ch, head_of(ch, m->page));
	memset(m, 0, sizeof(*m));
}

int xsim_chan_unmap(struct xsim_chan *ch, int client, uint32_t ref)
{
	for (int i = 0; i < MAX_MAPS; i++) {
		struct map *m = &ch->m[i];

		if (m->used && m->client == client && m->page == ref) {
			drop_map(ch, m, false);
			return 0;
		}
	}
	return -EINVAL;
}

void xsim_chan_drop(struct xsim_chan *ch, int client)
{
	/* the process went away: what its drivers would do on release */
	for (int i = 0; i < MAX_MAPS; i++)
		if (ch->m[i].used && ch->m[i].client == client)
			drop_map(ch, &ch->m[i], true);
	for (uint32_t i = 0; i < ch->pages; i++) {
		struct share *s = &ch->s[i];

		if (s->used && s->head && s->client == client && !s->released) {
			fire_unmap_notify(ch, i, &s->nt);
			s->released = true;
			maybe_free(ch, i);
		}
	}
	for (int i = 0; i < MAX_PORTS; i++)
		if (ch->p[i].used && ch->p[i].client == client)
			close_port(ch, &ch->p[i]);
}
