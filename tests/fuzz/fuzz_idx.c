/* fuzz_idx.c - the IDX parser (dlrt_idx_parse) on arbitrary bytes, plus the
 * labels cross-check on whatever parses. Seeds: tests/fuzz/seeds/idx/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inference/models/idx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlrt_err err;
	struct dlrt_idx idx;
	size_t i, sum = 0;

	if (dlrt_idx_parse(&idx, data, size, &err) < 0)
		return 0;
	/* Touch every byte the parser vouched for, so ASan sees any lie. */
	for (i = 0; i < idx.count * idx.item_size; i++)
		sum += idx.data[i];
	if (idx.ndims == 1)
		dlrt_idx_check_labels(&idx, &idx, 10, &err);
	return sum == (size_t)-1;
}
