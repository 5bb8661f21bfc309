// SPDX-License-Identifier: GPL-2.0
/*
 * Moving messages over a transport: whole reads and writes with timeouts,
 * send/receive, waiting for one command, the SEND_DATA stream and the
 * `listen` V3 handshake.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>

#include "tcx-util.h"
#include "tmsg-internal.h"

void tmsg_close(struct tmsg_transport *t)
{
	if (t)
		t->ops->close(t);
}

void tmsg_set_cutoff(struct tmsg_transport *t, uint64_t cutoff_ns)
{
	if (t)
		atomic_store(&t->cutoff_ns, cutoff_ns);
}

bool tmsg_cut_off(struct tmsg_transport *t)
{
	uint64_t c = atomic_load(&t->cutoff_ns);

	return c && tcx_now_ns() >= c;
}

/* The earlier of @deadline_ns and @t's cutoff. */
static uint64_t capped(struct tmsg_transport *t, uint64_t deadline_ns)
{
	uint64_t c = atomic_load(&t->cutoff_ns);

	return c && c < deadline_ns ? c : deadline_ns;
}

static int cut_off(struct tmsg_transport *t, const char *what)
{
	return tcx_fail(-ETIMEDOUT, "%s: %s: cut off at the session's deadline", t->name, what);
}

/*
 * Poll for input for up to t->spin_us; true once it is there. Between looks
 * the CPU is offered to whatever else is runnable on it: the peer may be
 * waiting for this very CPU (both ends of a probe on one CPU, one of them
 * pinned there), and a busy loop would make it wait out the whole spin,
 * each way. With nothing else to run, sched_yield() returns at once.
 */
static bool spin_in(struct tmsg_transport *t)
{
	uint64_t end = tcx_now_ns() + (uint64_t)t->spin_us * 1000;

	do {
		if (t->ops->ready ? t->ops->ready(t, POLLIN) : t->ops->wait(t, POLLIN, 0) == 1)
			return true;
		sched_yield();
	} while (tcx_now_ns() < end);
	return false;
}

/* Wait for @events; a timeout becomes -ETIMEDOUT with a message. */
static int wait_io(struct tmsg_transport *t, short events, int timeout_ms,
		   const char *what)
{
	int ret;

	if (t->spin_us > 0 && events == POLLIN && spin_in(t))
		return 0;
	ret = t->ops->wait(t, events, timeout_ms);

	if (ret == 0)
		return tcx_fail(-ETIMEDOUT, "%s: %s timed out after %d ms",
				 t->name, what, timeout_ms);
	if (ret < 0)
		return tcx_fail(ret, "%s: %s: %s", t->name, what,
				 strerror(-ret));
	return 0;
}

uint64_t tmsg_deadline(int timeout_ms)
{
	if (timeout_ms < 0)
		return TMSG_FOREVER;
	return tcx_now_ns() + (uint64_t)timeout_ms * 1000000ull;
}

/* What is left until @deadline_ns, in whole ms rounded up; -1 for ever. */
static int ms_until(uint64_t deadline_ns, uint64_t now)
{
	uint64_t ms;

	if (deadline_ns == TMSG_FOREVER)
		return -1;
	if (now >= deadline_ns)
		return 0;
	ms = (deadline_ns - now + 999999) / 1000000;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/*
 * Read exactly @len bytes before @deadline_ns. Bytes that arrive do not
 * move the deadline: a peer that trickles them in fails the same as one
 * that sends nothing. @what names the read in the message of a miss.
 */
int tmsg_read_until(struct tmsg_transport *t, void *buf, size_t len,
		    uint64_t deadline_ns, const char *what)
{
	uint64_t start = tcx_now_ns();
	uint8_t *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = t->ops->read(t, p + done, len - done);
		uint64_t now;
		int left;

		if (n > 0) {
			done += n;
			continue;
		}
		if (n == 0)
			return tcx_fail(-ECONNRESET,
					 "%s: connection closed by the peer%s",
					 t->name, done ? " mid-message" : "");
		if (n == -EINTR)
			continue;
		if (n != -EAGAIN)
			return tcx_fail((int)n, "%s: read: %s", t->name,
					 strerror((int)-n));
		/* Checked on every turn, whatever woke the wait. */
		now = tcx_now_ns();
		left = ms_until(capped(t, deadline_ns), now);
		if (!left && tmsg_cut_off(t))
			return cut_off(t, what);
		if (!left)
			return tcx_fail(-ETIMEDOUT,
					 "%s: reading %s: %zu of %zu bytes came in %llu ms, past the deadline",
					 t->name, what, done, len,
					 (unsigned long long)((now - start) / 1000000));
		/* in slices: another thread may set a cutoff meanwhile */
		if (left < 0 || left > TMSG_SLICE_MS)
			left = TMSG_SLICE_MS;
		n = wait_io(t, POLLIN, left, "read");
		if (n && n != -ETIMEDOUT)
			return (int)n;
	}
	return 0;
}

int tmsg_read_full(struct tmsg_transport *t, void *buf, size_t len,
		   int timeout_ms)
{
	return tmsg_read_until(t, buf, len, tmsg_deadline(timeout_ms), "data");
}

int tmsg_write_full(struct tmsg_transport *t, const void *buf, size_t len)
{
	uint64_t end = tmsg_deadline(t->io_timeout_ms);
	const uint8_t *p = buf;
	size_t done = 0;

	while (done < len) {
		int left;

		ssize_t n = t->ops->write(t, p + done, len - done);

		if (n > 0) {
			done += n;
			continue;
		}
		if (n == -EINTR)
			continue;
		if (n == 0)
			n = -EAGAIN;
		if (n != -EAGAIN)
			return tcx_fail((int)n, "%s: write: %s", t->name,
					 strerror((int)-n));
		left = ms_until(capped(t, end), tcx_now_ns());
		if (!left && tmsg_cut_off(t))
			return cut_off(t, "write");
		if (!left)
			return tcx_fail(-ETIMEDOUT, "%s: write (the peer stopped reading) "
					"timed out after %d ms", t->name, t->io_timeout_ms);
		if (left < 0 || left > TMSG_SLICE_MS)
			left = TMSG_SLICE_MS;
		n = wait_io(t, POLLOUT, left, "write (the peer stopped reading)");
		if (n && n != -ETIMEDOUT)
			return (int)n;
	}
	return 0;
}

int tmsg_send(struct tmsg_transport *t, const struct tmsg *m)
{
	uint8_t buf[TMSG_WIRE_MAX];
	size_t n = tmsg_encode(m, buf);

	if (n > TMSG_MAX_LEN)
		return tcx_fail(-EMSGSIZE, "%s: %s of %zu bytes is too long",
				 t->name, tmsg_cmd_name(m->cmd), n);
	return tmsg_write_full(t, buf, n);
}

int tmsg_send_cmd(struct tmsg_transport *t, uint32_t cmd)
{
	uint8_t buf[TMSG_HDR_SIZE + TMSG_FIXED_MAX] = { 0 };
	uint32_t fixed;

	if (cmd >= TMSG_NR_CMDS)
		return tcx_fail(-EINVAL, "unknown command %u", cmd);
	fixed = tmsg_fixed_size(cmd);
	put_be32(buf, TMSG_HDR_SIZE + fixed);
	put_be32(buf + 4, cmd);
	put_be32(buf + 8, fixed);
	return tmsg_write_full(t, buf, TMSG_HDR_SIZE + fixed);
}

/*
 * One message: its first byte before @first_ns, all of it before @end_ns
 * (0: t->io_timeout_ms after the first byte, or @first_ns if later).
 * -ETIMEDOUT either way; *@stalled says whether bytes were consumed, so
 * that the stream is out of step.
 */
static int recv_msg(struct tmsg_transport *t, struct tmsg *m,
		    uint64_t first_ns, uint64_t end_ns, bool *stalled)
{
	uint8_t buf[TMSG_MAX_LEN];
	uint32_t size;
	ssize_t n;
	int ret;

	*stalled = false;
	if (end_ns && end_ns < first_ns)
		first_ns = end_ns;
	ret = tmsg_read_until(t, buf, 1, first_ns, "a message");
	if (ret)
		return ret;
	if (!end_ns) {
		end_ns = tmsg_deadline(t->io_timeout_ms);
		if (end_ns < first_ns)
			end_ns = first_ns;
	}
	ret = tmsg_read_until(t, buf + 1, TMSG_HDR_SIZE - 1, end_ns,
			      "a message header");
	if (!ret) {
		ret = tmsg_check_header(buf, &size);
		if (ret)
			return tcx_fail(ret, "%s: invalid message: %s",
					 t->name, tcx_error());
		ret = tmsg_read_until(t, buf + TMSG_HDR_SIZE,
				      size - TMSG_HDR_SIZE, end_ns,
				      tmsg_cmd_name(get_be32(buf + 4)));
	}
	if (ret == -ETIMEDOUT)
		*stalled = true;
	if (ret)
		return ret;
	n = tmsg_decode(m, buf, size);
	if (n < 0)
		return tcx_fail((int)n, "%s: invalid message: %s", t->name,
				 tcx_error());
	return 0;
}

/* A started message that missed its deadline: the stream is out of step. */
static int stalled_msg(struct tmsg_transport *t)
{
	return tcx_fail(-EPROTO, "%s: the peer stalled mid-message (%s)",
			 t->name, tcx_error());
}

int tmsg_recv(struct tmsg_transport *t, struct tmsg *m, int timeout_ms)
{
	bool stalled;
	int ret = recv_msg(t, m, tmsg_deadline(timeout_ms), 0, &stalled);

	return stalled ? stalled_msg(t) : ret;
}

int tmsg_recv_by(struct tmsg_transport *t, struct tmsg *m,
		 uint64_t deadline_ns)
{
	bool stalled;

	return recv_msg(t, m, deadline_ns, deadline_ns, &stalled);
}

int tmsg_recv_until(struct tmsg_transport *t, struct tmsg *m, int first_ms,
		    uint64_t deadline_ns)
{
	bool stalled;
	int ret = recv_msg(t, m, tmsg_deadline(first_ms), deadline_ns,
			   &stalled);

	return stalled ? stalled_msg(t) : ret;
}

/* Enough to tolerate a confused peer, few enough not to loop for ever. */
#define MAX_UNEXPECTED	8

/*
 * A message that is not the one awaited: NOT_SUPP back as trace-cmd does
 * (never to a NOT_SUPP), but a CLOSE ends the wait, and so does a peer that
 * keeps sending the wrong thing.
 */
static int unexpected_msg(struct tmsg_transport *t, const struct tmsg *m,
			  int *count, const char *want)
{
	if (m->cmd == TMSG_CLOSE)
		return tcx_fail(-ECONNABORTED,
				 "%s: the peer closed the session while we waited for %s",
				 t->name, want);
	if (++*count > MAX_UNEXPECTED)
		return tcx_fail(-EPROTO,
				 "%s: %d unexpected messages (last %s) while waiting for %s",
				 t->name, *count, tmsg_cmd_name(m->cmd), want);
	if (m->cmd == TMSG_NOT_SUPP)
		return 0;
	return tmsg_send_cmd(t, TMSG_NOT_SUPP);
}

/* Messages until @cmd: all by @deadline_ns, or (0) each within io_timeout_ms. */
static int wait_cmd(struct tmsg_transport *t, uint32_t cmd, struct tmsg *m,
		    uint64_t deadline_ns)
{
	int unexpected = 0;

	for (;;) {
		bool stalled;
		int ret = deadline_ns ? recv_msg(t, m, deadline_ns, deadline_ns, &stalled)
				      : tmsg_recv(t, m, -1);

		if (ret)
			return ret;
		if (m->cmd == cmd)
			return 0;
		ret = unexpected_msg(t, m, &unexpected, tmsg_cmd_name(cmd));
		if (ret)
			return ret;
	}
}

int tmsg_wait_until(struct tmsg_transport *t, uint32_t cmd, struct tmsg *m,
		    uint64_t deadline_ns)
{
	return wait_cmd(t, cmd, m, deadline_ns);
}

int tmsg_wait_for(struct tmsg_transport *t, uint32_t cmd, struct tmsg *m,
		  int timeout_ms)
{
	return wait_cmd(t, cmd, m, timeout_ms >= 0 ? tmsg_deadline(timeout_ms) : 0);
}

int tmsg_send_data(struct tmsg_transport *t, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint8_t hdr[TMSG_HDR_SIZE];
	int ret;

	/* Header then payload, straight from the caller's buffer. */
	while (len) {
		size_t n = len > TMSG_MAX_DATA ? TMSG_MAX_DATA : len;

		put_be32(hdr, TMSG_HDR_SIZE + n);
		put_be32(hdr + 4, TMSG_SEND_DATA);
		put_be32(hdr + 8, 0);
		ret = tmsg_write_full(t, hdr, sizeof(hdr));
		if (!ret)
			ret = tmsg_write_full(t, p, n);
		if (ret)
			return ret;
		p += n;
		len -= n;
	}
	return 0;
}

ssize_t tmsg_recv_data(struct tmsg_transport *t, tmsg_data_sink sink,
		       void *arg, int timeout_ms, uint64_t max_bytes)
{
	struct tmsg *m = malloc(sizeof(*m));
	uint64_t start = tcx_now_ns();
	uint64_t deadline = tmsg_deadline(timeout_ms);
	uint64_t total = 0, msgs = 0;
	int unexpected = 0;
	bool stalled;
	int ret;

	if (!m)
		return tcx_fail(-ENOMEM, "out of memory");
	/* One deadline for the whole sequence, however the peer paces it. */
	for (;;) {
		ret = recv_msg(t, m, deadline, deadline, &stalled);
		if (ret == -ETIMEDOUT) {
			tcx_fail(ret, "%s: the data (SEND_DATA until FIN_DATA) was not all there after %llu ms: %llu bytes in %llu messages%s",
				 t->name,
				 (unsigned long long)((tcx_now_ns() - start) / 1000000),
				 (unsigned long long)total,
				 (unsigned long long)msgs,
				 stalled ? ", the last one cut short" : "");
			break;
		}
		if (ret || m->cmd == TMSG_FIN_DATA)
			break;
		if (m->cmd != TMSG_SEND_DATA) {
			ret = unexpected_msg(t, m, &unexpected, "SEND_DATA");
			if (ret)
				break;
			continue;
		}
		total += m->len;
		msgs++;
		if (max_bytes && total > max_bytes) {
			ret = tcx_fail(-EFBIG, "%s: more than %llu bytes of data",
					t->name, (unsigned long long)max_bytes);
			break;
		}
		ret = sink(arg, m->payload, m->len);
		if (ret) {
			tcx_fail(ret, "%s: storing data: %s", t->name,
				  strerror(-ret));
			break;
		}
	}
	free(m);
	return ret ? ret : (ssize_t)total;
}

/* Read a NUL-terminated reply of at most @max bytes (NUL included). */
static int read_cstr(struct tmsg_transport *t, char *buf, size_t max,
		     uint64_t deadline_ns)
{
	for (size_t i = 0; i < max; i++) {
		int ret = tmsg_read_until(t, buf + i, 1, deadline_ns,
					  "the handshake");

		if (ret)
			return ret;
		if (!buf[i])
			return 0;
	}
	return tcx_fail(-EBADMSG, "%s: handshake reply too long", t->name);
}

int tmsg_v3_client_handshake(struct tmsg_transport *t, int timeout_ms)
{
	uint64_t deadline = tmsg_deadline(timeout_ms);
	char buf[16];
	int ret;

	ret = tmsg_read_until(t, buf, 8, deadline, "the handshake");
	if (ret)
		return ret;
	if (memcmp(buf, "tracecmd", 8))
		return tcx_fail(-EPROTO, "%s: not a trace-cmd listener", t->name);
	ret = tmsg_write_full(t, "-1V3", 5);
	if (!ret)
		ret = read_cstr(t, buf, 8, deadline);
	if (ret)
		return ret;
	if (strcmp(buf, "V3"))
		return tcx_fail(-EPROTO, "%s: listener speaks \"%.8s\", not V3",
				 t->name, buf);
	/* The listener takes the magic in one read(): one write, 7 bytes. */
	ret = tmsg_write_full(t, "766679", 7);
	if (!ret)
		ret = tmsg_read_until(t, buf, 2, deadline, "the handshake");
	if (ret)
		return ret;
	if (memcmp(buf, "OK", 2))
		return tcx_fail(-EPROTO, "%s: listener refused the V3 magic",
				 t->name);
	return 0;
}
