/* fuzz_inferlive.c - libFuzzer target for the text parsers of dlrt-infer's
 * failure handling (inference/liveness.c): squeue's time left, the heartbeat
 * bound and the walltime margin (options and environment). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inference/liveness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct dlrt_hb hb;
	struct dlrt_err err;
	int64_t v;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (dlrt_walltime_parse_left(s, &v) == 0 && v < -1)
		abort();
	if (dlrt_hb_config(s, &hb, &err) == 0 &&
	    (hb.bound_ms < 200 || hb.silence_ms + hb.check_ms > hb.bound_ms || hb.interval_ms <= 0))
		abort(); /* a bound is always kept */
	if (dlrt_walltime_margin(s, &v, &err) == 0 && v < 0)
		abort();
	free(s);
	return 0;
}
