/* hvd_watch.h - which nodes of the step still run its tasks, asked of Slurm.
 *
 * Elastic Horovod's driver learns that a worker is gone when the process it
 * started ends. Under Slurm the driver starts nothing: it asks every node's
 * slurmd for the step's pids (slurm_job_step_get_pids, hvd_steppids.c, the
 * request behind `sstat -i`; sstat itself prints nothing once one node's
 * part of the step has ended). The answer is one line per node that still
 * runs processes of the step, "JOB.STEP|node|pid,pid", as `sstat -i -n -P`
 * prints it. A node whose tasks all ended (killed, crashed) or that is down
 * (its slurmd does not answer) has no line. The question runs in a forked
 * child watched by the driver's event loop and bounded by a timeout: the
 * driver never waits on Slurm.
 */
#ifndef DLRT_HVD_WATCH_H
#define DLRT_HVD_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "common/dlrt_err.h"
#include "hvd_plan.h"
#include "services/evloop.h"

/* Sets alive[h] for every host h of `plan` that the answer lists with at
 * least one pid (other hosts are left as they are). 0, or -1 and err for
 * text that is not such an answer (alive unchanged then). */
int dlrt_hvd_pids_parse(const char *text, size_t len, const struct dlrt_hvd_plan *plan,
			 unsigned char *alive, struct dlrt_err *err);

struct dlrt_hvd_watch;

/* Called once: ok = the child exited 0 in time, with its whole output. */
typedef void (*dlrt_hvd_watch_fn)(void *arg, int ok, const char *out, size_t len);
/* Runs in the forked child: writes the answer on fd, returns the exit code. */
typedef int (*dlrt_hvd_watch_child_fn)(int fd, void *arg);

/* Forks a child that runs child(fd, child_arg) and calls fn when its output
 * ends, or after timeout_ms (the child is killed then). */
int dlrt_hvd_watch_start(struct dlrt_hvd_watch **out, struct dlrt_evloop *loop,
			 dlrt_hvd_watch_child_fn child, void *child_arg, int64_t timeout_ms,
			 dlrt_hvd_watch_fn fn, void *arg, struct dlrt_err *err);
/* Kills a run still going and frees it; fn is not called. */
void dlrt_hvd_watch_cancel(struct dlrt_hvd_watch *w);

#endif
