/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every shim library shares: a connection to the xensim daemon named
 * by $XENSIM_HOST, acting as domain $XENSIM_DOMID (default 0), and mapping
 * of machine frames from the daemon's memory. Hidden from the exports.
 *
 * Error convention: unlike the simulator core (0 or a negative errno), the
 * shims return what the Xen library they replace returns, mostly -1 or
 * NULL with errno set, and the helpers here do the same so that the
 * wrappers can pass their results on as they are. The daemon's -errno in
 * a reply (struct xsim_msg.ret) becomes errno in xsim_call().
 */
#ifndef XSIM_CLIENT_H
#define XSIM_CLIENT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "xsim-proto.h"

#define XSIM_HIDDEN __attribute__((visibility("hidden")))

struct xsim_conn {
	int fd;			/* control socket */
	int memfd;		/* machine memory, -1 for event channels */
	int evtfd;		/* event channels: pending ports arrive here */
	size_t mem_pages;
	size_t pool_base;	/* first page of the grant pool */
	uint32_t domid;
	pthread_mutex_t lock;	/* one request at a time per handle */
};

/**
 * xsim_conn_open - connect to the simulated host
 * @c:		out
 * @kind:	enum xsim_kind
 *
 * Returns 0, or -1 with errno set (ENOENT when XENSIM_HOST is unset, the
 * closest thing to "no /dev/xen").
 */
XSIM_HIDDEN int xsim_conn_open(struct xsim_conn *c, int kind);

/** xsim_conn_close - drop the connection and its fds (no-op if not open) */
XSIM_HIDDEN void xsim_conn_close(struct xsim_conn *c);

/**
 * xsim_call - one request, one reply
 * @c:		connection
 * @m:		request in, reply header out
 * @data:	request payload (m->len is set from @len)
 * @len:	payload bytes
 * @out:	reply payload buffer, may be NULL
 * @outmax:	its size
 *
 * Returns m->ret if >= 0; otherwise -1 with errno = -m->ret.
 */
XSIM_HIDDEN int xsim_call(struct xsim_conn *c, struct xsim_msg *m,
			  const void *data, uint32_t len, void *out,
			  uint32_t outmax);

/**
 * xsim_post - one request without a reply, for EVTCHNOP_send: Xen's
 * notify costs the sender a hypercall, not a round trip to the peer's
 * wake-up; a blocking call here put tens of microseconds into every vchan
 * write and, unevenly, into ptp's probes.
 * @c:		connection
 * @m:		request (no payload)
 *
 * Returns 0, or -1 with errno if the daemon is gone.
 */
XSIM_HIDDEN int xsim_post(struct xsim_conn *c, struct xsim_msg *m);

/**
 * xsim_map - map machine frames like privcmd's mmap batch
 * @c:		connection with machine memory
 * @dom:	owner of the frames (DOMID_XEN for trace buffers)
 * @prot:	PROT_* for mmap
 * @num:	frames
 * @mfns:	the frames
 * @err:	per-frame result (0 or -errno), may be NULL
 *
 * Returns the mapping, or NULL with errno set.
 */
XSIM_HIDDEN void *xsim_map(struct xsim_conn *c, uint32_t dom, int prot,
			   size_t num, const uint64_t *mfns, int *err);

#endif /* XSIM_CLIENT_H */
