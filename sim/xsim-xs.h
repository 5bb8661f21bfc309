/* SPDX-License-Identifier: GPL-2.0 */
/* The simulated host's xenstore tree (xs.c), used by the serve loop. */
#ifndef XSIM_XS_H
#define XSIM_XS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <xen/io/xs_wire.h>	/* XS_READ, XS_WRITE, ... */

struct xsim_conf;
struct xsim_xs;

/** struct xs_perm - a permission entry on the wire (xs_permissions' layout) */
struct xs_perm {
	uint32_t id;
	uint32_t perms;		/* XS_PERM_* of xenstore_lib.h */
};

#ifndef XS_PERM_READ
#define XS_PERM_NONE	0x00
#define XS_PERM_READ	0x01
#define XS_PERM_WRITE	0x02
#define XS_PERM_OWNER	0x08
#endif

/** xsim_xs_new - the tree libxl leaves for the domains of @c */
struct xsim_xs *xsim_xs_new(const struct xsim_conf *c);

/** xsim_xs_free - release the tree */
void xsim_xs_free(struct xsim_xs *xs);

/**
 * xsim_xs_canon - absolute form of a path given by domain @dom
 *
 * Returns 0, or -EINVAL for a malformed or too long path.
 */
int xsim_xs_canon(uint32_t dom, const char *in, char *out, size_t len);

/**
 * xsim_xs_op - one request on an absolute path, with xenstored's rules
 * @xs:		tree
 * @dom:	caller
 * @op:		XS_READ, XS_WRITE, XS_MKDIR, XS_RM, XS_DIRECTORY, XS_GET_PERMS or
 *		XS_SET_PERMS
 * @path:	absolute path
 * @arg:	value (write) or struct xs_perm[] (set_perms)
 * @arglen:	its size
 * @out:	reply buffer: value, NUL-separated names, or struct xs_perm[]
 * @outlen:	in, its size; out, bytes used
 *
 * Returns 1 if the tree changed (fire watches), 0, or -errno.
 */
int xsim_xs_op(struct xsim_xs *xs, uint32_t dom, unsigned int op,
	       const char *path, const void *arg, uint32_t arglen,
	       void *out, uint32_t *outlen);

/** xsim_xs_can_read - may @dom see a watch event for @path? */
bool xsim_xs_can_read(struct xsim_xs *xs, uint32_t dom, const char *path);

#endif /* XSIM_XS_H */
