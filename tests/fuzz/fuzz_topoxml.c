/* Fuzz the reason finder for topology files hwloc refused
 * (dlrt_gpuplan_xml_why): a job's --dl-topology file is user input that
 * slurmstepd looks at when hwloc refuses it. The input is the file's text,
 * not NUL-terminated. A reason is one non-empty line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpubind/gpuplan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[400];
	char *copy;

	if (size > 1 << 20)
		return 0;
	/* An exact-size copy, so that ASan sees any read past the end. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	why[0] = '\0';
	if (dlrt_gpuplan_xml_why(copy, size, why, sizeof(why)) &&
	    (why[0] == '\0' || strchr(why, '\n')))
		abort();
	free(copy);
	return 0;
}
