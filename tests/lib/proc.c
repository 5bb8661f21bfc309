// SPDX-License-Identifier: GPL-2.0
/* Processes: one way to start a command, one to capture its output. */
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tlib.h"

static int redirect(const char *path, int fd)
{
	int f;

	if (!path)
		return 0;
	f = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (f < 0)
		return -1;
	if (dup2(f, fd) < 0) {
		close(f);
		return -1;
	}
	close(f);
	return 0;
}

pid_t tlib_spawn(char *const argv[], const struct tlib_spawn_opts *o)
{
	static const struct tlib_spawn_opts none;
	pid_t pid;

	if (!o)
		o = &none;
	pid = fork();
	if (pid)
		return pid < 0 ? -1 : pid;
	if (redirect(o->out, 1))
		_exit(126);
	/* one file for both: a second open would truncate the first's output */
	if (o->err && o->out && !strcmp(o->err, o->out)) {
		if (dup2(1, 2) < 0)
			_exit(126);
	} else if (redirect(o->err, 2)) {
		_exit(126);
	}
	if (o->cwd && chdir(o->cwd))
		_exit(126);
	for (char *const *e = o->env; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[128];

		if (!eq || (size_t)(eq - *e) >= sizeof(name))
			_exit(126);
		snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
		setenv(name, eq + 1, 1);
	}
	execvp(argv[0], argv);
	_exit(127);
}

int tlib_wait(pid_t pid)
{
	int st;

	if (pid <= 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* VmHWM of @pid in KiB, or -1: the peak of its own memory since its exec. */
static long vm_hwm(pid_t pid)
{
	char path[64], line[128];
	long kb = -1;
	FILE *f;

	char exe[4096], self[4096];
	ssize_t n, m;

	/* before its exec the child is a copy of us: not its memory */
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	m = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0 || m < 0 || (n == m && !memcmp(exe, self, (size_t)n)))
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

int tlib_wait_bounded(pid_t pid, int limit_s, long *maxrss_kb, bool *killed)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	long waited_ms = 0, peak = -1;
	int st;

	if (killed)
		*killed = false;
	if (pid <= 0)
		return -1;
	for (;;) {
		long kb = vm_hwm(pid);
		pid_t r;

		if (kb > peak)
			peak = kb;
		r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			break;
		if (r < 0)
			return -1;
		if (waited_ms >= (long)limit_s * 1000) {
			kill(pid, SIGKILL);
			if (killed)
				*killed = true;
			if (waitpid(pid, &st, 0) != pid)
				return -1;
			break;
		}
		nanosleep(&tick, NULL);
		waited_ms += 10;
	}
	if (maxrss_kb)
		*maxrss_kb = peak;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int tlib_kill(pid_t pid, int sig)
{
	if (pid <= 0)
		return -1;
	kill(pid, sig);
	return tlib_wait(pid);
}

int tlib_sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

int tlib_capture(char *out, size_t len, const char *fmt, ...)
{
	char cmd[4096];
	size_t n = 0;
	va_list ap;
	FILE *p;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (n + 1 < len) {
		size_t r = fread(out + n, 1, len - 1 - n, p);

		if (!r)
			break;
		n += r;
	}
	out[n] = 0;
	/* the rest too: the command must not die of SIGPIPE */
	while (fgetc(p) != EOF)
		;
	return pclose(p);
}

const char *tlib_tcx(void)
{
	const char *b = getenv("TCX_BIN");

	return b ? b : "trace-cmd-xen";
}
