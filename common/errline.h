/* errline.h - one diagnostic line to stderr in one write.
 *
 * stderr is often shared between processes: srun writes its tasks' output to
 * it while the services it started (the Caffe2 and torch stores) log there
 * too, and a batch job's error file takes every task's lines. stderr is
 * unbuffered, so a line printed in pieces (a prefix, a key character by
 * character, then the newline) is several writes, and another process's line
 * can land between them: a task's --dl-verbose line was seen inside the torch
 * store's "GET key" line, which hid it from the reader. A line built here
 * reaches stderr in one write.
 */
#ifndef DLRT_ERRLINE_H
#define DLRT_ERRLINE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct dlrt_errline {
	char text[1024];
	size_t len; /* what text holds; a longer line is cut and ends in "..." */
};

/* Starts an empty line. */
void dlrt_errline_init(struct dlrt_errline *l);
void dlrt_errline_printf(struct dlrt_errline *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void dlrt_errline_vprintf(struct dlrt_errline *l, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* The first `max` bytes of s, printable ASCII as is and every other byte (and
 * the backslash) as \xNN, then "..." when s is longer: a key or a command from
 * the network shown without letting it write control characters. */
void dlrt_errline_escaped(struct dlrt_errline *l, const uint8_t *s, size_t n, size_t max);
/* Adds the newline and writes the line to stderr in one write. */
void dlrt_errline_end(struct dlrt_errline *l);

/* prefix and fmt's text as one line, the common case of the above. */
void dlrt_errline_vsay(const char *prefix, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

#endif
