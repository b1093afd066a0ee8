/* test_pslite_msg.c - the ps-lite contract test's wire format (tests/progs/mxnet/pslite_msg.c).
 *
 * Round trips of every message type, byte-by-byte arrival (0 = need more),
 * and the decoder's refusals: bad magic/version/type, oversized bodies,
 * wrong senders, host names instead of numeric addresses, bad node tables
 * (duplicate ids, ranks with gaps, the receiver missing), trailing bytes.
 */
#include <stdint.h>
#include <string.h>

#include "tests/progs/mxnet/pslite_msg.h"
#include "tap.h"

static struct dlrt_err err;

/* Decodes exactly one message that must fill the buffer. */
static int decode_all(const struct dlrt_buf *b, struct dlrt_pslite_msg *m)
{
	size_t used = 0;
	int rc = dlrt_pslite_msg_decode(dlrt_buf_head(b), b->len, m, &used, &err);

	return rc == 1 && used == b->len ? 1 : rc == 1 ? -9 : rc;
}

/* Every strict prefix must ask for more bytes, unless the header is bad. */
static int prefixes_incomplete(const struct dlrt_buf *b)
{
	struct dlrt_pslite_msg m;
	size_t used;

	for (size_t l = 0; l < b->len; l++)
		if (dlrt_pslite_msg_decode(dlrt_buf_head(b), l, &m, &used, &err) != 0)
			return 0;
	return 1;
}

static struct dlrt_pslite_node node(int32_t id, uint8_t role, const char *ip, uint16_t port)
{
	struct dlrt_pslite_node n = { .id = id, .role = role, .port = port };

	snprintf(n.ip, sizeof(n.ip), "%s", ip);
	return n;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void test_add_node(void)
{
	struct dlrt_pslite_node self = node(0, DLRT_PSLITE_WORKER, "10.77.0.12", 40123), bad;
	struct dlrt_pslite_msg m;
	struct dlrt_buf b;

	dlrt_buf_init(&b, 1 << 20);
	TAP_IS_INT(dlrt_pslite_put_add_node(&b, &self, &err), 0, "encode ADD_NODE");
	TAP_IS_INT(decode_all(&b, &m), 1, "decode ADD_NODE");
	TAP_OK(m.type == DLRT_PSLITE_ADD_NODE && m.sender == 0 && m.node.role == DLRT_PSLITE_WORKER &&
	       !strcmp(m.node.ip, "10.77.0.12") && m.node.port == 40123, "ADD_NODE fields survive");
	TAP_OK(prefixes_incomplete(&b), "every prefix of ADD_NODE needs more bytes");
	/* A host name where ZMQ needs a numeric address. */
	memcpy(dlrt_buf_head(&b) + DLRT_PSLITE_HDR_LEN + 2, "nodename12", 10);
	TAP_IS_INT(decode_all(&b, &m), -1, "ADD_NODE with a host name is refused");
	TAP_OK(strstr(err.msg, "numeric") != NULL, "... saying it must be numeric: %s", err.msg);
	bad = node(0, DLRT_PSLITE_SCHEDULER, "10.0.0.1", 1);
	TAP_IS_INT(dlrt_pslite_put_add_node(&b, &bad, &err), -1, "encoder refuses role scheduler");
	bad = node(0, DLRT_PSLITE_SERVER, "10.0.0.1", 0);
	TAP_IS_INT(dlrt_pslite_put_add_node(&b, &bad, &err), -1, "encoder refuses port 0");
	dlrt_buf_free(&b);
}

static void test_header(void)
{
	struct dlrt_pslite_msg m;
	struct dlrt_buf b;
	uint8_t *h;

	dlrt_buf_init(&b, 1 << 20);
	dlrt_pslite_put_ctl(&b, DLRT_PSLITE_BARRIER, 9, 1, &err);
	TAP_IS_INT(decode_all(&b, &m), 1, "decode BARRIER");
	TAP_OK(m.type == DLRT_PSLITE_BARRIER && m.sender == 9 && m.arg == 1, "BARRIER fields");
	h = dlrt_buf_head(&b);
	h[0] ^= 0xff;
	TAP_IS_INT(decode_all(&b, &m), -1, "bad magic refused");
	h[0] ^= 0xff;
	h[5] = 2;
	TAP_IS_INT(decode_all(&b, &m), -1, "unknown version refused");
	h[5] = 1;
	h[7] = 0;
	TAP_IS_INT(decode_all(&b, &m), -1, "type 0 refused");
	h[7] = DLRT_PSLITE_TYPE_MAX + 1;
	TAP_IS_INT(decode_all(&b, &m), -1, "unknown type refused");
	h[7] = DLRT_PSLITE_BARRIER;
	put_be32(h + 12, DLRT_PSLITE_MAX_BODY + 1);
	/* Refused from the header alone: no waiting for 16 MiB that never come. */
	TAP_IS_INT(decode_all(&b, &m), -1, "oversized body refused before it arrives");
	put_be32(h + 12, 4);
	put_be32(h + 16, 2);
	TAP_IS_INT(decode_all(&b, &m), -1, "barrier number 2 refused");
	put_be32(h + 16, 1);
	put_be32(h + 8, 7);
	TAP_IS_INT(decode_all(&b, &m), -1, "BARRIER from id 7 (no such node) refused");
	put_be32(h + 8, 1);
	h[7] = DLRT_PSLITE_BARRIER_DONE;
	TAP_IS_INT(decode_all(&b, &m), 1, "BARRIER_DONE from the scheduler accepted");
	put_be32(h + 8, 9);
	TAP_IS_INT(decode_all(&b, &m), -1, "BARRIER_DONE from a worker refused");
	dlrt_buf_free(&b);
}

static void test_kv(void)
{
	int64_t v[5] = { 1, -2, 3, INT64_MAX, INT64_MIN };
	struct dlrt_pslite_msg m;
	struct dlrt_buf b;
	int same = 1;

	dlrt_buf_init(&b, 1 << 20);
	TAP_IS_INT(dlrt_pslite_put_kv(&b, DLRT_PSLITE_PUSH, 11, 3, 100, 5, v, &err), 0, "encode PUSH");
	TAP_IS_INT(decode_all(&b, &m), 1, "decode PUSH");
	for (uint32_t i = 0; i < 5; i++)
		same &= dlrt_pslite_value(&m, i) == v[i];
	TAP_OK(m.round == 3 && m.key == 100 && m.count == 5 && same, "PUSH values survive");
	TAP_OK(prefixes_incomplete(&b), "every prefix of PUSH needs more bytes");
	put_be32(dlrt_buf_head(&b) + 8, 10);
	TAP_IS_INT(decode_all(&b, &m), -1, "PUSH from a server id refused");
	b.len = 0;
	dlrt_pslite_put_kv(&b, DLRT_PSLITE_PULL_REPLY, 8, 0, 0, 5, v, &err);
	TAP_IS_INT(decode_all(&b, &m), 1, "PULL_REPLY from a server");
	b.len--;
	TAP_IS_INT(decode_all(&b, &m), 0, "truncated PULL_REPLY needs more");
	put_be32(dlrt_buf_head(&b) + 12, 16 + 8 * 5 - 1);
	TAP_IS_INT(decode_all(&b, &m), -1, "PULL_REPLY body not 16 + 8*count refused");
	b.len = 0;
	dlrt_pslite_put_kv(&b, DLRT_PSLITE_PULL, 9, 0, DLRT_PSLITE_MAX_VALUES - 1, 1, NULL, &err);
	TAP_IS_INT(decode_all(&b, &m), 1, "PULL of the last key");
	put_be32(dlrt_buf_head(&b) + DLRT_PSLITE_HDR_LEN + 12, 2);
	TAP_IS_INT(decode_all(&b, &m), -1, "PULL past the last key refused");
	TAP_IS_INT(dlrt_pslite_put_kv(&b, DLRT_PSLITE_PUSH, 9, 0, 0, 1, NULL, &err), -1,
		   "encoder refuses PUSH without values");
	dlrt_buf_free(&b);
}

static void test_table(void)
{
	struct dlrt_pslite_node t[4] = {
		node(8, DLRT_PSLITE_SERVER, "10.0.0.1", 5000),
		node(10, DLRT_PSLITE_SERVER, "10.0.0.2", 5000),
		node(9, DLRT_PSLITE_WORKER, "10.0.0.1", 5001),
		node(11, DLRT_PSLITE_WORKER, "10.0.0.3", 5001),
	};
	struct dlrt_pslite_node n;
	struct dlrt_pslite_msg m;
	struct dlrt_buf b;
	size_t off = 0;
	int k = 0, same = 1;

	dlrt_buf_init(&b, 1 << 20);
	TAP_IS_INT(dlrt_pslite_put_table(&b, 11, t, 4, &err), 0, "encode NODE_TABLE");
	TAP_IS_INT(decode_all(&b, &m), 1, "decode NODE_TABLE");
	TAP_OK(m.your_id == 11 && m.nnodes == 4 && m.nservers == 2 && m.nworkers == 2,
	       "table counts: 2 servers, 2 workers, receiver id 11");
	while (dlrt_pslite_table_next(&m, &off, &n)) {
		same &= k < 4 && n.id == t[k].id && n.role == t[k].role && n.port == t[k].port &&
			!strcmp(n.ip, t[k].ip);
		k++;
	}
	TAP_OK(k == 4 && same, "table entries survive in order");
	TAP_OK(prefixes_incomplete(&b), "every prefix of NODE_TABLE needs more bytes");
	b.len = 0;
	dlrt_pslite_put_table(&b, 13, t, 4, &err);
	TAP_IS_INT(decode_all(&b, &m), -1, "a table without the receiver's id refused");
	b.len = 0;
	t[3].id = 9;
	dlrt_pslite_put_table(&b, 9, t, 4, &err);
	TAP_IS_INT(decode_all(&b, &m), -1, "duplicate ids refused: %s", err.msg);
	b.len = 0;
	t[3].id = 13;
	dlrt_pslite_put_table(&b, 9, t, 4, &err);
	TAP_IS_INT(decode_all(&b, &m), -1, "worker ranks 0 and 2 (a gap) refused");
	b.len = 0;
	t[3].id = 10;
	dlrt_pslite_put_table(&b, 9, t, 4, &err);
	TAP_IS_INT(decode_all(&b, &m), -1, "a server id on a worker refused");
	b.len = 0;
	t[3].id = 11;
	dlrt_pslite_put_table(&b, 9, t, 4, &err);
	put_be32(dlrt_buf_head(&b) + 8, 9);
	TAP_IS_INT(decode_all(&b, &m), -1, "NODE_TABLE not from the scheduler refused");
	b.len = 0;
	dlrt_pslite_put_table(&b, 9, t, 4, &err);
	dlrt_buf_append(&b, "x", 1);
	put_be32(dlrt_buf_head(&b) + 12, (uint32_t)(b.len - DLRT_PSLITE_HDR_LEN));
	TAP_IS_INT(decode_all(&b, &m), -1, "a byte after the last entry refused");
	TAP_IS_INT(dlrt_pslite_put_table(&b, 9, t, 0, &err), -1, "encoder refuses an empty table");
	dlrt_buf_free(&b);
}

static void test_stream(void)
{
	struct dlrt_pslite_node self = node(0, DLRT_PSLITE_SERVER, "127.0.0.1", 7);
	int64_t v[2] = { 4, 5 };
	struct dlrt_pslite_msg m;
	struct dlrt_buf b;
	size_t used, off = 0;
	int types[3], n = 0, rc;

	dlrt_buf_init(&b, 1 << 20);
	dlrt_pslite_put_add_node(&b, &self, &err);
	dlrt_pslite_put_ctl(&b, DLRT_PSLITE_HEARTBEAT, 8, 0, &err);
	dlrt_pslite_put_kv(&b, DLRT_PSLITE_PUSH, 9, 1, 0, 2, v, &err);
	while ((rc = dlrt_pslite_msg_decode(dlrt_buf_head(&b) + off, b.len - off, &m, &used,
					    &err)) == 1 && n < 3) {
		types[n++] = m.type;
		off += used;
	}
	TAP_OK(rc == 0 && n == 3 && off == b.len && types[0] == DLRT_PSLITE_ADD_NODE &&
	       types[1] == DLRT_PSLITE_HEARTBEAT && types[2] == DLRT_PSLITE_PUSH,
	       "three messages back to back decode in order");
	dlrt_buf_free(&b);
}

int main(void)
{
	test_add_node();
	test_header();
	test_kv();
	test_table();
	test_stream();
	return tap_done();
}
