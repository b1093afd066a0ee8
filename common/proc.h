/* proc.h - the one audited way dlrt runs something as the job's user.
 *
 * slurmstepd runs as root. Whatever dlrt starts from it on a user's behalf (a
 * node service, the fail-fast scancel, the requeue decision, the reader of a
 * --dl-topology file) goes through this module, so the privilege rules live
 * in one place:
 *   - the child drops to the job's uid, gid and supplementary groups exactly
 *     as Slurm gives them (S_JOB_UID, S_JOB_GID, S_JOB_SUPPLEMENTARY_GIDS):
 *     no NSS lookup (getpwuid, initgroups) inside slurmstepd, which could
 *     block on a directory server or see another group list than Slurm's;
 *   - real, effective and saved ids all change, and the child checks that
 *     root cannot be regained before it does anything else;
 *   - slurmstepd's descriptors (task stdio, slurmd sockets, other jobs'
 *     pipes) are closed in the child: only stdio and what is passed on live;
 *   - every wait for the child has a deadline on the monotonic clock, then
 *     SIGTERM, a grace period, SIGKILL and the reap; its output is read with
 *     the same deadline and a size cap.
 */
#ifndef DLRT_PROC_H
#define DLRT_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "clock.h"
#include "dlrt_err.h"

/* Exit codes of a child that failed before its program ran. */
#define DLRT_PROC_EXIT_DROP  120 /* could not become the job's user */
#define DLRT_PROC_EXIT_SETUP 122 /* could not set up its descriptors or folder */
#define DLRT_PROC_EXIT_EXEC  127 /* could not execute the program */

/* How long an ended child gets between SIGTERM and SIGKILL. */
#define DLRT_PROC_GRACE_MS 1000

/* The job's identity, as Slurm gives it. */
struct dlrt_proc_cred {
	uid_t uid;
	gid_t gid;
	const gid_t *groups; /* S_JOB_SUPPLEMENTARY_GIDS; may be NULL when ngroups is 0 */
	int ngroups;
};

/* Becomes uid/gid with exactly these supplementary groups, for good: setgroups,
 * setresgid and setresuid on all three ids, then checks that the ids and the
 * groups are the ones asked for, that uid is not 0 and that setresuid(0,0,0)
 * fails. A process that is not root can only "drop" to the ids it already
 * has (its groups are then left as they are). 0, or -1 with errno set (EPERM
 * when a check failed). Async-signal-safe: for the child between fork and
 * exec. */
int dlrt_proc_drop_to_user(uid_t uid, gid_t gid, const gid_t *groups, int ngroups);

/* Closes every descriptor from 3 up except the `nkeep` in keep[] (which are
 * left open, their close-on-exec flag cleared so they reach the program).
 * 0, or -1 with errno set. Async-signal-safe. */
int dlrt_proc_close_fds(const int *keep, int nkeep);

/* Waits until `deadline_ms` (dlrt_now_ms() clock) for `pid` to end.
 * 1: reaped, *status filled; 0: still running at the deadline; -1: not our
 * child any more (ECHILD: someone else reaped it). */
int dlrt_proc_wait(pid_t pid, int64_t deadline_ms, int *status);

/* Ends `pid` (and its process group with `group`): SIGTERM, DLRT_PROC_GRACE_MS
 * to exit, then SIGKILL, and reaps it. *status as from waitpid, or -1 when
 * it could not be reaped. Bounded: never waits longer than the grace period
 * plus one more. */
void dlrt_proc_end(pid_t pid, bool group, int *status);

/* What to run, for dlrt_proc_run(). */
struct dlrt_proc_spec {
	const struct dlrt_proc_cred *cred; /* NULL: the child keeps the caller's ids */
	char *const *argv;  /* the program; without a '/', searched in envp's PATH */
	char *const *envp;  /* its whole environment (nothing of slurmstepd's) */
	int (*fn)(void *arg); /* or, instead of argv: runs in the child, returns the exit code */
	void *arg;
	const char *dir;    /* working folder of the child, "/" when NULL */
	int timeout_ms;     /* the whole run, output and exit */
	size_t out_max;     /* at most this many bytes of output are kept (out != NULL) */
	bool with_stderr;   /* stderr into `out` too (else /dev/null) */
	/* Ignore SIGTERM, SIGINT and SIGHUP (kept across exec): for work that
	 * must survive Slurm ending the step it belongs to (the requeue that
	 * work itself asked for). The deadline still ends it, with SIGKILL. */
	bool ignore_end_signals;
};

struct dlrt_proc_result {
	int status;     /* the wait status, -1 when not reaped */
	bool timed_out; /* ended at the deadline */
	bool too_much;  /* ended because it wrote more than out_max */
};

/* Forks, drops to spec->cred, closes every inherited descriptor, resets the
 * signal dispositions and mask, puts stdin on /dev/null and stdout (stderr)
 * into a pipe when `out` is given (else /dev/null), then runs spec->fn or
 * execs spec->argv. The parent reads the output into `out` (appended, at most
 * spec->out_max bytes) until the deadline and reaps the child; at the
 * deadline, or past out_max, the child is ended (dlrt_proc_end). 0 when the
 * child ran to its end (res->status says how), -1 + err when it could not
 * start or had to be ended (res says why). `what` names it in errors. */
int dlrt_proc_run(const struct dlrt_proc_spec *spec, const char *what, struct dlrt_buf *out,
		  struct dlrt_proc_result *res, struct dlrt_err *err);

/* "exit 3", "killed by signal 9", or the DLRT_PROC_EXIT_* meaning. */
const char *dlrt_proc_status_text(int status, char *buf, size_t len);

#endif
