/* infer_runtime.c - dlrt-infer's pool: a job array whose element 0 is the
 * coordinator and whose other elements are workers (docs/inference.md).
 *
 * Array elements are separate jobs, each with its own one-task step, so the
 * role comes from the array index, not from the task's rank: element 0 (or a
 * job that is not an array) is the coordinator (role master), every other
 * element a worker. Element 1 becomes the hot standby in the next step; until
 * then it is an ordinary worker. The elements find each other through the
 * pool directory (inference/pool/pool.h), not through dlrt's address exchange.
 */
#include "runtime/runtime.h"

static void infer_assign(struct dlrt_plan *plan, const struct dlrt_config *cfg)
{
	(void)cfg;
	for (uint32_t t = 0; t < plan->layout->ntasks; t++)
		plan->task[t].role = DLRT_ROLE_WORKER;
}

static void infer_task_env(const struct dlrt_plan *plan, uint32_t rank,
			   const struct dlrt_step_info *step, const struct dlrt_addrs *addrs,
			   struct dlrt_env *env)
{
	uint32_t index = step->in_array ? step->array_task_id : rank;
	bool coord = index == 0;

	(void)plan;
	(void)addrs;
	dlrt_env_set(env, "DLRT_ROLE", "%s", coord ? "master" : "worker");
	dlrt_env_set(env, "DLRT_INFER_ROLE", "%s", coord ? "coordinator" : "worker");
	dlrt_env_set(env, "DLRT_INFER_INDEX", "%u", index);
	if (step->in_array)
		dlrt_env_set(env, "DLRT_INFER_ARRAY_JOB", "%u", step->array_job_id);
}

const struct dlrt_runtime dlrt_runtime_infer = {
	.name = "infer",
	.summary = "dlrt-infer pool on a job array: element 0 coordinator, the others workers",
	.program_uses_pmix = false,
	.assign = infer_assign,
	.task_env = infer_task_env,
};
