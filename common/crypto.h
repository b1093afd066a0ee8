/* crypto.h - the cryptography dlrt needs, from a vetted library (nettle).
 *
 * Nothing here is written by hand: HMAC-SHA256 and the constant-time compare
 * are nettle's, the random bytes the kernel's (getrandom). dlrt uses them for
 * challenge-response authentication only: the inference pool's secret mode
 * (inference/pool/auth.c) and the step secret that the node relays present to a
 * step's services (docs/SECURITY.md).
 */
#ifndef DLRT_CRYPTO_H
#define DLRT_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DLRT_HMAC_LEN 32 /* HMAC-SHA256 */

void dlrt_crypto_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
			     uint8_t out[DLRT_HMAC_LEN]);

/* True if the n bytes are equal; the time taken does not depend on where
 * they differ (nettle's memeql_sec). */
bool dlrt_crypto_equal(const void *a, const void *b, size_t n);

/* n bytes from the kernel's random source (getrandom, blocking until it is
 * seeded, which it is long before any job runs); -1 with errno on failure. */
int dlrt_crypto_random(void *buf, size_t n);

#endif
