/* taskfacts.c - what Slurm says about this task and its job that several
 * SPANK contexts need: a variable of the step's or task's environment, and the
 * job's attempt (the restart count). stepd.c, lifecycle.c, requeue.c and gpu.c
 * read them here, so none of them calls into another for it.
 */
#include <slurm/spank.h>
#include <stdint.h>

#include "common/parse.h"
#include "plugin.h"

int dlrt_task_getenv(spank_t sp, const char *name, char *buf, size_t len)
{
	if (spank_getenv(sp, name, buf, len > 0x7fffffff ? 0x7fffffff : (int)len) !=
	    ESPANK_SUCCESS) {
		buf[0] = '\0';
		return -1;
	}
	return 0;
}

/* The job's attempt. S_SLURM_RESTART_COUNT reads 0 in srun steps of a requeued
 * job (observed on 22.05); the step inherits SLURM_RESTART_COUNT from the batch
 * script's environment, which Slurm sets from the 2nd attempt on. */
uint32_t dlrt_restart_count(spank_t sp)
{
	uint32_t item = 0, env = 0;
	char buf[32];

	spank_get_item(sp, S_SLURM_RESTART_COUNT, &item);
	if (dlrt_task_getenv(sp, "SLURM_RESTART_COUNT", buf, sizeof(buf)) == 0)
		dlrt_parse_u32(buf, 0, 1u << 30, &env);
	return item > env ? item : env;
}
