/* companion.c - one more process next to a task, running the step's own
 * command (struct dlrt_companion: a runtime's per-task start hook, e.g.
 * a parameter-server scheduler as its own launcher starts it, so -n counts the other
 * roles only).
 *
 * Runs at the very end of the task's slurm_spank_task_init, as the user, once
 * the address exchange gave the task the root's address and port. The task
 * process forks twice: the companion (the same argv, the task's environment
 * with the runtime's variables replaced, without the task's PMIx identity),
 * and the child that returns into slurmstepd's exec path and becomes the
 * task's own program. This process, which Slurm waits for as the task, stays
 * as their supervisor:
 *   - both write to the task's stdout/stderr, so the companion's output is seen;
 *   - it exits only when both have ended, so the companion outlives every
 *     other task (a scheduler may be needed until the last one finalized)
 *     and the step ends with it; the companion dies with it (PR_SET_PDEATHSIG);
 *   - the first of the two that fails (runtime/failfast.h) is reported in one
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

#include "runtime/failfast.h"
#include "common/exitlike.h"
#include "exchange.h"
#include "plugin.h"
#include "common/proc.h"

/* After the step was ended: how long to wait for the other child. */
#define AFTER_FAILURE_WAIT_S (DLRT_FAILFAST_KILL_AFTER_S + 7)

static bool pmix_var(const char *e)
{
	return !strncmp(e, "PMIX_", 5) || !strncmp(e, "PMI_", 4) || !strncmp(e, "OMPI_", 5);
}

/* The task's environment as the companion's: the runtime's variables replaced. */
static char **companion_env(spank_t sp, uint32_t rank, const struct dlrt_companion *c,
			    struct dlrt_err *err)
{
	const char *const *set = c->env;
	size_t nset = 0;
	char **env = NULL, **out;
	size_t n = 0, k = 0;

	while (set && set[nset])
		nset++;
	env = dlrt_task_environ(sp);
	if (!env)
		return dlrt_err_set(err, "cannot read task %u's environment to start %s", rank,
				    c->what), NULL;
	while (env[n])
		n++;
	out = calloc(n + nset + 1, sizeof(*out));
	if (!out)
		return dlrt_err_set(err, "out of memory starting %s", c->what), NULL;
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

static void __attribute__((noreturn)) supervise(spank_t sp, uint32_t rank,
						const struct dlrt_companion *c, pid_t comp,
						pid_t prog)
{
	static const int quiet[] = { SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGTSTP,
				     SIGTTIN, SIGTTOU };
	const struct dlrt_plan *plan = &dlrt_plugin.plan;
	int comp_status = -1, prog_status = -1, status;
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
	prctl(PR_SET_NAME, c->proc_name ? c->proc_name : "dlrt-companion", 0, 0, 0);
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
	env = dlrt_task_environ(sp);
	while (comp_status == -1 || prog_status == -1) {
		pid_t w = waitpid(-1, &status, 0);
		bool is_comp = w == comp;

		if (w < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: nothing left to wait for */
		}
		if (w != comp && w != prog)
			continue; /* a process the program left behind */
		if (is_comp)
			comp_status = status;
		else
			prog_status = status;
		if (!dlrt_failfast_is_failure(status) || ending)
			continue;
		if (step_ending(&ends, 1000)) {
			ending = true;
			continue;
		}
		/* The first failure: name it, end the step, collect the other. */
		dlrt_failfast_message(plan, rank, is_comp, status, line, sizeof(line));
		fprintf(stderr, "dlrt: %s\n", line);
		fflush(stderr);
		dlrt_failfast_end_step(env, &(struct dlrt_proc_cred){ .uid = uid, .gid = gid });
		if (is_comp && prog_status == -1)
			prog_status = wait_bounded(prog, AFTER_FAILURE_WAIT_S * 1000);
		else if (!is_comp && comp_status == -1)
			comp_status = wait_bounded(comp, AFTER_FAILURE_WAIT_S * 1000);
		if (is_comp)
			_exit(1);
		dlrt_exit_like(status);
	}
	if (comp_status != -1 && prog_status != -1 && dlrt_failfast_is_failure(comp_status) &&
	    !dlrt_failfast_is_failure(prog_status))
		_exit(1); /* the companion failed after the step was ended: still a failure */
	dlrt_exit_like(prog_status == -1 ? 1 << 8 : prog_status);
}

int dlrt_companion_task_start(spank_t sp, uint32_t rank, struct dlrt_err *err)
{
	struct dlrt_companion c;
	char path[4096];
	int argc = 0;
	char **argv = NULL, **env;
	sigset_t all, old;
	pid_t comp, prog, parent = getpid();

	if (!dlrt_plan_companion(&dlrt_plugin.plan, rank, &c))
		return 0;
	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1 ||
	    !dlrt_task_program_path(sp, path, sizeof(path)))
		return dlrt_err_set(err, "cannot find the step's program to start %s: give srun a "
				    "path or a program on the job's PATH", c.what);
	env = companion_env(sp, rank, &c, err);
	if (!env)
		return -1;
	fflush(stdout);
	fflush(stderr);
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	comp = fork();
	if (comp < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		free(env);
		return dlrt_err_errno(err, errno, "cannot fork %s", c.what);
	}
	if (comp == 0) {
		/* Dies with its supervisor, whatever kills it. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(121);
		sigprocmask(SIG_SETMASK, &old, NULL);
		execve(path, argv, env);
		fprintf(stderr, "dlrt: cannot run %s %s: %s\n", c.what, path, strerror(errno));
		_exit(127);
	}
	free(env);
	prog = fork();
	if (prog < 0) {
		kill(comp, SIGKILL);
		waitpid(comp, NULL, 0);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return dlrt_err_errno(err, errno, "cannot fork task %u next to %s", rank, c.what);
	}
	if (prog == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return 0; /* becomes the task's own program */
	}
	dlrt_verbose(rank, "%s started (pid %d), task %u's program is pid %d", c.what,
		     (int)comp, rank, (int)prog);
	sigprocmask(SIG_SETMASK, &old, NULL);
	supervise(sp, rank, &c, comp, prog);
}
