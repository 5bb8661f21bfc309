/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Interdomain event channels and grants of the simulated host (chan.c).
 * "client" is the serve loop's connection index, "gen" tells a reused
 * slot apart; a port is delivered through the deliver() callback.
 */
#ifndef XSIM_CHAN_H
#define XSIM_CHAN_H

#include <stdbool.h>
#include <stdint.h>

#include "xsim.h"

struct xsim_chan;

/*
 * Xen's defaults: max_grant_frames 64 of 512 v1 entries (8 bytes each) per
 * domain, the first 8 reserved for the toolstack (console, xenstore);
 * max_maptrack_frames 1024 of 512 entries per mapping domain. Each table
 * is backed by its own XSIM_GNT_ENTRIES pages of the pool: ref r of table
 * i is pool page i * XSIM_GNT_ENTRIES + r.
 */
#define XSIM_GNT_ENTRIES	(64u * 512u)
#define XSIM_GNT_RESERVED	8u
#define XSIM_MAPTRACK_ENTRIES	(1024u * 512u)
#define XSIM_GNT_TABLES		(XSIM_MAX_DOMAINS + 1u)	/* every domain and dom0 */
#define XSIM_GNT_POOL		(XSIM_GNT_TABLES * XSIM_GNT_ENTRIES)	/* pages */

/** xsim_chan_new - channels and the grant tables, backed by the pool at @pool */
struct xsim_chan *xsim_chan_new(uint8_t *pool,
				void (*deliver)(void *arg, int client,
						uint32_t gen, uint32_t port),
				void *arg);
/** xsim_chan_free - release */
void xsim_chan_free(struct xsim_chan *ch);

/** xsim_chan_unbound - EVTCHNOP_alloc_unbound; returns the port or -errno */
int xsim_chan_unbound(struct xsim_chan *ch, int client, uint32_t gen,
		      uint32_t dom, uint32_t remote_dom);
/**
 * xsim_chan_interdomain - bind to a peer's unbound port, once
 *
 * Returns the port or -errno.
 */
int xsim_chan_interdomain(struct xsim_chan *ch, int client, uint32_t gen,
			  uint32_t dom, uint32_t remote_dom,
			  uint32_t remote_port);
/** xsim_chan_notify - EVTCHNOP_send on @dom's @port; returns 0 or -EINVAL */
int xsim_chan_notify(struct xsim_chan *ch, uint32_t dom, uint32_t port);
/** xsim_chan_unmask - deliver what came while masked; returns 0 or -EINVAL */
int xsim_chan_unmask(struct xsim_chan *ch, int client, uint32_t dom,
		     uint32_t port);
/**
 * xsim_chan_unbind - close a port; its peer becomes unbound
 *
 * Returns 0 or -EINVAL.
 */
int xsim_chan_unbind(struct xsim_chan *ch, int client, uint32_t dom,
		     uint32_t port);

/**
 * xsim_chan_share - grant @count consecutive entries of @dom's table to @peer
 * @nt_off:	byte of the first page cleared if the sharer vanishes, or -1
 * @nt_port:	port notified then
 * @refs:	out, the grant refs (in @dom's table; xsim_chan_page: the pages)
 *
 * Returns 0, -ENOSPC when @dom's table has no @count entries left (as
 * gntalloc answers), or -EINVAL.
 */
int xsim_chan_share(struct xsim_chan *ch, int client, uint32_t gen,
		    uint32_t dom, uint32_t peer, uint32_t count, int32_t nt_off,
		    uint32_t nt_port, uint32_t *refs);
/** xsim_chan_unshare - end a share by its first ref; returns 0 or -EINVAL */
int xsim_chan_unshare(struct xsim_chan *ch, int client, uint32_t dom,
		      uint32_t ref);
/**
 * xsim_chan_map - map refs @granter gave to @dom (consecutive refs);
 * @nt_off/@nt_port as for a share, for a one-page map
 * @page:	out, the pool page of the first ref
 *
 * Returns 0, or -EINVAL for refs not granted to @dom or a full maptrack
 * of @dom (gntdev's answer to Xen's GNTST_no_device_space).
 */
int xsim_chan_map(struct xsim_chan *ch, int client, uint32_t dom,
		  uint32_t granter, uint32_t count, const uint32_t *refs,
		  int32_t nt_off, uint32_t nt_port, uint32_t *page);
/** xsim_chan_unmap - forget a map by its first ref; returns 0 or -EINVAL */
int xsim_chan_unmap(struct xsim_chan *ch, int client, uint32_t granter,
		    uint32_t ref);
/** xsim_chan_page - the pool page of @dom's grant @ref (UINT32_MAX: no table) */
uint32_t xsim_chan_page(const struct xsim_chan *ch, uint32_t dom, uint32_t ref);
/** xsim_chan_usage - @dom's grant entries and maptrack entries in use */
void xsim_chan_usage(const struct xsim_chan *ch, uint32_t dom, uint32_t *granted,
		     uint32_t *mapped);
/** xsim_chan_drop - @client's process is gone: notify, unshare, unbind */
void xsim_chan_drop(struct xsim_chan *ch, int client);

#endif /* XSIM_CHAN_H */
