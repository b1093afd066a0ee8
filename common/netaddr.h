/* netaddr.h - this node's address as other nodes reach it, and free ports.
 *
 * Frameworks bind numerically (ps-lite's ZMQ rejects names; see
 * docs/contracts.md, mxnet), so dlrt hands out numeric IPv4 addresses and
 * never 127.0.0.1 across nodes.
 */
#ifndef DLRT_NETADDR_H
#define DLRT_NETADDR_H

#include <netinet/in.h>
#include <stdint.h>

#include "dlrt_err.h"

#define DLRT_IPV4_LEN INET_ADDRSTRLEN

/* The numeric IPv4 address of this node:
 *  - of interface `iface` if given (e.g. --dl-iface=ib0);
 *  - else the source address this node uses to reach `peer` (a numeric IPv4
 *    such as SLURM_LAUNCH_NODE_IPADDR): the address the rest of the cluster
 *    sees; no packet is sent;
 *  - else the first non-loopback IPv4 address of an interface that is up. */
int dlrt_net_node_ipv4(const char *iface, const char *peer, char out[DLRT_IPV4_LEN],
		       struct dlrt_err *err);

/* The name of the interface that holds numeric IPv4 address `ip` ("" if none). */
int dlrt_net_iface_of(const char *ip, char *out, size_t len);

/* A TCP port that is free on `ip` now: bind port 0, read it, release it. */
int dlrt_net_free_port(const char *ip, uint16_t *port, struct dlrt_err *err);

/* Parses "a.b.c.d:port". */
int dlrt_net_parse_hostport(const char *s, char ip[DLRT_IPV4_LEN], uint16_t *port);

#endif
