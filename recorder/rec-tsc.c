// SPDX-License-Identifier: GPL-2.0
/*
 * TSC frequency and the TSC2NSEC conversion, in integers only: a rounded
 * Hz or a float would put a fixed relative error on every timestamp
 * (xenalyze's truncated qhz is 0.024 % off at 2.4 GHz).
 */
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "recorder-internal.h"

#define MAX_HZ	(1ull << 40)

int rec_parse_hz(const char *s, uint64_t *hz)
{
	unsigned __int128 v = 0;
	uint64_t scale = 1, frac_div = 1;
	bool digits = false, dot = false;
	const char *p = s;

	if (!s)
		return -EINVAL;
	for (; *p; p++) {
		if (isdigit((unsigned char)*p)) {
			if (v > MAX_HZ * 1000000000ull || frac_div > 1000000000000ull)
				return -EINVAL;
			v = v * 10 + (*p - '0');
			if (dot)
				frac_div *= 10;
			digits = true;
		} else if (*p == '.' && !dot) {
			dot = true;
		} else {
			break;
		}
	}
	if (!digits)
		return -EINVAL;
	switch (*p) {
	case 'k': case 'K': scale = 1000ull; p++; break;
	case 'm': case 'M': scale = 1000000ull; p++; break;
	case 'g': case 'G': scale = 1000000000ull; p++; break;
	default: break;
	}
	if (*p && strcasecmp(p, "hz"))
		return -EINVAL;
	v *= scale;
	/* A fraction of a Hz is not a frequency Xen calibrates to. */
	if (v % frac_div)
		return -EINVAL;
	v /= frac_div;
	if (v == 0 || v > MAX_HZ)
		return -EINVAL;
	*hz = (uint64_t)v;
	return 0;
}

int rec_tsc2nsec(uint64_t hz, uint32_t *mult, uint32_t *shift)
{
	/* trace-cmd computes (ts * mult) >> shift in two 32-bit halves with
	 * a "<< (32 - shift)", so shift must stay <= 32. */
	for (int s = 32; s >= 0; s--) {
		unsigned __int128 m = (((unsigned __int128)1000000000u << s) + hz / 2) / hz;

		if (m <= UINT32_MAX && m > 0) {
			*mult = (uint32_t)m;
			*shift = s;
			return 0;
		}
	}
	return -ERANGE;
}
