// SPDX-License-Identifier: GPL-2.0
/*
 * The shared secret of TCP/vsock sessions, read the same way by the agent
 * and the recorder.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "cli.h"

int cli_read_secret(const char *path, unsigned char *buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, CLI_SECRET_MAX + 1);
	close(fd);
	if (n < 0)
		return -errno;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	if (n <= 0 || n > CLI_SECRET_MAX)
		return -EINVAL;
	*len = (size_t)n;
	return 0;
}
