#include "logline.h"

#include <stdio.h>
#include <string.h>

void dlrt_logline_stamp(char *buf, const struct timespec *ts)
{
	struct tm tm;
	time_t sec = ts->tv_sec;
	unsigned long us = (unsigned long)(ts->tv_nsec / 1000) % 1000000ul;

	gmtime_r(&sec, &tm);
	if (tm.tm_year + 1900 > 9999 || strftime(buf, 20, "%Y-%m-%dT%H:%M:%S", &tm) != 19)
		memcpy(buf, "9999-12-31T23:59:59", 20);
	/* Fixed width by hand: the stamp is compared as a string. */
	buf[19] = '.';
	for (int i = 25; i >= 20; i--, us /= 10)
		buf[i] = (char)('0' + us % 10);
	buf[26] = 'Z';
	buf[27] = '\0';
}

/* "dddd-dd-ddTdd:dd:dd.ddddddZ": digits where the pattern has 'd'. */
static int stamp_ok(const char *s)
{
	static const char pat[] = "dddd-dd-ddTdd:dd:dd.ddddddZ";

	for (size_t i = 0; i < DLRT_LOGSTAMP_LEN; i++) {
		if (pat[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != pat[i])
			return 0;
	}
	return 1;
}

size_t dlrt_logline_vformat(char *line, size_t len, const char *fmt, va_list ap)
{
	char stamp[DLRT_LOGSTAMP_LEN + 1];
	struct timespec ts;
	int n, m;

	clock_gettime(CLOCK_REALTIME, &ts);
	dlrt_logline_stamp(stamp, &ts);
	n = snprintf(line, len, "%s ", stamp);
	m = vsnprintf(line + n, len - (size_t)n - 1, fmt, ap);
	n += m < 0 ? 0 : m;
	if (n >= (int)len - 1)
		n = (int)len - 2;
	line[n++] = '\n';
	return (size_t)n;
}

int dlrt_logline_parse(const char *line, size_t len, struct dlrt_logline *out)
{
	static const char *const streams[] = { "out", "err", "dlrt" };

	if (len < DLRT_LOGSTAMP_LEN + 2 || !stamp_ok(line) || line[DLRT_LOGSTAMP_LEN] != ' ')
		return -1;
	memcpy(out->stamp, line, DLRT_LOGSTAMP_LEN);
	out->stamp[DLRT_LOGSTAMP_LEN] = '\0';
	line += DLRT_LOGSTAMP_LEN + 1;
	len -= DLRT_LOGSTAMP_LEN + 1;
	for (size_t i = 0; i < sizeof(streams) / sizeof(*streams); i++) {
		size_t n = strlen(streams[i]);

		/* The stream is followed by one blank and the text, or ends the line. */
		if (len >= n && !memcmp(line, streams[i], n) && (len == n || line[n] == ' ')) {
			memcpy(out->stream, streams[i], n + 1);
			out->text = len == n ? line + n : line + n + 1;
			out->text_len = len == n ? 0 : len - n - 1;
			return 0;
		}
	}
	return -1;
}

int dlrt_logname_parse(const char *name, char *role, size_t role_len, uint32_t *index)
{
	const char *dash = strrchr(name, '-'), *dot;
	unsigned long v = 0;
	size_t n;

	if (!dash || dash == name)
		return -1;
	dot = strchr(dash, '.');
	if (!dot || strcmp(dot, ".log") || dot == dash + 1 || dot - dash > 11)
		return -1;
	for (const char *p = dash + 1; p < dot; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	n = (size_t)(dash - name);
	if (v > UINT32_MAX || n >= role_len)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || name[i] == '_'))
			return -1;
	memcpy(role, name, n);
	role[n] = '\0';
	*index = (uint32_t)v;
	return 0;
}
