// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for tdat's check of a guest's ring-buffer page
 * (tdat/tdat-page.c, page_check()): arbitrary 4 KiB pages through
 * tdat_write_page(), for 8- and 4-byte longs (the first byte chooses).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tdat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	struct tdat_params p = { .version = 7, .page_size = 4096, .cpus = 1 };
	static uint8_t page[4096];
	struct tdat_writer *w;
	int long_size;

	if (size < 1)
		return 0;
	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/fuzz-page-%d.dat", (int)getpid());
	long_size = data[0] & 1 ? 4 : 8;
	data++;
	size--;
	w = tdat_open(path, &p);
	if (!w)
		abort();
	if (long_size == 4) {
		size_t n;
		char *hp = tdat_header_page_text(4096, 4, &n);

		if (!hp || tdat_set_header_page(w, hp, n))
			abort();
		free(hp);
	}
	if (tdat_start_data(w))
		abort();
	/* every whole page of the input, the rest zero-padded */
	do {
		size_t n = size < sizeof(page) ? size : sizeof(page);

		memset(page, 0, sizeof(page));
		memcpy(page, data, n);
		tdat_write_page(w, 0, page);
		data += n;
		size -= n;
	} while (size);
	tdat_close(w);
	unlink(path);
	return 0;
}
