/* svcauth.h - how a node relay proves to a step's service that it holds the
 * step secret, and how the secret travels with the service's address.
 *
 * The frameworks' own clients (gloo's and Caffe2's Redis stores, Horovod's
 * HTTP client) cannot authenticate, so they talk to the relay on their node's
 * loopback, which admits only the job user's sockets (services/relay.h), and the
 * relay talks to the service. The service sends a random challenge as soon as
 * it accepts; the relay answers with HMAC-SHA256(secret, label || challenge);
 * only then does a byte reach the service's protocol (services/tcpserver.c).
 *
 * The per-step secret is made by slurmstepd on the root task's node and never
 * appears in an argv or a file: the service reads it from a pipe
 * (--secret-fd), the other nodes get it with the address through the step's
 * address exchange, as "IP:PORT#HEX" (64 hex digits).
 */
#ifndef DLRT_SVCAUTH_H
#define DLRT_SVCAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dlrt_err.h"

#define DLRT_SVCAUTH_SECRET_LEN 32
#define DLRT_SVCAUTH_CHALLENGE_LEN 32
#define DLRT_SVCAUTH_ANSWER_LEN 32
#define DLRT_SVCAUTH_HEX_LEN (2 * DLRT_SVCAUTH_SECRET_LEN)
/* "255.255.255.255:65535#" + 64 hex digits + NUL */
#define DLRT_SVCADDR_MAX (22 + DLRT_SVCAUTH_HEX_LEN + 1)

/* What an answer proves besides the secret: a client's connection for the
 * service's protocol, or a node's hold on the service (svchold.h). */
enum dlrt_svcauth_use {
	DLRT_SVCAUTH_CLIENT,
	DLRT_SVCAUTH_HOLD,
};

void dlrt_svcauth_answer_for(enum dlrt_svcauth_use use,
			     const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
			     const uint8_t challenge[DLRT_SVCAUTH_CHALLENGE_LEN],
			     uint8_t out[DLRT_SVCAUTH_ANSWER_LEN]);
/* Constant time. */
bool dlrt_svcauth_check_for(enum dlrt_svcauth_use use,
			    const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
			    const uint8_t challenge[DLRT_SVCAUTH_CHALLENGE_LEN],
			    const uint8_t answer[DLRT_SVCAUTH_ANSWER_LEN]);
/* The same for DLRT_SVCAUTH_CLIENT. */
void dlrt_svcauth_answer(const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
			 const uint8_t challenge[DLRT_SVCAUTH_CHALLENGE_LEN],
			 uint8_t out[DLRT_SVCAUTH_ANSWER_LEN]);
/* Constant time. */
bool dlrt_svcauth_check(const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
			const uint8_t challenge[DLRT_SVCAUTH_CHALLENGE_LEN],
			const uint8_t answer[DLRT_SVCAUTH_ANSWER_LEN]);

/* How a secret is written out: n bytes as 2n lowercase hex digits and a NUL
 * (out holds 2n + 1 bytes), and back (-1 on any other character). */
void dlrt_svcauth_hex(const uint8_t *in, size_t n, char *out);
int dlrt_svcauth_unhex(const char *in, size_t n, uint8_t *out);

/* "IP:PORT#HEX" (out holds DLRT_SVCADDR_MAX bytes). */
void dlrt_svcaddr_format(char *out, const char *ip, uint16_t port,
			 const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN]);
/* Parses exactly "IP:PORT#HEX" (len bytes, no NUL needed); -1 otherwise. */
int dlrt_svcaddr_parse(const char *s, size_t len, char ip[16], uint16_t *port,
		       uint8_t secret[DLRT_SVCAUTH_SECRET_LEN]);

/* Service programs (--secret-fd): reads the secret (exactly
 * DLRT_SVCAUTH_SECRET_LEN bytes, then end of file) within timeout_ms and
 * closes fd. */
int dlrt_svcauth_read_secret(int fd, int timeout_ms, uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
			     struct dlrt_err *err);

#endif
