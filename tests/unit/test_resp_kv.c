/* test_resp_kv.c - the helper store's keyspace and command table, driven the
 * way the server drives them: raw request bytes in, raw reply bytes out
 * (launchers/caffe2/{kvstore,kvcmd,store_session}.c). The expected replies
 * are redis-server 7.0's. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launchers/caffe2/kvstore.h"
#include "launchers/caffe2/store_session.h"
#include "tap.h"

static struct dlrt_kv *KV;
static struct dlrt_store_session SS;
static int CLOSED;
static size_t REPLY_LEN;

/* Sends `in` (n bytes) and returns the reply bytes (static, NUL-terminated). */
static const char *send_n(const char *in, size_t n)
{
	static char reply[1 << 16];
	struct dlrt_buf bin, bout;

	dlrt_buf_init(&bin, 1 << 24);
	dlrt_buf_init(&bout, 1 << 24);
	dlrt_buf_append(&bin, in, n);
	CLOSED = dlrt_store_session_feed(&SS, KV, &bin, &bout, NULL, NULL) < 0;
	/* memcpy, not %s: replies may hold NUL bytes. */
	REPLY_LEN = bout.len < sizeof(reply) - 1 ? bout.len : sizeof(reply) - 1;
	memcpy(reply, dlrt_buf_head(&bout), REPLY_LEN);
	reply[REPLY_LEN] = '\0';
	dlrt_buf_free(&bin);
	dlrt_buf_free(&bout);
	return reply;
}

static const char *send_s(const char *in)
{
	return send_n(in, strlen(in));
}

/* Builds a multibulk request from `argc` C strings. */
static const char *cmd(int argc, ...)
{
	static char req[4096];
	size_t len = (size_t)snprintf(req, sizeof(req), "*%d\r\n", argc);
	va_list ap;

	va_start(ap, argc);
	for (int i = 0; i < argc; i++) {
		const char *a = va_arg(ap, const char *);

		len += (size_t)snprintf(req + len, sizeof(req) - len, "$%zu\r\n%s\r\n", strlen(a), a);
	}
	va_end(ap);
	return send_n(req, len);
}

static void test_caffe2_and_gloo(void)
{
	/* What RedisStoreHandler / gloo RedisStore send, in order. */
	TAP_IS_STR(cmd(3, "SETNX", "run1/0", "addr0"), ":1\r\n", "SETNX of a new key answers 1");
	TAP_IS_STR(cmd(3, "SETNX", "run1/0", "other"), ":0\r\n", "SETNX of a set key answers 0");
	TAP_IS_STR(cmd(2, "GET", "run1/0"), "$5\r\naddr0\r\n", "the first SETNX value stays (write-once)");
	TAP_IS_STR(cmd(3, "EXISTS", "run1/0", "run1/1"), ":1\r\n", "EXISTS counts present keys");
	TAP_IS_STR(cmd(3, "SETNX", "run1/1", "addr1"), ":1\r\n", "SETNX second rank");
	TAP_IS_STR(cmd(4, "EXISTS", "run1/0", "run1/1", "run1/0"), ":3\r\n",
		   "EXISTS counts a repeated key twice, like Redis");
	TAP_IS_STR(cmd(3, "INCRBY", "run1/ctr", "5"), ":5\r\n", "INCRBY creates the counter");
	TAP_IS_STR(cmd(3, "INCRBY", "run1/ctr", "-7"), ":-2\r\n", "INCRBY with a negative step");
	TAP_IS_STR(cmd(2, "GET", "run1/nope"), "$-1\r\n", "GET of a missing key is nil");
	TAP_IS_STR(send_n("*3\r\n$5\r\nSETNX\r\n$3\r\nb\0k\r\n$4\r\n\0\r\n\1\r\n", 34), ":1\r\n",
		   "binary key and value");
	{
		const char *r = send_n("*2\r\n$3\r\nGET\r\n$3\r\nb\0k\r\n", 22);

		TAP_OK(REPLY_LEN == 10 && memcmp(r, "$4\r\n\0\r\n\1\r\n", 10) == 0,
		       "binary value read back intact");
	}
}

static void test_strings(void)
{
	char big[64];

	TAP_IS_STR(cmd(3, "set", "a", "1"), "+OK\r\n", "SET");
	TAP_IS_STR(cmd(4, "SET", "a", "2", "NX"), "$-1\r\n", "SET NX on an existing key is nil");
	TAP_IS_STR(cmd(4, "SET", "new", "2", "XX"), "$-1\r\n", "SET XX on a missing key is nil");
	TAP_IS_STR(cmd(4, "SET", "a", "3", "GET"), "$1\r\n1\r\n", "SET GET returns the old value");
	TAP_IS_STR(cmd(5, "SET", "a", "3", "NX", "XX"), "-ERR syntax error\r\n", "SET NX XX");
	TAP_IS_STR(cmd(5, "SET", "a", "3", "EX", "10"), "+OK\r\n", "SET EX (test_resp_tx: expiry)");
	TAP_IS_STR(cmd(2, "PERSIST", "a"), ":1\r\n", "PERSIST");
	TAP_IS_STR(cmd(1, "incr"), "-ERR wrong number of arguments for 'incr' command\r\n",
		   "arity error names the command in lowercase");
	TAP_IS_STR(cmd(2, "INCR", "a"), ":4\r\n", "INCR");
	TAP_IS_STR(cmd(2, "DECR", "a"), ":3\r\n", "DECR");
	TAP_IS_STR(cmd(3, "DECRBY", "a", "10"), ":-7\r\n", "DECRBY");
	TAP_IS_STR(cmd(3, "INCRBY", "a", "x"), "-ERR value is not an integer or out of range\r\n",
		   "INCRBY with a non-integer step");
	TAP_IS_STR(cmd(3, "SET", "s", "007"), "+OK\r\n", "SET 007");
	TAP_IS_STR(cmd(2, "INCR", "s"), "-ERR value is not an integer or out of range\r\n",
		   "INCR of 007 (not canonical) fails like Redis");
	snprintf(big, sizeof(big), "%lld", (long long)INT64_MAX);
	cmd(3, "SET", "m", big);
	TAP_IS_STR(cmd(2, "INCR", "m"), "-ERR increment or decrement would overflow\r\n",
		   "INCR past INT64_MAX");
	TAP_IS_STR(cmd(3, "DECRBY", "m", "-9223372036854775808"),
		   "-ERR decrement would overflow\r\n", "DECRBY INT64_MIN");
	TAP_IS_STR(cmd(4, "MGET", "a", "zz", "s"), "*3\r\n$2\r\n-7\r\n$-1\r\n$3\r\n007\r\n", "MGET");
	TAP_IS_STR(cmd(5, "MSET", "x", "1", "y", "2"), "+OK\r\n", "MSET");
	TAP_IS_STR(cmd(4, "MSET", "x", "1", "y"), "-ERR wrong number of arguments for 'mset' command\r\n",
		   "MSET with an odd count");
	TAP_IS_STR(cmd(3, "APPEND", "x", "23"), ":3\r\n", "APPEND");
	TAP_IS_STR(cmd(2, "STRLEN", "x"), ":3\r\n", "STRLEN");
	TAP_IS_STR(cmd(3, "GETSET", "x", "9"), "$3\r\n123\r\n", "GETSET");
	TAP_IS_STR(cmd(2, "GETDEL", "x"), "$1\r\n9\r\n", "GETDEL");
	TAP_IS_STR(cmd(2, "TYPE", "x"), "+none\r\n", "TYPE of a deleted key");
	TAP_IS_STR(cmd(2, "TYPE", "y"), "+string\r\n", "TYPE of a string");
	TAP_IS_STR(cmd(4, "DEL", "y", "y", "zz"), ":1\r\n", "DEL counts removed keys");
}

static void test_keyspace(void)
{
	TAP_IS_STR(cmd(1, "FLUSHDB"), "+OK\r\n", "FLUSHDB");
	TAP_IS_STR(cmd(1, "DBSIZE"), ":0\r\n", "DBSIZE after FLUSHDB");
	cmd(3, "SET", "r/1", "a");
	cmd(3, "SET", "r/2", "b");
	cmd(3, "SET", "q/1", "c");
	TAP_IS_STR(cmd(1, "DBSIZE"), ":3\r\n", "DBSIZE");
	{
		const char *r = cmd(2, "KEYS", "r/*");

		TAP_OK(strncmp(r, "*2\r\n", 4) == 0 && strstr(r, "r/1") && strstr(r, "r/2") &&
		       !strstr(r, "q/1"), "KEYS r/* lists exactly the prefix");
	}
	TAP_IS_STR(cmd(2, "KEYS", "[qx]/?"), "*1\r\n$3\r\nq/1\r\n", "KEYS with a class and ?");
	TAP_IS_STR(cmd(2, "FLUSHALL", "bogus"), "-ERR syntax error\r\n", "FLUSHALL bogus");

	/* Many keys: the table grows and every key is still found. */
	{
		char k[32], v[32], req[128];
		int ok = 1;

		for (int i = 0; i < 5000; i++) {
			int n = snprintf(k, sizeof(k), "key:%d", i);
			int m = snprintf(v, sizeof(v), "val:%d", i * 7);
			int len = snprintf(req, sizeof(req), "*3\r\n$5\r\nSETNX\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n",
					   n, k, m, v);

			if (strcmp(send_n(req, (size_t)len), ":1\r\n") != 0)
				ok = 0;
		}
		for (int i = 0; i < 5000 && ok; i++) {
			const uint8_t *val;
			size_t vl;
			int n = snprintf(k, sizeof(k), "key:%d", i);

			snprintf(v, sizeof(v), "val:%d", i * 7);
			if (!dlrt_kv_lookup(KV, k, (size_t)n, &val, &vl) || vl != strlen(v) ||
			    memcmp(val, v, vl) != 0)
				ok = 0;
		}
		TAP_OK(ok, "5000 keys set and found after the table grew");
		TAP_IS_INT(dlrt_kv_count(KV), 5003, "count of keys");
		TAP_IS_INT(dlrt_kv_remove(KV, "key:17", 6), 1, "remove a key");
		TAP_IS_INT(dlrt_kv_remove(KV, "key:17", 6), 0, "remove it again: gone");
	}
}

static void test_connection(void)
{
	TAP_IS_STR(cmd(1, "PING"), "+PONG\r\n", "PING");
	TAP_IS_STR(cmd(2, "ping", "hi"), "$2\r\nhi\r\n", "PING msg");
	TAP_IS_STR(cmd(3, "PING", "a", "b"), "-ERR wrong number of arguments for 'ping' command\r\n",
		   "PING with two args");
	TAP_IS_STR(cmd(2, "ECHO", "x"), "$1\r\nx\r\n", "ECHO");
	TAP_IS_STR(cmd(2, "SELECT", "0"), "+OK\r\n", "SELECT 0");
	TAP_IS_STR(cmd(2, "SELECT", "1"), "-ERR DB index is out of range\r\n", "SELECT 1");
	TAP_IS_STR(cmd(2, "SELECT", "x"), "-ERR value is not an integer or out of range\r\n",
		   "SELECT x");
	TAP_IS_STR(cmd(3, "CONFIG", "GET", "save"), "*2\r\n$4\r\nsave\r\n$0\r\n\r\n",
		   "CONFIG GET save (redis-benchmark asks)");
	TAP_IS_STR(cmd(3, "CONFIG", "GET", "appendonly"), "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n",
		   "CONFIG GET appendonly (redis-benchmark asks)");
	TAP_IS_STR(cmd(3, "CONFIG", "GET", "nope"), "*0\r\n", "CONFIG GET of an unknown name");
	TAP_IS_STR(cmd(2, "CONFIG", "FOO"), "-ERR unknown subcommand 'FOO'. Try CONFIG HELP.\r\n",
		   "CONFIG FOO");
	TAP_IS_STR(cmd(3, "CLIENT", "SETNAME", "trainer0"), "+OK\r\n", "CLIENT SETNAME");
	TAP_IS_STR(cmd(2, "CLIENT", "GETNAME"), "$8\r\ntrainer0\r\n", "CLIENT GETNAME");
	TAP_IS_STR(cmd(4, "CLIENT", "SETINFO", "lib-name", "hiredis"), "+OK\r\n", "CLIENT SETINFO");
	TAP_IS_STR(cmd(2, "CLIENT", "FOO"), "-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n",
		   "CLIENT FOO");
	TAP_IS_STR(cmd(2, "HELLO", "3"), "-NOPROTO unsupported protocol version\r\n",
		   "HELLO 3: RESP2 only");
	TAP_OK(strncmp(cmd(2, "HELLO", "2"), "*14\r\n$6\r\nserver\r\n", 17) == 0, "HELLO 2 map");
	TAP_IS_STR(cmd(2, "COMMAND", "DOCS"), "*0\r\n", "COMMAND DOCS is empty");
	TAP_IS_STR(cmd(3, "AUTH", "u", "p"),
		   "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n",
		   "AUTH without a password configured");
	TAP_IS_STR(cmd(3, "FOO", "bar", "baz"),
		   "-ERR unknown command 'FOO', with args beginning with: 'bar' 'baz' \r\n",
		   "unknown command, Redis's text");
	TAP_IS_STR(cmd(2, "foo", "a\r\nb"),
		   "-ERR unknown command 'foo', with args beginning with: 'a  b' \r\n",
		   "unknown command: CR LF in args become spaces");
	TAP_IS_STR(send_s("PING\r\nPING\r\n*1\r\n$4\r\nQUIT\r\nPING\r\n"), "+PONG\r\n+PONG\r\n+OK\r\n",
		   "pipelined requests answered in order; QUIT ends the stream");
	TAP_OK(CLOSED, "QUIT closes the connection");
	TAP_IS_STR(send_s("*1\r\n$-5\r\n"), "-ERR Protocol error: invalid bulk length\r\n",
		   "protocol error reply");
	TAP_OK(CLOSED, "a protocol error closes the connection");
	/* A new session after the close, as for a new connection. */
	dlrt_store_session_free(&SS);
	dlrt_store_session_init(&SS, KV, 0, 0);
	TAP_IS_STR(send_s("PING\r\n*1\r\n$4\r\nPI"), "+PONG\r\n", "a partial request waits");
	TAP_OK(!CLOSED, "and keeps the connection");
}

static void test_glob(void)
{
	static const struct {
		const char *pat, *s;
		int want;
	} g[] = {
		{ "*", "", 1 },      { "a*b", "aXXb", 1 }, { "a*b", "aXXc", 0 },
		{ "a?c", "abc", 1 }, { "[a-c]x", "bx", 1 }, { "[^a-c]x", "bx", 0 },
		{ "\\*", "*", 1 },   { "\\*", "a", 0 },    { "*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0 },
		{ "r/*", "r/", 1 },  { "[abc", "a", 1 },
	};

	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++)
		TAP_IS_INT(dlrt_kv_glob((const uint8_t *)g[i].pat, strlen(g[i].pat),
					(const uint8_t *)g[i].s, strlen(g[i].s)),
			   g[i].want, "glob '%s' vs '%s'", g[i].pat, g[i].s);
}

/* "*N\r\n..." with `nbig` bytes of 'v' as the last argument. */
static const char *cmd_big(const char *name, const char *key, size_t nbig)
{
	size_t cap = nbig + 256, len;
	char *req = malloc(cap);
	const char *reply;

	len = (size_t)snprintf(req, cap, "*3\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n$%zu\r\n",
			       strlen(name), name, strlen(key), key, nbig);
	memset(req + len, 'v', nbig);
	memcpy(req + len + nbig, "\r\n", 2);
	reply = send_n(req, len + nbig + 2);
	free(req);
	return reply;
}

static int starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static const char OOM[] = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";

static void test_max_memory(void)
{
	const char *r;

	TAP_IS_INT((long long)dlrt_kv_max_memory(KV), (long long)DLRT_KV_DEFAULT_MAX_MEMORY,
		   "the store starts with the default maximum memory");
	/* A fresh connection: earlier tests leave requests half sent. */
	dlrt_store_session_free(&SS);
	dlrt_store_session_init(&SS, KV, 0, 0);
	TAP_IS_STR(cmd(1, "FLUSHALL"), "+OK\r\n", "FLUSHALL");
	dlrt_kv_set_max_memory(KV, 1 << 20);
	TAP_IS_STR(cmd_big("SET", "a", 400000), "+OK\r\n", "a SET within the limit");
	TAP_IS_STR(cmd_big("SET", "b", 400000), "+OK\r\n", "a second one");
	TAP_IS_STR(cmd_big("SET", "c", 400000), OOM, "a SET past the limit: Redis's -OOM error");
	TAP_IS_STR(cmd(2, "EXISTS", "c"), ":0\r\n", "and nothing was stored");
	TAP_OK(dlrt_kv_used(KV) <= (1 << 20) && dlrt_kv_used(KV) >= 800000,
	       "the store counts what it holds, within the limit (%zu bytes)", dlrt_kv_used(KV));
	TAP_IS_STR(cmd_big("SET", "a", 400000), "+OK\r\n", "replacing a value by one as large fits");
	TAP_IS_STR(cmd_big("APPEND", "b", 300000), OOM, "APPEND past the limit");
	TAP_IS_STR(cmd(2, "STRLEN", "b"), ":400000\r\n", "and the value is unchanged");
	TAP_IS_STR(cmd_big("GETSET", "b", 300000), OOM,
		   "GETSET past the limit: the error only, not the old value");
	{
		/* MSET x 1 c <300000 bytes>: the small pair alone would fit. */
		size_t n = 300000, cap = n + 256, len;
		char *req = malloc(cap);

		len = (size_t)snprintf(req, cap, "*5\r\n$4\r\nMSET\r\n$1\r\nx\r\n$1\r\n1\r\n"
				       "$1\r\nc\r\n$%zu\r\n", n);
		memset(req + len, 'v', n);
		memcpy(req + len + n, "\r\n", 2);
		TAP_IS_STR(send_n(req, len + n + 2), OOM, "MSET past the limit");
		free(req);
	}
	TAP_IS_STR(cmd(2, "EXISTS", "x"), ":0\r\n", "MSET stores all of its keys or none");
	TAP_IS_STR(cmd_big("SET", "b", 300000), "+OK\r\n", "a smaller value replaces a larger one");
	TAP_IS_STR(cmd(2, "DEL", "a"), ":1\r\n", "DEL frees its share");
	TAP_IS_STR(cmd_big("SET", "c", 400000), "+OK\r\n", "so a new value fits again");
	TAP_IS_STR(cmd(3, "CONFIG", "GET", "maxmemory"), "*2\r\n$9\r\nmaxmemory\r\n$7\r\n1048576\r\n",
		   "CONFIG GET maxmemory says the limit");
	r = cmd(1, "INFO");
	TAP_OK(strstr(r, "\r\nmaxmemory:1048576\r\n") && strstr(r, "\r\nused_memory:"),
	       "INFO says the limit and what is used");
	cmd(1, "FLUSHALL");
	TAP_OK(dlrt_kv_used(KV) < 100000, "FLUSHALL gives all but the bucket array back (%zu bytes)",
	       dlrt_kv_used(KV));
	TAP_IS_STR(cmd(3, "SETNX", "k", "v"), ":1\r\n", "small writes work after it");
	dlrt_kv_set_max_memory(KV, 0);
	TAP_IS_STR(cmd(3, "SET", "k2", "v"), OOM, "a limit of 0 refuses every new key");
	TAP_OK(starts(cmd(2, "GET", "k"), "$1\r\nv"), "and reads still work");
	dlrt_kv_set_max_memory(KV, DLRT_KV_DEFAULT_MAX_MEMORY);
}

/* A client pipelining requests without reading: the session stops executing
 * them once out_pause bytes of replies wait, and goes on where it stopped. */
static void test_out_pause(void)
{
	struct dlrt_buf in, out;
	const char req[] = "PING\r\nPING\r\nPING\r\n";

	dlrt_buf_init(&in, 1 << 20);
	dlrt_buf_init(&out, 1 << 20);
	dlrt_buf_append(&in, req, sizeof(req) - 1);
	SS.out_pause = 10;
	TAP_IS_INT(dlrt_store_session_feed(&SS, KV, &in, &out, NULL, NULL), 0, "feed keeps the connection");
	TAP_IS_INT((long long)out.len, 14, "two replies, then it stops at the pause");
	TAP_IS_INT((long long)in.len, 6, "the third request waits in the input");
	dlrt_buf_consume(&out, out.len);
	dlrt_store_session_feed(&SS, KV, &in, &out, NULL, NULL);
	TAP_IS_INT((long long)out.len, 7, "once the replies are read, the third one runs");
	TAP_IS_INT((long long)in.len, 0, "and the input is empty");
	SS.out_pause = 0;
	dlrt_buf_free(&in);
	dlrt_buf_free(&out);
}

int main(void)
{
	KV = dlrt_kv_create(1 << 20);
	dlrt_store_session_init(&SS, KV, 0, 0);
	test_caffe2_and_gloo();
	test_strings();
	test_keyspace();
	test_connection();
	test_glob();
	test_max_memory();
	test_out_pause();
	dlrt_store_session_free(&SS);
	dlrt_kv_destroy(KV);
	return tap_done();
}
