// SPDX-License-Identifier: GPL-2.0
/*
 * The challenge-response of TCP and vsock sessions, and the tokens that
 * bind each data and time-sync connection to its session.
 *
 * host  -> TRACE_REQ with AUTH {version 1, host nonce}
 * agent -> AUTH CHALLENGE {agent nonce, agent proof}
 * host  -> AUTH PROOF {host proof}          (after checking the agent's)
 * agent -> TRACE_RESP, or NOT_SUPP "wrong secret"
 *
 * Each proof and the session key is HMAC-SHA-256 keyed by the secret over
 * a label, the SHA-256 of the TRACE_REQ (which holds the host's nonce) and
 * the agent's nonce: fresh randomness from both sides, so no proof of one
 * session is worth anything in another, and the secret never crosses the
 * wire. A stream's token is HMAC(session key, label, stream number).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "tcx-hmac.h"
#include "tmsg-internal.h"

/* NUL-terminated labels: each input is a label then fixed-size fields. */
static const char label_agent[] = "tcx-auth-1 agent";
static const char label_host[] = "tcx-auth-1 host";
static const char label_key[] = "tcx-auth-1 key";
static const char label_stream[] = "tcx-auth-1 stream";

int tmsg_make_auth(struct tmsg *m, uint32_t step, const uint8_t *nonce,
		   const uint8_t *mac)
{
	int ret;

	if (step != TMSG_AUTH_CHALLENGE && step != TMSG_AUTH_PROOF)
		return tcx_fail(-EINVAL, "AUTH: step %u", step);
	if ((step == TMSG_AUTH_CHALLENGE) != !!nonce || !mac)
		return tcx_fail(-EINVAL, "AUTH: step %u with%s a nonce", step,
				nonce ? "" : "out");
	tmsg_make(m, TMSG_AUTH);
	put_be32(m->fixed, step);
	ret = nonce ? tmsg_append(m, nonce, TMSG_AUTH_NONCE) : 0;
	if (!ret)
		ret = tmsg_append(m, mac, TMSG_AUTH_MAC);
	return ret;
}

int tmsg_parse_auth(const struct tmsg *m, struct tmsg_auth_msg *out)
{
	uint32_t want;

	memset(out, 0, sizeof(*out));
	if (m->cmd != TMSG_AUTH)
		return tcx_fail(-EPROTO, "got %s, expected AUTH",
				tmsg_cmd_name(m->cmd));
	out->step = get_be32(m->fixed);
	if (out->step == TMSG_AUTH_CHALLENGE)
		want = TMSG_AUTH_NONCE + TMSG_AUTH_MAC;
	else if (out->step == TMSG_AUTH_PROOF)
		want = TMSG_AUTH_MAC;
	else
		return tcx_fail(-EBADMSG, "AUTH: unknown step %u", out->step);
	if (m->len != want)
		return tcx_fail(-EBADMSG, "AUTH step %u: %u bytes, not %u",
				out->step, m->len, want);
	if (out->step == TMSG_AUTH_CHALLENGE)
		out->nonce = m->payload;
	out->mac = m->payload + m->len - TMSG_AUTH_MAC;
	return 0;
}

int tmsg_auth_nonce(uint8_t *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = getrandom(buf + got, len - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return tcx_fail(-errno, "getrandom: %s", strerror(errno));
		got += (size_t)n;
	}
	return 0;
}

static void mac3(const struct tmsg_auth *a, const char *label, size_t label_len,
		 uint8_t *out)
{
	struct tcx_hmac h;

	tcx_hmac_init(&h, a->secret, a->secret_len);
	tcx_hmac_update(&h, label, label_len);
	tcx_hmac_update(&h, a->transcript, sizeof(a->transcript));
	tcx_hmac_update(&h, a->agent_nonce, sizeof(a->agent_nonce));
	tcx_hmac_final(&h, out);
}

void tmsg_auth_derive(struct tmsg_auth *a, const struct tmsg *req)
{
	struct tcx_sha256 c;
	uint8_t cmd[4];

	/* the message as this side knows it: cmd, fixed part, payload */
	put_be32(cmd, req->cmd);
	tcx_sha256_init(&c);
	tcx_sha256_update(&c, cmd, sizeof(cmd));
	tcx_sha256_update(&c, req->fixed, req->fixed_len);
	tcx_sha256_update(&c, req->payload, req->len);
	tcx_sha256_final(&c, a->transcript);
	mac3(a, label_agent, sizeof(label_agent), a->agent_proof);
	mac3(a, label_host, sizeof(label_host), a->host_proof);
	mac3(a, label_key, sizeof(label_key), a->key);
}

void tmsg_auth_token(const struct tmsg_auth *a, uint32_t stream, uint8_t *out)
{
	struct tcx_hmac h;
	uint8_t n[4];

	put_be32(n, stream);
	tcx_hmac_init(&h, a->key, sizeof(a->key));
	tcx_hmac_update(&h, label_stream, sizeof(label_stream));
	tcx_hmac_update(&h, n, sizeof(n));
	tcx_hmac_final(&h, out);
}

int tmsg_auth_send_token(struct tmsg_transport *t, const struct tmsg_auth *a,
			 uint32_t stream)
{
	uint8_t tok[TMSG_AUTH_MAC];
	int ret;

	tmsg_auth_token(a, stream, tok);
	ret = tmsg_write_full(t, tok, sizeof(tok));
	explicit_bzero(tok, sizeof(tok));
	return ret;
}

int tmsg_auth_check_token(struct tmsg_transport *t, const struct tmsg_auth *a,
			  uint32_t stream, int timeout_ms)
{
	uint8_t want[TMSG_AUTH_MAC], got[TMSG_AUTH_MAC];
	int ret;

	ret = tmsg_read_until(t, got, sizeof(got), tmsg_deadline(timeout_ms),
			      "the stream's token");
	if (ret)
		return ret;
	tmsg_auth_token(a, stream, want);
	if (!tcx_mem_equal(got, want, sizeof(want)))
		ret = tcx_fail(-EACCES, "%s: wrong token (not this session's)",
			       t->name);
	explicit_bzero(want, sizeof(want));
	return ret;
}

void tmsg_auth_wipe(struct tmsg_auth *a)
{
	explicit_bzero(a->agent_nonce, sizeof(a->agent_nonce));
	explicit_bzero(a->transcript, sizeof(a->transcript));
	explicit_bzero(a->agent_proof, sizeof(a->agent_proof));
	explicit_bzero(a->host_proof, sizeof(a->host_proof));
	explicit_bzero(a->key, sizeof(a->key));
	a->done = false;
}

int tmsg_agent_auth(struct tmsg_transport *ctl, const struct tmsg *req,
		    const struct tmsg_trace_req *r, struct tmsg_auth *a,
		    int timeout_ms)
{
	struct tmsg *m = malloc(sizeof(*m));
	struct tmsg_auth_msg am;
	char why[TMSG_MAX_REASON];
	int ret;

	a->done = false;
	if (!m)
		return tcx_fail(-ENOMEM, "out of memory");
	if (!r->auth_nonce) {
		ret = tcx_fail(-EPROTO, "TRACE_REQ has no AUTH of version %d",
			       TMSG_AUTH_VERSION);
		goto out;
	}
	ret = tmsg_auth_nonce(a->agent_nonce, sizeof(a->agent_nonce));
	if (ret)
		goto out;
	tmsg_auth_derive(a, req);
	ret = tmsg_make_auth(m, TMSG_AUTH_CHALLENGE, a->agent_nonce,
			     a->agent_proof);
	if (!ret)
		ret = tmsg_send(ctl, m);
	if (!ret)
		ret = tmsg_recv_by(ctl, m, tmsg_deadline(timeout_ms));
	if (ret)
		goto out;
	if (m->cmd == TMSG_NOT_SUPP) {
		if (tmsg_parse_not_supp(m, why, sizeof(why)) || !why[0])
			snprintf(why, sizeof(why), "no reason given");
		ret = tcx_fail(-ECONNABORTED, "%s: the host refused our proof: %s",
			       ctl->name, why);
		goto out;
	}
	ret = tmsg_parse_auth(m, &am);
	if (!ret && am.step != TMSG_AUTH_PROOF)
		ret = tcx_fail(-EPROTO, "AUTH step %u, expected PROOF", am.step);
	if (ret) {
		tcx_fail(ret, "%s: %s", ctl->name, tcx_error());
		goto out;
	}
	if (!tcx_mem_equal(am.mac, a->host_proof, TMSG_AUTH_MAC)) {
		ret = tcx_fail(-EACCES, "%s: the host's proof is wrong", ctl->name);
		goto out;
	}
	a->done = true;
out:
	if (!a->done)
		tmsg_auth_wipe(a);
	explicit_bzero(m, sizeof(*m));
	free(m);
	return ret;
}
