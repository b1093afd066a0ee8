/* torch_runtime.c - PyTorch torch.distributed with init_method env://.
 *
 * Contract (docs/contracts.md, torch.distributed): the variables torchrun gives its
 * workers, computed from the step itself (never from the job's node list or
 * job id, the mistakes Lightning and submitit make for multi-step jobs).
 * GROUP_* describe nodes (one torchrun agent per node), ROLE_* the single role.
 */
#include "runtime.h"

static void torch_assign(struct dlrt_plan *plan, const struct dlrt_config *cfg)
{
	(void)cfg;
	for (uint32_t t = 0; t < plan->layout->ntasks; t++)
		plan->task[t].role = DLRT_ROLE_WORKER;
}

static void torch_task_env(const struct dlrt_plan *plan, uint32_t rank,
			   const struct dlrt_step_info *step, const struct dlrt_addrs *addrs,
			   struct dlrt_env *env)
{
	const struct dlrt_layout *l = plan->layout;
	uint32_t node = l->task_node[rank];

	(void)step;
	dlrt_env_set(env, "RANK", "%u", rank);
	dlrt_env_set(env, "WORLD_SIZE", "%u", l->ntasks);
	dlrt_env_set(env, "LOCAL_RANK", "%u", l->task_local[rank]);
	dlrt_env_set(env, "LOCAL_WORLD_SIZE", "%u", l->node_ntasks[node]);
	dlrt_env_set(env, "GROUP_RANK", "%u", node);
	dlrt_env_set(env, "GROUP_WORLD_SIZE", "%u", l->nnodes);
	dlrt_env_set(env, "ROLE_RANK", "%u", rank);
	dlrt_env_set(env, "ROLE_WORLD_SIZE", "%u", l->ntasks);
	dlrt_env_set(env, "ROLE_NAME", "default");
	if (addrs && addrs->valid) {
		/* A value the user exported wins (env:// reads these two only). */
		dlrt_env_set_default(env, "MASTER_ADDR", "%s", addrs->root_ip);
		dlrt_env_set_default(env, "MASTER_PORT", "%u", addrs->root_port);
		if (addrs->iface[0]) {
			dlrt_env_set_default(env, "GLOO_SOCKET_IFNAME", "%s", addrs->iface);
			dlrt_env_set_default(env, "NCCL_SOCKET_IFNAME", "%s", addrs->iface);
		}
	}
}

const struct dlrt_runtime dlrt_runtime_torch = {
	.name = "torch",
	.summary = "PyTorch torch.distributed (env://): torchrun's worker variables",
	.program_uses_pmix = false,
	.needs_root_addr = true,  /* MASTER_ADDR/PORT from the PMIx exchange */
	.assign = torch_assign,
	.task_env = torch_task_env,
};
