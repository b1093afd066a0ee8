/* Fuzz target: the job's times the step's first node shares with the others
 * through srun's rendezvous (tools/lctimes.c): what parses is written back the
 * same, byte for byte. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/lctimes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char in[256], out[DLRT_LCTIMES_MAX];
	struct dlrt_lc_job j = { 0 };

	if (size >= sizeof(in))
		return 0;
	memcpy(in, data, size);
	in[size] = '\0';
	if (dlrt_lctimes_parse(in, &j) < 0)
		return 0;
	dlrt_lctimes_format(&j, out);
	if (strcmp(in, out))
		abort();
	return 0;
}
