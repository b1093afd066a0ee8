/* jax_runtime.c - JAX multi-process (jax.distributed.initialize() with no
 * arguments).
 *
 * Contract (docs/contracts.md, JAX): initialize() takes the coordinator from
 * JAX_COORDINATOR_ADDRESS before any cluster detection, and detection only
 * fills what is still unset. Under srun the first cluster that detects
 * itself is JAX's SlurmCluster (SLURM_JOB_ID present), whose process count
 * and id are SLURM_NTASKS and SLURM_PROCID: Slurm sets both per step, so
 * they are right. Its coordinator is not: the first node of the step and a
 * port derived from the job id, never checked, the same for every step of
 * the job. So dlrt gives JAX_COORDINATOR_ADDRESS on the root's numeric
 * address and a port checked free there (the exchange), and releases that
 * read JAX_LOCAL_DEVICE_IDS get the task's devices from the GPU plan.
 */
#include <stdio.h>

#include "runtime/runtime.h"

static void jax_assign(struct dlrt_plan *plan, const struct dlrt_config *cfg)
{
	(void)cfg;
	for (uint32_t t = 0; t < plan->layout->ntasks; t++)
		plan->task[t].role = DLRT_ROLE_WORKER;
}

static void jax_task_env(const struct dlrt_plan *plan, uint32_t rank,
			 const struct dlrt_step_info *step, const struct dlrt_addrs *addrs,
			 struct dlrt_env *env)
{
	(void)step;
	/* JAX itself reads neither: process count and id come from its
	 * SlurmCluster (SLURM_NTASKS, SLURM_PROCID, equal to these). They are
	 * for programs that pass them explicitly, as many launch scripts do. */
	dlrt_env_set(env, "JAX_NUM_PROCESSES", "%u", plan->layout->ntasks);
	dlrt_env_set(env, "JAX_PROCESS_ID", "%u", rank);
	if (addrs && addrs->valid)
		/* Numeric: process 0 binds its port, the others connect to it.
		 * A user's own coordinator wins, as without dlrt. */
		dlrt_env_set_default(env, "JAX_COORDINATOR_ADDRESS", "%s:%u", addrs->root_ip,
				     addrs->root_port);
}

/* The GPU plan made the task's CUDA_VISIBLE_DEVICES its own GPUs: JAX numbers
 * them 0..ngpus-1. Without JAX_LOCAL_DEVICE_IDS, SlurmCluster would pick
 * [SLURM_LOCALID], a device that does not exist for local ranks >= ngpus. */
static void jax_gpu_env(const struct dlrt_plan *plan, uint32_t rank, int ngpus,
			struct dlrt_env *env)
{
	char ids[256]; /* 64 GPUs at most per node (gpuplan.h): "0,...,63" fits */
	size_t off = 0;

	(void)plan;
	(void)rank;
	if (ngpus <= 0)
		return;
	for (int i = 0; i < ngpus && off + 12 < sizeof(ids); i++)
		off += (size_t)snprintf(ids + off, sizeof(ids) - off, "%s%d", i ? "," : "", i);
	dlrt_env_set_default(env, "JAX_LOCAL_DEVICE_IDS", "%s", ids);
}

const struct dlrt_runtime dlrt_runtime_jax = {
	.name = "jax",
	.summary = "JAX jax.distributed.initialize(): coordinator address, process count/id, "
		   "local devices",
	.program_uses_pmix = false,
	.needs_root_addr = true, /* JAX_COORDINATOR_ADDRESS from the address exchange */
	.assign = jax_assign,
	.task_env = jax_task_env,
	.gpu_env = jax_gpu_env,
};
