/* coord_timeline.c - the coordinator's rates, shares and timeline files:
 * answers per bucket of the rate window, the worker-seconds each job held,
 * the cost per query, the targets of the fair-share scheduler (sched.h), and
 * the rows of timeline.tsv and events.tsv (tsvlog.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <string.h>

#include "coord_int.h"
#include "common/clock.h"

bool dlrt_coord_job_runnable(struct coord *c, uint32_t ji)
{
	struct dlrt_infer_job *j = &c->st.jobs[ji];
	struct jrt *r = &c->jr[ji];

	return j->state == DLRT_IP_JOB_RUNNING && (r->nrequeue || r->next_task < j->ntasks);
}

void dlrt_coord_retarget(struct coord *c)
{
	for (uint32_t i = 0; i < c->st.njobs; i++)
		c->sj[i].runnable = dlrt_coord_job_runnable(c, i);
	dlrt_sched_targets(c->sj, c->st.njobs, c->alive);
}

/* The set of jobs changed: rates are measured from now (up to the window), so
 * they show the new shares at once instead of averaging in the old ones; and
 * the queries served so far no longer count (the job that had the workers
 * until now would otherwise get none until the new one caught up). */
void dlrt_coord_regime_change(struct coord *c)
{
	c->regime_us = dlrt_now_us();
	dlrt_sched_restart(c->sj, c->st.njobs);
}

/* Writes out a timeline file's buffered rows, unless a newer coordinator
 * took over: then they are dropped, since rows from before a SIGSTOP written
 * after the new coordinator's would put the t column out of order. */
void dlrt_coord_tl_flush(struct coord *c, FILE **fp)
{
	int64_t now = dlrt_now_ms();
	FILE *f = *fp;

	if (!f)
		return;
	/* At most every 20 ms: events may come in bursts (redispatches). */
	if (c->fenced || now - c->tl_fence_ms >= 20) {
		c->tl_fence_ms = now;
		if (dlrt_coord_fence_check(c)) {
			__fpurge(f);
			return;
		}
	}
	if (fflush(f) != 0) {
		/* Diagnostics only: answers do not depend on it, so the pool goes on
		 * without this file rather than failing jobs. */
		dlrt_coord_log(c,
			       "cannot write the %s in %s: %s: it stops here (answers are not affected); "
			       "free space in the pool folder",
			       f == c->timeline ? "timeline.tsv" : "events.tsv", c->pool,
			       strerror(errno));
		__fpurge(f);
		fclose(f);
		*fp = NULL;
	}
}

/* One timeline sample of a running job (t job rate workers share done). */
void dlrt_coord_tl_row(struct coord *c, uint32_t ji, int64_t t)
{
	struct jrt *r = &c->jr[ji];

	if (c->timeline && !c->fenced)
		fprintf(c->timeline, "%.3f\t%u\t%.1f\t%.2f\t%.2f\t%u\n", dlrt_coord_tsec(c, t),
			c->st.jobs[ji].id, r->rate, r->held_avg, c->sj[ji].target,
			c->st.jobs[ji].done);
}

void dlrt_coord_event(struct coord *c, uint32_t job, const char *what)
{
	if (c->events && !c->fenced) {
		fprintf(c->events, "%.6f\t%u\t%s\n", dlrt_coord_tsec(c, dlrt_now_us()), job, what);
		dlrt_coord_tl_flush(c, &c->events);
	}
}

/* The slot of bucket number b in the job's ring, emptied when it held an older one. */
static int bucket_slot(struct jrt *r, int64_t b)
{
	int slot = (int)(b % NB);

	if (r->bucket[slot] != b) {
		r->bucket[slot] = b;
		r->bq[slot] = 0;
		r->bqc[slot] = 0;
		r->bocc[slot] = 0;
		r->bhold[slot] = 0;
		r->bheld[slot] = 0;
		r->bsamples[slot] = 0;
	}
	return slot;
}

/* Runs before every change of the jobs' held counts (and every tick): the
 * worker-seconds each job held since the last call, which is what its answers
 * cost it, whatever a worker spent waiting (for the coordinator, the standby's
 * acknowledgement, the network) besides computing. */
void dlrt_coord_accrue(struct coord *c)
{
	int64_t t = dlrt_now_us();
	double dt = (double)(t - c->last_accrue_us) / 1e6;
	int64_t b = t / 1000 / c->bucket_ms;

	for (uint32_t ji = 0; dt > 0 && ji < c->st.njobs; ji++)
		if (c->sj[ji].held && c->st.jobs[ji].state == DLRT_IP_JOB_RUNNING)
			c->jr[ji].bhold[bucket_slot(&c->jr[ji], b)] += c->sj[ji].held * dt;
	c->last_accrue_us = t;
}

void dlrt_coord_bucket_add(struct coord *c, struct jrt *r, uint32_t q, double occ,
			   bool cost)
{
	int slot = bucket_slot(r, dlrt_now_ms() / c->bucket_ms);

	r->bq[slot] += q;
	if (cost) {
		r->bqc[slot] += q;
		r->bocc[slot] += occ;
	}
}

int64_t dlrt_coord_tick(struct dlrt_evloop *loop, void *arg)
{
	struct coord *c = arg;
	int64_t b = dlrt_now_ms() / c->bucket_ms, t = dlrt_now_us();
	double win = (double)c->bucket_ms * NB / 1000.0;

	(void)loop;
	dlrt_coord_accrue(c);
	for (uint32_t ji = 0; ji < c->st.njobs; ji++) {
		struct jrt *r = &c->jr[ji];
		struct dlrt_infer_job *j = &c->st.jobs[ji];
		uint64_t q = 0, qall = 0, qc_now = 0, qwin = 0;
		double occ = 0, held = 0, age, hold = 0, hold_now = 0;
		int nb_now = 0;
		uint32_t samples = 0;
		int slot;
		int64_t start, bmin;

		if (j->state != DLRT_IP_JOB_RUNNING)
			continue;
		slot = bucket_slot(r, b);
		r->bheld[slot] += c->sj[ji].held;
		r->bsamples[slot]++;
		/* The rate counts from the latest of: the window's start, the job's
		 * first task, the last change of the set of jobs. */
		start = t - (int64_t)(win * 1e6);
		if (r->first_dispatch_us > start)
			start = r->first_dispatch_us;
		if (c->regime_us > start)
			start = c->regime_us;
		bmin = start / 1000 / c->bucket_ms;
		for (int i = 0; i < NB; i++) {
			if (r->bucket[i] <= b - NB || r->bucket[i] > b)
				continue;
			occ += r->bocc[i];
			qall += r->bqc[i];
			held += r->bheld[i];
			hold += r->bhold[i];
			qwin += r->bq[i];
			samples += r->bsamples[i];
			if (r->bucket[i] >= bmin) {
				q += r->bq[i];
				qc_now += r->bqc[i];
				hold_now += r->bhold[i];
				nb_now++;
			}
		}
		/* Buckets are whole: count from the first bucket's start. */
		age = r->first_dispatch_us ? (double)(t - bmin * c->bucket_ms * 1000) / 1e6 : 0;
		if (age > win)
			age = win;
		if (age < c->bucket_ms / 1000.0)
			age = c->bucket_ms / 1000.0;
		r->rate = r->first_dispatch_us ? (double)q / age : 0;
		r->held_avg = samples ? held / samples : 0;
		/* Cost per query: the worker-seconds the job held per answer. That
		 * is what its rate is made of (rate = workers held / cost), so shares
		 * from it equalise the rates; the time from task out to answer back
		 * alone misses a worker's waits between tasks (for the coordinator,
		 * the standby's acknowledgement), which weigh most on short tasks.
		 * It changes with the mix of jobs (shared cores and caches), so once
		 * a few buckets since the last change have answers, only those count;
		 * until then the whole window, and before any answer is in the window
		 * the first answer's own time (coord_results.c). */
		if (nb_now >= 3 && qc_now >= 20 && q && hold_now > 0)
			c->sj[ji].cost = hold_now / (double)q;
		else if (qwin && hold > 0)
			c->sj[ji].cost = hold / (double)qwin;
		else if (qall)
			c->sj[ji].cost = occ / (double)qall;
		dlrt_coord_tl_row(c, ji, t);
	}
	if (b % 4 == 0)
		dlrt_coord_tl_flush(c, &c->timeline);
	dlrt_coord_retarget(c);
	return c->bucket_ms;
}
