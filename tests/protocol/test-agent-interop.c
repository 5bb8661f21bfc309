// SPDX-License-Identifier: GPL-2.0
/*
 * Our agent in TCP mode against the stock trace-cmd 3.1.6 host:
 *
 *   trace-cmd record -d --no-filter --tsync-interval -1 -o h.dat \
 *	-e sched:sched_switch -A 127.0.0.1:PORT
 *
 * drives `trace-cmd-xen agent -N 127.0.0.1 --insecure`; the stock report
 * reads the guest file, and the host file's GUEST option names the guest
 * file's TRACEID. Then bad input: a disallowed option is refused with a
 * reason, sessions without the secret are refused, malformed messages end
 * only their session, and the agent keeps serving after each.
 *
 * Usage: test-agent-interop AGENT_BINARY
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent-internal.h"
#include "simkernel.h"
#include "tcx-util.h"
#include "tlib.h"
#include "tmsg.h"

#define TRACE_CMD	"/usr/bin/trace-cmd"

static const char *agent_bin;
static char dir[64];

struct agent_proc {
	pid_t pid;
	unsigned int port;
	char log[128];
};

/* @argv in the scratch directory, stdout and stderr into @log */
static pid_t spawn(char *const argv[], const char *log)
{
	struct tlib_spawn_opts o = { .out = log, .err = log, .cwd = dir };
	pid_t pid = tlib_spawn(argv, &o);

	assert_true(pid > 0);
	return pid;
}

/* Wait for @pid up to @ms; SIGKILL after that. Returns the wait status. */
static int reap(pid_t pid, int ms)
{
	int status = -1;

	for (int i = 0; i < ms / 50; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(50 * 1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return status;
}

static int wait_port(unsigned int port)
{
	char p[16];

	snprintf(p, sizeof(p), "%u", port);
	for (int i = 0; i < 100; i++) {
		int fd = tmsg_tcp_connect("127.0.0.1", p, 1000);

		if (fd >= 0)
			return fd;
		usleep(50 * 1000);
	}
	return -1;
}

static void start_agent2(struct agent_proc *a, const char *extra,
			 const char *extra2)
{
	char port[16];
	char *argv[8] = { (char *)agent_bin, "-N", "127.0.0.1", "-p", port,
			  (char *)extra, (char *)extra2, NULL };
	int fd;

	fd = tlib_free_port();
	assert_true(fd > 0);
	a->port = (unsigned int)fd;
	snprintf(port, sizeof(port), "%u", a->port);
	snprintf(a->log, sizeof(a->log), "%s/agent-%u.log", dir, a->port);
	a->pid = spawn(argv, a->log);
	/* A first connection that sends nothing: proves it listens, and
	 * that a silent peer does not block the next session for long. */
	fd = wait_port(a->port);
	assert_true(fd >= 0);
	close(fd);
}

static void start_agent(struct agent_proc *a, const char *extra)
{
	start_agent2(a, extra, NULL);
}

static void stop_agent(struct agent_proc *a)
{
	int status;

	kill(a->pid, SIGTERM);
	status = reap(a->pid, 10000);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* First line of @path containing @needle, copied into @out. */
static bool grep_line(const char *path, const char *needle, char *out,
		      size_t len)
{
	char line[1024];
	FILE *f = fopen(path, "r");
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (strstr(line, needle)) {
			size_t n = strnlen(line, len - 1);

			memcpy(out, line, n);
			out[n] = 0;
			found = true;
		}
	fclose(f);
	return found;
}

/* Stock record against the agent for about @ms, then Ctrl-C. */
static int stock_record_tsync(const struct agent_proc *a, const char *out,
			      const char *guest_opts, int ms, bool tsync);

/* Sessions that started tracing or were refused, from the agent's log. */
static int session_marks(const struct agent_proc *a)
{
	return tlib_count_lines(a->log, ": tracing ") + tlib_count_lines(a->log, " refused: ");
}

static int stock_record(const struct agent_proc *a, const char *out,
			const char *guest_opts, int ms)
{
	return stock_record_tsync(a, out, guest_opts, ms, false);
}

/* With @tsync the host offers "ptp"; the agent answers with none. */
static int stock_record_tsync(const struct agent_proc *a, const char *out,
			      const char *guest_opts, int ms, bool tsync)
{
	char target[64], log[160], cmd[512];
	int seen = session_marks(a);
	pid_t pid;
	int status;

	snprintf(target, sizeof(target), "127.0.0.1:%u", a->port);
	snprintf(log, sizeof(log), "%s/%s.log", dir, out);
	snprintf(cmd, sizeof(cmd),
		 "exec " TRACE_CMD " record -d --no-filter %s "
		 "-o %s.dat -e sched:sched_switch -A %s %s",
		 tsync ? "" : "--tsync-interval -1", out, target, guest_opts);
	{
		char *argv[] = { "/bin/sh", "-c", cmd, NULL };

		pid = spawn(argv, log);
	}
	/* Ctrl-C only once the session is up (or refused), however slow the
	 * machine, then after @ms of tracing. */
	for (int i = 0; i < 400 && session_marks(a) == seen; i++)
		usleep(50 * 1000);
	usleep(ms * 1000);
	kill(pid, SIGINT);
	status = reap(pid, 30000);
	return status;
}

static void test_stock_record_drives_agent(void **state)
{
	struct agent_proc a;
	char guest[128], host[128], rep[128], line[256], id[64];

	start_agent(&a, "--insecure");
	stock_record(&a, "h", "", 1500);

	snprintf(guest, sizeof(guest), "%s/h-127.0.0.1.dat", dir);
	snprintf(host, sizeof(host), "%s/h.dat", dir);
	assert_int_equal(access(guest, R_OK), 0);
	assert_int_equal(access(host, R_OK), 0);
	snprintf(rep, sizeof(rep), "%s/guest-report.txt", dir);
	assert_int_equal(tlib_sh(TRACE_CMD " report -i %s > %s 2>&1", guest, rep), 0);
	assert_int_equal(tlib_count_lines(rep, "cpus="), 1);
	assert_true(tlib_count_lines(rep, "sched_switch:") > 0);
	assert_int_equal(tlib_count_lines(rep, "UNKNOWN EVENT"), 0);

	/* host.dat's GUEST option carries the guest file's TRACEID */
	assert_int_equal(tlib_sh(TRACE_CMD " dump --options -i %s > %s/g-opts.txt 2>&1",
			    guest, dir), 0);
	assert_int_equal(tlib_sh(TRACE_CMD " dump --options -i %s > %s/h-opts.txt 2>&1",
			    host, dir), 0);
	snprintf(rep, sizeof(rep), "%s/h-opts.txt", dir);
	assert_true(grep_line(rep, "[trace id]", line, sizeof(line)));
	sscanf(line, "%63s", id);
	snprintf(rep, sizeof(rep), "%s/g-opts.txt", dir);
	assert_int_equal(tlib_count_lines(rep, id), 1);

	/* symbols for the host's report, as the stock agent sends them */
	assert_int_equal(tlib_sh(TRACE_CMD " dump --summary -i %s > %s/g-sum.txt 2>&1",
			    guest, dir), 0);
	snprintf(rep, sizeof(rep), "%s/g-sum.txt", dir);
	assert_int_equal(tlib_count_lines(rep, "[Kallsyms, 0 bytes]"), 0);
	assert_int_equal(tlib_count_lines(rep, "[Kallsyms,"), 1);

	/* both files together */
	assert_int_equal(tlib_sh(TRACE_CMD " report -i %s -i %s > %s/both.txt 2>&1",
			    host, guest, dir), 0);
	snprintf(rep, sizeof(rep), "%s/both.txt", dir);
	assert_true(tlib_count_lines(rep, "h-127.0.0.1.dat:") > 1);

	snprintf(rep, sizeof(rep), "%s", a.log);
	assert_int_equal(tlib_count_lines(rep, "pages sent"), 1);
	assert_int_equal(tlib_count_lines(rep, "session failed"), 0);
	stop_agent(&a);
	/* our instance is gone */
	assert_int_equal(tlib_sh("ls /sys/kernel/tracing/instances | grep -q tcx-agent-%d",
			    (int)a.pid) != 0, 1);
}

static void test_disallowed_option(void **state)
{
	struct agent_proc a;
	char guest[128];
	int status;

	start_agent(&a, "--insecure");
	status = stock_record(&a, "bad", "-p hwlat", 500);
	/* the stock host gives up; nothing was traced on the agent */
	assert_true(!WIFEXITED(status) || WEXITSTATUS(status) != 0);
	snprintf(guest, sizeof(guest), "%s/bad-127.0.0.1.dat", dir);
	assert_int_equal(tlib_count_lines(a.log, "tracer \"hwlat\" is not allowed"), 1);
	assert_int_equal(tlib_count_lines(a.log, ": tracing "), 0);
	/* and the next session works, this time with the host offering
	 * time sync (the agent answers none) */
	stock_record_tsync(&a, "good", "-e sched:sched_wakeup", 1000, true);
	snprintf(guest, sizeof(guest), "%s/good-127.0.0.1.dat", dir);
	assert_int_equal(tlib_sh(TRACE_CMD " report -i %s > %s/good.txt 2>&1",
			    guest, dir), 0);
	snprintf(guest, sizeof(guest), "%s/good.txt", dir);
	assert_true(tlib_count_lines(guest, "sched_wakeup:") > 0);
	assert_int_equal(tlib_count_lines(guest, "sched_switch:"), 0);
	stop_agent(&a);
}

/* Our own client: TRACE_REQ with or without the secret. Returns 0 if
 * accepted (then closes at once), else the error and the reason. */
static int request(const struct agent_proc *a, const char *secret,
		   char *why, size_t len)
{
	const char *argv[] = { "-e", "sched:sched_switch" };
	struct tmsg_trace_req req = { .trace_id = 1, .argc = 2, .argv = argv };
	struct tmsg_trace_resp resp;
	struct tmsg_auth auth = { .secret = (const uint8_t *)secret,
				  .secret_len = secret ? strlen(secret) : 0 };
	struct tmsg_transport *t;
	int fd = wait_port(a->port), ret;

	assert_true(fd >= 0);
	t = tmsg_fd_transport(fd, "agent");
	ret = tmsg_host_request_auth(t, &req, secret ? &auth : NULL, &resp,
				     10000, why, len);
	tmsg_trace_resp_free(&resp);
	tmsg_close(t);
	return ret;
}

static int count_sink(void *arg, const void *buf, size_t len)
{
	*(size_t *)arg += len;
	return 0;
}

/* Our own host side: TRACE_REQ, TRACE_RESP, data connections, metadata. */
struct own_session {
	struct tmsg_transport *ctl;
	struct tmsg_trace_resp resp;
	struct tmsg_transport *data[16];
	size_t meta;
};

static void own_start(const struct agent_proc *a, struct own_session *o,
		      struct tmsg *m)
{
	const char *argv[] = { "-e", "sched:sched_switch", "-b", "512" };
	struct tmsg_trace_req req = { .trace_id = 7, .argc = 4, .argv = argv };
	ssize_t n;
	int fd = wait_port(a->port);

	assert_true(fd >= 0);
	o->ctl = tmsg_fd_transport(fd, "agent");
	assert_int_equal(tmsg_host_request(o->ctl, &req, &o->resp, 10000,
					   NULL, 0), 0);
	assert_string_equal(o->resp.tsync_proto, "");
	assert_true(o->resp.cpus >= 1 && o->resp.cpus <= 16);
	for (uint32_t c = 0; c < o->resp.cpus; c++)
		assert_true(o->resp.ports[c] >= TMSG_DATA_PORT_START);
	assert_int_equal(tmsg_host_open_streams("127.0.0.1", 0, &o->resp,
						o->data), 0);
	o->meta = 0;
	n = tmsg_recv_data(o->ctl, count_sink, &o->meta, TMSG_WAIT_MS, 0);
	assert_true(n > 0);
	assert_int_equal((size_t)n, o->meta);
	(void)m;
}

static void own_free(struct own_session *o)
{
	for (uint32_t c = 0; c < o->resp.cpus; c++)
		tmsg_close(o->data[c]);
	tmsg_close(o->ctl);
	tmsg_trace_resp_free(&o->resp);
}

/* As own_start(), storing the metadata in a file as a recorder does. */
static void own_start_meta_fd(const struct agent_proc *a, struct own_session *o,
			      struct tmsg *m)
{
	const char *argv[] = { "-e", "sched:sched_switch" };
	struct tmsg_trace_req req = { .trace_id = 8, .argc = 2, .argv = argv };
	char path[128], magic[10];
	char port[16];
	int fd = wait_port(a->port), out;

	assert_true(fd >= 0);
	o->ctl = tmsg_fd_transport(fd, "agent");
	assert_int_equal(tmsg_host_request(o->ctl, &req, &o->resp, 10000,
					   NULL, 0), 0);
	for (uint32_t c = 0; c < o->resp.cpus; c++) {
		snprintf(port, sizeof(port), "%u", o->resp.ports[c]);
		fd = tmsg_tcp_connect("127.0.0.1", port, 5000);
		assert_true(fd >= 0);
		o->data[c] = tmsg_fd_transport(fd, "data");
	}
	snprintf(path, sizeof(path), "%s/meta.dat", dir);
	out = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(out >= 0);
	assert_true(tmsg_recv_data(o->ctl, tmsg_fd_sink, &out, TMSG_WAIT_MS, 0) > 0);
	assert_int_equal(pread(out, magic, 10, 0), 10);
	assert_memory_equal(magic, "\x17\x08\x44tracing", 10);
	close(out);
	(void)m;
}

/* A whole session by the book, then one whose host vanishes. */
static void test_own_session_and_vanishing_peer(void **state)
{
	struct tmsg *m = malloc(sizeof(*m));
	static uint8_t page[65536];
	struct own_session o;
	struct agent_proc a;
	size_t total = 0;

	start_agent(&a, "--insecure");
	own_start(&a, &o, m);
	usleep(300 * 1000);
	assert_int_equal(tmsg_send_cmd(o.ctl, TMSG_CLOSE), 0);
	/* every data stream ends, each a whole number of pages */
	for (uint32_t c = 0; c < o.resp.cpus; c++) {
		size_t got = 0;
		ssize_t n;

		do {
			n = o.data[c]->ops->read(o.data[c], page, sizeof(page));
			if (n == -EAGAIN)
				n = o.data[c]->ops->wait(o.data[c], POLLIN, 10000) > 0 ?
				    -EAGAIN : -ETIMEDOUT;
			if (n > 0)
				got += n;
		} while (n > 0 || n == -EAGAIN);
		assert_int_equal(n, 0);
		assert_int_equal(got % o.resp.page_size, 0);
		total += got;
	}
	assert_true(total > 0);
	assert_int_equal(tmsg_wait_for(o.ctl, TMSG_CLOSE_RESP, m, 10000), 0);
	own_free(&o);

	/* the metadata into a file, then CLOSE/CLOSE_RESP by the library */
	own_start_meta_fd(&a, &o, m);
	for (uint32_t c = 0; c < o.resp.cpus; c++)
		o.data[c]->io_timeout_ms = 10000;
	assert_int_equal(tmsg_host_close(o.ctl, 15000), 0);
	own_free(&o);

	/* a host that goes away mid-session, without CLOSE */
	own_start(&a, &o, m);
	own_free(&o);
	/* the agent notices, cleans up and serves the next one */
	own_start(&a, &o, m);
	assert_int_equal(tmsg_send_cmd(o.ctl, TMSG_CLOSE), 0);
	for (uint32_t c = 0; c < o.resp.cpus; c++)
		tmsg_close(o.data[c]);	/* not reading: the agent must not hang */
	o.resp.cpus = 0;
	assert_int_equal(tmsg_wait_for(o.ctl, TMSG_CLOSE_RESP, m, 15000), 0);
	own_free(&o);
	stop_agent(&a);
	assert_int_equal(tlib_count_lines(a.log, ": tracing "), 4);
	assert_int_equal(tlib_count_lines(a.log, "pages sent"), 4);
	assert_int_equal(tlib_count_lines(a.log, "peer asks for: -e sched:sched_switch -b 512"), 3);
	free(m);
}

/* An agent killed with SIGKILL leaves its instance; the next one removes it. */
static void test_killed_agent_cleaned_up(void **state)
{
	struct tmsg *m = malloc(sizeof(*m));
	struct own_session o;
	struct agent_proc a, b;

	start_agent(&a, "--insecure");
	own_start(&a, &o, m);
	assert_int_equal(tlib_sh("ls /sys/kernel/tracing/instances | grep -q '^tcx-agent-%d-'",
			    (int)a.pid), 0);
	kill(a.pid, SIGKILL);
	reap(a.pid, 5000);
	own_free(&o);
	assert_int_equal(tlib_sh("ls /sys/kernel/tracing/instances | grep -q '^tcx-agent-%d-'",
			    (int)a.pid), 0);
	start_agent(&b, "--insecure");
	assert_int_not_equal(tlib_sh("ls /sys/kernel/tracing/instances | grep -q '^tcx-agent-%d-'",
				(int)a.pid), 0);
	assert_int_equal(tlib_count_lines(b.log, "removed stale instance"), 1);
	stop_agent(&b);
	free(m);
}

/*
 * A simulated guest kernel as the simulator will provide it: a directory
 * with formats and per-CPU trace_pipe_raw holding pages (simkernel.c). The
 * stock host must get every event back.
 */
static void test_simulated_kernel(void **state)
{
	struct simk_pages pages;
	char k[128], path[256], arg[160];
	struct agent_proc a;

	snprintf(k, sizeof(k), "%s/simk", dir);
	assert_int_equal(simk_create(k, &pages), 0);
	simk_free(&pages);

	snprintf(arg, sizeof(arg), "--tracing-dir=%s", k);
	start_agent2(&a, "--insecure", arg);
	stock_record(&a, "sim", "-e tcx:tick", 1000);
	stop_agent(&a);
	assert_int_equal(tlib_count_lines(a.log, "simulated kernel"), 1);
	assert_int_equal(tlib_sh(TRACE_CMD " report -i %s/sim-127.0.0.1.dat > %s/sim.txt 2>&1",
			    dir, dir), 0);
	snprintf(path, sizeof(path), "%s/sim.txt", dir);
	assert_int_equal(tlib_count_lines(path, "tick:"), SIMK_CPUS * SIMK_PER_CPU);
	assert_int_equal(tlib_count_lines(path, "n=119"), 1);
	assert_int_equal(tlib_count_lines(path, "cpus=2"), 1);
}

static void test_secret_and_garbage(void **state)
{
	struct agent_proc a;
	char arg[160], path[128], why[TMSG_MAX_REASON];
	int fd;

	snprintf(path, sizeof(path), "%s/secret", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(write(fd, "opensesame-16-bytes\n", 20), 20);
	close(fd);
	snprintf(arg, sizeof(arg), "--secret-file=%s", path);
	start_agent(&a, arg);

	assert_int_equal(request(&a, NULL, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "requires a secret"));
	assert_non_null(strstr(tcx_error(), "refused the session: this agent"));
	/* a wrong secret: the agent's proof does not check out here */
	assert_int_equal(request(&a, "opensesame-16-byteZ", why, sizeof(why)), -EACCES);
	assert_non_null(strstr(tcx_error(), "could not prove that it knows the secret"));
	assert_int_equal(request(&a, "opensesame-16-bytes", why, sizeof(why)), 0);

	/* garbage: an oversized header, then an unknown command */
	fd = wait_port(a.port);
	assert_int_equal(write(fd, "\0\0\x40\0\0\0\0\6\0\0\0\x10", 12), 12);
	close(fd);
	fd = wait_port(a.port);
	assert_int_equal(write(fd, "\0\0\0\x0c\0\0\0\x63\0\0\0\0", 12), 12);
	close(fd);

	/* a proxy's request: refused with a reason */
	{
		struct tmsg_trace_req preq = { .proxy = true, .cpus = 1 };
		struct tmsg_trace_resp resp;
		struct tmsg_transport *t;

		fd = wait_port(a.port);
		t = tmsg_fd_transport(fd, "agent");
		assert_int_equal(tmsg_host_request(t, &preq, &resp, 10000, why,
						   sizeof(why)), -EPERM);
		assert_non_null(strstr(why, "TRACE_PROXY is not supported"));
		tmsg_close(t);
	}

	/* and the stock host, without the secret: refused */
	stock_record(&a, "nosecret", "", 300);
	stop_agent(&a);
	assert_int_equal(tlib_count_lines(a.log, "invalid message"), 2);
	assert_int_equal(tlib_count_lines(a.log, "requires a secret"), 2);
	assert_int_equal(tlib_count_lines(a.log, "the host refused our proof: the agent's proof is wrong"), 1);
	/* only the right secret got as far as its options (the host then
	 * left at once, so whether it started tracing is a race) */
	assert_int_equal(tlib_count_lines(a.log, "peer asks for: "), 1);
	assert_true(tlib_count_lines(a.log, ": tracing ") <= 1);
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/tcx-agent-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	if (access("/sys/kernel/tracing/instances", W_OK))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	if (!getenv("TCX_KEEP"))
		return tlib_rmtree(dir);
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stock_record_drives_agent),
		cmocka_unit_test(test_disallowed_option),
		cmocka_unit_test(test_own_session_and_vanishing_peer),
		cmocka_unit_test(test_killed_agent_cleaned_up),
		cmocka_unit_test(test_simulated_kernel),
		cmocka_unit_test(test_secret_and_garbage),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s AGENT_BINARY\n", argv[0]);
		return 2;
	}
	/* spawn() changes directory: the path must be absolute */
	agent_bin = realpath(argv[1], NULL);
	if (!agent_bin) {
		perror(argv[1]);
		return 2;
	}
	return cmocka_run_group_tests_name("agent-interop", tests, setup,
					   teardown);
}
