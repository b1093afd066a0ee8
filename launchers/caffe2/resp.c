#include "resp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { S_START, S_INLINE, S_ARGS, S_DONE };

void dlrt_resp_init(struct dlrt_resp_parser *p, size_t max_bulk, size_t max_args)
{
	memset(p, 0, sizeof(*p));
	p->max_bulk = max_bulk ? max_bulk : DLRT_RESP_DEFAULT_MAX_BULK;
	p->max_args = max_args ? max_args : DLRT_RESP_DEFAULT_MAX_ARGS;
	p->bulk_len = -1;
}

void dlrt_resp_free(struct dlrt_resp_parser *p)
{
	free(p->off);
	free(p->argv);
	free(p->argvlen);
	free(p->scratch);
	dlrt_resp_init(p, p->max_bulk, p->max_args);
}

bool dlrt_resp_partial(const struct dlrt_resp_parser *p, size_t len)
{
	return len > 0 || (p->state != S_START && p->state != S_DONE);
}

int dlrt_resp_str2ll(const uint8_t *s, size_t len, int64_t *out)
{
	uint64_t v = 0, lim;
	bool neg = false;
	size_t i = 0;

	if (len == 0 || len > 20)
		return -1;
	if (len == 1 && s[0] == '0') {
		*out = 0;
		return 0;
	}
	if (s[0] == '-') {
		neg = true;
		if (++i == len)
			return -1;
	}
	if (s[i] < '1' || s[i] > '9')
		return -1; /* no leading zeros, no '+', no spaces */
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < len; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return -1;
		d = (unsigned)(s[i] - '0');
		if (v > (lim - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* Room for `n` arguments in the offset/pointer arrays. Grows with the
 * arguments that actually arrive, never with the announced count. */
static int reserve_args(struct dlrt_resp_parser *p, size_t n)
{
	size_t cap = p->cap ? p->cap : 8;
	size_t *off, *lens;
	const uint8_t **argv;

	if (n <= p->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	off = realloc(p->off, cap * sizeof(*off));
	if (!off)
		return -1;
	p->off = off;
	lens = realloc(p->argvlen, cap * sizeof(*lens));
	if (!lens)
		return -1;
	p->argvlen = lens;
	argv = realloc(p->argv, cap * sizeof(*argv));
	if (!argv)
		return -1;
	p->argv = argv;
	p->cap = cap;
	return 0;
}

static int fail(struct dlrt_resp_parser *p, const char *msg)
{
	p->error = msg;
	p->state = S_DONE;
	return DLRT_RESP_ERROR;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Splits an inline line like Redis's sdssplitargs: blanks separate words,
 * "..." understands \n \r \t \b \a \xHH and \<c>, '...' understands \', and
 * a closing quote must be followed by a blank or the end. A NUL ends the
 * line (Redis reads it as a C string). Returns -1 on unbalanced quotes. */
static int split_inline(struct dlrt_resp_parser *p, const uint8_t *s, size_t n)
{
	const uint8_t *end = s, *lim = s + n;
	uint8_t *w;

	while (end < lim && *end)
		end++;
	if (n > p->scratch_cap) {
		uint8_t *b = realloc(p->scratch, n);

		if (!b)
			return -2;
		p->scratch = b;
		p->scratch_cap = n;
	}
	w = p->scratch;
	p->argc = 0;
	for (;;) {
		uint8_t *word;
		bool inq = false, insq = false, done = false;

		while (s < end && is_space(*s))
			s++;
		if (s == end)
			return 0;
		word = w;
		while (!done) {
			int c = s < end ? *s : 0;
			int c1 = s + 1 < end ? s[1] : 0;

			if (inq) {
				if (c == '\\' && c1 == 'x' && s + 3 < end &&
				    hexval(s[2]) >= 0 && hexval(s[3]) >= 0) {
					*w++ = (uint8_t)(hexval(s[2]) * 16 + hexval(s[3]));
					s += 3;
				} else if (c == '\\' && c1) {
					s++;
					switch (c1) {
					case 'n': *w++ = '\n'; break;
					case 'r': *w++ = '\r'; break;
					case 't': *w++ = '\t'; break;
					case 'b': *w++ = '\b'; break;
					case 'a': *w++ = '\a'; break;
					default: *w++ = (uint8_t)c1; break;
					}
				} else if (c == '"') {
					if (c1 && !is_space(c1))
						return -1;
					done = true;
				} else if (!c) {
					return -1;
				} else {
					*w++ = (uint8_t)c;
				}
			} else if (insq) {
				if (c == '\\' && c1 == '\'') {
					s++;
					*w++ = '\'';
				} else if (c == '\'') {
					if (c1 && !is_space(c1))
						return -1;
					done = true;
				} else if (!c) {
					return -1;
				} else {
					*w++ = (uint8_t)c;
				}
			} else {
				switch (c) {
				case ' ': case '\n': case '\r': case '\t': case '\0':
					done = true;
					break;
				case '"':
					inq = true;
					break;
				case '\'':
					insq = true;
					break;
				default:
					*w++ = (uint8_t)c;
					break;
				}
			}
			if (s < end)
				s++;
		}
		if (p->argc >= p->max_args)
			return -3;
		if (reserve_args(p, p->argc + 1) < 0)
			return -2;
		p->argv[p->argc] = word;
		p->argvlen[p->argc] = (size_t)(w - word);
		p->argc++;
	}
}

static int parse_inline(struct dlrt_resp_parser *p, const uint8_t *data, size_t len)
{
	const uint8_t *nl = len > p->pos ? memchr(data + p->pos, '\n', len - p->pos) : NULL;
	size_t linelen;
	int rc;

	if (!nl) {
		p->pos = len;
		if (len > DLRT_RESP_INLINE_MAX)
			return fail(p, "ERR Protocol error: too big inline request");
		return DLRT_RESP_NEED_MORE;
	}
	linelen = (size_t)(nl - data);
	p->used = linelen + 1;
	if (linelen && data[linelen - 1] == '\r')
		linelen--;
	rc = split_inline(p, data, linelen);
	if (rc == -1)
		return fail(p, "ERR Protocol error: unbalanced quotes in request");
	if (rc == -3)
		return fail(p, "ERR Protocol error: invalid multibulk length");
	if (rc < 0)
		return fail(p, "ERR out of memory parsing the request");
	p->state = S_DONE;
	return p->argc ? DLRT_RESP_COMPLETE : DLRT_RESP_EMPTY;
}

/* Finds the "\r" that ends a header starting at `from`; Redis requires one
 * more byte after it (the "\n", which it skips without looking). */
static const uint8_t *header_end(const uint8_t *data, size_t from, size_t len)
{
	const uint8_t *cr;

	if (from >= len)
		return NULL;
	cr = memchr(data + from, '\r', len - from);
	if (!cr || (size_t)(cr - data) + 1 >= len)
		return NULL;
	return cr;
}

int dlrt_resp_parse(struct dlrt_resp_parser *p, const uint8_t *data, size_t len)
{
	if (p->state == S_DONE) {
		p->state = S_START;
		p->pos = 0;
		p->argc = 0;
		p->bulk_len = -1;
		p->error = NULL;
	}
	if (p->state == S_START) {
		const uint8_t *cr;
		int64_t n;

		if (len == 0)
			return DLRT_RESP_NEED_MORE;
		if (data[0] != '*') {
			p->state = S_INLINE;
			p->pos = 0;
			return parse_inline(p, data, len);
		}
		cr = header_end(data, 1, len);
		if (!cr) {
			if (len > DLRT_RESP_INLINE_MAX)
				return fail(p, "ERR Protocol error: too big mbulk count string");
			return DLRT_RESP_NEED_MORE;
		}
		if (dlrt_resp_str2ll(data + 1, (size_t)(cr - data) - 1, &n) < 0 ||
		    (n > 0 && (uint64_t)n > p->max_args))
			return fail(p, "ERR Protocol error: invalid multibulk length");
		p->pos = (size_t)(cr - data) + 2;
		if (n <= 0) {
			p->used = p->pos;
			p->state = S_DONE;
			return DLRT_RESP_EMPTY;
		}
		p->want_args = (size_t)n;
		p->argc = 0;
		p->bulk_len = -1;
		p->state = S_ARGS;
	}
	if (p->state == S_INLINE)
		return parse_inline(p, data, len);

	while (p->argc < p->want_args) {
		if (p->bulk_len < 0) {
			const uint8_t *cr;
			int64_t n;

			if (p->pos >= len)
				return DLRT_RESP_NEED_MORE;
			if (data[p->pos] != '$') {
				snprintf(p->errbuf, sizeof(p->errbuf),
					 "ERR Protocol error: expected '$', got '%c'",
					 data[p->pos]);
				return fail(p, p->errbuf);
			}
			cr = header_end(data, p->pos + 1, len);
			if (!cr) {
				if (len - p->pos > DLRT_RESP_INLINE_MAX)
					return fail(p, "ERR Protocol error: too big bulk count string");
				return DLRT_RESP_NEED_MORE;
			}
			if (dlrt_resp_str2ll(data + p->pos + 1,
					     (size_t)(cr - data) - p->pos - 1, &n) < 0 ||
			    n < 0 || (uint64_t)n > p->max_bulk)
				return fail(p, "ERR Protocol error: invalid bulk length");
			p->pos = (size_t)(cr - data) + 2;
			p->bulk_len = n;
		}
		/* The argument and the two bytes after it (Redis skips them). */
		if (len < p->pos || len - p->pos < (size_t)p->bulk_len + 2)
			return DLRT_RESP_NEED_MORE;
		if (reserve_args(p, p->argc + 1) < 0)
			return fail(p, "ERR out of memory parsing the request");
		p->off[p->argc] = p->pos;
		p->argvlen[p->argc] = (size_t)p->bulk_len;
		p->argc++;
		p->pos += (size_t)p->bulk_len + 2;
		p->bulk_len = -1;
	}
	for (size_t i = 0; i < p->argc; i++)
		p->argv[i] = data + p->off[i];
	p->used = p->pos;
	p->state = S_DONE;
	return DLRT_RESP_COMPLETE;
}

/* ---- replies ------------------------------------------------------------ */

/* "<type><text>\r\n" with CR/LF in the text mapped to spaces. */
static int add_line(struct dlrt_buf *out, char type, const char *s, size_t n)
{
	uint8_t *w;

	if (dlrt_buf_reserve(out, n + 3) < 0)
		return -1;
	w = out->data + out->off + out->len;
	*w++ = (uint8_t)type;
	for (size_t i = 0; i < n; i++)
		*w++ = (s[i] == '\r' || s[i] == '\n') ? ' ' : (uint8_t)s[i];
	*w++ = '\r';
	*w = '\n';
	out->len += n + 3;
	return 0;
}

int dlrt_resp_add_simple(struct dlrt_buf *out, const char *s)
{
	return add_line(out, '+', s, strlen(s));
}

int dlrt_resp_add_error(struct dlrt_buf *out, const char *s)
{
	return add_line(out, '-', s, strlen(s));
}

int dlrt_resp_add_errorf(struct dlrt_buf *out, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	return add_line(out, '-', msg, strlen(msg));
}

/* Decimal digits of v into the end of buf[32]; returns the start. */
static char *fmt_ll(char *end, int64_t v)
{
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	do {
		*--end = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--end = '-';
	return end;
}

static int add_prefixed_len(struct dlrt_buf *out, char type, int64_t v)
{
	char buf[32], *end = buf + sizeof(buf), *s;

	*--end = '\n';
	*--end = '\r';
	s = fmt_ll(end, v);
	*--s = type;
	return dlrt_buf_append(out, s, (size_t)(buf + sizeof(buf) - s));
}

int dlrt_resp_add_int(struct dlrt_buf *out, int64_t v)
{
	/* The two replies SETNX/EXISTS give most. */
	if (v == 0 || v == 1)
		return dlrt_buf_append(out, v ? ":1\r\n" : ":0\r\n", 4);
	return add_prefixed_len(out, ':', v);
}

int dlrt_resp_add_bulk(struct dlrt_buf *out, const void *p, size_t len)
{
	if (add_prefixed_len(out, '$', (int64_t)len) < 0 ||
	    dlrt_buf_reserve(out, len + 2) < 0)
		return -1;
	if (len)
		memcpy(out->data + out->off + out->len, p, len);
	memcpy(out->data + out->off + out->len + len, "\r\n", 2);
	out->len += len + 2;
	return 0;
}

int dlrt_resp_add_bulk_str(struct dlrt_buf *out, const char *s)
{
	return dlrt_resp_add_bulk(out, s, strlen(s));
}

int dlrt_resp_add_nil(struct dlrt_buf *out)
{
	return dlrt_buf_append(out, "$-1\r\n", 5);
}

int dlrt_resp_add_array(struct dlrt_buf *out, size_t n)
{
	return add_prefixed_len(out, '*', (int64_t)n);
}
