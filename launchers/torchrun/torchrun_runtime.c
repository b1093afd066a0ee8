/* torchrun_runtime.c - one torchrun agent per node (torch.distributed.run).
 *
 * Every task is a torchrun agent; the agents start the workers and give them
 * RANK, WORLD_SIZE, MASTER_ADDR... themselves. dlrt only hands each agent the
 * arguments torchrun reads from its environment (argparse_util.py: an option
 * --foo_bar defaults to PET_FOO_BAR), so the job's command stays a plain
 * `torchrun train.py`. A PET_* the user exported wins.
 *
 * The rendezvous is torch's c10d backend on dlrt-c10d-store (launchers/torch/,
 * behind the step secret), not on a TCPStore one of the agents hosts: every
 * agent reaches the store through its node's relay (127.0.0.1), and
 * is_host=0 keeps torch from trying to host a store itself (it would, since
 * 127.0.0.1 "matches the machine"). docs/torchrun.md has the whole contract.
 */
#include "runtime/runtime.h"

#include <stdio.h>

#include "torchrun.h"

extern const struct dlrt_runtime dlrt_runtime_torchrun;

/* The user's own PET_RDZV_ENDPOINT means "my own rendezvous": no store. */
#define TORCHRUN_USER_VARS "PET_RDZV_ENDPOINT"

static int torchrun_validate(const struct dlrt_opts *o, const struct dlrt_config *cfg,
			     uint32_t ntasks, uint32_t nnodes, struct dlrt_err *err)
{
	const struct torchrun_opts *t = dlrt_rt_opts_c(o, &dlrt_runtime_torchrun);

	(void)cfg;
	if (ntasks != nnodes)
		return dlrt_err_set(err, "torchrun: %u tasks on %u nodes, but each task is a torchrun "
				    "agent that starts the node's workers itself: run one task per "
				    "node (srun --ntasks-per-node=1), workers per node with "
				    "--dl-nproc-per-node", ntasks, nnodes);
	if (t->elastic_max && (nnodes < t->elastic_min || nnodes > t->elastic_max))
		return dlrt_err_set(err, "torchrun: --dl-elastic=%u:%u does not fit a step of %u "
				    "nodes: MIN must be at most and MAX at least the step's node "
				    "count (e.g. --dl-elastic=%u:%u)", t->elastic_min, t->elastic_max,
				    nnodes, nnodes > 1 ? nnodes - 1 : 1, nnodes);
	return 0;
}

static void torchrun_assign(struct dlrt_plan *plan, const struct dlrt_config *cfg)
{
	(void)cfg;
	for (uint32_t t = 0; t < plan->layout->ntasks; t++)
		plan->task[t].role = DLRT_ROLE_WORKER;
}

static void torchrun_task_env(const struct dlrt_plan *plan, uint32_t rank,
			      const struct dlrt_step_info *step, const struct dlrt_addrs *addrs,
			      struct dlrt_env *env)
{
	const struct torchrun_opts *o = dlrt_rt_opts_c(plan->opts, &dlrt_runtime_torchrun);
	const struct dlrt_layout *l = plan->layout;

	(void)rank;
	if (o->elastic_max) {
		dlrt_env_set_default(env, "PET_NNODES", "%u:%u", o->elastic_min, o->elastic_max);
		/* A lost node fails the survivors' workers (their collective
		 * breaks), and the agents restart them in a new round: one
		 * restart per node the step may lose. */
		dlrt_env_set_default(env, "PET_MAX_RESTARTS", "%u", o->elastic_max - o->elastic_min);
	} else {
		dlrt_env_set_default(env, "PET_NNODES", "%u", l->nnodes);
		dlrt_env_set_default(env, "PET_MAX_RESTARTS", "0");
	}
	dlrt_env_set_default(env, "PET_NPROC_PER_NODE", "%s",
			     o->nproc_per_node[0] ? o->nproc_per_node : "1");
	/* torchrun's default "0" (no redirection) reaches the agent as None
	 * with torch 1.13 on Python 3.11 (Std is an IntFlag, whose iteration
	 * skips 0 and 3), and the agent dies at its first worker start. A
	 * mapping that names only local rank 9's stderr (redirected, then
	 * tee'd back to the console) means "no redirection" for every other
	 * worker and parses on every torch version. */
	dlrt_env_set_default(env, "PET_REDIRECTS", "9:2");
	dlrt_env_set_default(env, "PET_TEE", "9:2");
	dlrt_env_set_default(env, "PET_RDZV_BACKEND", "c10d");
	/* torch 2.4+ has rank 0's agent host one TCPStore for every round's
	 * workers and never replaces it, while the workers assume a fresh
	 * store per round (no per-attempt prefix): after a lost node the
	 * new round reads the old round's keys and hangs or fails
	 * (pytorch#135712; a new rank 0's agent also trips an assertion,
	 * pytorch#182221). With this set, each round's worker of rank 0
	 * hosts a fresh store, as in torch 1.x. Older torch ignores it. */
	dlrt_env_set_default(env, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1");
	/* Unique to job, step and attempt: a requeued job (Slurm's restart
	 * count) must never meet the rendezvous state of its previous run. */
	dlrt_env_set_default(env, "PET_RDZV_ID", "dlrt-%u.%u.%u", step->job_id, step->step_id,
			     step->restart_count);
	if (addrs && addrs->valid && !plan->user_service && !plan->no_exchange) {
		dlrt_env_set_default(env, "PET_RDZV_ENDPOINT", "%s:%u", addrs->root_ip,
				     addrs->root_port);
		dlrt_env_set_default(env, "PET_RDZV_CONF", "is_host=0");
	}
	if (addrs && addrs->valid && addrs->iface[0]) {
		dlrt_env_set_default(env, "GLOO_SOCKET_IFNAME", "%s", addrs->iface);
		dlrt_env_set_default(env, "NCCL_SOCKET_IFNAME", "%s", addrs->iface);
	}
}

/* dlrt-c10d-store on the node of task 0 (the agents' rendezvous), unless the
 * user names their own endpoint or the tasks learn no address before exec. */
static bool torchrun_service(const struct dlrt_plan *plan, struct dlrt_service_spec *spec)
{
	if (plan->user_service || plan->no_exchange)
		return false;
	dlrt_service_spec_init(spec, "dlrt-c10d-store",
			       "the torchrun rendezvous store (dlrt-c10d-store)");
	return true;
}

const struct dlrt_runtime dlrt_runtime_torchrun = {
	.name = "torchrun",
	.python_shim = true,
	.summary = "torchrun agents, one per node (c10d rendezvous on dlrt's store, --dl-elastic)",
	.program_uses_pmix = false,
	.needs_root_addr = true, /* the store's address through the exchange */
	.warn_children = true,   /* --dl-signal: the workers, not the agent */
	.options = dlrt_torchrun_options,
	.validate = torchrun_validate,
	.service = torchrun_service,
	.user_service_var = TORCHRUN_USER_VARS,
	.assign = torchrun_assign,
	.task_env = torchrun_task_env,
};
