/* fuzz_inferimage.c - libFuzzer target for dlrt-infer's image-file parser
 * (inference/worker/inputs.c: binary PGM or raw 784 bytes), which reads the files a
 * user lists as a job's inputs. A parse that succeeds must have produced an
 * image from bytes actually in the file; the header numbers are bounded. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inference/worker/inputs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t img[DLRT_INPUTS_IMAGE];
	struct dlrt_err err;

	if (dlrt_inputs_parse_image(data, size, img, &err) == 0) {
		/* The pixels are the file's last 784 bytes in both formats. */
		if (size < DLRT_INPUTS_IMAGE || memcmp(img, data + size - DLRT_INPUTS_IMAGE,
						       DLRT_INPUTS_IMAGE) != 0)
			abort();
	} else if (!err.msg[0]) {
		abort(); /* a failure always says why */
	}
	return 0;
}
