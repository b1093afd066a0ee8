#include "crypto.h"

#include <errno.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <sys/random.h>

void dlrt_crypto_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
			     uint8_t out[DLRT_HMAC_LEN])
{
	struct hmac_sha256_ctx ctx;

	hmac_sha256_set_key(&ctx, keylen, key);
	hmac_sha256_update(&ctx, msglen, msg);
	hmac_sha256_digest(&ctx, DLRT_HMAC_LEN, out);
}

bool dlrt_crypto_equal(const void *a, const void *b, size_t n)
{
	return memeql_sec(a, b, n) != 0;
}

int dlrt_crypto_random(void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom((char *)buf + got, n - got, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}
