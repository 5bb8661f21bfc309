// SPDX-License-Identifier: GPL-2.0
/*
 * JSON strings, the monotonic clock and IDs.
 */
#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

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

/* splitmix64's finaliser: spreads the clock's and the pid's few bits */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t tcx_unique_id(void)
{
	static const unsigned int flags[] = { GRND_INSECURE, GRND_NONBLOCK };
	static _Atomic uint64_t seq;
	uint64_t id = 0;

	/*
	 * Never getrandom() without flags: it waits for the kernel's pool,
	 * which in a fresh guest without a hardware RNG (Xen under QEMU, a
	 * minimal VM) takes seconds, with no bound; an ID needs no secrecy.
	 */
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]) && !id; i++)
		if (getrandom(&id, sizeof(id), flags[i]) != sizeof(id))
			id = 0;
	if (!id)
		id = mix64(tcx_clock_ns(CLOCK_REALTIME) ^
			   mix64((uint64_t)getpid() << 32 ^ tcx_now_ns()) ^
			   mix64(++seq));
	return id ? id : 1;
}
