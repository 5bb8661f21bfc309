/* SPDX-License-Identifier: GPL-2.0 */
/* Test-only libxenvchan/libxenstore stand-in (mock-xen.c). */
#ifndef MOCK_XEN_H
#define MOCK_XEN_H

#include <stdbool.h>

#define MOCK_DOMID	5
#define MOCK_DOMID_STR	"5"

/* Forget every xenstore node. */
void mock_xen_reset(void);
/* Whether a vchan server is registered at @path. */
bool mock_vchan_exists(const char *path);

#endif /* MOCK_XEN_H */
