/* horovod_runtime.c - Horovod: every task is a worker.
 *
 * Contract (framework-contracts.md §2): HOROVOD_RANK/SIZE, LOCAL_RANK/SIZE and
 * CROSS_RANK/SIZE with the semantics of horovodrun's get_host_assignments (the
 * role model computes cross ranks that way, also for unequal tasks per node),
 * and HOROVOD_HOSTNAME equal within a node and distinct across nodes: the
 * Slurm node name is exactly that.
 */
#include "runtime.h"

static void horovod_assign(struct dlrt_plan *plan, const struct dlrt_config *cfg)
{
	(void)cfg;
	for (uint32_t t = 0; t < plan->layout->ntasks; t++)
		plan->task[t].role = DLRT_ROLE_WORKER;
}

static void horovod_task_env(const struct dlrt_plan *plan, uint32_t rank,
			     const struct dlrt_step_info *step, const struct dlrt_addrs *addrs,
			     struct dlrt_env *env)
{
	const struct dlrt_layout *l = plan->layout;
	uint32_t node = l->task_node[rank];

	(void)step;
	(void)addrs;
	dlrt_env_set(env, "HOROVOD_RANK", "%u", rank);
	dlrt_env_set(env, "HOROVOD_SIZE", "%u", l->ntasks);
	dlrt_env_set(env, "HOROVOD_LOCAL_RANK", "%u", l->task_local[rank]);
	dlrt_env_set(env, "HOROVOD_LOCAL_SIZE", "%u", l->node_ntasks[node]);
	dlrt_env_set(env, "HOROVOD_CROSS_RANK", "%u", plan->task[rank].cross_rank);
	dlrt_env_set(env, "HOROVOD_CROSS_SIZE", "%u", plan->task[rank].cross_size);
	dlrt_env_set(env, "HOROVOD_HOSTNAME", "%s", l->nodes.names[node]);
}

const struct dlrt_runtime dlrt_runtime_horovod = {
	.name = "horovod",
	.summary = "Horovod: every task a worker with Horovod's rank/local/cross variables",
	.program_uses_pmix = true, /* MPI mode: Horovod calls MPI_Init itself */
	.assign = horovod_assign,
	.task_env = horovod_task_env,
};
