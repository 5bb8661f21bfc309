// SPDX-License-Identifier: GPL-2.0
/* Files: scratch paths, reading back, looking for a line. */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tlib.h"

char *tlib_path(const char *dir, const char *name)
{
	static char buf[32][512];
	static int i;

	/* "" would put the file in / (a temp dir read before it was made) */
	if (!dir || !dir[0]) {
		fprintf(stderr, "tlib_path: no directory for %s\n", name);
		abort();
	}
	i = (i + 1) % 32;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

char *tlib_slurp(const char *file, size_t *len)
{
	FILE *f = fopen(file, "rb");
	size_t n = 0, cap = 0;
	char *buf = NULL;

	if (!f)
		return NULL;
	for (;;) {
		size_t r;

		if (cap - n < 4096) {
			char *b = realloc(buf, cap ? 2 * cap : 65536);

			if (!b) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = b;
			cap = cap ? 2 * cap : 65536;
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		if (!r)
			break;
		n += r;
	}
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

const char *tlib_show(const char *file)
{
	char *s = tlib_slurp(file, NULL), *save, *l;

	for (l = s ? strtok_r(s, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save))
		printf("#   %s\n", l);
	free(s);
	return file;
}

bool tlib_dio_offered(const char *dir)
{
	char *path = tlib_path(dir, "dio-probe");
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	struct statx sx;
	bool ok;

	if (fd < 0)
		return false;
	ok = !statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) &&
	     (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align &&
	     4096 % sx.stx_dio_offset_align == 0 && sx.stx_dio_mem_align &&
	     4096 % sx.stx_dio_mem_align == 0;
	close(fd);
	unlink(path);
	return ok;
}

bool tlib_file_has(const char *file, const char *needle)
{
	char *s = tlib_slurp(file, NULL);
	bool has = s && strstr(s, needle);

	free(s);
	if (!has)
		printf("# %s lacks \"%s\":\n", tlib_show(file), needle);
	return has;
}

int tlib_count_lines(const char *file, const char *needle)
{
	char line[4096];
	FILE *f = fopen(file, "r");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

int tlib_write_file(const char *file, const char *text)
{
	FILE *f = fopen(file, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f) ? -1 : 0;
}

static int rm_one(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(p);
}

int tlib_rmtree(const char *dir)
{
	if (!dir[0])
		return 0;
	return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) ? -1 : 0;
}

const char tlib_tick_format[] =
	"name: tick\n"
	"ID: 900\n"
	"format:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:unsigned int n;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\n"
	"print fmt: \"n=%u\", REC->n\n";

int tlib_dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		printf("# in %s: %s\n", dir, e->d_name);
		n++;
	}
	closedir(d);
	return n;
}
