// SPDX-License-Identifier: GPL-2.0
/* Reading what the stock trace-cmd and xenalyze print, and our summary JSON. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlib.h"

int tlib_dump_options(char *out, size_t len, const char *file)
{
	return tlib_capture(out, len, "trace-cmd dump --options -i '%s' 2>&1", file);
}

int tlib_time_shift(const char *file, uint64_t peer, struct tlib_shift *s, size_t max,
		    char *text, size_t len)
{
	char id[64], *copy, *save, *l;
	int n = 0;

	if (tlib_dump_options(text, len, file))
		return -1;
	snprintf(id, sizeof(id), "0x%llx [peer", (unsigned long long)peer);
	if (!strstr(text, "Option TimeShift") || (peer && !strcasestr(text, id)))
		return -2;
	/* the caller keeps the text whole for its messages */
	copy = strdup(text);
	if (!copy)
		return -1;
	for (l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		struct tlib_shift x = { 0 };
		long long o = 0;
		unsigned long long mul = 0, frac = 0, t = 0;

		if (!strstr(l, "[offset * scaling"))
			continue;
		x.fields = sscanf(l, " %lld %llu %llu %llu", &o, &mul, &frac, &t);
		if (x.fields < 0)
			x.fields = 0;
		x = (struct tlib_shift){ .offset = o, .scaling = mul, .frac = frac, .ts = t,
					 .fields = x.fields };
		if ((size_t)n < max)
			s[n] = x;
		n++;
	}
	free(copy);
	return n;
}

int tlib_markers(const char *report, struct tlib_markers *m)
{
	FILE *f = fopen(report, "r");
	char line[512];

	*m = (struct tlib_markers){ -1, -1, 0 };
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "tcxm ");
		long v;

		if (!p)
			continue;
		v = strtol(p + 5, NULL, 10);
		if (m->first < 0 || v < m->first)
			m->first = v;
		if (v > m->last)
			m->last = v;
		m->n++;
	}
	fclose(f);
	return 0;
}

long tlib_cpu_kb_max(const char *file)
{
	char cmd[1200], line[512];
	long max = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "trace-cmd dump --flyrecord -i '%s' 2>&1", file);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	/* "   CPU OFFSET SIZE [id, data offset and size]" */
	while (fgets(line, sizeof(line), f)) {
		unsigned long long off, size;
		int cpu;

		if (strstr(line, "[id, data offset and size]") &&
		    sscanf(line, "%d %llu %llu", &cpu, &off, &size) == 3 &&
		    (long)(size / 1024) > max)
			max = (long)(size / 1024);
	}
	return pclose(f) ? -1 : max;
}

bool tlib_report_ts(const char *line, const char *base, uint64_t *ns)
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

int64_t tlib_json_num(const char *from, const char *key)
{
	const char *p = strstr(from, key);

	if (!p)
		return -1;
	p += strlen(key);
	while (*p == '"' || *p == ':' || *p == ' ')
		p++;
	return strncmp(p, "null", 4) ? strtoll(p, NULL, 10) : -1;
}

int tlib_xenalyze_reread(const char *err)
{
	char *s = tlib_slurp(err, NULL), *save, *l;
	uint64_t done = 0;
	int again = -1, cpu;

	for (l = s ? strtok_r(s, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
		if (sscanf(l, "read_record: read returned zero, deactivating pcpu %d", &cpu) == 1 &&
		    cpu >= 0 && cpu < 64)
			done |= 1ull << cpu;
		else if (sscanf(l, "scan_for_new_pcpu: Activating pcpu %d at offset", &cpu) == 1 &&
			 cpu >= 0 && cpu < 64 && (done >> cpu & 1))
			again = cpu;
	}
	free(s);
	return again;
}

int tlib_xenalyze(const char *bin, uint64_t hz, const char *sum, bool may_retry)
{
	char err[600];
	int ret, cpu;

	snprintf(err, sizeof(err), "%s.err", sum);
	ret = tlib_sh("xenalyze --cpu-hz=%" PRIu64 " -s '%s' > '%s' 2> '%s'", hz, bin, sum, err);
	cpu = tlib_xenalyze_reread(err);
	if (!ret && cpu < 0)
		return 0;
	if (may_retry && cpu >= 0) {
		printf("# retried: xenalyze read pCPU %d's last window twice (its defect, not the "
		       "capture's): a new capture\n", cpu);
		return 1;
	}
	printf("# xenalyze %s (%d); its stderr, %s:\n",
	       cpu >= 0 ? "read a pCPU's last window twice" : "failed", ret, err);
	tlib_show(err);
	return -1;
}
