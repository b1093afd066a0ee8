/* argv.c - an argument list built with a bound (argv.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "argv.h"

void dlrt_argv_init(struct dlrt_argv *a)
{
	memset(a->v, 0, sizeof(a->v));
	a->n = 1;
	a->used = 0;
	a->full = false;
}

/* The formatted string copied into the room; NULL (and full) if it does not fit. */
static char *put(struct dlrt_argv *a, const char *fmt, va_list ap)
{
	size_t left = sizeof(a->room) - a->used;
	char *s = a->room + a->used;
	int len = vsnprintf(s, left, fmt, ap);

	if (len < 0 || (size_t)len >= left) {
		a->full = true;
		return NULL;
	}
	a->used += (size_t)len + 1;
	return s;
}

void dlrt_argv_add(struct dlrt_argv *a, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (a->full || a->n >= DLRT_ARGV_MAX) {
		a->full = true;
		return;
	}
	va_start(ap, fmt);
	s = put(a, fmt, ap);
	va_end(ap);
	if (s) {
		a->v[a->n++] = s;
		a->v[a->n] = NULL;
	}
}

static char *put_path(struct dlrt_argv *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static char *put_path(struct dlrt_argv *a, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = put(a, fmt, ap);
	va_end(ap);
	return s;
}

void dlrt_argv_program(struct dlrt_argv *a, const char *path)
{
	a->v[0] = put_path(a, "%s", path);
}
