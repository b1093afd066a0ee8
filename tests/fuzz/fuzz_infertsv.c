/* fuzz_infertsv.c - libFuzzer target for the scanner of dlrt-infer's timeline
 * files (inference/state/tsvlog.c), which a continuing coordinator reads to keep
 * the pool's time: any text, whole or as a slice, gives a finite origin and
 * a finite, non-negative last t, and the resume time is never below it. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "inference/state/tsvlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (int partial = 0; partial < 2; partial++) {
		struct dlrt_tsv_scan s = { 0 };
		double t;

		dlrt_tsv_scan_text((const char *)data, size, partial, &s);
		if (s.has_t && (!isfinite(s.last_t) || s.last_t < 0))
			abort();
		if (s.has_origin && !isfinite(s.origin))
			abort();
		t = dlrt_tsv_resume_t(&s, 1.8e9);
		if (!isfinite(t) || t < 0 || (s.has_t && t < s.last_t))
			abort();
	}
	return 0;
}
