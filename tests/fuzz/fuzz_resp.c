/* fuzz_resp.c - libFuzzer target for the Caffe2 helper store's request path:
 * the RESP parser and the command table (launchers/caffe2/).
 *
 * Two checks per input:
 *  1. The parser gives the same requests whether the bytes arrive at once or
 *     in chunks (the chunk size comes from the first byte), in a buffer that
 *     moves between calls as a growing dlrt_buf may. This is the property
 *     that incremental parsing must keep; a mismatch aborts.
 *  2. The whole input runs through two store sessions on one keyspace
 *     (parse + execute + reply), with small limits so the error paths are
 *     reachable: a 64 KiB store (-OOM; what it holds must never pass the
 *     limit), a transaction bound of 2 KiB / 16 entries, and, when the first
 *     byte's top bit is set, a 64-byte reply pause (requests left waiting).
 *     With bit 0x40 the chunks alternate between the two clients (one's
 *     writes touch the other's WATCHed keys; MULTI state per client); with
 *     bit 0x20 the store's clock moves 7 ms per chunk and the active expiry
 *     cycle runs, so keys with a TTL expire in the middle of transactions.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "launchers/caffe2/kvstore.h"
#include "launchers/caffe2/resp.h"
#include "launchers/caffe2/store_session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_BULK 4096
#define MAX_ARGS 64
#define MAX_MEMORY (64 * 1024)
#define TX_BYTES 2048
#define TX_COUNT 16

/* A digest of one parse result, to compare the two ways of feeding. */
static uint64_t digest(const struct dlrt_resp_parser *p, int rc)
{
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)(rc + 7);

	if (rc == DLRT_RESP_COMPLETE) {
		for (size_t i = 0; i < p->argc; i++) {
			h = (h ^ p->argvlen[i]) * 1099511628211ULL;
			for (size_t j = 0; j < p->argvlen[i]; j++)
				h = (h ^ p->argv[i][j]) * 1099511628211ULL;
		}
	}
	if (rc == DLRT_RESP_ERROR)
		for (const char *e = p->error; *e; e++)
			h = (h ^ (uint8_t)*e) * 1099511628211ULL;
	return h;
}

/* Parses all of data, `chunk` new bytes at a time (0 = all at once); writes
 * up to 256 digests and returns how many. */
static size_t parse_all(const uint8_t *data, size_t size, size_t chunk, uint64_t *out)
{
	struct dlrt_resp_parser p;
	size_t off = 0, have = 0, n = 0;
	uint8_t *win = NULL;

	dlrt_resp_init(&p, MAX_BULK, MAX_ARGS);
	while (n < 256) {
		int rc;
		uint8_t *w;

		have = chunk ? (have + chunk > size - off ? size - off : have + chunk) : size - off;
		/* A fresh copy every call: the parser must keep offsets, not pointers. */
		w = malloc(have ? have : 1);
		if (!w)
			abort();
		memcpy(w, data + off, have);
		free(win);
		win = w;
		rc = dlrt_resp_parse(&p, win, have);
		if (rc == DLRT_RESP_NEED_MORE) {
			if (off + have >= size)
				break;
			continue;
		}
		out[n++] = digest(&p, rc);
		if (rc == DLRT_RESP_ERROR)
			break;
		if (p.used == 0 || p.used > have)
			abort(); /* progress and bounds */
		off += p.used;
		have -= p.used;
		if (have == 0 && off >= size)
			break;
	}
	free(win);
	dlrt_resp_free(&p);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dlrt_kv *kv;
	static uint64_t a[256], b[256];
	struct dlrt_store_session s[2];
	struct dlrt_buf in[2], out;
	size_t na, nb, chunk, turn = 0;
	bool two = data[0] & 0x40, clock = data[0] & 0x20;

	if (size == 0)
		return 0;
	chunk = data[0] % 17 + 1;
	na = parse_all(data + 1, size - 1, 0, a);
	nb = parse_all(data + 1, size - 1, chunk, b);
	if (na != nb || memcmp(a, b, na * sizeof(a[0])) != 0)
		abort();

	if (!kv) {
		kv = dlrt_kv_create(MAX_BULK);
		if (!kv)
			return 0;
		dlrt_kv_stop_clock(kv); /* only the input moves time: reproducible */
	}
	dlrt_kv_flush(kv);
	while (dlrt_kv_expire_cycle(kv, 1000))
		;
	if (dlrt_kv_count(kv) || dlrt_kv_volatile_count(kv))
		abort(); /* FLUSHALL leaves nothing, TTLs included */
	dlrt_kv_set_max_memory(kv, MAX_MEMORY);
	dlrt_kv_set_tx_limits(kv, TX_BYTES, TX_COUNT);
	dlrt_buf_init(&out, 1 << 20);
	for (int i = 0; i < 2; i++) {
		dlrt_store_session_init(&s[i], kv, MAX_BULK, MAX_ARGS);
		s[i].out_pause = data[0] & 0x80 ? 64 : 0;
		dlrt_buf_init(&in[i], 1 << 20);
	}
	/* Arrive in chunks, as from the network. */
	for (size_t off = 1; off < size; off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;

		if (two)
			turn ^= 1;
		if (clock) {
			dlrt_kv_advance_clock(kv, 7);
			dlrt_kv_expire_cycle(kv, 3);
		}
		if (dlrt_buf_append(&in[turn], data + off, n) < 0)
			break;
		if (dlrt_store_session_feed(&s[turn], kv, &in[turn], &out, NULL, NULL) < 0)
			break;
		if (dlrt_kv_used(kv) > MAX_MEMORY)
			abort(); /* the store's bound */
		if (dlrt_kv_volatile_count(kv) > dlrt_kv_count(kv))
			abort(); /* every key with a TTL is a key */
		dlrt_buf_consume(&out, out.len); /* "sent" */
	}
	/* Closing a client in MULTI or with WATCHed keys releases them: the
	 * next input's writes would touch freed memory otherwise (ASan). */
	for (int i = 0; i < 2; i++) {
		dlrt_buf_free(&in[i]);
		dlrt_store_session_free(&s[i]);
	}
	if (dlrt_kv_held(kv))
		abort(); /* what clients held (queues, watches, names) is given back */
	dlrt_buf_free(&out);
	return 0;
}
