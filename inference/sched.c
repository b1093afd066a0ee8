#include "sched.h"

#include <math.h>

static double eff_trim(const struct dlrt_sched_job *j)
{
	return j->trim > 0 ? j->trim : 1.0;
}

void dlrt_sched_feedback(struct dlrt_sched_job *jobs, size_t n, const double *rate,
			 double gain)
{
	double logsum = 0;
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (jobs[i].runnable && rate[i] > 0) {
			logsum += log(rate[i]);
			k++;
		}
	if (k < 2)
		return;
	for (size_t i = 0; i < n; i++) {
		double t;

		if (!jobs[i].runnable || rate[i] <= 0)
			continue;
		/* Geometric mean: a job twice too fast and one twice too slow move alike. */
		t = eff_trim(&jobs[i]) * exp(gain * (logsum / (double)k - log(rate[i])));
		jobs[i].trim = t < 0.25 ? 0.25 : t > 4 ? 4 : t;
	}
}

void dlrt_sched_targets(struct dlrt_sched_job *jobs, size_t n, uint32_t nworkers)
{
	double sum = 0, known = 0;
	size_t nrun = 0, nknown = 0;

	for (size_t i = 0; i < n; i++) {
		if (!jobs[i].runnable)
			continue;
		nrun++;
		if (jobs[i].cost > 0) {
			known += jobs[i].cost;
			nknown++;
		}
	}
	for (size_t i = 0; i < n; i++) {
		double c;

		if (!jobs[i].runnable)
			continue;
		c = jobs[i].cost > 0 ? jobs[i].cost : nknown ? known / (double)nknown : 1.0;
		sum += c * eff_trim(&jobs[i]);
	}
	for (size_t i = 0; i < n; i++) {
		double c;

		if (!jobs[i].runnable || sum <= 0) {
			jobs[i].target = 0;
			continue;
		}
		c = jobs[i].cost > 0 ? jobs[i].cost : nknown ? known / (double)nknown : 1.0;
		jobs[i].target = (double)nworkers * c * eff_trim(&jobs[i]) / sum;
	}
	(void)nrun;
}

void dlrt_sched_accrue(struct dlrt_sched_job *jobs, size_t n, double dt)
{
	for (size_t i = 0; i < n; i++) {
		double c;

		if (!jobs[i].runnable) {
			jobs[i].credit = 0;
			continue;
		}
		c = jobs[i].credit + (jobs[i].target - (double)jobs[i].held) * dt;
		if (c > DLRT_SCHED_CREDIT_MAX)
			c = DLRT_SCHED_CREDIT_MAX;
		if (c < -DLRT_SCHED_CREDIT_MAX)
			c = -DLRT_SCHED_CREDIT_MAX;
		jobs[i].credit = c;
	}
}

int dlrt_sched_pick(const struct dlrt_sched_job *jobs, size_t n, int cur)
{
	int best = -1;
	double best_score = 0;

	for (size_t i = 0; i < n; i++) {
		double s;

		if (!jobs[i].runnable)
			continue;
		s = jobs[i].target - (double)jobs[i].held + jobs[i].credit / DLRT_SCHED_HORIZON;
		if ((int)i == cur)
			s += DLRT_SCHED_STICKY;
		if (best < 0 || s > best_score) {
			best = (int)i;
			best_score = s;
		}
	}
	return best;
}
