/* tensorflow_runtime.c - TensorFlow's MultiWorkerMirroredStrategy (TF_CONFIG).
 *
 * Contract (docs/contracts.md, TensorFlow): TFConfigClusterResolver reads
 * TF_CONFIG as JSON: "cluster" maps a job name to the list of its tasks'
 * "host:port" (ClusterSpec numbers them by list position), "task" gives this
 * process's "type" and "index". With only "worker" listed, worker 0 is the
 * chief (multi_worker_util.is_chief) and the collective leader. Every task
 * starts a gRPC server on the port of its own entry, bound on 0.0.0.0
 * (GrpcServer::Init), so each task needs a port of its own, free on its
 * node: the exchange checks one per task on each node and gives every task
 * the whole list (needs_task_ports).
 *
 * On a heterogeneous step (--dl-het-roles=split, docs/hetjob.md) the first
 * component is ParameterServerStrategy's CPU side: task 0 the "chief" (the
 * coordinator, which only dispatches functions to the workers and so needs
 * no GPU), its other tasks the "ps" tasks that hold the variables, and the
 * other components the "worker"s; TF_CONFIG then lists the three jobs.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/buf.h"
#include "runtime/runtime.h"

/* The kernel refuses an environment string longer than 32 pages
 * (MAX_ARG_STRLEN, 128 KiB): exec would fail with E2BIG. */
#define TF_CONFIG_MAX (128u * 1024 - 1)
/* One entry at most: "255.255.255.255:65535", (quotes and comma). */
#define TF_ENTRY_MAX 24u
/* {"cluster":{"chief":[],"ps":[],"worker":[]},"task":{"type":"worker","index":4294967295}} */
#define TF_FIXED_MAX 100u

static uint32_t tf_max_tasks(void)
{
	return (TF_CONFIG_MAX - TF_FIXED_MAX) / TF_ENTRY_MAX;
}

static int tf_validate(const struct dlrt_opts *o, const struct dlrt_config *cfg, uint32_t ntasks,
		       uint32_t nnodes, struct dlrt_err *err)
{
	(void)o;
	(void)cfg;
	(void)nnodes;
	if (ntasks > tf_max_tasks())
		return dlrt_err_set(err, "--dl-runtime=tensorflow: TF_CONFIG lists every task's "
				    "address and for %u tasks could pass the kernel's 128 KiB limit "
				    "of one environment variable: run at most %u tasks per step",
				    ntasks, tf_max_tasks());
	return 0;
}

/* --dl-het-roles=split: the chief and at least one ps in the first component. */
static int tf_validate_comps(const struct dlrt_opts *o, const struct dlrt_config *cfg,
			     uint32_t ncomps, const uint32_t *comp_ntasks, struct dlrt_err *err)
{
	uint32_t n = 0;

	for (uint32_t c = 0; c < ncomps; c++)
		n += comp_ntasks[c];
	if (comp_ntasks[0] < 2)
		return dlrt_err_set(err, "--dl-runtime=tensorflow on a heterogeneous step puts the "
				    "chief and the ps tasks in the first component, which has %u "
				    "task: give it at least 2 (-n2 before the first ':'), or use "
				    "--dl-het-roles=flat (every task a worker)", comp_ntasks[0]);
	return tf_validate(o, cfg, n, 0, err);
}

static void tf_assign(struct dlrt_plan *plan, const struct dlrt_config *cfg)
{
	const struct dlrt_layout *l = plan->layout;
	bool split = dlrt_plan_het_split(plan);

	(void)cfg;
	for (uint32_t t = 0; t < l->ntasks; t++)
		plan->task[t].role = !split || t >= l->comp_first[1] ? DLRT_ROLE_WORKER :
				     t == 0 ? DLRT_ROLE_MASTER : DLRT_ROLE_SERVER;
}

/* TF_CONFIG's job name of a role. */
static const char *tf_job(enum dlrt_role r)
{
	return r == DLRT_ROLE_MASTER ? "chief" : r == DLRT_ROLE_SERVER ? "ps" : "worker";
}

/* "JOB":["ip:port",...] of the tasks with role r, in task order (their role index). */
static int tf_job_list(struct dlrt_buf *b, const struct dlrt_plan *plan,
		       const struct dlrt_addrs *addrs, enum dlrt_role r, bool first)
{
	int rc = dlrt_buf_printf(b, "%s\"%s\":[", first ? "" : ",", tf_job(r));
	bool any = false;

	for (uint32_t t = 0; t < plan->layout->ntasks && rc == 0; t++) {
		if (plan->task[t].role != r)
			continue;
		rc |= dlrt_buf_printf(b, "%s\"%s:%u\"", any ? "," : "", addrs->tasks[t].ip,
				      addrs->tasks[t].port);
		any = true;
	}
	return rc | dlrt_buf_printf(b, "]");
}

/* {"cluster":{"worker":["10.0.0.1:4000",...]},"task":{"type":"worker","index":R}}
 * Addresses are numeric IPv4 and decimal ports: nothing to escape. */
static void tf_task_env(const struct dlrt_plan *plan, uint32_t rank,
			const struct dlrt_step_info *step, const struct dlrt_addrs *addrs,
			struct dlrt_env *env)
{
	const struct dlrt_task_role *tr = &plan->task[rank];
	bool split = dlrt_plan_het_split(plan);
	struct dlrt_buf b;
	int rc = 0;

	(void)step;
	if (!addrs || !addrs->valid || !addrs->tasks)
		return; /* no exchange: no cluster to describe */
	dlrt_buf_init(&b, TF_CONFIG_MAX + 1);
	rc |= dlrt_buf_printf(&b, "{\"cluster\":{");
	if (split) {
		rc |= tf_job_list(&b, plan, addrs, DLRT_ROLE_MASTER, true);
		rc |= tf_job_list(&b, plan, addrs, DLRT_ROLE_SERVER, false);
	}
	rc |= tf_job_list(&b, plan, addrs, DLRT_ROLE_WORKER, !split);
	rc |= dlrt_buf_printf(&b, "},\"task\":{\"type\":\"%s\",\"index\":%u}}",
			      tf_job(tr->role), tr->role_index);
	/* Always dlrt's: a TF_CONFIG exported before srun is the same in every
	 * task, so its task index is wrong in all but one. */
	if (rc < 0)
		env->failed = true; /* validate() bounds the length: only out of memory */
	else
		dlrt_env_set(env, "TF_CONFIG", "%.*s", (int)b.len, (const char *)dlrt_buf_head(&b));
	dlrt_buf_free(&b);
}

const struct dlrt_runtime dlrt_runtime_tensorflow = {
	.name = "tensorflow",
	.summary = "TensorFlow MultiWorkerMirroredStrategy: TF_CONFIG, a checked port per task",
	.program_uses_pmix = false,
	/* The root's address orders the exchange; the tasks use their ports. */
	.needs_root_addr = true,
	.needs_task_ports = true,
	.validate = tf_validate,
	.validate_comps = tf_validate_comps,
	.assign = tf_assign,
	.task_env = tf_task_env,
};
