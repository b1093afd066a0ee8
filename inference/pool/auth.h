/* auth.h - who may talk to a dlrt-infer coordinator: only the pool owner.
 *
 * Every connection (worker, client, standby) goes HELLO -> CHALLENGE -> AUTH
 * -> WELCOME. The coordinator's CHALLENGE names the mode and carries a fresh
 * random nonce; the peer answers with a proof over the transcript
 *
 *   "DLRT-INFER-AUTH1" | u8 mode | server nonce[32] | client nonce[32] |
 *   u8 role | u64 epoch (little-endian)
 *
 *   munge:  a MUNGE credential whose payload is the transcript; the
 *           coordinator decodes it with munged (which refuses forged, expired
 *           and replayed credentials) and accepts only the pool owner's uid.
 *   secret: HMAC-SHA256 of the transcript keyed with the pool secret from the
 *           0600 access record, in hex. The secret never crosses the network
 *           and the server nonce makes every proof good for one connection.
 *
 * The coordinator picks MUNGE when libmunge loads and munged answers
 * (checked at start), else the secret; $DLRT_INFER_AUTH=munge|secret|auto
 * forces the choice (auto is the default).
 */
#ifndef DLRT_INFER_AUTH_H
#define DLRT_INFER_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/dlrt_err.h"

enum dlrt_auth_mode { DLRT_AUTH_MUNGE = 1, DLRT_AUTH_SECRET = 2 };

#define DLRT_AUTH_NONCE 32
#define DLRT_AUTH_TRANSCRIPT (16 + 1 + 2 * DLRT_AUTH_NONCE + 1 + 8)
#define DLRT_AUTH_PROOF_MAX 4096

const char *dlrt_auth_mode_name(unsigned mode);

/* The transcript both sides sign (pure). */
void dlrt_auth_transcript(uint8_t out[DLRT_AUTH_TRANSCRIPT], uint8_t mode,
			  const uint8_t snonce[DLRT_AUTH_NONCE],
			  const uint8_t cnonce[DLRT_AUTH_NONCE], uint8_t role, uint64_t epoch);

/* The coordinator's mode: `want` is "munge", "secret", "auto", NULL or ""
 * (= $DLRT_INFER_AUTH, else auto). *why says why MUNGE is not used, if not. */
int dlrt_auth_pick(const char *want, uint8_t *mode, char *why, size_t whylen,
		   struct dlrt_err *err);

int dlrt_auth_nonce(uint8_t out[DLRT_AUTH_NONCE], struct dlrt_err *err);

/* Peer: the proof for a CHALLENGE (proof is a NUL-terminated string). */
int dlrt_auth_prove(uint8_t mode, const uint8_t snonce[DLRT_AUTH_NONCE], const char *secret,
		    uint8_t role, uint64_t epoch, uint8_t cnonce[DLRT_AUTH_NONCE],
		    char proof[DLRT_AUTH_PROOF_MAX + 1], struct dlrt_err *err);

/* Coordinator: 0 if the proof is good and (MUNGE) from uid `owner`; else -1
 * with one line saying why (forged, replayed, another user...). */
int dlrt_auth_verify(uint8_t mode, const uint8_t snonce[DLRT_AUTH_NONCE], const char *secret,
		     uint8_t role, uint64_t epoch, const uint8_t cnonce[DLRT_AUTH_NONCE],
		     const char *proof, uid_t owner, struct dlrt_err *err);

#endif
