/* peeruid.h - which user owns the other end of a loopback TCP connection.
 *
 * SO_PEERCRED exists only for Unix sockets, and the frameworks' clients
 * connect over TCP. The kernel knows the owner of every socket of the network
 * namespace: one NETLINK_SOCK_DIAG request for the exact 4-tuple of the
 * client's socket (inet_diag, no dump) returns it as idiag_uid. Any user may
 * ask (ss does the same); only sockets of this node's namespace are found,
 * which is all a loopback connection can come from.
 */
#ifndef DLRT_PEERUID_H
#define DLRT_PEERUID_H

#include <netinet/in.h>
#include <sys/types.h>

#include "common/dlrt_err.h"

/* The owner of the peer socket of the connected TCP/IPv4 socket `fd`
 * (accepted by us): the socket at getpeername() talking to getsockname().
 * -1 if the kernel does not know it (the peer closed already) or the lookup
 * failed; bounded by a 1 s receive timeout. */
int dlrt_peeruid_of(int fd, uid_t *uid, struct dlrt_err *err);

/* The same for a caller that looks up many connections (the relay, at every
 * accept): one netlink socket kept open, and the addresses it already has
 * (accept's peer address, the listener's own), so a lookup is one sendto and
 * one recv. dlrt_peeruid_open: the socket (close it with close()), or -1. */
int dlrt_peeruid_open(struct dlrt_err *err);
/* The owner of the socket at `peer` connected to `me`; -1 as above. */
int dlrt_peeruid_lookup(int nl, const struct sockaddr_in *peer, const struct sockaddr_in *me,
			uid_t *uid, struct dlrt_err *err);
/* The same for a connection over IPv6 (the relay's [::1] listener). */
int dlrt_peeruid_lookup6(int nl, const struct sockaddr_in6 *peer, const struct sockaddr_in6 *me,
			 uid_t *uid, struct dlrt_err *err);

#endif
