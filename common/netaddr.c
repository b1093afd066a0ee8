#include "netaddr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int iface_ipv4(const char *iface, char out[DLRT_IPV4_LEN])
{
	struct ifaddrs *ifa, *p;
	int rc = -1;

	if (getifaddrs(&ifa) < 0)
		return -1;
	for (p = ifa; p; p = p->ifa_next) {
		const struct sockaddr_in *sa = (const struct sockaddr_in *)p->ifa_addr;

		if (!sa || sa->sin_family != AF_INET || !(p->ifa_flags & IFF_UP))
			continue;
		if (iface ? strcmp(p->ifa_name, iface) != 0 : (p->ifa_flags & IFF_LOOPBACK) != 0)
			continue;
		inet_ntop(AF_INET, &sa->sin_addr, out, DLRT_IPV4_LEN);
		rc = 0;
		break;
	}
	freeifaddrs(ifa);
	return rc;
}

int dlrt_net_iface_of(const char *ip, char *out, size_t len)
{
	struct ifaddrs *ifa, *p;
	struct in_addr want;
	int rc = -1;

	out[0] = '\0';
	if (inet_pton(AF_INET, ip, &want) != 1 || getifaddrs(&ifa) < 0)
		return -1;
	for (p = ifa; p; p = p->ifa_next) {
		const struct sockaddr_in *sa = (const struct sockaddr_in *)p->ifa_addr;

		if (sa && sa->sin_family == AF_INET && sa->sin_addr.s_addr == want.s_addr) {
			snprintf(out, len, "%s", p->ifa_name);
			rc = 0;
			break;
		}
	}
	freeifaddrs(ifa);
	return rc;
}

/* The local address the kernel would use to send to `peer`: connect() on a UDP
 * socket only picks a route, it sends nothing. */
static int route_source(const char *peer, char out[DLRT_IPV4_LEN])
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(9) };
	socklen_t len = sizeof(sa);
	int fd, rc = -1;

	if (!peer || inet_pton(AF_INET, peer, &sa.sin_addr) != 1)
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0 &&
	    (ntohl(sa.sin_addr.s_addr) >> 24) != 127) {
		inet_ntop(AF_INET, &sa.sin_addr, out, DLRT_IPV4_LEN);
		rc = 0;
	}
	close(fd);
	return rc;
}

int dlrt_net_node_ipv4(const char *iface, const char *peer, char out[DLRT_IPV4_LEN],
		       struct dlrt_err *err)
{
	if (iface && *iface) {
		if (iface_ipv4(iface, out) == 0)
			return 0;
		return dlrt_err_set(err, "interface '%s' has no IPv4 address on this node: check "
				    "--dl-iface (ip -4 addr lists them)", iface);
	}
	if (route_source(peer, out) == 0 || iface_ipv4(NULL, out) == 0)
		return 0;
	return dlrt_err_set(err, "this node has no non-loopback IPv4 address that other nodes "
			    "could reach: name one with --dl-iface");
}

int dlrt_net_free_port(const char *ip, uint16_t *port, struct dlrt_err *err)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd;

	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
		return dlrt_err_set(err, "'%s' is not a numeric IPv4 address", ip);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return dlrt_err_errno(err, errno, "cannot create a socket to find a free port");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		int e = errno;

		close(fd);
		return dlrt_err_errno(err, e, "cannot find a free TCP port on %s", ip);
	}
	*port = ntohs(sa.sin_port);
	close(fd);
	return 0;
}

int dlrt_net_parse_hostport(const char *s, char ip[DLRT_IPV4_LEN], uint16_t *port)
{
	const char *colon = strrchr(s, ':');
	char buf[DLRT_IPV4_LEN];
	struct in_addr a;
	char *end;
	unsigned long p;

	if (!colon || (size_t)(colon - s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, (size_t)(colon - s));
	buf[colon - s] = '\0';
	if (inet_pton(AF_INET, buf, &a) != 1)
		return -1;
	p = strtoul(colon + 1, &end, 10);
	if (*end || end == colon + 1 || p == 0 || p > 65535)
		return -1;
	memcpy(ip, buf, sizeof(buf));
	*port = (uint16_t)p;
	return 0;
}
