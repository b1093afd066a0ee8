/* mxnet_runtime.c - MXNet / ps-lite: one scheduler, N servers, the rest workers.
 *
 * Contract (docs/contracts.md, mxnet): the role comes only from DMLC_ROLE; the
 * scheduler waits for exactly DMLC_NUM_SERVER + DMLC_NUM_WORKER registrations,
 * so the counts must be exact or ps-lite hangs forever. Ranks are assigned by
 * the scheduler, never by the launcher (no DMLC_RANK).
 *
 * Placement: task 0 is the scheduler, or with --dl-mxnet-sched=extra no
 * task is: dlrt then starts the scheduler as one more process next to task 0
 * (spank/mxsched.c), as dmlc's launcher does, and -n counts servers and
 * workers only. Servers are spread over the nodes before
 * any node gets a second one (a server per node spreads the parameter traffic),
 * and on each node the server takes the highest local rank, so workers keep the
 * low local ranks that line up with GPU indices.
 */
#include <stdio.h>
#include <stdlib.h>

#include "runtime.h"

uint32_t dlrt_mxnet_servers(const struct dlrt_opts *o, const struct dlrt_config *cfg,
			    uint32_t ntasks, uint32_t nnodes)
{
	uint32_t s, others = o->mxnet_scheduler == DLRT_MXSCHED_EXTRA ? 1 : 2;

	if (o->servers > 0)
		return (uint32_t)o->servers;
	if (cfg->default_servers)
		return cfg->default_servers;
	/* One per node, leaving room for the scheduler task (unless it is an
	 * extra process) and at least one worker. */
	s = nnodes;
	if (ntasks >= others + 1 && s > ntasks - others)
		s = ntasks - others;
	return s ? s : 1;
}

static int mxnet_validate(const struct dlrt_opts *o, const struct dlrt_config *cfg,
			  uint32_t ntasks, uint32_t nnodes, struct dlrt_err *err)
{
	uint32_t s = dlrt_mxnet_servers(o, cfg, ntasks, nnodes);

	if (o->mxnet_scheduler == DLRT_MXSCHED_EXTRA) {
		if ((uint64_t)ntasks < (uint64_t)s + 1)
			return dlrt_err_set(err, "--dl-runtime=mxnet --dl-mxnet-sched=extra needs "
					    "at least %u tasks (%u server%s + 1 worker; the scheduler is "
					    "an extra process) but the step has %u: add tasks with -n or "
					    "lower --dl-servers", s + 1, s, s == 1 ? "" : "s", ntasks);
		return 0;
	}
	if ((uint64_t)ntasks < (uint64_t)s + 2)
		return dlrt_err_set(err, "--dl-runtime=mxnet needs at least %u tasks (1 scheduler + "
				    "%u server%s + 1 worker) but the step has %u: add tasks with -n "
				    "or lower --dl-servers", s + 2, s, s == 1 ? "" : "s", ntasks);
	return 0;
}

static void mxnet_assign(struct dlrt_plan *plan, const struct dlrt_config *cfg)
{
	const struct dlrt_layout *l = plan->layout;
	uint32_t *start = calloc(l->nnodes, sizeof(uint32_t));    /* first slot of each node */
	uint32_t *next = calloc(l->nnodes, sizeof(uint32_t));     /* one past its highest free slot */
	uint32_t *slot_task = calloc(l->ntasks, sizeof(uint32_t)); /* slot -> task id */
	uint32_t left, off = 0;
	bool placed = true;

	plan->servers = dlrt_mxnet_servers(plan->opts, cfg, l->ntasks, l->nnodes);
	left = plan->servers;
	for (uint32_t t = 0; t < l->ntasks; t++)
		plan->task[t].role = DLRT_ROLE_WORKER;
	plan->extra_scheduler = plan->opts->mxnet_scheduler == DLRT_MXSCHED_EXTRA;
	if (!plan->extra_scheduler)
		plan->task[0].role = DLRT_ROLE_SCHEDULER;
	if (!start || !next || !slot_task) {
		/* Only on allocation failure: keep counts exact with the lowest ids. */
		for (uint32_t t = plan->extra_scheduler ? 0 : 1; t < l->ntasks && left; t++, left--)
			plan->task[t].role = DLRT_ROLE_SERVER;
		goto out;
	}
	/* A node's slots are its tasks ordered by local rank. */
	for (uint32_t i = 0; i < l->nnodes; off += l->node_ntasks[i++]) {
		start[i] = off;
		next[i] = off + l->node_ntasks[i];
	}
	for (uint32_t t = 0; t < l->ntasks; t++)
		slot_task[start[l->task_node[t]] + l->task_local[t]] = t;
	/* Each round gives every node that still has a worker one server, taken
	 * from its highest local rank down. Validation guarantees enough tasks;
	 * `placed` only guards against looping forever if it did not. */
	while (left && placed) {
		placed = false;
		for (uint32_t i = 0; i < l->nnodes && left; i++) {
			while (next[i] > start[i]) {
				uint32_t t = slot_task[--next[i]];

				if (plan->task[t].role != DLRT_ROLE_WORKER)
					continue;
				plan->task[t].role = DLRT_ROLE_SERVER;
				left--;
				placed = true;
				break;
			}
		}
	}
out:
	free(start);
	free(next);
	free(slot_task);
}

static void mxnet_task_env(const struct dlrt_plan *plan, uint32_t rank,
			   const struct dlrt_step_info *step, const struct dlrt_addrs *addrs,
			   struct dlrt_env *env)
{
	dlrt_env_set(env, "DMLC_ROLE", "%s", dlrt_role_name(plan->task[rank].role));
	dlrt_env_set(env, "DMLC_NUM_SERVER", "%u", plan->role_count[DLRT_ROLE_SERVER]);
	dlrt_env_set(env, "DMLC_NUM_WORKER", "%u", plan->role_count[DLRT_ROLE_WORKER]);
	dlrt_env_set(env, "DMLC_NUM_ATTEMPT", "%u", step->restart_count);
	dlrt_env_set(env, "DMLC_JOB_CLUSTER", "slurm");
	if (addrs && addrs->valid) {
		/* Numeric on purpose: ZMQ binds and ps-lite advertises these as given. */
		dlrt_env_set(env, "DMLC_PS_ROOT_URI", "%s", addrs->root_ip);
		dlrt_env_set(env, "DMLC_PS_ROOT_PORT", "%u", addrs->root_port);
		dlrt_env_set(env, "DMLC_NODE_HOST", "%s", addrs->node_ip);
		if (addrs->iface[0])
			dlrt_env_set(env, "DMLC_INTERFACE", "%s", addrs->iface);
	}
	if (plan->opts->verbose)
		dlrt_env_set(env, "PS_VERBOSE", "1");
}

const struct dlrt_runtime dlrt_runtime_mxnet = {
	.name = "mxnet",
	.summary = "MXNet/ps-lite parameter server: 1 scheduler, --dl-servers servers, the rest workers",
	.program_uses_pmix = false,
	.needs_root_addr = true,  /* DMLC_PS_ROOT_URI/PORT from the PMIx exchange */
	.end_step_on_failure = true, /* ps-lite waits forever for a dead peer */
	.validate = mxnet_validate,
	.assign = mxnet_assign,
	.task_env = mxnet_task_env,
};
