/* fuzz_elfneeds.c - libFuzzer target for the DT_NEEDED reader
 * (exchange/elfneeds.c), which the plugin runs on the user's program file. */
#include <stdint.h>
#include <string.h>

#include "exchange/elfneeds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void need(const char *name, void *arg)
{
	(void)dlrt_lib_is_mpi(name);
	*(size_t *)arg += strlen(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t total = 0;

	(void)dlrt_elf_needs(data, size, need, &total);
	return 0;
}
