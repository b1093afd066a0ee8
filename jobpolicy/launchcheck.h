/* launchcheck.h - whether a step's command is a trainer's own launcher, which
 * would make a world of its own inside each task (docs/trainers.md).
 *
 * DeepSpeed's `deepspeed`, Hugging Face's `accelerate launch` and Lightning's
 * `fabric run` / `lightning run` each start worker processes of their own and
 * give them a rank, a world size and a rendezvous of their own (a hostfile and
 * ssh, or a torchrun with --main_process_ip/--master_addr and a fixed port).
 * Run by srun under dlrt, every task starts such a world on its node: the
 * step's ranks, dlrt's store and its owner-only relay go unused, and at best
 * each node trains alone. The scripts themselves need none of it: their
 * libraries read the variables dlrt sets. This reads the task's argv (as srun
 * got it) and names the launcher and the command that does the same under
 * dlrt. DLRT_LAUNCHER_CHECK=no in the job's environment skips it (a launcher
 * wired up by hand on purpose). Pure: no I/O.
 */
#ifndef DLRT_LAUNCHCHECK_H
#define DLRT_LAUNCHCHECK_H

#include <stddef.h>

#include "common/dlrt_err.h"

/* 0 when argv (argc entries) does not start a trainer's launcher; -1 with one
 * line in err naming the launcher, the conflict and the fix. */
int dlrt_launchcheck_argv(size_t argc, const char *const *argv, struct dlrt_err *err);

#endif
