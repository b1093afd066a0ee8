/* progcheck.c - whether the step's program links MPI, asked without letting
 * the user's path stall root.
 *
 * slurmstepd asks in user_init (its main process, still root underneath the
 * job's effective uid), before any task exists: the answer decides whether an
 * optional node service starts and whether the tasks take the address
 * exchange (exchange.c). The program's path is the user's: a FIFO there kept
 * slurmstepd asleep in open() (the job stuck COMPLETING past scancel), a file
 * on a filesystem that does not answer (a user's FUSE mount, a hung NFS
 * server) would do the same in any lookup. So a child that became the job's
 * user (common/proc.h) finds the program on the job's PATH and reads its ELF
 * header (exchange/elfneeds.c: non-blocking open, regular files only, bounded
 * size); slurmstepd only waits for its answer, with a deadline. The answer is
 * kept: the tasks, forked later, inherit it, so every task of the node decides
 * as user_init did. A task that asks with nothing kept (it runs as the user
 * already) reads the file itself.
 */
#include <errno.h>
#include <slurm/spank.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/proc.h"
#include "exchange.h"
#include "exchange/elfneeds.h"
#include "plugin.h"

/* Exit codes of the child: the answer. */
#define PROG_PLAIN 0 /* found, does not link MPI (or not ELF) */
#define PROG_MPI   10
#define PROG_NONE  11 /* not found: the task's exec will say so */

/* What a lookup of the program may take, as the job's user. */
#define PROG_CHECK_MS 10000

static struct {
	bool known;
	int answer;        /* PROG_* */
	char path[4096];   /* the program found, for the task's message */
} kept;

/* In the child, as the job's user: the path on stdout, the answer as exit code. */
static int check_child(void *arg)
{
	char path[4096];
	size_t len, off = 0;

	if (!dlrt_task_program_path(arg, path, sizeof(path)))
		return PROG_NONE;
	len = strlen(path);
	while (off < len) {
		ssize_t n = write(1, path + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	return dlrt_program_uses_mpi(path) ? PROG_MPI : PROG_PLAIN;
}

static int check_as_user(spank_t sp, struct dlrt_err *err)
{
	struct dlrt_proc_cred cred = { 0 };
	gid_t *groups = NULL;
	struct dlrt_proc_spec spec = { .cred = &cred, .fn = check_child, .arg = sp,
				       .timeout_ms = PROG_CHECK_MS, .out_max = sizeof(kept.path) - 1 };
	struct dlrt_proc_result res;
	struct dlrt_buf out;
	struct dlrt_err e;
	char why[64];
	int rc = -1;

	if (spank_get_item(sp, S_JOB_UID, &cred.uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &cred.gid) != ESPANK_SUCCESS)
		return dlrt_err_set(err, "cannot read the job's user from Slurm to look at the "
				    "step's program: report this Slurm version");
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &groups, &cred.ngroups) != ESPANK_SUCCESS)
		cred.ngroups = 0;
	cred.groups = groups;
	dlrt_buf_init(&out, sizeof(kept.path));
	if (dlrt_proc_run(&spec, "the look at the step's program", &out, &res, &e) < 0) {
		if (res.timed_out)
			dlrt_err_set(err, "looking up the step's program as the job's user took over "
				     "%d s (is it, or a folder of the job's PATH, on a filesystem "
				     "that does not answer?): give srun a program on a filesystem "
				     "that answers", PROG_CHECK_MS / 1000);
		else
			dlrt_err_set(err, "%s, so the step's program could not be looked at", e.msg);
	} else if (!WIFEXITED(res.status) || (WEXITSTATUS(res.status) != PROG_PLAIN &&
					      WEXITSTATUS(res.status) != PROG_MPI &&
					      WEXITSTATUS(res.status) != PROG_NONE)) {
		dlrt_err_set(err, "the look at the step's program as the job's user failed (%s): "
			     "check the node's slurmd log",
			     dlrt_proc_status_text(res.status, why, sizeof(why)));
	} else {
		kept.answer = WEXITSTATUS(res.status);
		snprintf(kept.path, sizeof(kept.path), "%.*s", (int)out.len,
			 (const char *)dlrt_buf_head(&out));
		kept.known = true;
		rc = 0;
	}
	dlrt_buf_free(&out);
	return rc;
}

int dlrt_stepd_program_check(spank_t sp, struct dlrt_err *err)
{
	uid_t job_uid = 1;
	char mode[16] = "";

	if (kept.known)
		return 0;
	/* DLRT_EXCHANGE decides without the program (exchange.c): nothing to look at. */
	dlrt_task_getenv(sp, "DLRT_EXCHANGE", mode, sizeof(mode));
	if (!strcmp(mode, "none") || !strcmp(mode, "yes") || !strcmp(mode, "pmix")) {
		kept.answer = PROG_PLAIN;
		kept.known = true;
		return 0;
	}
	spank_get_item(sp, S_JOB_UID, &job_uid);
	if ((getuid() != 0 && geteuid() != 0) || job_uid == 0) {
		/* Already the user (a task), or root's own job and path: nothing
		 * of root's to protect from the user. */
		kept.answer = PROG_NONE;
		if (dlrt_task_program_path(sp, kept.path, sizeof(kept.path)))
			kept.answer = dlrt_program_uses_mpi(kept.path) ? PROG_MPI : PROG_PLAIN;
		kept.known = true;
		return 0;
	}
	return check_as_user(sp, err);
}

bool dlrt_stepd_program_links_mpi(spank_t sp, const char **path)
{
	struct dlrt_err err;

	*path = kept.path;
	if (dlrt_stepd_program_check(sp, &err) < 0)
		return false; /* user_init already failed the step with err */
	return kept.answer == PROG_MPI;
}
