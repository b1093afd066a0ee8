#include "http.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

#define MAX_METHOD 16

/* RFC 9110 token characters. */
static bool is_tchar(uint8_t c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool is_vchar(uint8_t c)
{
	return c > 0x20 && c < 0x7f;
}

void dlrt_http_parser_init(struct dlrt_http_parser *p)
{
	memset(p, 0, sizeof(*p));
}

/* Checks what has arrived of the request line before its end, so garbage is
 * refused at once instead of after the idle timeout. */
static int check_line_prefix(const uint8_t *d, size_t n)
{
	size_t i = 0;

	while (i < n && d[i] != ' ') {
		if (!is_tchar(d[i]) || i >= MAX_METHOD)
			return 400;
		i++;
	}
	if (i == n)
		return DLRT_HTTP_NEED_MORE;
	if (i == 0)
		return 400;
	for (i++; i < n && d[i] != ' '; i++)
		if (!is_vchar(d[i]))
			return 400;
	return DLRT_HTTP_NEED_MORE;
}

static int method_of(const char *m, size_t n, enum dlrt_http_method *out)
{
	static const struct {
		const char *name;
		enum dlrt_http_method method;
	} known[] = {
		{ "GET", DLRT_HTTP_GET },
		{ "PUT", DLRT_HTTP_PUT },
		{ "DELETE", DLRT_HTTP_DELETE },
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		if (strlen(known[i].name) == n && memcmp(known[i].name, m, n) == 0) {
			*out = known[i].method;
			return 0;
		}
	}
	/* Python's BaseHTTPRequestHandler answers 501 for a method without a
	 * do_<METHOD> handler, which is what Horovod's server does. */
	return 501;
}

/* line[0..n) is the request line without its line end. */
static int parse_request_line(const uint8_t *line, size_t n, struct dlrt_http_req *req)
{
	const uint8_t *sp1 = memchr(line, ' ', n), *sp2, *v;
	size_t vlen;
	int rc;

	if (!sp1 || sp1 == line || (size_t)(sp1 - line) > MAX_METHOD)
		return 400;
	for (const uint8_t *c = line; c < sp1; c++)
		if (!is_tchar(*c))
			return 400;
	sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - line));
	if (!sp2 || sp2 == sp1 + 1)
		return 400; /* HTTP/0.9 "GET /x" or an empty target */
	for (const uint8_t *c = sp1 + 1; c < sp2; c++)
		if (!is_vchar(*c))
			return 400;
	v = sp2 + 1;
	vlen = n - (size_t)(v - line);
	if (vlen != 8 || memcmp(v, "HTTP/", 5) != 0 || v[6] != '.' ||
	    v[5] < '0' || v[5] > '9' || v[7] < '0' || v[7] > '9')
		return 400;
	if (v[5] != '1')
		return 505;
	req->method_str = (const char *)line;
	req->method_len = (size_t)(sp1 - line);
	req->target = (const char *)sp1 + 1;
	req->target_len = (size_t)(sp2 - sp1 - 1);
	req->version_minor = v[7] - '0';
	rc = method_of(req->method_str, req->method_len, &req->method);
	return rc ? rc : DLRT_HTTP_COMPLETE;
}

/* Line end at data[nl] == '\n': the line's length without "\r\n" or "\n". */
static size_t line_len(const uint8_t *data, size_t start, size_t nl)
{
	return nl > start && data[nl - 1] == '\r' ? nl - 1 - start : nl - start;
}

static bool header_is(const uint8_t *name, size_t n, const char *want)
{
	return strlen(want) == n && strncasecmp((const char *)name, want, n) == 0;
}

/* Parses a Content-Length value; 400 if not digits, 413 past max. */
static int parse_length(const uint8_t *v, size_t n, size_t max, size_t *out)
{
	size_t val = 0;

	if (n == 0)
		return 400;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return 400;
		if (val > (max - (size_t)(v[i] - '0')) / 10)
			return 413;
		val = val * 10 + (size_t)(v[i] - '0');
	}
	*out = val;
	return 0;
}

/* Parses the header lines of a complete head data[start..head_len). */
static int parse_headers(const uint8_t *data, size_t start, size_t head_len,
			 const struct dlrt_http_limits *lim, struct dlrt_http_req *req,
			 bool *has_length, size_t *length)
{
	unsigned count = 0;
	bool has_te = false;
	size_t pos = start;

	*has_length = false;
	for (;;) {
		const uint8_t *nl = memchr(data + pos, '\n', head_len - pos);
		size_t n = line_len(data, pos, (size_t)(nl - data));
		const uint8_t *line = data + pos, *colon, *v, *end;
		size_t val;
		int rc;

		pos = (size_t)(nl - data) + 1;
		if (n == 0)
			break;
		if (++count > lim->max_headers)
			return 431;
		colon = memchr(line, ':', n);
		if (!colon || colon == line)
			return 400; /* also rejects obsolete line folding */
		for (const uint8_t *c = line; c < colon; c++)
			if (!is_tchar(*c))
				return 400;
		v = colon + 1;
		end = line + n;
		for (const uint8_t *c = v; c < end; c++)
			if ((*c < 0x20 && *c != '\t') || *c == 0x7f)
				return 400;
		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		if (header_is(line, (size_t)(colon - line), "Content-Length")) {
			rc = parse_length(v, (size_t)(end - v), dlrt_http_wire_max(lim), &val);
			if (rc)
				return rc;
			if (*has_length && val != *length)
				return 400;
			*has_length = true;
			*length = val;
		} else if (header_is(line, (size_t)(colon - line), "Transfer-Encoding")) {
			has_te = true;
		}
	}
	if (has_te)
		/* Both framings at once is the request smuggling pattern. */
		return *has_length ? 400 : 411;
	if (!*has_length && req->method == DLRT_HTTP_PUT)
		return 411;
	return 0;
}

int dlrt_http_parse(struct dlrt_http_parser *p, const uint8_t *data, size_t len,
		    const struct dlrt_http_limits *lim, struct dlrt_http_req *req)
{
	size_t limit = len < lim->max_head ? len : lim->max_head;
	size_t head_len = 0, first_nl, length = 0;
	const uint8_t *nl;
	bool has_length;
	int rc;

	memset(req, 0, sizeof(*req));
	nl = memchr(data, '\n', limit);
	if (!nl) {
		rc = check_line_prefix(data, limit);
		if (rc)
			return rc;
		return len >= lim->max_head ? 431 : DLRT_HTTP_NEED_MORE;
	}
	first_nl = (size_t)(nl - data);
	rc = parse_request_line(data, line_len(data, 0, first_nl), req);
	if (rc != DLRT_HTTP_COMPLETE)
		return rc;

	/* The head ends at an empty line: "\n\n" or "\n\r\n". */
	if (p->scanned < first_nl)
		p->scanned = first_nl;
	for (size_t i = p->scanned; i < limit; i++) {
		if (data[i] != '\n' || i == first_nl)
			continue;
		if (data[i - 1] == '\n' || (data[i - 1] == '\r' && data[i - 2] == '\n')) {
			head_len = i + 1;
			break;
		}
	}
	if (!head_len) {
		/* The check looks backwards, so new bytes are all that is left. */
		p->scanned = limit;
		return len >= lim->max_head ? 431 : DLRT_HTTP_NEED_MORE;
	}
	rc = parse_headers(data, first_nl + 1, head_len, lim, req, &has_length, &length);
	if (rc)
		return rc;
	if (len - head_len < length)
		return DLRT_HTTP_NEED_MORE;
	if (length > lim->max_body) {
		size_t decoded;

		if (!dlrt_http_base64_len(data + head_len, length, &decoded) ||
		    decoded > lim->max_body)
			return 413;
	}
	req->body = data + head_len;
	req->body_len = length;
	req->consumed = head_len + length;
	return DLRT_HTTP_COMPLETE;
}

size_t dlrt_http_wire_max(const struct dlrt_http_limits *lim)
{
	size_t groups = lim->max_body / 3 + (lim->max_body % 3 != 0);

	return groups > SIZE_MAX / 4 ? SIZE_MAX : groups * 4;
}

static bool b64_char(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/';
}

bool dlrt_http_base64_len(const uint8_t *b, size_t n, size_t *decoded)
{
	size_t pad = 0;

	if (n % 4)
		return false;
	if (n && b[n - 1] == '=')
		pad = n >= 2 && b[n - 2] == '=' ? 2 : 1;
	for (size_t i = 0; i < n - pad; i++)
		if (!b64_char(b[i]))
			return false;
	if (decoded)
		*decoded = n / 4 * 3 - pad;
	return true;
}

const char *dlrt_http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 411: return "Length Required";
	case 413: return "Payload Too Large";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 505: return "HTTP Version Not Supported";
	case 507: return "Insufficient Storage";
	default: return "Unknown";
	}
}

int dlrt_http_reply(struct dlrt_buf *out, int status, const void *body, size_t len)
{
	if (dlrt_buf_printf(out, "HTTP/1.0 %d %s\r\nServer: dlrt-hvd-driver\r\n"
			    "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			    status, dlrt_http_reason(status), len) < 0)
		return -1;
	return dlrt_buf_append(out, body, len);
}
