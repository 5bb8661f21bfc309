// SPDX-License-Identifier: GPL-2.0
/*
 * The allowed record options, applied: events disabled (-v) and filtered
 * (-f), the tracer (-p) and its function lists (-l, -n, -g,
 * --max-graph-depth), the stack trace option (-T), libtracefs' log level
 * (--verbose) and the streams' pace and limit (-s, -m).
 *
 * On tracefs they go to our instance, which is destroyed at the end; the
 * few files an instance lacks (set_graph_function, max_graph_depth on most
 * kernels, /proc/sys/kernel/ftrace_enabled) are global: their text is saved
 * first and written back by agent_apply_restore(). A tracer only the top
 * instance offers (function_graph on Linux 6.1) is traced there, if the top
 * instance is idle: every top file the session may write is saved first and
 * written back at the end (agent_top_choose()). On a simulated kernel every
 * file written is saved and written back.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracefs.h>

#include "agent-internal.h"
#include "tcx-util.h"

#define FTRACE_ENABLED	"/proc/sys/kernel/ftrace_enabled"

enum saved_kind {
	SAVED_TEXT,	/* written back as read */
	SAVED_LIST,	/* a function list: "#..." (all functions) is empty */
	SAVED_CLOCK,	/* trace_clock: the [bracketed] one */
	SAVED_SIZE,	/* buffer_size_kb: its first number */
};

struct agent_saved {
	char *path;
	char *text;
	enum saved_kind kind;
};

static char *read_path(const char *path)
{
	char buf[8192];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return NULL;
	buf[n] = 0;
	return strdup(buf);
}

/* Write @text to @path in one write; 0 or -errno. */
static int write_path(const char *path, const char *text, bool append)
{
	size_t len = strlen(text);
	int fd = open(path, O_WRONLY | O_CLOEXEC | (append ? O_APPEND : O_TRUNC));
	ssize_t n;
	int e;

	if (fd < 0)
		return -errno;
	n = len ? write(fd, text, len) : 0;
	e = errno;
	close(fd);
	if (n < 0)
		return -e;
	return (size_t)n == len ? 0 : -EIO;
}

/* Keep @path's text for agent_apply_restore(), once per path. */
static int save(struct agent_trace *tr, const char *path, enum saved_kind kind)
{
	struct agent_saved *s;
	char *text;

	for (int i = 0; i < tr->nr_saved; i++)
		if (!strcmp(tr->saved[i].path, path))
			return 0;
	text = read_path(path);
	if (!text)
		return -errno ? -errno : -EIO;
	s = realloc(tr->saved, (tr->nr_saved + 1) * sizeof(*s));
	if (!s) {
		free(text);
		return -ENOMEM;
	}
	tr->saved = s;
	s += tr->nr_saved++;
	s->path = strdup(path);
	s->text = text;
	/* a simulated kernel's files are plain: written back as they were */
	s->kind = tr->sim_dir ? SAVED_TEXT : kind;
	if (s->kind == SAVED_CLOCK) {
		char *b = strchr(text, '['), *e = b ? strchr(b, ']') : NULL;

		if (b && e) {
			memmove(text, b + 1, (size_t)(e - b - 1));
			text[e - b - 1] = 0;
		}
	} else if (s->kind == SAVED_SIZE) {
		text[strspn(text, "0123456789")] = 0;
	}
	if (!s->path) {
		free(text);
		tr->nr_saved--;
		return -ENOMEM;
	}
	return 0;
}

void agent_apply_restore(struct agent_trace *tr)
{
	if (tr->top && !tr->sim_dir) {
		/* our records out of the top buffer, before its files */
		char *p = tracefs_get_tracing_file("trace");

		tracefs_trace_off(NULL);
		if (p && write_path(p, "", false))
			fprintf(stderr, "agent: could not clear %s\n", p);
		tracefs_put_tracing_file(p);
	}
	/* the latest first: a file saved twice keeps its first text */
	for (int i = tr->nr_saved - 1; i >= 0; i--) {
		struct agent_saved *s = &tr->saved[i];
		const char *text = s->kind == SAVED_LIST && s->text[0] == '#' ? "" : s->text;

		if (write_path(s->path, text, false))
			fprintf(stderr, "agent: could not restore %s\n", s->path);
		free(s->path);
		free(s->text);
	}
	free(tr->saved);
	tr->saved = NULL;
	tr->nr_saved = 0;
	tr->top = false;
	if (tr->loglevel_set)
		tracefs_set_loglevel(TEP_LOG_CRITICAL);
	tr->loglevel_set = false;
}

/* The path of @file in our instance (NULL: the top, or a simulated
 * kernel's directory); malloc'ed. */
static char *file_path(struct agent_trace *tr, bool top, const char *file)
{
	char *p = top || !tr->inst ? tracefs_get_tracing_file(file) :
		  tracefs_instance_get_file(tr->inst, file);
	char *copy = p ? strdup(p) : NULL;

	tracefs_put_tracing_file(p);
	return copy;
}

/*
 * Write @text to @file of the instance (@top: of the whole kernel; @append:
 * after what is there), saving it first where no instance's end will undo
 * it. Returns 0, -ENOENT if the kernel has no such file, or the write's
 * -errno (how the kernel answered).
 */
static int put(struct agent_trace *tr, bool top, const char *file,
	       const char *text, bool append)
{
	char *path = file_path(tr, top, file);
	int ret;

	if (!path)
		return -ENOMEM;
	if (access(path, F_OK)) {
		free(path);
		return -ENOENT;
	}
	if (top || !tr->inst) {
		ret = save(tr, path, strstr(file, "set_ftrace_") || strstr(file, "set_graph_") ?
			   SAVED_LIST : SAVED_TEXT);
		if (ret) {
			free(path);
			return ret;
		}
	}
	ret = write_path(path, text, append);
	free(path);
	return ret;
}

static bool exists(struct agent_trace *tr, bool top, const char *file)
{
	char *path = file_path(tr, top, file);
	bool ok = path && !access(path, F_OK);

	free(path);
	return ok;
}

typedef int (*match_fn)(struct agent_trace *tr, const char *sys,
			const char *ev, void *arg);

/* The names in @dir that are directories (NULL-terminated, malloc'ed). */
static char **list_dirs(const char *dir)
{
	struct dirent *d;
	char **v = NULL, **nv;
	int n = 0;
	DIR *dd = opendir(dir);

	if (!dd)
		return NULL;
	while ((d = readdir(dd))) {
		if (d->d_name[0] == '.' || strlen(d->d_name) >= 64 ||
		    (d->d_type != DT_DIR && d->d_type != DT_UNKNOWN))
			continue;
		nv = realloc(v, (n + 2) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		v[n] = strdup(d->d_name);
		if (v[n])
			n++;
		v[n] = NULL;
	}
	closedir(dd);
	if (!v)
		v = calloc(1, sizeof(*v));
	return v;
}

static void free_list(char **v)
{
	for (int i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static int match_system(struct agent_trace *tr, const char *events, const char *sys,
			const char *ep, match_fn fn, void *arg, int *found)
{
	char path[4096];
	char **evs;
	int ret = 0;

	snprintf(path, sizeof(path), "%s/%s", events, sys);
	evs = list_dirs(path);
	for (int j = 0; evs && evs[j] && !ret; j++) {
		if (fnmatch(ep, evs[j], 0))
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s/format", events, sys, evs[j]);
		if (access(path, R_OK))
			continue;
		++*found;
		ret = fn(tr, sys, evs[j], arg);
	}
	free_list(evs);
	return ret;
}

/* Every event @spec names, as -e does: "sys:ev", a system, else an event
 * (globs as fnmatch), listed from the kernel, never built from @spec. */
static int for_each_match(struct agent_trace *tr, const char *spec,
			  match_fn fn, void *arg, int *found)
{
	const char *colon = strchr(spec, ':');
	char sp[64], ep[64], events[4096];
	char **systems;
	int ret = 0;

	*found = 0;
	snprintf(events, sizeof(events), "%s/events", tracefs_tracing_dir());
	systems = list_dirs(events);
	if (!systems)
		return tcx_fail(-ENOENT, "cannot list %s: %s", events, strerror(errno));
	if (colon) {
		snprintf(sp, sizeof(sp), "%.*s", (int)(colon - spec), spec);
		snprintf(ep, sizeof(ep), "%s", colon + 1);
	} else {
		snprintf(sp, sizeof(sp), "%s", spec);
		snprintf(ep, sizeof(ep), "*");
	}
	for (int i = 0; systems[i] && !ret; i++)
		if (!fnmatch(sp, systems[i], 0))
			ret = match_system(tr, events, systems[i], ep, fn, arg, found);
	if (!colon && !ret && !*found)
		for (int i = 0; systems[i] && !ret; i++)
			ret = match_system(tr, events, systems[i], spec, fn, arg, found);
	free_list(systems);
	return ret;
}

static int event_file(char *buf, size_t len, const char *sys, const char *ev,
		      const char *file)
{
	int n = snprintf(buf, len, "events/%s/%s/%s", sys, ev, file);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* -v: disabled; on a simulated kernel also out of the metadata. */
static int disable_one(struct agent_trace *tr, const char *sys, const char *ev,
		       void *arg)
{
	char file[200];
	int ret = event_file(file, sizeof(file), sys, ev, "enable");

	if (ret)
		return ret;
	ret = put(tr, false, file, "0", false);
	if (ret == -ENOENT && tr->sim_dir)
		ret = 0;	/* a simulated kernel with its events always on */
	if (ret)
		return tcx_fail(ret, "-v %s:%s: cannot write its enable file: %s",
				sys, ev, strerror(-ret));
	for (int i = 0; i < tr->nr_events; i++)
		if (!strcmp(tr->events[i].system, sys) &&
		    !strcmp(tr->events[i].name, ev)) {
			tr->events[i] = tr->events[--tr->nr_events];
			break;
		}
	return 0;
}

/* A simulated kernel's events are enabled one by one, as -e matched them. */
static int enable_one(struct agent_trace *tr, const char *sys, const char *ev,
		      void *arg)
{
	char file[200];
	int ret = event_file(file, sizeof(file), sys, ev, "enable");

	if (ret)
		return ret;
	ret = put(tr, false, file, "1", false);
	if (ret == -ENOENT)
		return 0;	/* no enable file: always on */
	if (ret)
		return tcx_fail(ret, "-e %s:%s: cannot write its enable file: %s",
				sys, ev, strerror(-ret));
	return 0;
}

struct filter_try {
	const char *filter;
	int ok, err;
	char first[130];
};

static int filter_one(struct agent_trace *tr, const char *sys, const char *ev,
		      void *arg)
{
	struct filter_try *t = arg;
	char file[200];
	int ret = event_file(file, sizeof(file), sys, ev, "filter");

	if (ret)
		return ret;
	ret = put(tr, false, file, t->filter, false);
	if (!ret) {
		t->ok++;
	} else if (!t->err) {
		t->err = ret;
		snprintf(t->first, sizeof(t->first), "%s:%s", sys, ev);
	}
	return 0;
}

static int apply_events(struct agent_trace *tr, const struct agent_record_opts *o)
{
	int found, ret;

	/* a simulated kernel's default event, enabled as -e would */
	if (tr->sim_dir && !agent_opts_enabled(o) &&
	    (ret = for_each_match(tr, AGENT_DEFAULT_EVENT, enable_one, NULL, &found)))
		return ret;
	for (int i = 0; i < o->nr_events; i++) {
		const char *spec = o->events[i];

		if (o->exclude[i]) {
			ret = for_each_match(tr, spec, disable_one, NULL, &found);
			if (!ret && !found)
				ret = tcx_fail(-EINVAL, "-v: no event matches \"%s\"", spec);
			if (ret)
				return ret;
			continue;
		}
		if (o->filters[i][0]) {
			struct filter_try t = { .filter = o->filters[i] };

			ret = for_each_match(tr, spec, filter_one, &t, &found);
			if (ret)
				return ret;
			/* a system's events lacking the fields keep no filter,
			 * as when the system's filter file is written */
			if (!t.ok)
				return tcx_fail(-EINVAL, "-f \"%.64s\" on %s: the kernel "
						"refused it (%s)%s", o->filters[i],
						t.first[0] ? t.first : spec,
						strerror(t.err ? -t.err : ENOENT),
						t.err == -ENOENT ?
						": this kernel has no filter file" : "");
		}
		/* a simulated kernel traces at once: filtered before enabled */
		if (tr->sim_dir) {
			ret = for_each_match(tr, spec, enable_one, NULL, &found);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* Whether the space-separated @list has the word @w. */
static bool has_word(const char *list, const char *w)
{
	size_t n = strlen(w);

	for (const char *p = list; p && *p;) {
		p += strspn(p, " \n\t");
		if (!strncmp(p, w, n) && (!p[n] || strchr(" \n\t", p[n])))
			return true;
		p += strcspn(p, " \n\t");
	}
	return false;
}

static char *read_whole(struct agent_trace *tr, bool top, const char *file)
{
	char *path = file_path(tr, top, file);
	char *text = path ? read_path(path) : NULL;

	free(path);
	return text;
}

char *agent_trace_read(struct agent_trace *tr, const char *file)
{
	return read_whole(tr, false, file);
}

static char *read_file(struct agent_trace *tr, bool top, const char *file)
{
	char *text = read_whole(tr, top, file);

	if (text)
		text[strcspn(text, "\n")] = 0;
	return text;
}

/* The function tracers need ftrace_enabled (global: a sysctl). */
static int need_ftrace_enabled(struct agent_trace *tr)
{
	char *v = read_path(FTRACE_ENABLED);
	bool on = !v || v[0] != '0';	/* no such file: no such switch */
	int ret;

	free(v);
	if (on)
		return 0;
	ret = save(tr, FTRACE_ENABLED, SAVED_TEXT);
	if (!ret)
		ret = write_path(FTRACE_ENABLED, "1", false);
	if (ret)
		return tcx_fail(ret, "-p: " FTRACE_ENABLED " is 0 and this kernel "
				"denies writing it (%s): no function tracing here",
				strerror(-ret));
	return 0;
}

static const char *const func_files[AGENT_NR_FUNC_LISTS] = {
	"set_ftrace_filter", "set_ftrace_notrace", "set_graph_function",
};
static const char *const func_opts[AGENT_NR_FUNC_LISTS] = { "-l", "-n", "-g" };

/* -l, -n, -g: the instance's file, or the global one if it has none */
static int apply_funcs(struct agent_trace *tr, const struct agent_record_opts *o)
{
	for (int l = 0; l < AGENT_NR_FUNC_LISTS; l++) {
		const char *file = func_files[l];
		bool top;

		if (!o->nr_funcs[l])
			continue;
		top = !exists(tr, false, file);
		if (top && (!tr->inst || !exists(tr, true, file)))
			return tcx_fail(-ENOENT, "%s: this kernel has no %s",
					func_opts[l], file);
		for (int i = 0; i < o->nr_funcs[l]; i++) {
			int ret = put(tr, top, file, o->funcs[l][i], i > 0);

			if (ret == -EPERM || ret == -EACCES)
				return tcx_fail(ret, "%s %s: this kernel denies writes "
						"to %s%s (%s)", func_opts[l],
						o->funcs[l][i], top ? "the global " : "",
						file, strerror(-ret));
			if (ret)
				return tcx_fail(ret, "%s %s: %s refused it (%s): no "
						"such function?", func_opts[l],
						o->funcs[l][i], file, strerror(-ret));
		}
	}
	return 0;
}

static int apply_tracer(struct agent_trace *tr, const struct agent_record_opts *o)
{
	bool function = !strncmp(o->tracer, "function", 8);
	int ret;

	if (o->graph_depth >= 0) {
		char v[16];
		bool t = !exists(tr, false, "max_graph_depth");

		snprintf(v, sizeof(v), "%d", o->graph_depth);
		ret = t && !tr->inst ? -ENOENT : put(tr, t, "max_graph_depth", v, false);
		if (ret)
			return tcx_fail(ret, "--max-graph-depth: %s%s: %s",
					t ? "the global " : "", "max_graph_depth",
					ret == -ENOENT ? "this kernel has none" : strerror(-ret));
	}
	if (!o->tracer[0] || !strcmp(o->tracer, "nop"))
		return 0;
	if (function && !tr->sim_dir && (ret = need_ftrace_enabled(tr)))
		return ret;
	ret = put(tr, false, "current_tracer", o->tracer, false);
	if (ret)
		return tcx_fail(ret, "-p %s: the kernel refused it in current_tracer "
				"(%s)%s", o->tracer, strerror(-ret),
				ret == -EPERM ? ": this kernel denies function "
				"tracing (ftrace_enabled or lockdown)" : "");
	return 0;
}

/* -p: a tracer our instance (or the top one, agent_top_choose()) offers,
 * checked before its lists are set. */
static int check_tracer(struct agent_trace *tr, const struct agent_record_opts *o)
{
	char *here;
	int ret = 0;

	if (!o->tracer[0] || !strcmp(o->tracer, "nop"))
		return 0;
	here = read_file(tr, false, "available_tracers");
	if (!here || !has_word(here, o->tracer))
		ret = tcx_fail(-EOPNOTSUPP, "-p %s: this kernel has no such "
			       "tracer (available_tracers: %s)", o->tracer,
			       here ? here : "none");
	free(here);
	return ret;
}

/* Whether an event is on in the simulated kernel's events/<sys>/<ev>/enable
 * (ftrace's own are always on); its name in @why. */
static bool sim_event_on(struct agent_trace *tr, char *why, size_t len)
{
	char path[4096];
	char **systems, **evs;
	bool on = false;

	snprintf(path, sizeof(path), "%s/events", tr->sim_dir);
	systems = list_dirs(path);
	for (int i = 0; systems && systems[i] && !on; i++) {
		if (!strcmp(systems[i], "ftrace"))
			continue;
		snprintf(path, sizeof(path), "%s/events/%s", tr->sim_dir, systems[i]);
		evs = list_dirs(path);
		for (int j = 0; evs && evs[j] && !on; j++) {
			char *v;

			snprintf(path, sizeof(path), "%s/events/%s/%s/enable",
				 tr->sim_dir, systems[i], evs[j]);
			v = read_path(path);
			if (v && v[0] == '1') {
				on = true;
				snprintf(why, len, "event %s:%s is enabled",
					 systems[i], evs[j]);
			}
			free(v);
		}
		free_list(evs);
	}
	free_list(systems);
	return on;
}

/* Whether someone uses the top instance: a tracer, or events on; what, in
 * @why. Its tracing_on alone is no use: it is saved and written back. */
static bool top_busy(struct agent_trace *tr, char *why, size_t len)
{
	char *t = read_file(tr, true, "current_tracer");
	bool busy = false;

	if (t && t[0] && strcmp(t, "nop")) {
		snprintf(why, len, "its current_tracer is %s", t);
		busy = true;
	}
	free(t);
	if (busy)
		return true;
	t = read_file(tr, true, "set_event");
	if (t && t[0]) {
		snprintf(why, len, "events are enabled in it (set_event: %.64s ...)", t);
		busy = true;
	}
	free(t);
	if (!busy && tr->sim_dir)
		busy = sim_event_on(tr, why, len);
	return busy;
}

/* Save every top file a session there may write, before writing any. */
static int save_top(struct agent_trace *tr, const struct agent_record_opts *o)
{
	static const struct {
		const char *file;
		enum saved_kind kind;
	} files[] = {
		{ "tracing_on", SAVED_TEXT },
		{ "current_tracer", SAVED_TEXT },
		{ "set_event", SAVED_TEXT },
		{ "set_ftrace_filter", SAVED_LIST },
		{ "set_ftrace_notrace", SAVED_LIST },
		{ "set_graph_function", SAVED_LIST },
		{ "set_graph_notrace", SAVED_LIST },
		{ "max_graph_depth", SAVED_TEXT },
		{ "options/stacktrace", SAVED_TEXT },
		{ "trace_clock", SAVED_CLOCK },
		{ "buffer_size_kb", SAVED_SIZE },
	};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		enum saved_kind kind = files[i].kind;
		char *path;
		int ret;

		/* the buffer's size only if -b changes it: writing it back
		 * would allocate a buffer the kernel had not expanded yet */
		if (kind == SAVED_SIZE && !o->buffer_kb && !o->max_kb)
			continue;
		path = file_path(tr, true, files[i].file);
		if (!path)
			return tcx_fail(-ENOMEM, "out of memory");
		ret = access(path, F_OK) ? 0 : save(tr, path, kind);
		if (ret)
			tcx_fail(ret, "-p %s: cannot save the top instance's %s: %s",
				 o->tracer, files[i].file, strerror(-ret));
		free(path);
		if (ret)
			return ret;
	}
	return 0;
}

int agent_top_choose(struct agent_trace *tr, const struct agent_record_opts *o)
{
	char why[200];
	char *here, *top;
	bool want;
	int ret;

	if (!o->tracer[0] || !strcmp(o->tracer, "nop") || tr->top)
		return 0;
	/* a simulated kernel models its instances by instance_tracers */
	here = tr->sim_dir ? read_file(tr, true, "instance_tracers") :
	       tr->inst ? read_file(tr, false, "available_tracers") : NULL;
	if (!here)
		return 0;
	top = read_file(tr, true, "available_tracers");
	want = !has_word(here, o->tracer) && top && has_word(top, o->tracer);
	free(here);
	free(top);
	if (!want)
		return 0;	/* ours, or nobody's: check_tracer() says */
	if (top_busy(tr, why, sizeof(why)))
		return tcx_fail(-EBUSY, "-p %s: this kernel offers that tracer in "
				"its top instance only, and the top instance is in "
				"use: %s; the agent traces there only when it is idle",
				o->tracer, why);
	ret = save_top(tr, o);
	if (ret) {
		agent_apply_restore(tr);
		return ret;
	}
	if (tr->inst) {
		tracefs_instance_destroy(tr->inst);
		tracefs_instance_free(tr->inst);
		tr->inst = NULL;
	}
	tr->top = true;
	return 0;
}

/*
 * A simulated kernel traces from its boot: what its buffers hold was made
 * before our filters and events, so reset them as a record does and wait
 * (up to 2 s) until the simulator says it has, by the text coming back.
 */
static int sim_reset(struct agent_trace *tr)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/trace", tr->sim_dir);
	if (access(path, F_OK))
		return 0;	/* a simulator without the file: nothing to reset */
	if (write_path(path, "", false))
		return tcx_fail(-EIO, "cannot reset the buffers: %s", path);
	for (int i = 0; i < 200; i++) {
		char *v = read_path(path);
		bool back = v && v[0];

		free(v);
		if (back)
			return 0;
		usleep(10000);
	}
	fprintf(stderr, "agent: %s: the simulator did not reset its buffers; "
		"older events may be recorded\n", path);
	return 0;
}

int agent_apply(struct agent_trace *tr, const struct agent_record_opts *o)
{
	int ret;

	tr->sleep_us = o->sleep_us;
	tr->max_kb = o->max_kb;
	if (o->verbose >= 0) {
		tracefs_set_loglevel((enum tep_loglevel)o->verbose);
		tr->loglevel_set = true;
	}
	ret = tr->sim_dir ? agent_top_choose(tr, o) : 0;
	if (!ret)
		ret = apply_events(tr, o);
	if (!ret && o->stacktrace) {
		ret = tr->inst ? tracefs_option_enable(tr->inst, TRACEFS_OPTION_STACKTRACE) :
		      put(tr, false, "options/stacktrace", "1", false);
		if (ret)
			ret = tcx_fail(-EOPNOTSUPP, "-T: options/stacktrace: %s",
				       tr->sim_dir ? "this simulated kernel has none" :
				       "the kernel refused it");
	}
	if (!ret)
		ret = check_tracer(tr, o);
	if (!ret)
		ret = apply_funcs(tr, o);
	if (!ret)
		ret = apply_tracer(tr, o);
	if (!ret && tr->sim_dir && agent_buffer_kb(o)) {
		char kb[16];

		/* before the reset: the simulator sizes its rings by it */
		snprintf(kb, sizeof(kb), "%u", agent_buffer_kb(o));
		ret = put(tr, false, "buffer_size_kb", kb, false);
		if (ret)
			ret = tcx_fail(ret, "cannot set a %s KiB buffer: %s", kb,
				       strerror(-ret));
	}
	if (!ret && tr->sim_dir)
		ret = sim_reset(tr);
	return ret;
}

unsigned int agent_buffer_kb(const struct agent_record_opts *o)
{
	return o->max_kb ? o->max_kb : o->buffer_kb;
}
