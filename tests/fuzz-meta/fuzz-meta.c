// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the agent's metadata walker (recorder/rec-guest-meta.c):
 * arbitrary bytes through rec_guest_meta_check() without a writer, then
 * into a trace.dat writer (a scratch file, closed at once).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tdat.h"
#include "rec-guest-local.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	struct tdat_params p = { .version = 7, .page_size = 4096, .cpus = 2 };
	struct rec_guest_meta_info info;
	struct tdat_writer *w;

	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/fuzz-meta-%d.dat", (int)getpid());
	if (rec_guest_meta_check(data, size, NULL, &info))
		return 0;
	w = tdat_open(path, &p);
	if (!w)
		abort();
	rec_guest_meta_check(data, size, w, &info);
	tdat_close(w);
	unlink(path);
	return 0;
}
