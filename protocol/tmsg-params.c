// SPDX-License-Identifier: GPL-2.0
/*
 * Contents of the commands that carry some: TINIT, RINIT, TRACE_REQ/PROXY
 * and their parameters, TRACE_RESP, TIME_SYNC. Parsing is strict: every
 * count must match the bytes that are there, every string must end inside
 * the message, every number must be a number.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "tmsg-internal.h"

/* ---- strings and numbers ---- */

/* Append a NUL-terminated string. */
static int put_str(struct tmsg *m, const char *s)
{
	return tmsg_append(m, s, strlen(s) + 1);
}

static int put_u32_dec(struct tmsg *m, uint32_t v)
{
	char buf[16];
	int n = snprintf(buf, sizeof(buf), "%u", v);

	return tmsg_append(m, buf, n + 1);
}

/*
 * Split @len bytes at @p into exactly @n NUL-terminated strings that fill
 * them; *@out gets an allocated array of pointers into @p.
 */
static int split_strings(const uint8_t *p, uint32_t len, uint32_t n,
			 const char ***out, const char *what)
{
	const char **v;
	uint32_t off = 0;

	*out = NULL;
	/* Each string takes at least its NUL: this bounds the allocation. */
	if (n > len)
		return tcx_fail(-EBADMSG, "%s: %u strings in %u bytes",
				 what, n, len);
	if (!n && len)
		return tcx_fail(-EBADMSG, "%s: %u stray bytes", what, len);
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return tcx_fail(-ENOMEM, "%s: out of memory", what);
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *nul = memchr(p + off, 0, len - off);

		if (!nul) {
			free(v);
			return tcx_fail(-EBADMSG,
					 "%s: string %u of %u is not terminated",
					 what, i + 1, n);
		}
		v[i] = (const char *)p + off;
		off = nul - p + 1;
		if (off == len && i + 1 < n) {
			free(v);
			return tcx_fail(-EBADMSG, "%s: %u strings, %u expected",
					 what, i + 1, n);
		}
	}
	if (off != len) {
		free(v);
		return tcx_fail(-EBADMSG, "%s: %u bytes after %u strings",
				 what, len - off, n);
	}
	*out = v;
	return 0;
}

/* Digits only, at most 10, value <= UINT32_MAX. */
static int parse_u32_dec(const char *s, uint32_t *v)
{
	uint64_t x = 0;
	size_t i;

	for (i = 0; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9' || i >= 10)
			return -1;
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	if (!i || x > UINT32_MAX)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

/* @cpus decimal port strings filling the payload. */
static int parse_ports(const struct tmsg *m, uint32_t cpus, uint32_t **out,
		       const char *what)
{
	const char **s;
	uint32_t *ports;
	int ret;

	*out = NULL;
	if (!cpus || cpus > TMSG_MAX_CPUS)
		return tcx_fail(-EBADMSG, "%s: cpu count %u out of range 1..%d",
				 what, cpus, TMSG_MAX_CPUS);
	ret = split_strings(m->payload, m->len, cpus, &s, what);
	if (ret)
		return ret;
	ports = calloc(cpus, sizeof(*ports));
	if (!ports) {
		free(s);
		return tcx_fail(-ENOMEM, "%s: out of memory", what);
	}
	for (uint32_t i = 0; i < cpus; i++) {
		if (parse_u32_dec(s[i], &ports[i])) {
			ret = tcx_fail(-EBADMSG, "%s: port %u is \"%.16s\"",
					what, i, s[i]);
			free(ports);
			free(s);
			return ret;
		}
	}
	free(s);
	*out = ports;
	return 0;
}

static int check_cmd(const struct tmsg *m, uint32_t cmd)
{
	if (m->cmd != cmd)
		return tcx_fail(-EPROTO, "got %s, expected %s",
				 tmsg_cmd_name(m->cmd), tmsg_cmd_name(cmd));
	return 0;
}

/* The page sizes a ring buffer can have. */
static int check_page_size(uint32_t ps, const char *what)
{
	if (ps < 1024 || ps > (1u << 20) || (ps & (ps - 1)))
		return tcx_fail(-EBADMSG, "%s: page size %u", what, ps);
	return 0;
}

/* A fixed char[16] name: NUL inside, printable before it. */
static int copy_proto_name(char *dst, const uint8_t *src, const char *what)
{
	const uint8_t *nul = memchr(src, 0, TMSG_PROTO_NAME_LEN);

	if (!nul)
		return tcx_fail(-EBADMSG, "%s: protocol name not terminated",
				 what);
	for (const uint8_t *c = src; c < nul; c++)
		if (*c < 0x21 || *c > 0x7e)
			return tcx_fail(-EBADMSG,
					 "%s: bad byte 0x%02x in protocol name",
					 what, *c);
	memcpy(dst, src, nul - src + 1);
	return 0;
}

static int check_proto_name(const char *name, const char *what)
{
	if (!name || strlen(name) >= TMSG_PROTO_NAME_LEN)
		return tcx_fail(-EINVAL, "%s: protocol name too long", what);
	return 0;
}

/* ---- TINIT / RINIT ---- */

int tmsg_make_tinit(struct tmsg *m, uint32_t cpus, uint32_t page_size,
		    const char *const *opts, uint32_t nr_opts)
{
	int ret = 0;

	tmsg_make(m, TMSG_TINIT);
	put_be32(m->fixed, cpus);
	put_be32(m->fixed + 4, page_size);
	put_be32(m->fixed + 8, nr_opts);
	for (uint32_t i = 0; i < nr_opts && !ret; i++)
		ret = put_str(m, opts[i]);
	return ret;
}

int tmsg_parse_tinit(const struct tmsg *m, struct tmsg_tinit *out)
{
	int ret = check_cmd(m, TMSG_TINIT);

	memset(out, 0, sizeof(*out));
	if (ret)
		return ret;
	out->cpus = get_be32(m->fixed);
	out->page_size = get_be32(m->fixed + 4);
	out->nr_opts = get_be32(m->fixed + 8);
	if (!out->cpus || out->cpus > TMSG_MAX_CPUS)
		return tcx_fail(-EBADMSG, "TINIT: cpu count %u out of range 1..%d",
				 out->cpus, TMSG_MAX_CPUS);
	ret = check_page_size(out->page_size, "TINIT");
	if (!ret)
		ret = split_strings(m->payload, m->len, out->nr_opts,
				    &out->opts, "TINIT options");
	if (ret)
		memset(out, 0, sizeof(*out));
	return ret;
}

void tmsg_tinit_free(struct tmsg_tinit *t)
{
	free(t->opts);
	t->opts = NULL;
}

int tmsg_make_rinit(struct tmsg *m, uint32_t cpus, const uint32_t *ports)
{
	int ret = 0;

	tmsg_make(m, TMSG_RINIT);
	put_be32(m->fixed, cpus);
	for (uint32_t i = 0; i < cpus && !ret; i++)
		ret = put_u32_dec(m, ports[i]);
	return ret;
}

int tmsg_parse_rinit(const struct tmsg *m, struct tmsg_rinit *out)
{
	int ret = check_cmd(m, TMSG_RINIT);

	memset(out, 0, sizeof(*out));
	if (ret)
		return ret;
	out->cpus = get_be32(m->fixed);
	ret = parse_ports(m, out->cpus, &out->ports, "RINIT");
	if (ret)
		out->cpus = 0;
	return ret;
}

void tmsg_rinit_free(struct tmsg_rinit *r)
{
	free(r->ports);
	r->ports = NULL;
}

/* ---- TRACE_REQ / TRACE_PROXY ---- */

static int put_param_head(struct tmsg *m, uint32_t id, uint32_t len)
{
	uint8_t h[8];

	put_be32(h, id);
	put_be32(h + 4, len);
	return tmsg_append(m, h, sizeof(h));
}

static int put_args(struct tmsg *m, uint32_t argc, const char *const *argv)
{
	uint32_t len = 4;
	uint8_t n[4];
	int ret;

	for (uint32_t i = 0; i < argc; i++) {
		size_t l = strlen(argv[i]) + 1;

		if (l > TMSG_MAX_DATA)
			return tcx_fail(-EMSGSIZE, "TRACE_REQ: argument too long");
		len += l;
		if (len > TMSG_MAX_DATA)
			return tcx_fail(-EMSGSIZE, "TRACE_REQ: arguments too long");
	}
	put_be32(n, argc);
	ret = put_param_head(m, TMSG_PARAM_ARGS, len);
	if (!ret)
		ret = tmsg_append(m, n, 4);
	for (uint32_t i = 0; i < argc && !ret; i++)
		ret = put_str(m, argv[i]);
	return ret;
}

static int put_protos(struct tmsg *m, uint32_t n, const char *const *protos)
{
	uint32_t len = 1;	/* the list ends with an empty name */
	int ret;

	for (uint32_t i = 0; i < n; i++) {
		ret = check_proto_name(protos[i], "TRACE_REQ");
		if (ret)
			return ret;
		len += strlen(protos[i]) + 1;
	}
	ret = put_param_head(m, TMSG_PARAM_TSYNC_PROTOS, len);
	for (uint32_t i = 0; i < n && !ret; i++)
		ret = put_str(m, protos[i]);
	if (!ret)
		ret = tmsg_append(m, "", 1);
	return ret;
}

int tmsg_make_trace_req(struct tmsg *m, const struct tmsg_trace_req *req)
{
	int ret = 0;

	tmsg_make(m, req->proxy ? TMSG_TRACE_PROXY : TMSG_TRACE_REQ);
	put_be32(m->fixed, req->flags);
	put_be32(m->fixed + 4, 0);	/* argc: trace-cmd sends 0, reads none */
	put_be64(m->fixed + 8, req->trace_id);
	if (req->proxy) {
		put_be32(m->fixed + 16, req->cpus);
		put_be32(m->fixed + 20, req->siblings);
	}
	if (req->argc)
		ret = put_args(m, req->argc, req->argv);
	if (!ret && req->nr_protos)
		ret = put_protos(m, req->nr_protos, req->protos);
	if (!ret && req->auth_nonce) {
		uint8_t v[4];

		put_be32(v, TMSG_AUTH_VERSION);
		ret = put_param_head(m, TMSG_PARAM_AUTH, 4 + TMSG_AUTH_NONCE);
		if (!ret)
			ret = tmsg_append(m, v, sizeof(v));
		if (!ret)
			ret = tmsg_append(m, req->auth_nonce, TMSG_AUTH_NONCE);
	}
	return ret;
}

static int parse_args(const uint8_t *p, uint32_t len,
		      struct tmsg_trace_req *out)
{
	if (len < 4)
		return tcx_fail(-EBADMSG, "TRACE_REQ ARGS: %u bytes", len);
	out->argc = get_be32(p);
	return split_strings(p + 4, len - 4, out->argc, &out->argv,
			     "TRACE_REQ ARGS");
}

/* Non-empty names, then one empty name that ends the list and the data. */
static int parse_protos(const uint8_t *p, uint32_t len,
			struct tmsg_trace_req *out)
{
	uint32_t n = 0;
	int ret;

	if (!len || p[len - 1])
		return tcx_fail(-EBADMSG, "TRACE_REQ TSYNC_PROTOS: not terminated");
	for (uint32_t i = 0; i < len; i++)
		n += !p[i];
	/* n strings, the last one empty. */
	ret = split_strings(p, len, n, &out->protos, "TRACE_REQ TSYNC_PROTOS");
	if (ret)
		return ret;
	for (uint32_t i = 0; i + 1 < n; i++) {
		size_t l = strlen(out->protos[i]);

		if (!l || l >= TMSG_PROTO_NAME_LEN) {
			free(out->protos);
			out->protos = NULL;
			return tcx_fail(-EBADMSG,
					 "TRACE_REQ TSYNC_PROTOS: name %u has %zu bytes",
					 i, l);
		}
	}
	if (out->protos[n - 1][0]) {
		free(out->protos);
		out->protos = NULL;
		return tcx_fail(-EBADMSG, "TRACE_REQ TSYNC_PROTOS: no end mark");
	}
	out->nr_protos = n - 1;
	return 0;
}

/*
 * AUTH: a version, then what that version carries. A newer version is
 * kept without its contents, so the agent can say which one it speaks.
 */
static int parse_auth_param(const uint8_t *p, uint32_t len,
			    struct tmsg_trace_req *out)
{
	if (len < 4)
		return tcx_fail(-EBADMSG, "TRACE_REQ AUTH: %u bytes", len);
	out->auth_version = get_be32(p);
	if (!out->auth_version)
		return tcx_fail(-EBADMSG, "TRACE_REQ AUTH: version 0");
	if (out->auth_version != TMSG_AUTH_VERSION)
		return 0;
	if (len != 4 + TMSG_AUTH_NONCE)
		return tcx_fail(-EBADMSG, "TRACE_REQ AUTH: %u bytes, not %d",
				len, 4 + TMSG_AUTH_NONCE);
	out->auth_nonce = p + 4;
	return 0;
}

int tmsg_parse_trace_req(const struct tmsg *m, struct tmsg_trace_req *out)
{
	bool seen_args = false, seen_protos = false, seen_secret = false;
	bool seen_auth = false;
	const uint8_t *p = m->payload;
	uint32_t left = m->len;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (m->cmd != TMSG_TRACE_REQ && m->cmd != TMSG_TRACE_PROXY)
		return tcx_fail(-EPROTO, "got %s, expected TRACE_REQ",
				 tmsg_cmd_name(m->cmd));
	out->proxy = m->cmd == TMSG_TRACE_PROXY;
	out->flags = get_be32(m->fixed);
	out->trace_id = get_be64(m->fixed + 8);
	if (out->proxy) {
		out->cpus = get_be32(m->fixed + 16);
		out->siblings = get_be32(m->fixed + 20);
	}

	while (left && !ret) {
		uint32_t id, len;
		bool *seen = NULL;

		if (left < 8) {
			ret = tcx_fail(-EBADMSG,
					"TRACE_REQ: %u stray bytes after parameters",
					left);
			break;
		}
		id = get_be32(p);
		len = get_be32(p + 4);
		p += 8;
		left -= 8;
		if (len > left) {
			ret = tcx_fail(-EBADMSG,
					"TRACE_REQ: parameter %u of %u bytes, %u left",
					id, len, left);
			break;
		}
		switch (id) {
		case TMSG_PARAM_ARGS:
			seen = &seen_args;
			break;
		case TMSG_PARAM_TSYNC_PROTOS:
			seen = &seen_protos;
			break;
		case TMSG_PARAM_SECRET:
			seen = &seen_secret;
			break;
		case TMSG_PARAM_AUTH:
			seen = &seen_auth;
			break;
		default:	/* a newer peer's parameter: skip it */
			break;
		}
		if (seen && *seen) {
			ret = tcx_fail(-EBADMSG, "TRACE_REQ: parameter %u twice",
					id);
			break;
		}
		if (seen)
			*seen = true;
		if (id == TMSG_PARAM_ARGS) {
			ret = parse_args(p, len, out);
		} else if (id == TMSG_PARAM_TSYNC_PROTOS) {
			ret = parse_protos(p, len, out);
		} else if (id == TMSG_PARAM_SECRET) {
			/* its bytes are an older host's secret: not kept */
			out->plain_secret = true;
		} else if (id == TMSG_PARAM_AUTH) {
			ret = parse_auth_param(p, len, out);
		}
		p += len;
		left -= len;
	}
	if (ret)
		tmsg_trace_req_free(out);
	return ret;
}

void tmsg_trace_req_free(struct tmsg_trace_req *r)
{
	free(r->argv);
	free(r->protos);
	memset(r, 0, sizeof(*r));
}

/* ---- TRACE_RESP ---- */

int tmsg_make_trace_resp(struct tmsg *m, const struct tmsg_trace_resp *resp)
{
	int ret;

	tmsg_make(m, TMSG_TRACE_RESP);
	ret = check_proto_name(resp->tsync_proto, "TRACE_RESP");
	if (ret)
		return ret;
	put_be32(m->fixed, resp->flags);
	put_be32(m->fixed + 4, resp->cpus);
	put_be32(m->fixed + 8, resp->page_size);
	put_be64(m->fixed + 12, resp->trace_id);
	memcpy(m->fixed + 20, resp->tsync_proto, strlen(resp->tsync_proto));
	put_be32(m->fixed + 36, resp->tsync_port);
	for (uint32_t i = 0; i < resp->cpus && !ret; i++)
		ret = put_u32_dec(m, resp->ports[i]);
	return ret;
}

int tmsg_parse_trace_resp(const struct tmsg *m, struct tmsg_trace_resp *out)
{
	int ret = check_cmd(m, TMSG_TRACE_RESP);

	memset(out, 0, sizeof(*out));
	if (ret)
		return ret;
	out->flags = get_be32(m->fixed);
	out->cpus = get_be32(m->fixed + 4);
	out->page_size = get_be32(m->fixed + 8);
	out->trace_id = get_be64(m->fixed + 12);
	out->tsync_port = get_be32(m->fixed + 36);
	ret = copy_proto_name(out->tsync_proto, m->fixed + 20, "TRACE_RESP");
	if (!ret)
		ret = check_page_size(out->page_size, "TRACE_RESP");
	if (!ret)
		ret = parse_ports(m, out->cpus, &out->ports, "TRACE_RESP");
	if (ret)
		memset(out, 0, sizeof(*out));
	return ret;
}

void tmsg_trace_resp_free(struct tmsg_trace_resp *r)
{
	free(r->ports);
	r->ports = NULL;
}

/* ---- TIME_SYNC ---- */

int tmsg_make_time_sync(struct tmsg *m, const char *proto, uint32_t msg_id,
			const void *payload, size_t len)
{
	int ret;

	tmsg_make(m, TMSG_TIME_SYNC);
	ret = check_proto_name(proto, "TIME_SYNC");
	if (ret)
		return ret;
	memcpy(m->fixed, proto, strlen(proto));
	put_be32(m->fixed + 16, msg_id);
	return tmsg_append(m, payload, len);
}

int tmsg_parse_time_sync(const struct tmsg *m, struct tmsg_time_sync *out)
{
	int ret = check_cmd(m, TMSG_TIME_SYNC);

	memset(out, 0, sizeof(*out));
	if (!ret)
		ret = copy_proto_name(out->proto, m->fixed, "TIME_SYNC");
	if (ret)
		return ret;
	out->msg_id = get_be32(m->fixed + 16);
	out->payload = m->payload;
	out->len = m->len;
	return 0;
}

int tmsg_make_not_supp(struct tmsg *m, const char *reason)
{
	tmsg_make(m, TMSG_NOT_SUPP);
	if (!reason || !*reason)
		return 0;
	/* Cut rather than fail: the refusal matters more than its text. */
	size_t len = strnlen(reason, TMSG_MAX_REASON - 1);

	tmsg_append(m, reason, len);
	return tmsg_append(m, "", 1);
}

int tmsg_parse_not_supp(const struct tmsg *m, char *reason, size_t len)
{
	int ret = check_cmd(m, TMSG_NOT_SUPP);

	if (len)
		reason[0] = 0;
	if (ret || !m->len)
		return ret;
	if (m->payload[m->len - 1] || memchr(m->payload, 0, m->len) !=
	    m->payload + m->len - 1)
		return tcx_fail(-EBADMSG, "NOT_SUPP: reason is not one string");
	for (uint32_t i = 0; i + 1 < m->len; i++)
		if (m->payload[i] < 0x20 || m->payload[i] == 0x7f)
			return tcx_fail(-EBADMSG,
					 "NOT_SUPP: control byte in the reason");
	if (len)
		snprintf(reason, len, "%s", (const char *)m->payload);
	return 0;
}
