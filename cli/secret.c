// SPDX-License-Identifier: GPL-2.0
/*
 * The shared secret of TCP/vsock sessions, read the same way by the agent
 * and the recorder. It keys the challenge-response (protocol/tmsg-auth.c),
 * so it must be long enough not to be guessed from a recorded exchange,
 * and readable by its owner alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "tcx-util.h"

int cli_read_secret(const char *path, unsigned char *buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	struct stat st;
	int ret = 0;

	if (fd < 0)
		return tcx_fail(-errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st)) {
		ret = tcx_fail(-errno, "%s: %s", path, strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		ret = tcx_fail(-EINVAL, "%s: not a regular file", path);
	} else if (st.st_mode & 077) {
		ret = tcx_fail(-EPERM, "%s can be read by others than its owner "
			       "(mode %03o): chmod 600 %s", path,
			       (unsigned int)(st.st_mode & 0777), path);
	}
	while (!ret && n < CLI_SECRET_MAX + 1) {
		ssize_t got = read(fd, buf + n, CLI_SECRET_MAX + 1 - n);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			ret = tcx_fail(-errno, "%s: %s", path, strerror(errno));
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	if (ret)
		return ret;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	if (n < CLI_SECRET_MIN || n > CLI_SECRET_MAX) {
		explicit_bzero(buf, n);
		return tcx_fail(-EINVAL, "%s: a secret must hold %d to %d bytes "
				"(without its trailing newline), not %zu%s", path,
				CLI_SECRET_MIN, CLI_SECRET_MAX, n,
				n > CLI_SECRET_MAX ? " or more" : "");
	}
	*len = n;
	return 0;
}
