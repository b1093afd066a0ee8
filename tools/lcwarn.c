/* lcwarn.c - the warning and the requeue (lcwarn.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <slurm/slurm.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/slurm_compat.h"
#include "lcproc.h"
#include "lcwarn.h"
#include "jobpolicy/warnsig.h"

#define WARN_SETTLE_S 30 /* a task without a handler gets the warning this late */

bool dlrt_lcwarn_wanted(const struct dlrt_lcwarn *a)
{
	return a->sig || a->batch;
}

/* With --verbose, the line goes to the task's own stderr (a process of the
 * job's user, like this one). */
static void tell_task(pid_t pid, const char *line)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/fd/2", (int)pid);
	fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, line, strlen(line)) < 0) {
		/* a task that closed its stderr does not get the line */
	}
	close(fd);
}

struct kin {
	int sig;
	int n;
};

static void signal_child(pid_t child, size_t i, void *ctx)
{
	struct kin *k = ctx;

	(void)i;
	if (dlrt_lcproc_handles(child, k->sig) && kill(child, k->sig) == 0)
		k->n++;
}

/* Signals the children of `parent` (an agent's workers) that catch the
 * signal; their number. */
static int signal_children(pid_t parent, int sig)
{
	struct kin k = { .sig = sig };

	dlrt_lcproc_children(&parent, 1, signal_child, &k);
	return k.n;
}

/* Task t of the page, once the warning is due: the processes it was sent to
 * (0: not yet; the task does not handle it), or -1 when it never will get it. */
static int warn_task(struct dlrt_lcwarn *a, const struct dlrt_lcw *w, uint32_t t, time_t now,
		     const char *sn)
{
	pid_t pid = w->page->pid[t];
	time_t since;
	int n = 0;

	/* A task that registers later (a slow address exchange, a step whose
	 * nodes start apart) has its 30 s from when it was first seen. */
	if (pid > 0 && a->seen_pid[t] != pid) {
		a->seen_pid[t] = pid;
		a->seen[t] = now;
	}
	since = pid > 0 && a->seen[t] > a->first_due ? a->seen[t] : a->first_due;
	/* A task that does not handle the signal yet (still starting) gets it
	 * once it does. One that still does not WARN_SETTLE_S after the warning
	 * was due, or after it started if that was later, never gets it: the
	 * signal's default action would end it minutes early, with nothing saved
	 * (a program that finishes just before its limit, or one that has no
	 * checkpoint yet). */
	if (pid > 0 && a->children)
		n = signal_children(pid, a->sig);
	else if (pid > 0 && dlrt_lcproc_handles(pid, a->sig))
		n = kill(pid, a->sig) == 0;
	if (n <= 0 && pid > 0 && now - since >= WARN_SETTLE_S) {
		dlrt_lcw_record(w, "attempt=%u warning signal=%s not sent to task %u node=%s step=%u: "
				"it does not handle SIG%s, which would end it", w->attempt, sn,
				(unsigned)w->page->rank[t], w->node, w->step, sn);
		return -1;
	}
	if (n <= 0 && since > a->settle_from)
		a->settle_from = since;
	return n;
}

/* Once the warning is due: every task of the node gets it once, those that
 * registered since the last look too (a step started after the warning was
 * due; a torchrun agent whose workers came later). */
static void send_warning(struct dlrt_lcwarn *a, const struct dlrt_lcw *w,
			 const struct dlrt_lc_job *j, const char *why)
{
	char name[16], line[512];
	const char *sn = dlrt_warnsig_name(a->sig, name, sizeof(name));
	long left = j->end_time > 0 ? (long)(j->end_time - j->now) : -1;
	uint32_t nt = dlrt_lcw_ntasks(w);
	bool first = !a->warned;
	int ntasks = 0, nsent = 0;

	if (first)
		a->first_due = a->settle_from = j->now;
	a->warned = true;
	a->pending = false;
	for (uint32_t t = 0; t < nt; t++) {
		int n;

		if (a->sent[t])
			continue;
		n = warn_task(a, w, t, j->now, sn);
		if (n == 0) {
			a->pending = true;
			continue;
		}
		a->sent[t] = true;
		if (n > 0) {
			ntasks++;
			nsent += n;
		}
	}
	if (a->batch) {
		if (first)
			dlrt_lcw_record(w, "attempt=%u warning signal=%s reason=%s left=%lds batch "
					"node=%s", w->attempt, sn, why, left, w->node);
		return;
	}
	if (!nsent)
		return;
	dlrt_lcw_record(w, "attempt=%u warning signal=%s reason=%s left=%lds node=%s step=%u "
			"processes=%d", w->attempt, sn, why, left, w->node, w->step, nsent);
	snprintf(line, sizeof(line), "dlrt: %s: SIG%s to %d process%s of %d task%s of step %u: "
		 "%s (the time limit is in %ld s; --dl-signal=%s@%u)\n", w->node, sn, nsent,
		 nsent == 1 ? "" : "es", ntasks, ntasks == 1 ? "" : "s", w->step, why, left, sn,
		 a->pol.before);
	for (uint32_t t = 0; w->verbose && t < nt; t++)
		if (a->sent[t] && w->page->pid[t] > 0)
			tell_task(w->page->pid[t], line);
}

static void requeue_now(struct dlrt_lcwarn *a, const struct dlrt_lcw *w,
			const struct dlrt_lc_job *j)
{
	enum dlrt_lc_requeue r = dlrt_lc_requeue_due(j, &a->pol);

	if (r == DLRT_LC_WAIT || a->requeue_done)
		return;
	a->requeue_done = true;
	if (r == DLRT_LC_NO_MORE) {
		dlrt_lcw_record(w, "attempt=%u still running %ld s before its time limit: no "
				"requeue left (--dl-requeue=%u)", w->attempt,
				(long)(j->end_time - j->now), a->pol.requeue);
		return;
	}
	if (dlrt_slurm_requeue(w->job, 0) != SLURM_SUCCESS) {
		dlrt_lcw_record(w, "attempt=%u requeue refused: %s (was the job submitted with "
				"--no-requeue?)", w->attempt, slurm_strerror(errno));
		return;
	}
	dlrt_lcw_record(w, "attempt=%u requeued reason=time-limit left=%lds next-attempt=%u",
			w->attempt, (long)(j->end_time - j->now), w->attempt + 1);
}

int dlrt_lcwarn_tick(struct dlrt_lcwarn *a, struct dlrt_lcw *w)
{
	struct dlrt_lc_job j = { 0 };
	const char *why = "";
	int sleep_s;

	if (!dlrt_lcwarn_wanted(a) || dlrt_lcshare_job(a->times, &j) < 0)
		return 10;
	/* The batch step cannot tell its attempt in user_init (Slurm sets
	 * SLURM_RESTART_COUNT only when the script starts): while its step
	 * runs, the job's restart count is this run's. */
	if (!a->attempt_known) {
		w->attempt = a->pol.attempt = j.restart_cnt;
		a->attempt_known = true;
	}
	if (a->sig && (!a->warned || a->pending) && dlrt_lc_warn_due(&j, &a->pol, &why))
		send_warning(a, w, &j, why);
	if (a->batch && a->warned)
		requeue_now(a, w, &j);
	sleep_s = dlrt_lc_next_poll(&j, &a->pol, a->warned);
	/* The source asks slurmctld again when the policy wants a fresh answer,
	 * not at every look. */
	dlrt_lcshare_fresh_by(a->times, j.now + sleep_s);
	/* Tasks still starting: look again soon, for 30 s from the latest one's
	 * start (from the last answer: no slurmctld RPC); then at the usual pace. */
	if (a->pending && j.now - a->settle_from < WARN_SETTLE_S + 5)
		sleep_s = 1;
	return sleep_s;
}
