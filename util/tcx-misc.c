// SPDX-License-Identifier: GPL-2.0
/*
 * JSON strings and the monotonic clock.
 */
#include <stdio.h>
#include <time.h>

#include "tcx-util.h"

void tcx_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

uint64_t tcx_clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t tcx_now_ns(void)
{
	return tcx_clock_ns(CLOCK_MONOTONIC);
}
