#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dlrt_buf_init(struct dlrt_buf *b, size_t limit)
{
	memset(b, 0, sizeof(*b));
	b->limit = limit;
}

void dlrt_buf_free(struct dlrt_buf *b)
{
	free(b->data);
	dlrt_buf_init(b, b->limit);
}

int dlrt_buf_reserve(struct dlrt_buf *b, size_t n)
{
	size_t need, cap;
	uint8_t *p;

	if (n > b->limit || b->len > b->limit - n)
		return -1;
	/* Slide unconsumed bytes to the front before growing. */
	if (b->off && b->off + b->len + n > b->cap) {
		memmove(b->data, b->data + b->off, b->len);
		b->off = 0;
	}
	need = b->off + b->len + n;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p)
		return -1;
	b->data = p;
	b->cap = cap;
	return 0;
}

int dlrt_buf_append(struct dlrt_buf *b, const void *p, size_t n)
{
	if (dlrt_buf_reserve(b, n) < 0)
		return -1;
	if (n)
		memcpy(b->data + b->off + b->len, p, n);
	b->len += n;
	return 0;
}

int dlrt_buf_printf(struct dlrt_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || dlrt_buf_reserve(b, (size_t)n + 1) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf((char *)b->data + b->off + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void dlrt_buf_consume(struct dlrt_buf *b, size_t n)
{
	if (n >= b->len) {
		b->off = 0;
		b->len = 0;
		return;
	}
	b->off += n;
	b->len -= n;
}
