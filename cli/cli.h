/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The trace-cmd-xen command line: one function per subcommand, a thin front
 * over the libraries. Exit codes follow trace-cmd: 0 ok, 1 failure, 2 usage.
 */
#ifndef CLI_H
#define CLI_H

#include <stddef.h>

#define CLI_EXIT_OK	0
#define CLI_EXIT_FAIL	1
#define CLI_EXIT_USAGE	2

/* Each takes argv with argv[0] = the subcommand name. */
int cmd_convert(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_analyze(int argc, char **argv);

/* Print "trace-cmd-xen <cmd>: <message>" on stderr. */
void cli_err(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The agent's and the recorder's shared secret for TCP/vsock. */
#define CLI_SECRET_MIN		16
#define CLI_SECRET_MAX		256

/*
 * cli_read_secret - a secret file's bytes without trailing newlines into
 * @buf (CLI_SECRET_MAX + 1 bytes)
 *
 * Returns 0; -EINVAL unless CLI_SECRET_MIN..CLI_SECRET_MAX of them, -EPERM
 * if group or others may read the file (mode & 077), or -errno; the
 * message, which names the file, in tcx_error().
 */
int cli_read_secret(const char *path, unsigned char *buf, size_t *len);

#endif /* CLI_H */
