/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tmsg: trace-cmd's agent/listen message layer, byte for byte, over
 * pluggable transports (TCP, vsock, libxenvchan).
 *
 * A message is a 12-byte big-endian header {size, cmd, cmd_size}, a fixed
 * command struct of cmd_size bytes and a payload filling the rest. struct
 * tmsg holds one decoded message: the fixed part as this side knows it
 * (longer wire parts are cut, shorter ones zero-filled, as trace-cmd does)
 * and the payload. tmsg_make_*() build messages, tmsg_parse_*() check and
 * read them; tmsg_send()/tmsg_recv() move them over a transport.
 *
 * Every function that can fail returns a negative errno value (NULL with
 * errno set for those returning a pointer) and leaves a message for people
 * in the thread's tcx_error() (tcx-util.h).
 *
 * See docs/protocol.md for the conversation and what we add to trace-cmd.
 */
#ifndef TMSG_H
#define TMSG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define TMSG_HDR_SIZE		12
#define TMSG_MAX_LEN		8192			/* header included */
#define TMSG_MAX_DATA		(TMSG_MAX_LEN - TMSG_HDR_SIZE)	/* 8180 */
#define TMSG_FIXED_MAX		40	/* largest fixed struct: TRACE_RESP */
/* A decoded message whose peer sent a shorter fixed part re-encodes longer
 * than it came: buffers for tmsg_encode() need this much. */
#define TMSG_WIRE_MAX		(TMSG_MAX_LEN + TMSG_FIXED_MAX)
#define TMSG_WAIT_MS		5000	/* trace-cmd's MSG_WAIT_MSEC */
#define TMSG_PROTO_NAME_LEN	16	/* tsync protocol name, NUL included */
#define TMSG_MAX_CPUS		4096
#define TMSG_MAX_REASON		512	/* our NOT_SUPP reason text, NUL included */

#define TMSG_AGENT_PORT		823	/* trace-cmd agent default */
#define TMSG_DATA_PORT_START	1500	/* TCP data ports searched upward */

enum tmsg_cmd {
	TMSG_CLOSE		= 0,
	TMSG_TINIT		= 1,
	TMSG_RINIT		= 2,
	TMSG_SEND_DATA		= 3,
	TMSG_FIN_DATA		= 4,
	TMSG_NOT_SUPP		= 5,
	TMSG_TRACE_REQ		= 6,
	TMSG_TRACE_RESP		= 7,
	TMSG_CLOSE_RESP		= 8,
	TMSG_TIME_SYNC		= 9,
	TMSG_TRACE_PROXY	= 10,
	TMSG_CONT		= 11,
	TMSG_NR_CMDS
};

/* Fixed struct sizes, as trace-cmd declares them. */
#define TMSG_TINIT_SIZE		12
#define TMSG_RINIT_SIZE		4
#define TMSG_TRACE_REQ_SIZE	16
#define TMSG_TRACE_RESP_SIZE	40
#define TMSG_TIME_SYNC_SIZE	20
#define TMSG_TRACE_PROXY_SIZE	24

/* TRACE_REQ / TRACE_RESP flags. */
#define TMSG_FL_USE_FIFOS	0x1

/* TRACE_REQ parameter ids. */
enum tmsg_param_id {
	TMSG_PARAM_ARGS		= 0,
	TMSG_PARAM_TSYNC_PROTOS	= 1,
	/* Ours, high and spelled "TCX" then a number so that trace-cmd's own
	 * future ids (counted up from 2) never reach them. SECRET carried the
	 * secret in clear (retired: read only to refuse it with a reason);
	 * AUTH opens the challenge-response (version u32, host nonce). */
	TMSG_PARAM_SECRET	= 0x54435801,
	TMSG_PARAM_AUTH		= 0x54435802,
};

/*
 * Our command AUTH, "TCXA": the challenge-response that a TRACE_REQ with
 * the AUTH parameter opens (docs/protocol.md). Only a host that sent that
 * parameter is ever sent one, so stock trace-cmd never sees it. Fixed
 * part: the step (u32); payload: the agent's nonce and proof (CHALLENGE),
 * or the host's proof (PROOF).
 */
#define TMSG_AUTH		0x54435841u
#define TMSG_AUTH_SIZE		4
#define TMSG_AUTH_VERSION	1
#define TMSG_AUTH_NONCE		32
#define TMSG_AUTH_MAC		32
#define TMSG_AUTH_CHALLENGE	1
#define TMSG_AUTH_PROOF		2
/* The stream number of the time-sync connection's token (CPUs: 0..N-1). */
#define TMSG_AUTH_TSYNC		0xffffffffu

/**
 * struct tmsg - one message
 * @cmd:	command id (< TMSG_NR_CMDS, or TMSG_AUTH)
 * @wire_cmd_size: cmd_size as it came over the wire (0 for built messages)
 * @fixed_len:	bytes of @fixed this side knows for @cmd
 * @fixed:	the fixed struct, big-endian, as on the wire
 * @len:	payload length
 * @payload:	the payload
 */
struct tmsg {
	uint32_t cmd;
	uint32_t wire_cmd_size;
	uint32_t fixed_len;
	uint8_t fixed[TMSG_FIXED_MAX];
	uint32_t len;
	uint8_t payload[TMSG_MAX_DATA];
};

/**
 * tmsg_cmd_name - trace-cmd's name of a command ("TRACE_REQ"), or "UNKNOWN"
 * @cmd: command id
 */
const char *tmsg_cmd_name(uint32_t cmd);

/* ---- framing (pure, no I/O) ---- */

/**
 * tmsg_check_header - validate a 12-byte header as trace-cmd's receiver
 * @hdr: the 12 bytes
 * @size: set to the total message size on success
 *
 * Checks 12 <= size <= 8192, cmd < 12 and cmd_size <= size - 12.
 * Returns 0, or -EBADMSG with tcx_error() naming the bad field.
 */
int tmsg_check_header(const uint8_t *hdr, uint32_t *size);

/**
 * tmsg_decode - decode one complete message from bytes
 * @m:   the message to fill
 * @buf: wire bytes
 * @len: bytes available in @buf
 *
 * Returns the number of bytes used (the message size), -EAGAIN if @buf
 * holds less than one whole message, or -EBADMSG for a malformed header or a
 * command whose payload shape is wrong (e.g. a CLOSE with a payload).
 * Command contents are checked by the tmsg_parse_*() functions.
 */
ssize_t tmsg_decode(struct tmsg *m, const uint8_t *buf, size_t len);

/**
 * tmsg_encode - the wire bytes of a message
 * @m:   the message
 * @buf: at least TMSG_WIRE_MAX bytes
 *
 * Returns the number of bytes written (12 + fixed + payload). Built
 * messages never exceed TMSG_MAX_LEN; tmsg_send() refuses ones that do.
 */
size_t tmsg_encode(const struct tmsg *m, uint8_t *buf);

/* ---- building messages ---- */

/**
 * tmsg_make - start a message with a zero fixed part and no payload
 * @m:   the message
 * @cmd: command id
 *
 * Enough for CLOSE, FIN_DATA, NOT_SUPP, CLOSE_RESP and CONT.
 * Returns 0 or -EINVAL for an unknown command.
 */
int tmsg_make(struct tmsg *m, uint32_t cmd);

/**
 * tmsg_make_data - a SEND_DATA message carrying @len (<= 8180) bytes
 */
int tmsg_make_data(struct tmsg *m, const void *data, size_t len);

/**
 * tmsg_make_tinit - the client's TINIT: @cpus, @page_size and @nr_opts
 * option strings ("tcp", "vsock")
 */
int tmsg_make_tinit(struct tmsg *m, uint32_t cpus, uint32_t page_size,
		    const char *const *opts, uint32_t nr_opts);

/**
 * tmsg_make_rinit - the server's RINIT: one decimal port per CPU
 */
int tmsg_make_rinit(struct tmsg *m, uint32_t cpus, const uint32_t *ports);

/**
 * struct tmsg_trace_req - TRACE_REQ (or TRACE_PROXY) contents
 * @flags:	TMSG_FL_USE_FIFOS
 * @trace_id:	the sender's session id
 * @argc, @argv: record options for the agent (ARGS parameter; none if 0)
 * @nr_protos, @protos: tsync protocols offered (none if 0)
 * @auth_version: our AUTH parameter's version (0: none came or is sent)
 * @auth_nonce:	its host nonce, TMSG_AUTH_NONCE bytes (NULL: no AUTH; a
 *		parsed one of an unknown version has none either)
 * @plain_secret: parsed: the retired SECRET parameter came (never sent)
 * @proxy:	TRACE_PROXY rather than TRACE_REQ
 * @cpus, @siblings: TRACE_PROXY only
 *
 * Parsed requests point into the message's payload: keep the message.
 */
struct tmsg_trace_req {
	uint32_t flags;
	uint64_t trace_id;
	uint32_t argc;
	const char **argv;
	uint32_t nr_protos;
	const char **protos;
	uint32_t auth_version;
	const uint8_t *auth_nonce;
	bool plain_secret;
	bool proxy;
	uint32_t cpus;
	uint32_t siblings;
};

/**
 * tmsg_make_trace_req - TRACE_REQ (TRACE_PROXY if @req->proxy) with the
 * ARGS, TSYNC_PROTOS and AUTH parameters, in that order, each only if set
 *
 * Returns 0, or -EMSGSIZE if it does not fit in one message.
 */
int tmsg_make_trace_req(struct tmsg *m, const struct tmsg_trace_req *req);

/**
 * struct tmsg_trace_resp - TRACE_RESP contents
 * @flags:	TMSG_FL_USE_FIFOS
 * @cpus:	number of data streams (>= 1)
 * @page_size:	the agent's page size
 * @trace_id:	the agent's session id (its file's TRACEID)
 * @tsync_proto: the chosen tsync protocol, "" for none
 * @tsync_port: where the tsync stream listens
 * @ports:	@cpus data ports (allocated by tmsg_parse_trace_resp())
 */
struct tmsg_trace_resp {
	uint32_t flags;
	uint32_t cpus;
	uint32_t page_size;
	uint64_t trace_id;
	char tsync_proto[TMSG_PROTO_NAME_LEN];
	uint32_t tsync_port;
	uint32_t *ports;
};

/**
 * tmsg_make_trace_resp - TRACE_RESP from @resp
 */
int tmsg_make_trace_resp(struct tmsg *m, const struct tmsg_trace_resp *resp);

/**
 * tmsg_make_time_sync - TIME_SYNC with protocol @proto (< 16 chars),
 * message id @msg_id and a protocol-specific payload
 */
int tmsg_make_time_sync(struct tmsg *m, const char *proto, uint32_t msg_id,
			const void *payload, size_t len);

/**
 * tmsg_make_not_supp - NOT_SUPP, with a human-readable @reason (may be
 * NULL) as our extension: a NUL-terminated payload that stock trace-cmd
 * reads and ignores. Reasons are cut to TMSG_MAX_REASON - 1 bytes.
 */
int tmsg_make_not_supp(struct tmsg *m, const char *reason);

/* ---- reading messages ---- */

/**
 * struct tmsg_tinit - TINIT contents
 * @opts: @nr_opts strings pointing into the message (array allocated)
 */
struct tmsg_tinit {
	uint32_t cpus;
	uint32_t page_size;
	uint32_t nr_opts;
	const char **opts;
};

/**
 * struct tmsg_rinit - RINIT contents (@ports allocated)
 */
struct tmsg_rinit {
	uint32_t cpus;
	uint32_t *ports;
};

/**
 * struct tmsg_time_sync - TIME_SYNC contents (payload points into the msg)
 */
struct tmsg_time_sync {
	char proto[TMSG_PROTO_NAME_LEN];
	uint32_t msg_id;
	const uint8_t *payload;
	uint32_t len;
};

/**
 * tmsg_parse_tinit - check and read a TINIT
 *
 * Returns 0, -EPROTO if @m is another command, -EBADMSG if malformed.
 * Free with tmsg_tinit_free().
 */
int tmsg_parse_tinit(const struct tmsg *m, struct tmsg_tinit *out);
/** tmsg_tinit_free - free what tmsg_parse_tinit() allocated */
void tmsg_tinit_free(struct tmsg_tinit *t);

/**
 * tmsg_parse_rinit - check and read an RINIT (exactly @cpus ports)
 *
 * Free with tmsg_rinit_free().
 */
int tmsg_parse_rinit(const struct tmsg *m, struct tmsg_rinit *out);
/** tmsg_rinit_free - free what tmsg_parse_rinit() allocated */
void tmsg_rinit_free(struct tmsg_rinit *r);

/**
 * tmsg_parse_trace_req - check and read a TRACE_REQ or TRACE_PROXY
 *
 * Unknown parameter ids are skipped, as trace-cmd does; a parameter that
 * overruns the message, a repeated one, or malformed ARGS/TSYNC_PROTOS
 * contents give -EBADMSG. Free with tmsg_trace_req_free().
 */
int tmsg_parse_trace_req(const struct tmsg *m, struct tmsg_trace_req *out);
/** tmsg_trace_req_free - free what tmsg_parse_trace_req() allocated */
void tmsg_trace_req_free(struct tmsg_trace_req *r);

/**
 * tmsg_parse_trace_resp - check and read a TRACE_RESP (exactly @cpus ports)
 *
 * Free with tmsg_trace_resp_free().
 */
int tmsg_parse_trace_resp(const struct tmsg *m, struct tmsg_trace_resp *out);
/** tmsg_trace_resp_free - free what tmsg_parse_trace_resp() allocated */
void tmsg_trace_resp_free(struct tmsg_trace_resp *r);

/**
 * tmsg_parse_time_sync - check and read a TIME_SYNC (no allocation)
 */
int tmsg_parse_time_sync(const struct tmsg *m, struct tmsg_time_sync *out);

/**
 * tmsg_parse_not_supp - the reason a NOT_SUPP carries ("" if none), into
 * @reason of @len bytes; -EBADMSG if it is not one printable string
 */
int tmsg_parse_not_supp(const struct tmsg *m, char *reason, size_t len);

/**
 * struct tmsg_auth_msg - AUTH contents (pointers into the message)
 * @step:  TMSG_AUTH_CHALLENGE or TMSG_AUTH_PROOF
 * @nonce: CHALLENGE: the agent's nonce (NULL for PROOF)
 * @mac:   CHALLENGE: the agent's proof; PROOF: the host's
 */
struct tmsg_auth_msg {
	uint32_t step;
	const uint8_t *nonce;
	const uint8_t *mac;
};

/**
 * tmsg_make_auth - AUTH of @step: @nonce (CHALLENGE only, else NULL) and
 * @mac, TMSG_AUTH_NONCE and TMSG_AUTH_MAC bytes
 */
int tmsg_make_auth(struct tmsg *m, uint32_t step, const uint8_t *nonce,
		   const uint8_t *mac);

/**
 * tmsg_parse_auth - check and read an AUTH: a known step with exactly its
 * payload (no allocation)
 *
 * Returns 0, -EPROTO if @m is another command, -EBADMSG if malformed.
 */
int tmsg_parse_auth(const struct tmsg *m, struct tmsg_auth_msg *out);

/* ---- authentication (TCP, vsock) ---- */

struct tmsg_transport;

/**
 * struct tmsg_auth - one side's challenge-response of a session
 * @secret, @secret_len: in: the shared secret (never sent)
 * @agent_nonce: the agent's fresh nonce
 * @transcript:	 SHA-256 of the TRACE_REQ as sent (the host's nonce in it)
 * @agent_proof: HMAC(secret, "agent" label, transcript, agent nonce)
 * @host_proof:	 the same with the "host" label
 * @key:	 the session key, same inputs with the "key" label; the
 *		 data and time-sync tokens are derived from it
 * @done:	 the exchange succeeded: streams carry tokens
 */
struct tmsg_auth {
	const uint8_t *secret;
	size_t secret_len;
	uint8_t agent_nonce[TMSG_AUTH_NONCE];
	uint8_t transcript[TMSG_AUTH_MAC];
	uint8_t agent_proof[TMSG_AUTH_MAC];
	uint8_t host_proof[TMSG_AUTH_MAC];
	uint8_t key[TMSG_AUTH_MAC];
	bool done;
};

/**
 * tmsg_auth_nonce - @len fresh random bytes from getrandom()
 *
 * Returns 0, or -errno (no weaker fallback: the session is refused).
 */
int tmsg_auth_nonce(uint8_t *buf, size_t len);

/**
 * tmsg_auth_derive - @a's transcript of TRACE_REQ @req, then both proofs
 * and the session key from @a->secret and @a->agent_nonce
 */
void tmsg_auth_derive(struct tmsg_auth *a, const struct tmsg *req);

/**
 * tmsg_auth_token - the token that opens stream @stream (a CPU number, or
 * TMSG_AUTH_TSYNC) of the session keyed by @a
 * @out: TMSG_AUTH_MAC bytes
 */
void tmsg_auth_token(const struct tmsg_auth *a, uint32_t stream,
		     uint8_t *out);

/**
 * tmsg_auth_send_token - the host's first bytes on stream @stream: its token
 */
int tmsg_auth_send_token(struct tmsg_transport *t, const struct tmsg_auth *a,
			 uint32_t stream);

/**
 * tmsg_auth_check_token - the agent's first read on a new stream: the
 * token of stream @stream, all of it within @timeout_ms
 *
 * Returns 0, -EACCES for a wrong token, -ETIMEDOUT, -ECONNRESET (closed
 * before a whole token), or -errno; tcx_error() says which.
 */
int tmsg_auth_check_token(struct tmsg_transport *t, const struct tmsg_auth *a,
			  uint32_t stream, int timeout_ms);

/**
 * tmsg_auth_wipe - forget @a's keys and proofs (not @a->secret)
 */
void tmsg_auth_wipe(struct tmsg_auth *a);

/**
 * tmsg_agent_auth - the agent's side of the challenge-response, for the
 * TRACE_REQ @req (the message; its AUTH parameter parsed as @r)
 * @a:		@a->secret set; on success the session's keys, @a->done
 * @timeout_ms: for the host's whole PROOF
 *
 * Sends CHALLENGE (a fresh nonce and the agent's proof), then reads and
 * checks the host's PROOF. Returns 0; -EACCES for a wrong proof (the
 * caller refuses the session, with "wrong secret"); -ECONNABORTED if the
 * host refused our proof (its reason in tcx_error()); -EPROTO, -ETIMEDOUT
 * or -errno otherwise.
 */
int tmsg_agent_auth(struct tmsg_transport *ctl, const struct tmsg *req,
		    const struct tmsg_trace_req *r, struct tmsg_auth *a,
		    int timeout_ms);

/* ---- transports ---- */

struct tmsg_transport;

/**
 * struct tmsg_transport_ops - what a transport provides
 * @read:  up to @len bytes; >0 bytes, 0 at end of stream, -EAGAIN if none
 *	   is available now, or -errno
 * @write: up to @len bytes; >0 bytes written, -EAGAIN if no room now, or
 *	   -errno (-EPIPE when the peer is gone)
 * @wait:  wait until @events (POLLIN/POLLOUT) may make progress: 1 ready,
 *	   0 after @timeout_ms (-1 = forever), -errno
 * @fd:    a file descriptor that poll() reports readable when @read may
 *	   progress (for callers' own event loops), or -1
 * @close: release everything, @t included
 * @ready: optional: whether @events may progress now, without blocking and
 *	   cheaply (a look at a shared ring); what a spin (@spin_us) polls
 */
struct tmsg_transport_ops {
	ssize_t (*read)(struct tmsg_transport *t, void *buf, size_t len);
	ssize_t (*write)(struct tmsg_transport *t, const void *buf, size_t len);
	int (*wait)(struct tmsg_transport *t, short events, int timeout_ms);
	int (*fd)(struct tmsg_transport *t);
	void (*close)(struct tmsg_transport *t);
	bool (*ready)(struct tmsg_transport *t, short events);
};

/**
 * struct tmsg_transport - a byte stream to one peer
 * @ops:	the implementation
 * @name:	names the peer in errors ("tcp 10.0.0.2:823", "vchan d3/ctl")
 * @io_timeout_ms: the longest a started message (read) or any write may
 *		make no progress before the session is given up (-1: never)
 * @spin_us:	before a read blocks, poll for input this long (0: never),
 *		yielding the CPU between looks; time sync's probes set it,
 *		as a stamp taken after a wake-up is late by the scheduler's
 *		latency, unevenly each way
 * @cutoff_ns:	tmsg_set_cutoff()'s deadline (0: none)
 */
struct tmsg_transport {
	const struct tmsg_transport_ops *ops;
	char name[64];
	int io_timeout_ms;
	int spin_us;
	_Atomic uint64_t cutoff_ns;
};

/* How soon a wait in progress sees a cutoff another thread set. */
#define TMSG_SLICE_MS	100

/**
 * tmsg_set_cutoff - an absolute deadline (CLOCK_MONOTONIC ns) for every
 * read and write on @t from now on, whatever deadline the caller gives
 * (0: none); any thread may set it, and a wait in progress sees it within
 * TMSG_SLICE_MS. A session's owner uses it to end a peer's session at its
 * own deadline, whichever thread is talking to the peer.
 */
void tmsg_set_cutoff(struct tmsg_transport *t, uint64_t cutoff_ns);

/** tmsg_cut_off - whether @t's cutoff has passed */
bool tmsg_cut_off(struct tmsg_transport *t);

/**
 * tmsg_fd_transport - wrap a connected socket or pipe; it becomes
 * nonblocking, and the transport owns it (closes it in close)
 * @fd:   the descriptor
 * @name: for errors
 *
 * Returns NULL (errno set) on allocation failure; @fd is then closed.
 */
struct tmsg_transport *tmsg_fd_transport(int fd, const char *name);

/**
 * tmsg_close - close a transport (NULL is ignored)
 */
void tmsg_close(struct tmsg_transport *t);

/**
 * tmsg_read_full - read exactly @len bytes
 * @timeout_ms: for all @len bytes (-1 forever): one deadline, which bytes
 *		that arrive do not move
 *
 * Returns 0, -ETIMEDOUT, -ECONNRESET at end of stream, or -errno.
 */
int tmsg_read_full(struct tmsg_transport *t, void *buf, size_t len,
		   int timeout_ms);

/**
 * tmsg_write_full - write all @len bytes, giving up after
 * t->io_timeout_ms without progress (a peer that stopped reading)
 *
 * Returns 0, -ETIMEDOUT, -EPIPE or -errno.
 */
int tmsg_write_full(struct tmsg_transport *t, const void *buf, size_t len);

/* ---- sessions ---- */

/**
 * tmsg_send - write one message
 */
int tmsg_send(struct tmsg_transport *t, const struct tmsg *m);

/**
 * tmsg_send_cmd - write a message with no contents (CLOSE, FIN_DATA, ...)
 */
int tmsg_send_cmd(struct tmsg_transport *t, uint32_t cmd);

/**
 * tmsg_recv - read and decode one message
 * @timeout_ms: for the first byte (-1 forever, as trace-cmd's untimed
 *		waits; TMSG_WAIT_MS for its timed ones)
 *
 * Once the first byte came, the whole message (header and payload) must
 * be there within t->io_timeout_ms of it, or by the end of @timeout_ms if
 * that is later: one deadline, not one per byte.
 *
 * Returns 0; -ETIMEDOUT if no message started within @timeout_ms (nothing
 * consumed: the caller may wait again); -EPROTO if a started message
 * missed its deadline; -ECONNRESET at end of stream; -EBADMSG for a
 * malformed or oversized message. After any error but -ETIMEDOUT the
 * stream is out of step: end the session.
 */
int tmsg_recv(struct tmsg_transport *t, struct tmsg *m, int timeout_ms);

/* A deadline that never comes, for the *_until functions. */
#define TMSG_FOREVER	UINT64_MAX

/**
 * tmsg_recv_until - tmsg_recv() with the whole message due by @deadline_ns
 * @first_ms:	 for the first byte (-1: up to @deadline_ns); 0 polls
 * @deadline_ns: tcx_now_ns() time by which the whole message must be there
 *
 * Returns what tmsg_recv() does: -ETIMEDOUT if no byte came (nothing
 * consumed), -EPROTO if a started message missed @deadline_ns.
 */
int tmsg_recv_until(struct tmsg_transport *t, struct tmsg *m, int first_ms,
		    uint64_t deadline_ns);

/**
 * tmsg_wait_for - receive until a message of command @cmd arrives
 *
 * Others are answered with NOT_SUPP (except NOT_SUPP itself), as trace-cmd
 * does; a CLOSE while waiting for anything else gives -ECONNABORTED, and
 * more than a few unexpected messages give -EPROTO. @timeout_ms is for the
 * whole wait, the unexpected messages and the awaited one included; -1
 * waits for ever, each message then due as in tmsg_recv(). -ETIMEDOUT may
 * then come mid-message: end the session.
 */
int tmsg_wait_for(struct tmsg_transport *t, uint32_t cmd, struct tmsg *m,
		  int timeout_ms);

/**
 * tmsg_wait_until - tmsg_wait_for() by an absolute @deadline_ns
 * (tcx_now_ns() time)
 */
int tmsg_wait_until(struct tmsg_transport *t, uint32_t cmd, struct tmsg *m,
		    uint64_t deadline_ns);

/**
 * tmsg_send_data - send @len bytes as SEND_DATA messages of at most 8180
 * bytes each (no FIN_DATA)
 */
int tmsg_send_data(struct tmsg_transport *t, const void *buf, size_t len);

/**
 * tmsg_data_sink - where tmsg_recv_data() puts bytes; returns 0 or -errno
 */
typedef int (*tmsg_data_sink)(void *arg, const void *buf, size_t len);

/**
 * tmsg_recv_data - receive SEND_DATA until FIN_DATA, passing the bytes to
 * @sink
 * @timeout_ms: for the whole sequence, FIN_DATA included (-1 forever), not
 *		for each message
 * @max_bytes: give up with -EFBIG beyond this many bytes (0: no limit)
 *
 * Returns the number of bytes received, -ETIMEDOUT if the sequence was not
 * over within @timeout_ms, or -errno.
 */
ssize_t tmsg_recv_data(struct tmsg_transport *t, tmsg_data_sink sink,
		       void *arg, int timeout_ms, uint64_t max_bytes);

/**
 * tmsg_v3_client_handshake - the `record -N` side of the listen handshake:
 * "tracecmd" / "-1V3\0" / "V3\0" / "766679\0" / "OK"
 */
int tmsg_v3_client_handshake(struct tmsg_transport *t, int timeout_ms);

/* ---- the host's side of an agent session ---- */

/**
 * tmsg_host_request - send TRACE_REQ and wait for TRACE_RESP
 * @timeout_ms: for the whole answer (trace-cmd waits for ever: -1)
 * @resp:	 filled on success; free with tmsg_trace_resp_free()
 * @why:	 on refusal, the agent's reason if it gave one
 *
 * Returns 0, -EPERM if the agent answered NOT_SUPP (refused), or the
 * errors of tmsg_recv()/tmsg_parse_trace_resp().
 */
int tmsg_host_request(struct tmsg_transport *ctl,
		      const struct tmsg_trace_req *req,
		      struct tmsg_trace_resp *resp, int timeout_ms,
		      char *why, size_t why_len);

/**
 * tmsg_host_request_auth - tmsg_host_request() with the challenge-response
 * @auth: NULL: none (as tmsg_host_request()); else @auth->secret set, and
 *	  on success the session's keys, for tmsg_auth_send_token()
 *
 * TRACE_REQ carries a fresh nonce (never the secret); the agent must
 * answer with AUTH CHALLENGE whose proof is right, and then takes the
 * host's PROOF. Returns as tmsg_host_request(), and -EACCES if the agent
 * did not prove that it knows the secret (a wrong proof, or a TRACE_RESP
 * at once: an agent with no secret, or stock trace-cmd's).
 */
int tmsg_host_request_auth(struct tmsg_transport *ctl,
			   const struct tmsg_trace_req *req,
			   struct tmsg_auth *auth,
			   struct tmsg_trace_resp *resp, int timeout_ms,
			   char *why, size_t why_len);

/**
 * tmsg_host_open_streams - connect to the data streams a TRACE_RESP names
 * @host:  TCP: the agent's address; NULL for vchan
 * @domid: vchan: the agent's domain (streams at tmsg_vchan_path())
 * @resp:  the agent's answer
 * @out:   @resp->cpus transports, filled in CPU order
 *
 * On failure every stream opened so far is closed again.
 */
int tmsg_host_open_streams(const char *host, unsigned int domid,
			   const struct tmsg_trace_resp *resp,
			   struct tmsg_transport **out);

/**
 * tmsg_fd_sink - a tmsg_data_sink that writes to the file descriptor
 * pointed to by @arg (an int *)
 */
int tmsg_fd_sink(void *arg, const void *buf, size_t len);

/**
 * tmsg_host_close - send CLOSE and wait for CLOSE_RESP
 *
 * Returns 0, or an error (-ETIMEDOUT) if the whole CLOSE_RESP was not
 * there within @timeout_ms.
 */
int tmsg_host_close(struct tmsg_transport *ctl, int timeout_ms);

/* ---- TCP and vsock ---- */

/**
 * tmsg_tcp_connect - connect to @host:@port (names or numbers)
 *
 * Returns a connected blocking socket or -errno.
 */
int tmsg_tcp_connect(const char *host, const char *port, int timeout_ms);

/**
 * tmsg_tcp_listen - listen on @port (0: any) of @host (NULL: all
 * addresses, IPv6 and IPv4)
 * @bound_port: if not NULL, set to the port bound
 *
 * Returns the listening socket or -errno.
 */
int tmsg_tcp_listen(const char *host, unsigned int port,
		    unsigned int *bound_port);

/**
 * tmsg_tcp_listen_search - listen on the first free TCP port at or above
 * @start (trace-cmd's agent uses 1500), on all addresses
 *
 * Returns the listening socket or -errno; *@port is set to the port.
 */
int tmsg_tcp_listen_search(unsigned int start, unsigned int *port);

/**
 * tmsg_accept - accept one connection within @timeout_ms (-1 forever)
 * @peer, @peer_len: the peer's address (may be NULL)
 *
 * Returns the connected socket, -ETIMEDOUT or -errno.
 */
int tmsg_accept(int lfd, int timeout_ms, struct sockaddr_storage *peer,
		socklen_t *peer_len);

/**
 * tmsg_addr_matches - whether @peer is one of the addresses of @host
 * (IPv4-mapped IPv6 addresses compare equal to their IPv4 form)
 */
bool tmsg_addr_matches(const struct sockaddr_storage *peer, const char *host);

/**
 * tmsg_addr_string - "ip:port" of an address, for names and errors
 */
void tmsg_addr_string(const struct sockaddr_storage *a, char *buf,
		      size_t len);

/**
 * tmsg_vsock_connect - connect to vsock @cid:@port
 */
int tmsg_vsock_connect(unsigned int cid, unsigned int port);

/**
 * tmsg_vsock_listen - listen on vsock @port (-1U: any); *@bound set to it
 */
int tmsg_vsock_listen(unsigned int port, unsigned int *bound);

/* ---- libxenvchan and the xenstore advertisement ---- */

/* Longest xenstore path given to libxenvchan: it builds "<path>/event-channel"
 * in a 64-byte buffer and silently truncates. */
#define TMSG_VCHAN_PATH_MAX	49
#define TMSG_VCHAN_RING_MAX	(1u << 20)
#define TMSG_XS_DIR		"data/trace-cmd-xen"
#define TMSG_XS_VERSION		"1"

/**
 * tmsg_vchan_path - "/local/domain/<domid>/data/trace-cmd-xen/<port>", the
 * path of vchan stream @port of the agent in @domid
 *
 * Returns 0, or -ENAMETOOLONG past TMSG_VCHAN_PATH_MAX or @len.
 */
int tmsg_vchan_path(char *buf, size_t len, unsigned int domid,
		    unsigned int port);

/**
 * tmsg_vchan_server - serve a vchan to domain @peer at xenstore @path
 * @read_min, @write_min: ring sizes wanted (peer to us, us to peer), each
 *			  at most TMSG_VCHAN_RING_MAX
 *
 * The agent side: it grants the rings. Returns NULL with tcx_error() set.
 */
struct tmsg_transport *tmsg_vchan_server(unsigned int peer, const char *path,
					 size_t read_min, size_t write_min);

/**
 * tmsg_vchan_client - connect to the vchan that domain @server serves at
 * xenstore @path (dom0's side)
 */
struct tmsg_transport *tmsg_vchan_client(unsigned int server,
					 const char *path);

/**
 * tmsg_vchan_wait_client - on a server transport, wait until the client
 * has connected: 1 connected, 0 timeout, -errno
 */
int tmsg_vchan_wait_client(struct tmsg_transport *t, int timeout_ms);

/**
 * struct tmsg_xs_agent - an agent's xenstore advertisement
 * @version: protocol version ("1")
 * @caps:    space-separated capabilities
 * @port:    the control vchan's port (see tmsg_vchan_path())
 * @ready:   state is "ready"
 */
struct tmsg_xs_agent {
	char version[16];
	char caps[128];
	unsigned int port;
	bool ready;
};

/**
 * tmsg_xs_advertise - write ~/data/trace-cmd-xen/{version,caps,port} of
 * domain @domid and then state=ready, last, so a reader that sees
 * "ready" sees the rest
 */
int tmsg_xs_advertise(unsigned int domid, const char *caps,
		      unsigned int port);

/**
 * tmsg_xs_withdraw - set state=stopped for domain @domid
 */
int tmsg_xs_withdraw(unsigned int domid);

/**
 * tmsg_xs_self_domid - this domain's id, from xenstore's relative "domid"
 */
int tmsg_xs_self_domid(unsigned int *domid);

/**
 * tmsg_xs_lookup - read the advertisement of the agent in domain @domid
 *
 * Returns 0, or -ENOENT if it has none.
 */
int tmsg_xs_lookup(unsigned int domid, struct tmsg_xs_agent *out);

/* The highest domain id (DOMID_FIRST_RESERVED - 1). */
#define TMSG_XS_DOMID_MAX	0x7fefu
/* The highest port an agent advertises. */
#define TMSG_XS_PORT_MAX	0x7fffffffu

/**
 * tmsg_xs_parse_text - a xenstore value as text: the @n bytes at @v (no
 * terminator needed) into @buf, NUL-terminated
 *
 * Values come from guests and are shown, compared and used in file names:
 * no NUL inside, no control byte, no truncation.
 *
 * Returns 0, -EMSGSIZE if @n bytes and a NUL do not fit @len, or -EINVAL
 * for a NUL or control byte (@buf is then the empty string).
 */
int tmsg_xs_parse_text(const char *v, unsigned int n, char *buf, size_t len);

/**
 * tmsg_xs_parse_id - a xenstore value as a number (a domain id, a port):
 * the @n bytes at @v, plain decimal digits only, at most @max
 *
 * Returns 0 with @id set, or -EINVAL (not a number, a NUL inside, empty)
 * or -ERANGE (above @max).
 */
int tmsg_xs_parse_id(const char *v, unsigned int n, unsigned int max, unsigned int *id);

#endif /* TMSG_H */
