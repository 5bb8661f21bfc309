// SPDX-License-Identifier: GPL-2.0
/* Tests: build a simulated guest kernel directory (see simkernel.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent-internal.h"
#include "simkernel.h"
#include "tdat.h"
#include "tlib.h"

/* The header_page of a 64-bit kernel, as tracefs shows it. */
static const char header_page[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

static int put_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int ok = fd >= 0 && write(fd, buf, len) == (ssize_t)len;

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static int mkdirs(const char *dir)
{
	static const char *const sub[] = {
		"", "/events", "/events/tcx", "/events/tcx/tick", "/per_cpu",
		"/per_cpu/cpu0", "/per_cpu/cpu1",
	};
	char path[512];

	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", dir, sub[i]);
		if (mkdir(path, 0755))
			return -1;
	}
	return 0;
}

int simk_create(const char *dir, struct simk_pages *pages)
{
	struct tdat_params par = { .version = 6, .page_size = 4096,
				   .max_cpus = SIMK_CPUS, .cpus = SIMK_CPUS };
	struct tdat_writer *w;
	char path[512];
	uint8_t *buf = NULL;
	size_t meta;
	struct stat st;
	int fd, ret = -1;

	memset(pages, 0, sizeof(*pages));
	if (mkdirs(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/events/tcx/tick/format", dir);
	if (put_file(path, tlib_tick_format, strlen(tlib_tick_format)))
		return -1;
	snprintf(path, sizeof(path), "%s/events/header_page", dir);
	if (put_file(path, header_page, strlen(header_page)))
		return -1;

	snprintf(path, sizeof(path), "%s/pages.dat", dir);
	w = tdat_open(path, &par);
	if (!w || tdat_add_event_format(w, "tcx", tlib_tick_format) ||
	    tdat_start_data(w))
		goto out;
	for (int i = 0; i < SIMK_PER_CPU; i++)
		for (int c = 0; c < SIMK_CPUS; c++) {
			uint8_t ev[12] = { 0x84, 0x03, 0, 0, 9, 0, 0, 0 };

			ev[8] = (uint8_t)(c * 100 + i);
			if (tdat_write_event(w, c, 5000 + i * 10, ev, 12))
				goto out;
		}
	ret = tdat_close(w);
	w = NULL;
	fd = ret ? -1 : open(path, O_RDONLY);
	ret = -1;
	if (fd < 0 || fstat(fd, &st) || !(buf = malloc(st.st_size)) ||
	    read(fd, buf, st.st_size) != st.st_size) {
		if (fd >= 0)
			close(fd);
		goto out;
	}
	close(fd);
	unlink(path);
	if (agent_meta_length(buf, st.st_size, 6, &meta))
		goto out;
	for (int c = 0; c < SIMK_CPUS; c++) {
		const uint8_t *e = buf + meta + 10 + 16 * c;
		uint64_t off = le64(e), len = le64(e + 8);

		if (off + len > (uint64_t)st.st_size)
			goto out;
		pages->data[c] = malloc(len);
		memcpy(pages->data[c], buf + off, len);
		pages->len[c] = len;
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw",
			 dir, c);
		if (put_file(path, buf + off, len))
			goto out;
	}
	ret = 0;
out:
	if (w)
		tdat_close(w);
	free(buf);
	if (ret)
		simk_free(pages);
	return ret;
}

void simk_free(struct simk_pages *pages)
{
	for (int c = 0; c < SIMK_CPUS; c++) {
		free(pages->data[c]);
		pages->data[c] = NULL;
	}
}
