#include "lifecycle.h"

uint32_t dlrt_lc_requeue_lead(uint32_t before)
{
	uint32_t lead = before / 3;

	if (lead < 5)
		lead = 5;
	return lead > 30 ? 30 : lead;
}

bool dlrt_lc_warn_due(const struct dlrt_lc_job *j, const struct dlrt_lc_policy *p,
		      const char **why)
{
	if (j->preempt_time) {
		*why = "preemption";
		return true;
	}
	if (j->end_time > 0 && j->now + (time_t)p->before >= j->end_time) {
		*why = "time-limit";
		return true;
	}
	return false;
}

enum dlrt_lc_requeue dlrt_lc_requeue_due(const struct dlrt_lc_job *j,
					 const struct dlrt_lc_policy *p)
{
	/* Requeued already (by Slurm, the program, or the end of the script) and
	 * maybe running again: that run has its own watcher. */
	if (!p->requeue || !j->running || j->restart_cnt != p->attempt || j->end_time <= 0)
		return DLRT_LC_WAIT;
	/* A preemption's grace time replaces the end time: the program had the
	 * warning at its start, Slurm's PreemptMode=REQUEUE requeues at its end
	 * anyway, so dlrt waits until 5 s before it (for PreemptMode=CANCEL). */
	if (j->now + (time_t)(j->preempt_time ? 5 : dlrt_lc_requeue_lead(p->before)) < j->end_time)
		return DLRT_LC_WAIT;
	return p->attempt < p->requeue ? DLRT_LC_REQUEUE : DLRT_LC_NO_MORE;
}

static time_t min_future(time_t best, time_t t, time_t now)
{
	return (t > now && (best == 0 || t < best)) ? t : best;
}

int dlrt_lc_next_poll(const struct dlrt_lc_job *j, const struct dlrt_lc_policy *p, bool warned)
{
	time_t next = 0;

	if (j->end_time > 0) {
		if (!warned)
			next = min_future(next, j->end_time - (time_t)p->before, j->now);
		if (p->requeue)
			next = min_future(next, j->end_time - (time_t)dlrt_lc_requeue_lead(p->before),
					  j->now);
	}
	if (next == 0 || next - j->now > 10)
		return 10;
	return next - j->now < 1 ? 1 : (int)(next - j->now);
}

bool dlrt_lc_hung(time_t last, time_t now, uint32_t timeout)
{
	return timeout > 0 && last > 0 && now >= last && (uint64_t)(now - last) >= timeout;
}
