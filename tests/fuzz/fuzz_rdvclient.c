/* fuzz_rdvclient.c - libFuzzer target for what a task reads about srun's
 * rendezvous (exchange/rdvclient.c): the "PORT#HEX" of its environment and
 * the signed values the store sends back. Whatever the bytes, a parsed
 * environment value has a port and formats back to itself, and a value opens
 * only if it is the one sealed for that key with that secret. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exchange/rdvclient.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN] = { 7, 1, 2, 3 };
	uint8_t parsed[DLRT_SVCAUTH_SECRET_LEN];
	char *s = malloc(size + 1), back[DLRT_RDV_ENV_MAX];
	const uint8_t *v;
	size_t vlen;
	uint16_t port = 0;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	/* Port 0 is valid: Slurm's PMIx carries the exchange, srun hosts nothing. */
	if (dlrt_rdv_env_parse(s, &port, parsed) == 0) {
		dlrt_rdv_env_format(back, port, parsed);
		if (strlen(s) == size && strcmp(back, s) && s[0] != '0')
			__builtin_trap();
	}
	if (dlrt_rdv_open(secret, "dlrt/0/root", data, size, &v, &vlen) == 0) {
		/* Only a value sealed here opens: seal what came out and compare. */
		char *val = malloc(vlen + 1), *again = malloc(DLRT_SVCAUTH_HEX_LEN + vlen + 2);

		if (val && again && !memchr(v, '\0', vlen)) {
			memcpy(val, v, vlen);
			val[vlen] = '\0';
			dlrt_rdv_seal(secret, "dlrt/0/root", val, again);
			if (strlen(again) != size || memcmp(again, data, size))
				__builtin_trap();
		}
		free(val);
		free(again);
	}
	free(s);
	return 0;
}
