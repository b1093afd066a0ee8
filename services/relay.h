/* relay.h - the node relay: the job's own processes reach the step's service.
 *
 * Every node of a step with a service (Horovod's rendezvous driver, Caffe2's
 * store) runs one dlrt-relay, as the job user, listening on 127.0.0.1 only,
 * and on [::1] on the same port so that nobody else can take that one for a
 * client that connects to "localhost" (which may try ::1 first).
 * The tasks get its address instead of the service's. On accept the relay
 * asks the kernel who owns the client's socket (services/peeruid.h) and closes
 * any connection that is not the job user's at once. For an admitted client
 * it connects to the service, answers the service's challenge with the step
 * secret (services/svcauth.h), and then forwards bytes both ways. Each
 * direction has a fixed buffer; a side is not read while the other side's
 * buffer is full, so a slow peer slows its partner instead of growing memory.
 * A half-close is passed on (shutdown), so request/EOF protocols work.
 *
 * Under a stranger's flood the service may close a connection before the
 * relay's answer counted (services/tcpserver.h sheds the oldest unproven
 * one): the relay then connects again (at once, then at its sweeps), within
 * connect_timeout_ms; a connection it proved is never shed, and its ready
 * spares are proven already.
 *
 * The relay starts before the step's address exchange, so it learns the
 * service's address and the secret later (dlrt_relay_set_target); a client
 * that comes earlier waits for it, bounded by target_wait_ms.
 */
#ifndef DLRT_RELAY_H
#define DLRT_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/dlrt_err.h"
#include "evloop.h"
#include "svcauth.h"

struct dlrt_relay;

struct dlrt_relay_cfg {
	uid_t uid;                   /* the only owner admitted (the job user) */
	uint16_t port;               /* on 127.0.0.1 and [::1]; 0 = any port free on both */
	unsigned max_conns;          /* admitted clients at once (0 = 1024) */
	size_t buf_size;             /* per direction and client (0 = 64 KiB) */
	int64_t target_wait_ms;      /* a client's wait for the target (0 = 60 s) */
	int64_t connect_timeout_ms;  /* connect + challenge (0 = 10 s) */
	int spares;                  /* spare upstream connections (0 = 8, -1 = none) */
	int64_t spare_max_age_ms;    /* a spare unused this long is closed (0 = 1 s) */
	/* The service sends no challenge: forward from the connect on, the
	 * secret unused. Only to measure the relay in front of a server without
	 * dlrt's challenge (bench/bench_resp_store.sh fronts a redis-server);
	 * admission (the peer-uid check) is unchanged. */
	bool no_challenge;
	/* Optional: one line on each refused client and each failed connection
	 * to the service (dlrt-relay --verbose writes them to its log). */
	void (*note)(const char *line, void *arg);
	void *note_arg;
};

struct dlrt_relay_stats {
	uint64_t admitted;
	uint64_t refused;            /* another user's socket, or an unknown one */
	uint64_t upstream_failed;    /* the service could not be reached in time */
	uint64_t spare_used;         /* clients paired with a ready spare */
	uint64_t hung_up;            /* the service closed a client's connection
				      * before its challenge (shed under a flood):
				      * connected again, within connect_timeout_ms */
};

int dlrt_relay_start(struct dlrt_relay **out, struct dlrt_evloop *loop,
		     const struct dlrt_relay_cfg *cfg, struct dlrt_err *err);
uint16_t dlrt_relay_port(const struct dlrt_relay *r);
/* Where the service is, and the step secret (copied). Clients waiting for it
 * connect now. */
void dlrt_relay_set_target(struct dlrt_relay *r, const char *ip, uint16_t port,
			   const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN]);
unsigned dlrt_relay_nconns(const struct dlrt_relay *r);
void dlrt_relay_stats(const struct dlrt_relay *r, struct dlrt_relay_stats *out);
/* Closes the listener and every connection. */
void dlrt_relay_stop(struct dlrt_relay *r);

#endif
