/* contcheck.h - whether a step's command starts each task in a container that
 * cuts it off from what dlrt gives it (docs/containers.md).
 *
 * dlrt's tasks reach their node's relay on 127.0.0.1 and their peers on the
 * nodes' addresses, and learn both from their environment. A container
 * runtime that gives the task its own network namespace (rootless Podman's
 * or Docker's default network, Apptainer's --net) makes every one of those
 * connections fail inside, where the frameworks retry until their own
 * timeout; one that resets the environment (Podman without --env-host,
 * Apptainer's --cleanenv/--containall) hides the variables. That can be told
 * from outside the container only by the command line that starts it: this
 * reads the task's argv (as srun got it) and names the first such case, with
 * its fix. DLRT_CONTAINER_CHECK=no in the job's environment skips it (a
 * network shared some other way). Charliecloud's ch-run and Slurm's srun --container (the bundle's
 * config.json is the site's) keep the node's network and pass the
 * environment: nothing to say. Pure: no I/O.
 */
#ifndef DLRT_CONTCHECK_H
#define DLRT_CONTCHECK_H

#include <stddef.h>

#include "common/dlrt_err.h"

/* 0 when argv (argc entries) starts no container, or one that keeps the
 * node's network and the task's environment; -1 with one line in err naming
 * the runtime, the cause and the fix. */
int dlrt_contcheck_argv(size_t argc, const char *const *argv, struct dlrt_err *err);

#endif
