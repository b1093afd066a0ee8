/* http.h - an incremental HTTP/1.x request parser and response writer.
 *
 * Just enough HTTP for Horovod's rendezvous protocol (horovod/runner/http/
 * http_server.py): one request per connection, a body of exactly
 * Content-Length bytes, no chunked encoding. The parser is pure (no I/O, no
 * allocation): the caller hands it everything received so far and gets back
 * "need more", "complete" or the HTTP error status to answer with. It never
 * waits for a body it is going to refuse (413), so a hostile Content-Length
 * costs the server nothing.
 */
#ifndef DLRT_HTTP_H
#define DLRT_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define DLRT_HTTP_NEED_MORE 0
#define DLRT_HTTP_COMPLETE  1
/* Any other return value of dlrt_http_parse is an HTTP status >= 400. */

enum dlrt_http_method {
	DLRT_HTTP_GET,
	DLRT_HTTP_PUT,
	DLRT_HTTP_DELETE,
};

struct dlrt_http_limits {
	size_t max_head;      /* request line + headers, including the blank line */
	unsigned max_headers; /* header lines */
	/* The largest object a body may carry. Horovod's Python client sends
	 * base64 (codec.dumps_base64), so a body that is base64 counts by what
	 * it decodes to: Content-Length may reach dlrt_http_wire_max(), and a
	 * body past max_body that is not base64 gets 413 once read. */
	size_t max_body;
};

/* The largest Content-Length accepted: the base64 length of max_body. */
size_t dlrt_http_wire_max(const struct dlrt_http_limits *lim);

/* True if b[0..n) is standard base64 as Python's base64.b64encode writes it
 * (A-Z a-z 0-9 + /, '=' padding only at the end, a multiple of 4 long);
 * *decoded (may be NULL) is then the length it decodes to. */
bool dlrt_http_base64_len(const uint8_t *b, size_t n, size_t *decoded);

/* Python's http.server allows 100 headers; 8 KiB of head is plenty for
 * "PUT /cross_12/rank_3 HTTP/1.1" plus Host and Content-Length. */
#define DLRT_HTTP_DEFAULT_MAX_HEAD    8192
#define DLRT_HTTP_DEFAULT_MAX_HEADERS 100

/* Where the parser is between calls, so byte-by-byte input is not rescanned. */
struct dlrt_http_parser {
	size_t scanned; /* bytes of the head already searched for its end */
};

/* Points into the caller's data: valid until that data is consumed. */
struct dlrt_http_req {
	enum dlrt_http_method method;
	const char *method_str;
	size_t method_len;
	const char *target; /* the raw request target, e.g. "/global/rank_0" */
	size_t target_len;
	int version_minor;  /* HTTP/1.<minor> */
	const uint8_t *body;
	size_t body_len;
	size_t consumed;    /* head + body: bytes to drop from the input */
};

void dlrt_http_parser_init(struct dlrt_http_parser *p);

/* Parses the request at the front of data[0..len). Call again with the same
 * parser and a longer buffer after more bytes arrive (the first bytes must
 * not change). Returns DLRT_HTTP_NEED_MORE, DLRT_HTTP_COMPLETE (req filled in)
 * or an HTTP error status: 400 malformed, 411 Transfer-Encoding or a PUT
 * without Content-Length, 413 body larger than dlrt_http_wire_max() (before
 * any body byte is read) or, once read, an object larger than max_body (a
 * base64 body by its decoded length, any other by its own), 431 head too large or
 * too many headers, 501 unknown method, 505 not HTTP/1.x. */
int dlrt_http_parse(struct dlrt_http_parser *p, const uint8_t *data, size_t len,
		    const struct dlrt_http_limits *lim, struct dlrt_http_req *req);

/* "Not Found" for 404 and so on; "Unknown" for codes it does not know. */
const char *dlrt_http_reason(int status);

/* Appends an HTTP/1.0 response that always carries Content-Length (also 0,
 * Horovod's HTTPRequest client reads until it has that many bytes) and
 * "Connection: close". Returns -1 if `out` would pass its limit. */
int dlrt_http_reply(struct dlrt_buf *out, int status, const void *body, size_t len);

#endif
