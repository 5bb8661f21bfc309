// SPDX-License-Identifier: GPL-2.0
/*
 * Filling a writer from a live tracefs instance: trace-cmd's -e and the
 * formats of what an instance has on. The agent (a guest's ftrace) and the
 * recorder (dom0's) record local instances the same way.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracefs.h>

#include "tdat-internal.h"

/* "sched*" -> "^sched.*$": libtracefs matches regexes, trace-cmd globs. */
static void glob_regex(char *dst, size_t len, const char *s, size_t n)
{
	size_t o = 0;

	dst[o++] = '^';
	for (size_t i = 0; i < n && o + 3 < len; i++) {
		if (s[i] == '*') {
			dst[o++] = '.';
			dst[o++] = '*';
		} else {
			dst[o++] = s[i];
		}
	}
	dst[o++] = '$';
	dst[o] = 0;
}

void tdat_remove_stale_instances(const char *prefix, FILE *log, const char *who)
{
	const char *top = tracefs_tracing_dir();
	size_t plen = strlen(prefix);
	char path[512];
	struct dirent *d;
	DIR *dir;

	if (!top)
		return;
	snprintf(path, sizeof(path), "%s/instances", top);
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		char *end;
		long pid;

		if (strncmp(d->d_name, prefix, plen))
			continue;
		pid = strtol(d->d_name + plen, &end, 10);
		if (pid <= 0 || (*end && *end != '-'))
			continue;
		if (!kill((pid_t)pid, 0) || errno != ESRCH)
			continue;	/* its owner still runs */
		snprintf(path, sizeof(path), "%s/instances/%s", top, d->d_name);
		if (!rmdir(path) && log)
			fprintf(log, "%s: removed stale instance %s (its owner is gone)\n",
				who, d->d_name);
	}
	closedir(dir);
}

int tdat_enable_event(struct tracefs_instance *inst, const char *spec)
{
	const char *colon = strchr(spec, ':');
	char sys[160], name[160];

	if (colon) {
		glob_regex(sys, sizeof(sys), spec, colon - spec);
		glob_regex(name, sizeof(name), colon + 1, strlen(colon + 1));
		return tracefs_event_enable(inst, sys, name);
	}
	glob_regex(name, sizeof(name), spec, strlen(spec));
	if (!tracefs_event_enable(inst, name, NULL))
		return 0;
	return tracefs_event_enable(inst, NULL, name);
}

int tdat_add_tracefs_format(struct tdat_writer *w, const char *system, const char *event)
{
	int size, ret;
	char *fmt = tracefs_event_file_read(NULL, system, event, "format", &size);

	if (!fmt)
		return tdat_err(w, -ENOENT, "no format for event %s:%s in tracefs", system, event);
	ret = !strcmp(system, "ftrace") ? tdat_add_ftrace_format(w, fmt)
					: tdat_add_event_format(w, system, fmt);
	free(fmt);
	return ret;
}

int tdat_add_ftrace_formats(struct tdat_writer *w)
{
	char **events = tracefs_system_events(NULL, "ftrace");
	int n = 0;

	for (int i = 0; events && events[i]; i++)
		n += !tdat_add_tracefs_format(w, "ftrace", events[i]);
	tracefs_list_free(events);
	return n;
}

int tdat_add_instance_formats(struct tdat_writer *w, struct tracefs_instance *inst)
{
	char *list = tracefs_instance_file_read(inst, "set_event", NULL);
	char *save = NULL, *line;
	int n = 0;

	if (!list)
		return tdat_err(w, -EIO, "cannot read the instance's set_event");
	for (line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':');

		if (!colon)
			continue;
		*colon = 0;
		n += !tdat_add_tracefs_format(w, line, colon + 1);
	}
	free(list);
	tdat_add_ftrace_formats(w);
	return n ? n : tdat_err(w, -ENOENT, "no format of the enabled events could be read");
}

int tdat_add_saved_cmdlines(struct tdat_writer *w)
{
	int size = 0;
	char *text = tracefs_instance_file_read(NULL, "saved_cmdlines", &size);
	int ret = text && size > 0 ? tdat_add_cmdlines(w, text, (size_t)size) : 0;

	free(text);
	return ret;
}
