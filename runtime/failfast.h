/* failfast.h - which task of a step failed first, said in one line.
 *
 * ps-lite's roles wait forever for a peer that died (docs/contracts.md,
 * mxnet): a scheduler killed with -9, a scheduler that could not bind its port,
 * a worker that raised an exception all leave the rest of the step hanging.
 * For runtimes with `end_step_on_failure` the plugin therefore ends the whole
 * step at the first failure it sees (spank/failfast.c, spank/companion.c) and
 * names the role and task in one line. This part is pure: the decision and
 * the line, shared by the plugin and the unit tests.
 */
#ifndef DLRT_FAILFAST_H
#define DLRT_FAILFAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

/* Seconds between the SIGTERM that ends the step and the SIGKILL that
 * follows for processes that ignore it. */
#define DLRT_FAILFAST_KILL_AFTER_S 3

/* Whether a wait() status is a failure that ends the step: a non-zero exit,
 * or death by a signal other than those Slurm and users end steps with
 * (SIGTERM, SIGINT, SIGHUP: they are the consequence, never the cause). */
bool dlrt_failfast_is_failure(int status);

/* "exited with status 3", "was killed by signal 9 (Killed)". */
void dlrt_failfast_describe(int status, char *buf, size_t len);

/* The one line (without "dlrt: "), e.g.
 * "mxnet scheduler (task 0 on n1) was killed by signal 9 (Killed): ending the
 *  step, since ps-lite's servers and workers would wait for it forever".
 * `rank` is the task; `extra` names its companion process (struct dlrt_companion). */
void dlrt_failfast_message(const struct dlrt_plan *plan, uint32_t rank, bool extra, int status,
			   char *buf, size_t len);

#endif
