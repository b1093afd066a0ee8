/* fuzz_pslite.c - libFuzzer target for the ps-lite contract test's message
 * decoder (tests/progs/mxnet/pslite_msg.c), which reads bytes from the network.
 *
 * The input is read as a stream of messages, as a connection delivers them.
 * For each decoded message:
 *  1. re-encoding it must give back exactly the input bytes (the decoder is
 *     strict, so the encoding is canonical: nothing it accepts is ambiguous);
 *  2. every shorter prefix of it must decode to "need more bytes", never to
 *     a message or an error (incremental reading depends on this).
 * A refused message must come with a one-line error.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/progs/mxnet/pslite_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct dlrt_pslite_node table[DLRT_PSLITE_MAX_NODES];

static void reencode(const struct dlrt_pslite_msg *m, const uint8_t *p, size_t used)
{
	struct dlrt_buf b;
	struct dlrt_err err;
	int64_t *v = NULL;
	size_t n = 0, off = 0;
	int rc;

	dlrt_buf_init(&b, DLRT_PSLITE_HDR_LEN + DLRT_PSLITE_MAX_BODY);
	switch (m->type) {
	case DLRT_PSLITE_ADD_NODE:
		rc = dlrt_pslite_put_add_node(&b, &m->node, &err);
		break;
	case DLRT_PSLITE_NODE_TABLE:
		while (n < DLRT_PSLITE_MAX_NODES && dlrt_pslite_table_next(m, &off, &table[n]))
			n++;
		if (n != m->nnodes)
			abort();
		rc = dlrt_pslite_put_table(&b, m->your_id, table, n, &err);
		break;
	case DLRT_PSLITE_PUSH:
	case DLRT_PSLITE_PULL_REPLY:
		v = malloc(m->count * sizeof(*v));
		if (!v)
			abort();
		for (uint32_t i = 0; i < m->count; i++)
			v[i] = dlrt_pslite_value(m, i);
		/* fall through */
	case DLRT_PSLITE_PUSH_ACK:
	case DLRT_PSLITE_PULL:
		rc = dlrt_pslite_put_kv(&b, m->type, m->sender, m->round, m->key, m->count, v, &err);
		break;
	default:
		rc = dlrt_pslite_put_ctl(&b, m->type, m->sender, m->arg, &err);
		break;
	}
	if (rc != 0 || b.len != used || memcmp(dlrt_buf_head(&b), p, used) != 0)
		abort();
	free(v);
	dlrt_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	for (;;) {
		struct dlrt_pslite_msg m;
		struct dlrt_err err = { "" };
		size_t used = 0, u2;
		int rc = dlrt_pslite_msg_decode(data + off, size - off, &m, &used, &err);

		if (rc == 0)
			break;
		if (rc < 0) {
			if (!err.msg[0] || strchr(err.msg, '\n'))
				abort();
			break;
		}
		if (used < DLRT_PSLITE_HDR_LEN || used > size - off)
			abort();
		reencode(&m, data + off, used);
		/* Prefixes: all of them for small messages, a sample for big ones. */
		for (size_t l = 0; l < used; l = used > 256 && l > 32 && l < used - 32 ? used - 32 : l + 1)
			if (dlrt_pslite_msg_decode(data + off, l, &m, &u2, &err) != 0)
				abort();
		off += used;
	}
	return 0;
}
