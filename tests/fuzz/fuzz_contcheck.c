/* fuzz_contcheck.c - libFuzzer target for the container command-line check
 * (jobpolicy/contcheck.c) and the trainer-launcher check (jobpolicy/launchcheck.c),
 * which read the user's srun command: the input is split at NUL bytes into an argv. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jobpolicy/contcheck.h"
#include "jobpolicy/launchcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size + 1);
	const char *argv[MAX_ARGS];
	size_t argc = 0, start = 0;
	struct dlrt_err err;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	for (size_t i = 0; i <= size && argc < MAX_ARGS; i++) {
		if (copy[i] == '\0') {
			argv[argc++] = copy + start;
			start = i + 1;
		}
	}
	(void)dlrt_contcheck_argv(argc, argv, &err);
	(void)dlrt_launchcheck_argv(argc, argv, &err);
	free(copy);
	return 0;
}
