// SPDX-License-Identifier: GPL-2.0
/*
 * The agent's advertisement in xenstore, under its own guest-writable
 * /local/domain/<id>/data/trace-cmd-xen/: version, caps and port, then
 * state=ready written last so that a reader seeing "ready" sees the rest.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <xenstore.h>

#include "tmsg-internal.h"

#define XS_NODE_MAX	96

static int node_path(char *buf, unsigned int domid, const char *node)
{
	int n = snprintf(buf, XS_NODE_MAX, "/local/domain/%u/" TMSG_XS_DIR "/%s",
			 domid, node);

	return n > 0 && n < XS_NODE_MAX ? 0 : -ENAMETOOLONG;
}

static int xs_put(struct xs_handle *xs, unsigned int domid, const char *node,
		  const char *val)
{
	char path[XS_NODE_MAX];

	if (node_path(path, domid, node))
		return tcx_fail(-ENAMETOOLONG, "xenstore path too long");
	if (!xs_write(xs, XBT_NULL, path, val, strlen(val)))
		return tcx_fail(errno ? -errno : -EIO, "xenstore write %s: %s",
				 path, strerror(errno ? errno : EIO));
	return 0;
}

int tmsg_xs_parse_text(const char *v, unsigned int n, char *buf, size_t len)
{
	unsigned int i;

	if (!len)
		return -EINVAL;
	buf[0] = 0;
	if (n >= len)
		return tcx_fail(-EMSGSIZE, "xenstore value of %u bytes, at most %zu", n, len - 1);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c < 0x20 || c == 0x7f)
			return tcx_fail(-EINVAL, "xenstore value with byte 0x%02x at %u", c, i);
	}
	memcpy(buf, v, n);
	buf[n] = 0;
	return 0;
}

int tmsg_xs_parse_id(const char *v, unsigned int n, unsigned int max, unsigned int *id)
{
	unsigned long x;
	int ret = tcx_parse_uintn(v, n, max, &x);

	if (ret)
		return tcx_fail(ret, "xenstore value \"%.*s\" is not a number up to %u",
				(int)(n < 32 ? n : 32), v, max);
	*id = (unsigned int)x;
	return 0;
}

/* Read a node as text into @buf: -ENOENT if absent, or the parse error. */
static int xs_get(struct xs_handle *xs, unsigned int domid, const char *node,
		  char *buf, size_t len)
{
	char path[XS_NODE_MAX];
	unsigned int n = 0;
	char *v;
	int ret;

	buf[0] = 0;
	if (node_path(path, domid, node))
		return -ENAMETOOLONG;
	v = xs_read(xs, XBT_NULL, path, &n);
	if (!v)
		return -ENOENT;
	ret = tmsg_xs_parse_text(v, n, buf, len);
	free(v);
	return ret;
}

static struct xs_handle *open_xs(void)
{
	struct xs_handle *xs = xs_open(0);

	if (!xs)
		tcx_fail(errno ? -errno : -EIO, "xenstore: %s",
			  strerror(errno ? errno : EIO));
	return xs;
}

int tmsg_xs_advertise(unsigned int domid, const char *caps,
		      unsigned int port)
{
	struct xs_handle *xs = open_xs();
	char pstr[16];
	int ret;

	if (!xs)
		return -EIO;
	snprintf(pstr, sizeof(pstr), "%u", port);
	ret = xs_put(xs, domid, "state", "starting");
	if (!ret)
		ret = xs_put(xs, domid, "version", TMSG_XS_VERSION);
	if (!ret)
		ret = xs_put(xs, domid, "caps", caps ? caps : "");
	if (!ret)
		ret = xs_put(xs, domid, "port", pstr);
	if (!ret)
		ret = xs_put(xs, domid, "state", "ready");
	xs_close(xs);
	return ret;
}

int tmsg_xs_withdraw(unsigned int domid)
{
	struct xs_handle *xs = open_xs();
	int ret;

	if (!xs)
		return -EIO;
	ret = xs_put(xs, domid, "state", "stopped");
	xs_close(xs);
	return ret;
}

int tmsg_xs_self_domid(unsigned int *domid)
{
	struct xs_handle *xs = open_xs();
	unsigned int n = 0;
	char *v;
	int ret;

	if (!xs)
		return -EIO;
	/* Relative paths resolve under the caller's home. */
	v = xs_read(xs, XBT_NULL, "domid", &n);
	xs_close(xs);
	if (!v)
		return tcx_fail(-ENOENT, "xenstore: no \"domid\" node (not a Xen guest?)");
	ret = tmsg_xs_parse_id(v, n, TMSG_XS_DOMID_MAX, domid);
	free(v);
	if (ret)
		return tcx_fail(ret, "xenstore: domid: %s", tcx_error());
	return 0;
}

int tmsg_xs_lookup(unsigned int domid, struct tmsg_xs_agent *out)
{
	struct xs_handle *xs = open_xs();
	char state[16], port[16];

	memset(out, 0, sizeof(*out));
	if (!xs)
		return -EIO;
	if (xs_get(xs, domid, "state", state, sizeof(state)) == -ENOENT) {
		xs_close(xs);
		return tcx_fail(-ENOENT, "domain %u runs no trace-cmd-xen agent",
				 domid);
	}
	/* Guest-written: a hostile value reads as absent (not ready, port 0). */
	out->ready = !strcmp(state, "ready");
	xs_get(xs, domid, "version", out->version, sizeof(out->version));
	xs_get(xs, domid, "caps", out->caps, sizeof(out->caps));
	if (!xs_get(xs, domid, "port", port, sizeof(port)) &&
	    tmsg_xs_parse_id(port, (unsigned int)strlen(port), TMSG_XS_PORT_MAX, &out->port))
		out->port = 0;
	xs_close(xs);
	return 0;
}
