/* rdvclient.h - a task's side of the step's rendezvous, the key/value store
 * that srun hosts for the step (started by spank/client.c, spank/service.c).
 *
 * srun starts the store (dlrt-c10d-store, torch 1.x's TCPStore protocol, see
 * launchers/torch/tcpstore.h) before it asks Slurm for the step, and hands
 * every task "PORT#HEX" (HEX: the 32-byte rendezvous secret) in
 * SLURM_DLRT_RENDEZVOUS; the address is srun's own, SLURM_LAUNCH_NODE_IPADDR,
 * the one slurmd already reaches srun on. srun lives exactly as long as the
 * step, so whatever a node publishes there stays readable for every other
 * node: nobody has to wait for the others to have read it.
 *
 * Trust: the store admits a connection only once it proved the secret
 * (services/svcauth.h, the same challenge as the node services), and every
 * value carries HMAC-SHA256(secret, label, key, value) computed by the task
 * that set it, checked by every reader: a process that is not the step's
 * cannot read, write, or stand in for the store (docs/SECURITY.md).
 *
 * Every call is bounded by the deadline given to dlrt_rdv_connect (one
 * clock, common/clock.h); nothing here prints.
 */
#ifndef DLRT_RDVCLIENT_H
#define DLRT_RDVCLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "common/dlrt_err.h"
#include "services/svcauth.h"

#define DLRT_RDV_ENV "SLURM_DLRT_RENDEZVOUS"
/* "65535#" + 64 hex digits + NUL */
#define DLRT_RDV_ENV_MAX (6 + DLRT_SVCAUTH_HEX_LEN + 1)
/* The longest value a task sets or reads (a node's task ports: 256 tasks). */
#define DLRT_RDV_VALUE_MAX 8192

struct dlrt_rdv {
	int fd;
	int64_t deadline_ms; /* dlrt_now_ms() */
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN];
};

/* "PORT#HEX" into out (DLRT_RDV_ENV_MAX bytes). srun sets it for every step
 * that exchanges: PORT is its rendezvous', or 0 when Slurm's PMIx carries the
 * exchange (srun then hosts nothing); HEX is the step secret either way, the
 * one thing that lets a task tell its own step's values from anyone else's
 * (spank/exchange.c). */
void dlrt_rdv_env_format(char *out, uint16_t port, const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN]);
/* Exactly "PORT#HEX" (PORT 0 to 65535); -1 otherwise. */
int dlrt_rdv_env_parse(const char *s, uint16_t *port, uint8_t secret[DLRT_SVCAUTH_SECRET_LEN]);

/* Connects to ip:port, proves the secret; every later call ends by
 * deadline_ms. 0, or -1 with one line in err (r->fd is then -1). */
int dlrt_rdv_connect(struct dlrt_rdv *r, const char *ip, uint16_t port,
		     const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN], int64_t deadline_ms,
		     struct dlrt_err *err);
/* Publishes key = value (signed); the store does not answer a SET. */
int dlrt_rdv_set(struct dlrt_rdv *r, const char *key, const char *value, struct dlrt_err *err);
/* Waits until every key exists, then reads them: values[i] is a malloc'ed
 * NUL-terminated string (free each). Values whose signature does not match
 * are an error. */
int dlrt_rdv_get(struct dlrt_rdv *r, const char *const *keys, size_t n, char **values,
		 struct dlrt_err *err);
/* dlrt_rdv_get in two halves, for a caller that waits for the answer in its
 * own poll (dlrt-lifecycle: tools/lcshare.h): the request, then, once r->fd
 * is readable, the answer (bounded by r->deadline_ms, which the caller may
 * move on in between). */
int dlrt_rdv_get_send(struct dlrt_rdv *r, const char *const *keys, size_t n,
		      struct dlrt_err *err);
int dlrt_rdv_get_recv(struct dlrt_rdv *r, const char *const *keys, size_t n, char **values,
		      struct dlrt_err *err);
void dlrt_rdv_close(struct dlrt_rdv *r);

/* The signed form of a value as stored ("TAG VALUE", TAG 64 hex digits), and
 * its check: exposed for the unit test and the fuzzer. `out` holds
 * DLRT_SVCAUTH_HEX_LEN + 1 + strlen(value) + 1 bytes. */
void dlrt_rdv_seal(const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN], const char *key,
		   const char *value, char *out);
/* 0 with the value's bytes at *value (len *vlen, inside `stored`), or -1. */
int dlrt_rdv_open(const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN], const char *key,
		  const uint8_t *stored, size_t len, const uint8_t **value, size_t *vlen);

#endif
