/* failfast.c - the first failing task of a ps-lite step ends the step.
 *
 * ps-lite's roles wait forever for a peer that died, so a killed scheduler,
 * a scheduler whose port was taken or a worker that raised an exception would
 * leave the step hanging until its time limit (runtime/failfast.h). Slurm tells
 * slurmstepd (as root) about every task's end in slurm_spank_task_exit: at the
 * first failure on its node, dlrt prints one line naming the role and task
 * (slurmstepd's stderr is task 0's, so the line reaches srun) and ends the
 * step the way a user would, with scancel as the job's user: SIGTERM to every
 * task of the step, SIGKILL DLRT_FAILFAST_KILL_AFTER_S later for those that
 * ignore it. Deaths by SIGTERM/SIGINT/SIGHUP are never reported: they are
 * how steps end (this very cancel, scancel, Ctrl-C), not a cause.
 *
 * Not reported either: tasks that dlrt itself failed before exec (a failed
 * address exchange, a user_init error), which already printed their line.
 * They say so through a close-on-exec pipe created in init_post_opt, in
 * slurmstepd's own process (where the tasks fork; user_init may run in a child
 * of it: plugin.h, struct dlrt_stepd_pipe), so the program never sees it. A runtime's companion process (struct
 * dlrt_companion) is watched by its supervisor, its task (companion.c),
 * which reports for that task itself too.
 */
#include <fcntl.h>
#include <slurm/spank.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/failfast.h"
#include "hetstep.h"
#include "plugin.h"
#include "common/proc.h"

#define END_STEP_WAIT_S 10 /* scancel asking slurmctld to signal the step */

static int prexec_pipe[2] = { -1, -1 };
static bool reported; /* this node already reported a failure and ended the step */

static bool watching(void)
{
	const struct dlrt_plugin *pl = &dlrt_plugin;

	return pl->active && pl->opts.runtime && pl->opts.runtime->end_step_on_failure &&
	       !pl->opts.dry_run;
}

void dlrt_failfast_post_opt(void)
{
	if (watching() && prexec_pipe[0] < 0 &&
	    pipe2(prexec_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		prexec_pipe[0] = prexec_pipe[1] = -1;
}

void dlrt_failfast_prexec_failed(void)
{
	if (prexec_pipe[1] >= 0 && write(prexec_pipe[1], "x", 1) < 0) {
		/* best effort: at worst the failure is reported twice */
	}
}

static bool dlrt_failed_here(void)
{
	char buf[64];

	return prexec_pipe[0] >= 0 && read(prexec_pipe[0], buf, sizeof(buf)) > 0;
}

/* Appends "NAME=VALUE" from the job's environment to env[*n] if present. */
static void keep_var(char **job_env, const char *name, char **env, size_t *n, char *store,
		     size_t len)
{
	size_t k = strlen(name);

	for (char **e = job_env; e && *e; e++) {
		if (strncmp(*e, name, k) || (*e)[k] != '=')
			continue;
		if (strlen(*e) + sizeof(":/usr/bin:/bin:/usr/local/bin") < len) {
			snprintf(store, len, "%s%s", *e,
				 !strcmp(name, "PATH") ? ":/usr/bin:/bin:/usr/local/bin" : "");
			env[(*n)++] = store;
		}
		return;
	}
}

void dlrt_failfast_end_step(char **job_env, const struct dlrt_proc_cred *cred)
{
	/* The SIGTERM is asked for before this returns (slurmstepd may end this
	 * node's part of the step, killing what it started, right after); the
	 * SIGKILL follows from a background shell that has left the step's
	 * process tree. The helper is in that tree, so it receives the SIGTERM
	 * it asks for: it ignores it (inherited by scancel and sleep). */
	static const char script[] =
		"trap '' TERM INT HUP; scancel -Q --signal=TERM $1; "
		"(sleep \"$2\"; exec scancel -Q --signal=KILL $1) </dev/null >/dev/null 2>&1 &";
	/* $1 unquoted: "JOB.STEP", or one per component of a heterogeneous
	 * step (hetstep.h), made of digits, dots and spaces only. */
	char step[512], grace[16], conf[4096], path[4096];
	char *argv[] = { "sh", "-c", (char *)script, "dlrt-end-step", step, grace, NULL };
	char *env[4] = { NULL };
	/* As the job's user (never root: the drop refuses uid 0), bounded. */
	struct dlrt_proc_spec spec = { .cred = cred, .argv = argv, .envp = env,
				       .timeout_ms = END_STEP_WAIT_S * 1000 };
	struct dlrt_proc_result res;
	struct dlrt_err err;
	size_t n = 0;

	dlrt_hetstep_step_ids(step, sizeof(step), job_env, dlrt_plugin.step.job_id,
			      dlrt_plugin.step.step_id);
	snprintf(grace, sizeof(grace), "%d", DLRT_FAILFAST_KILL_AFTER_S);
	keep_var(job_env, "SLURM_CONF", env, &n, conf, sizeof(conf));
	keep_var(job_env, "PATH", env, &n, path, sizeof(path));
	if (!n || strncmp(env[n - 1], "PATH=", 5))
		env[n++] = "PATH=/usr/bin:/bin:/usr/local/bin";
	argv[0] = "/bin/sh";
	/* Best effort: the line naming the failure is out already; at worst the
	 * step runs to its time limit, as without dlrt. */
	dlrt_proc_run(&spec, "scancel", NULL, &res, &err);
}

void dlrt_failfast_task_exit(spank_t sp)
{
	const struct dlrt_plugin *pl = &dlrt_plugin;
	char line[512];
	uint32_t rank = 0;
	int status = 0;
	struct dlrt_proc_cred cred = { 0 };
	gid_t *groups = NULL;

	if (!watching() || reported || pl->deferred_rc)
		return;
	if (spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS ||
	    dlrt_task_rank(sp, &rank) < 0 ||
	    rank >= pl->layout.ntasks || !dlrt_failfast_is_failure(status))
		return;
	if (dlrt_failed_here()) {
		reported = true; /* dlrt's own line is out; the other tasks time out */
		return;
	}
	/* A task with a companion is their supervisor: it has reported
	 * whatever failed, itself or the companion (companion.c). */
	if (dlrt_plan_companion(&pl->plan, rank, NULL))
		return;
	if (spank_get_item(sp, S_JOB_UID, &cred.uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &cred.gid) != ESPANK_SUCCESS)
		return;
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &groups, &cred.ngroups) != ESPANK_SUCCESS)
		cred.ngroups = 0;
	cred.groups = groups;
	reported = true;
	dlrt_failfast_message(&pl->plan, rank, false, status, line, sizeof(line));
	slurm_error("dlrt: %s", line);
	dlrt_failfast_end_step(dlrt_task_environ(sp), &cred);
}
