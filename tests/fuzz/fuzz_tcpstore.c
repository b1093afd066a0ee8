/* fuzz_tcpstore.c - libFuzzer target for dlrt-c10d-store's request path:
 * torch's TCPStore protocol and the store behind it (launchers/torch/).
 *
 * The input is split between two clients of one store (the first byte says
 * where), so parked WAITs get woken by the other client's SETs. Each half is
 * fed in chunks (sizes from the second byte) to exercise incremental
 * parsing, with small limits so that every refusal path is reachable. The
 * store's own accounting must stay within --max-store.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "launchers/torch/tcpstore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_wake(struct dlrt_tcpstore_client *c, void *arg)
{
	(void)c;
	(void)arg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlrt_tcpstore_limits lim = { 64, 1024, 8192, 16 };
	struct dlrt_tcpstore *s;
	struct dlrt_tcpstore_client c[2];
	struct dlrt_buf in[2], out[2];
	size_t split, chunk, o[2] = { 0, 0 }, end[2];
	bool closed[2] = { false, false };

	if (size < 2)
		return 0;
	split = 2 + (size_t)data[0] * (size - 2) / 255;
	chunk = 1 + data[1] % 64;
	s = dlrt_tcpstore_create(&lim, on_wake, NULL);
	if (!s)
		return 0;
	for (int i = 0; i < 2; i++) {
		dlrt_buf_init(&in[i], 1 << 16);
		dlrt_buf_init(&out[i], 1 << 12);
		dlrt_tcpstore_client_init(s, &c[i], &out[i], NULL);
	}
	o[0] = 2;
	end[0] = split;
	o[1] = split;
	end[1] = size;
	while ((o[0] < end[0] && !closed[0]) || (o[1] < end[1] && !closed[1])) {
		for (int i = 0; i < 2; i++) {
			size_t m = end[i] - o[i] < chunk ? end[i] - o[i] : chunk;

			if (closed[i] || !m)
				continue;
			if (dlrt_buf_append(&in[i], data + o[i], m) < 0) {
				closed[i] = true;
				continue;
			}
			o[i] += m;
			closed[i] = dlrt_tcpstore_feed(&c[i], &in[i], NULL, NULL) < 0;
			/* Replies are read, as a well-behaved client would. */
			dlrt_buf_consume(&out[i], out[i].len);
		}
	}
	if (dlrt_tcpstore_bytes(s) > lim.max_store)
		abort();
	for (int i = 0; i < 2; i++) {
		dlrt_tcpstore_client_free(&c[i]);
		dlrt_buf_free(&in[i]);
		dlrt_buf_free(&out[i]);
	}
	dlrt_tcpstore_destroy(s);
	return 0;
}
