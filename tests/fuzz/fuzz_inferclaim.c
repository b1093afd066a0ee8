/* fuzz_inferclaim.c - libFuzzer target for the names read from a pool's
 * claims directory (inference/pool/claim.c): any name is accepted or refused; an
 * accepted one is epoch-N with N > 0 and prints back to the same name. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inference/pool/claim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char back[64];
	uint64_t e = 0;

	if (dlrt_claim_parse_name((const char *)data, size, &e) < 0)
		return 0;
	if (!e)
		abort();
	snprintf(back, sizeof(back), "epoch-%llu", (unsigned long long)e);
	if (strlen(back) != size || memcmp(back, data, size))
		abort();
	return 0;
}
