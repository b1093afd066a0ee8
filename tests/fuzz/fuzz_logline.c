/* Fuzz target: the exported-log line and file-name parsers dlrt-logs reads
 * (logs/logline.c). Input: one line, or a file name after a NUL. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "logs/logline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlrt_logline l;
	char *buf = malloc(size + 1), role[32];
	uint32_t idx;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (dlrt_logline_parse(buf, size, &l) == 0) {
		/* The text lies inside the input. */
		if (l.text < buf || l.text + l.text_len > buf + size || strlen(l.stamp) != DLRT_LOGSTAMP_LEN)
			abort();
	}
	if (dlrt_logname_parse(buf, role, sizeof(role), &idx) == 0 && strlen(role) >= sizeof(role))
		abort();
	free(buf);
	return 0;
}
