/* requeue.c - --dl-retries=N: when a node fails or a task is killed by a signal,
 * record the node, exclude it and requeue the job, at most N times. And
 * --dl-requeue=N: a script that ends after --dl-signal's warning (recorded in
 * the same record by dlrt-lifecycle, spank/lifecycle.c) is requeued, at most N
 * times by the job's restart count (requeue_after_warning).
 *
 * Where this lives, and why (docs/ADMIN.md, "Retries"):
 *  - Evidence is recorded where it happens: slurm_spank_task_exit of every srun
 *    step's slurmstepd sees each task's wait status; a task killed by a signal
 *    appends "attempt=A node=X ..." to the job's retry log.
 *  - The decision is taken once, in slurm_spank_task_exit of the BATCH step, when
 *    the script has ended (by itself, or because Slurm requeued the job after a
 *    node stopped responding). Failed nodes = the log's entries of this attempt
 *    plus the job's nodes Slurm now reports down or not responding.
 *  - The requeue is Slurm's own: `scontrol requeuehold`, `scontrol update
 *    ExcNodeList=`, `scontrol release`, run as the job's user (a user may do all
 *    three to a job of theirs; no admin rights, no slurmctld hook). Holding first
 *    means the job cannot start again before the exclusion is in place. When
 *    Slurm already requeued the job itself (node failure), only the exclusion is
 *    added. Slurm's restart counter is the attempt number (DLRT_ATTEMPT,
 *    DMLC_NUM_ATTEMPT, RUN_ID), so it counts both kinds of requeue.
 * The work runs in a child process that has dropped to the job's user (its
 * ids and groups as Slurm gives them: common/proc.h) and is killed after
 * RQ_TIMEOUT_S, so slurmstepd never waits longer than that.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <slurm/slurm.h>
#include <slurm/spank.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "logs/logline.h"
#include "hetstep.h"
#include "plugin.h"
#include "common/errline.h"
#include "common/privdir.h"
#include "common/proc.h"
#include "logs/retrylog.h"

#define RQ_TIMEOUT_S 60  /* the whole decision, from slurmstepd's point of view */
#define CMD_TIMEOUT_S 15 /* one scontrol/sinfo call */
#define RQ_REPORT_MAX 8192 /* what the decision child may report for the slurmd log */
#define RQ_LOG_NAME "dlrt-retries.log"

struct rq_job {
	struct dlrt_proc_cred cred; /* the job's ids and groups, as Slurm gives them */
	uint32_t job_id, step_id, attempt;
	char pwd[1024], home[1024], slurm_conf[1024], path[2048], nodelist[4096];
	char comp_ids[512]; /* a hetjob's components ("96 97", hetstep.h), else "" */
	char env_path[2048]; /* PATH for scontrol/sinfo: the job's, then the usual places */
	int dirfd; /* the job's verified folder of the retry record, or -1 */
	int basefd; /* the folder that holds it (DIR, ~/.dlrt/jobs), or -1 */
	char base[2048];
};

/* The record's code runs in the child of as_user(), which has none of
 * slurmstepd's descriptors, its log's included: it reports on stderr, and
 * as_user() puts each line into the slurmd log. */
static void rq_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void rq_report(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dlrt_errline_vsay("", fmt, ap);
	va_end(ap);
}

/* The retry log: DIR/<job>/dlrt-retries.log with --dl-log-dir, else
 * ~/.dlrt/jobs/<job>/dlrt-retries.log. Called as the user. The job's folder is
 * created and checked like the task logs' (common/privdir.h): only the job's
 * user can write in it, so no other user can plant a line that requeues the
 * job. When another user took DIR/<job> first, the record goes where the
 * task logs go, the job's own DIR/<job>.<uid>.<random> (one line in the
 * slurmd log says so). A folder that fails the checks is reported (one line)
 * and leaves j->dirfd at -1: nothing is recorded, nothing is read, and the
 * decision rests on the node states alone. */
static int retry_log_path(struct rq_job *j, char *out, size_t len)
{
	const char *what = dlrt_plugin.opts.retries ? "--dl-retries" : "--dl-requeue";
	const char *d = dlrt_plugin.opts.log_dir;
	struct dlrt_privdir_jobdir jd;
	struct dlrt_err err = { "" };
	char name[16];
	int n;

	j->dirfd = j->basefd = -1;
	if (d[0] == '/')
		n = snprintf(j->base, sizeof(j->base), "%s", d);
	else if (d[0] && j->pwd[0] == '/')
		n = snprintf(j->base, sizeof(j->base), "%s/%s", j->pwd, d);
	else if (j->home[0] == '/') /* the job's HOME: no NSS lookup in slurmstepd */
		n = snprintf(j->base, sizeof(j->base), "%s/.dlrt/jobs", j->home);
	else
		return -1;
	if (n < 0 || (size_t)n >= sizeof(j->base))
		return -1;
	snprintf(name, sizeof(name), "%u", j->job_id);
	n = snprintf(out, len, "%s/%s/" RQ_LOG_NAME, j->base, name);
	if (n < 0 || (size_t)n >= len)
		return -1;
	j->basefd = dlrt_privdir_base(j->base, what, &err);
	if (j->basefd >= 0)
		j->dirfd = dlrt_privdir_job(j->basefd, j->base, name, what, &jd, &err);
	if (j->dirfd < 0) {
		rq_report("dlrt: %s (job %u: its retry record is not used)", err.msg, j->job_id);
		return 0;
	}
	n = snprintf(out, len, "%s/" RQ_LOG_NAME, jd.path);
	if (n < 0 || (size_t)n >= len) {
		close(j->dirfd);
		j->dirfd = -1;
		return -1;
	}
	if (jd.squatted[0])
		rq_report("dlrt: %s: %s; job %u's retry record is in %s instead", what, jd.squatted,
			  j->job_id, out);
	return 0;
}

static void rq_note(const struct rq_job *j, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void rq_note(const struct rq_job *j, const char *fmt, ...)
{
	char line[1024];
	struct dlrt_err err = { "" };
	va_list ap;
	int fd, n;

	if (j->dirfd < 0)
		return; /* reported by retry_log_path */
	va_start(ap, fmt);
	n = (int)dlrt_logline_vformat(line, sizeof(line), fmt, ap);
	va_end(ap);
	fd = dlrt_privdir_append(j->dirfd, RQ_LOG_NAME, j->path, "--dl-retries", &err);
	if (fd < 0) {
		rq_report("dlrt: %s (job %u)", err.msg, j->job_id);
		return;
	}
	/* One write of one line: O_APPEND keeps lines of several nodes whole. */
	if (write(fd, line, (size_t)n) != n || close(fd) < 0)
		rq_report("dlrt: --dl-retries: cannot record \"%.*s\" in %s: %s (job %u)",
			    n - 1, line, j->path, strerror(errno), j->job_id);
}

/* The tail of one retry record (from a line start) into buf; "" if there is
 * none or it cannot be trusted (reported). */
static void rq_read_one(const struct rq_job *j, int dirfd, const char *shown, char *buf,
			size_t len)
{
	struct dlrt_err err = { "" };
	struct stat st;
	off_t from = 0;
	ssize_t n;
	char *p;
	int fd;

	buf[0] = '\0';
	if (len < 2)
		return;
	fd = dlrt_privdir_read(dirfd, RQ_LOG_NAME, shown, "--dl-retries", &err);
	if (fd < 0) {
		if (errno != ENOENT)
			rq_report("dlrt: %s (job %u: the record is not used)", err.msg, j->job_id);
		return;
	}
	if (fstat(fd, &st) == 0 && st.st_size > (off_t)len - 1)
		from = st.st_size - (off_t)len + 1;
	n = pread(fd, buf, len - 1, from);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if (from > 0 && (p = strchr(buf, '\n')))
		memmove(buf, p + 1, strlen(p + 1) + 1);
	else if (from > 0)
		buf[0] = '\0';
}

/* This attempt's part of the retry record into buf. Every folder of the
 * user's that may hold it is read (DIR/<job> and the fallbacks, oldest
 * first): the steps of a job whose DIR/<job> another user took, or removed
 * again midway, may have recorded in more than one. */
static void rq_read(const struct rq_job *j, char *buf, size_t len)
{
	char names[4][DLRT_PRIVDIR_NAME], why[1024], job[16], shown[3200];
	size_t used = 0;
	int n;

	buf[0] = '\0';
	if (j->dirfd < 0 || j->basefd < 0)
		return;
	snprintf(job, sizeof(job), "%u", j->job_id);
	snprintf(shown, sizeof(shown), "%s/%s", j->base, job);
	n = dlrt_privdir_jobdirs(j->basefd, job, shown, names, 4, why, sizeof(why));
	for (int i = 0; i < n && used + 1 < len; i++) {
		struct dlrt_err err = { "" };
		int dfd;

		snprintf(shown, sizeof(shown), "%s/%s/" RQ_LOG_NAME, j->base, names[i]);
		dfd = dlrt_privdir_open(j->basefd, names[i], shown, "--dl-retries", &err);
		if (dfd < 0) {
			rq_report("dlrt: %s (job %u: the record is not used)", err.msg, j->job_id);
			continue;
		}
		rq_read_one(j, dfd, shown, buf + used, len - used);
		used += strlen(buf + used);
		close(dfd);
	}
}

/* Runs argv (scontrol, sinfo) with the job's Slurm config; its output into
 * out. Already the job's user here (the decision child). Returns the exit
 * status, or -1 (not started, killed after CMD_TIMEOUT_S). */
static int run(const struct rq_job *j, char *out, size_t len, char *const argv[])
{
	char conf[1100];
	char *env[] = { (char *)j->env_path, "LC_ALL=C", NULL, NULL };
	/* The requeue ends the batch step, whose processes Slurm signals: this
	 * very scontrol release must not die of that SIGTERM. */
	struct dlrt_proc_spec spec = { .argv = argv, .envp = env, .timeout_ms = CMD_TIMEOUT_S * 1000,
				       .out_max = len ? len - 1 : 0, .with_stderr = true,
				       .ignore_end_signals = true };
	struct dlrt_proc_result res;
	struct dlrt_err err;
	struct dlrt_buf b;
	int rc;

	if (j->slurm_conf[0]) {
		snprintf(conf, sizeof(conf), "SLURM_CONF=%s", j->slurm_conf);
		env[2] = conf;
	}
	dlrt_buf_init(&b, spec.out_max);
	rc = dlrt_proc_run(&spec, argv[0], len ? &b : NULL, &res, &err);
	if (len) {
		if (b.len)
			memcpy(out, dlrt_buf_head(&b), b.len);
		out[b.len] = '\0';
	}
	dlrt_buf_free(&b);
	if (rc < 0 || !WIFEXITED(res.status))
		return -1;
	return WEXITSTATUS(res.status);
}

/* Task signals that point at the node: not the SIGTERM/SIGINT/SIGHUP Slurm and
 * users end steps with (SIGKILL stays: the OOM killer uses it). */
static bool node_signal(int sig)
{
	return sig != SIGTERM && sig != SIGINT && sig != SIGHUP && sig != SIGPIPE;
}

static void job_state(const struct rq_job *j, char *state, size_t slen, char *exc, size_t elen)
{
	char buf[16384], jid[16];
	char *show_job[] = { "scontrol", "show", "job", "-o", jid, NULL };

	snprintf(jid, sizeof(jid), "%u", j->job_id);
	state[0] = exc[0] = '\0';
	if (run(j, buf, sizeof(buf), show_job) != 0)
		return;
	dlrt_retry_field(buf, "JobState=", state, slen);
	dlrt_retry_field(buf, "ExcNodeList=", exc, elen);
	if (!strcmp(exc, "(null)"))
		exc[0] = '\0';
}

/* Slurm is requeueing the job itself (a node stopped responding). */
static bool slurm_requeues(const char *state)
{
	return !strcmp(state, "PENDING") || !strcmp(state, "REQUEUED") ||
	       !strcmp(state, "COMPLETING") || !strcmp(state, "NODE_FAIL");
}

/* Runs argv until it succeeds: while Slurm requeues the job on its own, the job
 * turns pending only at some point of the batch step's end (bounded, 20 s). */
static int run_retry(const struct rq_job *j, char *buf, size_t len, char *const argv[])
{
	for (int i = 0; i < 40; i++) {
		if (run(j, buf, len, argv) == 0)
			return 0;
		usleep(500 * 1000);
	}
	return -1;
}

/* Whether Slurm itself requeues a preempted job whose script ends within the
 * grace time: since 24.05 it does so with PreemptMode=REQUEUE (the job's
 * partition's, or the cluster's) for a requeueable job, and it does so even
 * when the job was requeued meanwhile (a requeue from the batch step would
 * make two). 22.05 requeues only a job still running at the grace time's
 * end, so there dlrt's requeue is the only one. buf holds scontrol's job. */
static bool slurm_requeues_preempted(const struct rq_job *j, char *buf, size_t len)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0)
	char part[128], requeue[8], mode[64];
	char *show_part[] = { "scontrol", "show", "partition", part, "-o", NULL };

	dlrt_retry_field(buf, "Requeue=", requeue, sizeof(requeue));
	dlrt_retry_field(buf, "Partition=", part, sizeof(part));
	if (strcmp(requeue, "1") || !part[0] || run(j, buf, len, show_part) != 0)
		return false;
	dlrt_retry_field(buf, "PreemptMode=", mode, sizeof(mode));
	return !strncmp(mode, "REQUEUE", 7);
#else
	(void)j, (void)buf, (void)len;
	return false;
#endif
}

/* --dl-requeue: a script that ended (however) after the warning of this
 * attempt was recorded (dlrt-lifecycle) is requeued, at most N times, and
 * only while the job still runs this attempt: one that Slurm (preemption,
 * PreemptMode=REQUEUE) or the program (Lightning's scontrol requeue)
 * requeued already is not requeued twice. True when it was the warning's
 * case (requeued or not), so no node is blamed. */
static bool requeue_after_warning(const struct rq_job *j, char *buf, size_t len)
{
	char jid[16], restarts[16], preempt[64];
	char *show_job[] = { "scontrol", "show", "job", "-o", jid, NULL };
	char *requeue[] = { "scontrol", "requeue", jid, NULL };
	uint32_t n = dlrt_plugin.opts.requeue, r = 0;
	bool warned;

	rq_read(j, buf, len);
	warned = dlrt_retry_log_warned(buf, j->attempt);
	snprintf(jid, sizeof(jid), "%u", j->job_id);
	if (run(j, buf, len, show_job) != 0)
		return warned;
	/* Slurm's SIGTERM at the start of a preemption's grace time may end the
	 * script before the watcher's next look recorded the warning. */
	dlrt_retry_field(buf, "PreemptTime=", preempt, sizeof(preempt));
	if (!warned && (!preempt[0] || !strcmp(preempt, "None")))
		return false;
	dlrt_retry_field(buf, "Restarts=", restarts, sizeof(restarts));
	if (dlrt_parse_u32(restarts, 0, 1u << 30, &r) < 0 || r != j->attempt)
		return true; /* requeued already by someone else */
	if (preempt[0] && strcmp(preempt, "None") && slurm_requeues_preempted(j, buf, len)) {
		rq_note(j, "attempt=%u ended during its preemption: Slurm requeues it", j->attempt);
		return true;
	}
	if (j->attempt >= n) {
		rq_note(j, "attempt=%u ended after the warning: no requeue left (--dl-requeue=%u)",
			j->attempt, n);
		return true;
	}
	if (run(j, buf, len, requeue) != 0) {
		rq_note(j, "attempt=%u requeue refused: %.200s (was the job submitted with "
			"--no-requeue?)", j->attempt, buf);
		return true;
	}
	rq_note(j, "attempt=%u requeued reason=ended-after-%s next-attempt=%u", j->attempt,
		warned ? "warning" : "preemption", j->attempt + 1);
	return true;
}

/* The batch step's decision (as the user). */
static void decide(const struct rq_job *j)
{
	char failed[1024] = "", down[1024] = "", buf[16384], state[64], exc[1024], jid[16];
	char *sinfo[] = { "sinfo", "-h", "-N", "-n", (char *)j->nodelist, "-o", "%N %t", NULL };
	bool running, held = false;

	snprintf(jid, sizeof(jid), "%u", j->job_id);
	job_state(j, state, sizeof(state), exc, sizeof(exc));
	running = !strcmp(state, "RUNNING");
	if (running && dlrt_plugin.opts.requeue && requeue_after_warning(j, buf, sizeof(buf)))
		return;
	if (!dlrt_plugin.opts.retries)
		return;
	if (!running && !slurm_requeues(state))
		return; /* cancelled, timed out, or slurmctld unreachable: not ours to retry */
	/* 1. Nodes of the job Slurm reports down, failing or not responding ("*"). */
	if (j->nodelist[0] && run(j, buf, sizeof(buf), sinfo) == 0)
		dlrt_retry_down_nodes(buf, down, sizeof(down));
	/* 2. When the script ended by itself: tasks killed by a signal in this
	 * attempt (recorded by the steps). When Slurm is requeueing the job, its
	 * tasks were killed by Slurm, so only the node states count. With a node
	 * down, a SIGKILL elsewhere is the step's teardown (srun kills a step
	 * that lost a node), not the other node's fault: only other signals
	 * (SIGSEGV, SIGBUS, ...) count there. */
	if (running) {
		rq_read(j, buf, sizeof(buf));
		dlrt_retry_log_nodes(buf, j->attempt, down[0] ? SIGKILL : 0, failed, sizeof(failed));
	}
	for (char *p = down; *p;) {
		size_t k = strcspn(p, ",");
		char c = p[k];

		p[k] = '\0';
		dlrt_retry_list_add(failed, sizeof(failed), p);
		p[k] = c;
		p += k + (c == ',');
	}
	if (!failed[0])
		return; /* no node to blame: an ordinary failure (or success) is the user's */
	if (j->attempt >= dlrt_plugin.opts.retries) {
		char *cancel[] = { "scancel", jid, NULL };

		rq_note(j, "attempt=%u failed-nodes=%s no retry left (--dl-retries=%u)", j->attempt,
			failed, dlrt_plugin.opts.retries);
		/* Slurm itself requeues a batch job whose node failed: stop that too. */
		if (!running)
			run_retry(j, buf, sizeof(buf), cancel);
		return;
	}
	if (running) {
		char *hold[] = { "scontrol", "requeuehold", jid, NULL };

		if (run(j, buf, sizeof(buf), hold) == 0)
			held = true;
		else
			job_state(j, state, sizeof(state), exc, sizeof(exc));
		if (!held && !slurm_requeues(state)) {
			rq_note(j, "attempt=%u failed-nodes=%s requeue refused: %.200s (was the job "
				"submitted with --no-requeue?)", j->attempt, failed, buf);
			return;
		}
	}
	for (char *p = failed; *p;) {
		size_t k = strcspn(p, ",");
		char one[128];

		snprintf(one, sizeof(one), "%.*s", (int)(k < sizeof(one) ? k : sizeof(one) - 1), p);
		dlrt_retry_list_add(exc, sizeof(exc), one);
		p += k + (p[k] == ',');
	}
	{
		char excarg[1100], jobarg[32];
		char *update[] = { "scontrol", "update", jobarg, excarg, NULL };
		char *release[] = { "scontrol", "release", jid, NULL };

		int urc = 0;

		snprintf(jobarg, sizeof(jobarg), "JobId=%u", j->job_id);
		snprintf(excarg, sizeof(excarg), "ExcNodeList=%s", exc);
		/* A hetjob: each component is a job with its own ExcNodeList. */
		for (const char *c = j->comp_ids; *c && urc == 0;) {
			size_t k = strcspn(c, " ");

			snprintf(jobarg, sizeof(jobarg), "JobId=%.*s", (int)k, c);
			urc = run_retry(j, buf, sizeof(buf), update);
			c += k + (c[k] == ' ');
		}
		if (!j->comp_ids[0])
			urc = run_retry(j, buf, sizeof(buf), update);
		if (urc != 0) {
			rq_note(j, "attempt=%u failed-nodes=%s cannot exclude %s: %.200s", j->attempt,
				failed, exc, buf);
			if (held)
				run(j, buf, sizeof(buf), release);
			return;
		}
		if (held && run(j, buf, sizeof(buf), release) != 0)
			rq_note(j, "attempt=%u cannot release the held job: %.200s (scontrol release %u)",
				j->attempt, buf, j->job_id);
		rq_note(j, "attempt=%u failed-nodes=%s requeued exclude=%s next-attempt=%u",
			j->attempt, failed, exc, j->attempt + 1);
	}
}

struct as_user_call {
	struct rq_job job;
	void (*fn)(struct rq_job *, int);
	int arg;
};

/* The child, already the job's user (proc.c dropped it). */
static int as_user_child(void *p)
{
	struct as_user_call *c = p;

	if (c->job.pwd[0] && chdir(c->job.pwd) < 0) {
		/* a relative --dl-log-dir then fails to resolve: handled by the path */
	}
	if (retry_log_path(&c->job, c->job.path, sizeof(c->job.path)) < 0)
		return 1;
	c->fn(&c->job, c->arg);
	return 0;
}

/* The child's report lines (rq_report), into the slurmd log. */
static void relay_report(const struct dlrt_buf *out)
{
	const char *p = (const char *)dlrt_buf_head(out), *end = p + out->len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		int len = (int)((nl ? nl : end) - p);

		if (len > 0)
			slurm_error("%.*s", len, p);
		p += len + 1;
	}
}

/* Runs fn in a child that is the job's user (its ids and groups as Slurm
 * gives them, no descriptor of slurmstepd); waits at most RQ_TIMEOUT_S. */
static void as_user(const struct rq_job *j, void (*fn)(struct rq_job *, int), int arg)
{
	struct as_user_call c = { .job = *j, .fn = fn, .arg = arg };
	struct dlrt_proc_spec spec = { .cred = &j->cred, .fn = as_user_child, .arg = &c,
				       .timeout_ms = RQ_TIMEOUT_S * 1000, .ignore_end_signals = true };
	struct dlrt_proc_result res;
	struct dlrt_buf out;
	struct dlrt_err err;
	int rc;

	spec.out_max = RQ_REPORT_MAX;
	spec.with_stderr = true;
	dlrt_buf_init(&out, RQ_REPORT_MAX);
	rc = dlrt_proc_run(&spec, "the --dl-retries decision", &out, &res, &err);
	relay_report(&out);
	dlrt_buf_free(&out);
	if (rc < 0 && res.timed_out)
		slurm_error("dlrt: --dl-retries: the requeue decision for job %u took over %d s; "
			    "killed it (is slurmctld reachable?)", j->job_id, RQ_TIMEOUT_S);
	else if (res.status != -1 && WIFEXITED(res.status) &&
		 WEXITSTATUS(res.status) >= DLRT_PROC_EXIT_DROP)
		slurm_error("dlrt: --dl-retries: the requeue decision for job %u %s: check the "
			    "node's slurmd log", j->job_id,
			    dlrt_proc_status_text(res.status, err.msg, sizeof(err.msg)));
}

void dlrt_requeue_note_client(uint32_t job_id, const char *line)
{
	struct rq_job j = { 0 };
	const char *pwd = getenv("PWD"), *home = getenv("HOME");

	j.job_id = job_id;
	snprintf(j.pwd, sizeof(j.pwd), "%s", pwd ? pwd : "");
	snprintf(j.home, sizeof(j.home), "%s", home ? home : "");
	if (retry_log_path(&j, j.path, sizeof(j.path)) == 0)
		rq_note(&j, "%s", line);
	if (j.dirfd >= 0)
		close(j.dirfd);
	if (j.basefd >= 0)
		close(j.basefd);
}

static void record_signal(struct rq_job *j, int status)
{
	rq_note(j, "attempt=%u node=%s step=%u signal=%d", j->attempt,
		dlrt_plugin.layout.nodes.names[dlrt_plugin.node_id], j->step_id, WTERMSIG(status));
}

static void decide_cb(struct rq_job *j, int unused)
{
	(void)unused;
	decide(j);
}

void dlrt_requeue_task_exit(spank_t sp)
{
	struct rq_job j = { 0 };
	gid_t *groups = NULL;
	char path[1900];
	int status = 0;

	/* The batch step has no runtime of its own: sbatch --dl-retries is enough
	 * for node failures; signals are recorded only by dlrt steps (active). */
	if (!dlrt_plugin.opts.retries && !dlrt_plugin.opts.requeue)
		return;
	if (spank_get_item(sp, S_JOB_UID, &j.cred.uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &j.cred.gid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ID, &j.job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &j.step_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS)
		return;
	j.attempt = dlrt_restart_count(sp);
	dlrt_task_getenv(sp, "PWD", j.pwd, sizeof(j.pwd));
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &groups, &j.cred.ngroups) != ESPANK_SUCCESS)
		j.cred.ngroups = 0;
	j.cred.groups = groups;
	dlrt_task_getenv(sp, "HOME", j.home, sizeof(j.home));
	dlrt_task_getenv(sp, "SLURM_CONF", j.slurm_conf, sizeof(j.slurm_conf));
	dlrt_task_getenv(sp, "PATH", path, sizeof(path));
	snprintf(j.env_path, sizeof(j.env_path), "PATH=%s%s/usr/bin:/bin:/usr/local/bin", path,
		 path[0] ? ":" : "");
	/* A heterogeneous step's tasks record under the het job's id, which
	 * the batch script reads (hetstep.h). */
	if (dlrt_plugin.active)
		j.job_id = dlrt_hetstep_job_id(sp);
	if (j.step_id == SLURM_BATCH_SCRIPT) {
		dlrt_task_getenv(sp, "SLURM_JOB_NODELIST", j.nodelist, sizeof(j.nodelist));
		/* A hetjob's script: every component's nodes and job (hetstep.h). */
		dlrt_hetstep_batch_jobs(sp, j.comp_ids, sizeof(j.comp_ids), j.nodelist,
					sizeof(j.nodelist));
		as_user(&j, decide_cb, 0);
	} else if (dlrt_plugin.opts.retries && dlrt_plugin.active && WIFSIGNALED(status) && node_signal(WTERMSIG(status))) {
		as_user(&j, record_signal, status);
	}
}
