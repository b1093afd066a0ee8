/* test_resp_tx.c - the helper store's transactions and expiry, driven as the
 * server drives them (raw request bytes in, raw reply bytes out) with two
 * client sessions on one keyspace, and the store's clock moved forward by
 * the test instead of sleeping (launchers/caffe2/{kvtx,kvttl,kvstore}.c).
 * The expected replies are redis-server 7.0's; tests/unit/
 * resp_redis_compare.py checks the same against a running redis-server. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launchers/caffe2/kvstore.h"
#include "launchers/caffe2/store_session.h"
#include "tap.h"

static struct dlrt_kv *KV;
static struct dlrt_store_session A, B;
static int CLOSED;

/* Sends `in` on session s and returns the reply bytes (static). */
static const char *send_on(struct dlrt_store_session *s, const char *in, size_t n)
{
	static char reply[1 << 16];
	struct dlrt_buf bin, bout;
	size_t len;

	dlrt_buf_init(&bin, 1 << 24);
	dlrt_buf_init(&bout, 1 << 24);
	dlrt_buf_append(&bin, in, n);
	CLOSED = dlrt_store_session_feed(s, KV, &bin, &bout, NULL, NULL) < 0;
	len = bout.len < sizeof(reply) - 1 ? bout.len : sizeof(reply) - 1;
	memcpy(reply, dlrt_buf_head(&bout), len);
	reply[len] = '\0';
	dlrt_buf_free(&bin);
	dlrt_buf_free(&bout);
	return reply;
}

/* Inline requests ("SET a 1\r\n..."), several per call allowed. */
static const char *on(struct dlrt_store_session *s, const char *in)
{
	return send_on(s, in, strlen(in));
}

static void test_multi_exec(void)
{
	TAP_IS_STR(on(&A, "FLUSHALL\r\n"), "+OK\r\n", "FLUSHALL");
	TAP_IS_STR(on(&A, "EXEC\r\n"), "-ERR EXEC without MULTI\r\n", "EXEC without MULTI");
	TAP_IS_STR(on(&A, "DISCARD\r\n"), "-ERR DISCARD without MULTI\r\n", "DISCARD without MULTI");
	TAP_IS_STR(on(&A, "MULTI\r\n"), "+OK\r\n", "MULTI");
	TAP_OK(dlrt_kv_client_in_multi(&A.client), "the client is in MULTI");
	TAP_IS_STR(on(&A, "MULTI\r\n"), "-ERR MULTI calls can not be nested\r\n", "nested MULTI");
	TAP_IS_STR(on(&A, "SET a 1\r\nINCR a\r\nGET a\r\n"), "+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n",
		   "commands are queued");
	TAP_IS_STR(on(&B, "GET a\r\n"), "$-1\r\n", "another client does not see them yet");
	TAP_IS_STR(on(&A, "EXEC\r\n"), "*3\r\n+OK\r\n:2\r\n$1\r\n2\r\n",
		   "EXEC runs them and answers an array of their replies");
	TAP_OK(!dlrt_kv_client_in_multi(&A.client), "and ends the transaction");
	TAP_IS_STR(on(&A, "MULTI\r\nEXEC\r\n"), "+OK\r\n*0\r\n", "an empty transaction");

	/* redis-py's default pipeline: all of it in one write. */
	TAP_IS_STR(on(&A, "SET s text\r\nMULTI\r\nSET x 1\r\nINCR s\r\nSET y 2\r\nEXEC\r\n"),
		   "+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n"
		   "*3\r\n+OK\r\n-ERR value is not an integer or out of range\r\n+OK\r\n",
		   "a run-time error fails alone inside the array, the rest runs");
	TAP_IS_STR(on(&A, "MULTI\r\nSET c 1\r\nNOSUCH x\r\nSET d\r\nSET e 1\r\nEXEC\r\n"),
		   "+OK\r\n+QUEUED\r\n"
		   "-ERR unknown command 'NOSUCH', with args beginning with: 'x' \r\n"
		   "-ERR wrong number of arguments for 'set' command\r\n+QUEUED\r\n"
		   "-EXECABORT Transaction discarded because of previous errors.\r\n",
		   "an unknown command or a wrong count: EXECABORT");
	TAP_IS_STR(on(&A, "EXISTS c e\r\n"), ":0\r\n", "and none of it ran (not half-applied)");
	TAP_IS_STR(on(&A, "MULTI\r\nSET c 1\r\nEXEC x\r\nEXEC\r\n"),
		   "+OK\r\n+QUEUED\r\n-EXECABORT Transaction discarded because of: wrong number "
		   "of arguments for 'exec' command\r\n-ERR EXEC without MULTI\r\n",
		   "EXEC with arguments discards the transaction");
	TAP_IS_STR(on(&A, "MULTI\r\nSET c 1\r\nDISCARD\r\nEXISTS c\r\n"),
		   "+OK\r\n+QUEUED\r\n+OK\r\n:0\r\n", "DISCARD drops the queue");
	TAP_IS_STR(on(&A, "MULTI\r\nWATCH a\r\nSET c 1\r\nEXEC\r\n"),
		   "+OK\r\n-ERR WATCH inside MULTI is not allowed\r\n+QUEUED\r\n*1\r\n+OK\r\n",
		   "WATCH inside MULTI: an error that does not abort");
	TAP_IS_STR(on(&A, "MULTI\r\nSET q 1\r\n"), "+OK\r\n+QUEUED\r\n", "MULTI, then...");
	TAP_IS_STR(on(&A, "QUIT\r\n"), "+OK\r\n", "QUIT runs at once inside MULTI");
	TAP_OK(CLOSED, "and closes");
	dlrt_store_session_free(&A);
	dlrt_store_session_init(&A, KV, 0, 0);
	TAP_IS_STR(on(&B, "EXISTS q\r\n"), ":0\r\n", "the queue of a closed client never runs");
}

static void test_watch(void)
{
	on(&A, "SET w 1\r\n");
	TAP_IS_STR(on(&A, "WATCH w\r\n"), "+OK\r\n", "WATCH");
	TAP_IS_STR(on(&B, "SET w theirs\r\n"), "+OK\r\n", "another client changes the key");
	TAP_IS_STR(on(&A, "MULTI\r\nSET w mine\r\nEXEC\r\n"), "+OK\r\n+QUEUED\r\n*-1\r\n",
		   "EXEC answers a null array");
	TAP_IS_STR(on(&A, "GET w\r\n"), "$6\r\ntheirs\r\n", "and ran nothing");
	TAP_IS_STR(on(&A, "WATCH w\r\nMULTI\r\nSET w mine\r\nEXEC\r\n"),
		   "+OK\r\n+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n", "EXEC forgot the watch; no change: runs");
	TAP_IS_STR(on(&A, "WATCH w\r\n"), "+OK\r\n", "WATCH again");
	on(&B, "DEL w\r\n");
	TAP_IS_STR(on(&A, "MULTI\r\nSET w 2\r\nEXEC\r\n"), "+OK\r\n+QUEUED\r\n*-1\r\n",
		   "a DEL by another client is a change");
	TAP_IS_STR(on(&A, "WATCH nokey\r\n"), "+OK\r\n", "WATCH a missing key");
	on(&B, "DEL nokey\r\nFLUSHALL\r\n");
	TAP_IS_STR(on(&A, "MULTI\r\nSET nokey 1\r\nEXEC\r\n"), "+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n",
		   "deleting or flushing a missing key is no change");
	TAP_IS_STR(on(&A, "WATCH nokey\r\n"), "+OK\r\n", "WATCH an existing key");
	on(&B, "FLUSHALL\r\n");
	TAP_IS_STR(on(&A, "MULTI\r\nSET nokey 1\r\nEXEC\r\n"), "+OK\r\n+QUEUED\r\n*-1\r\n",
		   "FLUSHALL of a watched key that existed is a change");
	on(&A, "SET w 1\r\n");
	TAP_IS_STR(on(&A, "WATCH w\r\n"), "+OK\r\n", "WATCH");
	on(&B, "SET w 2\r\n");
	TAP_IS_STR(on(&A, "UNWATCH\r\nMULTI\r\nSET w 3\r\nEXEC\r\n"),
		   "+OK\r\n+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n", "UNWATCH forgets the change too");
	TAP_IS_STR(on(&A, "WATCH w\r\n"), "+OK\r\n", "WATCH");
	on(&B, "EXPIRE w 100\r\n");
	TAP_IS_STR(on(&A, "MULTI\r\nSET w 4\r\nEXEC\r\n"), "+OK\r\n+QUEUED\r\n*-1\r\n",
		   "EXPIRE is a change");
	TAP_IS_STR(on(&A, "WATCH w\r\nWATCH w x y\r\n"), "+OK\r\n+OK\r\n", "WATCH the same key twice");
	/* Closing a client with watches must release them (ASan checks). */
	dlrt_store_session_free(&A);
	dlrt_store_session_init(&A, KV, 0, 0);
	TAP_IS_STR(on(&B, "SET w 5\r\nSET x 1\r\n"), "+OK\r\n+OK\r\n",
		   "writes after the watching client left");
}

static void test_expiry(void)
{
	size_t base;

	on(&A, "FLUSHALL\r\n");
	base = dlrt_kv_used(KV);
	TAP_IS_STR(on(&A, "SET k v EX 10\r\nTTL k\r\nPTTL k\r\n"), "+OK\r\n:10\r\n:10000\r\n",
		   "SET EX: TTL and PTTL");
	TAP_IS_STR(on(&A, "SET p v PX 1500\r\nTTL p\r\n"), "+OK\r\n:2\r\n",
		   "TTL rounds to the nearest second, as Redis");
	dlrt_kv_advance_clock(KV, 1500);
	TAP_IS_STR(on(&A, "PTTL p\r\nGET p\r\n"), ":0\r\n$1\r\nv\r\n",
		   "at its expiry time the key is still there (Redis: expired after, not at)");
	dlrt_kv_advance_clock(KV, 1);
	TAP_IS_STR(on(&A, "GET p\r\nEXISTS p\r\nTTL p\r\nKEYS p\r\n"),
		   "$-1\r\n:0\r\n:-2\r\n*0\r\n", "one ms later it is gone for every command");
	TAP_IS_STR(on(&A, "TTL k\r\n"), ":8\r\n", "the other key counts down (8.499 s: 8)");
	TAP_IS_INT((long long)dlrt_kv_volatile_count(KV), 1, "one key with a TTL left");
	TAP_IS_STR(on(&A, "SET k v2 KEEPTTL\r\nTTL k\r\nSET k v3\r\nTTL k\r\n"),
		   "+OK\r\n:8\r\n+OK\r\n:-1\r\n", "KEEPTTL keeps it, a plain SET drops it");
	TAP_IS_STR(on(&A, "EXPIRE k 5\r\nINCR n\r\nEXPIRE n 5\r\nINCR n\r\nTTL n\r\n"),
		   ":1\r\n:1\r\n:1\r\n:2\r\n:5\r\n", "INCR keeps the TTL");
	TAP_IS_STR(on(&A, "PERSIST n\r\nPERSIST n\r\nTTL n\r\n"), ":1\r\n:0\r\n:-1\r\n", "PERSIST");
	TAP_IS_STR(on(&A, "EXPIRE k 0\r\nEXISTS k\r\n"), ":1\r\n:0\r\n",
		   "an expiry not in the future deletes the key");
	TAP_IS_STR(on(&A, "SET k v EX 0\r\nSET k v PX -1\r\nSET k v EX x\r\n"),
		   "-ERR invalid expire time in 'set' command\r\n"
		   "-ERR invalid expire time in 'set' command\r\n"
		   "-ERR value is not an integer or out of range\r\n", "bad times: Redis's errors");
	TAP_IS_STR(on(&A, "SET k v EX 1 PX 1\r\nSET k v KEEPTTL EX 1\r\nSET k v EX\r\n"),
		   "-ERR syntax error\r\n-ERR syntax error\r\n-ERR syntax error\r\n",
		   "bad combinations: syntax error");
	TAP_IS_STR(on(&A, "SET k v\r\nEXPIRE k 10 NX XX\r\nEXPIRE k 10 GT LT\r\nEXPIRE k 10 FOO\r\n"),
		   "+OK\r\n-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"
		   "-ERR GT and LT options at the same time are not compatible\r\n"
		   "-ERR Unsupported option FOO\r\n", "EXPIRE's flag errors");
	TAP_IS_STR(on(&A, "EXPIRE k 10 XX\r\nEXPIRE k 10 NX\r\nEXPIRE k 5 GT\r\nEXPIRE k 20 GT\r\n"
			  "EXPIRE k 30 LT\r\nEXPIRE k 15 LT\r\nTTL k\r\n"),
		   ":0\r\n:1\r\n:0\r\n:1\r\n:0\r\n:1\r\n:15\r\n", "NX, XX, GT, LT");

	/* Memory: a key with a TTL costs what the entry costs; expired keys
	 * nobody reads are reclaimed by the cycle, a bounded number at a time. */
	on(&A, "FLUSHALL\r\n");
	for (int i = 0; i < 300; i++) {
		char req[160];

		snprintf(req, sizeof(req), "SET key:%d %0100d PX 10\r\n", i, i);
		on(&A, req);
	}
	on(&A, "SET keep v\r\n");
	TAP_OK(dlrt_kv_used(KV) > base + 300 * 100, "300 keys with a TTL are counted (%zu bytes)",
	       dlrt_kv_used(KV));
	TAP_IS_INT((long long)dlrt_kv_expire_cycle(KV, 1000), 0, "nothing expired yet");
	dlrt_kv_advance_clock(KV, 11);
	TAP_IS_INT((long long)dlrt_kv_expire_cycle(KV, 100), 100, "a cycle removes at most its budget");
	TAP_IS_INT((long long)dlrt_kv_count(KV), 201, "the rest waits for the next cycles");
	while (dlrt_kv_expire_cycle(KV, 100))
		;
	TAP_IS_INT((long long)dlrt_kv_count(KV), 1, "then only the key without a TTL is left");
	TAP_IS_INT((long long)dlrt_kv_volatile_count(KV), 0, "and no key with a TTL");
	on(&A, "DEL keep\r\n");
	{
		/* The bucket array grew for 300 keys and does not shrink: the
		 * rest must be what an empty store (FLUSHALL) holds. */
		size_t after = dlrt_kv_used(KV);

		on(&A, "FLUSHALL\r\n");
		TAP_IS_INT((long long)after, (long long)dlrt_kv_used(KV),
			   "every byte of the expired keys was given back (%zu before)", base);
	}
	on(&A, "SET v1 a EX 100\r\nSET v2 b\r\n");
	TAP_IS_INT((long long)dlrt_kv_expire_cycle(KV, 1000), 0,
		   "the cycle leaves live keys alone");

	/* A watched key that expires before EXEC aborts it (Redis 7.0). */
	on(&A, "SET vol 1 PX 30\r\n");
	TAP_IS_STR(on(&A, "WATCH vol\r\n"), "+OK\r\n", "WATCH a key with 30 ms to live");
	dlrt_kv_advance_clock(KV, 100);
	TAP_IS_STR(on(&A, "MULTI\r\nSET vol 2\r\nEXEC\r\n"), "+OK\r\n+QUEUED\r\n*-1\r\n",
		   "it expired before EXEC: aborted");
}

static void test_bounds(void)
{
	char big[700];

	memset(big, 'x', sizeof(big) - 3);
	memcpy(big + sizeof(big) - 3, "\r\n", 3);
	dlrt_kv_set_tx_limits(KV, 4096, 5);
	TAP_IS_STR(on(&A, "MULTI\r\nSET a 1\r\nSET b 2\r\nSET c 3\r\nSET d 4\r\nSET e 5\r\n"),
		   "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n",
		   "five commands fit a bound of five");
	TAP_OK(strncmp(on(&A, "SET f 6\r\n"), "-ERR dlrt-store: this transaction passed", 40) == 0,
	       "the sixth is refused with an error naming the bound");
	TAP_IS_STR(on(&A, "SET g 7\r\nEXEC\r\n"),
		   "+QUEUED\r\n-EXECABORT Transaction discarded because of previous errors.\r\n",
		   "and the transaction is aborted, as for an unknown command");
	TAP_IS_STR(on(&A, "EXISTS a\r\n"), ":0\r\n", "nothing ran");
	TAP_IS_STR(on(&A, "MULTI\r\n"), "+OK\r\n", "MULTI");
	{
		int queued = 0;

		for (int i = 0; i < 5; i++) {
			char req[800];

			snprintf(req, sizeof(req), "ECHO %s", big);
			if (strcmp(on(&A, req), "+QUEUED\r\n") != 0)
				break;
			queued++;
		}
		TAP_IS_INT(queued, 2, "the queue's bytes are bounded as well (4096: two 700-byte "
			   "commands)");
	}
	TAP_IS_STR(on(&A, "EXEC\r\n"),
		   "-EXECABORT Transaction discarded because of previous errors.\r\n", "EXECABORT");
	TAP_IS_STR(on(&A, "WATCH a b c d e\r\n"), "+OK\r\n", "five watched keys fit");
	TAP_OK(strncmp(on(&A, "WATCH f\r\n"), "-ERR dlrt-store", 15) == 0,
	       "watched keys count against the same bound");
	on(&A, "UNWATCH\r\n");
	dlrt_kv_set_tx_limits(KV, DLRT_KV_DEFAULT_TX_BYTES, DLRT_KV_DEFAULT_TX_COUNT);
}

/* A request of argc arguments whose last is `len` bytes of 'x' (static). */
static const char *big_req(const char *cmd, const char *key, size_t len, size_t *n)
{
	static char req[1 << 18];
	int h = snprintf(req, sizeof(req), "*3\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n$%zu\r\n",
			 strlen(cmd), cmd, strlen(key), key, len);

	memset(req + h, 'x', len);
	memcpy(req + h + len, "\r\n", 2);
	*n = (size_t)h + len + 2;
	return req;
}

static const char *send_big(struct dlrt_store_session *s, const char *cmd, const char *key,
			    size_t len)
{
	size_t n;
	const char *req = big_req(cmd, key, len, &n);

	return send_on(s, req, n);
}

/* MULTI queues, watched keys and names of all clients count in the one
 * --max-memory budget with the keyspace. */
static void test_store_bound(void)
{
	static const char full[] = "-OOM dlrt-store is full (--max-memory=262144 bytes";
	struct dlrt_store_session C;
	size_t held_a, keys;
	int queued = 0;

	on(&A, "FLUSHALL\r\n");
	dlrt_kv_set_max_memory(KV, 256 << 10);
	keys = dlrt_kv_used(KV);
	TAP_IS_INT((long long)dlrt_kv_held(KV), 0, "no client holds anything");
	on(&A, "MULTI\r\n");
	TAP_IS_STR(send_big(&A, "SET", "a1", 70000), "+QUEUED\r\n", "a 70 kB SET is queued");
	TAP_IS_STR(send_big(&A, "SET", "a2", 70000), "+QUEUED\r\n", "and another");
	held_a = dlrt_kv_held(KV);
	TAP_OK(held_a >= 140000 && held_a <= 150000, "the queue's bytes are counted (%zu)",
	       held_a);
	TAP_IS_INT((long long)dlrt_kv_used(KV), (long long)(keys + held_a),
		   "in the store's used memory (INFO used_memory)");
	TAP_OK(strncmp(send_big(&B, "SET", "b", 150000), "-OOM command not allowed", 24) == 0,
	       "a SET that fits alone but not beside the queue gets -OOM");

	on(&B, "MULTI\r\n");
	for (int i = 0; i < 10; i++) {
		const char *r = send_big(&B, "SET", "b", 20000);

		if (strcmp(r, "+QUEUED\r\n") != 0) {
			TAP_OK(strncmp(r, full, sizeof(full) - 1) == 0,
			       "past the bound the command is refused, naming it: %.80s", r);
			break;
		}
		queued++;
	}
	TAP_OK(queued >= 3 && queued <= 6, "another client queued what was left (%d of 20 kB)",
	       queued);
	TAP_OK(B.client.refused_full, "the refusal is marked for the server's log");
	TAP_OK(!A.client.refused_full, "not on the client that stayed within it");
	TAP_IS_INT((long long)dlrt_kv_held(KV), (long long)held_a,
		   "the refused transaction's queue is given back at once");
	TAP_IS_STR(on(&B, "SET c 1\r\nEXEC\r\n"),
		   "+QUEUED\r\n-EXECABORT Transaction discarded because of previous errors.\r\n",
		   "and EXEC discards it");
	TAP_IS_STR(on(&B, "EXISTS b c\r\n"), ":0\r\n", "nothing of it ran");

	/* Names and watched keys come out of the same budget. */
	TAP_OK(strncmp(send_big(&B, "CLIENT", "SETNAME", 150000), full, sizeof(full) - 1) == 0,
	       "a client name past the bound is refused");
	TAP_IS_STR(send_big(&B, "CLIENT", "SETNAME", 1000), "+OK\r\n", "a smaller one is kept");
	TAP_IS_INT((long long)dlrt_kv_held(KV), (long long)held_a + 1001 + 16,
		   "and counted");
	TAP_IS_STR(send_big(&B, "WATCH", "k1", 60000), "+OK\r\n", "WATCH a 60 kB key");
	TAP_OK(strncmp(send_big(&B, "WATCH", "k2", 70000), full, sizeof(full) - 1) == 0,
	       "a 70 kB one past the bound is refused");
	on(&B, "UNWATCH\r\n*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$0\r\n\r\n");
	TAP_IS_INT((long long)dlrt_kv_held(KV), (long long)held_a,
		   "UNWATCH and an empty name give theirs back");

	/* The queue counts while EXEC runs it: its own SETs cannot take the
	 * room it holds. */
	{
		const char *r = on(&A, "EXEC\r\n");

		TAP_OK(strncmp(r, "*2\r\n+OK\r\n-OOM ", 14) == 0,
		       "EXEC: the second 70 kB SET does not fit beside the queue being run");
	}
	TAP_IS_INT((long long)dlrt_kv_held(KV), 0, "EXEC gives the queue back");
	TAP_OK(dlrt_kv_used(KV) < keys + 80000, "what is left is the one value");
	on(&A, "FLUSHALL\r\nMULTI\r\n");
	send_big(&A, "SET", "a", 100000);
	TAP_OK(dlrt_kv_held(KV) > 100000, "MULTI holds a queue again");
	TAP_IS_STR(on(&A, "DISCARD\r\n"), "+OK\r\n", "DISCARD");
	TAP_IS_INT((long long)dlrt_kv_held(KV), 0, "gives it back");

	/* A client that leaves gives back its queue, watches and name. */
	dlrt_store_session_init(&C, KV, 0, 0);
	on(&C, "CLIENT SETNAME c\r\nWATCH x y\r\nMULTI\r\n");
	send_big(&C, "SET", "a", 100000);
	TAP_OK(dlrt_kv_held(KV) > 100000, "a client holds a queue, watches and a name");
	dlrt_store_session_free(&C);
	TAP_IS_INT((long long)dlrt_kv_held(KV), 0, "closing it gives all of it back");
	TAP_IS_STR(send_big(&A, "SET", "a", 200000), "+OK\r\n", "the whole budget is free again");
	on(&A, "FLUSHALL\r\n");
	dlrt_kv_set_max_memory(KV, DLRT_KV_DEFAULT_MAX_MEMORY);
}

int main(void)
{
	KV = dlrt_kv_create(1 << 20);
	dlrt_kv_stop_clock(KV);
	dlrt_store_session_init(&A, KV, 0, 0);
	dlrt_store_session_init(&B, KV, 0, 0);
	test_multi_exec();
	test_watch();
	test_expiry();
	test_bounds();
	test_store_bound();
	dlrt_store_session_free(&A);
	dlrt_store_session_free(&B);
	dlrt_kv_destroy(KV);
	return tap_done();
}
