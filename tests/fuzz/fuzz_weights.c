/* fuzz_weights.c - the .dlrtw weights parser on arbitrary bytes. Most inputs
 * die at the magic or the CRC, so the fuzzer also fixes up the CRC of its
 * input to reach the shape checks. Seeds: tests/fuzz/seeds/weights/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inference/models/weights.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlrt_err err;
	struct dlrt_net net;
	uint8_t *copy;
	uint32_t crc;

	if (dlrt_weights_parse(data, size, &net, NULL, NULL, &err) == 0)
		dlrt_net_free(&net);
	if (size < 4)
		return 0;
	copy = malloc(size);
	memcpy(copy, data, size);
	crc = dlrt_crc32(0, copy, size - 4);
	copy[size - 4] = (uint8_t)crc;
	copy[size - 3] = (uint8_t)(crc >> 8);
	copy[size - 2] = (uint8_t)(crc >> 16);
	copy[size - 1] = (uint8_t)(crc >> 24);
	if (dlrt_weights_parse(copy, size, &net, NULL, NULL, &err) == 0)
		dlrt_net_free(&net);
	free(copy);
	return 0;
}
