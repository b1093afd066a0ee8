/* Unit tests: the jax runtime's launch contract (docs/contracts.md, JAX).
 * What jax.distributed.initialize() reads with no arguments: the coordinator
 * from JAX_COORDINATOR_ADDRESS, process count and id from SlurmCluster
 * (SLURM_NTASKS, SLURM_PROCID: Slurm's, not tested here), local devices from
 * JAX_LOCAL_DEVICE_IDS. Expected values are written out literally. */
#include <string.h>

#include "common/layout.h"
#include "runtime/runtime.h"
#include "tap.h"

static const struct dlrt_env_var *find(const struct dlrt_env *env, const char *name)
{
	for (size_t i = 0; i < env->n; i++)
		if (!strcmp(env->vars[i].name, name))
			return &env->vars[i];
	return NULL;
}

int main(void)
{
	struct dlrt_config cfg;
	struct dlrt_err err;
	struct dlrt_layout l;
	struct dlrt_opts o;
	struct dlrt_plan p;
	struct dlrt_step_info step = { .job_id = 42, .step_id = 3 };
	struct dlrt_addrs addr = { .valid = true, .root_ip = "10.0.0.1", .root_port = 41234,
				   .node_ip = "10.0.0.3" };
	struct dlrt_env env;
	const struct dlrt_runtime *rt;
	const struct dlrt_env_var *v;
	int idx = dlrt_runtime_index("jax");

	dlrt_config_parse(&cfg, 0, NULL, &err);
	TAP_OK(idx >= 0, "jax is in the runtime table");
	if (idx < 0)
		return tap_done();
	rt = dlrt_runtimes[idx];
	TAP_OK(rt->needs_root_addr, "jax needs the exchanged root address and a checked port");
	TAP_OK(!rt->program_uses_pmix, "a JAX program does not do its own PMIx wire-up");

	/* 3 nodes, 2 tasks each, block: task 5 is local rank 1 on node 2. */
	TAP_IS_INT(dlrt_layout_init(&l, "n[1-3]", "2(x3)", DLRT_DIST_BLOCK, 0, &err), 0, "layout");
	dlrt_opts_init(&o, &cfg);
	TAP_IS_INT(dlrt_plan_build(&p, rt, &l, &o, &cfg, &err), 0, "jax plan");
	for (uint32_t t = 0; t < l.ntasks; t++)
		if (p.task[t].role != DLRT_ROLE_WORKER)
			TAP_OK(0, "task %u is a worker", t);
	TAP_IS_INT(p.role_count[DLRT_ROLE_WORKER], 6, "every task is a JAX process");

	dlrt_env_init(&env);
	TAP_IS_INT(dlrt_plan_task_env(&p, 5, &step, &addr, &env, &err), 0, "env of task 5");
	TAP_IS_STR(dlrt_env_get(&env, "JAX_COORDINATOR_ADDRESS"), "10.0.0.1:41234",
		   "JAX_COORDINATOR_ADDRESS: root's numeric address and checked port");
	v = find(&env, "JAX_COORDINATOR_ADDRESS");
	TAP_OK(v && v->keep_user, "a user's own JAX_COORDINATOR_ADDRESS wins");
	TAP_IS_STR(dlrt_env_get(&env, "JAX_NUM_PROCESSES"), "6", "JAX_NUM_PROCESSES");
	TAP_IS_STR(dlrt_env_get(&env, "JAX_PROCESS_ID"), "5", "JAX_PROCESS_ID is the task id");
	TAP_OK(!dlrt_env_get(&env, "JAX_LOCAL_DEVICE_IDS"),
	       "no JAX_LOCAL_DEVICE_IDS before the GPU plan");
	dlrt_env_free(&env);

	/* No exchange (an MPI program, DLRT_EXCHANGE=none): no coordinator. */
	dlrt_env_init(&env);
	dlrt_plan_task_env(&p, 0, &step, NULL, &env, &err);
	TAP_OK(!dlrt_env_get(&env, "JAX_COORDINATOR_ADDRESS"), "no address: no coordinator");
	TAP_IS_STR(dlrt_env_get(&env, "JAX_PROCESS_ID"), "0", "JAX_PROCESS_ID of task 0");
	dlrt_env_free(&env);

	/* Local devices follow the GPU plan: the task sees its GPUs as 0..n-1. */
	TAP_OK(rt->gpu_env != NULL, "jax has GPU variables");
	dlrt_env_init(&env);
	rt->gpu_env(&p, 5, 1, &env);
	TAP_IS_STR(dlrt_env_get(&env, "JAX_LOCAL_DEVICE_IDS"), "0", "one GPU: device 0");
	dlrt_env_free(&env);
	dlrt_env_init(&env);
	rt->gpu_env(&p, 5, 3, &env);
	TAP_IS_STR(dlrt_env_get(&env, "JAX_LOCAL_DEVICE_IDS"), "0,1,2", "three GPUs: 0,1,2");
	v = find(&env, "JAX_LOCAL_DEVICE_IDS");
	TAP_OK(v && v->keep_user, "a user's own JAX_LOCAL_DEVICE_IDS wins");
	dlrt_env_free(&env);
	dlrt_env_init(&env);
	rt->gpu_env(&p, 5, 64, &env);
	v = find(&env, "JAX_LOCAL_DEVICE_IDS");
	TAP_OK(v && strlen(v->value) > 2 && !strcmp(v->value + strlen(v->value) - 3, ",63"),
	       "64 GPUs (a node's most): 0..63 fit");
	dlrt_env_free(&env);
	dlrt_env_init(&env);
	rt->gpu_env(&p, 5, 0, &env);
	TAP_OK(!dlrt_env_get(&env, "JAX_LOCAL_DEVICE_IDS"),
	       "no GPU planned for the task: JAX's own default");
	dlrt_env_free(&env);

	dlrt_plan_free(&p);
	dlrt_layout_free(&l);
	return tap_done();
}
