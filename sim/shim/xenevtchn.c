// SPDX-License-Identifier: GPL-2.0
/*
 * libxenevtchn.so.1 on xensim. The fd is a pipe on which the daemon writes
 * pending ports, like /dev/xen/evtchn's read(); a delivered port stays
 * masked until xenevtchn_unmask(), as with the kernel driver.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <xenevtchn.h>

#include "xsim-client.h"

struct xenevtchn_handle {
	struct xsim_conn conn;
};

xenevtchn_handle *xenevtchn_open(struct xentoollog_logger *logger,
				 unsigned int flags)
{
	xenevtchn_handle *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	if (xsim_conn_open(&h->conn, XSIM_KIND_EVTCHN)) {
		free(h);
		return NULL;
	}
	return h;
}

xenevtchn_handle *xenevtchn_fdopen(struct xentoollog_logger *logger, int fd,
				   unsigned open_flags)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int xenevtchn_close(xenevtchn_handle *xce)
{
	if (!xce)
		return 0;
	xsim_conn_close(&xce->conn);
	free(xce);
	return 0;
}

int xenevtchn_fd(xenevtchn_handle *xce)
{
	return xce->conn.evtfd;
}

static int port_op(xenevtchn_handle *xce, uint32_t op, uint64_t a0)
{
	struct xsim_msg m = { .op = op };

	m.a[0] = a0;
	return xsim_call(&xce->conn, &m, NULL, 0, NULL, 0);
}

xenevtchn_port_or_error_t xenevtchn_bind_virq(xenevtchn_handle *xce,
					      unsigned int virq)
{
	return port_op(xce, XSIM_OP_BIND_VIRQ, virq);
}

int xenevtchn_unbind(xenevtchn_handle *xce, evtchn_port_t port)
{
	return port_op(xce, XSIM_OP_UNBIND, port) < 0 ? -1 : 0;
}

int xenevtchn_unmask(xenevtchn_handle *xce, evtchn_port_t port)
{
	return port_op(xce, XSIM_OP_UNMASK, port) < 0 ? -1 : 0;
}

xenevtchn_port_or_error_t xenevtchn_pending(xenevtchn_handle *xce)
{
	uint32_t port;
	ssize_t n;

	while ((n = read(xce->conn.evtfd, &port, sizeof(port))) < 0 &&
	       errno == EINTR)
		;

	if (n != sizeof(port)) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	return port;
}

int xenevtchn_notify(xenevtchn_handle *xce, evtchn_port_t port)
{
	struct xsim_msg m = { .op = XSIM_OP_EVT_NOTIFY };

	m.a[0] = port;
	return xsim_post(&xce->conn, &m);
}

xenevtchn_port_or_error_t xenevtchn_bind_unbound_port(xenevtchn_handle *xce,
						      uint32_t domid)
{
	return port_op(xce, XSIM_OP_EVT_UNBOUND, domid);
}

xenevtchn_port_or_error_t xenevtchn_bind_interdomain(xenevtchn_handle *xce,
						     uint32_t domid,
						     evtchn_port_t remote_port)
{
	struct xsim_msg m = { .op = XSIM_OP_EVT_INTERDOMAIN };

	m.a[0] = domid;
	m.a[1] = remote_port;
	return xsim_call(&xce->conn, &m, NULL, 0, NULL, 0);
}

int xenevtchn_restrict(xenevtchn_handle *xce, domid_t domid)
{
	errno = EOPNOTSUPP;
	return -1;
}
