/* test_tcpstore.c - torch's TCPStore protocol as dlrt-c10d-store serves it
 * (launchers/torch/tcpstore.c), driven with raw request bytes.
 *
 * The requests are written as hex, byte for byte what torch 1.13's c10d
 * client sends (captured from python3-torch's TCPStore and
 * init_process_group on this architecture): query byte, then 64-bit
 * little-endian lengths and integers. The expected replies are what torch's
 * own server (TCPStoreMasterDaemon) answers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launchers/torch/tcpstore.h"
#include "tap.h"

struct cl {
	struct dlrt_tcpstore_client c;
	struct dlrt_buf in, out;
	int woken;
	int closed;
};

static void on_wake(struct dlrt_tcpstore_client *c, void *arg)
{
	(void)arg;
	((struct cl *)c->owner)->woken++;
}

static void cl_init(struct dlrt_tcpstore *s, struct cl *k)
{
	memset(k, 0, sizeof(*k));
	dlrt_buf_init(&k->in, 1 << 24);
	dlrt_buf_init(&k->out, 1 << 16);
	dlrt_tcpstore_client_init(s, &k->c, &k->out, k);
}

static void cl_free(struct cl *k)
{
	dlrt_tcpstore_client_free(&k->c);
	dlrt_buf_free(&k->in);
	dlrt_buf_free(&k->out);
}

static size_t unhex(const char *hex, uint8_t *out)
{
	size_t n = 0;

	while (*hex) {
		unsigned v;

		if (*hex == ' ') {
			hex++;
			continue;
		}
		sscanf(hex, "%2x", &v);
		out[n++] = (uint8_t)v;
		hex += 2;
	}
	return n;
}

/* Feeds hex bytes, `chunk` at a time (0 = all at once); returns the reply
 * bytes as hex (and drains them). */
static const char *sendx(struct cl *k, const char *hex, size_t chunk)
{
	static uint8_t raw[1 << 16];
	static char reply[1 << 17];
	size_t n = unhex(hex, raw), o = 0;

	if (!chunk)
		chunk = n ? n : 1;
	while (o < n && !k->closed) {
		size_t m = n - o < chunk ? n - o : chunk;

		dlrt_buf_append(&k->in, raw + o, m);
		o += m;
		k->closed = dlrt_tcpstore_feed(&k->c, &k->in, NULL, NULL) < 0;
	}
	if (!n)
		k->closed = dlrt_tcpstore_feed(&k->c, &k->in, NULL, NULL) < 0;
	reply[0] = 0;
	for (size_t i = 0; i < k->out.len && i < sizeof(reply) / 2 - 1; i++)
		sprintf(reply + 2 * i, "%02x", dlrt_buf_head(&k->out)[i]);
	dlrt_buf_consume(&k->out, k->out.len);
	return reply;
}

/* Feeds raw bytes; the replies stay in k->out (a client that does not read). */
static void feed_raw(struct cl *k, const void *p, size_t n)
{
	dlrt_buf_append(&k->in, p, n);
	k->closed = dlrt_tcpstore_feed(&k->c, &k->in, NULL, NULL) < 0;
}

static size_t put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8); /* host order, as torch */
	return 8;
}

/* WAIT on nkeys missing keys of klen bytes (tagged, so each client's differ). */
static size_t wait_req(uint8_t *p, int tag, size_t nkeys, size_t klen)
{
	size_t n = 0;

	p[n++] = 5;
	n += put_u64(p + n, nkeys);
	for (size_t i = 0; i < nkeys; i++) {
		n += put_u64(p + n, klen);
		memset(p + n, 'k', klen);
		p[n] = (uint8_t)tag;
		p[n + 1] = (uint8_t)i;
		n += klen;
	}
	return n;
}

static int refused_full(const struct cl *k)
{
	return k->closed && k->c.error && strstr(k->c.error, "the store is full (--max-store=4096");
}

/* Everything the store holds for its clients counts against --max-store:
 * parked WAITs' key lists, unfinished requests, replies not yet read. */
static void test_held(const struct dlrt_tcpstore_limits *lim)
{
	struct dlrt_tcpstore *s = dlrt_tcpstore_create(lim, on_wake, NULL);
	struct cl w[10];
	uint8_t req[2048];
	size_t n;
	int parked = 0, refused = 0;

	/* A WAIT on 8 keys of 60 bytes holds 544 bytes of key list (+64). */
	for (int i = 0; i < 10; i++) {
		cl_init(s, &w[i]);
		feed_raw(&w[i], req, wait_req(req, i, 8, 60));
		parked += w[i].c.waiting;
		refused += refused_full(&w[i]);
	}
	TAP_IS_INT(parked, 6, "6 WAITs on 8 keys of 60 bytes park within --max-store=4096");
	TAP_IS_INT(refused, 4, "the next 4 are refused: the store is full");
	TAP_OK(dlrt_tcpstore_bytes(s) + dlrt_tcpstore_held(s) <= lim->max_store,
	       "what it holds stays within the bound (%zu)", dlrt_tcpstore_held(s));
	for (int i = 0; i < 10; i++)
		cl_free(&w[i]);
	TAP_IS_INT(dlrt_tcpstore_held(s), 0, "clients that leave give it all back");

	/* Unfinished requests: all but the last 5 bytes of a 577-byte WAIT each. */
	n = wait_req(req, 0, 8, 63) - 5;
	parked = refused = 0;
	for (int i = 0; i < 8; i++) {
		cl_init(s, &w[i]);
		feed_raw(&w[i], req, n);
		parked += !w[i].closed;
		refused += refused_full(&w[i]);
	}
	TAP_IS_INT(parked, 7, "7 unfinished requests of %zu bytes are held", n);
	TAP_IS_INT(refused, 1, "the 8th is refused: the store is full");
	for (int i = 0; i < 8; i++)
		cl_free(&w[i]);

	/* Replies a client does not read: a 400-byte value, GET 20 times. */
	cl_init(s, &w[0]);
	cl_init(s, &w[1]);
	n = 0;
	req[n++] = 0;
	n += put_u64(req + n, 1);
	req[n++] = 'v';
	n += put_u64(req + n, 400);
	memset(req + n, 'x', 400);
	n += 400;
	feed_raw(&w[0], req, n);
	TAP_OK(!w[0].closed, "SET of 400 bytes");
	n = 0;
	for (int i = 0; i < 20; i++) {
		req[n++] = 2;
		n += put_u64(req + n, 1);
		req[n++] = 'v';
	}
	feed_raw(&w[1], req, n);
	TAP_OK(refused_full(&w[1]), "GETs whose replies are never read are refused at the bound");
	TAP_IS_INT(w[1].out.len, 8 * 408, "after 8 replies of 408 bytes (497 stored)");
	cl_free(&w[1]);
	feed_raw(&w[0], req, 10);
	TAP_IS_INT(w[0].out.len, 408, "a client that reads is answered once they are gone");
	cl_free(&w[0]);
	dlrt_tcpstore_destroy(s);
}

/* torch 2.x (Debian 13's 2.6): VALIDATE and PING open the connection, the
 * query numbers are shifted by one, and APPEND, MULTI_GET, MULTI_SET and
 * CANCEL_WAIT are new. The bytes are what its client sends. */
static void test_torch2(void)
{
	struct dlrt_tcpstore *s = dlrt_tcpstore_create(NULL, on_wake, NULL);
	struct cl a, b;

	cl_init(s, &a);
	cl_init(s, &b);
	TAP_IS_STR(sendx(&a, "00 cef7853c", 0), "", "VALIDATE with torch's magic number: no reply");
	TAP_OK(a.c.torch2 && !a.closed, "the connection speaks torch 2.x from then on");
	TAP_IS_STR(sendx(&a, "0d 39300000", 2), "39300000", "PING: the nonce comes back");
	TAP_IS_STR(sendx(&a, "04 0500000000000000 696e69742f 0100000000000000", 0),
		   "0100000000000000", "ADD (4) init/ 1 answers 1");
	TAP_IS_STR(sendx(&a, "01 0200000000000000 2f6b 0100000000000000 76", 0), "", "SET (1)");
	TAP_IS_STR(sendx(&a, "06 0100000000000000 0200000000000000 2f6b"
			 "03 0200000000000000 2f6b", 0),
		   "00" "0100000000000000" "76", "WAIT (6) then GET (3)");
	TAP_IS_STR(sendx(&a, "09 0200000000000000 2f6b 0200000000000000 7778", 0), "",
		   "APPEND (9) to /k");
	TAP_IS_STR(sendx(&a, "09 0200000000000000 2f61 0100000000000000 7a", 0), "",
		   "APPEND to a missing /a creates it");
	TAP_IS_STR(sendx(&a, "0b 0100000000000000 0200000000000000 2f6d 0100000000000000 6d", 0),
		   "", "MULTI_SET (11) /m");
	TAP_IS_STR(sendx(&a, "0a 0300000000000000 0200000000000000 2f6b 0200000000000000 2f61"
			 "0200000000000000 2f6d", 0),
		   "0300000000000000" "767778" "0100000000000000" "7a" "0100000000000000" "6d",
		   "MULTI_GET (10) /k /a /m: each value, in order");
	TAP_IS_STR(sendx(&a, "05 0100000000000000 0200000000000000 2f6d", 0), "00", "CHECK (5) READY");
	TAP_IS_STR(sendx(&a, "07", 0), "0400000000000000", "GETNUMKEYS (7): 4");
	TAP_IS_STR(sendx(&a, "08 0200000000000000 2f61", 0), "0100000000000000", "DELETE_KEY (8)");
	TAP_IS_STR(sendx(&a, "02 0200000000000000 2f6d 0100000000000000 6d 0100000000000000 6e", 0),
		   "0100000000000000" "6e", "COMPARE_SET (2) swaps");

	/* A WAIT that times out on the client's side: CANCEL_WAIT while parked. */
	TAP_IS_STR(sendx(&b, "00 cef7853c 06 0100000000000000 0200000000000000 2f7a", 0), "",
		   "a second client WAITs on a missing /z");
	TAP_OK(b.c.waiting, "it is parked");
	TAP_IS_STR(sendx(&b, "0c", 0), "01", "CANCEL_WAIT (12): WAIT_CANCELED");
	TAP_OK(!b.c.waiting && !b.closed, "no longer parked, still connected");
	TAP_IS_STR(sendx(&a, "01 0200000000000000 2f7a 0000000000000000", 0), "", "SET /z");
	TAP_IS_STR(sendx(&b, "", 0), "", "the cancelled waiter is not answered again");
	TAP_IS_STR(sendx(&b, "0e", 0), "", "a queue query (14)...");
	TAP_OK(b.closed && strstr(b.c.error, "queue"), "...is refused with a reason: %s",
	       b.c.error ? b.c.error : "");
	cl_free(&a);
	cl_free(&b);
	cl_init(s, &a);
	TAP_IS_STR(sendx(&a, "00 cef7853c 07 00 00000000", 0), "0400000000000000", "VALIDATE, GETNUMKEYS");
	TAP_OK(a.closed, "then 0, a second VALIDATE with a wrong number, closes: %s",
	       a.c.error ? a.c.error : "");
	cl_free(&a);
	dlrt_tcpstore_destroy(s);
}

/* Lengths and integers as torch writes them (little-endian on x86/arm64). */
#define L(n) #n "00000000000000"

int main(void)
{
	struct dlrt_tcpstore_limits lim = { 64, 512, 4096, 8 };
	struct dlrt_tcpstore *s = dlrt_tcpstore_create(NULL, on_wake, NULL);
	struct cl a, b, c;

	/* torch 1.13: TCPStore(host, port, world_size, False) connects, then
	 * ADDs 1 to "init/" (waitForWorkers). Captured bytes. */
	cl_init(s, &a);
	cl_init(s, &b);
	TAP_IS_STR(sendx(&a, "03 0500000000000000 696e69742f 0100000000000000", 0),
		   "0100000000000000", "ADD init/ 1 (torch's connect) answers 1");
	TAP_IS_STR(sendx(&b, "03 0500000000000000 696e69742f 0100000000000000", 1),
		   "0200000000000000", "the same request a byte at a time answers 2");
	/* get(): WAIT for the key, then GET; torch keeps counters as text. */
	TAP_IS_STR(sendx(&a, "05 0100000000000000 0500000000000000 696e69742f"
			 "02 0500000000000000 696e69742f", 0),
		   "00" "0100000000000000" "32", "WAIT+GET pipelined: STOP_WAITING, then \"2\"");

	/* set("/k", "v") has no reply; get returns the bytes. */
	TAP_IS_STR(sendx(&a, "00 0200000000000000 2f6b 0100000000000000 76", 3), "",
		   "SET has no reply");
	TAP_IS_STR(sendx(&b, "02 0200000000000000 2f6b", 0), "0100000000000000" "76",
		   "GET /k gives v");

	/* WAIT on a missing key parks the client; the SET that creates it
	 * answers the waiter (and only then). */
	TAP_IS_STR(sendx(&b, "05 0200000000000000 0200000000000000 2f6b 0200000000000000 2f77", 0),
		   "", "WAIT on /k and a missing /w: no answer yet");
	TAP_OK(b.c.waiting, "the waiter is parked, the server goes on");
	TAP_IS_STR(sendx(&b, "06", 0), "", "a parked client's next request waits behind it");
	TAP_IS_STR(sendx(&a, "04 0200000000000000 0200000000000000 2f6b 0200000000000000 2f77", 0),
		   "01", "CHECK /k /w: NOT_READY");
	TAP_IS_STR(sendx(&a, "00 0200000000000000 2f77 0000000000000000", 0), "",
		   "SET /w (empty value)");
	TAP_IS_INT(b.woken, 1, "the waiter was woken once");
	TAP_OK(!b.c.waiting, "and is no longer parked");
	TAP_IS_STR(sendx(&b, "", 0), "00" "0300000000000000",
		   "it got STOP_WAITING, then its queued GETNUMKEYS (3 keys)");
	TAP_IS_STR(sendx(&a, "04 0100000000000000 0200000000000000 2f77", 0), "00",
		   "CHECK /w: READY");

	/* COMPARE_SET, torch's semantics. */
	TAP_IS_STR(sendx(&a, "01 0200000000000000 2f63 0000000000000000 0100000000000000 31", 0),
		   "0100000000000000" "31", "COMPARE_SET on a missing key with empty expected creates it");
	TAP_IS_STR(sendx(&a, "01 0200000000000000 2f63 0100000000000000 30 0100000000000000 32", 0),
		   "0100000000000000" "31", "COMPARE_SET with the wrong expected value returns the current");
	TAP_IS_STR(sendx(&a, "01 0200000000000000 2f63 0100000000000000 31 0100000000000000 32", 0),
		   "0100000000000000" "32", "COMPARE_SET with the right expected value swaps");
	TAP_IS_STR(sendx(&a, "01 0200000000000000 2f78 0100000000000000 31 0100000000000000 32", 0),
		   "0100000000000000" "31", "COMPARE_SET on a missing key with an expected value returns it");
	TAP_IS_STR(sendx(&a, "08 0200000000000000 2f63", 0), "0100000000000000", "DELETE_KEY /c: 1");
	TAP_IS_STR(sendx(&a, "08 0200000000000000 2f63", 0), "0000000000000000", "DELETE_KEY /c again: 0");
	TAP_IS_STR(sendx(&a, "03 0500000000000000 696e69742f ffffffffffffffff", 0),
		   "0100000000000000", "ADD -1");
	TAP_IS_STR(sendx(&a, "03 0200000000000000 2f6b 0100000000000000", 0), "",
		   "ADD on a value that is not a number...");
	TAP_OK(a.closed && a.c.error, "...closes the client (%s)", a.c.error ? a.c.error : "");
	cl_free(&a);

	/* Refusals: each closes the connection with a reason. */
	cl_init(s, &a);
	sendx(&a, "02 0300000000000000 2f6e6f", 0);
	TAP_OK(a.closed, "GET of a missing key closes the client, as torch's server does");
	cl_free(&a);
	cl_init(s, &a);
	sendx(&a, "07 0200000000000000 2f6b", 0);
	TAP_OK(a.closed && strstr(a.c.error, "WATCH_KEY"), "WATCH_KEY is refused with a reason");
	cl_free(&a);
	cl_init(s, &a);
	sendx(&a, "09", 0);
	TAP_OK(a.closed, "an unknown query type closes the client");
	cl_free(&a);
	cl_init(s, &a);
	sendx(&a, "00 cef7853d", 0);
	TAP_OK(!a.closed, "torch 1.x: query 0 with another number is a SET (of a long key)...");
	cl_free(&a);
	cl_free(&b);
	dlrt_tcpstore_destroy(s);

	/* Limits (small ones): key, value, keys per WAIT, whole store. */
	s = dlrt_tcpstore_create(&lim, on_wake, NULL);
	cl_init(s, &a);
	sendx(&a, "00 4100000000000000", 0);
	TAP_OK(a.closed && strstr(a.c.error, "--max-key"), "a 65-byte key is refused at its length");
	cl_free(&a);
	cl_init(s, &a);
	sendx(&a, "00 0100000000000000 6b 0102000000000000", 0);
	TAP_OK(a.closed && strstr(a.c.error, "--max-value"), "a 513-byte value is refused at its length");
	cl_free(&a);
	cl_init(s, &a);
	sendx(&a, "05 0900000000000000", 0);
	TAP_OK(a.closed && strstr(a.c.error, "--max-wait-keys"), "a WAIT on 9 keys is refused");
	cl_free(&a);
	cl_init(s, &a);
	sendx(&a, "00 ffffffffffffffff", 0);
	TAP_OK(a.closed, "a key length of 2^64-1 is refused, nothing allocated");
	cl_free(&a);
	cl_init(s, &a);
	{
		char req[2048];
		int full = 0;

		for (int i = 0; i < 20 && !a.closed; i++) {
			snprintf(req, sizeof(req), "00 0200000000000000 6b%02x 0001000000000000 %0512d",
				 i, 0);
			sendx(&a, req, 0);
			full = i;
		}
		TAP_OK(a.closed && strstr(a.c.error, "--max-store"),
		       "the store refuses to grow past --max-store (after %d values)", full);
		TAP_OK(dlrt_tcpstore_bytes(s) <= lim.max_store, "and holds no more than it");
	}
	cl_free(&a);

	/* A waiter that disconnects is forgotten (ASan checks the wake path). */
	cl_init(s, &a);
	cl_init(s, &b);
	cl_init(s, &c);
	sendx(&b, "05 0100000000000000 0100000000000000 7a", 0);
	sendx(&c, "05 0100000000000000 0100000000000000 7a", 0);
	cl_free(&b);
	TAP_IS_STR(sendx(&a, "00 0100000000000000 7a 0000000000000000", 0), "",
		   "SET z with one waiter gone");
	TAP_IS_INT(c.woken, 1, "the remaining waiter is woken");
	TAP_IS_STR(sendx(&c, "", 0), "00", "and answered");
	cl_free(&a);
	cl_free(&c);
	dlrt_tcpstore_destroy(s);
	test_held(&lim);
	test_torch2();
	return tap_done();
}
