/* pfnet.h - a node's network probes for --dl-preflight, and the small server
 * each node runs for its peers' probes while dlrt-preflight lives.
 *
 * The server listens on the node's address the frameworks will use (the same
 * one dlrt hands them: --dl-iface's, else the route towards srun's node) on a
 * port of its own, and admits a connection only once it proved the step's
 * preflight secret (services/svcauth.h's challenge; the secret reached the
 * helper step's tasks through srun's launch environment), within 1 s; of
 * the connections not proven yet at most 64 are kept, a new one ending the
 * oldest, so a process of another user can neither read a probe nor crowd
 * the peers' out (they prove the secret within a round trip), and once the step's
 * nodes' addresses are known, a connection from any other address is closed
 * at once. Then one command:
 *   'P'          -> 8 bytes: the server's CLOCK_REALTIME, ns (ping)
 *   'B' + 4 bytes MS -> the server counts what arrives for MS ms, then
 *                   answers 8 bytes: the byte count (bandwidth sample)
 * Every wait is bounded by the caller's deadline (common/clock.h).
 */
#ifndef DLRT_PFNET_H
#define DLRT_PFNET_H

#include <stdint.h>

#include "common/dlrt_err.h"
#include "services/svcauth.h"

struct dlrt_pf_server;

/* Listens on ip (port 0: any), serves in a thread of its own until stopped;
 * the chosen port into *port. NULL with err. */
struct dlrt_pf_server *dlrt_pf_server_start(const char *ip, const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
					    uint16_t *port, struct dlrt_err *err);
void dlrt_pf_server_stop(struct dlrt_pf_server *s);
/* From now on, only connections from these numeric IPv4 addresses (the
 * step's nodes') are admitted at all; once, later calls do nothing. */
void dlrt_pf_server_allow(struct dlrt_pf_server *s, const char *const *ips, size_t n);

/* npings pings to ip:port: the best round trip (us) and, from that ping,
 * the peer's clock minus ours (us). 0, or -1 with err (unreachable). */
int dlrt_pf_ping(const char *ip, uint16_t port, const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
		 int npings, int64_t deadline_ms, uint32_t *rtt_us, int64_t *offset_us,
		 struct dlrt_err *err);
/* Sends to ip:port for ms milliseconds: what the peer received, kB/s. */
int dlrt_pf_bandwidth(const char *ip, uint16_t port, const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
		      uint32_t ms, int64_t deadline_ms, uint64_t *kBps, struct dlrt_err *err);

#endif
