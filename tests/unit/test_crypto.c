/* test_crypto.c - common/crypto.c: nettle's HMAC-SHA256 against RFC 4231's
 * vectors, the constant-time compare, the kernel's random bytes. */
#include <stdio.h>
#include <string.h>

#include "common/crypto.h"
#include "tap.h"

static const char *hex(const uint8_t *p, size_t n)
{
	static char out[2 * DLRT_HMAC_LEN + 1];

	for (size_t i = 0; i < n && i < DLRT_HMAC_LEN; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	return out;
}

int main(void)
{
	uint8_t d[DLRT_HMAC_LEN], key[131], r1[32], r2[32];

	dlrt_crypto_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
	TAP_IS_STR(hex(d, 32), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
		   "HMAC-SHA256, RFC 4231 case 2");
	memset(key, 0xaa, sizeof(key));
	dlrt_crypto_hmac_sha256(key, sizeof(key),
				"Test Using Larger Than Block-Size Key - Hash Key First", 54, d);
	TAP_IS_STR(hex(d, 32), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
		   "HMAC-SHA256, RFC 4231 case 6 (key longer than a block)");
	TAP_OK(dlrt_crypto_equal("abc", "abc", 3), "equal bytes compare equal");
	TAP_OK(!dlrt_crypto_equal("abc", "abd", 3), "a difference in the last byte is seen");
	TAP_OK(!dlrt_crypto_equal("xbc", "abc", 3), "a difference in the first byte is seen");
	TAP_OK(dlrt_crypto_random(r1, sizeof(r1)) == 0 && dlrt_crypto_random(r2, sizeof(r2)) == 0,
	       "random bytes");
	TAP_OK(memcmp(r1, r2, sizeof(r1)) != 0, "two draws of 32 random bytes differ");
	return tap_done();
}
