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

#include <sys/types.h>

#include "dlrt_err.h"

/* The owner of the peer socket of the connected TCP/IPv4 socket `fd`
 * (accepted by us): the socket at getpeername() talking to getsockname().
 * -1 if the kernel does not know it (the peer closed already) or the lookup
 * failed; bounded by a 1 s receive timeout. */
int dlrt_peeruid_of(int fd, uid_t *uid, struct dlrt_err *err);

#endif
