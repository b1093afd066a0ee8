/* worker.c - a dlrt-infer worker: one process, one task at a time.
 *
 * It finds the coordinator through the pool's access record, loads each job's
 * model and inputs once (on the job's first task; JOBINFO says what they are)
 * and keeps them until the coordinator drops the job, so every task after the
 * first costs only inference. A worker is single-threaded and blocking: the
 * coordinator is the one that must never wait, and with --prefetch the next
 * tasks simply queue in the socket.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "services/evloop.h"
#include "common/errline.h"
#include "common/instpath.h"
#include "extmodel.h"
#include "hbsend.h"
#include "inputs.h"
#include "worker.h"
#include "inference/liveness.h"
#include "inference/models/model.h"
#include "inference/pool/pool.h"
#include "inference/state/standby.h"
#include "inference/proto/proto.h"

#define EXT_START_MS 120000 /* importing torch on a loaded node takes a while */
#define EXT_TASK_MS 300000

struct wjob {
	uint32_t id;
	struct dlrt_model *model;   /* built in, or: */
	struct dlrt_extmodel *ext; /* an external command ("ext:CMD") */
	struct dlrt_inputs *inputs; /* shared between jobs with the same file */
	char inputs_path[DLRT_IP_STR_MAX + 1];
	uint32_t first, count;
	char model_spec[DLRT_IP_STR_MAX + 1];
	bool kept;                 /* loaded under an earlier coordinator, not confirmed yet */
	char error[DLRT_ERR_MAX];  /* why it cannot run, "" if it can */
};

#define KEPT_JOB_MS 10000 /* a loaded job no new coordinator names again is freed after this */

/* An answer sent but not yet acknowledged (ACK): if the coordinator dies
 * before it is recorded, the next coordinator gets it again (RESENT). */
struct kept {
	uint32_t job;
	uint64_t task;
	uint8_t *frame;
	size_t len;
};

/* Answers kept until their ACK, oldest first, in a ring: ACKs come in the
 * order of the answers, so forgetting one is a look at the front. More than
 * the coordinator lets wait (MAX_HELD_ACKS in coord_int.h) plus those in
 * flight: a coordinator that never acknowledges loses the oldest. */
#define MAX_KEPT 2048

struct wstate {
	const struct dlrt_worker_opts *o;
	struct kept kept[MAX_KEPT];
	uint32_t kept_head, nkept; /* the ring's front, and slots used from it (some freed) */
	int64_t connected_ms;      /* when the current connection started */
	char model_dir[PATH_MAX];
	struct wjob *jobs;
	uint32_t njobs, cap;
	int32_t *pred;
	float *score;
	pthread_mutex_t wlock;  /* writes to the connection: this thread and the heartbeat's */
	int64_t margin;         /* walltime margin, seconds */
	int64_t end;            /* the Slurm job's end (unix seconds), 0 = none known */
	int64_t end_checked_ms;
	bool drained;           /* DRAIN sent on this connection */
	int64_t heard_ms;       /* the coordinator's last frame, or the last probe it answered */
};

/* A worker hears nothing while no task is there for it: after this much
 * silence it checks that the coordinator still answers a HELLO. A stopped
 * coordinator keeps the connection open, and without a standby nobody else
 * would notice it. */
#define SILENCE_PROBE_MS 2000

int dlrt_worker_takeover_ms(int index)
{
	const char *v = getenv("DLRT_INFER_WORKER_TAKEOVER_MS");
	long ms = 3L * dlrt_standby_timeout_ms();

	if (v && *v) {
		char *end;
		long x = strtol(v, &end, 10);

		if (!*end && x == 0)
			return 0;
		if (!*end && x >= 500 && x <= 600000)
			ms = x;
	}
	if (index < 0)
		index = 0;
	return (int)ms + 250 * (index % 16);
}

/* Does the access record's coordinator answer a HELLO (as a client)? */
static bool coordinator_answers(const char *pool)
{
	struct dlrt_ipc probe;
	struct dlrt_err err;

	if (dlrt_ipc_open(&probe, pool, DLRT_IP_ROLE_CLIENT, "worker-probe", 1000, &err) < 0)
		return false;
	dlrt_ipc_close(&probe);
	return true;
}

static void wlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void wlog(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dlrt_errline_vsay("dlrt-infer worker: ", fmt, ap);
	va_end(ap);
}

static struct wjob *find_job(struct wstate *s, uint32_t id)
{
	for (uint32_t i = 0; i < s->njobs; i++)
		if (s->jobs[i].id == id)
			return &s->jobs[i];
	return NULL;
}

static void drop_job(struct wstate *s, uint32_t id)
{
	struct wjob *j = find_job(s, id);
	bool shared = false;

	if (!j)
		return;
	dlrt_model_free(j->model);
	dlrt_extmodel_stop(j->ext);
	for (uint32_t i = 0; i < s->njobs; i++)
		if (&s->jobs[i] != j && s->jobs[i].inputs == j->inputs)
			shared = true;
	if (j->inputs && !shared) {
		dlrt_inputs_close(j->inputs);
		free(j->inputs);
	}
	*j = s->jobs[--s->njobs];
}

static void add_job(struct wstate *s, const struct dlrt_ip_jobinfo *ji)
{
	struct wjob *j = find_job(s, ji->job);
	struct dlrt_err err;

	if (j && j->kept) {
		/* After a failover the same job keeps its loaded model (the state, and
		 * so the job ids, carried over); anything else is loaded afresh. */
		if (!j->error[0] && !strcmp(j->model_spec, ji->model) &&
		    !strcmp(j->inputs_path, ji->inputs) && j->first == ji->first &&
		    j->count == ji->count) {
			j->kept = false;
			return;
		}
		drop_job(s, ji->job);
	} else if (j) {
		return;
	}
	if (s->njobs == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 4;
		struct wjob *q = realloc(s->jobs, cap * sizeof(*q));

		if (!q)
			return;
		s->jobs = q;
		s->cap = cap;
	}
	j = &s->jobs[s->njobs++];
	memset(j, 0, sizeof(*j));
	j->id = ji->job;
	j->first = ji->first;
	j->count = ji->count;
	snprintf(j->model_spec, sizeof(j->model_spec), "%s", ji->model);
	snprintf(j->inputs_path, sizeof(j->inputs_path), "%s", ji->inputs);
	if (!strncmp(ji->model, "ext:", 4)) {
		if (dlrt_extmodel_start(&j->ext, ji->model + 4, EXT_START_MS, &err) < 0) {
			j->ext = NULL;
			snprintf(j->error, sizeof(j->error), "%s", err.msg);
			return;
		}
	} else if (dlrt_model_open(&j->model, ji->model, s->model_dir[0] ? s->model_dir : NULL,
				   &err) < 0) {
		j->model = NULL;
		snprintf(j->error, sizeof(j->error), "%s", err.msg);
		return;
	}
	for (uint32_t i = 0; i + 1 < s->njobs; i++)
		if (s->jobs[i].inputs && !strcmp(s->jobs[i].inputs_path, ji->inputs))
			j->inputs = s->jobs[i].inputs;
	if (!j->inputs) {
		j->inputs = calloc(1, sizeof(*j->inputs));
		if (!j->inputs || dlrt_inputs_open(j->inputs, ji->inputs, &err) < 0) {
			snprintf(j->error, sizeof(j->error), "%s", j->inputs ? err.msg :
				 "out of memory");
			free(j->inputs);
			j->inputs = NULL;
			return;
		}
	}
	if (j->ext)
		; /* the command gets raw bytes; their meaning is its business */
	else if (j->inputs->idx.item_size != dlrt_model_input_size(j->model))
		snprintf(j->error, sizeof(j->error), "%.200s has %zu bytes per input but model %.100s "
			 "takes %zu: use 28x28 images", ji->inputs, j->inputs->idx.item_size,
			 ji->model, dlrt_model_input_size(j->model));
	else if ((uint64_t)ji->first + ji->count > j->inputs->idx.count)
		snprintf(j->error, sizeof(j->error), "%.300s has %zu inputs, the job needs %llu",
			 ji->inputs, j->inputs->idx.count,
			 (unsigned long long)ji->first + ji->count);
}

static int locked_flush(struct wstate *s, struct dlrt_ipc *c, struct dlrt_err *err)
{
	int rc;

	pthread_mutex_lock(&s->wlock);
	rc = dlrt_ipc_flush(c, 30000, err);
	pthread_mutex_unlock(&s->wlock);
	return rc;
}

/* The job's end from Slurm: $SLURM_JOB_END_TIME where Slurm sets it, else the
 * time left that squeue reports (asked again every minute: limits change). */
static void refresh_end(struct wstate *s)
{
	const char *e = getenv("SLURM_JOB_END_TIME"), *id = getenv("SLURM_JOB_ID");
	char cmd[128], line[128] = "";
	int64_t left;
	FILE *p;

	if (s->margin <= 0 || (s->end_checked_ms && dlrt_now_ms() - s->end_checked_ms < 60000))
		return;
	s->end_checked_ms = dlrt_now_ms();
	if (e && *e) {
		s->end = atoll(e);
		return;
	}
	if (!id || strspn(id, "0123456789") != strlen(id) || strlen(id) > 20)
		return;
	snprintf(cmd, sizeof(cmd), "squeue -h -j %s -o %%L 2>/dev/null", id);
	p = popen(cmd, "r");
	if (!p)
		return;
	if (!fgets(line, sizeof(line), p))
		line[0] = '\0';
	pclose(p);
	if (dlrt_walltime_parse_left(line, &left) == 0)
		s->end = left >= 0 ? (int64_t)time(NULL) + left : 0;
	else
		wlog("cannot read the job's time left from squeue ('%.40s'): no walltime margin",
		     line);
}

/* Near the time limit: ask for no new task (once per connection). A task
 * already sent still runs; if Slurm ends the job first, it is requeued. */
static int check_walltime(struct wstate *s, struct dlrt_ipc *c, struct dlrt_err *err)
{
	struct dlrt_ip_drain d = { 0 };
	int64_t now = (int64_t)time(NULL);

	if (s->drained)
		return 0;
	refresh_end(s);
	if (!dlrt_walltime_near(s->end, now, s->margin))
		return 0;
	d.left_s = s->end > now ? (uint32_t)(s->end - now) : 0;
	snprintf(d.why, sizeof(d.why), "Slurm time limit (margin %lld s)", (long long)s->margin);
	wlog("%u s to the job's time limit (margin %lld s): asking for no new tasks", d.left_s,
	     (long long)s->margin);
	s->drained = true;
	if (dlrt_ip_put_drain(&c->out, &d) < 0)
		return dlrt_err_set(err, "cannot queue a message");
	return locked_flush(s, c, err);
}

static struct kept *kept_at(struct wstate *s, uint32_t i)
{
	return &s->kept[(s->kept_head + i) % MAX_KEPT];
}

/* Frees the front slot, and drops freed slots from the front. */
static void kept_trim(struct wstate *s, bool drop_front)
{
	if (drop_front && s->nkept) {
		free(kept_at(s, 0)->frame);
		kept_at(s, 0)->frame = NULL;
	}
	while (s->nkept && !kept_at(s, 0)->frame) {
		s->kept_head = (s->kept_head + 1) % MAX_KEPT;
		s->nkept--;
	}
}

static void keep(struct wstate *s, uint32_t job, uint64_t task, const uint8_t *frame, size_t n)
{
	struct kept *k;

	if (s->nkept == MAX_KEPT) /* a coordinator that never acknowledges: drop the oldest */
		kept_trim(s, true);
	k = kept_at(s, s->nkept);
	k->frame = malloc(n);
	if (!k->frame)
		return;
	memcpy(k->frame, frame, n);
	k->len = n;
	k->job = job;
	k->task = task;
	s->nkept++;
}

static void forget(struct wstate *s, uint32_t job, uint64_t task)
{
	for (uint32_t i = 0; i < s->nkept; i++) {
		struct kept *k = kept_at(s, i);

		if (!k->frame || k->job != job || k->task != task)
			continue;
		free(k->frame);
		k->frame = NULL;
		kept_trim(s, false);
		return;
	}
}

static void forget_all(struct wstate *s)
{
	while (s->nkept)
		kept_trim(s, true);
}

/* A new coordinator: the answers the old one never acknowledged, again. */
static int resend_kept(struct wstate *s, struct dlrt_ipc *c, struct dlrt_err *err)
{
	uint32_t sent = 0;

	for (uint32_t i = 0; i < s->nkept; i++) {
		struct kept *k = kept_at(s, i);
		size_t at = c->out.len;

		if (!k->frame)
			continue;
		if (dlrt_buf_append(&c->out, k->frame, k->len) < 0)
			return dlrt_err_set(err, "cannot queue a message");
		dlrt_ip_frame_set_type(dlrt_buf_head(&c->out) + at, DLRT_IP_RESENT);
		sent++;
	}
	if (sent)
		wlog("re-sent %u answers the previous coordinator did not acknowledge", sent);
	return dlrt_ipc_flush(c, 30000, err);
}

/* PROMOTE: a standby process next to this worker (double fork: the worker
 * never waits for it, and it outlives nothing but this element). */
static void start_standby(struct wstate *s)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (fork() == 0) {
			char exe[PATH_MAX];
			ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

			if (n > 0) {
				exe[n] = '\0';
				setenv("DLRT_INFER_ROLE", "standby", 1);
				execl(exe, "dlrt-infer", "standby", "--pool", s->o->pool, "--name",
				      s->o->name, (char *)NULL);
			}
			_exit(127);
		}
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	wlog("asked to start a standby coordinator: started");
}

static int run_task(struct wstate *s, struct dlrt_ipc *c, const struct dlrt_ip_task *t,
		    struct dlrt_err *err)
{
	struct wjob *j = find_job(s, t->job);
	struct dlrt_err merr;
	int64_t t0 = dlrt_now_us();

	if (!j || j->error[0] || (uint64_t)t->first + t->n > j->count) {
		struct dlrt_ip_taskfail tf = { .job = t->job, .task = t->task,
						.attempt = t->attempt };

		snprintf(tf.error, sizeof(tf.error), "%s",
			 !j ? "task for a job the worker was not told about"
			    : j->error[0] ? j->error : "task outside the job's inputs");
		if (dlrt_ip_put_taskfail(&c->out, &tf) < 0)
			return dlrt_err_set(err, "cannot queue a message");
		return locked_flush(s, c, err);
	}
	if ((j->ext ? dlrt_extmodel_infer(j->ext, j->inputs->idx.data + (size_t)(j->first + t->first) *
					 j->inputs->idx.item_size, t->n,
					 (uint32_t)j->inputs->idx.item_size, s->pred, s->score,
					 EXT_TASK_MS, &merr)
		   : dlrt_model_infer_u8(j->model, j->inputs->idx.data +
					 (size_t)(j->first + t->first) * j->inputs->idx.item_size,
					 t->n, (int *)s->pred, s->score, &merr)) < 0) {
		struct dlrt_ip_taskfail tf = { .job = t->job, .task = t->task,
						.attempt = t->attempt };

		snprintf(tf.error, sizeof(tf.error), "%s", merr.msg);
		dlrt_ip_put_taskfail(&c->out, &tf);
		return locked_flush(s, c, err);
	}
	{
		struct dlrt_ip_result r = { .job = t->job, .task = t->task, .attempt = t->attempt,
					    .n = t->n, .pred = s->pred, .score = s->score };
		int64_t busy = dlrt_now_us() - t0;

		size_t at = c->out.len;

		r.busy_us = busy > UINT32_MAX ? UINT32_MAX : (uint32_t)busy;
		if (dlrt_ip_put_result(&c->out, &r) < 0)
			return dlrt_err_set(err, "cannot queue a message");
		keep(s, t->job, t->task, dlrt_buf_head(&c->out) + at, c->out.len - at);
	}
	return locked_flush(s, c, err);
}

/* One connection's life: 0 when it ended (coordinator gone), -1 on a hard error. */
static int serve(struct wstate *s, struct dlrt_ipc *c, struct dlrt_err *err)
{
	for (;;) {
		struct dlrt_ip_frame f;
		/* Idle checks every 250 ms: a coordinator that was only stopped keeps
		 * the connection open, and its successor's record must be seen soon. */
		int rc = dlrt_ipc_recv(c, &f, 250, err);

		if (rc < 0)
			return 0;
		if (check_walltime(s, c, err) < 0)
			return 0;
		if (rc == 0) {
			/* Idle: is the pool still there? */
			struct dlrt_pool_access a;
			struct dlrt_err e2;

			if (dlrt_pool_read_access(s->o->pool, &a, &e2) != 0 || a.epoch != c->epoch)
				return 0;
			if (dlrt_now_ms() - s->heard_ms > SILENCE_PROBE_MS) {
				if (!coordinator_answers(s->o->pool)) {
					wlog("the coordinator (epoch %llu) does not answer: reconnecting",
					     (unsigned long long)c->epoch);
					return 0;
				}
				s->heard_ms = dlrt_now_ms();
			}
			for (uint32_t i = 0; i < s->njobs; i++)
				if (s->jobs[i].kept && dlrt_now_ms() - s->connected_ms > KEPT_JOB_MS)
					drop_job(s, s->jobs[i--].id);
			continue;
		}
		s->heard_ms = dlrt_now_ms();
		switch (f.type) {
		case DLRT_IP_JOBINFO: {
			struct dlrt_ip_jobinfo ji;

			if (dlrt_ip_get_jobinfo(f.payload, f.len, &ji, err) < 0)
				return -1;
			add_job(s, &ji);
			if (find_job(s, ji.job) && find_job(s, ji.job)->error[0])
				wlog("job %u cannot run here: %s", ji.job, find_job(s, ji.job)->error);
			break;
		}
		case DLRT_IP_TASK: {
			struct dlrt_ip_task t;

			if (dlrt_ip_get_task(f.payload, f.len, &t, err) < 0)
				return -1;
			if (run_task(s, c, &t, err) < 0)
				return 0;
			break;
		}
		case DLRT_IP_ACK: {
			struct dlrt_ip_ack a;

			if (dlrt_ip_get_ack(f.payload, f.len, &a, err) < 0)
				return -1;
			forget(s, a.job, a.task);
			break;
		}
		case DLRT_IP_PROMOTE:
			if (dlrt_ip_get_empty(f.payload, f.len, err) < 0)
				return -1;
			start_standby(s);
			break;
		case DLRT_IP_DROP: {
			struct dlrt_ip_jobref r;

			if (dlrt_ip_get_jobref(f.payload, f.len, &r, err) < 0)
				return -1;
			drop_job(s, r.job);
			break;
		}
		default:
			return dlrt_err_set(err, "the coordinator sent %s to a worker",
					    dlrt_ip_type_name(f.type));
		}
	}
}

static void default_model_dir(struct wstate *s)
{
	char exe[PATH_MAX], dir[PATH_MAX];
	ssize_t n;

	if (s->o->model_dir && *s->o->model_dir) {
		snprintf(s->model_dir, sizeof(s->model_dir), "%s", s->o->model_dir);
		return;
	}
	if (getenv("DLRT_MODEL_DIR") && *getenv("DLRT_MODEL_DIR"))
		return; /* dlrt_model_open reads it */
	/* The compiled-in model folder, or the same place relative to dlrt-infer
	 * in a moved tree (common/instpath.h); dlrt_model_open reports a miss. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	if (dlrt_instpath_find(dlrt_instpath_modeldir, n > 0 ? exe : NULL,
			       dlrt_instpath_bin_to_modeldir, ".", dir, sizeof(dir), NULL) == 0)
		snprintf(s->model_dir, sizeof(s->model_dir), "%.*s", (int)strlen(dir) - 2, dir);
}

int dlrt_worker_run(const struct dlrt_worker_opts *o, struct dlrt_err *err)
{
	struct wstate s = { .o = o };
	int64_t deadline = dlrt_now_ms() + (int64_t)(o->wait_s > 0 ? o->wait_s : 300) * 1000;
	bool served = false;
	int rc = -1;
	struct dlrt_hbsend *hb = NULL;
	/* The record's epoch whose coordinator this worker cannot reach, and
	 * since when: past the takeover bound it tries to take over. */
	uint64_t lost_epoch = 0;
	int64_t lost_ms = 0;
	int takeover_ms = dlrt_worker_takeover_ms(o->index);

	signal(SIGPIPE, SIG_IGN);
	pthread_mutex_init(&s.wlock, NULL);
	if (dlrt_walltime_margin(o->walltime_margin, &s.margin, err) < 0)
		return -1;
	default_model_dir(&s);
	s.pred = malloc(DLRT_IP_MAX_BATCH * sizeof(*s.pred));
	s.score = malloc(DLRT_IP_MAX_BATCH * sizeof(*s.score));
	if (!s.pred || !s.score) {
		dlrt_err_set(err, "out of memory");
		goto out;
	}
	for (;;) {
		struct dlrt_ipc c;
		struct dlrt_pool_access a;
		int r = dlrt_pool_read_access(o->pool, &a, err);

		if (r < 0)
			goto out;
		if (r > 0 && served) {
			rc = 0; /* the coordinator removed its record: the pool stopped */
			wlog("the pool stopped");
			goto out;
		}
		/* A short connect timeout: a lost node's address stays in a stale
		 * record until the standby replaces it. */
		if (r == 0 && dlrt_ipc_open(&c, o->pool, DLRT_IP_ROLE_WORKER, o->name, 1000,
					    err) == 0) {
			wlog("worker %u of pool %s (epoch %llu)", c.id, o->pool,
			     (unsigned long long)c.epoch);
			served = true;
			lost_epoch = 0;
			s.connected_ms = dlrt_now_ms();
			s.heard_ms = s.connected_ms;
			s.drained = false;
			/* Before the heartbeat thread shares the socket. */
			if (resend_kept(&s, &c, err) < 0) {
				r = 0;
			} else {
				if (dlrt_hbsend_start(&hb, c.fd, (int)c.heartbeat_ms, &s.wlock) < 0)
					wlog("cannot start the heartbeat thread: the coordinator will "
					     "declare this worker dead when it is silent");
				r = serve(&s, &c, err);
				dlrt_hbsend_stop(hb);
				hb = NULL;
			}
			dlrt_ipc_close(&c);
			if (r < 0)
				goto out;
			/* Jobs restart from JOBINFO on the next connection; their models
			 * stay loaded until then (KEPT_JOB_MS). */
			for (uint32_t i = 0; i < s.njobs; i++)
				s.jobs[i].kept = true;
			deadline = dlrt_now_ms() + (int64_t)(o->wait_s > 0 ? o->wait_s : 300) * 1000;
			continue;
		}
		if (r == 0 && served && takeover_ms > 0) {
			char jp[4200];
			struct stat jsb;

			if (a.epoch != lost_epoch) {
				lost_epoch = a.epoch;
				lost_ms = dlrt_now_ms();
			}
			snprintf(jp, sizeof(jp), "%s/journal", o->pool);
			/* Without a journal there is nothing to take over from. */
			if (dlrt_now_ms() - lost_ms > takeover_ms && lstat(jp, &jsb) == 0) {
				wlog("the coordinator of epoch %llu and its standby are both lost for "
				     "%.1f s: this worker takes over as the coordinator (the pool has one "
				     "worker fewer)", (unsigned long long)a.epoch,
				     (double)(dlrt_now_ms() - lost_ms) / 1000);
				rc = DLRT_WORKER_TAKEOVER;
				goto out;
			}
		}
		if (dlrt_now_ms() > deadline) {
			dlrt_err_set(err, "no coordinator reachable through %s for %d s: start the "
				     "pool's element 0, or give another --pool", o->pool,
				     o->wait_s > 0 ? o->wait_s : 300);
			goto out;
		}
		/* Short: after a failover the new record appears within milliseconds. */
		usleep(50000);
	}
out:
	forget_all(&s);
	while (s.njobs)
		drop_job(&s, s.jobs[0].id);
	free(s.jobs);
	free(s.pred);
	free(s.score);
	pthread_mutex_destroy(&s.wlock);
	return rc;
}
