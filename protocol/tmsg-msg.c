// SPDX-License-Identifier: GPL-2.0
/*
 * Framing: the 12-byte header, fixed parts and payloads, with the receiver
 * checks of trace-cmd (size range, command range) made strict.
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "tcx-util.h"
#include "tmsg-internal.h"

int64_t tmsg_now_ms(void)
{
	return (int64_t)(tcx_now_ns() / 1000000);
}

/* trace-cmd's commands, then ours (AUTH) in the slot after them */
#define SLOT_AUTH	TMSG_NR_CMDS
#define NR_SLOTS	(TMSG_NR_CMDS + 1)

static const char *const cmd_names[NR_SLOTS] = {
	"CLOSE", "TINIT", "RINIT", "SEND_DATA", "FIN_DATA", "NOT_SUPP",
	"TRACE_REQ", "TRACE_RESP", "CLOSE_RESP", "TIME_SYNC", "TRACE_PROXY",
	"CONT", "AUTH",
};

static const uint8_t fixed_sizes[NR_SLOTS] = {
	[TMSG_TINIT]		= TMSG_TINIT_SIZE,
	[TMSG_RINIT]		= TMSG_RINIT_SIZE,
	[TMSG_TRACE_REQ]	= TMSG_TRACE_REQ_SIZE,
	[TMSG_TRACE_RESP]	= TMSG_TRACE_RESP_SIZE,
	[TMSG_TIME_SYNC]	= TMSG_TIME_SYNC_SIZE,
	[TMSG_TRACE_PROXY]	= TMSG_TRACE_PROXY_SIZE,
	[SLOT_AUTH]		= TMSG_AUTH_SIZE,
};

/* The tables' index of @cmd, or -1 for an unknown command. */
static int slot(uint32_t cmd)
{
	if (cmd < TMSG_NR_CMDS)
		return (int)cmd;
	return cmd == TMSG_AUTH ? SLOT_AUTH : -1;
}

const char *tmsg_cmd_name(uint32_t cmd)
{
	int i = slot(cmd);

	return i < 0 ? "UNKNOWN" : cmd_names[i];
}

uint32_t tmsg_fixed_size(uint32_t cmd)
{
	int i = slot(cmd);

	return i < 0 ? 0 : fixed_sizes[i];
}

int tmsg_check_header(const uint8_t *hdr, uint32_t *size)
{
	uint32_t sz = get_be32(hdr);
	uint32_t cmd = get_be32(hdr + 4);
	uint32_t cmd_size = get_be32(hdr + 8);

	if (sz < TMSG_HDR_SIZE || sz > TMSG_MAX_LEN)
		return tcx_fail(-EBADMSG,
				 "message size %u out of range %d..%d",
				 sz, TMSG_HDR_SIZE, TMSG_MAX_LEN);
	if (slot(cmd) < 0)
		return tcx_fail(-EBADMSG, "unknown command %u (size %u)",
				 cmd, sz);
	if (cmd_size > sz - TMSG_HDR_SIZE)
		return tcx_fail(-EBADMSG,
				 "%s: fixed part of %u bytes in a %u-byte message",
				 tmsg_cmd_name(cmd), cmd_size, sz);
	*size = sz;
	return 0;
}

/* Commands that carry nothing after their fixed part. (NOT_SUPP may carry
 * our reason text, which trace-cmd reads and ignores.) */
static bool no_payload(uint32_t cmd)
{
	switch (cmd) {
	case TMSG_CLOSE:
	case TMSG_FIN_DATA:
	case TMSG_CLOSE_RESP:
	case TMSG_CONT:
		return true;
	default:
		return false;
	}
}

ssize_t tmsg_decode(struct tmsg *m, const uint8_t *buf, size_t len)
{
	uint32_t size, cmd, cmd_size, known, keep;
	int ret;

	if (len < TMSG_HDR_SIZE)
		return -EAGAIN;
	ret = tmsg_check_header(buf, &size);
	if (ret)
		return ret;
	if (len < size)
		return -EAGAIN;

	cmd = get_be32(buf + 4);
	cmd_size = get_be32(buf + 8);
	known = tmsg_fixed_size(cmd);
	keep = cmd_size < known ? cmd_size : known;

	/* Longer fixed parts come from newer peers: keep what we know, skip
	 * the rest. Shorter ones come from older peers: the rest is zero. */
	m->cmd = cmd;
	m->wire_cmd_size = cmd_size;
	m->fixed_len = known;
	memset(m->fixed, 0, sizeof(m->fixed));
	memcpy(m->fixed, buf + TMSG_HDR_SIZE, keep);
	m->len = size - TMSG_HDR_SIZE - cmd_size;
	memcpy(m->payload, buf + TMSG_HDR_SIZE + cmd_size, m->len);

	if (m->len && no_payload(cmd))
		return tcx_fail(-EBADMSG, "%s with a %u-byte payload",
				 tmsg_cmd_name(cmd), m->len);
	return size;
}

size_t tmsg_encode(const struct tmsg *m, uint8_t *buf)
{
	uint32_t size = TMSG_HDR_SIZE + m->fixed_len + m->len;

	put_be32(buf, size);
	put_be32(buf + 4, m->cmd);
	put_be32(buf + 8, m->fixed_len);
	memcpy(buf + TMSG_HDR_SIZE, m->fixed, m->fixed_len);
	memcpy(buf + TMSG_HDR_SIZE + m->fixed_len, m->payload, m->len);
	return size;
}

int tmsg_make(struct tmsg *m, uint32_t cmd)
{
	if (slot(cmd) < 0)
		return tcx_fail(-EINVAL, "unknown command %u", cmd);
	m->cmd = cmd;
	m->wire_cmd_size = 0;
	m->fixed_len = tmsg_fixed_size(cmd);
	memset(m->fixed, 0, sizeof(m->fixed));
	m->len = 0;
	return 0;
}

int tmsg_append(struct tmsg *m, const void *data, size_t len)
{
	if (len > TMSG_MAX_DATA - m->fixed_len - m->len)
		return tcx_fail(-EMSGSIZE,
				 "%s does not fit in %d bytes",
				 tmsg_cmd_name(m->cmd), TMSG_MAX_LEN);
	if (len)
		memcpy(m->payload + m->len, data, len);
	m->len += len;
	return 0;
}

int tmsg_make_data(struct tmsg *m, const void *data, size_t len)
{
	tmsg_make(m, TMSG_SEND_DATA);
	return tmsg_append(m, data, len);
}
