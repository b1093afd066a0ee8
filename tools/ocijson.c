/* ocijson.c - check a JSON document, then name its values by byte span
 * (ocijson.h). The checker is a recursive descent with a depth limit; the
 * walkers after it trust a checked document and only skip over values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ocijson.h"

struct parser {
	const unsigned char *s;
	size_t len;
	size_t pos;
	const char *why;
};

/* The length (1-4) of the valid UTF-8 sequence at s[0..n), its code point
 * in *cp; 0 when s[0] starts none (overlong forms, surrogates and code
 * points past U+10FFFF are not valid). */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c = s[0], min;
	size_t need;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		need = 2;
		c &= 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 3;
		c &= 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 4;
		c &= 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n < need)
		return 0;
	for (size_t i = 1; i < need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return need;
}

static int fail(struct parser *p, const char *why)
{
	p->why = why;
	return -1;
}

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
				   p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
		p->pos++;
}

static int is_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int parse_string(struct parser *p)
{
	p->pos++; /* the opening quote */
	for (;;) {
		unsigned char c;
		uint32_t cp;
		size_t n;

		if (p->pos >= p->len)
			return fail(p, "a string is not closed");
		c = p->s[p->pos];
		if (c == '"') {
			p->pos++;
			return 0;
		}
		if (c < 0x20)
			return fail(p, "a control character inside a string (write it as \\uXXXX)");
		if (c == '\\') {
			if (p->pos + 1 >= p->len)
				return fail(p, "a string is not closed");
			c = p->s[p->pos + 1];
			if (c == 'u') {
				if (p->pos + 6 > p->len)
					return fail(p, "a \\u escape needs 4 hexadecimal digits");
				for (size_t i = 2; i < 6; i++)
					if (!is_hex(p->s[p->pos + i]))
						return fail(p, "a \\u escape needs 4 hexadecimal digits");
				p->pos += 6;
			} else if (strchr("\"\\/bfnrt", c) && c) {
				p->pos += 2;
			} else {
				return fail(p, "an unknown escape in a string");
			}
			continue;
		}
		n = utf8_decode(p->s + p->pos, p->len - p->pos, &cp);
		if (!n)
			return fail(p, "bytes that are not UTF-8");
		p->pos += n;
	}
}

static size_t digits(struct parser *p)
{
	size_t start = p->pos;

	while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
		p->pos++;
	return p->pos - start;
}

static int parse_number(struct parser *p)
{
	if (p->s[p->pos] == '-')
		p->pos++;
	if (p->pos < p->len && p->s[p->pos] == '0')
		p->pos++;
	else if (!digits(p))
		return fail(p, "a number without digits");
	if (p->pos < p->len && p->s[p->pos] == '.') {
		p->pos++;
		if (!digits(p))
			return fail(p, "a number without digits after its '.'");
	}
	if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
		p->pos++;
		if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
			p->pos++;
		if (!digits(p))
			return fail(p, "a number without digits in its exponent");
	}
	return 0;
}

static int parse_literal(struct parser *p, const char *word)
{
	size_t n = strlen(word);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
		return fail(p, "an unexpected character (not a value)");
	p->pos += n;
	return 0;
}

static int parse_value(struct parser *p, int depth);

/* An object or an array, p->pos at its '{' or '['. */
static int parse_container(struct parser *p, int depth)
{
	int object = p->s[p->pos] == '{';
	char close = object ? '}' : ']';

	if (depth >= DLRT_OCIJSON_MAX_DEPTH)
		return fail(p, "objects and arrays nested more than 64 deep");
	p->pos++;
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		return 0;
	}
	for (;;) {
		if (object) {
			if (p->pos >= p->len || p->s[p->pos] != '"')
				return fail(p, "expected a member name in double quotes");
			if (parse_string(p) < 0)
				return -1;
			skip_ws(p);
			if (p->pos >= p->len || p->s[p->pos] != ':')
				return fail(p, "expected ':' after a member name");
			p->pos++;
		}
		if (parse_value(p, depth + 1) < 0)
			return -1;
		skip_ws(p);
		if (p->pos >= p->len)
			return fail(p, object ? "an object is not closed" : "an array is not closed");
		if (p->s[p->pos] == close) {
			p->pos++;
			return 0;
		}
		if (p->s[p->pos] != ',')
			return fail(p, object ? "expected ',' or '}' in an object"
					      : "expected ',' or ']' in an array");
		p->pos++;
		skip_ws(p);
	}
}

static int parse_value(struct parser *p, int depth)
{
	unsigned char c;

	skip_ws(p);
	if (p->pos >= p->len)
		return fail(p, "the document ends where a value should be");
	c = p->s[p->pos];
	switch (c) {
	case '{':
	case '[':
		return parse_container(p, depth);
	case '"':
		return parse_string(p);
	case 't':
		return parse_literal(p, "true");
	case 'f':
		return parse_literal(p, "false");
	case 'n':
		return parse_literal(p, "null");
	default:
		if (c == '-' || (c >= '0' && c <= '9'))
			return parse_number(p);
		return fail(p, "an unexpected character (not a value)");
	}
}

int dlrt_ocijson_check(const char *doc, size_t len, struct dlrt_ocijson_span *top,
		       struct dlrt_err *err)
{
	struct parser p = { .s = (const unsigned char *)doc, .len = len };
	size_t start, line = 1, col = 1;

	skip_ws(&p);
	start = p.pos;
	if (parse_value(&p, 0) == 0) {
		top->off = start;
		top->len = p.pos - start;
		skip_ws(&p);
		if (p.pos == len)
			return 0;
		fail(&p, "more after the end of the value");
	}
	for (size_t i = 0; i < p.pos && i < len; i++) {
		if (doc[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	return dlrt_err_set(err, "not JSON at line %zu column %zu (byte %zu): %s", line, col,
			    p.pos, p.why);
}

enum dlrt_ocijson_type dlrt_ocijson_type(const char *doc, struct dlrt_ocijson_span v)
{
	switch (doc[v.off]) {
	case '{':
		return DLRT_OCIJSON_OBJECT;
	case '[':
		return DLRT_OCIJSON_ARRAY;
	case '"':
		return DLRT_OCIJSON_STRING;
	case 't':
		return DLRT_OCIJSON_TRUE;
	case 'f':
		return DLRT_OCIJSON_FALSE;
	case 'n':
		return DLRT_OCIJSON_NULL;
	default:
		return DLRT_OCIJSON_NUMBER;
	}
}

static int is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The end of the checked value at doc[pos], which ends before `end`. */
static size_t skip_value(const char *doc, size_t pos, size_t end)
{
	size_t depth = 0;

	if (doc[pos] != '{' && doc[pos] != '[' && doc[pos] != '"') {
		while (pos < end && !is_ws(doc[pos]) && doc[pos] != ',' && doc[pos] != ']' &&
		       doc[pos] != '}')
			pos++;
		return pos;
	}
	for (;;) {
		char c = doc[pos];

		if (c == '"') {
			for (pos++; doc[pos] != '"'; pos++)
				if (doc[pos] == '\\')
					pos++;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			depth--;
		}
		pos++;
		if (depth == 0)
			return pos;
	}
}

int dlrt_ocijson_next(const char *doc, struct dlrt_ocijson_span container, size_t *pos,
		      struct dlrt_ocijson_span *key, struct dlrt_ocijson_span *val)
{
	size_t end = container.off + container.len;
	size_t p = *pos ? *pos : container.off + 1;

	while (is_ws(doc[p]))
		p++;
	if (doc[p] == ',')
		p++;
	while (is_ws(doc[p]))
		p++;
	if (doc[p] == '}' || doc[p] == ']')
		return 0;
	if (doc[container.off] == '{') {
		size_t kend = skip_value(doc, p, end);

		if (key) {
			key->off = p;
			key->len = kend - p;
		}
		p = kend;
		while (is_ws(doc[p]))
			p++;
		p++; /* ':' */
		while (is_ws(doc[p]))
			p++;
	}
	val->off = p;
	p = skip_value(doc, p, end);
	val->len = p - val->off;
	*pos = p;
	return 1;
}

static uint32_t hex4(const char *s)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++) {
		char c = s[i];

		v = (v << 4) | (uint32_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
	}
	return v;
}

static size_t utf8_encode(uint32_t cp, char out[4])
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) { /* a lone surrogate too, as WTF-8 */
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

int dlrt_ocijson_str_eq(const char *doc, struct dlrt_ocijson_span s, const char *want)
{
	size_t p = s.off + 1, end = s.off + s.len - 1, w = 0, wlen = strlen(want);

	if (doc[s.off] != '"')
		return 0;
	while (p < end) {
		char unit[4];
		size_t n = 1;

		if (doc[p] != '\\') {
			unit[0] = doc[p++];
		} else if (doc[p + 1] != 'u') {
			static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";

			unit[0] = to[strchr(from, doc[p + 1]) - from];
			p += 2;
		} else {
			uint32_t cp = hex4(doc + p + 2);

			p += 6;
			if (cp >= 0xd800 && cp <= 0xdbff && p + 6 <= end && doc[p] == '\\' &&
			    doc[p + 1] == 'u') {
				uint32_t lo = hex4(doc + p + 2);

				if (lo >= 0xdc00 && lo <= 0xdfff) {
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					p += 6;
				}
			}
			n = utf8_encode(cp, unit);
		}
		if (w + n > wlen || memcmp(want + w, unit, n) != 0)
			return 0;
		w += n;
	}
	return w == wlen;
}

int dlrt_ocijson_member(const char *doc, struct dlrt_ocijson_span obj, const char *name,
			struct dlrt_ocijson_span *val)
{
	struct dlrt_ocijson_span k, v;
	size_t pos = 0;
	int found = 0;

	while (dlrt_ocijson_next(doc, obj, &pos, &k, &v)) {
		if (!dlrt_ocijson_str_eq(doc, k, name))
			continue;
		if (found)
			return -1;
		found = 1;
		*val = v;
	}
	return found;
}

static int number_is_zero(const char *doc, struct dlrt_ocijson_span v)
{
	size_t i = v.off, end = v.off + v.len;
	int exponent = 0;
	char *copy;
	double d;

	for (; i < end && doc[i] != 'e' && doc[i] != 'E'; i++)
		if (doc[i] >= '1' && doc[i] <= '9')
			exponent = 1;
	if (!exponent)
		return 1; /* every digit of the mantissa is 0 */
	if (i == end)
		return 0;
	/* 1e-400 is a float 0.0 to Python too */
	copy = strndup(doc + v.off, v.len);
	if (!copy)
		return 0;
	d = strtod(copy, NULL);
	free(copy);
	return d == 0.0;
}

int dlrt_ocijson_truthy(const char *doc, struct dlrt_ocijson_span v)
{
	struct dlrt_ocijson_span e;
	size_t pos = 0;

	switch (dlrt_ocijson_type(doc, v)) {
	case DLRT_OCIJSON_OBJECT:
	case DLRT_OCIJSON_ARRAY:
		return dlrt_ocijson_next(doc, v, &pos, NULL, &e);
	case DLRT_OCIJSON_STRING:
		return v.len > 2;
	case DLRT_OCIJSON_TRUE:
		return 1;
	case DLRT_OCIJSON_NUMBER:
		return !number_is_zero(doc, v);
	default:
		return 0;
	}
}

size_t dlrt_ocijson_insert_at(const char *doc, struct dlrt_ocijson_span obj, int *empty)
{
	struct dlrt_ocijson_span k, v;
	size_t pos = 0, at = obj.off + 1;

	*empty = 1;
	while (dlrt_ocijson_next(doc, obj, &pos, &k, &v)) {
		at = v.off + v.len;
		*empty = 0;
	}
	return at;
}

int dlrt_ocijson_put_string(struct dlrt_buf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;

	if (dlrt_buf_append(b, "\"", 1) < 0)
		return -1;
	for (size_t i = 0; i < n;) {
		unsigned char c = u[i];
		uint32_t cp;
		size_t len;
		int rc;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			size_t run = i;

			while (run < n && u[run] >= 0x20 && u[run] < 0x7f && u[run] != '"' &&
			       u[run] != '\\')
				run++;
			if (dlrt_buf_append(b, s + i, run - i) < 0)
				return -1;
			i = run;
			continue;
		}
		switch (c) {
		case '"':
			rc = dlrt_buf_append(b, "\\\"", 2);
			break;
		case '\\':
			rc = dlrt_buf_append(b, "\\\\", 2);
			break;
		case '\n':
			rc = dlrt_buf_append(b, "\\n", 2);
			break;
		case '\r':
			rc = dlrt_buf_append(b, "\\r", 2);
			break;
		case '\t':
			rc = dlrt_buf_append(b, "\\t", 2);
			break;
		case '\b':
			rc = dlrt_buf_append(b, "\\b", 2);
			break;
		case '\f':
			rc = dlrt_buf_append(b, "\\f", 2);
			break;
		default:
			len = utf8_decode(u + i, n - i, &cp);
			if (!len) {
				cp = 0xdc00 | c; /* surrogateescape */
				len = 1;
			}
			i += len - 1;
			if (cp >= 0x10000) {
				cp -= 0x10000;
				rc = dlrt_buf_printf(b, "\\u%04x\\u%04x", 0xd800 + (cp >> 10),
						     0xdc00 + (cp & 0x3ff));
			} else {
				rc = dlrt_buf_printf(b, "\\u%04x", cp);
			}
			break;
		}
		if (rc < 0)
			return -1;
		i++;
	}
	return dlrt_buf_append(b, "\"", 1);
}
