// SPDX-License-Identifier: GPL-2.0
/*
 * Deadlines against a peer that dribbles: bytes that keep coming must not
 * move a read's deadline. The peer is a thread on the other end of a
 * socketpair that sends a little every DRIBBLE_MS; each test checks the
 * error and how much the peer got to send before it, never the clock.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcx-util.h"
#include "tmsg.h"

#define DRIBBLE_MS	50
#define DEADLINE_MS	300
/* The peer's whole script lasts LIMIT * DRIBBLE_MS = 10 s: far past. */
#define LIMIT		200

struct dribbler {
	int fd;
	const uint8_t *buf;
	size_t len, chunk;	/* @chunk bytes every DRIBBLE_MS */
	atomic_size_t sent;
	atomic_bool stop;
	pthread_t th;
};

static void *dribble_main(void *arg)
{
	struct dribbler *d = arg;
	struct timespec ts = { 0, DRIBBLE_MS * 1000000L };

	while (!atomic_load(&d->stop) && atomic_load(&d->sent) < d->len) {
		size_t at = atomic_load(&d->sent);
		size_t n = d->len - at < d->chunk ? d->len - at : d->chunk;

		if (send(d->fd, d->buf + at, n, MSG_NOSIGNAL) != (ssize_t)n)
			break;
		atomic_fetch_add(&d->sent, n);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static struct tmsg_transport *start(struct dribbler *d, const void *buf,
				    size_t len, size_t chunk)
{
	struct tmsg_transport *t;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	t = tmsg_fd_transport(sv[0], "dribbler");
	assert_non_null(t);
	/* The per-byte wait of old would never expire against this peer. */
	t->io_timeout_ms = DEADLINE_MS;
	d->fd = sv[1];
	d->buf = buf;
	d->len = len;
	d->chunk = chunk;
	atomic_init(&d->sent, 0);
	atomic_init(&d->stop, false);
	assert_int_equal(pthread_create(&d->th, NULL, dribble_main, d), 0);
	return t;
}

/* What the peer had sent when the read gave up. */
static size_t stop(struct dribbler *d, struct tmsg_transport *t)
{
	size_t sent = atomic_load(&d->sent);

	atomic_store(&d->stop, true);
	pthread_join(d->th, NULL);
	tmsg_close(t);
	close(d->fd);
	return sent;
}

/* Bytes kept coming (more than one), and the read ended long before the
 * peer's script did. */
static void assert_cut_short(size_t sent, size_t len)
{
	assert_true(sent > 1);
	assert_true(sent < len);
}

static void test_read_full_dribbled(void **state)
{
	static uint8_t bytes[LIMIT], got[LIMIT];
	struct dribbler d;
	struct tmsg_transport *t;
	int ret;

	(void)state;
	memset(bytes, 'x', sizeof(bytes));
	t = start(&d, bytes, sizeof(bytes), 1);
	ret = tmsg_read_full(t, got, sizeof(got), DEADLINE_MS);
	assert_cut_short(stop(&d, t), sizeof(bytes));
	assert_int_equal(ret, -ETIMEDOUT);
	assert_non_null(strstr(tcx_error(), "past the deadline"));
}

/* Another thread's cutoff ends a read that has no deadline of its own. */
struct cutter {
	struct tmsg_transport *t;
	struct dribbler *d;
};

static void *cut_main(void *arg)
{
	struct cutter *c = arg;

	while (atomic_load(&c->d->sent) < 4)
		usleep(1000);
	tmsg_set_cutoff(c->t, tcx_now_ns());
	return NULL;
}

static void test_cutoff_from_another_thread(void **state)
{
	static uint8_t bytes[LIMIT], got[LIMIT];
	struct dribbler d;
	struct cutter c = { .d = &d };
	struct tmsg_transport *t;
	pthread_t th;
	int ret;

	(void)state;
	memset(bytes, 'x', sizeof(bytes));
	t = start(&d, bytes, sizeof(bytes), 1);
	c.t = t;
	assert_int_equal(pthread_create(&th, NULL, cut_main, &c), 0);
	ret = tmsg_read_full(t, got, sizeof(got), -1);
	pthread_join(th, NULL);
	assert_true(tmsg_cut_off(t));
	assert_cut_short(stop(&d, t), sizeof(bytes));
	assert_int_equal(ret, -ETIMEDOUT);
	assert_non_null(strstr(tcx_error(), "cut off at the session's deadline"));
}

/* One SEND_DATA of 8180 bytes, encoded: what a guest dribbles. */
static size_t big_message(uint8_t *wire)
{
	static uint8_t payload[TMSG_MAX_DATA];
	struct tmsg *m = malloc(sizeof(*m));
	size_t n;

	assert_non_null(m);
	memset(payload, 'p', sizeof(payload));
	assert_int_equal(tmsg_make_data(m, payload, sizeof(payload)), 0);
	n = tmsg_encode(m, wire);
	free(m);
	return n;
}

static void test_recv_dribbled(void **state)
{
	static uint8_t wire[TMSG_WIRE_MAX];
	struct tmsg *m = malloc(sizeof(*m));
	struct dribbler d;
	struct tmsg_transport *t;
	size_t len = big_message(wire);
	int ret;

	(void)state;
	assert_non_null(m);
	/* The whole message due within io_timeout_ms of its first byte. */
	t = start(&d, wire, len, 1);
	ret = tmsg_recv(t, m, DEADLINE_MS);
	assert_cut_short(stop(&d, t), LIMIT);
	assert_int_equal(ret, -EPROTO);
	assert_non_null(strstr(tcx_error(), "past the deadline"));

	/* And by an absolute deadline of the caller's. */
	t = start(&d, wire, len, 1);
	ret = tmsg_recv_until(t, m, -1, tcx_now_ns() + DEADLINE_MS * 1000000ull);
	assert_cut_short(stop(&d, t), LIMIT);
	assert_int_equal(ret, -EPROTO);
	free(m);
}

static void test_host_request_dribbled(void **state)
{
	static uint8_t wire[TMSG_WIRE_MAX];
	struct tmsg_trace_req req = { .argv = (const char *[]){ "-e", "all" }, .argc = 2 };
	struct tmsg_trace_resp resp;
	struct dribbler d;
	struct tmsg_transport *t;
	size_t len = big_message(wire);
	char why[64];
	int ret;

	(void)state;
	/* Dom0 waits for the whole TRACE_RESP no longer than it asked. */
	t = start(&d, wire, len, 1);
	t->io_timeout_ms = 60000;
	ret = tmsg_host_request(t, &req, &resp, DEADLINE_MS, why, sizeof(why));
	assert_cut_short(stop(&d, t), LIMIT);
	assert_int_equal(ret, -ETIMEDOUT);

	/* The same for CLOSE_RESP. */
	t = start(&d, wire, len, 1);
	t->io_timeout_ms = 60000;
	ret = tmsg_host_close(t, DEADLINE_MS);
	assert_cut_short(stop(&d, t), LIMIT);
	assert_int_equal(ret, -ETIMEDOUT);
}

static int count_sink(void *arg, const void *buf, size_t len)
{
	(void)buf;
	*(size_t *)arg += len;
	return 0;
}

static void test_recv_data_endless(void **state)
{
	enum { ONE = TMSG_HDR_SIZE + 1 };
	static uint8_t wire[LIMIT * ONE];
	struct tmsg *m = malloc(sizeof(*m));
	struct dribbler d;
	struct tmsg_transport *t;
	size_t got = 0, sent;
	ssize_t ret;

	(void)state;
	assert_non_null(m);
	/* Endless small SEND_DATA, each one whole and on time. */
	assert_int_equal(tmsg_make_data(m, "d", 1), 0);
	for (int i = 0; i < LIMIT; i++)
		assert_int_equal(tmsg_encode(m, wire + i * ONE), ONE);
	free(m);
	t = start(&d, wire, sizeof(wire), ONE);
	ret = tmsg_recv_data(t, count_sink, &got, DEADLINE_MS, 0);
	sent = stop(&d, t);
	assert_int_equal(ret, -ETIMEDOUT);
	assert_true(sent / ONE > 1);
	assert_true(sent < sizeof(wire));
	/* what came before the deadline went to the sink */
	assert_true(got > 1);
	assert_non_null(strstr(tcx_error(), "SEND_DATA until FIN_DATA"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_full_dribbled),
		cmocka_unit_test(test_recv_dribbled),
		cmocka_unit_test(test_host_request_dribbled),
		cmocka_unit_test(test_recv_data_endless),
		cmocka_unit_test(test_cutoff_from_another_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
