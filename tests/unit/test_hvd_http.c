/* test_hvd_http.c - the incremental HTTP/1.x request parser of the Horovod driver. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "launchers/horovod/http.h"
#include "tap.h"

static const struct dlrt_http_limits lim = {
	.max_head = 1024, .max_headers = 8, .max_body = 4096,
};

static int parse_all(const char *s, struct dlrt_http_req *req)
{
	struct dlrt_http_parser p;

	dlrt_http_parser_init(&p);
	return dlrt_http_parse(&p, (const uint8_t *)s, strlen(s), &lim, req);
}

/* Feeds s one byte at a time; returns the first result that is not
 * NEED_MORE and the number of bytes it took. */
static int parse_bytewise(const char *s, size_t *at, struct dlrt_http_req *req)
{
	struct dlrt_http_parser p;
	size_t n = strlen(s);

	dlrt_http_parser_init(&p);
	for (size_t i = 1; i <= n; i++) {
		int rc = dlrt_http_parse(&p, (const uint8_t *)s, i, &lim, req);

		if (rc != DLRT_HTTP_NEED_MORE) {
			*at = i;
			return rc;
		}
	}
	*at = n;
	return DLRT_HTTP_NEED_MORE;
}

static void test_gloo_requests(void)
{
	struct dlrt_http_req req;
	/* Exactly what Horovod's HTTPRequest.hpp sends. */
	const char *put = "PUT /global/rank_0 HTTP/1.1\r\nHost: 10.0.0.1:4000\r\n"
			  "Content-Length: 5\r\n\r\nnode1";
	const char *get = "GET /local_n1/3 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";
	size_t at;

	TAP_IS_INT(parse_all(put, &req), DLRT_HTTP_COMPLETE, "PUT with a body is complete");
	TAP_IS_INT(req.method, DLRT_HTTP_PUT, "method PUT");
	TAP_OK(req.target_len == 14 && memcmp(req.target, "/global/rank_0", 14) == 0,
	       "target /global/rank_0");
	TAP_IS_INT(req.version_minor, 1, "HTTP/1.1");
	TAP_OK(req.body_len == 5 && memcmp(req.body, "node1", 5) == 0, "body is the 5 bytes");
	TAP_IS_INT(req.consumed, strlen(put), "consumes head and body");

	TAP_IS_INT(parse_bytewise(put, &at, &req), DLRT_HTTP_COMPLETE,
		   "PUT fed byte by byte completes");
	TAP_IS_INT(at, strlen(put), "... exactly at its last byte");
	TAP_OK(req.body_len == 5 && memcmp(req.body, "node1", 5) == 0, "... with the same body");

	TAP_IS_INT(parse_all(get, &req), DLRT_HTTP_COMPLETE, "GET complete");
	TAP_IS_INT(req.method, DLRT_HTTP_GET, "method GET");
	TAP_IS_INT(req.body_len, 0, "no body");

	TAP_IS_INT(parse_all("DELETE /cross_0/2 HTTP/1.0\n\n", &req), DLRT_HTTP_COMPLETE,
		   "DELETE with bare LF line ends and HTTP/1.0");
	TAP_IS_INT(req.method, DLRT_HTTP_DELETE, "method DELETE");
	TAP_IS_INT(req.version_minor, 0, "HTTP/1.0");
	TAP_IS_INT(parse_all("GET /a/b HTTP/1.1\r\n\r\n", &req), DLRT_HTTP_COMPLETE,
		   "GET without any header");
	TAP_IS_INT(parse_all("GET /a/b HTTP/1.1\r\nhOsT: x\r\ncontent-LENGTH:   0  \r\n\r\n", &req),
		   DLRT_HTTP_COMPLETE, "header names are case-insensitive, OWS trimmed");
}

static void test_partial(void)
{
	struct dlrt_http_req req;
	struct dlrt_http_parser p;
	const char *s = "PUT /s/k HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123";

	TAP_IS_INT(parse_all("PUT /s/k HTTP/1.1\r\nContent-Le", &req), DLRT_HTTP_NEED_MORE,
		   "half a header: need more");
	TAP_IS_INT(parse_all(s, &req), DLRT_HTTP_NEED_MORE, "4 of 10 body bytes: need more");
	TAP_IS_INT(parse_all("GET /a/b HTTP/1.1\r\n", &req), DLRT_HTTP_NEED_MORE,
		   "request line only: need more");
	TAP_IS_INT(parse_all("GET /a/b HTTP/1.1\r\n\r", &req), DLRT_HTTP_NEED_MORE,
		   "terminator split between CR and LF: need more");
	TAP_IS_INT(parse_all("", &req), DLRT_HTTP_NEED_MORE, "nothing yet: need more");

	/* Two reads: first the head, then the body, same parser. */
	dlrt_http_parser_init(&p);
	const char *full = "PUT /s/k HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
	TAP_IS_INT(dlrt_http_parse(&p, (const uint8_t *)full, strlen(full) - 3, &lim, &req),
		   DLRT_HTTP_NEED_MORE, "head alone: need more");
	TAP_IS_INT(dlrt_http_parse(&p, (const uint8_t *)full, strlen(full), &lim, &req),
		   DLRT_HTTP_COMPLETE, "then the body: complete");
	TAP_OK(req.body_len == 3 && memcmp(req.body, "abc", 3) == 0, "body abc");

	/* Pipelined requests: the first one is parsed, consumed says where it ends. */
	const char *two = "GET /a/b HTTP/1.1\r\n\r\nGET /c/d HTTP/1.1\r\n\r\n";
	TAP_IS_INT(parse_all(two, &req), DLRT_HTTP_COMPLETE, "pipelined: first request");
	TAP_IS_INT(req.consumed, strlen(two) / 2, "... consumed stops at its end");
	const char *garb = "GET /a/b HTTP/1.1\r\n\r\n\x01\x02garbage";
	TAP_IS_INT(parse_all(garb, &req), DLRT_HTTP_COMPLETE,
		   "pipelined garbage after a request does not spoil it");
	TAP_IS_INT(req.consumed, 21, "... consumed = the request only");
}

static void test_errors(void)
{
	struct dlrt_http_req req;
	char big[2048];
	size_t at;

	TAP_IS_INT(parse_all("PUT /s/k HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
			     &req), 413, "absurd Content-Length: 413");
	TAP_IS_INT((long long)dlrt_http_wire_max(&lim), 5464,
		   "the wire bound is the base64 length of max_body (4096 -> 5464)");
	TAP_IS_INT(parse_all("PUT /s/k HTTP/1.1\r\nContent-Length: 5465\r\n\r\n", &req), 413,
		   "Content-Length over the wire bound: 413 before any body byte");
	TAP_IS_INT(parse_all("PUT /s/k HTTP/1.1\r\nContent-Length: 5464\r\n\r\n", &req),
		   DLRT_HTTP_NEED_MORE, "Content-Length == the wire bound is accepted");
	TAP_IS_INT(parse_all("PUT /s/k HTTP/1.1\r\nContent-Length: -1\r\n\r\n", &req), 400,
		   "negative Content-Length: 400");
	TAP_IS_INT(parse_all("PUT /s/k HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", &req), 400,
		   "Content-Length with junk: 400");
	TAP_IS_INT(parse_all("PUT /s/k HTTP/1.1\r\nContent-Length:\r\n\r\n", &req), 400,
		   "empty Content-Length: 400");
	TAP_IS_INT(parse_all("PUT /s/k HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
			     &req), 400, "conflicting Content-Length: 400");
	TAP_IS_INT(parse_all("PUT /s/k HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
			     &req), DLRT_HTTP_COMPLETE, "repeated equal Content-Length is fine");
	TAP_IS_INT(parse_all("PUT /s/k HTTP/1.1\r\nHost: x\r\n\r\n", &req), 411,
		   "PUT without Content-Length: 411");
	TAP_IS_INT(parse_all("PUT /s/k HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &req), 411,
		   "chunked: 411");
	TAP_IS_INT(parse_all("PUT /s/k HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
			     "Content-Length: 3\r\n\r\n", &req), 400, "chunked and a length: 400");
	TAP_IS_INT(parse_all("POST /s/k HTTP/1.1\r\n\r\n", &req), 501, "POST: 501 as http.server");
	TAP_IS_INT(parse_all("HEAD /s/k HTTP/1.1\r\n\r\n", &req), 501, "HEAD: 501");
	TAP_IS_INT(parse_all("get /s/k HTTP/1.1\r\n\r\n", &req), 501,
		   "methods are case-sensitive: 501");
	TAP_IS_INT(parse_all("GET /s/k HTTP/2.0\r\n\r\n", &req), 505, "HTTP/2.0: 505");
	TAP_IS_INT(parse_all("GET /s/k HTTX/1.1\r\n\r\n", &req), 400, "bad protocol: 400");
	TAP_IS_INT(parse_all("GET /s/k\r\n\r\n", &req), 400, "HTTP/0.9 request line: 400");
	TAP_IS_INT(parse_all("GET  /s/k HTTP/1.1\r\n\r\n", &req), 400, "double space: 400");
	TAP_IS_INT(parse_all("\r\nGET /s/k HTTP/1.1\r\n\r\n", &req), 400, "leading empty line: 400");
	TAP_IS_INT(parse_all("GET /s/k HTTP/1.1\r\n Host: x\r\n\r\n", &req), 400,
		   "obsolete line folding: 400");
	TAP_IS_INT(parse_all("GET /s/k HTTP/1.1\r\nHost x\r\n\r\n", &req), 400,
		   "header without colon: 400");
	TAP_IS_INT(parse_all("GET /s/k HTTP/1.1\r\nHo st: x\r\n\r\n", &req), 400,
		   "space in a header name: 400");
	TAP_IS_INT(parse_all("GET /s/k HTTP/1.1\r\nHost: a\rb\r\n\r\n", &req), 400,
		   "bare CR in a value: 400");
	TAP_IS_INT(parse_all("GET /s/k HTTP/1.1\r\na: 1\r\nb: 1\r\nc: 1\r\nd: 1\r\ne: 1\r\n"
			     "f: 1\r\ng: 1\r\nh: 1\r\ni: 1\r\n\r\n", &req), 431,
		   "9 headers over a limit of 8: 431");

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "GET /s/", 7);
	TAP_IS_INT(parse_all(big, &req), 431, "head over max_head without an end: 431");
	memcpy(big, "GET /s/k HTTP/1.1\r\nX: ", 22);
	TAP_IS_INT(parse_all(big, &req), 431, "endless header: 431");

	/* Garbage is refused as soon as it is visible, not after a timeout. */
	TAP_IS_INT(parse_bytewise("\x16\x03\x01\x02\x00 TLS hello", &at, &req), 400,
		   "a TLS hello: 400");
	TAP_IS_INT(at, 1, "... at its first byte");
	TAP_IS_INT(parse_bytewise("GET /s/\x01k HTTP/1.1\r\n\r\n", &at, &req), 400,
		   "control byte in the target: 400");
	TAP_IS_INT(at, 8, "... at that byte");
	TAP_IS_INT(parse_bytewise("GETTHISVERYLONGMETHODNAME / HTTP/1.1\r\n\r\n", &at, &req), 400,
		   "overlong method: 400");
	TAP_OK(at <= 17, "... refused within the method (at byte %zu)", at);
	TAP_IS_INT(parse_bytewise("PUT /s/k HTTP/1.1\r\nContent-Length: 999999\r\n\r\n", &at, &req),
		   413, "huge Content-Length byte by byte: 413");
	TAP_IS_INT(at, strlen("PUT /s/k HTTP/1.1\r\nContent-Length: 999999\r\n\r\n"),
		   "... at the end of the head");
}

/* A PUT of `n` body bytes: `fill` repeated, then `tail`. */
static int put_body(size_t n, char fill, const char *tail, struct dlrt_http_req *req)
{
	static char buf[8192];
	int h = snprintf(buf, sizeof(buf), "PUT /s/k HTTP/1.1\r\nContent-Length: %zu\r\n\r\n", n);
	size_t t = strlen(tail);

	memset(buf + h, fill, n - t);
	memcpy(buf + h + n - t, tail, t);
	buf[h + n] = '\0';
	return parse_all(buf, req);
}

/* Horovod's Python client PUTs base64: the bound is on the object. */
static void test_decoded_bound(void)
{
	struct dlrt_http_req req;
	size_t dec;

	TAP_OK(dlrt_http_base64_len((const uint8_t *)"YWJj", 4, &dec) && dec == 3, "YWJj is 3 bytes");
	TAP_OK(dlrt_http_base64_len((const uint8_t *)"YWI=", 4, &dec) && dec == 2, "YWI= is 2");
	TAP_OK(dlrt_http_base64_len((const uint8_t *)"YQ==", 4, &dec) && dec == 1, "YQ== is 1");
	TAP_OK(dlrt_http_base64_len((const uint8_t *)"", 0, &dec) && dec == 0, "empty is 0");
	TAP_OK(!dlrt_http_base64_len((const uint8_t *)"YWJ", 3, NULL), "not a multiple of 4");
	TAP_OK(!dlrt_http_base64_len((const uint8_t *)"Y=Jj", 4, NULL), "'=' inside");
	TAP_OK(!dlrt_http_base64_len((const uint8_t *)"Y===", 4, NULL), "three '='");
	TAP_OK(!dlrt_http_base64_len((const uint8_t *)"YW\nj", 4, NULL), "a newline");
	TAP_OK(!dlrt_http_base64_len((const uint8_t *)"YW-_", 4, NULL), "the URL-safe alphabet");

	TAP_IS_INT(put_body(5464, 'A', "AA==", &req), DLRT_HTTP_COMPLETE,
		   "a base64 body of a 4096-byte object (5464 bytes on the wire) is accepted");
	TAP_IS_INT((long long)req.body_len, 5464, "... with the body as sent");
	TAP_IS_INT(put_body(5464, 'A', "AAAA", &req), 413,
		   "a base64 body of 4098 bytes: 413 once read");
	TAP_IS_INT(put_body(4096, '\x01', "", &req), DLRT_HTTP_COMPLETE,
		   "a raw body of max_body bytes is accepted");
	TAP_IS_INT(put_body(4097, '\x01', "", &req), 413, "a raw body of max_body + 1: 413");
	TAP_IS_INT(put_body(4100, 'A', "", &req), DLRT_HTTP_COMPLETE,
		   "4100 base64 bytes (a 3075-byte object) are accepted");
}

static void test_reply(void)
{
	struct dlrt_buf out;
	const char *want = "HTTP/1.0 200 OK\r\nServer: dlrt-hvd-driver\r\n"
			   "Content-Length: 3\r\nConnection: close\r\n\r\nabc";

	dlrt_buf_init(&out, 4096);
	TAP_IS_INT(dlrt_http_reply(&out, 200, "abc", 3), 0, "reply fits");
	TAP_OK(out.len == strlen(want) && memcmp(dlrt_buf_head(&out), want, out.len) == 0,
	       "200 reply with Content-Length and body");
	dlrt_buf_consume(&out, out.len);
	TAP_IS_INT(dlrt_http_reply(&out, 404, NULL, 0), 0, "empty reply fits");
	TAP_OK(memmem(dlrt_buf_head(&out), out.len, "Content-Length: 0\r\n", 19) != NULL,
	       "404 carries Content-Length: 0");
	TAP_OK(memcmp(dlrt_buf_head(&out), "HTTP/1.0 404 Not Found\r\n", 24) == 0, "404 status line");
	dlrt_buf_free(&out);
	dlrt_buf_init(&out, 32);
	TAP_IS_INT(dlrt_http_reply(&out, 200, "abc", 3), -1, "reply past the buffer limit fails");
	dlrt_buf_free(&out);
	TAP_IS_STR(dlrt_http_reason(413), "Payload Too Large", "reason of 413");
}

int main(void)
{
	test_gloo_requests();
	test_partial();
	test_errors();
	test_decoded_bound();
	test_reply();
	return tap_done();
}
