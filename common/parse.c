#include "parse.h"

#include <errno.h>
#include <stdlib.h>
#include <strings.h>

int dlrt_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	unsigned long v;

	/* strtoul would accept a sign (and wrap "-1" to ULONG_MAX) and leading
	 * blanks: refuse them before it sees the string. */
	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int dlrt_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "yes", "y", "true", "on" };
	static const char *const no[] = { "0", "no", "n", "false", "off" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -1;
}
