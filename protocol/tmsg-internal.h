/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the protocol/ sources; not installed. */
#ifndef TMSG_INTERNAL_H
#define TMSG_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "tcx-util.h"
#include "tmsg.h"

static inline uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, v >> 32);
	put_be32(p + 4, (uint32_t)v);
}

/* Known fixed-part size of a command (0 for an unknown one). */
uint32_t tmsg_fixed_size(uint32_t cmd);

/* Append @len bytes to the payload, or -EMSGSIZE. */
int tmsg_append(struct tmsg *m, const void *data, size_t len);

/* tcx_now_ns() + @timeout_ms, TMSG_FOREVER for a negative one. */
uint64_t tmsg_deadline(int timeout_ms);

/*
 * Read exactly @len bytes before @deadline_ns (tcx_now_ns() time,
 * TMSG_FOREVER: none): -ETIMEDOUT once it passed, however many bytes came
 * meanwhile; @what names the read in that message.
 */
int tmsg_read_until(struct tmsg_transport *t, void *buf, size_t len,
		    uint64_t deadline_ns, const char *what);

/*
 * One whole message before @deadline_ns; -ETIMEDOUT if it did not all come
 * (the stream is then out of step unless nothing came at all).
 */
int tmsg_recv_by(struct tmsg_transport *t, struct tmsg *m,
		 uint64_t deadline_ns);

/* Milliseconds on CLOCK_MONOTONIC (tcx_now_ns() for nanoseconds). */
int64_t tmsg_now_ms(void);

#endif /* TMSG_INTERNAL_H */
