/* lcshare.c - one process per step asks slurmctld for the job's times, the
 * step's other nodes learn them through srun's rendezvous (lcshare.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <slurm/slurm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/parse.h"
#include "common/slurm_compat.h"
#include "lcshare.h"
#include "lcwatch.h"

#define RDV_WAIT_MS 5000   /* a connection, a request, an answer that has begun */
#define RETRY_S 10         /* between tries to connect */
#define TRIES 3            /* failed connections before FOLLOW asks slurmctld itself */
#define FOLLOW_FIRST_S 60  /* FOLLOW asks slurmctld itself without a value by then */
#define ASK_EVERY_S 10     /* a preemption or a changed limit is seen within this */
/* The next value's key: per job, so that each component of a heterogeneous
 * step (a job of its own, with its own time limit) has its own sequence. */
#define KEY_FMT "dlrt-lc/%u/%u"

void dlrt_lcshare_init(struct dlrt_lcshare *s, uint32_t job)
{
	memset(s, 0, sizeof(*s));
	s->role = DLRT_LCSHARE_ASK;
	s->job = job;
	s->rdv.fd = -1;
	s->started = time(NULL);
}

int dlrt_lcshare_rendezvous(struct dlrt_lcshare *s, enum dlrt_lcshare_role role,
			    const char *addr, int secret_fd)
{
	const char *colon = strrchr(addr, ':');
	struct in_addr a;
	uint32_t port = 0;
	size_t got = 0;

	while (secret_fd >= 0 && got < sizeof(s->secret)) {
		ssize_t n = read(secret_fd, s->secret + got, sizeof(s->secret) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (secret_fd >= 0)
		close(secret_fd);
	if (!colon || (size_t)(colon - addr) >= sizeof(s->ip) || got != sizeof(s->secret) ||
	    dlrt_parse_u32(colon + 1, 1, 65535, &port) < 0) {
		fprintf(stderr, DLRT_LCW_PROG ": --times %s: not IP:PORT with the step secret on "
			"--secret-fd (started by dlrt's plugin?); this node asks slurmctld itself\n",
			addr);
		return -1;
	}
	snprintf(s->ip, sizeof(s->ip), "%.*s", (int)(colon - addr), addr);
	if (inet_pton(AF_INET, s->ip, &a) != 1) {
		fprintf(stderr, DLRT_LCW_PROG ": --times %s: not an IPv4 address; this node asks "
			"slurmctld itself\n", addr);
		return -1;
	}
	s->port = (uint16_t)port;
	s->role = role;
	return 0;
}

/* libslurm's plugins (auth, hash) and slurm.conf ($SLURM_CONF, passed by the
 * plugin): Slurm 24.11 no longer loads them on the first call, and its first
 * RPC without them dies in the auth plugin (no warning, no requeue, nothing
 * logged). Only where this process asks slurmctld: a follower never does. */
static void slurm_up(struct dlrt_lcshare *s)
{
	if (!s->slurm_up)
		slurm_init(NULL);
	s->slurm_up = true;
}

/* The job as slurmctld sees it now into s->times; -1 if it cannot tell. */
static int ask(struct dlrt_lcshare *s)
{
	job_info_msg_t *msg = NULL;
	struct dlrt_lc_job j = { .now = time(NULL) };
	int rc = -1, e;

	slurm_up(s);
	/* libslurm's error is in errno (Slurm 24.11 has no slurm_get_errno). */
	errno = 0;
	if (dlrt_slurm_load_job(&msg, s->job, SHOW_ALL) == SLURM_SUCCESS && msg &&
	    msg->record_count >= 1) {
		const job_info_t *ji = &msg->job_array[0];

		j.end_time = ji->end_time;
		j.preempt_time = ji->preempt_time;
		j.running = (ji->job_state & JOB_STATE_BASE) == JOB_RUNNING;
		j.restart_cnt = ji->restart_cnt;
		rc = 0;
	}
	e = errno;
	if (msg)
		slurm_free_job_info_msg(msg);
	if (rc < 0 && !s->load_failed)
		fprintf(stderr, DLRT_LCW_PROG ": job %u: slurmctld does not answer (%s); asking "
			"again\n", s->job, slurm_strerror(e));
	s->load_failed = rc < 0;
	if (rc == 0) {
		s->times = j;
		s->known = true;
	}
	return rc;
}

/* Closes the connection (dlrt_rdv_close forgets its copy of the secret). */
static void drop(struct dlrt_lcshare *s)
{
	dlrt_rdv_close(&s->rdv);
	s->waiting = false;
}

/* FOLLOW that cannot count on the rendezvous: asks slurmctld itself from now on. */
static void ask_instead(struct dlrt_lcshare *s, const char *why)
{
	fprintf(stderr, DLRT_LCW_PROG ": job %u: %s; this node asks slurmctld for the job's "
		"times itself\n", s->job, why);
	drop(s);
	s->role = DLRT_LCSHARE_ASK;
	s->fresh_by = 0;
}

/* One more failure in a row at the rendezvous (a connection, or an answer
 * that was not a signed value: something else took srun's port?): FOLLOW
 * asks slurmctld itself after TRIES of them, so nothing there can keep a
 * node's tasks from their warning. A value taken or set ends the row. */
static void failed(struct dlrt_lcshare *s, const char *why)
{
	if (++s->failures >= TRIES && s->role == DLRT_LCSHARE_FOLLOW)
		ask_instead(s, why);
	else if (s->failures == 1)
		fprintf(stderr, DLRT_LCW_PROG ": job %u: %s; trying again\n", s->job, why);
}

/* Connected to the rendezvous (one try, bounded); false if not. */
static bool connected(struct dlrt_lcshare *s)
{
	struct dlrt_err err;
	time_t now = time(NULL);

	if (s->rdv.fd >= 0)
		return true;
	if (now < s->retry_at)
		return false;
	if (dlrt_rdv_connect(&s->rdv, s->ip, s->port, s->secret, dlrt_now_ms() + RDV_WAIT_MS,
			     &err) == 0)
		return true;
	s->retry_at = now + RETRY_S;
	failed(s, err.msg);
	return false;
}

/* PUBLISH: the times, if they changed, as the next key (set, then read back). */
static void publish(struct dlrt_lcshare *s)
{
	char value[DLRT_LCTIMES_MAX], key[32], *back = NULL;
	const char *keys[1] = { key };
	struct dlrt_err err;

	dlrt_lctimes_format(&s->times, value);
	if (!strcmp(value, s->published) || !connected(s))
		return;
	snprintf(key, sizeof(key), KEY_FMT, s->job, s->seq + 1);
	s->rdv.deadline_ms = dlrt_now_ms() + RDV_WAIT_MS;
	if (dlrt_rdv_set(&s->rdv, key, value, &err) < 0 ||
	    dlrt_rdv_get(&s->rdv, keys, 1, &back, &err) < 0 || strcmp(back, value)) {
		fprintf(stderr, DLRT_LCW_PROG ": job %u: cannot share the job's times at srun's "
			"rendezvous: %s; trying again\n", s->job, back ? "it kept another value" :
			err.msg);
		drop(s);
	} else {
		s->seq++;
		s->failures = 0;
		snprintf(s->published, sizeof(s->published), "%s", value);
	}
	free(back);
}

/* FOLLOW: a WAIT for the next key parked at the rendezvous. */
static void follow(struct dlrt_lcshare *s)
{
	char key[32];
	const char *keys[1] = { key };
	struct dlrt_err err;

	if (!s->known && time(NULL) - s->started >= FOLLOW_FIRST_S) {
		ask_instead(s, "the step's first node shared no time limit at srun's rendezvous "
			    "(did its dlrt-lifecycle start?)");
		return;
	}
	if (s->waiting || !connected(s))
		return;
	snprintf(key, sizeof(key), KEY_FMT, s->job, s->seq + 1);
	s->rdv.deadline_ms = dlrt_now_ms() + RDV_WAIT_MS;
	if (dlrt_rdv_get_send(&s->rdv, keys, 1, &err) < 0)
		drop(s);
	else
		s->waiting = true;
}

void dlrt_lcshare_take(struct dlrt_lcshare *s)
{
	char key[32], *value = NULL;
	const char *keys[1] = { key };
	struct dlrt_lc_job j = s->times;
	struct dlrt_err err;

	if (!s->waiting)
		return;
	snprintf(key, sizeof(key), KEY_FMT, s->job, s->seq + 1);
	s->rdv.deadline_ms = dlrt_now_ms() + RDV_WAIT_MS;
	if (dlrt_rdv_get_recv(&s->rdv, keys, 1, &value, &err) < 0 ||
	    dlrt_lctimes_parse(value, &j) < 0) {
		/* srun ended (the step is ending), its host restarted the
		 * connection, or what answered is not srun's store: connect
		 * again, TRIES times in a row at most. */
		drop(s);
		s->retry_at = time(NULL) + 1;
		failed(s, value ? "the job's times at srun's rendezvous are not in their format" :
		       err.msg);
		free(value);
		return;
	}
	free(value);
	s->waiting = false;
	s->failures = 0;
	s->seq++;
	s->times = j;
	s->known = true;
}

int dlrt_lcshare_job(struct dlrt_lcshare *s, struct dlrt_lc_job *j)
{
	time_t now = time(NULL);

	if (s->role == DLRT_LCSHARE_FOLLOW)
		follow(s);
	if (s->role != DLRT_LCSHARE_FOLLOW && (!s->known || now >= s->fresh_by)) {
		s->fresh_by = now + ASK_EVERY_S;
		if (ask(s) == 0 && s->role == DLRT_LCSHARE_PUBLISH)
			publish(s);
	}
	if (!s->known)
		return -1;
	*j = s->times;
	j->now = now;
	return 0;
}

void dlrt_lcshare_fresh_by(struct dlrt_lcshare *s, time_t t)
{
	if (s->role != DLRT_LCSHARE_FOLLOW && t < s->fresh_by)
		s->fresh_by = t;
}

int dlrt_lcshare_fd(const struct dlrt_lcshare *s)
{
	return s->role == DLRT_LCSHARE_FOLLOW && s->waiting ? s->rdv.fd : -1;
}

void dlrt_lcshare_end(struct dlrt_lcshare *s)
{
	drop(s);
	memset(s->secret, 0, sizeof(s->secret));
	if (s->slurm_up)
		slurm_fini();
	s->slurm_up = false;
}
