/* argv.h - a program's argument list, built with a bound: what the plugin
 * hands a helper program it starts (spank/lifecycle.c builds dlrt-lifecycle's,
 * spank/service.c adds the descriptors it made and starts it). Every string is
 * copied into the list's own room, so the caller needs no buffer per number;
 * an argument that does not fit marks the list full instead of being dropped
 * or written past the end, and a full list is never run.
 */
#ifndef DLRT_ARGV_H
#define DLRT_ARGV_H

#include <stdbool.h>
#include <stddef.h>

#define DLRT_ARGV_MAX 48     /* arguments, the program's path included */
#define DLRT_ARGV_ROOM 8192  /* bytes of all of them together */

struct dlrt_argv {
	char *v[DLRT_ARGV_MAX + 1]; /* v[0]: the program (dlrt_argv_program); NULL-terminated */
	size_t n;
	char room[DLRT_ARGV_ROOM];
	size_t used;
	bool full;                  /* something did not fit: run nothing */
};

/* An empty list, v[0] kept for the program's path. */
void dlrt_argv_init(struct dlrt_argv *a);

/* Appends one argument, printf-style. */
void dlrt_argv_add(struct dlrt_argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The program's path into v[0]. */
void dlrt_argv_program(struct dlrt_argv *a, const char *path);

#endif
