/* plan_print.h - the role table that `srun --dl-dry-run` prints. */
#ifndef DLRT_PLAN_PRINT_H
#define DLRT_PLAN_PRINT_H

#include <stdio.h>

#include "runtime.h"

/* Writes the step summary, then one row per task (task, node, local rank, role,
 * role index) followed by the runtime's layer of the environment that task
 * would get (env.h), with what the user exported where it wins (`user`, may
 * be NULL). The GPU plan's layer is each node's own: on a node with a plan
 * the plugin prints its tasks' whole environment after the plan. `addrs` holds one entry per task (from the
 * exchange) or is NULL when there was none. */
int dlrt_plan_print(FILE *f, const struct dlrt_plan *plan, const struct dlrt_step_info *step,
		    const struct dlrt_addrs *addrs, dlrt_env_user_fn user, void *user_ctx,
		    struct dlrt_err *err);

#endif
