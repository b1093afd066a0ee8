/* Fuzz target: the --dl-retries readers (logs/retrylog.c): a retry log, sinfo
 * and scontrol output. Input: any text; every reader sees all of it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "logs/retrylog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), list[64] = "", small[8] = "", out[16];

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	dlrt_retry_log_nodes(buf, size ? (uint32_t)data[0] % 3 : 0, size > 1 ? data[1] % 12 : 0, list,
			     sizeof(list));
	dlrt_retry_down_nodes(buf, list, sizeof(list));
	(void)dlrt_retry_log_warned(buf, size ? (uint32_t)data[0] % 3 : 0);
	dlrt_retry_down_nodes(buf, small, sizeof(small));
	dlrt_retry_field(buf, "JobState=", out, sizeof(out));
	dlrt_retry_field(buf, "ExcNodeList=", out, sizeof(out));
	if (strlen(list) >= sizeof(list) || strlen(small) >= sizeof(small) || strlen(out) >= sizeof(out))
		abort();
	free(buf);
	return 0;
}
