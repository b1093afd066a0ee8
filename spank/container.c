/* container.c - a task started by Slurm's own OCI containers (srun
 * --container=BUNDLE, oci.conf) gets its whole environment.
 *
 * Slurm 22.05 writes the container's config.json once per step, before any
 * task exists (slurmstepd/container.c: setup_container), with the step's
 * environment: every per-task variable (SLURM_PROCID, PMIX_RANK, and all
 * that SPANK plugins set in task_init: dlrt's RANK, MASTER_ADDR,
 * CUDA_VISIBLE_DEVICES, ...) is missing inside. Its RunTimeRun command then
 * runs with slurmstepd's own environment (execv), not the task's. So at the
 * very end of task_init, in the task's process, the task's environment
 * becomes the process environment: RunTimeRun inherits it, and a site's
 * RunTimeRun wrapper (dlrt-oci-run, tools/dlrt_oci_run_main.c,
 * docs/containers.md) writes it into the task's own copy of config.json.
 * Slurm 23.02 and later write each task's environment themselves; this
 * changes nothing there.
 *
 * Only in a step with a container (SLURM_CONTAINER, which srun --container
 * sets in the step's environment): a bare task is exec'ed with the task's
 * environment by slurmstepd anyway.
 */
#include <slurm/spank.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.h"

bool dlrt_stepd_in_container(spank_t sp)
{
	/* Only whether it is set and not empty matters. */
	return dlrt_task_env_nonempty(sp, "SLURM_CONTAINER");
}

int dlrt_stepd_container_env(spank_t sp, struct dlrt_err *err)
{
	char **env = NULL;

	if (!dlrt_stepd_in_container(sp))
		return 0;
	env = dlrt_task_environ(sp);
	if (!env)
		return dlrt_err_set(err, "cannot read the task's environment for its container "
				    "(srun --container): run the step without --container, or "
				    "report this Slurm version");
	if (clearenv() != 0)
		return dlrt_err_set(err, "cannot replace the environment of the container's task");
	for (size_t i = 0; env[i]; i++) {
		const char *eq = strchr(env[i], '=');
		char *name;
		int set;

		if (!eq || eq == env[i])
			continue;
		name = strndup(env[i], (size_t)(eq - env[i]));
		set = name ? setenv(name, eq + 1, 1) : -1;
		free(name);
		if (set != 0)
			return dlrt_err_set(err, "cannot pass the task's environment to its "
					    "container: out of memory");
	}
	return 0;
}
