/* torch_runtime.c - PyTorch torch.distributed with init_method env://.
 *
 * Contract (docs/contracts.md, torch.distributed): the variables torchrun gives its
 * workers, computed from the step itself (never from the job's node list or
 * job id, the mistakes Lightning and submitit make for multi-step jobs).
 * GROUP_* describe nodes (one torchrun agent per node), ROLE_* the single role.
 *
 * The rendezvous store is hosted the way torchrun hosts it: not by rank 0
 * (whose TCPStore would listen on every address, for anyone, with no
 * authentication) but by the agent, here dlrt-c10d-store (this folder) on
 * the node of task 0, behind the step secret. Every rank gets its node's
 * relay (127.0.0.1) as MASTER_ADDR/MASTER_PORT and
 * TORCHELASTIC_USE_AGENT_STORE=True, which makes torch's env:// rendezvous
 * a store client on every rank, rank 0 included.
 */
#include "runtime/runtime.h"

/* The user's own MASTER_ADDR or MASTER_PORT means "rank 0 hosts torch's
 * store, as without dlrt": the framework's own, unprotected path. */
#define TORCH_USER_VARS "MASTER_ADDR MASTER_PORT"

static void torch_assign(struct dlrt_plan *plan, const struct dlrt_config *cfg)
{
	(void)cfg;
	for (uint32_t t = 0; t < plan->layout->ntasks; t++)
		plan->task[t].role = DLRT_ROLE_WORKER;
}

static bool uniform_tasks_per_node(const struct dlrt_layout *l)
{
	for (uint32_t n = 1; n < l->nnodes; n++)
		if (l->node_ntasks[n] != l->node_ntasks[0])
			return false;
	return true;
}

static void torch_task_env(const struct dlrt_plan *plan, uint32_t rank,
			   const struct dlrt_step_info *step, const struct dlrt_addrs *addrs,
			   struct dlrt_env *env)
{
	const struct dlrt_layout *l = plan->layout;
	uint32_t node = l->task_node[rank];

	dlrt_env_set(env, "RANK", "%u", rank);
	dlrt_env_set(env, "WORLD_SIZE", "%u", l->ntasks);
	dlrt_env_set(env, "LOCAL_RANK", "%u", l->task_local[rank]);
	dlrt_env_set(env, "LOCAL_WORLD_SIZE", "%u", l->node_ntasks[node]);
	dlrt_env_set(env, "GROUP_RANK", "%u", node);
	dlrt_env_set(env, "GROUP_WORLD_SIZE", "%u", l->nnodes);
	dlrt_env_set(env, "ROLE_RANK", "%u", rank);
	dlrt_env_set(env, "ROLE_WORLD_SIZE", "%u", l->ntasks);
	dlrt_env_set(env, "ROLE_NAME", "default");
	/* Slurm sets this only when --ntasks-per-node was given, and Lightning's
	 * SLURMEnvironment refuses a step of several tasks without it (telling
	 * the user to give --ntasks-per-node=<all tasks>): when every node of the
	 * step has as many tasks, that is a fact of the step, not a choice. */
	if (uniform_tasks_per_node(l))
		dlrt_env_set_default(env, "SLURM_NTASKS_PER_NODE", "%u", l->node_ntasks[node]);
	if (addrs && addrs->valid) {
		/* dlrt's store (through this node's relay) for every rank; or, when
		 * the user chose MASTER_ADDR/PORT, rank 0's node and a free port
		 * for what the user did not set. */
		dlrt_env_set_default(env, "MASTER_ADDR", "%s", addrs->root_ip);
		dlrt_env_set_default(env, "MASTER_PORT", "%u", addrs->root_port);
		if (!plan->user_service && !plan->no_exchange) {
			dlrt_env_set(env, "TORCHELASTIC_USE_AGENT_STORE", "True");
			/* torch prefixes its keys with the attempt; the store
			 * lives for one step, so Slurm's restart count is it. */
			dlrt_env_set(env, "TORCHELASTIC_RESTART_COUNT", "%u", step->restart_count);
		}
		if (addrs->iface[0]) {
			dlrt_env_set_default(env, "GLOO_SOCKET_IFNAME", "%s", addrs->iface);
			dlrt_env_set_default(env, "NCCL_SOCKET_IFNAME", "%s", addrs->iface);
		}
	}
}

/* dlrt-c10d-store on the node of task 0, unless the user runs torch's own
 * store (TORCH_USER_VARS) or the tasks learn no address before exec (an MPI
 * program, DLRT_EXCHANGE=none: torch then gets no MASTER_* from dlrt). */
static bool torch_service(const struct dlrt_plan *plan, struct dlrt_service_spec *spec)
{
	if (plan->user_service || plan->no_exchange)
		return false;
	dlrt_service_spec_init(spec, "dlrt-c10d-store", "the torch c10d store (dlrt-c10d-store)");
	return true;
}

const struct dlrt_runtime dlrt_runtime_torch = {
	.name = "torch",
	.summary = "PyTorch torch.distributed (env://): torchrun's worker variables",
	.program_uses_pmix = false,
	.needs_root_addr = true,  /* MASTER_ADDR/PORT from the address exchange */
	.python_shim = true,
	.service = torch_service,
	.user_service_var = TORCH_USER_VARS,
	.assign = torch_assign,
	.task_env = torch_task_env,
};
