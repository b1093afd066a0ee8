/* caffe2_runtime.c - Caffe2 as the Kubeflow operator runs it: task 0 the MASTER,
 * the others WORKERs, each a shard.
 *
 * Contract (framework-contracts.md §3.1): the operator injects NUM_SHARDS,
 * SHARD_ID, RUN_ID and CAFFE2_CONFIG into every replica. RUN_ID prefixes every
 * store key and keys are write-once (SETNX), so it must be unique per attempt:
 * job id, step id and Slurm's restart count together are.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "runtime.h"

static void caffe2_assign(struct dlrt_plan *plan, const struct dlrt_config *cfg)
{
	(void)cfg;
	for (uint32_t t = 0; t < plan->layout->ntasks; t++)
		plan->task[t].role = t == 0 ? DLRT_ROLE_MASTER : DLRT_ROLE_WORKER;
}

/* {"cluster":{"master":["n1"],"worker":["n1","n2"]},"task":{"type":"worker","index":0}}
 * Node names are Slurm node names: letters, digits, '-', '_' and '.', nothing to escape. */
static void caffe2_config_json(const struct dlrt_plan *plan, uint32_t rank, struct dlrt_env *env)
{
	const struct dlrt_layout *l = plan->layout;
	static const enum dlrt_role roles[] = { DLRT_ROLE_MASTER, DLRT_ROLE_WORKER };
	struct dlrt_buf b;

	dlrt_buf_init(&b, 1u << 24);
	dlrt_buf_printf(&b, "{\"cluster\":{");
	for (size_t r = 0; r < 2; r++) {
		bool first = true;

		dlrt_buf_printf(&b, "%s\"%s\":[", r ? "," : "", dlrt_role_name(roles[r]));
		for (uint32_t t = 0; t < l->ntasks; t++) {
			if (plan->task[t].role != roles[r])
				continue;
			dlrt_buf_printf(&b, "%s\"%s\"", first ? "" : ",", l->nodes.names[l->task_node[t]]);
			first = false;
		}
		dlrt_buf_printf(&b, "]");
	}
	if (dlrt_buf_printf(&b, "},\"task\":{\"type\":\"%s\",\"index\":%u}}",
			    dlrt_role_name(plan->task[rank].role), plan->task[rank].role_index) < 0)
		env->failed = true;
	else
		dlrt_env_set(env, "CAFFE2_CONFIG", "%.*s", (int)b.len, (const char *)dlrt_buf_head(&b));
	dlrt_buf_free(&b);
}

static void caffe2_task_env(const struct dlrt_plan *plan, uint32_t rank,
			    const struct dlrt_step_info *step, const struct dlrt_addrs *addrs,
			    struct dlrt_env *env)
{
	(void)addrs;
	dlrt_env_set(env, "NUM_SHARDS", "%u", plan->layout->ntasks);
	dlrt_env_set(env, "SHARD_ID", "%u", rank);
	dlrt_env_set(env, "RUN_ID", "dlrt-%u-%u-%u", step->job_id, step->step_id,
		     step->restart_count);
	caffe2_config_json(plan, rank, env);
}

const struct dlrt_runtime dlrt_runtime_caffe2 = {
	.name = "caffe2",
	.summary = "Caffe2 (Kubeflow operator contract): task 0 master, the others workers",
	.program_uses_pmix = false,
	.assign = caffe2_assign,
	.task_env = caffe2_task_env,
};
