// SPDX-License-Identifier: GPL-2.0
/*
 * xenstore of the simulated host: the tree a libxl
 * host has for its domains, xenstored's permission rules, and the paths
 * that changed so the serve loop can fire watches. Transactions are not
 * isolated: their operations apply at once and every commit succeeds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xsim-internal.h"
#include "xsim-xs.h"

#define MAX_PERMS	8
#define MAX_PATH	3072
#define MAX_VALUE	4096

struct node {
	char *path;
	char *val;
	uint32_t len;
	unsigned int np;
	struct xs_perm p[MAX_PERMS];	/* p[0]: owner and default */
};

struct xsim_xs {
	struct node *n;
	size_t nn, cap;
};

static struct node *find(struct xsim_xs *xs, const char *path)
{
	for (size_t i = 0; i < xs->nn; i++)
		if (!strcmp(xs->n[i].path, path))
			return &xs->n[i];
	return NULL;
}

static int add(struct xsim_xs *xs, const char *path, const char *val,
	       uint32_t len, const struct xs_perm *p, unsigned int np)
{
	struct node *n;

	if (xs->nn == xs->cap) {
		size_t cap = xs->cap ? 2 * xs->cap : 64;
		void *m = realloc(xs->n, cap * sizeof(*xs->n));

		if (!m)
			return -ENOMEM;
		xs->n = m;
		xs->cap = cap;
	}
	n = &xs->n[xs->nn];
	n->path = strdup(path);
	n->val = malloc(len + 1);
	if (!n->path || !n->val) {
		free(n->path);
		free(n->val);
		return -ENOMEM;
	}
	memcpy(n->val, val, len);
	n->val[len] = '\0';
	n->len = len;
	n->np = np;
	memcpy(n->p, p, np * sizeof(*p));
	xs->nn++;
	return 0;
}

static int add_str(struct xsim_xs *xs, const char *path, const char *val,
		   uint32_t owner, uint32_t def, int reader)
{
	struct xs_perm p[2] = { { owner, def }, { reader, XS_PERM_READ } };

	return add(xs, path, val, strlen(val), p, reader >= 0 ? 2 : 1);
}

struct xsim_xs *xsim_xs_new(const struct xsim_conf *c)
{
	struct xsim_xs *xs = calloc(1, sizeof(*xs));
	char p[128], v[64];
	int err = 0;

	if (!xs)
		return NULL;
	err |= add_str(xs, "/", "", 0, XS_PERM_NONE, -1);
	err |= add_str(xs, "/local", "", 0, XS_PERM_NONE, -1);
	err |= add_str(xs, "/local/domain", "", 0, XS_PERM_NONE, -1);
	err |= add_str(xs, "/vm", "", 0, XS_PERM_NONE, -1);
	err |= add_str(xs, "/tool", "", 0, XS_PERM_NONE, -1);
	for (unsigned int i = 0; i < c->ndoms && !err; i++) {
		const struct xsim_dom_conf *d = &c->dom[i];
		int rd = d->domid ? (int)d->domid : -1;

		/* dom0 owns the home; the guest may read it (libxl) */
		snprintf(p, sizeof(p), "/local/domain/%u", d->domid);
		err |= add_str(xs, p, "", 0, XS_PERM_NONE, rd);
		snprintf(p, sizeof(p), "/local/domain/%u/name", d->domid);
		err |= add_str(xs, p, d->name, 0, XS_PERM_NONE, rd);
		snprintf(p, sizeof(p), "/local/domain/%u/domid", d->domid);
		snprintf(v, sizeof(v), "%u", d->domid);
		err |= add_str(xs, p, v, 0, XS_PERM_NONE, rd);
		snprintf(p, sizeof(p), "/local/domain/%u/vm", d->domid);
		snprintf(v, sizeof(v), "/vm/00000000-0000-0000-0000-%012x",
			 d->domid);
		err |= add_str(xs, p, v, 0, XS_PERM_NONE, rd);
		/* the guest's own: data/ for arbitrary use */
		snprintf(p, sizeof(p), "/local/domain/%u/data", d->domid);
		err |= add_str(xs, p, "", d->domid, XS_PERM_NONE, -1);
		snprintf(p, sizeof(p), "/local/domain/%u/control", d->domid);
		err |= add_str(xs, p, "", 0, XS_PERM_NONE, rd);
		snprintf(p, sizeof(p), "/local/domain/%u/control/shutdown",
			 d->domid);
		err |= add_str(xs, p, "", d->domid, XS_PERM_NONE, -1);
	}
	if (err) {
		xsim_xs_free(xs);
		errno = ENOMEM;		/* add() fails for nothing else */
		return NULL;
	}
	return xs;
}

void xsim_xs_free(struct xsim_xs *xs)
{
	if (!xs)
		return;
	for (size_t i = 0; i < xs->nn; i++) {
		free(xs->n[i].path);
		free(xs->n[i].val);
	}
	free(xs->n);
	free(xs);
}

/* What @dom may do on @n: dom0 everything, the owner everything. */
static unsigned int perm(const struct node *n, uint32_t dom)
{
	if (dom == 0 || n->p[0].id == dom)
		return XS_PERM_READ | XS_PERM_WRITE | XS_PERM_OWNER;
	for (unsigned int i = 1; i < n->np; i++)
		if (n->p[i].id == dom)
			return n->p[i].perms;
	return n->p[0].perms;
}

int xsim_xs_canon(uint32_t dom, const char *in, char *out, size_t len)
{
	size_t l = strlen(in);

	if (in[0] == '@')
		return snprintf(out, len, "%s", in) >= (int)len ? -EINVAL : 0;
	if (in[0] != '/') {
		if (snprintf(out, len, "/local/domain/%u/%s", dom, in) >= (int)len)
			return -EINVAL;
	} else if (snprintf(out, len, "%s", in) >= (int)len) {
		return -EINVAL;
	}
	l = strlen(out);
	if (l > MAX_PATH || strstr(out, "//") || (l > 1 && out[l - 1] == '/'))
		return -EINVAL;
	for (const char *c = out; *c; c++)
		if (!(*c == '/' || *c == '-' || *c == '_' || *c == '@' ||
		      (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
		      (*c >= 'A' && *c <= 'Z')))
			return -EINVAL;
	return 0;
}

/* The nearest existing ancestor (for creation rights and inheritance). */
static struct node *ancestor(struct xsim_xs *xs, const char *path)
{
	char buf[MAX_PATH + 1];
	char *slash;

	snprintf(buf, sizeof(buf), "%s", path);
	while ((slash = strrchr(buf, '/'))) {
		struct node *n;

		if (slash == buf)
			buf[1] = '\0';
		else
			*slash = '\0';
		n = find(xs, buf);
		if (n)
			return n;
		if (slash == buf)
			break;
	}
	return NULL;
}

/* Create @path and missing parents, inheriting the ancestor's perms. */
static int create(struct xsim_xs *xs, uint32_t dom, const char *path)
{
	struct node *a = ancestor(xs, path);
	struct xs_perm p[MAX_PERMS];
	unsigned int np;
	char buf[MAX_PATH + 1];

	if (!a)
		return -ENOENT;
	if (!(perm(a, dom) & XS_PERM_WRITE))
		return -EACCES;
	np = a->np;
	memcpy(p, a->p, np * sizeof(*p));
	/* an unprivileged creator owns what it creates */
	if (dom)
		p[0].id = dom;
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = buf + strlen(a->path) + (strlen(a->path) > 1); ; s++) {
		char save = *s;

		if (save != '/' && save != '\0')
			continue;
		*s = '\0';
		if (!find(xs, buf)) {
			int err = add(xs, buf, "", 0, p, np);

			if (err)
				return err;
		}
		*s = save;
		if (!save)
			break;
	}
	return 0;
}

static bool under(const char *parent, const char *child)
{
	size_t l = strlen(parent);

	if (!strcmp(parent, "/"))
		return child[0] == '/';
	return !strncmp(parent, child, l) && (child[l] == '/' || !child[l]);
}

int xsim_xs_op(struct xsim_xs *xs, uint32_t dom, unsigned int op,
	       const char *path, const void *arg, uint32_t arglen,
	       void *out, uint32_t *outlen)
{
	struct node *n = path[0] == '/' ? find(xs, path) : NULL;
	uint32_t max = *outlen;
	int err;

	*outlen = 0;
	if (path[0] != '/')
		return -EINVAL;
	switch (op) {
	case XS_READ:
		if (!n)
			return -ENOENT;
		if (!(perm(n, dom) & XS_PERM_READ))
			return -EACCES;
		if (n->len > max)
			return -E2BIG;
		memcpy(out, n->val, n->len);
		*outlen = n->len;
		return 0;
	case XS_WRITE:
	case XS_MKDIR:
		if (arglen > MAX_VALUE)
			return -E2BIG;
		if (!n) {
			err = create(xs, dom, path);
			if (err)
				return err;
			n = find(xs, path);
		} else if (op == XS_MKDIR) {
			return 0;
		} else if (!(perm(n, dom) & XS_PERM_WRITE)) {
			return -EACCES;
		}
		if (op == XS_WRITE) {
			char *v = malloc(arglen + 1);

			if (!v)
				return -ENOMEM;
			memcpy(v, arg, arglen);
			v[arglen] = '\0';
			free(n->val);
			n->val = v;
			n->len = arglen;
		}
		return 1;	/* changed */
	case XS_RM:
		if (!n)
			return -ENOENT;
		if (!(perm(n, dom) & XS_PERM_WRITE) || !strcmp(path, "/"))
			return -EACCES;
		for (size_t i = 0; i < xs->nn;) {
			if (under(path, xs->n[i].path)) {
				free(xs->n[i].path);
				free(xs->n[i].val);
				xs->n[i] = xs->n[--xs->nn];
			} else {
				i++;
			}
		}
		return 1;
	case XS_DIRECTORY: {
		size_t l = strlen(path);
		char *o = out;

		if (!n)
			return -ENOENT;
		if (!(perm(n, dom) & XS_PERM_READ))
			return -EACCES;
		for (size_t i = 0; i < xs->nn; i++) {
			const char *c = xs->n[i].path, *name;
			size_t nl;

			if (!under(path, c) || !strcmp(c, path))
				continue;
			name = c + l + (l > 1);
			if (strchr(name, '/'))
				continue;	/* not a direct child */
			nl = strlen(name) + 1;
			if (*outlen + nl > max)
				return -E2BIG;
			memcpy(o + *outlen, name, nl);
			*outlen += nl;
		}
		return 0;
	}
	case XS_GET_PERMS:
		if (!n)
			return -ENOENT;
		if (!(perm(n, dom) & XS_PERM_READ))
			return -EACCES;
		memcpy(out, n->p, n->np * sizeof(n->p[0]));
		*outlen = n->np * sizeof(n->p[0]);
		return 0;
	case XS_SET_PERMS: {
		struct xs_perm p[MAX_PERMS];
		unsigned int np = arglen / sizeof(p[0]);

		if (!n)
			return -ENOENT;
		if (!np || np > MAX_PERMS || arglen % sizeof(p[0]))
			return -EINVAL;
		/* the request need not be aligned */
		memcpy(p, arg, arglen);
		if (!(perm(n, dom) & XS_PERM_OWNER))
			return -EACCES;
		/* only dom0 gives a node away */
		if (dom && p[0].id != n->p[0].id)
			return -EPERM;
		memcpy(n->p, p, arglen);
		n->np = np;
		return 1;
	}
	default:
		return -EINVAL;
	}
}

bool xsim_xs_can_read(struct xsim_xs *xs, uint32_t dom, const char *path)
{
	struct node *n = find(xs, path);

	if (!n)
		n = ancestor(xs, path);
	return n && (perm(n, dom) & XS_PERM_READ);
}
