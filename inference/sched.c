/* sched.c - the share model and the dispatch rule of sched.h. */
#include "sched.h"

/* The cost a job counts with: its own, or for a job not measured yet the
 * mean of the others (an equal share, as in IDunno). */
static double cost_of(const struct dlrt_sched_job *j, double mean_known)
{
	return j->cost > 0 ? j->cost : mean_known > 0 ? mean_known : 1.0;
}

void dlrt_sched_targets(struct dlrt_sched_job *jobs, size_t n, uint32_t nworkers)
{
	double known = 0, mean = 0, sum = 0;
	size_t nknown = 0;

	for (size_t i = 0; i < n; i++)
		if (jobs[i].runnable && jobs[i].cost > 0) {
			known += jobs[i].cost;
			nknown++;
		}
	if (nknown)
		mean = known / (double)nknown;
	for (size_t i = 0; i < n; i++)
		if (jobs[i].runnable)
			sum += cost_of(&jobs[i], mean);
	for (size_t i = 0; i < n; i++)
		jobs[i].target = jobs[i].runnable && sum > 0
					 ? (double)nworkers * cost_of(&jobs[i], mean) / sum
					 : 0;
}

/* Is job a a better next job than job b (both runnable)? */
static bool before(const struct dlrt_sched_job *jobs, size_t a, size_t b, int cur)
{
	double below_a = jobs[a].target - (double)jobs[a].held;
	double below_b = jobs[b].target - (double)jobs[b].held;

	if (jobs[a].served != jobs[b].served)
		return jobs[a].served < jobs[b].served;
	if (below_a != below_b)
		return below_a > below_b;
	return (int)a == cur;
}

int dlrt_sched_pick(const struct dlrt_sched_job *jobs, size_t n, int cur)
{
	int best = -1;

	for (size_t i = 0; i < n; i++)
		if (jobs[i].runnable && (best < 0 || before(jobs, i, (size_t)best, cur)))
			best = (int)i;
	return best;
}

void dlrt_sched_charge(struct dlrt_sched_job *jobs, size_t n, size_t i, uint32_t q)
{
	double least = -1;

	jobs[i].served += q;
	for (size_t k = 0; k < n; k++)
		if (jobs[k].runnable && (least < 0 || jobs[k].served < least))
			least = jobs[k].served;
	for (size_t k = 0; k < n && least >= 0; k++)
		if (!jobs[k].runnable && jobs[k].served < least)
			jobs[k].served = least;
}

void dlrt_sched_restart(struct dlrt_sched_job *jobs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		jobs[i].served = 0;
}
