// SPDX-License-Identifier: GPL-2.0
/*
 * Interdomain event channels and grants of the simulated host, enough for
 * libxenvchan: unbound ports bound once by the peer (so one client per
 * server), notify/mask/unmask as the evtchn driver does, and grants: each
 * domain has its own grant table with Xen's default size (max_grant_frames
 * 64 of 512 v1 entries), backed by its own slice of the machine memory, and
 * each mapping domain its own maptrack (max_maptrack_frames 1024), so one
 * guest exhausting its table leaves the others alone. Also the notify-on-
 * unmap the gntalloc and gntdev drivers perform when a process goes away.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xsim-chan.h"

#define MAX_PORTS	4096
#define MAX_MAPS	8192	/* map calls (each of a run of pages) */
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
	uint32_t peer;
	uint32_t count;		/* on the head */
	int client;
	uint32_t gen;
	bool released;		/* unshared or its process gone */
	struct unmap_notify nt;	/* on the head */
	unsigned int maps;
};

/* A domain's grant table (its entries, on first use) and its maptrack. */
struct gtab {
	bool used;
	uint32_t dom;
	uint32_t granted;	/* entries in use */
	uint32_t mapped;	/* maptrack entries in use (pages it maps) */
	struct share *s;	/* XSIM_GNT_ENTRIES, NULL until it grants */
};

struct map {
	bool used;
	int client;
	uint32_t dom;		/* the mapping domain */
	struct gtab *t;		/* the granter's table */
	uint32_t ref, count;
	struct unmap_notify nt;
};

struct xsim_chan {
	uint8_t *pool;
	void (*deliver)(void *arg, int client, uint32_t gen, uint32_t port);
	void *arg;
	struct port p[MAX_PORTS];
	struct map m[MAX_MAPS];
	struct gtab t[XSIM_GNT_TABLES];
};

struct xsim_chan *xsim_chan_new(uint8_t *pool,
				void (*deliver)(void *, int, uint32_t, uint32_t),
				void *arg)
{
	struct xsim_chan *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return NULL;
	ch->pool = pool;
	ch->deliver = deliver;
	ch->arg = arg;
	return ch;
}

void xsim_chan_free(struct xsim_chan *ch)
{
	for (unsigned int i = 0; i < XSIM_GNT_TABLES; i++)
		free(ch->t[i].s);
	free(ch);
}

/* Domain @dom's table; made on first use if @make (NULL: none, or all taken). */
static struct gtab *table(struct xsim_chan *ch, uint32_t dom, bool make)
{
	struct gtab *free_slot = NULL;

	for (unsigned int i = 0; i < XSIM_GNT_TABLES; i++) {
		if (ch->t[i].used && ch->t[i].dom == dom)
			return &ch->t[i];
		if (!ch->t[i].used && !free_slot)
			free_slot = &ch->t[i];
	}
	if (!make || !free_slot)
		return NULL;
	*free_slot = (struct gtab){ .used = true, .dom = dom };
	return free_slot;
}

uint32_t xsim_chan_page(const struct xsim_chan *ch, uint32_t dom, uint32_t ref)
{
	for (unsigned int i = 0; i < XSIM_GNT_TABLES; i++)
		if (ch->t[i].used && ch->t[i].dom == dom)
			return i * XSIM_GNT_ENTRIES + ref;
	return UINT32_MAX;
}

static uint8_t *page_of(struct xsim_chan *ch, const struct gtab *t, uint32_t ref)
{
	size_t page = (size_t)(t - ch->t) * XSIM_GNT_ENTRIES + ref;

	return ch->pool + page * XSIM_PAGE_SIZE;
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

static void fire_unmap_notify(struct xsim_chan *ch, uint8_t *page,
			      struct unmap_notify *nt)
{
	if (!nt->on)
		return;
	nt->on = false;
	page[nt->off] = 0;
	xsim_chan_notify(ch, nt->dom, nt->port);
}

int xsim_chan_share(struct xsim_chan *ch, int client, uint32_t gen,
		    uint32_t dom, uint32_t peer, uint32_t count, int32_t nt_off,
		    uint32_t nt_port, uint32_t *refs)
{
	struct gtab *t;
	uint32_t run = 0;

	if (!count || nt_off >= (int32_t)XSIM_PAGE_SIZE)
		return -EINVAL;
	t = table(ch, dom, true);
	if (!t)
		return -ENOSPC;
	/* as gntalloc: more than the table holds is no space, not bad input */
	if (count > XSIM_GNT_ENTRIES - XSIM_GNT_RESERVED ||
	    t->granted + count > XSIM_GNT_ENTRIES - XSIM_GNT_RESERVED)
		return -ENOSPC;
	if (!t->s) {
		t->s = calloc(XSIM_GNT_ENTRIES, sizeof(*t->s));
		if (!t->s)
			return -ENOMEM;
	}
	/* the first refs are Xen's own (console, xenstore): never handed out */
	for (uint32_t i = XSIM_GNT_RESERVED; i < XSIM_GNT_ENTRIES; i++) {
		run = t->s[i].used ? 0 : run + 1;
		if (run < count)
			continue;
		i = i + 1 - count;
		memset(page_of(ch, t, i), 0, (size_t)count * XSIM_PAGE_SIZE);
		for (uint32_t k = 0; k < count; k++) {
			t->s[i + k] = (struct share){ .used = true, .peer = peer,
						      .client = client, .gen = gen };
			refs[k] = i + k;
		}
		t->s[i].head = true;
		t->s[i].count = count;
		if (nt_off >= 0)
			t->s[i].nt = (struct unmap_notify){ true, nt_off, dom,
							    nt_port };
		t->granted += count;
		return 0;
	}
	return -ENOSPC;		/* entries left, but not @count in a row */
}

static void maybe_free(struct gtab *t, uint32_t head)
{
	struct share *h = &t->s[head];
	uint32_t n = h->count;

	if (!h->released)
		return;
	for (uint32_t k = 0; k < n; k++)
		if (t->s[head + k].maps)
			return;
	for (uint32_t k = 0; k < n; k++)
		memset(&t->s[head + k], 0, sizeof(t->s[0]));
	t->granted -= n;
}

static uint32_t head_of(const struct gtab *t, uint32_t ref)
{
	while (ref && !t->s[ref].head)
		ref--;
	return ref;
}

int xsim_chan_unshare(struct xsim_chan *ch, int client, uint32_t dom,
		      uint32_t ref)
{
	struct gtab *t = table(ch, dom, false);
	struct share *h;

	if (!t || !t->s || ref >= XSIM_GNT_ENTRIES || !t->s[ref].head ||
	    t->s[ref].client != client || t->s[ref].released)
		return -EINVAL;
	h = &t->s[ref];
	h->nt.on = false;	/* a clean unshare notifies through the ring */
	h->released = true;
	maybe_free(t, ref);
	return 0;
}

int xsim_chan_map(struct xsim_chan *ch, int client, uint32_t dom,
		  uint32_t granter, uint32_t count, const uint32_t *refs,
		  int32_t nt_off, uint32_t nt_port, uint32_t *page)
{
	struct gtab *t = table(ch, granter, false), *mine;
	struct map *m = NULL;

	if (!t || !t->s || !count)
		return -EINVAL;
	/* a map is remembered by its first page: runs of refs only */
	for (uint32_t k = 1; k < count; k++)
		if (refs[k] != refs[0] + k)
			return -EINVAL;
	for (uint32_t k = 0; k < count; k++) {
		const struct share *s = refs[k] < XSIM_GNT_ENTRIES ? &t->s[refs[k]] : NULL;

		if (!s || !s->used || s->released || s->peer != dom)
			return -EINVAL;
	}
	/* the mapper's maptrack: Xen answers GNTST_no_device_space, which
	 * gntdev turns into EINVAL */
	mine = table(ch, dom, true);
	if (!mine || mine->mapped + count > XSIM_MAPTRACK_ENTRIES)
		return -EINVAL;
	for (int i = 0; i < MAX_MAPS; i++)
		if (!ch->m[i].used) {
			m = &ch->m[i];
			break;
		}
	if (!m)
		return -ENOSPC;
	for (uint32_t k = 0; k < count; k++)
		t->s[refs[k]].maps++;
	mine->mapped += count;
	*m = (struct map){ .used = true, .client = client, .dom = dom, .t = t,
			   .ref = refs[0], .count = count };
	if (nt_off >= 0 && nt_off < (int32_t)XSIM_PAGE_SIZE)
		m->nt = (struct unmap_notify){ true, nt_off, dom, nt_port };
	*page = (uint32_t)(t - ch->t) * XSIM_GNT_ENTRIES + refs[0];
	return 0;
}

static void drop_map(struct xsim_chan *ch, struct map *m, bool notify)
{
	struct gtab *t = m->t, *mine = table(ch, m->dom, false);

	if (notify)
		fire_unmap_notify(ch, page_of(ch, t, m->ref), &m->nt);
	for (uint32_t k = 0; k < m->count; k++)
		if (t->s[m->ref + k].maps)
			t->s[m->ref + k].maps--;
	if (mine)
		mine->mapped -= m->count;
	maybe_free(t, head_of(t, m->ref));
	memset(m, 0, sizeof(*m));
}

int xsim_chan_unmap(struct xsim_chan *ch, int client, uint32_t granter,
		    uint32_t ref)
{
	struct gtab *t = table(ch, granter, false);

	for (int i = 0; t && i < MAX_MAPS; i++) {
		struct map *m = &ch->m[i];

		if (m->used && m->client == client && m->t == t && m->ref == ref) {
			drop_map(ch, m, false);
			return 0;
		}
	}
	return -EINVAL;
}

void xsim_chan_usage(const struct xsim_chan *ch, uint32_t dom, uint32_t *granted,
		     uint32_t *mapped)
{
	*granted = *mapped = 0;
	for (unsigned int i = 0; i < XSIM_GNT_TABLES; i++)
		if (ch->t[i].used && ch->t[i].dom == dom) {
			*granted = ch->t[i].granted;
			*mapped = ch->t[i].mapped;
		}
}

void xsim_chan_drop(struct xsim_chan *ch, int client)
{
	/* the process went away: what its drivers would do on release */
	for (int i = 0; i < MAX_MAPS; i++)
		if (ch->m[i].used && ch->m[i].client == client)
			drop_map(ch, &ch->m[i], true);
	for (unsigned int n = 0; n < XSIM_GNT_TABLES; n++) {
		struct gtab *t = &ch->t[n];

		for (uint32_t i = 0; t->s && i < XSIM_GNT_ENTRIES; i++) {
			struct share *s = &t->s[i];

			if (s->used && s->head && s->client == client && !s->released) {
				fire_unmap_notify(ch, page_of(ch, t, i), &s->nt);
				s->released = true;
				maybe_free(t, i);
			}
		}
	}
	for (int i = 0; i < MAX_PORTS; i++)
		if (ch->p[i].used && ch->p[i].client == client)
			close_port(ch, &ch->p[i]);
}
