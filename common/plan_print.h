/* plan_print.h - the role table that `srun --dl-dry-run` prints. */
#ifndef DLRT_PLAN_PRINT_H
#define DLRT_PLAN_PRINT_H

#include <stdio.h>

#include "runtime.h"

/* Writes the step summary, then one row per task (task, node, local rank, role,
 * role index) followed by the environment that task would get. */
int dlrt_plan_print(FILE *f, const struct dlrt_plan *plan, const struct dlrt_step_info *step,
		    struct dlrt_err *err);

#endif
