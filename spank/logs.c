/* logs.c - --dl-log-dir: every task's output also lands in
 * DIR/<jobid>/<stepid>/<role>-<index>.log, one stamped line per output line.
 *
 * Runs at the end of slurm_spank_task_init, in the task process, as the user:
 * slurmstepd has already dropped to the job's uid, so the folders and the file
 * are the user's (checked below: never create them as root). The task forks: the
 * child returns into slurmstepd's exec path and becomes the program, with its
 * stdout and stderr on pipes; this process, which slurmstepd waits for as the
 * task, relays the pipes (logs/logrelay.c) and then exits with the program's
 * own status or signal, so srun, sacct and --dl-retries see what the program did.
 * With a terminal (srun --pty) nothing is redirected: the shell stays interactive.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <slurm/spank.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "logs/logrelay.h"
#include "common/exitlike.h"
#include "plugin.h"
#include "common/privdir.h"

#define LOG_DRAIN_MS 2000 /* output of daemonized grandchildren after the program exits */

/* DIR (a relative --dl-log-dir is relative to the job's working directory). */
static int log_base(spank_t sp, char *out, size_t len, struct dlrt_err *err)
{
	const struct dlrt_plugin *pl = &dlrt_plugin;
	char pwd[1024] = "";
	int n;

	if (pl->opts.log_dir[0] != '/' &&
	    (dlrt_task_getenv(sp, "PWD", pwd, sizeof(pwd)) < 0 || pwd[0] != '/'))
		return dlrt_err_set(err, "--dl-log-dir=%s is relative and the job has no working "
				    "directory: give an absolute path", pl->opts.log_dir);
	n = snprintf(out, len, "%s%s%s", pwd, pwd[0] ? "/" : "", pl->opts.log_dir);
	if (n < 0 || (size_t)n >= len)
		return dlrt_err_set(err, "--dl-log-dir=%s: path too long", pl->opts.log_dir);
	return 0;
}

/* Opens DIR/<job>/<step>/<leaf> for appending: each level created as the user
 * and checked on its descriptor (common/privdir.h), so nothing another user
 * created in a shared DIR can receive the task's output. When someone else
 * took DIR/<job> first, the job's folder is DIR/<job>.<uid>.<random> instead
 * (dlrt_privdir_job): the job runs, and task 0 says where on its stderr. */
static int log_open(spank_t sp, uint32_t rank, const char *leaf, char *file, size_t len,
		    struct dlrt_err *err)
{
	static const char what[] = "--dl-log-dir";
	const struct dlrt_step_info *st = &dlrt_plugin.step;
	struct dlrt_privdir_jobdir jd;
	char base[2048], name[16];
	int dfd = -1, jfd = -1, sfd = -1, fd = -1;

	if (log_base(sp, base, sizeof(base), err) < 0 ||
	    (dfd = dlrt_privdir_base(base, what, err)) < 0)
		goto out;
	snprintf(name, sizeof(name), "%u", st->job_id);
	if ((jfd = dlrt_privdir_job(dfd, base, name, what, &jd, err)) < 0)
		goto out;
	if (jd.squatted[0] && rank == 0)
		fprintf(stderr, "dlrt: %s: %s; this job's logs are in %s/ instead (dlrt-logs %u "
			"finds them there)\n", what, jd.squatted, jd.path, st->job_id);
	snprintf(name, sizeof(name), "%u", st->step_id);
	snprintf(file, len, "%s/%s", jd.path, name);
	if ((sfd = dlrt_privdir_sub(jfd, name, file, what, err)) < 0)
		goto out;
	snprintf(file, len, "%s/%u/%s", jd.path, st->step_id, leaf);
	fd = dlrt_privdir_append(sfd, leaf, file, what, err);
out:
	if (sfd >= 0)
		close(sfd);
	if (jfd >= 0)
		close(jfd);
	if (dfd >= 0)
		close(dfd);
	return fd;
}

int dlrt_logs_task_start(spank_t sp, uint32_t rank, struct dlrt_err *err)
{
	static const int quiet[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
				     SIGPIPE, SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU,
				     SIGXFSZ /* a file size limit: the write fails, the log is cut */ };
	const struct dlrt_task_role *tr = &dlrt_plugin.plan.task[rank];
	struct dlrt_logrelay r = { .in = { -1, -1 }, .tee = { STDOUT_FILENO, STDERR_FILENO } };
	char file[4600], leaf[64];
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 }, status;
	uid_t uid = 0;
	sigset_t all, old;
	pid_t child;

	if (!dlrt_plugin.opts.log_dir[0] || isatty(STDOUT_FILENO))
		return 0;
	spank_get_item(sp, S_JOB_UID, &uid);
	if (geteuid() != uid || getuid() != uid)
		return dlrt_err_set(err, "--dl-log-dir: the task runs as uid %u, not as the job's "
				    "uid %u; refusing to create log files", (unsigned)geteuid(),
				    (unsigned)uid);
	snprintf(leaf, sizeof(leaf), "%s-%u.log", dlrt_role_name(tr->role), tr->role_index);
	r.file = log_open(sp, rank, leaf, file, sizeof(file), err);
	if (r.file < 0)
		return -1;
	dlrt_logrelay_init(&r, r.file, file);
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		dlrt_err_errno(err, errno, "--dl-log-dir: cannot create the output pipes");
		goto fail;
	}
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	child = fork();
	if (child < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		dlrt_err_errno(err, errno, "--dl-log-dir: cannot fork the log relay");
		goto fail;
	}
	if (child == 0) {
		/* The program: its output goes into the pipes (dup2 clears O_CLOEXEC). */
		if (dup2(out[1], STDOUT_FILENO) < 0 || dup2(errp[1], STDERR_FILENO) < 0)
			_exit(127);
		close(out[0]);
		close(out[1]);
		close(errp[0]);
		close(errp[1]);
		close(r.file);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return 0;
	}
	dlrt_verbose(rank, "output also to %s", file);
	/* The relay. Slurm signals every process of the step, so the program gets
	 * the signal itself; the relay ignores them and reports what the program did. */
	for (size_t i = 0; i < sizeof(quiet) / sizeof(*quiet); i++)
		signal(quiet[i], SIG_IGN);
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(out[1]);
	close(errp[1]);
	r.in[0] = out[0];
	r.in[1] = errp[0];
	dlrt_logrelay_note(&r, "start task %u (%s-%u) on %s, job %u step %u attempt %u, pid %d",
			   rank, dlrt_role_name(tr->role), tr->role_index,
			   dlrt_plugin.layout.nodes.names[dlrt_plugin.node_id],
			   dlrt_plugin.step.job_id, dlrt_plugin.step.step_id,
			   dlrt_plugin.step.restart_count, (int)child);
	if (dlrt_logrelay_run(&r, child, LOG_DRAIN_MS, &status) < 0)
		status = 1 << 8;
	if (WIFSIGNALED(status))
		dlrt_logrelay_note(&r, "end task %u: killed by signal %d", rank, WTERMSIG(status));
	else
		dlrt_logrelay_note(&r, "end task %u: exit %d", rank, WEXITSTATUS(status));
	dlrt_logrelay_close(&r);
	dlrt_exit_like(status);
fail:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	close(r.file);
	return -1;
}
