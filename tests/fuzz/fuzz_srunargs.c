/* Fuzz target: srun's --mpi read from its own command line
 * (common/srunargs.c). Input: the NUL-separated words, as /proc/self/cmdline
 * holds them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/srunargs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[64];

	/* The words as the plugin reads them, in a buffer of their own size:
	 * a read past it is the bug this looks for. */
	char *cmd = malloc(size ? size : 1);

	if (!cmd)
		return 0;
	memcpy(cmd, data, size);
	if (dlrt_srunargs_mpi(cmd, size, out, sizeof(out)) && strlen(out) >= sizeof(out))
		abort();
	dlrt_srunargs_mpi(cmd, size, out, 1);
	free(cmd);
	return 0;
}
