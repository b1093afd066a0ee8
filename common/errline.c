/* errline.c - one diagnostic line to stderr in one write (errline.h says why). */
#include "errline.h"

#include <stdio.h>
#include <unistd.h>

#include "fdio.h"

/* Room kept for "...\n" at the end, so a cut line still says it was cut. */
#define TAIL_ROOM 4

void dlrt_errline_init(struct dlrt_errline *l)
{
	l->len = 0;
	l->text[0] = '\0';
}

void dlrt_errline_vprintf(struct dlrt_errline *l, const char *fmt, va_list ap)
{
	size_t room = sizeof(l->text) - TAIL_ROOM - l->len;
	int n;

	if (sizeof(l->text) - TAIL_ROOM <= l->len)
		return;
	n = vsnprintf(l->text + l->len, room + 1, fmt, ap);
	if (n < 0)
		return;
	l->len += (size_t)n < room ? (size_t)n : room + 1; /* room + 1: cut, see end */
}

void dlrt_errline_printf(struct dlrt_errline *l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dlrt_errline_vprintf(l, fmt, ap);
	va_end(ap);
}

void dlrt_errline_escaped(struct dlrt_errline *l, const uint8_t *s, size_t n, size_t max)
{
	for (size_t i = 0; i < n && i < max; i++) {
		if (s[i] >= ' ' && s[i] <= '~' && s[i] != '\\')
			dlrt_errline_printf(l, "%c", s[i]);
		else
			dlrt_errline_printf(l, "\\x%02x", s[i]);
	}
	if (n > max)
		dlrt_errline_printf(l, "...");
}

void dlrt_errline_end(struct dlrt_errline *l)
{
	size_t cap = sizeof(l->text) - TAIL_ROOM;

	if (l->len > cap) {
		l->len = cap;
		l->len += (size_t)snprintf(l->text + cap, TAIL_ROOM, "...");
	}
	l->text[l->len++] = '\n';
	/* Straight to the descriptor: stderr holds nothing buffered (it is
	 * unbuffered), and one write(2) of a line this short is not split. A
	 * diagnostic that cannot be written has nowhere else to go. */
	fflush(stderr);
	(void)dlrt_write_all(STDERR_FILENO, l->text, l->len);
	dlrt_errline_init(l);
}

void dlrt_errline_vsay(const char *prefix, const char *fmt, va_list ap)
{
	struct dlrt_errline l;

	dlrt_errline_init(&l);
	dlrt_errline_printf(&l, "%s", prefix);
	dlrt_errline_vprintf(&l, fmt, ap);
	dlrt_errline_end(&l);
}
