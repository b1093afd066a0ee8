/* mxsched.c - --dl-mxnet-sched=extra: ps-lite's scheduler as one more
 * process next to task 0, running the step's own command (as dmlc's launcher
 * starts it), so -n counts servers and workers only.
 *
 * Runs at the very end of task 0's slurm_spank_task_init, as the user, once
 * the address exchange gave task 0 the scheduler's address and port. The task
 * process forks twice: the scheduler (the same argv, the task's environment
 * with DMLC_ROLE=scheduler, without the PMIx identity of task 0), and the
 * child that returns into slurmstepd's exec path and becomes task 0's own
 * program. This process, which Slurm waits for as task 0, stays as their
 * supervisor:
 *   - both write to task 0's stdout/stderr, so the scheduler's output is seen;
 *   - it exits only when both have ended, so the scheduler outlives every
 *     server and worker (ps-lite needs it until the last one finalized) and
 *     the step ends with it; the scheduler dies with it (PR_SET_PDEATHSIG);
 *   - the first of the two that fails (common/failfast.h) is reported in one
 *     line naming it, and the step is ended at once (failfast.c).
 * Like the log relay (logs.c) it does not die of the signals Slurm sends the
 * step: both children get them too, and it reports what they did. A child
 * that fails within a second of such a signal is not reported: the step was
 * already being ended, and its peers vanished.
 */
#include <errno.h>
#include <signal.h>
#include <slurm/spank.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "failfast.h"
#include "exitlike.h"
#include "plugin.h"
#include "proc.h"

/* After the step was ended: how long to wait for the other child. */
#define AFTER_FAILURE_WAIT_S (DLRT_FAILFAST_KILL_AFTER_S + 7)

static bool pmix_var(const char *e)
{
	return !strncmp(e, "PMIX_", 5) || !strncmp(e, "PMI_", 4) || !strncmp(e, "OMPI_", 5);
}

/* Task 0's environment as the scheduler's: its role variables replaced. */
static char **scheduler_env(spank_t sp, struct dlrt_err *err)
{
	static const char *const set[] = { "DMLC_ROLE=scheduler", "DLRT_ROLE=scheduler",
					   "DLRT_ROLE_INDEX=0", "DLRT_ROLE_SIZE=1" };
	const size_t nset = sizeof(set) / sizeof(*set);
	char **env = NULL, **out;
	size_t n = 0, k = 0;

	if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS || !env)
		return dlrt_err_set(err, "cannot read task 0's environment to start the extra mxnet "
				    "scheduler"), NULL;
	while (env[n])
		n++;
	out = calloc(n + nset + 1, sizeof(*out));
	if (!out)
		return dlrt_err_set(err, "out of memory starting the extra mxnet scheduler"), NULL;
	for (size_t i = 0; i < n; i++) {
		bool replaced = false;

		for (size_t j = 0; j < nset && !replaced; j++) {
			size_t len = strcspn(set[j], "=") + 1;

			replaced = !strncmp(env[i], set[j], len);
		}
		if (!replaced && !pmix_var(env[i]))
			out[k++] = env[i];
	}
	for (size_t j = 0; j < nset; j++)
		out[k++] = (char *)set[j];
	out[k] = NULL;
	return out;
}

/* Waits for `pid` at most `ms` (then SIGKILLs it); returns its status. */
static int wait_bounded(pid_t pid, int ms)
{
	int status;

	if (dlrt_proc_wait(pid, dlrt_now_ms() + ms, &status) == 0) {
		kill(pid, SIGKILL);
		dlrt_proc_wait(pid, dlrt_now_ms() + DLRT_PROC_GRACE_MS, &status);
	}
	return status == -1 ? 0 : status;
}

/* Whether Slurm is ending the step (SIGTERM, SIGINT or SIGHUP reached this
 * process, which keeps them blocked), waiting up to `ms` for one. A child that
 * fails right after another node's failure ended the step is a consequence:
 * its peers vanished. The grace covers the time the cancel takes to arrive. */
static bool step_ending(const sigset_t *ends, int ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };
	int64_t end = dlrt_now_ms() + ms;

	for (;;) {
		int sig = sigtimedwait(ends, NULL, &t);

		if (sig > 0)
			return true;
		if (errno != EINTR)
			return false;
		ms = (int)(end - dlrt_now_ms());
		if (ms <= 0)
			return false;
		t = (struct timespec){ ms / 1000, (long)(ms % 1000) * 1000000L };
	}
}

static void __attribute__((noreturn)) supervise(spank_t sp, pid_t sched, pid_t prog)
{
	static const int quiet[] = { SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGTSTP,
				     SIGTTIN, SIGTTOU };
	const struct dlrt_plan *plan = &dlrt_plugin.plan;
	int sched_status = -1, prog_status = -1, status;
	bool ending = false;
	char line[512];
	char **env = NULL;
	uid_t uid = getuid();
	gid_t gid = getgid();
	sigset_t ends;

	/* Slurm signals every process of the step, so both children get its
	 * signals themselves; this one only notes that the step is ending. Its
	 * name must not stay "slurmstepd": proctrack/linuxproc never signals
	 * processes of that name (they are stepds), so it would not see the end. */
	prctl(PR_SET_NAME, "dlrt-mxsched", 0, 0, 0);
	for (size_t i = 0; i < sizeof(quiet) / sizeof(*quiet); i++)
		signal(quiet[i], SIG_IGN);
	sigemptyset(&ends);
	sigaddset(&ends, SIGTERM);
	sigaddset(&ends, SIGINT);
	sigaddset(&ends, SIGHUP);
	sigprocmask(SIG_BLOCK, &ends, NULL);
	/* Blocked, not ignored: an ignored signal is discarded at once, and the
	 * task may inherit SIG_IGN from slurmstepd. */
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	spank_get_item(sp, S_JOB_ENV, &env);
	while (sched_status == -1 || prog_status == -1) {
		pid_t w = waitpid(-1, &status, 0);
		bool is_sched = w == sched;

		if (w < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: nothing left to wait for */
		}
		if (w != sched && w != prog)
			continue; /* a process the program left behind */
		if (is_sched)
			sched_status = status;
		else
			prog_status = status;
		if (!dlrt_failfast_is_failure(status) || ending)
			continue;
		if (step_ending(&ends, 1000)) {
			ending = true;
			continue;
		}
		/* The first failure: name it, end the step, collect the other. */
		dlrt_failfast_message(plan, 0, is_sched, status, line, sizeof(line));
		fprintf(stderr, "dlrt: %s\n", line);
		fflush(stderr);
		dlrt_failfast_end_step(env, &(struct dlrt_proc_cred){ .uid = uid, .gid = gid });
		if (is_sched && prog_status == -1)
			prog_status = wait_bounded(prog, AFTER_FAILURE_WAIT_S * 1000);
		else if (!is_sched && sched_status == -1)
			sched_status = wait_bounded(sched, AFTER_FAILURE_WAIT_S * 1000);
		if (is_sched)
			_exit(1);
		dlrt_exit_like(status);
	}
	if (sched_status != -1 && prog_status != -1 && dlrt_failfast_is_failure(sched_status) &&
	    !dlrt_failfast_is_failure(prog_status))
		_exit(1); /* the scheduler failed after the step was ended: still a failure */
	dlrt_exit_like(prog_status == -1 ? 1 << 8 : prog_status);
}

int dlrt_mxsched_task_start(spank_t sp, uint32_t rank, struct dlrt_err *err)
{
	char path[4096];
	int argc = 0;
	char **argv = NULL, **env;
	sigset_t all, old;
	pid_t sched, prog, parent = getpid();

	if (!dlrt_plugin.plan.extra_scheduler || rank != 0)
		return 0;
	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1 ||
	    !dlrt_stepd_program_path(sp, path, sizeof(path)))
		return dlrt_err_set(err, "cannot find the step's program to start the extra mxnet "
				    "scheduler: give srun a path or a program on the job's PATH");
	env = scheduler_env(sp, err);
	if (!env)
		return -1;
	fflush(stdout);
	fflush(stderr);
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	sched = fork();
	if (sched < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		free(env);
		return dlrt_err_errno(err, errno, "cannot fork the extra mxnet scheduler");
	}
	if (sched == 0) {
		/* Dies with its supervisor, whatever kills it. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(121);
		sigprocmask(SIG_SETMASK, &old, NULL);
		execve(path, argv, env);
		fprintf(stderr, "dlrt: cannot run the extra mxnet scheduler %s: %s\n", path,
			strerror(errno));
		_exit(127);
	}
	free(env);
	prog = fork();
	if (prog < 0) {
		kill(sched, SIGKILL);
		waitpid(sched, NULL, 0);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return dlrt_err_errno(err, errno, "cannot fork task 0 next to the extra mxnet "
				      "scheduler");
	}
	if (prog == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return 0; /* becomes task 0's program */
	}
	dlrt_verbose(rank, "extra mxnet scheduler started (pid %d), task 0's program is pid %d",
		     (int)sched, (int)prog);
	sigprocmask(SIG_SETMASK, &old, NULL);
	supervise(sp, sched, prog);
}
