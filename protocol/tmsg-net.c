// SPDX-License-Identifier: GPL-2.0
/*
 * Sockets as trace-cmd uses them: TCP for `agent -N` / `record -A ip:port`
 * and `listen`, with data ports searched upward from 1500 on all
 * addresses; AF_VSOCK for guests that have it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/vm_sockets.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

#include "tmsg-internal.h"

/* Connect with a deadline: nonblocking connect, poll, check SO_ERROR. */
static int connect_timeout(int fd, const struct sockaddr *sa, socklen_t len,
			   int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	int fl = fcntl(fd, F_GETFL);
	int err = 0;
	socklen_t elen = sizeof(err);
	int ret;

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	ret = connect(fd, sa, len);
	if (ret < 0 && errno != EINPROGRESS)
		return -errno;
	if (ret < 0) {
		do {
			ret = poll(&pfd, 1, timeout_ms);
		} while (ret < 0 && errno == EINTR);
		if (ret == 0)
			return -ETIMEDOUT;
		if (ret < 0)
			return -errno;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
			return -errno;
		if (err)
			return -err;
	}
	fcntl(fd, F_SETFL, fl);
	return 0;
}

int tmsg_tcp_connect(const char *host, const char *port, int timeout_ms)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
	};
	struct addrinfo *res, *ai;
	int fd = -1, ret, one = 1;

	ret = getaddrinfo(host, port, &hints, &res);
	if (ret)
		return tcx_fail(-EHOSTUNREACH, "%s:%s: %s", host, port,
				 gai_strerror(ret));
	ret = -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		ret = connect_timeout(fd, ai->ai_addr, ai->ai_addrlen,
				      timeout_ms);
		if (!ret)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return tcx_fail(ret, "%s:%s: connect: %s", host, port,
				 strerror(-ret));
	/* Control messages are small and answered: don't let Nagle wait. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Bind @fd (IPv6 dual-stack or IPv4) to the wildcard address, @port. */
static int bind_any(int fd, int family, unsigned int port)
{
	struct sockaddr_in6 s6 = {
		.sin6_family = AF_INET6,
		.sin6_addr = IN6ADDR_ANY_INIT,
		.sin6_port = htons(port),
	};
	struct sockaddr_in s4 = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_ANY),
		.sin_port = htons(port),
	};

	if (family == AF_INET6)
		return bind(fd, (struct sockaddr *)&s6, sizeof(s6));
	return bind(fd, (struct sockaddr *)&s4, sizeof(s4));
}

static int bound_port_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* A wildcard listener on @port, IPv6 dual-stack if the host has IPv6. */
static int listen_any(unsigned int port)
{
	int family = AF_INET6, fd, one = 1, zero = 0;

	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		family = AF_INET;
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	}
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind_any(fd, family, port) < 0 || listen(fd, 5) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int tmsg_tcp_listen(const char *host, unsigned int port,
		    unsigned int *bound_port)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE,
	};
	struct addrinfo *res, *ai;
	char pstr[16];
	int fd = -1, ret = -EADDRNOTAVAIL, one = 1;

	if (port > 65535)
		return tcx_fail(-EINVAL, "port %u out of range", port);
	if (!host) {
		fd = listen_any(port);
		if (fd < 0)
			return tcx_fail(fd, "listen on port %u: %s", port,
					 strerror(-fd));
	} else {
		snprintf(pstr, sizeof(pstr), "%u", port);
		ret = getaddrinfo(host, pstr, &hints, &res);
		if (ret)
			return tcx_fail(-EADDRNOTAVAIL, "%s: %s", host,
					 gai_strerror(ret));
		for (ai = res; ai; ai = ai->ai_next) {
			fd = socket(ai->ai_family,
				    ai->ai_socktype | SOCK_CLOEXEC, 0);
			if (fd < 0) {
				ret = -errno;
				continue;
			}
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
				   sizeof(one));
			if (!bind(fd, ai->ai_addr, ai->ai_addrlen) &&
			    !listen(fd, 5))
				break;
			ret = -errno;
			close(fd);
			fd = -1;
		}
		freeaddrinfo(res);
		if (fd < 0)
			return tcx_fail(ret, "listen on %s:%u: %s", host, port,
					 strerror(-ret));
	}
	if (bound_port)
		*bound_port = bound_port_of(fd);
	return fd;
}

int tmsg_tcp_listen_search(unsigned int start, unsigned int *port)
{
	for (unsigned int p = start; p <= 65535; p++) {
		int fd = listen_any(p);

		if (fd >= 0) {
			*port = p;
			return fd;
		}
		if (fd != -EADDRINUSE)
			return tcx_fail(fd, "listen on port %u: %s", p,
					 strerror(-fd));
	}
	return tcx_fail(-EADDRINUSE, "no free TCP port at or above %u", start);
}

int tmsg_accept(int lfd, int timeout_ms, struct sockaddr_storage *peer,
		socklen_t *peer_len)
{
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int ret, fd, one = 1;

	do {
		ret = poll(&pfd, 1, timeout_ms);
	} while (ret < 0 && errno == EINTR);
	if (ret == 0)
		return tcx_fail(-ETIMEDOUT, "no connection within %d ms",
				 timeout_ms);
	if (ret < 0)
		return tcx_fail(-errno, "accept: %s", strerror(errno));
	fd = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC);
	if (fd < 0)
		return tcx_fail(-errno, "accept: %s", strerror(errno));
	if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (peer)
		*peer = ss;
	if (peer_len)
		*peer_len = len;
	return fd;
}

/* IPv4 address of @a, also through an IPv4-mapped IPv6 one. */
static bool v4_of(const struct sockaddr_storage *a, struct in_addr *out)
{
	if (a->ss_family == AF_INET) {
		*out = ((const struct sockaddr_in *)a)->sin_addr;
		return true;
	}
	if (a->ss_family == AF_INET6) {
		const struct in6_addr *v6 = &((const struct sockaddr_in6 *)a)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(v6)) {
			memcpy(&out->s_addr, &v6->s6_addr[12], 4);
			return true;
		}
	}
	return false;
}

static bool same_addr(const struct sockaddr_storage *a,
		      const struct sockaddr *b)
{
	struct in_addr a4, b4;

	if (v4_of(a, &a4) && v4_of((const struct sockaddr_storage *)b, &b4))
		return a4.s_addr == b4.s_addr;
	if (a->ss_family == AF_INET6 && b->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr,
			       sizeof(struct in6_addr));
	return false;
}

bool tmsg_addr_matches(const struct sockaddr_storage *peer, const char *host)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	bool match = false;

	if (getaddrinfo(host, NULL, &hints, &res))
		return false;
	for (ai = res; ai && !match; ai = ai->ai_next)
		match = same_addr(peer, ai->ai_addr);
	freeaddrinfo(res);
	return match;
}

void tmsg_addr_string(const struct sockaddr_storage *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	struct in_addr v4;

	if (v4_of(a, &v4)) {
		inet_ntop(AF_INET, &v4, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip,
			 ntohs(a->ss_family == AF_INET ?
			       ((const struct sockaddr_in *)a)->sin_port :
			       ((const struct sockaddr_in6 *)a)->sin6_port));
	} else if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)a;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(s6->sin6_port));
	} else if (a->ss_family == AF_VSOCK) {
		const struct sockaddr_vm *vm = (const struct sockaddr_vm *)a;

		snprintf(buf, len, "vsock %u:%u", vm->svm_cid, vm->svm_port);
	} else {
		snprintf(buf, len, "family %u", a->ss_family);
	}
}

int tmsg_vsock_connect(unsigned int cid, unsigned int port)
{
	struct sockaddr_vm vm = {
		.svm_family = AF_VSOCK,
		.svm_cid = cid,
		.svm_port = port,
	};
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int ret;

	if (fd < 0)
		return tcx_fail(-errno, "vsock: %s", strerror(errno));
	ret = connect_timeout(fd, (struct sockaddr *)&vm, sizeof(vm),
			      TMSG_WAIT_MS);
	if (ret) {
		close(fd);
		return tcx_fail(ret, "vsock %u:%u: connect: %s", cid, port,
				 strerror(-ret));
	}
	return fd;
}

int tmsg_vsock_listen(unsigned int port, unsigned int *bound)
{
	struct sockaddr_vm vm = {
		.svm_family = AF_VSOCK,
		.svm_cid = VMADDR_CID_ANY,
		.svm_port = port,
	};
	socklen_t len = sizeof(vm);
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return tcx_fail(-errno, "vsock: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&vm, sizeof(vm)) < 0 ||
	    listen(fd, 5) < 0 ||
	    getsockname(fd, (struct sockaddr *)&vm, &len) < 0) {
		int err = -errno;

		close(fd);
		return tcx_fail(err, "vsock listen on %u: %s", port,
				 strerror(-err));
	}
	if (bound)
		*bound = vm.svm_port;
	return fd;
}
