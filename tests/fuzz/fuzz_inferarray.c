/* fuzz_inferarray.c - libFuzzer target for the parsers of a pool still to
 * start (inference/pool/poolarray.c): the array record a client reads from the
 * pool directory, squeue's lines about the array and sbatch's answer. Any
 * text is accepted or refused with a message; what is accepted is in range
 * and printable. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inference/pool/poolarray.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct dlrt_pool_array a;
	struct dlrt_pool_array_state st;
	struct dlrt_err err = { { 0 } };
	uint32_t job = 0;
	int rc;

	rc = dlrt_pool_array_parse(text, size, &a, &err);
	if (rc == 0 && !a.job)
		abort();
	if (rc < 0 && !err.msg[0])
		abort();
	rc = dlrt_pool_squeue_parse(text, size, &st, &err);
	if (rc == 0 && (!st.state[0] || strlen(st.state) >= sizeof(st.state) ||
			strlen(st.reason) >= sizeof(st.reason)))
		abort();
	for (const char *p = st.state; rc == 0 && *p; p++)
		if (*p < ' ' || *p > '~')
			abort();
	if (dlrt_pool_sbatch_parse(text, size, &job, &err) == 0 && !job)
		abort();
	return 0;
}
