/* test_infer_sched.c - fair shares: targets from costs, and a simulated pool
 * in which time-shared workers make two jobs' query rates equal. */
#include <math.h>
#include <string.h>

#include "../../inference/sched.h"
#include "tap.h"

/* Simulates W workers, each running tasks of `batch` queries, on jobs with the
 * given per-query costs; returns the queries each job got between t0 and t1. */
static void simulate(const double *cost, size_t n, uint32_t W, double t0, double t1,
		     double *q)
{
	struct dlrt_sched_job j[4];
	double busy_until[16], now = 0, last = 0;
	int cur[16];
	const int batch = 4;

	memset(j, 0, sizeof(j));
	for (size_t k = 0; k < n; k++) {
		j[k].runnable = true;
		j[k].cost = cost[k];
		q[k] = 0;
	}
	for (uint32_t w = 0; w < W; w++) {
		busy_until[w] = 0;
		cur[w] = -1;
	}
	dlrt_sched_targets(j, n, W);
	while (now < t1) {
		uint32_t w = 0;

		for (uint32_t i = 1; i < W; i++)
			if (busy_until[i] < busy_until[w])
				w = i;
		now = busy_until[w];
		dlrt_sched_accrue(j, n, now - last);
		last = now;
		if (cur[w] >= 0) {
			if (now >= t0 && now < t1)
				q[cur[w]] += batch;
			j[cur[w]].held--;
		}
		cur[w] = dlrt_sched_pick(j, n, cur[w]);
		j[cur[w]].held++;
		busy_until[w] = now + batch * cost[cur[w]];
	}
}

int main(void)
{
	struct dlrt_sched_job j[3];
	double q[3];

	memset(j, 0, sizeof(j));
	j[0].runnable = j[1].runnable = true;
	dlrt_sched_targets(j, 2, 6);
	TAP_OK(fabs(j[0].target - 3) < 1e-9 && fabs(j[1].target - 3) < 1e-9,
	       "unknown costs: equal shares (%.2f, %.2f)", j[0].target, j[1].target);
	j[0].cost = 1e-3;
	dlrt_sched_targets(j, 2, 6);
	TAP_OK(fabs(j[1].target - 3) < 1e-9, "a new job counts with the others' mean cost");
	j[1].cost = 8e-3;
	dlrt_sched_targets(j, 2, 6);
	TAP_OK(fabs(j[0].target - 6.0 / 9) < 1e-9 && fabs(j[1].target - 48.0 / 9) < 1e-9,
	       "costs 1:8 on 6 workers: 0.67 and 5.33");
	j[2].runnable = false;
	j[2].cost = 5e-3;
	dlrt_sched_targets(j, 3, 6);
	TAP_OK(j[2].target == 0, "a job with nothing waiting gets no share");
	TAP_IS_INT(dlrt_sched_pick(j, 3, -1), 1, "a free worker goes to the job furthest below");
	j[1].held = 5;
	j[0].held = 0;
	TAP_IS_INT(dlrt_sched_pick(j, 3, 1), 0, "then to the cheap job that has none");
	j[0].runnable = j[1].runnable = false;
	TAP_IS_INT(dlrt_sched_pick(j, 3, 0), -1, "nothing runnable: idle");

	{
		double cost[2] = { 1e-3, 8e-3 };
		double r;

		simulate(cost, 2, 6, 0.5, 2.5, q);
		r = q[0] > q[1] ? q[1] / q[0] : q[0] / q[1];
		TAP_OK(r > 0.9, "costs 1:8, 6 workers: rates within 10%% (%.0f vs %.0f queries)",
		       q[0], q[1]);
	}
	{
		double cost[3] = { 1e-3, 3e-3, 10e-3 };
		double lo, hi;

		simulate(cost, 3, 6, 0.5, 3.5, q);
		lo = fmin(q[0], fmin(q[1], q[2]));
		hi = fmax(q[0], fmax(q[1], q[2]));
		TAP_OK(lo / hi > 0.9, "three jobs 1:3:10: within 10%% (%.0f %.0f %.0f)", q[0], q[1],
		       q[2]);
	}
	{
		double cost[2] = { 2e-3, 2e-3 };

		simulate(cost, 2, 6, 0.5, 2.5, q);
		TAP_OK(fabs(q[0] - q[1]) / q[0] < 0.1, "equal costs: equal rates (%.0f, %.0f)",
		       q[0], q[1]);
	}
	return tap_done();
}
