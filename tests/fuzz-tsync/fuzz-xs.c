// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the xenstore values dom0 and the agent read
 * (tmsg_xs_parse_text(), tmsg_xs_parse_id()): the input, unterminated, as
 * xs_read() would hand it over. What is accepted as text is exactly the
 * value, NUL-terminated, without a NUL or a control byte inside; what is
 * accepted as a number is plain decimal within its bound.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t lens[] = { 1, 16, 64, 128 };
	unsigned int n = (unsigned int)size, id = 0, v = 0;
	char *val = malloc(size ? size : 1), buf[128];

	if (!val)
		abort();
	memcpy(val, data, size);
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		if (tmsg_xs_parse_text(val, n, buf, lens[k]) == 0) {
			if (n >= lens[k] || memcmp(buf, val, n) || buf[n])
				abort();
			for (unsigned int i = 0; i < n; i++)
				if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
					abort();
		} else if (buf[0]) {
			abort();
		}
	}
	if (tmsg_xs_parse_id(val, n, TMSG_XS_DOMID_MAX, &id) == 0) {
		if (!n || id > TMSG_XS_DOMID_MAX)
			abort();
		for (unsigned int i = 0; i < n; i++) {
			if (val[i] < '0' || val[i] > '9')
				abort();
			v = v * 10 + (unsigned int)(val[i] - '0');
			if (v > TMSG_XS_DOMID_MAX)
				abort();	/* accepted above its bound */
		}
		if (v != id)
			abort();
	}
	free(val);
	return 0;
}
