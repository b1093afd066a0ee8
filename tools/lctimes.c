/* lctimes.c - the job's times on the wire (lctimes.h). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lctimes.h"

#define TIME_MAX (1ull << 40)

void dlrt_lctimes_format(const struct dlrt_lc_job *j, char *out)
{
	long long end = j->end_time > 0 ? (long long)j->end_time : 0;
	long long pre = j->preempt_time > 0 ? (long long)j->preempt_time : 0;

	snprintf(out, DLRT_LCTIMES_MAX, "end=%lld preempt=%lld", end, pre);
}

/* A decimal at *s after `name`, up to `stop` (a char, or '\0'); advances *s. */
static int field(const char **s, const char *name, char stop, uint64_t *v)
{
	size_t n = strlen(name), digits = 0;
	const char *p = *s;

	if (strncmp(p, name, n))
		return -1;
	p += n;
	*v = 0;
	while (*p >= '0' && *p <= '9') {
		if (digits++ && *v == 0)
			return -1; /* a leading zero */
		*v = *v * 10 + (uint64_t)(*p++ - '0');
		if (*v > TIME_MAX)
			return -1;
	}
	if (!digits || *p != stop)
		return -1;
	*s = stop ? p + 1 : p;
	return 0;
}

int dlrt_lctimes_parse(const char *s, struct dlrt_lc_job *j)
{
	uint64_t end, pre;

	if (field(&s, "end=", ' ', &end) < 0 || field(&s, "preempt=", '\0', &pre) < 0)
		return -1;
	j->end_time = (time_t)end;
	j->preempt_time = (time_t)pre;
	return 0;
}
