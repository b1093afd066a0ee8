#include "pmix_bridge.h"

#include "common/clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pmix.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A PMIx non-blocking call completes on PMIx's progress thread; the caller waits
 * for it on a condition variable with a deadline. A completion that arrives
 * after we gave up must not touch freed memory, so the waiter is heap-allocated
 * and whoever finishes second frees it. */
struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	bool abandoned;
	pmix_status_t status;
	char *value; /* for gets */
};

static struct waiter *waiter_new(void)
{
	struct waiter *w = calloc(1, sizeof(*w));

	pthread_condattr_t attr;

	if (!w)
		return NULL;
	pthread_mutex_init(&w->mu, NULL);
	/* Its deadline is on dlrt's one clock (common/clock.h), not the wall
	 * clock, which an NTP step could move. */
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &attr);
	pthread_condattr_destroy(&attr);
	return w;
}

static void waiter_free(struct waiter *w)
{
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w->value);
	free(w);
}

/* Called with the value already copied (or NULL). */
static void waiter_complete(struct waiter *w, pmix_status_t status, char *value)
{
	bool abandoned;

	pthread_mutex_lock(&w->mu);
	w->status = status;
	w->value = value;
	w->done = true;
	abandoned = w->abandoned;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (abandoned)
		waiter_free(w);
}

/* Returns 0 when completed (status in w->status), -1 on timeout (w is then
 * owned by the completion callback). */
static int waiter_wait(struct waiter *w, int timeout_s)
{
	int64_t until = dlrt_now_ns() + (int64_t)timeout_s * 1000000000;
	struct timespec deadline = { until / 1000000000, until % 1000000000 };
	int rc = 0;

	pthread_mutex_lock(&w->mu);
	while (!w->done && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&w->cv, &w->mu, &deadline);
	if (!w->done) {
		w->abandoned = true;
		pthread_mutex_unlock(&w->mu);
		return -1;
	}
	pthread_mutex_unlock(&w->mu);
	return 0;
}

static void op_cb(pmix_status_t status, void *cbdata)
{
	waiter_complete(cbdata, status, NULL);
}

static void value_cb(pmix_status_t status, pmix_value_t *kv, void *cbdata)
{
	char *copy = NULL;

	if (status == PMIX_SUCCESS && kv && kv->type == PMIX_STRING && kv->data.string)
		copy = strdup(kv->data.string);
	else if (status == PMIX_SUCCESS)
		status = PMIX_ERR_TYPE_MISMATCH;
	waiter_complete(cbdata, status, copy);
}

/* The job size arrives as a uint32; carried as text so one waiter type serves. */
static void size_cb(pmix_status_t status, pmix_value_t *kv, void *cbdata)
{
	char *copy = NULL;

	if (status == PMIX_SUCCESS && kv && kv->type == PMIX_UINT32 &&
	    asprintf(&copy, "%u", kv->data.uint32) < 0)
		copy = NULL;
	if (status == PMIX_SUCCESS && !copy)
		status = PMIX_ERR_TYPE_MISMATCH;
	waiter_complete(cbdata, status, copy);
}

bool dlrt_pmix_available(void)
{
	return getenv("PMIX_NAMESPACE") && getenv("PMIX_RANK");
}

/* The job size, read without blocking past the timeout. */
static int job_size(struct dlrt_pmix *p, struct dlrt_err *err)
{
	pmix_proc_t wild;
	struct waiter *w = waiter_new();
	pmix_status_t rc;
	char *end = NULL;

	if (!w)
		return dlrt_err_set(err, "out of memory");
	PMIX_LOAD_PROCID(&wild, p->nspace, PMIX_RANK_WILDCARD);
	rc = PMIx_Get_nb(&wild, PMIX_JOB_SIZE, NULL, 0, size_cb, w);
	if (rc != PMIX_SUCCESS) {
		waiter_free(w);
		return dlrt_err_set(err, "PMIx did not report the job size: %s",
				    PMIx_Error_string(rc));
	}
	if (waiter_wait(w, p->timeout_s) < 0) {
		return dlrt_err_set(err, "PMIx did not report the job size within %d s: is this "
				    "process a fork of a PMIx server (never call dlrt_pmix_open "
				    "in slurmstepd)?", p->timeout_s);
	}
	rc = w->status;
	if (rc == PMIX_SUCCESS)
		p->size = (uint32_t)strtoul(w->value, &end, 10);
	waiter_free(w);
	if (rc != PMIX_SUCCESS || !p->size)
		return dlrt_err_set(err, "PMIx did not report the job size: %s",
				    PMIx_Error_string(rc));
	return 0;
}

/* PMIx_Init, PMIx_Commit and PMIx_Finalize block until the local server answers; a
 * slurmstepd busy retrying messages to nodes that left the step answers only
 * after tens of seconds (observed). They run in a thread here, waited for with
 * the timeout; a call that overruns is abandoned (the process exits soon). */
enum blocking_op { CALL_INIT, CALL_COMMIT, CALL_FINALIZE };

struct blocking_call {
	struct waiter *w;
	enum blocking_op op;
	pmix_proc_t me;
};

static void *blocking_call_run(void *arg)
{
	struct blocking_call *c = arg;
	pmix_status_t rc = c->op == CALL_INIT	 ? PMIx_Init(&c->me, NULL, 0)
			   : c->op == CALL_COMMIT ? PMIx_Commit()
						  : PMIx_Finalize(NULL, 0);

	waiter_complete(c->w, rc, NULL);
	return NULL;
}

/* Returns the call's status, or PMIX_ERR_TIMEOUT if it did not return in time. */
static pmix_status_t run_bounded(struct blocking_call *c, int timeout_s)
{
	pthread_t t;
	pmix_status_t rc;

	c->w = waiter_new();
	if (!c->w)
		return PMIX_ERR_NOMEM;
	if (pthread_create(&t, NULL, blocking_call_run, c) != 0) {
		waiter_free(c->w);
		return PMIX_ERR_OUT_OF_RESOURCE;
	}
	pthread_detach(t);
	if (waiter_wait(c->w, timeout_s) < 0)
		return PMIX_ERR_TIMEOUT; /* c stays allocated: the thread may still use it */
	rc = c->w->status;
	waiter_free(c->w);
	return rc;
}

static pmix_status_t commit_bounded(int timeout_s)
{
	struct blocking_call *c = calloc(1, sizeof(*c));
	pmix_status_t rc;

	if (!c)
		return PMIX_ERR_NOMEM;
	c->op = CALL_COMMIT;
	rc = run_bounded(c, timeout_s);
	if (rc != PMIX_ERR_TIMEOUT)
		free(c);
	return rc;
}

static pmix_status_t init_bounded(pmix_proc_t *me, int timeout_s)
{
	struct blocking_call *c = calloc(1, sizeof(*c));
	pmix_status_t rc;

	if (!c)
		return PMIX_ERR_NOMEM;
	rc = run_bounded(c, timeout_s);
	if (rc == PMIX_ERR_TIMEOUT)
		return rc;
	*me = c->me;
	free(c);
	return rc;
}

/* The rank this process asks to be (PMIX_RANK), for messages. */
static const char *pmix_rank_text(void)
{
	const char *r = getenv("PMIX_RANK");

	return r && *r && strlen(r) < 12 ? r : "?";
}

int dlrt_pmix_open(struct dlrt_pmix *p, int timeout_s, struct dlrt_err *err)
{
	pmix_proc_t me;
	pmix_status_t rc;

	memset(p, 0, sizeof(*p));
	p->timeout_s = timeout_s > 0 ? timeout_s : DLRT_PMIX_DEFAULT_TIMEOUT_S;
	if (!dlrt_pmix_available())
		return dlrt_err_set(err, "this step has no PMIx, which dlrt needs to exchange "
				    "addresses: add --mpi=pmix to srun, or ask your admin for "
				    "MpiDefault=pmix");
	/* The shared-memory data stores (gds ds21/ds12) are created by the node's
	 * PMIx server when the first client of the step connects: two 4 MiB
	 * segments allocated and written by slurmstepd while the client waits,
	 * 10-30 ms of a step's start (bench/RESULTS.md, "MXNet wire-up"). A
	 * handful of keys needs none of that: the hash store answers from the
	 * messages themselves. Only this process is affected; a user's own
	 * choice wins. */
	setenv("PMIX_MCA_gds", "hash", 0);
	/* A server admits one connection per rank, and Slurm's admits anyone on
	 * the node who states the job owner's uid: a process that connected as
	 * this rank first is as likely as a server that is gone, so the line
	 * names both. Such a process can be there also in a job that holds its
	 * nodes alone (one an earlier job left behind where ProctrackType is not
	 * proctrack/cgroup, or a login), so the line advises nothing the job may
	 * already have, such as --exclusive. */
	rc = init_bounded(&me, p->timeout_s);
	if (rc == PMIX_ERR_TIMEOUT)
		return dlrt_err_set(err, "Slurm's PMIx server did not admit this task as rank %s "
				    "within %d s: another process connected as that rank first "
				    "(any process on this node can: another user's job or login, or "
				    "one an earlier job left behind where ProctrackType is not "
				    "proctrack/cgroup), or the step's slurmstepd is overloaded or "
				    "gone; use --dl-exchange=srun (docs/ADMIN.md: when auto takes "
				    "PMIx)", pmix_rank_text(), p->timeout_s);
	if (rc != PMIX_SUCCESS)
		return dlrt_err_set(err, "Slurm's PMIx server refused this task as rank %s (%s): "
				    "another process connected as that rank first (any process on "
				    "this node can: another user's job or login, or one an earlier "
				    "job left behind where ProctrackType is not proctrack/cgroup), "
				    "or the step has no PMIx server (start it with --mpi=pmix); use "
				    "--dl-exchange=srun (docs/ADMIN.md: when auto takes PMIx)",
				    pmix_rank_text(), PMIx_Error_string(rc));
	p->open = true;
	p->rank = me.rank;
	snprintf(p->nspace, sizeof(p->nspace), "%s", me.nspace);
	if (job_size(p, err) < 0) {
		dlrt_pmix_close(p);
		return -1;
	}
	return 0;
}

int dlrt_pmix_put(struct dlrt_pmix *p, const char *key, const char *value,
		  struct dlrt_err *err)
{
	char k[PMIX_MAX_KEYLEN + 1];
	pmix_value_t v;
	pmix_status_t rc;

	if (!p->open)
		return dlrt_err_set(err, "PMIx put before dlrt_pmix_open");
	if (snprintf(k, sizeof(k), "dlrt.%s", key) >= (int)sizeof(k))
		return dlrt_err_set(err, "PMIx key 'dlrt.%s' is too long", key);
	PMIX_VALUE_CONSTRUCT(&v);
	v.type = PMIX_STRING;
	v.data.string = (char *)value;
	rc = PMIx_Put(PMIX_GLOBAL, k, &v);
	if (rc == PMIX_SUCCESS)
		rc = commit_bounded(p->timeout_s);
	if (rc == PMIX_ERR_TIMEOUT) {
		return dlrt_err_set(err, "Slurm's PMIx server did not take %s within %d s (is its "
				    "slurmstepd overloaded, or did the other nodes leave the step?)",
				    k, p->timeout_s);
	}
	if (rc != PMIX_SUCCESS)
		return dlrt_err_set(err, "PMIx put of %s failed: %s", k, PMIx_Error_string(rc));
	return 0;
}

/* After a timed-out fence: which ranks never published their arrival mark?
 * Asks each rank with a short bounded get, at most a handful, so the report
 * itself stays bounded. */
static void name_missing(struct dlrt_pmix *p, char *out, size_t len)
{
	size_t off = 0;
	int listed = 0;
	time_t give_up = time(NULL) + 5;

	out[0] = '\0';
	for (uint32_t r = 0; r < p->size && listed < 8 && time(NULL) < give_up; r++) {
		pmix_proc_t proc;
		pmix_info_t info[1];
		int one = 1;
		struct waiter *w = waiter_new();
		bool missing = true;

		if (!w)
			break;
		PMIX_LOAD_PROCID(&proc, p->nspace, r);
		PMIX_INFO_LOAD(&info[0], PMIX_TIMEOUT, &one, PMIX_INT);
		if (PMIx_Get_nb(&proc, "dlrt.arrived", info, 1, value_cb, w) == PMIX_SUCCESS) {
			if (waiter_wait(w, 2) == 0) {
				missing = w->status != PMIX_SUCCESS;
				waiter_free(w);
			}
		} else {
			waiter_free(w);
		}
		if (missing) {
			int n = snprintf(out + off, len - off, "%s%u", listed ? ", " : "", r);

			if (n > 0 && (size_t)n < len - off)
				off += (size_t)n;
			listed++;
		}
	}
	if (!listed)
		snprintf(out, len, "unknown");
}

static int fence_procs(struct dlrt_pmix *p, const pmix_proc_t *procs, size_t nprocs,
		       const char *what, struct dlrt_err *err)
{
	pmix_info_t info[1];
	bool collect = true;
	struct waiter *w = waiter_new();
	pmix_status_t rc;

	if (!w)
		return dlrt_err_set(err, "out of memory");
	PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
	rc = PMIx_Fence_nb(procs, nprocs, info, 1, op_cb, w);
	if (rc != PMIX_SUCCESS) {
		waiter_free(w);
		return dlrt_err_set(err, "PMIx %s failed to start: %s", what, PMIx_Error_string(rc));
	}
	if (waiter_wait(w, p->timeout_s) < 0) {
		char missing[128];

		name_missing(p, missing, sizeof(missing));
		return dlrt_err_set(err, "PMIx %s timed out after %d s; ranks that did not arrive: "
				    "%s (did those tasks fail to start? see their node's slurmd log)",
				    what, p->timeout_s, missing);
	}
	rc = w->status;
	waiter_free(w);
	if (rc != PMIX_SUCCESS)
		return dlrt_err_set(err, "PMIx %s failed: %s", what, PMIx_Error_string(rc));
	return 0;
}

int dlrt_pmix_fence(struct dlrt_pmix *p, struct dlrt_err *err)
{
	pmix_proc_t all;

	/* The arrival mark lets a timed-out fence name who is missing. */
	if (dlrt_pmix_put(p, "arrived", "1", err) < 0)
		return -1;
	PMIX_LOAD_PROCID(&all, p->nspace, PMIX_RANK_WILDCARD);
	return fence_procs(p, &all, 1, "fence", err);
}

/* Node-local barrier. Slurm's PMIx server refuses fences over a subset of the
 * ranks ("pmixp_coll_init: Bad ranges information"), so the tasks of a node meet
 * through marker files in the step's node-private PMIx folder instead: each
 * task creates <dir>/dlrt-barrier.<n>.<rank>, then waits (10 ms polls, bounded)
 * until PMIX_LOCAL_SIZE markers of generation <n> exist. Slurm removes the
 * folder when the step ends. */
int dlrt_pmix_local_barrier(struct dlrt_pmix *p, struct dlrt_err *err)
{
	const char *dir = getenv("PMIX_SERVER_TMPDIR");
	pmix_proc_t wild;
	pmix_value_t *val = NULL;
	uint32_t local_size;
	char path[PATH_MAX];
	int64_t deadline;
	int fd;

	if (!dir || !*dir)
		return dlrt_err_set(err, "PMIX_SERVER_TMPDIR is not set: not a Slurm PMIx step?");
	PMIX_LOAD_PROCID(&wild, p->nspace, PMIX_RANK_WILDCARD);
	if (PMIx_Get(&wild, PMIX_LOCAL_SIZE, NULL, 0, &val) != PMIX_SUCCESS || !val ||
	    val->type != PMIX_UINT32) {
		if (val)
			PMIX_VALUE_RELEASE(val);
		return dlrt_err_set(err, "PMIx did not report the number of tasks on this node");
	}
	local_size = val->data.uint32;
	PMIX_VALUE_RELEASE(val);
	p->barrier_gen++;
	snprintf(path, sizeof(path), "%s/dlrt-barrier.%u.%u", dir, p->barrier_gen, p->rank);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return dlrt_err_errno(err, errno, "cannot create %s", path);
	close(fd);
	deadline = dlrt_now_ms() + (int64_t)p->timeout_s * 1000;
	for (;;) {
		char prefix[64];
		uint32_t seen = 0;
		struct dirent *de;
		DIR *d = opendir(dir);

		if (!d)
			return dlrt_err_errno(err, errno, "cannot read %s", dir);
		snprintf(prefix, sizeof(prefix), "dlrt-barrier.%u.", p->barrier_gen);
		while ((de = readdir(d)))
			seen += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
		closedir(d);
		if (seen >= local_size)
			return 0;
		if (dlrt_now_ms() >= deadline)
			return dlrt_err_set(err, "node barrier timed out after %d s: %u of %u tasks "
					    "of this node arrived", p->timeout_s, seen, local_size);
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
}

/* One bounded get. Returns 0 (value in out), 1 if the key is not there (yet),
 * -1 on a hard error. */
static int get_once(struct dlrt_pmix *p, uint32_t rank, const char *k, int wait_s, char *out,
		    size_t len, struct dlrt_err *err)
{
	pmix_proc_t proc;
	pmix_info_t info[1];
	struct waiter *w = waiter_new();
	pmix_status_t rc;

	if (!w)
		return dlrt_err_set(err, "out of memory");
	PMIX_LOAD_PROCID(&proc, p->nspace, rank);
	/* The server drops the request after wait_s, so a request lost between
	 * slurmstepds does not swallow the retries that follow it. */
	PMIX_INFO_LOAD(&info[0], PMIX_TIMEOUT, &wait_s, PMIX_INT);
	rc = PMIx_Get_nb(&proc, k, info, 1, value_cb, w);
	if (rc != PMIX_SUCCESS) {
		waiter_free(w);
		return dlrt_err_set(err, "PMIx get of %s from rank %u failed: %s", k, rank,
				    PMIx_Error_string(rc));
	}
	if (waiter_wait(w, wait_s + 1) < 0) {
		/* The server did not answer (observed on Slurm 22.05 when a request
		 * between slurmstepds is lost): ask again; the abandoned waiter is
		 * freed by its late callback, if any. */
		return 1;
	}
	rc = w->status;
	if (rc == PMIX_SUCCESS && strlen(w->value) >= len)
		rc = PMIX_ERR_BAD_PARAM;
	if (rc == PMIX_SUCCESS)
		memcpy(out, w->value, strlen(w->value) + 1);
	waiter_free(w);
	if (rc == PMIX_SUCCESS)
		return 0;
	if (rc == PMIX_ERR_NOT_FOUND || rc == PMIX_ERR_TIMEOUT || rc == PMIX_ERR_PROC_ENTRY_NOT_FOUND)
		return 1;
	return dlrt_err_set(err, "rank %u has no %s: %s", rank, k, PMIx_Error_string(rc));
}

static int make_key(char k[PMIX_MAX_KEYLEN + 1], const char *key, struct dlrt_err *err)
{
	if (snprintf(k, PMIX_MAX_KEYLEN + 1, "dlrt.%s", key) >= PMIX_MAX_KEYLEN + 1)
		return dlrt_err_set(err, "PMIx key 'dlrt.%s' is too long", key);
	return 0;
}

int dlrt_pmix_get(struct dlrt_pmix *p, uint32_t rank, const char *key, char *out, size_t len,
		  struct dlrt_err *err)
{
	char k[PMIX_MAX_KEYLEN + 1];
	int rc;

	if (rank >= p->size)
		return dlrt_err_set(err, "rank %u does not exist (the step has %u)", rank, p->size);
	if (make_key(k, key, err) < 0)
		return -1;
	rc = get_once(p, rank, k, p->timeout_s, out, len, err);
	if (rc == 1)
		return dlrt_err_set(err, "rank %u has no %s (did it put it before the fence? "
				    "or, with no fence, use await)", rank, k);
	return rc;
}

int dlrt_pmix_await(struct dlrt_pmix *p, uint32_t rank, const char *key, char *out, size_t len,
		    struct dlrt_err *err)
{
	char k[PMIX_MAX_KEYLEN + 1];
	int64_t deadline = dlrt_now_ms() + (int64_t)p->timeout_s * 1000;
	long pause_ms = 2;

	if (rank >= p->size)
		return dlrt_err_set(err, "rank %u does not exist (the step has %u)", rank, p->size);
	if (make_key(k, key, err) < 0)
		return -1;
	for (;;) {
		int64_t left = deadline - dlrt_now_ms();
		int rc;

		if (left <= 0)
			return dlrt_err_set(err, "rank %u did not publish %s within %d s (did that "
					    "task start? see its node's slurmd log)", rank, k,
					    p->timeout_s);
		rc = get_once(p, rank, k, left < 2000 ? 1 : 2, out, len, err);
		if (rc <= 0)
			return rc;
		/* Not there yet: the other task is still starting. Back off a little
		 * so a large step does not flood the root's slurmstepd. */
		nanosleep(&(struct timespec){ 0, pause_ms * 1000 * 1000 }, NULL);
		if (pause_ms < (p->max_pause_ms > 0 ? p->max_pause_ms : 25))
			pause_ms *= 2;
	}
}

int dlrt_pmix_await_all(struct dlrt_pmix *p, const char *key,
			void (*got)(uint32_t rank, const char *value, void *arg), void *arg,
			struct dlrt_err *err)
{
	char k[PMIX_MAX_KEYLEN + 1], value[4096], missing[128];
	int64_t deadline = dlrt_now_ms() + (int64_t)p->timeout_s * 1000, give_up;
	size_t off = 0;
	uint32_t r, nmissing = 0;
	long pause_ms = 2;

	if (make_key(k, key, err) < 0)
		return -1;
	for (r = 0; r < p->size;) {
		int64_t left = deadline - dlrt_now_ms();
		int rc;

		if (left <= 0)
			break;
		rc = get_once(p, r, k, left < 2000 ? 1 : 2, value, sizeof(value), err);
		if (rc < 0)
			return -1;
		if (rc == 0) {
			got(r++, value, arg);
			pause_ms = 2;
			continue;
		}
		nanosleep(&(struct timespec){ 0, pause_ms * 1000 * 1000 }, NULL);
		if (pause_ms < 25)
			pause_ms *= 2;
	}
	if (r == p->size)
		return 0;
	/* Name the ranks still missing: one quick look at each, bounded in total. */
	missing[0] = '\0';
	give_up = dlrt_now_ms() + 4000;
	for (; r < p->size && dlrt_now_ms() < give_up; r++) {
		if (get_once(p, r, k, 1, value, sizeof(value), err) == 0)
			continue;
		if (nmissing++ < 8) {
			int n = snprintf(missing + off, sizeof(missing) - off, "%s%u",
					 off ? ", " : "", r);

			if (n > 0 && (size_t)n < sizeof(missing) - off)
				off += (size_t)n;
		}
	}
	return dlrt_err_set(err, "tasks %s%s did not publish %s within %d s (did they start? "
			    "see their node's slurmd log)", missing[0] ? missing : "?",
			    nmissing > 8 || r < p->size ? " and maybe more" : "", k, p->timeout_s);
}

void dlrt_pmix_close(struct dlrt_pmix *p)
{
	/* Always Finalize, also after a call that timed out: Slurm's PMIx plugin
	 * takes a client that disconnects without it for a crashed task and kills
	 * the whole step ("_errhandler: ... status = -61"). Skipping it after a
	 * get lost between nodes and asked again, or after a linger that outlived
	 * the node it asked, killed steps whose exchange had succeeded (t/84).
	 * The local server answers even then (about 2 s there, while it still
	 * retries its sends to the node that left); bounded like every call. */
	if (p->open) {
		struct blocking_call *c = calloc(1, sizeof(*c));

		if (c) {
			c->op = CALL_FINALIZE;
			if (run_bounded(c, p->timeout_s) != PMIX_ERR_TIMEOUT)
				free(c);
		}
	}
	p->open = false;
}
