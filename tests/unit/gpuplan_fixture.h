/* gpuplan_fixture.h - the GPU planner's unit tests' shared helpers
 * (test_gpuplan.c, test_gpuplan_solver.c). Strings returned are static:
 * valid until the next call. */
#ifndef DLRT_GPUPLAN_FIXTURE_H
#define DLRT_GPUPLAN_FIXTURE_H

#include "gpubind/gpuplan.h"

/* DLRT_SRCDIR/tests/fixtures/topo/NAME. */
const char *fixture_path(const char *name);
/* The fixture's topology; NULL and a TAP diagnostic when hwloc refuses it. */
struct dlrt_gpuplan_topo *fixture_load(const char *name);
/* Plans `n` tasks with the given CPU lists; NULL and a diagnostic on error
 * (the error text is left in *err for the tests that expect failure). */
struct dlrt_gpuplan *fixture_plan(const struct dlrt_gpuplan_topo *t, const char *step,
				  const char *cvd, const char *bindspec, const char *const *cpus,
				  int n, struct dlrt_err *err);
/* "6|7|4,5": each task's visible (nodewide: node-wide) GPU list. */
const char *plan_gpus(const struct dlrt_gpuplan *p, int nodewide);
/* "mlx5_0/mlx5_0|...": each task's NICs and its netdev. */
const char *plan_nics(const struct dlrt_gpuplan *p, const struct dlrt_gpuplan_topo *t);
/* "NAME=value;..." the plan gives task i. */
const char *plan_env(const struct dlrt_gpuplan *p, const struct dlrt_gpuplan_topo *t, int i);
/* The error is one line, and not empty. */
int err_is_one_line(const struct dlrt_err *e);

#endif
