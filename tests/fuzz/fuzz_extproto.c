/* fuzz_extproto.c - the external-model protocol parsers: the BATCH header
 * (what a model reads), single output lines, and the worker-side reader
 * fed the input in two arbitrary pieces. Seeds: tests/fuzz/seeds/extproto/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inference/models/extproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlrt_extproto_reader r;
	struct dlrt_extproto_batch b;
	struct dlrt_extproto_msg m;
	struct dlrt_err err;
	size_t cut = size ? data[0] % (size + 1) : 0;
	uint32_t n = size > 1 ? (uint32_t)data[1] % 8 + 1 : 1;
	int rv, events = 0;

	dlrt_extproto_parse_batch((const char *)data, size, &b, &err);
	dlrt_extproto_parse_line((const char *)data, size, &m, &err);

	dlrt_extproto_reader_init(&r);
	rv = dlrt_extproto_reader_feed(&r, data, cut, &err);
	for (;;) {
		if (rv < 0)
			break;
		if (rv == DLRT_EXTPROTO_GOT_READY || rv == DLRT_EXTPROTO_GOT_BATCH) {
			/* Act as a worker: start the next batch at once. */
			if (dlrt_extproto_reader_begin(&r, 7, n, &err) < 0)
				break;
			if (++events > 1000)
				break;
			rv = dlrt_extproto_reader_feed(&r, NULL, 0, &err);
			continue;
		}
		if (cut < size) {
			rv = dlrt_extproto_reader_feed(&r, data + cut, size - cut, &err);
			cut = size;
			continue;
		}
		break;
	}
	dlrt_extproto_reader_free(&r);
	return 0;
}
