/* Fuzz target: the answer on the step's pids that dlrt-hvd-driver reads from
 * its child (launchers/horovod/hvd_watch.h, written by hvd_steppids.c from
 * what every slurmd answered: node names and pids). Input: the answer's
 * bytes. Checks: no crash, no leak; a refused answer leaves alive[] as it
 * was and says why; an accepted one only marks hosts of the plan. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "launchers/horovod/hvd_plan.h"
#include "launchers/horovod/hvd_watch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dlrt_hvd_plan plan;
	static int have;
	unsigned char alive[5] = { 0, 0, 0, 0, 0xa5 };
	struct dlrt_err err = { .msg = "" };
	int rc;

	if (!have) {
		if (dlrt_hvd_plan_parse(&plan, "n1:2,n2:1,n3:3,node-10:1", &err) < 0)
			abort();
		have = 1;
	}
	rc = dlrt_hvd_pids_parse((const char *)data, size, &plan, alive, &err);
	if (alive[4] != 0xa5)
		abort();
	for (int h = 0; h < 4; h++)
		if (alive[h] > 1 || (rc < 0 && alive[h]))
			abort();
	if (rc < 0 && !err.msg[0])
		abort();
	return 0;
}
