/* test_infer_prefetch.c - --prefetch's one owner (inference/coord/coord.h): a whole
 * number from 1 to DLRT_INFER_PREFETCH_MAX, from the command line or
 * DLRT_INFER_PREFETCH, and nothing else: a negative, fractional or huge value
 * is refused with one line instead of being converted. */
#include <string.h>

#include "inference/coord/coord.h"
#include "tap.h"

int main(void)
{
	static const char *const refused[] = { "0", "65", "-1", "1.5", "4x", " 4", "+4", "",
					       "4294967297", "1e3" };
	struct dlrt_err err;
	uint32_t k = 7;

	TAP_IS_INT(dlrt_infer_prefetch_parse("--prefetch", "1", &k, &err), 0, "1 is read");
	TAP_IS_INT((int)k, 1, "as 1");
	TAP_IS_INT(dlrt_infer_prefetch_parse("--prefetch", "64", &k, &err), 0, "64 is read");
	TAP_IS_INT((int)k, DLRT_INFER_PREFETCH_MAX, "the bound itself");
	for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++) {
		k = 7;
		TAP_IS_INT(dlrt_infer_prefetch_parse("DLRT_INFER_PREFETCH", refused[i], &k, &err), -1,
			   "'%s' is refused", refused[i]);
		TAP_IS_INT((int)k, 7, "and leaves the value alone");
	}
	TAP_OK(strstr(err.msg, "DLRT_INFER_PREFETCH=1e3: expected a whole number from 1 to 64") != NULL,
	       "the line names the source and the bound: %s", err.msg);
	TAP_IS_INT(dlrt_infer_prefetch_check(0, &err), -1, "the coordinator refuses 0");
	TAP_IS_INT(dlrt_infer_prefetch_check(65, &err), -1, "and 65");
	TAP_IS_INT(dlrt_infer_prefetch_check(4, &err), 0, "and takes 4");
	return tap_done();
}
