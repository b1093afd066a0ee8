/* lifecycle.c - a job that outlives its time limit and preemption
 * (--dl-signal, --dl-requeue, DLRT_CHECKPOINT_DIR; docs/checkpoint.md).
 *
 *  - user_init of every dlrt step, on every node: a page for the node's task
 *    pids (a memfd the tasks inherit mapped) and dlrt-lifecycle, the watcher,
 *    started like a node service (as the job user, ended with the step). It
 *    asks slurmctld for the job's end and preemption time and signals the
 *    tasks once the warning is due (jobpolicy/lifecycle.h).
 *  - user_init of the batch step of a job with --dl-requeue: the same watcher
 *    without tasks; it records the warning (the batch step's decision at the
 *    script's end reads it: spank/requeue.c) and requeues a job still running
 *    just before its limit.
 *  - task_init, in each task as the user: its pid, rank and role into the
 *    page (after the log relay's and the companion's forks, so the pid is the
 *    program's; the warning's signal back to its default until the program
 *    catches it), and DLRT_CHECKPOINT_DIR, created here as the user
 *    (common/privdir.h); with --dl-hang-timeout, DLRT_HEARTBEAT and
 *    PYTHONFAULTHANDLER=1 (the watcher then also ends a step that hangs).
 * Slurm's own --signal is not used: it must be given at submission (a plugin
 * cannot add it), it goes to every process of the step (dlrt's services and a
 * torchrun agent included, which die of a signal they do not handle), and on
 * 22.05 a preemption sends it only with PreemptParameters=send_user_signal.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <slurm/slurm.h>
#include <slurm/spank.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/argv.h"
#include "common/parse.h"
#include "common/privdir.h"
#include "exchange/rdvclient.h"
#include "jobpolicy/lifecycle.h"
#include "jobpolicy/warnsig.h"
#include "plugin.h"
#include "hetstep.h"

#define CKPT_ENV "DLRT_CHECKPOINT_DIR"

/* `dir` made absolute against the job's working folder; "" stays "". */
static int absolute(spank_t sp, const char *dir, char *out, size_t len)
{
	char pwd[2048];
	int n;

	if (!dir[0] || dir[0] == '/')
		n = snprintf(out, len, "%s", dir);
	else if (dlrt_task_getenv(sp, "PWD", pwd, sizeof(pwd)) == 0 && pwd[0] == '/')
		n = snprintf(out, len, "%s/%s", pwd, dir);
	else
		return -1;
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int dlrt_lifecycle_record_base(spank_t sp, char *out, size_t len)
{
	char home[2048];
	int n;

	if (dlrt_plugin.opts.log_dir[0])
		return absolute(sp, dlrt_plugin.opts.log_dir, out, len);
	if (dlrt_task_getenv(sp, "HOME", home, sizeof(home)) < 0 || home[0] != '/')
		return -1;
	n = snprintf(out, len, "%s/.dlrt/jobs", home);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The site's checkpoint_dir= is the base (the job gave no --dl-checkpoint-dir):
 * a folder every user shares, so each user has a folder of their own in it,
 * BASE/uid-<uid> (docs/checkpoint.md, "Where"). The uid, not the name: no NSS
 * lookup in slurmstepd, and a name can change. */
static bool site_base(void)
{
	return dlrt_plugin.opts.checkpoint_dir[0] && !dlrt_plugin.opts.checkpoint_dir_given;
}

static int user_folder_name(spank_t sp, char *out, size_t len)
{
	uid_t uid = 0;

	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS || uid == 0)
		return -1;
	snprintf(out, len, "uid-%u", (unsigned)uid);
	return 0;
}

int dlrt_lifecycle_ckpt_path(spank_t sp, char *base, size_t blen, char *out, size_t len)
{
	char home[2048], user[32];
	uint32_t job = 0;
	int n;

	/* One folder for every component of a heterogeneous step (hetstep.h). */
	job = dlrt_hetstep_job_id(sp);
	if (!job)
		return -1;
	if (site_base()) {
		if (user_folder_name(sp, user, sizeof(user)) < 0)
			return -1;
		n = snprintf(base, blen, "%s/%s", dlrt_plugin.opts.checkpoint_dir, user);
		if (n < 0 || (size_t)n >= blen)
			return -1;
	} else if (dlrt_plugin.opts.checkpoint_dir[0]) {
		if (absolute(sp, dlrt_plugin.opts.checkpoint_dir, base, blen) < 0)
			return -1;
	} else {
		if (dlrt_task_getenv(sp, "HOME", home, sizeof(home)) < 0 || home[0] != '/')
			return -1;
		n = snprintf(base, blen, "%s/.dlrt/checkpoints", home);
		if (n < 0 || (size_t)n >= blen)
			return -1;
	}
	n = snprintf(out, len, "%s/%u", base, job);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The node's task page, shared with the tasks (fork) and the watcher (fd). */
static int make_page(uint32_t ntasks)
{
	int fd = memfd_create("dlrt-lifecycle", MFD_CLOEXEC), hi;
	void *m;

	if (fd < 0)
		return -1;
	hi = fcntl(fd, F_DUPFD_CLOEXEC, 10);
	close(fd);
	if (hi < 0 || ftruncate(hi, sizeof(struct dlrt_lc_page)) < 0)
		goto fail;
	m = mmap(NULL, sizeof(struct dlrt_lc_page), PROT_READ | PROT_WRITE, MAP_SHARED, hi, 0);
	if (m == MAP_FAILED)
		goto fail;
	dlrt_plugin.lc_page = m;
	dlrt_plugin.lc_page->ntasks = ntasks < DLRT_LC_MAX_TASKS ? ntasks : DLRT_LC_MAX_TASKS;
	dlrt_plugin.lc_page->magic = DLRT_LC_MAGIC;
	return hi;
fail:
	if (hi >= 0)
		close(hi);
	return -1;
}

/* Where the watcher learns the job's times (tools/lcshare.h): srun's
 * rendezvous for the step (DLRT_TIMES_ENV: srun keeps one for every step with
 * --dl-signal, whatever carries its exchange), at srun's address
 * (SLURM_SRUN_COMM_HOST, the one slurmstepd itself reaches srun on:
 * SLURM_LAUNCH_NODE_IPADDR is set only in the task's environment). The first
 * node's watcher asks slurmctld and shares them there, the others wait for
 * them there; the step secret goes to it on a pipe. False: none. */
static bool times_at(spank_t sp, struct dlrt_argv *a, uint8_t secret[DLRT_SVCAUTH_SECRET_LEN])
{
	char v[DLRT_RDV_ENV_MAX], ip[64] = "", port_s[8] = "";
	uint16_t exchange_port = 0;
	uint32_t port = 0, node = 1;
	bool ok;

	ok = dlrt_task_getenv(sp, DLRT_RDV_ENV, v, sizeof(v)) == 0 &&
	     dlrt_rdv_env_parse(v, &exchange_port, secret) == 0 &&
	     dlrt_task_getenv(sp, DLRT_TIMES_ENV, port_s, sizeof(port_s)) == 0 &&
	     dlrt_parse_u32(port_s, 1, 65535, &port) == 0 &&
	     dlrt_task_getenv(sp, "SLURM_SRUN_COMM_HOST", ip, sizeof(ip)) == 0 &&
	     ip[0];
	memset(v, 0, sizeof(v));
	if (!ok)
		return false;
	dlrt_argv_add(a, "--times");
	dlrt_argv_add(a, "%s:%u", ip, (unsigned)port);
	/* The first node of this job: of the step, or of this component of a
	 * heterogeneous step (each component is a job with its own times). */
	if (spank_get_item(sp, S_JOB_NODEID, &node) == ESPANK_SUCCESS && node == 0)
		dlrt_argv_add(a, "--times-publish");
	return true;
}

/* The options of the step's watcher (a task step's, not the batch step's). */
static void step_args(spank_t sp, struct dlrt_argv *a, int page_fd)
{
	const struct dlrt_opts *o = &dlrt_plugin.opts;
	char ckbase[2048], ckpt[2200];

	dlrt_argv_add(a, "--attempt"); /* the batch step's is not known yet: the watcher asks */
	dlrt_argv_add(a, "%u", dlrt_restart_count(sp));
	dlrt_argv_add(a, "--node");
	dlrt_argv_add(a, "%s", dlrt_plugin.layout.nodes.names[dlrt_plugin.node_id]);
	dlrt_argv_add(a, "--pids-fd");
	dlrt_argv_add(a, "%d", page_fd);
	if (o->runtime->warn_children)
		dlrt_argv_add(a, "--children");
	if (o->verbose)
		dlrt_argv_add(a, "--verbose");
	if (o->hang_timeout &&
	    dlrt_lifecycle_ckpt_path(sp, ckbase, sizeof(ckbase), ckpt, sizeof(ckpt)) == 0) {
		dlrt_argv_add(a, "--hang-timeout");
		dlrt_argv_add(a, "%u", o->hang_timeout);
		dlrt_argv_add(a, "--progress-dir");
		dlrt_argv_add(a, "%s", ckpt);
		dlrt_argv_add(a, "--step-tasks");
		dlrt_argv_add(a, "%u", dlrt_plugin.layout.ntasks);
	}
}

void dlrt_lifecycle_user_init(spank_t sp)
{
	const struct dlrt_opts *o = &dlrt_plugin.opts;
	static struct dlrt_argv a;
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN];
	char name[16], base[2048];
	uint32_t step = 0, job = 0;
	struct dlrt_err err;
	bool batch, shared = false;
	int page_fd = -1;

	if (spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS)
		return;
	batch = step == SLURM_BATCH_SCRIPT;
	if (batch ? (!o->requeue || !o->warn_sig) :
		    (!dlrt_plugin.active || dlrt_plugin.refused || dlrt_plugin.deferred_rc ||
		     o->dry_run || !o->runtime || (!o->warn_sig && !o->hang_timeout)))
		return;
	if (!batch) {
		page_fd = make_page(dlrt_plugin.layout.node_ntasks[dlrt_plugin.node_id]);
		if (page_fd < 0) {
			slurm_error("dlrt: job %u step %u: cannot make the task page for --dl-signal: "
				    "%s; this node's tasks get no warning", job, step, strerror(errno));
			return;
		}
	}
	dlrt_argv_init(&a);
	dlrt_argv_add(&a, "--job");
	dlrt_argv_add(&a, "%u", job);
	dlrt_argv_add(&a, "--step");
	dlrt_argv_add(&a, "%u", step);
	dlrt_argv_add(&a, "--signal");
	if (o->warn_sig)
		dlrt_argv_add(&a, "%s@%u", dlrt_warnsig_name(o->warn_sig, name, sizeof(name)),
			      o->warn_secs);
	else
		dlrt_argv_add(&a, "none");
	if (dlrt_lifecycle_record_base(sp, base, sizeof(base)) == 0) {
		dlrt_argv_add(&a, "--record-base");
		dlrt_argv_add(&a, "%s", base);
		/* A heterogeneous step's component: the het job's one record, which
		 * the batch script reads (hetstep.h). It asks about, and ends, its
		 * own component's job. */
		if (!batch && dlrt_hetstep_job_id(sp) != job) {
			dlrt_argv_add(&a, "--record-job");
			dlrt_argv_add(&a, "%u", dlrt_hetstep_job_id(sp));
		}
	}
	if (batch) {
		dlrt_argv_add(&a, "--batch");
		dlrt_argv_add(&a, "--requeue");
		dlrt_argv_add(&a, "%u", o->requeue);
	} else {
		step_args(sp, &a, page_fd);
		shared = o->warn_sig && times_at(sp, &a, secret);
	}
	if (dlrt_watcher_start(sp, "dlrt-lifecycle", "the --dl-signal watcher (dlrt-lifecycle)",
			       &a, page_fd, shared ? secret : NULL, &dlrt_plugin.watcher, &err) < 0)
		slurm_error("dlrt: job %u step %u: %s; this node gets no --dl-signal warning%s", job,
			    step, err.msg, batch ? " and no requeue before the time limit" : "");
	memset(secret, 0, sizeof(secret));
	if (page_fd >= 0)
		close(page_fd);
}

/* DLRT_CHECKPOINT_DIR: BASE/<job>, created (or taken, if it is the user's own
 * and no one else can write it) as the user, mode 0700. Never the fallback
 * folder of the logs: every node and attempt must find the same one. */
static int checkpoint_env_make(spank_t sp, struct dlrt_err *err);

/* A job that asked for nothing of this (no --dl-requeue, --dl-hang-timeout
 * or --dl-checkpoint-dir) is not failed when its folder cannot be made (a
 * read-only HOME on the nodes, a site base that is full, broken, or where
 * another user took this user's folder first): it runs without
 * DLRT_CHECKPOINT_DIR, as before dlrt had it. The site's checkpoint_dir= is
 * not a request of the job's. */
static int checkpoint_env(spank_t sp, struct dlrt_err *err)
{
	const struct dlrt_opts *o = &dlrt_plugin.opts;

	if (checkpoint_env_make(sp, err) == 0)
		return 0;
	return (o->requeue || o->hang_timeout || o->checkpoint_dir_given) ? -1 : 0;
}

/* The folder the job's folder is made in: BASE, or BASE/uid-<uid> in the
 * site's base (made here, as the user, if root could not make it). */
static int checkpoint_parent(spank_t sp, const char *base, struct dlrt_err *err)
{
	char user[32];
	int bfd, ufd;

	if (!site_base())
		return dlrt_privdir_base(base, "--dl-checkpoint-dir", err);
	bfd = dlrt_privdir_base(dlrt_plugin.opts.checkpoint_dir, "checkpoint_dir", err);
	if (bfd < 0)
		return -1;
	if (user_folder_name(sp, user, sizeof(user)) < 0) {
		close(bfd);
		return dlrt_err_set(err, "checkpoint_dir: cannot read the job's user from Slurm");
	}
	ufd = dlrt_privdir_sub(bfd, user, base, "checkpoint_dir", err);
	close(bfd);
	if (ufd >= 0)
		fchmod(ufd, 0700); /* the user's own from the start: a list of job ids only */
	return ufd;
}

/* slurmstepd, as root, before anything of the job's user runs: the user's
 * folder in the site's base, BASE/uid-<uid>, made by root and given to the
 * user, so that where the base is root's and writable by root alone (the
 * setup docs/ADMIN.md advises) nobody can take the name first, and in a 1777
 * base a stranger can take it only before the user's first job. Root acts
 * only on a base that is root's and either writable by root alone or sticky
 * (so nobody else can rename or replace what root makes in it), never
 * follows a link there, and never looks into an entry it did not just make:
 * an entry already there is the task's to check, as the user. Nothing here
 * fails the step; it only saves the task the work (or does what the task, in
 * a base only root can write, cannot). */
void dlrt_lifecycle_post_opt(spank_t sp)
{
	const struct dlrt_opts *o = &dlrt_plugin.opts;
	char user[32];
	uid_t uid = 0;
	gid_t gid = 0;
	struct stat st;
	int bfd, ufd;

	if (!dlrt_plugin.config_ok || !site_base() || (!o->runtime && !o->requeue && !o->retries) ||
	    geteuid() != 0 || user_folder_name(sp, user, sizeof(user)) < 0 ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS)
		return;
	bfd = open(o->checkpoint_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		   O_CLOEXEC);
	if (bfd < 0)
		return;
	if (fstat(bfd, &st) < 0 || st.st_uid != 0 ||
	    ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) ||
	    mkdirat(bfd, user, 0700) < 0) {
		close(bfd); /* not a base root may act in, or the folder is there already */
		return;
	}
	/* Root's new, empty folder, in a folder where nobody else can replace it. */
	ufd = openat(bfd, user, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (ufd < 0 || fstat(ufd, &st) < 0 || st.st_uid != 0 || fchown(ufd, uid, gid) < 0 ||
	    fchmod(ufd, 0700) < 0) {
		/* A root that cannot give it away (root squash on NFS): the task
		 * makes it as the user instead. */
		unlinkat(bfd, user, AT_REMOVEDIR);
		slurm_info("dlrt: checkpoint_dir: cannot make %s/%s for uid %u as root (%s); the "
			   "job's tasks make it as the user", o->checkpoint_dir, user,
			   (unsigned)uid, strerror(errno));
	}
	if (ufd >= 0)
		close(ufd);
	close(bfd);
}

static int checkpoint_env_make(spank_t sp, struct dlrt_err *err)
{
	char base[2048], path[2200], job[16];
	uid_t uid = getuid();
	int bfd, dfd;

	if (uid == 0)
		return 0; /* never as root: the caller is the task, as the user */
	if (dlrt_lifecycle_ckpt_path(sp, base, sizeof(base), path, sizeof(path)) < 0)
		return dlrt_err_set(err, "--dl-checkpoint-dir: cannot tell where the job's "
				    "checkpoint folder goes (no HOME or working folder in the job's "
				    "environment): give --dl-checkpoint-dir=/absolute/folder");
	snprintf(job, sizeof(job), "%s", strrchr(path, '/') + 1);
	bfd = checkpoint_parent(sp, base, err);
	if (bfd < 0)
		return -1;
	dfd = dlrt_privdir_sub(bfd, job, path, site_base() ? "checkpoint_dir" :
			       "--dl-checkpoint-dir", err);
	close(bfd);
	if (dfd < 0)
		return -1;
	if (fchmod(dfd, 0700) < 0) {
		close(dfd);
		return dlrt_err_errno(err, errno, "--dl-checkpoint-dir: cannot make %s private (0700)",
				      path);
	}
	close(dfd);
	if (spank_setenv(sp, CKPT_ENV, path, 1) != ESPANK_SUCCESS)
		return dlrt_err_set(err, "cannot set %s in the task environment", CKPT_ENV);
	return 0;
}

/* --dl-hang-timeout: DLRT_HEARTBEAT, a file in the job's checkpoint folder
 * the program may touch, and Python's faulthandler, so that the hang report
 * has each Python task's traceback (dlrt sends SIGABRT; docs/checkpoint.md). */
static int hang_env(spank_t sp, uint32_t rank, struct dlrt_err *err)
{
	char base[2048], path[2200], hb[2400];

	if (!dlrt_plugin.opts.hang_timeout ||
	    dlrt_lifecycle_ckpt_path(sp, base, sizeof(base), path, sizeof(path)) < 0)
		return 0;
	snprintf(hb, sizeof(hb), "%s/.heartbeat.%u.%u", path, dlrt_plugin.step.step_id, rank);
	if (spank_setenv(sp, "DLRT_HEARTBEAT", hb, 1) != ESPANK_SUCCESS ||
	    spank_setenv(sp, "PYTHONFAULTHANDLER", "1", 0) != ESPANK_SUCCESS)
		return dlrt_err_set(err, "cannot set DLRT_HEARTBEAT in the task environment");
	return 0;
}

/* The task, still slurmstepd's child before its exec, must not look as if it
 * caught the warning's signal: the watcher sends it to a task that catches it
 * (SigCgt), and here it would be lost. Slurm 24.11's slurmstepd catches
 * SIGUSR1, SIGUSR2, SIGTERM and others with a handler that does nothing in
 * the forked child (its conmgr), and no longer resets them before the exec as
 * 22.05 did. exec would reset a caught signal to its default anyway, so the
 * program sees no difference; the watcher now waits for the program's own
 * handler. An ignored signal stays ignored (exec keeps that too). */
static void uncatch_warning(int sig)
{
	struct sigaction sa;

	if (!sig || sigaction(sig, NULL, &sa) < 0 || sa.sa_handler == SIG_DFL ||
	    sa.sa_handler == SIG_IGN)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

int dlrt_lifecycle_task_init(spank_t sp, int local, struct dlrt_err *err)
{
	struct dlrt_lc_page *pg = dlrt_plugin.lc_page;
	uint32_t rank = 0;

	dlrt_task_rank(sp, &rank);
	spank_unsetenv(sp, DLRT_TIMES_ENV); /* the watchers', not the program's */
	if (pg && local >= 0 && (uint32_t)local < pg->ntasks) {
		/* Before the pid is on the page: the watcher may look at once. */
		uncatch_warning(dlrt_plugin.opts.warn_sig);
		pg->rank[local] = (int32_t)rank;
		if (rank < dlrt_plugin.layout.ntasks)
			snprintf(pg->role[local], sizeof(pg->role[local]), "%s",
				 dlrt_role_name(dlrt_plugin.plan.task[rank].role));
		pg->pid[local] = (int32_t)getpid();
	}
	if (dlrt_plugin.opts.dry_run)
		return 0;
	if (checkpoint_env(sp, err) < 0)
		return -1;
	return hang_env(sp, rank, err);
}

int dlrt_lifecycle_batch_task_init(spank_t sp, struct dlrt_err *err)
{
	const struct dlrt_opts *o = &dlrt_plugin.opts;
	uint32_t step = 0;
	char att[16];

	if (spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS || step != SLURM_BATCH_SCRIPT)
		return 0;
	if (!o->runtime && !o->requeue && !o->retries)
		return 0;
	snprintf(att, sizeof(att), "%u", dlrt_restart_count(sp));
	spank_setenv(sp, "DLRT_ATTEMPT", att, 1);
	return checkpoint_env(sp, err);
}

void dlrt_lifecycle_exit(void)
{
	const struct dlrt_layout *l = &dlrt_plugin.layout;

	dlrt_watcher_stop(&dlrt_plugin.watcher, l->nodes.names && dlrt_plugin.node_id < l->nnodes ?
			  l->nodes.names[dlrt_plugin.node_id] : "the batch node");
	if (dlrt_plugin.lc_page)
		munmap(dlrt_plugin.lc_page, sizeof(struct dlrt_lc_page));
	dlrt_plugin.lc_page = NULL;
}
