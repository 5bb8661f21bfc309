// SPDX-License-Identifier: GPL-2.0
/*
 * A test-only, in-process stand-in for the parts of libxenvchan and
 * libxenstore that protocol/ uses, so that the vchan transport and the
 * agent's Xen mode run on a machine without Xen before the simulator's
 * libraries exist. It follows libxenvchan's documented behaviour: the
 * server waits (is_open 2) until a client maps the rings; read/write are
 * stream-style and nonblocking when ctrl->blocking is 0 (0 = nothing now,
 * -1 = peer gone and nothing left); closing the server removes its path;
 * the event "channel" is an eventfd per side, kicked on every change.
 * Not thread-safe beyond one thread per side of a vchan.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <libxenvchan.h>
#include <xenstore.h>

#include "mock-xen.h"

struct ring {
	uint8_t *buf;
	size_t size, head, tail;	/* head - tail bytes in use */
};

struct chan {
	char path[128];
	struct ring ring[2];		/* 0: client to server, 1: back */
	int live[2];			/* server, client: 0 closed, 1, 2 waiting */
	int efd[2];			/* kicks the server, the client */
	int refs;
	struct chan *next;
};

struct mock_ctrl {
	struct libxenvchan v;		/* first: callers hold this */
	struct chan *ch;
	int side;			/* 0 server, 1 client */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct chan *chans;

#define MC(c) ((struct mock_ctrl *)(c))

static void kick(struct chan *ch, int side)
{
	uint64_t one = 1;

	if (write(ch->efd[side], &one, sizeof(one)) < 0)
		abort();
}

static size_t ring_used(const struct ring *r)
{
	return r->head - r->tail;
}

static struct libxenvchan *new_ctrl(struct chan *ch, int side)
{
	struct mock_ctrl *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ch = ch;
	c->side = side;
	c->v.is_server = side == 0;
	return &c->v;
}

struct libxenvchan *libxenvchan_server_init(struct xentoollog_logger *logger,
					    int domain, const char *xs_path,
					    size_t read_min, size_t write_min)
{
	struct chan *ch;

	if (read_min > (1u << 20) || write_min > (1u << 20))
		return NULL;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return NULL;
	snprintf(ch->path, sizeof(ch->path), "%s", xs_path);
	ch->ring[0].size = read_min < 1024 ? 1024 : read_min;
	ch->ring[1].size = write_min < 2048 ? 2048 : write_min;
	ch->ring[0].buf = malloc(ch->ring[0].size);
	ch->ring[1].buf = malloc(ch->ring[1].size);
	ch->efd[0] = eventfd(0, EFD_CLOEXEC);
	ch->efd[1] = eventfd(0, EFD_CLOEXEC);
	ch->live[0] = 1;
	ch->live[1] = 2;
	ch->refs = 1;
	pthread_mutex_lock(&lock);
	ch->next = chans;
	chans = ch;
	pthread_mutex_unlock(&lock);
	return new_ctrl(ch, 0);
}

struct libxenvchan *libxenvchan_client_init(struct xentoollog_logger *logger,
					    int domain, const char *xs_path)
{
	struct chan *ch;

	pthread_mutex_lock(&lock);
	for (ch = chans; ch; ch = ch->next)
		if (!strcmp(ch->path, xs_path) && ch->live[1] == 2)
			break;
	if (ch) {
		ch->live[1] = 1;
		ch->refs++;
		kick(ch, 0);
	}
	pthread_mutex_unlock(&lock);
	if (!ch) {
		errno = ENOENT;
		return NULL;
	}
	return new_ctrl(ch, 1);
}

void libxenvchan_close(struct libxenvchan *ctrl)
{
	struct mock_ctrl *c = MC(ctrl);
	struct chan *ch = c->ch, **pp;

	pthread_mutex_lock(&lock);
	ch->live[c->side] = 0;
	kick(ch, !c->side);
	if (c->side == 0)	/* the server's close removes its path */
		for (pp = &chans; *pp; pp = &(*pp)->next)
			if (*pp == ch) {
				*pp = ch->next;
				break;
			}
	if (!--ch->refs) {
		close(ch->efd[0]);
		close(ch->efd[1]);
		free(ch->ring[0].buf);
		free(ch->ring[1].buf);
		free(ch);
	}
	pthread_mutex_unlock(&lock);
	free(c);
}

int libxenvchan_is_open(struct libxenvchan *ctrl)
{
	struct mock_ctrl *c = MC(ctrl);
	int v;

	pthread_mutex_lock(&lock);
	v = c->ch->live[!c->side];
	pthread_mutex_unlock(&lock);
	return v;
}

int libxenvchan_data_ready(struct libxenvchan *ctrl)
{
	struct mock_ctrl *c = MC(ctrl);
	int v;

	pthread_mutex_lock(&lock);
	v = (int)ring_used(&c->ch->ring[c->side ? 1 : 0]);
	pthread_mutex_unlock(&lock);
	return v;
}

int libxenvchan_buffer_space(struct libxenvchan *ctrl)
{
	struct mock_ctrl *c = MC(ctrl);
	struct ring *r;
	int v;

	pthread_mutex_lock(&lock);
	r = &c->ch->ring[c->side ? 0 : 1];
	v = (int)(r->size - ring_used(r));
	pthread_mutex_unlock(&lock);
	return v;
}

int libxenvchan_read(struct libxenvchan *ctrl, void *data, size_t size)
{
	struct mock_ctrl *c = MC(ctrl);
	struct ring *r = &c->ch->ring[c->side ? 1 : 0];
	size_t n, i;

	if (ctrl->blocking)
		abort();	/* protocol/ must never block inside */
	pthread_mutex_lock(&lock);
	n = ring_used(r);
	if (!n) {
		int open = c->ch->live[!c->side];

		pthread_mutex_unlock(&lock);
		return open ? 0 : -1;
	}
	if (n > size)
		n = size;
	for (i = 0; i < n; i++)
		((uint8_t *)data)[i] = r->buf[(r->tail + i) % r->size];
	r->tail += n;
	kick(c->ch, !c->side);
	pthread_mutex_unlock(&lock);
	return (int)n;
}

int libxenvchan_write(struct libxenvchan *ctrl, const void *data, size_t size)
{
	struct mock_ctrl *c = MC(ctrl);
	struct ring *r = &c->ch->ring[c->side ? 0 : 1];
	size_t n, i;

	if (ctrl->blocking)
		abort();
	pthread_mutex_lock(&lock);
	if (!c->ch->live[!c->side]) {
		pthread_mutex_unlock(&lock);
		return -1;
	}
	n = r->size - ring_used(r);
	if (n > size)
		n = size;
	for (i = 0; i < n; i++)
		r->buf[(r->head + i) % r->size] = ((const uint8_t *)data)[i];
	r->head += n;
	if (n)
		kick(c->ch, !c->side);
	pthread_mutex_unlock(&lock);
	return (int)n;
}

int libxenvchan_wait(struct libxenvchan *ctrl)
{
	struct mock_ctrl *c = MC(ctrl);
	uint64_t v;

	return read(c->ch->efd[c->side], &v, sizeof(v)) == sizeof(v) ? 0 : -1;
}

int libxenvchan_fd_for_select(struct libxenvchan *ctrl)
{
	struct mock_ctrl *c = MC(ctrl);

	return c->ch->efd[c->side];
}

/* ---- xenstore: one flat map, "domid" read relative as MOCK_DOMID ---- */

struct xs_handle {
	int unused;
};

struct node {
	char *path;
	char *val;
	unsigned int len;
	struct node *next;
};

static struct node *nodes;
static struct xs_handle the_handle;

struct xs_handle *xs_open(unsigned long flags)
{
	return &the_handle;
}

void xs_close(struct xs_handle *xsh)
{
}

bool xs_write(struct xs_handle *h, xs_transaction_t t, const char *path,
	      const void *data, unsigned int len)
{
	struct node *n;

	pthread_mutex_lock(&lock);
	for (n = nodes; n && strcmp(n->path, path); n = n->next)
		;
	if (!n) {
		n = calloc(1, sizeof(*n));
		n->path = strdup(path);
		n->next = nodes;
		nodes = n;
	}
	free(n->val);
	n->val = malloc(len + 1);
	memcpy(n->val, data, len);
	n->val[len] = 0;
	n->len = len;
	pthread_mutex_unlock(&lock);
	return true;
}

void *xs_read(struct xs_handle *h, xs_transaction_t t, const char *path,
	      unsigned int *len)
{
	struct node *n;
	char *v = NULL;

	if (!strcmp(path, "domid")) {
		*len = (unsigned int)strlen(MOCK_DOMID_STR);
		return strdup(MOCK_DOMID_STR);
	}
	pthread_mutex_lock(&lock);
	for (n = nodes; n && strcmp(n->path, path); n = n->next)
		;
	if (n) {
		v = malloc(n->len + 1);
		memcpy(v, n->val, n->len + 1);
		*len = n->len;
	}
	pthread_mutex_unlock(&lock);
	if (!v)
		errno = ENOENT;
	return v;
}

void mock_xen_reset(void)
{
	pthread_mutex_lock(&lock);
	while (nodes) {
		struct node *n = nodes;

		nodes = n->next;
		free(n->path);
		free(n->val);
		free(n);
	}
	pthread_mutex_unlock(&lock);
}

bool mock_vchan_exists(const char *path)
{
	struct chan *ch;

	pthread_mutex_lock(&lock);
	for (ch = chans; ch && strcmp(ch->path, path); ch = ch->next)
		;
	pthread_mutex_unlock(&lock);
	return ch != NULL;
}
