// SPDX-License-Identifier: GPL-2.0
/*
 * libxenstore.so.4 on xensim. Requests go to the simulated host's store;
 * watch events arrive on a pipe, which is what xs_fileno() returns.
 * Domain management calls (introduce, release, ...) are for the toolstack
 * and fail here.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xenstore.h>
#include <xen/io/xs_wire.h>

#include "xsim-client.h"

struct xs_handle {
	struct xsim_conn conn;
};

struct xs_handle *xs_open(unsigned long flags)
{
	struct xs_handle *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	if (xsim_conn_open(&h->conn, XSIM_KIND_XS)) {
		free(h);
		return NULL;
	}
	return h;
}

void xs_close(struct xs_handle *xsh)
{
	if (!xsh)
		return;
	xsim_conn_close(&xsh->conn);
	free(xsh);
}

struct xs_handle *xs_daemon_open(void)
{
	return xs_open(0);
}

struct xs_handle *xs_domain_open(void)
{
	return xs_open(0);
}

struct xs_handle *xs_daemon_open_readonly(void)
{
	return xs_open(XS_OPEN_READONLY);
}

void xs_daemon_close(struct xs_handle *h)
{
	xs_close(h);
}

void xs_daemon_destroy_postfork(struct xs_handle *h)
{
	xsim_conn_close(&h->conn);
	free(h);
}

/* One request; the reply's payload is returned malloc'ed (NUL-ended). */
static void *request(struct xs_handle *h, unsigned int type, const char *path,
		     const void *arg, unsigned int arglen, unsigned int *outlen)
{
	struct xsim_msg m = { .op = XSIM_OP_XS };
	size_t plen = strlen(path) + 1;
	uint8_t *req, *out;
	int ret;

	if (plen + arglen > XSIM_MSG_MAX) {
		errno = E2BIG;
		return NULL;
	}
	req = malloc(plen + arglen);
	out = malloc(XSIM_MSG_MAX + 1);
	if (!req || !out) {
		free(req);
		free(out);
		errno = ENOMEM;
		return NULL;
	}
	memcpy(req, path, plen);
	if (arglen)
		memcpy(req + plen, arg, arglen);
	m.a[0] = type;
	ret = xsim_call(&h->conn, &m, req, plen + arglen, out, XSIM_MSG_MAX);
	free(req);
	if (ret < 0) {
		free(out);
		return NULL;
	}
	out[m.len] = '\0';
	if (outlen)
		*outlen = m.len;
	return out;
}

static bool simple(struct xs_handle *h, unsigned int type, const char *path,
		   const void *arg, unsigned int arglen)
{
	void *r = request(h, type, path, arg, arglen, NULL);

	free(r);
	return r != NULL;
}

void *xs_read(struct xs_handle *h, xs_transaction_t t, const char *path,
	      unsigned int *len)
{
	return request(h, XS_READ, path, NULL, 0, len);
}

bool xs_write(struct xs_handle *h, xs_transaction_t t, const char *path,
	      const void *data, unsigned int len)
{
	return simple(h, XS_WRITE, path, data, len);
}

bool xs_mkdir(struct xs_handle *h, xs_transaction_t t, const char *path)
{
	return simple(h, XS_MKDIR, path, NULL, 0);
}

bool xs_rm(struct xs_handle *h, xs_transaction_t t, const char *path)
{
	return simple(h, XS_RM, path, NULL, 0);
}

/* NUL-separated strings into one malloc'ed vector, as libxenstore does. */
static char **split(const char *s, unsigned int len, unsigned int *num)
{
	unsigned int n = 0;
	char **v, *copy;

	for (unsigned int i = 0; i < len; i++)
		n += !s[i];
	v = malloc((n + 1) * sizeof(char *) + len);
	if (!v)
		return NULL;
	copy = (char *)(v + n + 1);
	memcpy(copy, s, len);
	for (unsigned int i = 0, k = 0; k < n; k++) {
		v[k] = copy + i;
		i += strlen(copy + i) + 1;
	}
	v[n] = NULL;
	*num = n;
	return v;
}

char **xs_directory(struct xs_handle *h, xs_transaction_t t, const char *path,
		    unsigned int *num)
{
	unsigned int len;
	char *r = request(h, XS_DIRECTORY, path, NULL, 0, &len), **v;

	if (!r)
		return NULL;
	v = split(r, len, num);
	free(r);
	return v;
}

struct xs_permissions *xs_get_permissions(struct xs_handle *h,
					  xs_transaction_t t,
					  const char *path, unsigned int *num)
{
	unsigned int len;
	void *r = request(h, XS_GET_PERMS, path, NULL, 0, &len);
	struct xs_permissions *p;

	if (!r)
		return NULL;
	*num = len / sizeof(*p);
	p = malloc(len ? len : 1);
	if (p)
		memcpy(p, r, len);
	free(r);
	return p;
}

bool xs_set_permissions(struct xs_handle *h, xs_transaction_t t,
			const char *path, struct xs_permissions *perms,
			unsigned int num_perms)
{
	return simple(h, XS_SET_PERMS, path, perms,
		      num_perms * sizeof(*perms));
}

bool xs_watch(struct xs_handle *h, const char *path, const char *token)
{
	return simple(h, XS_WATCH, path, token, strlen(token));
}

bool xs_unwatch(struct xs_handle *h, const char *path, const char *token)
{
	return simple(h, XS_UNWATCH, path, token, strlen(token));
}

int xs_fileno(struct xs_handle *h)
{
	return h->conn.evtfd;
}

static char **read_event(struct xs_handle *h, unsigned int *num)
{
	char buf[1024];
	uint32_t len;
	ssize_t n;

	do
		n = read(h->conn.evtfd, &len, 4);
	while (n < 0 && errno == EINTR);
	if (n != 4 || len > sizeof(buf)) {
		errno = n < 0 ? errno : EIO;
		return NULL;
	}
	if (read(h->conn.evtfd, buf, len) != (ssize_t)len) {
		errno = EIO;
		return NULL;
	}
	return split(buf, len, num);
}

char **xs_read_watch(struct xs_handle *h, unsigned int *num)
{
	return read_event(h, num);
}

char **xs_check_watch(struct xs_handle *h)
{
	struct pollfd p = { .fd = h->conn.evtfd, .events = POLLIN };
	unsigned int num;

	if (poll(&p, 1, 0) != 1) {
		errno = EAGAIN;
		return NULL;
	}
	return read_event(h, &num);
}

xs_transaction_t xs_transaction_start(struct xs_handle *h)
{
	struct xsim_msg m = { .op = XSIM_OP_XS };
	int ret;

	m.a[0] = XS_TRANSACTION_START;
	ret = xsim_call(&h->conn, &m, "/", 2, NULL, 0);
	return ret < 0 ? XBT_NULL : (xs_transaction_t)ret;
}

bool xs_transaction_end(struct xs_handle *h, xs_transaction_t t, bool abort)
{
	return simple(h, XS_TRANSACTION_END, "/", NULL, 0);
}

char *xs_get_domain_path(struct xs_handle *h, unsigned int domid)
{
	char *p;

	if (asprintf(&p, "/local/domain/%u", domid) < 0)
		return NULL;
	return p;
}

bool xs_path_is_subpath(const char *parent, const char *child)
{
	size_t l = strlen(parent);

	if (l && parent[l - 1] == '/')
		l--;
	return !strncmp(parent, child, l) && (child[l] == '/' || !child[l]);
}

bool xs_is_domain_introduced(struct xs_handle *h, unsigned int domid)
{
	char p[64];
	void *r;

	snprintf(p, sizeof(p), "/local/domain/%u", domid);
	r = request(h, XS_READ, p, NULL, 0, NULL);
	free(r);
	return r != NULL;
}

static bool toolstack_only(void)
{
	errno = ENOSYS;
	return false;
}

bool xs_restrict(struct xs_handle *h, unsigned domid)
{
	return toolstack_only();
}

bool xs_introduce_domain(struct xs_handle *h, unsigned int domid,
			 unsigned long mfn, unsigned int eventchn)
{
	return toolstack_only();
}

bool xs_set_target(struct xs_handle *h, unsigned int domid,
		   unsigned int target)
{
	return toolstack_only();
}

bool xs_resume_domain(struct xs_handle *h, unsigned int domid)
{
	return toolstack_only();
}

bool xs_release_domain(struct xs_handle *h, unsigned int domid)
{
	return toolstack_only();
}

char *xs_control_command(struct xs_handle *h, const char *cmd, void *data,
			 unsigned int len)
{
	errno = ENOSYS;
	return NULL;
}

char *xs_debug_command(struct xs_handle *h, const char *cmd, void *data,
		       unsigned int len)
{
	errno = ENOSYS;
	return NULL;
}

int xs_suspend_evtchn_port(int domid)
{
	return -1;
}

const char *xs_daemon_rundir(void)
{
	const char *d = getenv("XENSIM_HOST");

	return d ? d : "/var/run/xenstored";
}

const char *xs_daemon_socket(void)
{
	return "/var/run/xenstored/socket";
}

const char *xs_daemon_socket_ro(void)
{
	return "/var/run/xenstored/socket_ro";
}

bool xs_write_all(int fd, const void *data, unsigned int len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= n;
	}
	return true;
}

/* "r0\0w1\0" -> {0, READ}, {1, WRITE} */
bool xs_strings_to_perms(struct xs_permissions *perms, unsigned int num,
			 const char *strings)
{
	const char *p = strings;

	for (unsigned int i = 0; i < num; i++) {
		char *end;

		switch (*p) {
		case 'w':
			perms[i].perms = XS_PERM_WRITE;
			break;
		case 'r':
			perms[i].perms = XS_PERM_READ;
			break;
		case 'b':
			perms[i].perms = XS_PERM_READ | XS_PERM_WRITE;
			break;
		case 'n':
			perms[i].perms = XS_PERM_NONE;
			break;
		default:
			errno = EINVAL;
			return false;
		}
		perms[i].id = strtoul(p + 1, &end, 0);
		if (*end || end == p + 1) {
			errno = EINVAL;
			return false;
		}
		p = end + 1;
	}
	return true;
}
