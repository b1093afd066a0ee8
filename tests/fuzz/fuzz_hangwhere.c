/* Fuzz target: what dlrt-lifecycle reads when a step hangs (jobpolicy/hangwhere.c):
 * gdb's backtrace of a task, and the position lines the nodes write into the
 * job's checkpoint folder, then the line comparing them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jobpolicy/hangwhere.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlrt_hw_task t[8];
	char where[DLRT_HW_WHERE], line[DLRT_HW_LINE], cmp[300];
	const char *p = (const char *)data, *end = p + size;
	size_t n = 0, len;

	if (dlrt_hw_from_gdb(p, size, 8818, where, sizeof(where)) == 0 &&
	    strlen(where) >= sizeof(where))
		abort();
	while (p < end && n < 8) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p + 1) : (size_t)(end - p);

		if (dlrt_hw_parse_line(p, l, &t[n]) == 0) {
			/* What was read is written back the same. */
			len = dlrt_hw_format_line(&t[n], line, sizeof(line));
			if (len >= sizeof(line) || memcmp(line, p, len - 1) ||
			    (t[n].where[0] == '\0') != !memcmp(line + len - 3, "=?", 2))
				abort();
			n++;
		}
		p += l;
	}
	len = dlrt_hw_compare(t, n, cmp, sizeof(cmp));
	if (len && (len >= sizeof(cmp) || cmp[len - 1] != '\n' || strlen(cmp) != len))
		abort();
	return 0;
}
