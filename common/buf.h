/* buf.h - a growable byte buffer with a hard size limit.
 *
 * Network servers read into a dlrt_buf and parse from its front; the limit is
 * what keeps a hostile peer (a huge Content-Length, an endless bulk string)
 * from making a daemon allocate without bound.
 */
#ifndef DLRT_BUF_H
#define DLRT_BUF_H

#include <stddef.h>
#include <stdint.h>

struct dlrt_buf {
	uint8_t *data;
	size_t len;   /* bytes held, starting at data + off */
	size_t off;   /* bytes already consumed at the front */
	size_t cap;
	size_t limit; /* dlrt_buf_reserve fails past this many held bytes */
};

void dlrt_buf_init(struct dlrt_buf *b, size_t limit);
void dlrt_buf_free(struct dlrt_buf *b);

/* Pointer to the first unconsumed byte. */
static inline uint8_t *dlrt_buf_head(const struct dlrt_buf *b)
{
	return b->data + b->off;
}

/* Makes room for `n` more bytes after the held ones; -1 if that would pass
 * the limit or memory is short. */
int dlrt_buf_reserve(struct dlrt_buf *b, size_t n);
int dlrt_buf_append(struct dlrt_buf *b, const void *p, size_t n);
int dlrt_buf_printf(struct dlrt_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Drops `n` bytes from the front. */
void dlrt_buf_consume(struct dlrt_buf *b, size_t n);

#endif
