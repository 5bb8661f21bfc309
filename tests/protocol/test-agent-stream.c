// SPDX-License-Identifier: GPL-2.0
/*
 * One CPU's page stream (agent/agent-stream.c) over TCP loopback, both ways it
 * moves pages: splice (full pages, many per call) and read(). Every byte
 * arrives once and in order, a stream that ends with a partial page after
 * many full ones included, and stop drains everything:
 *
 * - a simulated kernel's regular file: 300 full pages and a 1000-byte tail
 *   (which arrives as one zero-padded page), stop set as soon as the host
 *   is connected;
 * - a simulated kernel's FIFO, filled in bursts of whole pages while the
 *   stream runs, then a partial page;
 * - a real kernel (root and tracefs): an instance's trace_pipe_raw with
 *   markers written before and while the stream runs; after tracing off and
 *   stop every marker has arrived, in order, full pages by splice and the
 *   last, partial page by read(). Skipped without tracefs.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent-internal.h"
#include "tmsg.h"

#define PAGE		4096
#define WAIT_MS		30000	/* a hang fails the test; nothing is timed */

static char dir[64];

/* ---- the host's end: everything that arrives, until end of stream ---- */

struct host {
	int fd;
	uint8_t *buf;
	size_t len, cap;
	atomic_size_t got;
	pthread_t th;
};

static void *host_main(void *arg)
{
	struct host *h = arg;

	for (;;) {
		ssize_t n;

		if (h->cap - h->len < 65536) {
			h->cap = h->cap * 2 + 65536;
			h->buf = realloc(h->buf, h->cap);
			if (!h->buf)
				abort();
		}
		n = read(h->fd, h->buf + h->len, h->cap - h->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		h->len += (size_t)n;
		atomic_store(&h->got, h->len);
	}
	close(h->fd);
	return NULL;
}

struct run {
	struct agent_stream s;
	atomic_int stop;
	struct host h;
	unsigned int port;
};

/* Start the stream on @raw_path and connect to it as the host. */
static void run_start(struct run *r, const char *raw_path, bool no_splice)
{
	char port[16];

	memset(r, 0, sizeof(*r));
	r->s.lfd = tmsg_tcp_listen("127.0.0.1", 0, &r->port);
	assert_true(r->s.lfd >= 0);
	r->s.peer_host = "127.0.0.1";
	r->s.raw_path = raw_path;
	r->s.page_size = PAGE;
	r->s.stop = &r->stop;
	r->s.log = stderr;
	r->s.no_splice = no_splice;
	assert_int_equal(agent_stream_start(&r->s), 0);
	snprintf(port, sizeof(port), "%u", r->port);
	r->h.fd = tmsg_tcp_connect("127.0.0.1", port, 5000);
	assert_true(r->h.fd >= 0);
	assert_int_equal(pthread_create(&r->h.th, NULL, host_main, &r->h), 0);
}

/* Wait until @bytes arrived (or WAIT_MS passed). */
static void run_wait(struct run *r, size_t bytes)
{
	for (int i = 0; i < WAIT_MS / 5 && atomic_load(&r->h.got) < bytes; i++)
		usleep(5000);
}

/* Stop, join (the stream drains and closes), collect. */
static void run_stop(struct run *r)
{
	atomic_store(&r->stop, 1);
	assert_int_equal(agent_stream_join(&r->s), 0);
	pthread_join(r->h.th, NULL);
	close(r->s.lfd);
}

/* Page @i: a header whose commit says full, then bytes that name it. */
static void fill_page(uint8_t *pg, unsigned int i)
{
	uint64_t ts = 1000 + i, commit = PAGE - 16;

	memcpy(pg, &ts, 8);
	memcpy(pg + 8, &commit, 8);
	for (size_t o = 16; o < PAGE; o += 4) {
		uint32_t v = i * 1021u + (uint32_t)o;

		memcpy(pg + o, &v, 4);
	}
}

/* @npages pages and a @tail-byte start of one more */
static uint8_t *make_pages(unsigned int npages, size_t tail, size_t *len)
{
	uint8_t *b = calloc(npages + 1, PAGE);

	assert_non_null(b);
	for (unsigned int i = 0; i <= npages; i++)
		fill_page(b + (size_t)i * PAGE, i);
	*len = (size_t)npages * PAGE + tail;
	return b;
}

/* What the host must get: the pages, then the tail zero-padded to a page */
static void check_stream(struct run *r, const uint8_t *src, unsigned int npages,
			 size_t tail)
{
	size_t want = ((size_t)npages + (tail ? 1 : 0)) * PAGE;

	assert_int_equal(r->h.len, want);
	assert_memory_equal(r->h.buf, src, (size_t)npages * PAGE + tail);
	for (size_t o = (size_t)npages * PAGE + tail; o < want; o++)
		assert_int_equal(r->h.buf[o], 0);
	assert_int_equal(r->s.pages, want / PAGE);
	free(r->h.buf);
}

/* ---- a simulated kernel's file ---- */

static void file_case(bool no_splice)
{
	const unsigned int npages = 300;
	const size_t tail = 1000;
	char path[128];
	struct run r;
	size_t len;
	uint8_t *src = make_pages(npages, tail, &len);
	FILE *f;

	snprintf(path, sizeof(path), "%s/cpu0-file", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(src, 1, len, f), len);
	assert_int_equal(fclose(f), 0);

	run_start(&r, path, no_splice);
	run_wait(&r, 1);		/* connected; stop must still drain all */
	run_stop(&r);
	check_stream(&r, src, npages, tail);
	assert_int_equal(r.s.spliced_pages, no_splice ? 0 : npages);
	unlink(path);
	free(src);
}

static void test_file_splice(void **state)
{
	file_case(false);
}

static void test_file_read(void **state)
{
	file_case(true);
}

/* ---- a simulated kernel's FIFO, filled while the stream runs ---- */

struct fifo_writer {
	int fd;
	const uint8_t *src;
	unsigned int npages;
	size_t tail;
};

static void *fifo_write(void *arg)
{
	struct fifo_writer *w = arg;
	unsigned int i = 0, burst = 1;

	while (i < w->npages) {
		unsigned int n = burst < w->npages - i ? burst : w->npages - i;
		size_t off = 0, len = (size_t)n * PAGE;

		while (off < len) {
			ssize_t k = write(w->fd, w->src + (size_t)i * PAGE + off,
					  len - off);

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				abort();
			off += (size_t)k;
		}
		i += n;
		burst = burst * 3 % 67 + 1;	/* 1 .. 67 pages */
		if (i % 5 == 0)
			usleep(2000);
	}
	if (w->tail && write(w->fd, w->src + (size_t)i * PAGE, w->tail) !=
	    (ssize_t)w->tail)
		abort();
	return NULL;
}

static void fifo_case(bool no_splice)
{
	const unsigned int npages = 700;
	const size_t tail = 1000;
	struct fifo_writer w = { .npages = npages, .tail = tail };
	char path[128];
	pthread_t th;
	struct run r;
	size_t len;
	uint8_t *src = make_pages(npages, tail, &len);

	snprintf(path, sizeof(path), "%s/cpu0-fifo", dir);
	unlink(path);		/* a failed case before may have left it */
	assert_int_equal(mkfifo(path, 0600), 0);
	/* as xensim: the writer holds it open, reads never see its end */
	w.fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(w.fd >= 0);
	w.src = src;

	run_start(&r, path, no_splice);
	assert_int_equal(pthread_create(&th, NULL, fifo_write, &w), 0);
	pthread_join(th, NULL);
	run_wait(&r, (size_t)(npages + 1) * PAGE);
	run_stop(&r);
	check_stream(&r, src, npages, tail);
	if (no_splice)
		assert_int_equal(r.s.spliced_pages, 0);
	else
		assert_true(r.s.spliced_pages > 0);
	close(w.fd);
	unlink(path);
	free(src);
}

static void test_fifo_splice(void **state)
{
	fifo_case(false);
}

static void test_fifo_read(void **state)
{
	fifo_case(true);
}

/* ---- a real kernel: an instance's trace_pipe_raw ---- */

#define TRACEFS		"/sys/kernel/tracing"
#define MARKERS		4000

static int put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : write(fd, text, strlen(text));

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static void markers(int fd, int from, int to)
{
	for (int i = from; i < to; i++) {
		char m[32];
		int n = snprintf(m, sizeof(m), "tcxs %06d\n", i);

		assert_int_equal(write(fd, m, (size_t)n), n);
	}
}

static char inst[128];		/* the instance, removed in teardown */

static void kernel_case(bool no_splice)
{
	char path[256];
	cpu_set_t one;
	struct run r;
	int mfd, next = 0;
	const uint8_t *p;

	snprintf(inst, sizeof(inst), TRACEFS "/instances/tcx-stream-test-%d",
		 (int)getpid());
	if (getpagesize() != PAGE || access(TRACEFS "/instances", W_OK) ||
	    mkdir(inst, 0755)) {
		inst[0] = 0;
		skip();
		return;
	}
	/* markers go to the writer's CPU: stay on CPU 0 */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	snprintf(path, sizeof(path), "%s/buffer_size_kb", inst);
	assert_int_equal(put(path, "2048"), 0);
	snprintf(path, sizeof(path), "%s/trace_marker", inst);
	mfd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(mfd >= 0);

	/* full pages wait before the stream starts, more come while it runs */
	markers(mfd, 0, MARKERS / 2);
	snprintf(path, sizeof(path), "%s/per_cpu/cpu0/trace_pipe_raw", inst);
	run_start(&r, path, no_splice);
	run_wait(&r, 1);
	markers(mfd, MARKERS / 2, MARKERS);
	close(mfd);
	snprintf(path, sizeof(path), "%s/tracing_on", inst);
	assert_int_equal(put(path, "0"), 0);
	run_stop(&r);

	/* whole pages, every marker once and in order */
	assert_int_equal(r.h.len % PAGE, 0);
	assert_int_equal(r.s.pages, r.h.len / PAGE);
	for (p = r.h.buf; (p = memmem(p, r.h.len - (size_t)(p - r.h.buf),
				      "tcxs ", 5)); p += 5) {
		int n = (int)strtol((const char *)p + 5, NULL, 10);

		assert_int_equal(n, next);
		next++;
	}
	assert_int_equal(next, MARKERS);
	if (no_splice)
		assert_int_equal(r.s.spliced_pages, 0);
	else	/* a partial page (at least the last) came by read() */
		assert_true(r.s.spliced_pages > 0 &&
			    r.s.spliced_pages < r.s.pages);
	free(r.h.buf);
}

/* Whatever happened: the instance goes, this thread may run anywhere. */
static int kernel_teardown(void **state)
{
	cpu_set_t all;

	CPU_ZERO(&all);
	for (int c = 0; c < CPU_SETSIZE; c++)
		CPU_SET(c, &all);
	sched_setaffinity(0, sizeof(all), &all);
	if (inst[0] && rmdir(inst))
		return -1;
	inst[0] = 0;
	return 0;
}

static void test_kernel_splice(void **state)
{
	kernel_case(false);
}

static void test_kernel_read(void **state)
{
	kernel_case(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_splice),
		cmocka_unit_test(test_file_read),
		cmocka_unit_test(test_fifo_splice),
		cmocka_unit_test(test_fifo_read),
		cmocka_unit_test_teardown(test_kernel_splice, kernel_teardown),
		cmocka_unit_test_teardown(test_kernel_read, kernel_teardown),
	};
	int ret;

	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof(dir), "/tmp/tcx-stream-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return ret;
}
