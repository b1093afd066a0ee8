/* sha256.h - SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104), for
 * challenge-response authentication where no library is at hand.
 */
#ifndef DLRT_SHA256_H
#define DLRT_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define DLRT_SHA256_LEN 32

struct dlrt_sha256 {
	uint32_t h[8];
	uint64_t len;      /* bytes hashed so far */
	uint8_t buf[64];
	size_t nbuf;
};

void dlrt_sha256_init(struct dlrt_sha256 *s);
void dlrt_sha256_update(struct dlrt_sha256 *s, const void *p, size_t n);
void dlrt_sha256_final(struct dlrt_sha256 *s, uint8_t out[DLRT_SHA256_LEN]);
void dlrt_sha256(const void *p, size_t n, uint8_t out[DLRT_SHA256_LEN]);
void dlrt_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
		      uint8_t out[DLRT_SHA256_LEN]);
/* Constant time: 0 if equal. */
int dlrt_memneq(const void *a, const void *b, size_t n);

#endif
