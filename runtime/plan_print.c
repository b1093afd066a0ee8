#include "plan_print.h"

#include <string.h>

int dlrt_plan_print(FILE *f, const struct dlrt_plan *plan, const struct dlrt_step_info *step,
		    const struct dlrt_addrs *addrs, dlrt_env_user_fn user, void *user_ctx,
		    struct dlrt_err *err)
{
	const struct dlrt_layout *l = plan->layout;
	struct dlrt_companion comp;
	int first = 1;

	fprintf(f, "dlrt dry run: job %u step %u, runtime %s, %u task%s on %u node%s, "
		"distribution %s\n", step->job_id, step->step_id, plan->runtime->name,
		l->ntasks, l->ntasks == 1 ? "" : "s", l->nnodes, l->nnodes == 1 ? "" : "s",
		dlrt_dist_name(l->dist));
	static const enum dlrt_role order[] = { DLRT_ROLE_SCHEDULER, DLRT_ROLE_MASTER,
						DLRT_ROLE_SERVER, DLRT_ROLE_WORKER };

	fprintf(f, "roles:");
	if (dlrt_plan_companion(plan, 0, &comp)) {
		/* Not a task: dlrt starts it next to task 0 (struct dlrt_companion). */
		fprintf(f, " 1 %s (extra process on %s, next to task 0)", dlrt_role_name(comp.role),
			l->nodes.names[l->task_node[0]]);
		first = 0;
	}
	for (size_t i = 0; i < sizeof(order) / sizeof(*order); i++) {
		uint32_t n = plan->role_count[order[i]];

		if (!n)
			continue;
		fprintf(f, "%s %u %s%s", first ? "" : ",", n, dlrt_role_name(order[i]),
			n == 1 ? "" : "s");
		first = 0;
	}
	fprintf(f, "\n%-5s %-12s %-5s %-10s %-5s\n", "TASK", "NODE", "LOCAL", "ROLE", "INDEX");
	for (uint32_t t = 0; t < l->ntasks; t++) {
		struct dlrt_env env;

		fprintf(f, "%-5u %-12s %-5u %-10s %-5u\n", t, l->nodes.names[l->task_node[t]],
			l->task_local[t], dlrt_role_name(plan->task[t].role),
			plan->task[t].role_index);
		dlrt_env_init(&env);
		if (dlrt_plan_task_env(plan, t, step, addrs ? &addrs[t] : NULL, &env, err) < 0) {
			dlrt_env_free(&env);
			return -1;
		}
		if (user)
			dlrt_env_resolve(&env, user, user_ctx);
		fprintf(f, "      env:");
		for (size_t i = 0; i < env.n; i++)
			fprintf(f, " %s=%s", env.vars[i].name,
				env.vars[i].unread ? "(the user's, too long to show)" : env.vars[i].value);
		fprintf(f, "\n");
		dlrt_env_free(&env);
	}
	return 0;
}
