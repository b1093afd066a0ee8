/* test_resp.c - the RESP request parser and reply builders (launchers/caffe2/resp.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "launchers/caffe2/resp.h"
#include "tap.h"

#define S(lit) (const uint8_t *)(lit), sizeof(lit) - 1

static struct dlrt_resp_parser P;

static void reset(size_t max_bulk, size_t max_args)
{
	dlrt_resp_free(&P);
	dlrt_resp_init(&P, max_bulk, max_args);
}

static int argeq(size_t i, const char *want, size_t wlen)
{
	return i < P.argc && P.argvlen[i] == wlen && memcmp(P.argv[i], want, wlen) == 0;
}

/* Feeds `data` one byte at a time through a buffer that is reallocated for
 * every byte (as a growing dlrt_buf may move): every prefix must say
 * NEED_MORE, the whole must say COMPLETE, with the same args as in one go. */
static int bytewise(const uint8_t *data, size_t len, size_t *argc_out)
{
	uint8_t *copy = NULL;
	int rc = DLRT_RESP_NEED_MORE;

	for (size_t n = 1; n <= len; n++) {
		uint8_t *b = malloc(n);

		memcpy(b, data, n);
		free(copy);
		copy = b;
		rc = dlrt_resp_parse(&P, copy, n);
		if (n < len && rc != DLRT_RESP_NEED_MORE) {
			free(copy);
			return -100 - (int)n;
		}
	}
	*argc_out = P.argc;
	/* argv points into `copy`: compare before freeing. */
	if (rc == DLRT_RESP_COMPLETE && P.used != len)
		rc = -99;
	/* Array arguments point into the input (inline ones into the scratch). */
	for (size_t i = 0; rc == DLRT_RESP_COMPLETE && data[0] == '*' && i < P.argc; i++)
		if (P.argv[i] < copy || P.argv[i] + P.argvlen[i] > copy + len)
			rc = -98;
	free(copy);
	return rc;
}

static void test_multibulk(void)
{
	static const char req[] = "*3\r\n$5\r\nSETNX\r\n$3\r\nk\0y\r\n$4\r\n\r\nv\n\r\n";
	size_t argc = 0;

	reset(0, 0);
	TAP_IS_INT(dlrt_resp_parse(&P, S(req)), DLRT_RESP_COMPLETE, "array of bulk strings parses");
	TAP_IS_INT(P.argc, 3, "three arguments");
	TAP_OK(argeq(0, "SETNX", 5), "argv[0] is SETNX");
	TAP_OK(argeq(1, "k\0y", 3), "a key with a NUL byte stays intact (binary-safe)");
	TAP_OK(argeq(2, "\r\nv\n", 4), "a value holding CR LF stays intact");
	TAP_IS_INT(P.used, sizeof(req) - 1, "used = the whole request");

	reset(0, 0);
	TAP_IS_INT(bytewise(S(req), &argc), DLRT_RESP_COMPLETE,
		   "byte-by-byte: need-more on every prefix, complete at the end");
	TAP_IS_INT(argc, 3, "byte-by-byte: three arguments");

	reset(0, 0);
	TAP_IS_INT(dlrt_resp_parse(&P, S("*1\r\n$0\r\n\r\n")), DLRT_RESP_COMPLETE,
		   "an empty bulk string is an argument");
	TAP_OK(argeq(0, "", 0), "the empty argument has length 0");
}

static void test_pipeline(void)
{
	static const char two[] = "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\na\r\nPING\r\n";
	const uint8_t *p = (const uint8_t *)two;
	size_t left = sizeof(two) - 1;
	const char *names[] = { "PING", "GET", "PING" };
	int ok = 1;

	reset(0, 0);
	for (int i = 0; i < 3; i++) {
		int rc = dlrt_resp_parse(&P, p, left);

		if (rc != DLRT_RESP_COMPLETE || !argeq(0, names[i], strlen(names[i])))
			ok = 0;
		p += P.used;
		left -= P.used;
	}
	TAP_OK(ok, "three pipelined requests (two arrays, one inline) come out in order");
	TAP_IS_INT(left, 0, "the pipeline is consumed exactly");
	TAP_IS_INT(dlrt_resp_parse(&P, p, left), DLRT_RESP_NEED_MORE, "nothing left: need more");
}

static void test_inline(void)
{
	size_t argc = 0;

	reset(0, 0);
	TAP_IS_INT(dlrt_resp_parse(&P, S("PING\r\n")), DLRT_RESP_COMPLETE, "inline PING");
	TAP_OK(P.argc == 1 && argeq(0, "PING", 4), "inline PING has one argument");

	reset(0, 0);
	TAP_IS_INT(dlrt_resp_parse(&P, S("set  k\t\"a b\\x41\\n\" 'it''s'\n")),
		   DLRT_RESP_ERROR, "a quote right after a closing quote is an error, as in Redis");
	TAP_IS_STR(P.error, "ERR Protocol error: unbalanced quotes in request",
		   "Redis's unbalanced-quotes text");

	reset(0, 0);
	TAP_IS_INT(dlrt_resp_parse(&P, S("set  k\t\"a b\\x41\\n\" 'it\\'s'\n")),
		   DLRT_RESP_COMPLETE, "inline with quotes and escapes");
	TAP_IS_INT(P.argc, 4, "inline: four words");
	TAP_OK(argeq(2, "a bA\n", 5), "double quotes: blanks kept, \\x41 and \\n decoded");
	TAP_OK(argeq(3, "it's", 4), "single quotes: \\' decoded");

	reset(0, 0);
	TAP_IS_INT(dlrt_resp_parse(&P, S("\r\n")), DLRT_RESP_EMPTY, "a blank line is an empty request");
	TAP_IS_INT(P.used, 2, "the blank line is consumed");

	reset(0, 0);
	TAP_IS_INT(bytewise(S("ECHO hello\r\n"), &argc), DLRT_RESP_COMPLETE, "inline byte by byte");
	TAP_IS_INT(argc, 2, "inline byte by byte: two words");

	reset(0, 0);
	{
		size_t n = DLRT_RESP_INLINE_MAX + 10;
		uint8_t *big = malloc(n);

		memset(big, 'a', n);
		TAP_IS_INT(dlrt_resp_parse(&P, big, n), DLRT_RESP_ERROR,
			   "an inline line over 64 KiB without a newline is refused");
		TAP_IS_STR(P.error, "ERR Protocol error: too big inline request", "Redis's text");
		free(big);
	}
}

static void test_errors(void)
{
	static const struct {
		const char *in;
		const char *err;
		const char *what;
	} cases[] = {
		{ "*1\r\n$-1\r\n", "ERR Protocol error: invalid bulk length", "negative bulk length" },
		{ "*1\r\n$999999999999\r\n", "ERR Protocol error: invalid bulk length",
		  "a huge bulk length is refused before any byte of it arrives" },
		{ "*1\r\n$+4\r\nPING\r\n", "ERR Protocol error: invalid bulk length", "'+' in a length" },
		{ "*1\r\n$ 4\r\nPING\r\n", "ERR Protocol error: invalid bulk length", "space in a length" },
		{ "*1\r\n$99999999999999999999999\r\n", "ERR Protocol error: invalid bulk length",
		  "a length that overflows int64" },
		{ "*x\r\n", "ERR Protocol error: invalid multibulk length", "garbage multibulk length" },
		{ "*01\r\n", "ERR Protocol error: invalid multibulk length", "leading zero" },
		{ "*2000000\r\n", "ERR Protocol error: invalid multibulk length",
		  "more arguments than the limit" },
		{ "*1\r\nfoo\r\n", "ERR Protocol error: expected '$', got 'f'", "missing '$'" },
		{ "PING \"a\r\n", "ERR Protocol error: unbalanced quotes in request", "open quote" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		reset(0, 0);
		TAP_IS_INT(dlrt_resp_parse(&P, (const uint8_t *)cases[i].in, strlen(cases[i].in)),
			   DLRT_RESP_ERROR, "%s: protocol error", cases[i].what);
		TAP_IS_STR(P.error, cases[i].err, "%s: Redis's error text", cases[i].what);
	}

	/* A huge announced array costs nothing until its arguments arrive. */
	reset(0, 0);
	TAP_IS_INT(dlrt_resp_parse(&P, S("*1048576\r\n$1\r\na\r\n")), DLRT_RESP_NEED_MORE,
		   "the largest allowed array waits for its arguments");
	TAP_OK(P.cap <= 8, "and reserved room only for the one that arrived (cap %zu)", P.cap);

	/* The configured limit on one argument. */
	reset(1000, 0);
	TAP_IS_INT(dlrt_resp_parse(&P, S("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1001\r\n")),
		   DLRT_RESP_ERROR, "a value over --max-value is refused at its header");
	reset(1000, 0);
	TAP_IS_INT(dlrt_resp_parse(&P, S("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000\r\n")),
		   DLRT_RESP_NEED_MORE, "a value of exactly --max-value is waited for");

	reset(0, 0);
	TAP_IS_INT(dlrt_resp_parse(&P, S("*0\r\n")), DLRT_RESP_EMPTY, "*0 is an empty request");
	reset(0, 0);
	TAP_IS_INT(dlrt_resp_parse(&P, S("*-1\r\n")), DLRT_RESP_EMPTY, "*-1 is an empty request");
	reset(0, 0);
	TAP_IS_INT(dlrt_resp_parse(&P, S("*1\r")), DLRT_RESP_NEED_MORE,
		   "a header whose LF has not arrived waits");
}

static void test_str2ll(void)
{
	int64_t v = 0;

	TAP_OK(dlrt_resp_str2ll(S("9223372036854775807"), &v) == 0 && v == INT64_MAX, "INT64_MAX");
	TAP_OK(dlrt_resp_str2ll(S("-9223372036854775808"), &v) == 0 && v == INT64_MIN, "INT64_MIN");
	TAP_OK(dlrt_resp_str2ll(S("9223372036854775808"), &v) < 0, "INT64_MAX + 1 is refused");
	TAP_OK(dlrt_resp_str2ll(S("-0"), &v) < 0, "-0 is refused like Redis");
	TAP_OK(dlrt_resp_str2ll(S(""), &v) < 0, "empty is refused");
	TAP_OK(dlrt_resp_str2ll(S("0"), &v) == 0 && v == 0, "0");
}

static void test_replies(void)
{
	struct dlrt_buf b;
	static const char want[] = "+OK\r\n-ERR a b\r\n:0\r\n:-42\r\n:9223372036854775807\r\n"
				   "$3\r\na\0b\r\n$-1\r\n*2\r\n$0\r\n\r\n";

	dlrt_buf_init(&b, 1 << 20);
	dlrt_resp_add_simple(&b, "OK");
	dlrt_resp_add_error(&b, "ERR a\nb");
	dlrt_resp_add_int(&b, 0);
	dlrt_resp_add_int(&b, -42);
	dlrt_resp_add_int(&b, INT64_MAX);
	dlrt_resp_add_bulk(&b, "a\0b", 3);
	dlrt_resp_add_nil(&b);
	dlrt_resp_add_array(&b, 2);
	dlrt_resp_add_bulk(&b, "", 0);
	TAP_IS_INT(b.len, sizeof(want) - 1, "reply bytes: length");
	TAP_OK(b.len == sizeof(want) - 1 && memcmp(dlrt_buf_head(&b), want, b.len) == 0,
	       "reply bytes: simple, error (LF mapped to a space), ints, bulk, nil, array");
	dlrt_buf_free(&b);

	dlrt_buf_init(&b, 8);
	TAP_IS_INT(dlrt_resp_add_bulk(&b, "0123456789", 10), -1, "a reply past the buffer limit fails");
	dlrt_buf_free(&b);
}

int main(void)
{
	dlrt_resp_init(&P, 0, 0);
	test_multibulk();
	test_pipeline();
	test_inline();
	test_errors();
	test_str2ll();
	test_replies();
	dlrt_resp_free(&P);
	return tap_done();
}
