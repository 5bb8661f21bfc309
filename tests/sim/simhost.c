// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "simhost.h"

const char *conf_path(const char *name)
{
	static char buf[512];
	const char *d = getenv("XENSIM_CONFDIR");

	snprintf(buf, sizeof(buf), "%s/%s", d ? d : ".", name);
	return buf;
}

int simhost_start(struct simhost *h, const char *conf)
{
	const char *bin = getenv("XENSIM_BIN");
	char ready[400];

	memset(h, 0, sizeof(*h));
	snprintf(h->tmp, sizeof(h->tmp), "/tmp/xsim-test-XXXXXX");
	if (!bin || !mkdtemp(h->tmp))
		return -1;
	snprintf(h->dir, sizeof(h->dir), "%s/host", h->tmp);
	snprintf(ready, sizeof(ready), "%s/ready", h->dir);
	h->pid = fork();
	if (h->pid < 0)
		return -1;
	if (!h->pid) {
		/* the host shares 2 cores with everyone: be nice */
		setpriority(PRIO_PROCESS, 0, 10);
		execl(bin, bin, "run", conf, "--dir", h->dir, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		struct timespec d = { 0, 10 * 1000 * 1000 };
		int st;

		if (!access(ready, F_OK))
			return 0;
		if (waitpid(h->pid, &st, WNOHANG) == h->pid) {
			h->pid = 0;
			return -1;
		}
		nanosleep(&d, NULL);
	}
	return -1;
}

int simhost_stop(struct simhost *h)
{
	int st;

	if (h->pid <= 0)
		return -1;
	kill(h->pid, SIGTERM);
	if (waitpid(h->pid, &st, 0) != h->pid)
		return -1;
	h->pid = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int rm_one(const char *p, const struct stat *sb, int type,
		  struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(p);
}

void simhost_cleanup(struct simhost *h)
{
	if (h->pid > 0)
		simhost_stop(h);
	if (h->tmp[0] && !getenv("XENSIM_KEEP"))
		nftw(h->tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	memset(h, 0, sizeof(*h));
}

static int redirect(const char *path, int fd)
{
	int f;

	if (!path)
		return 0;
	f = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (f < 0)
		return -1;
	dup2(f, fd);
	close(f);
	return 0;
}

int run_cmd(struct simhost *h, char *const argv[], const char *out,
	    const char *err)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (!pid) {
		if (redirect(out, 1) || redirect(err, 2))
			_exit(126);
		if (h) {
			const char *lib = getenv("XENSIM_LIBDIR");

			setenv("XENSIM_HOST", h->dir, 1);
			if (lib)
				setenv("LD_LIBRARY_PATH", lib, 1);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static uint64_t kv(const char *line, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(line, pat);
	return p ? strtoull(p + strlen(pat), NULL, 0) : 0;
}

int truth_load(const char *dir, struct truth *t)
{
	char path[512], line[512];
	size_t cap_run = 0, cap_cont = 0;
	FILE *f;

	memset(t, 0, sizeof(*t));
	snprintf(path, sizeof(path), "%s/truth", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "host ", 5)) {
			t->pcpus = kv(line, "pcpus");
			t->cpu_khz = kv(line, "cpu_khz");
		} else if (!strncmp(line, "stats ", 6)) {
			unsigned int p = kv(line, "pcpu");
			struct truth_stats *s;

			if (p >= 64)
				continue;
			s = &t->st[p];
			s->written = kv(line, "written");
			s->dropped = kv(line, "dropped");
			s->lost_reported = kv(line, "lost_reported");
			s->lost_cleared = kv(line, "lost_cleared");
			s->lost_pending = kv(line, "lost_pending");
			s->first_tsc = kv(line, "first_tsc");
			s->last_tsc = kv(line, "last_tsc");
		} else if (!strncmp(line, "run ", 4)) {
			struct truth_run r;
			int ws, we;
			unsigned long s, e;

			if (sscanf(line, "run %u %u %u %lu %lu %d %d", &r.dom,
				   &r.vcpu, &r.pcpu, &s, &e, &ws, &we) != 7)
				continue;
			r.start = s;
			r.end = e;
			r.ws = ws;
			r.we = we;
			if (t->nrun == cap_run) {
				void *n;

				cap_run = cap_run ? 2 * cap_run : 1024;
				n = realloc(t->run, cap_run * sizeof(r));
				if (!n)
					goto fail;
				t->run = n;
			}
			t->run[t->nrun++] = r;
		} else if (!strncmp(line, "open ", 5)) {
			struct truth_run r = { .end = 0, .we = false };
			unsigned long st;
			int ws;

			if (sscanf(line, "open %u %u %u %lu %d", &r.dom, &r.vcpu,
				   &r.pcpu, &st, &ws) != 5)
				continue;
			r.start = st;
			r.ws = ws;
			if (t->nrun == cap_run) {
				void *n;

				cap_run = cap_run ? 2 * cap_run : 1024;
				n = realloc(t->run, cap_run * sizeof(r));
				if (!n)
					goto fail;
				t->run = n;
			}
			t->run[t->nrun++] = r;
		} else if (!strncmp(line, "cont ", 5)) {
			struct truth_cont c;
			unsigned long ts;
			int w;

			if (sscanf(line, "cont %u %u %u %lu %d", &c.dom, &c.vcpu,
				   &c.pcpu, &ts, &w) != 5)
				continue;
			c.tsc = ts;
			c.w = w;
			if (t->ncont == cap_cont) {
				void *n;

				cap_cont = cap_cont ? 2 * cap_cont : 1024;
				n = realloc(t->cont, cap_cont * sizeof(c));
				if (!n)
					goto fail;
				t->cont = n;
			}
			t->cont[t->ncont++] = c;
		}
	}
	fclose(f);
	return t->pcpus ? 0 : -1;
fail:
	fclose(f);
	truth_free(t);
	return -1;
}

void truth_free(struct truth *t)
{
	free(t->run);
	free(t->cont);
	t->run = NULL;
	t->cont = NULL;
}

int run_shell(char *out, size_t len, const char *fmt, ...)
{
	char cmd[1200];
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

int dump_options(char *out, size_t len, const char *file)
{
	return run_shell(out, len, "trace-cmd dump --options -i '%s' 2>&1", file);
}

int64_t json_num(const char *from, const char *key)
{
	const char *p = strstr(from, key);

	if (!p)
		return -1;
	p += strlen(key);
	while (*p == '"' || *p == ':' || *p == ' ')
		p++;
	return strncmp(p, "null", 4) ? strtoll(p, NULL, 10) : -1;
}

bool report_ts(const char *line, const char *base, uint64_t *ns)
{
	const char *p = line, *b, *dot;
	char *end;
	uint64_t sec, frac;
	int digits;

	while (*p == ' ')
		p++;
	if (strncmp(p, base, strlen(base)) || p[strlen(base)] != ':')
		return false;
	b = strchr(p, ']');
	if (!b)
		return false;
	sec = strtoull(b + 1, &end, 10);
	if (*end != '.')
		return false;
	dot = end + 1;
	frac = strtoull(dot, &end, 10);
	digits = (int)(end - dot);
	if (*end != ':' || digits < 1 || digits > 9)
		return false;
	while (digits++ < 9)
		frac *= 10;
	*ns = sec * 1000000000ull + frac;
	return true;
}

int simhost_put(struct simhost *h, unsigned int domid, const char *file, const char *text)
{
	char path[460];
	FILE *f;

	snprintf(path, sizeof(path), "%s/dom%u/tracing/%s", h->dir, domid, file);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f) ? -1 : 0;
}

int simhost_boot(struct simhost *h, unsigned int domid)
{
	/*
	 * xensim stamps with the guest TSC but shows "[local]", as a fresh
	 * kernel; its guest directories wait for these tracefs writes
	 */
	if (simhost_put(h, domid, "trace_clock", "x86-tsc\n") ||
	    simhost_put(h, domid, "events/sched/enable", "1\n") ||
	    simhost_put(h, domid, "tracing_on", "1\n"))
		return -1;
	return 0;
}

pid_t simhost_agent(struct simhost *h, unsigned int domid)
{
	const char *bin = getenv("TCX_BIN"), *lib = getenv("XENSIM_LIBDIR");
	char tdir[400], log[460], env[16];
	pid_t pid;

	if (!bin)
		bin = "trace-cmd-xen";
	snprintf(tdir, sizeof(tdir), "%s/dom%u/tracing", h->dir, domid);
	snprintf(log, sizeof(log), "%s/agent%u.log", h->tmp, domid);
	snprintf(env, sizeof(env), "%u", domid);
	pid = fork();
	if (pid)
		return pid;
	if (!freopen(log, "w", stderr) || !freopen("/dev/null", "w", stdout))
		_exit(126);
	setenv("XENSIM_HOST", h->dir, 1);
	if (lib)
		setenv("LD_LIBRARY_PATH", lib, 1);
	setenv("XENSIM_DOMID", env, 1);
	execl(bin, bin, "agent", "--xen", "--tracing-dir", tdir, (char *)NULL);
	_exit(127);
}

/* tmsg's header on the include path: the test links the message layer too */
#if __has_include("tmsg.h")
#include "tmsg.h"

bool simhost_agent_ready(unsigned int domid, int tries, struct tmsg_xs_agent *a)
{
	struct tmsg_xs_agent x = { 0 };

	for (int t = 0; t < tries && !x.ready; t++) {
		if (tmsg_xs_lookup(domid, &x))
			x.ready = false;
		usleep(10 * 1000);
	}
	if (a)
		*a = x;
	return x.ready;
}
#endif
