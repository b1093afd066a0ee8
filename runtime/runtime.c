#include "runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *dlrt_role_name(enum dlrt_role role)
{
	static const char *const names[DLRT_ROLE_COUNT] = {
		[DLRT_ROLE_WORKER] = "worker",
		[DLRT_ROLE_SERVER] = "server",
		[DLRT_ROLE_SCHEDULER] = "scheduler",
		[DLRT_ROLE_MASTER] = "master",
	};

	return (unsigned)role < DLRT_ROLE_COUNT ? names[role] : "?";
}

int dlrt_runtime_index(const char *name)
{
	for (int i = 0; dlrt_runtimes[i]; i++)
		if (!strcmp(dlrt_runtimes[i]->name, name))
			return i;
	return -1;
}

void dlrt_runtime_list(char *buf, size_t len, uint32_t mask)
{
	size_t off = 0;

	if (!len)
		return;
	buf[0] = '\0';
	for (int i = 0; dlrt_runtimes[i]; i++) {
		int n;

		if (!(mask & (1u << i)))
			continue;
		n = snprintf(buf + off, len - off, "%s%s", off ? ", " : "", dlrt_runtimes[i]->name);
		if (n < 0 || (size_t)n >= len - off)
			return;
		off += (size_t)n;
	}
}

static bool het_split(const struct dlrt_runtime *rt, const struct dlrt_opts *opts,
		      uint32_t ncomps)
{
	return ncomps >= 2 && opts->het_roles == DLRT_HET_SPLIT && rt->validate_comps;
}

int dlrt_plan_validate(const struct dlrt_runtime *rt, const struct dlrt_opts *opts,
		       const struct dlrt_config *cfg, uint32_t ncomps, const uint32_t *comp_ntasks,
		       uint32_t ntasks, uint32_t nnodes, struct dlrt_err *err)
{
	if (het_split(rt, opts, ncomps))
		return rt->validate_comps(opts, cfg, ncomps, comp_ntasks, err);
	return rt->validate ? rt->validate(opts, cfg, ntasks, nnodes, err) : 0;
}

bool dlrt_plan_het_split(const struct dlrt_plan *plan)
{
	return het_split(plan->runtime, plan->opts, plan->layout->ncomps);
}

/* Each component's task count, for dlrt_plan_validate. */
static int layout_validate(const struct dlrt_runtime *rt, const struct dlrt_layout *l,
			   const struct dlrt_opts *opts, const struct dlrt_config *cfg,
			   struct dlrt_err *err)
{
	uint32_t *n = NULL;
	int rc;

	if (l->ncomps >= 2) {
		n = calloc(l->ncomps, sizeof(*n));
		if (!n)
			return dlrt_err_set(err, "out of memory building the role table");
		for (uint32_t c = 0; c < l->ncomps; c++)
			n[c] = l->comp_first[c + 1] - l->comp_first[c];
	}
	rc = dlrt_plan_validate(rt, opts, cfg, l->ncomps, n, l->ntasks, l->nnodes, err);
	free(n);
	return rc;
}

int dlrt_plan_build(struct dlrt_plan *plan, const struct dlrt_runtime *rt,
		    const struct dlrt_layout *layout, const struct dlrt_opts *opts,
		    const struct dlrt_config *cfg, struct dlrt_err *err)
{
	uint32_t *seen, *slot_cross, *offset;

	memset(plan, 0, sizeof(*plan));
	if (layout_validate(rt, layout, opts, cfg, err) < 0)
		return -1;
	plan->runtime = rt;
	plan->layout = layout;
	plan->opts = opts;
	plan->task = calloc(layout->ntasks, sizeof(*plan->task));
	seen = calloc(layout->ntasks, sizeof(*seen));             /* by local rank */
	slot_cross = calloc(layout->ntasks, sizeof(*slot_cross)); /* by node slot */
	offset = calloc(layout->nnodes, sizeof(*offset));
	if (!plan->task || !seen || !slot_cross || !offset) {
		free(seen);
		free(slot_cross);
		free(offset);
		dlrt_plan_free(plan);
		return dlrt_err_set(err, "out of memory building the role table");
	}
	/* Horovod's get_host_assignments: walk nodes in step order; the slot of local
	 * rank lr on a node gets cross_rank = number of earlier nodes having slot lr,
	 * and cross_size = number of nodes having slot lr. O(tasks). */
	for (uint32_t i = 0, off = 0; i < layout->nnodes; off += layout->node_ntasks[i++]) {
		offset[i] = off;
		for (uint32_t lr = 0; lr < layout->node_ntasks[i]; lr++)
			slot_cross[off + lr] = seen[lr]++;
	}
	for (uint32_t t = 0; t < layout->ntasks; t++) {
		uint32_t lr = layout->task_local[t];

		plan->task[t].cross_rank = slot_cross[offset[layout->task_node[t]] + lr];
		plan->task[t].cross_size = seen[lr];
	}
	free(seen);
	free(slot_cross);
	free(offset);

	rt->assign(plan, cfg);
	for (uint32_t t = 0; t < layout->ntasks; t++) {
		enum dlrt_role r = plan->task[t].role;

		plan->task[t].role_index = plan->role_count[r]++;
	}
	return 0;
}

void dlrt_plan_free(struct dlrt_plan *plan)
{
	free(plan->task);
	memset(plan, 0, sizeof(*plan));
}

int dlrt_plan_task_env(const struct dlrt_plan *plan, uint32_t rank,
		       const struct dlrt_step_info *step, const struct dlrt_addrs *addrs,
		       struct dlrt_env *env, struct dlrt_err *err)
{
	const struct dlrt_layout *l = plan->layout;
	const struct dlrt_task_role *tr = &plan->task[rank];
	uint32_t node = l->task_node[rank];

	dlrt_env_set(env, "DLRT_RUNTIME", "%s", plan->runtime->name);
	dlrt_env_set(env, "DLRT_ROLE", "%s", dlrt_role_name(tr->role));
	dlrt_env_set(env, "DLRT_ROLE_INDEX", "%u", tr->role_index);
	dlrt_env_set(env, "DLRT_ROLE_SIZE", "%u", plan->role_count[tr->role]);
	dlrt_env_set(env, "DLRT_RANK", "%u", rank);
	dlrt_env_set(env, "DLRT_WORLD_SIZE", "%u", l->ntasks);
	dlrt_env_set(env, "DLRT_NODE_RANK", "%u", node);
	dlrt_env_set(env, "DLRT_NUM_NODES", "%u", l->nnodes);
	dlrt_env_set(env, "DLRT_NODE_NAME", "%s", l->nodes.names[node]);
	dlrt_env_set(env, "DLRT_LOCAL_RANK", "%u", l->task_local[rank]);
	dlrt_env_set(env, "DLRT_LOCAL_SIZE", "%u", l->node_ntasks[node]);
	dlrt_env_set(env, "DLRT_CROSS_RANK", "%u", tr->cross_rank);
	dlrt_env_set(env, "DLRT_CROSS_SIZE", "%u", tr->cross_size);
	dlrt_env_set(env, "DLRT_ATTEMPT", "%u", step->restart_count);
	if (plan->opts->verbose)
		dlrt_env_set(env, "DLRT_VERBOSE", "1");
	if (addrs && addrs->valid)
		dlrt_env_set(env, "DLRT_NODE_ADDR", "%s", addrs->node_ip);
	plan->runtime->task_env(plan, rank, step, addrs, env);
	return dlrt_env_check(env, err);
}

bool dlrt_plan_companion(const struct dlrt_plan *plan, uint32_t rank, struct dlrt_companion *c)
{
	struct dlrt_companion none;

	if (!c)
		c = &none;
	memset(c, 0, sizeof(*c));
	return plan->runtime && plan->runtime->companion && rank < plan->layout->ntasks &&
	       plan->runtime->companion(plan, rank, c);
}
