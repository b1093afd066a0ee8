/* logline.h - the line format of exported task logs (--dl-log-dir).
 *
 * Every line a task writes becomes one line of DIR/<job>/<step>/<role>-<index>.log:
 *
 *   2026-11-22T13:45:01.123456Z out hello from rank 3
 *   2026-11-22T13:45:01.200001Z err Traceback (most recent call last):
 *   2026-11-22T13:45:00.998000Z dlrt task 3 on n2, attempt 0
 *
 * The stamp is UTC with microseconds and fixed width, so lines of several files
 * merge by comparing stamps as strings (dlrt-logs). The writer (logrelay.c) and
 * the reader (dlrt-logs) both use this file; the parser is fuzzed.
 */
#ifndef DLRT_LOGLINE_H
#define DLRT_LOGLINE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define DLRT_LOGSTAMP_LEN 27 /* "2026-11-22T13:45:01.123456Z" */

struct dlrt_logline {
	char stamp[DLRT_LOGSTAMP_LEN + 1];
	char stream[8];   /* "out", "err" or "dlrt" */
	const char *text; /* into the parsed buffer, not NUL-terminated */
	size_t text_len;
};

/* Writes the stamp of `ts` (NUL-terminated) into buf[DLRT_LOGSTAMP_LEN + 1]. */
void dlrt_logline_stamp(char *buf, const struct timespec *ts);

/* Writes "STAMP " (now, real time), the formatted text and a newline into
 * line[len] (cut to fit, newline kept; len at least DLRT_LOGSTAMP_LEN + 3):
 * one record line. Returns its length, without a NUL. */
size_t dlrt_logline_vformat(char *line, size_t len, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* Parses one line (without its newline). -1 if it is not in the format above. */
int dlrt_logline_parse(const char *line, size_t len, struct dlrt_logline *out);

/* "worker-3.log" -> role "worker", index 3. -1 for any other name. */
int dlrt_logname_parse(const char *name, char *role, size_t role_len, uint32_t *index);

#endif
