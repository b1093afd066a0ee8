/* test_infer_sched.c - fair shares: targets from costs, the dispatch rule, and
 * a simulated pool in which it makes the jobs' query rates equal, also when
 * the workers' speed jumps around (time-shared cores). */
#include <math.h>
#include <string.h>

#include "inference/sched.h"
#include "tap.h"

/* Simulates W workers running tasks of `batch` queries on jobs with the given
 * per-query costs, each task's time multiplied by a factor from [1 - jitter,
 * 1 + 2 jitter] (a fixed pseudo-random sequence); returns the queries each job
 * answered between t0 and t1 and (in held_avg) the mean workers it held. */
static void simulate(const double *cost, size_t n, uint32_t W, double jitter, double t0,
		     double t1, double *q, double *held_avg)
{
	struct dlrt_sched_job j[4];
	double busy_until[16], now = 0, last = 0;
	int cur[16];
	const int batch = 4;
	uint32_t rng = 12345;

	memset(j, 0, sizeof(j));
	for (size_t k = 0; k < n; k++) {
		j[k].runnable = true;
		j[k].cost = cost[k];
		q[k] = held_avg[k] = 0;
	}
	for (uint32_t w = 0; w < W; w++) {
		busy_until[w] = 0;
		cur[w] = -1;
	}
	while (now < t1) {
		uint32_t w = 0;
		double f;

		for (uint32_t i = 1; i < W; i++)
			if (busy_until[i] < busy_until[w])
				w = i;
		now = busy_until[w];
		for (size_t k = 0; k < n && now > t0; k++)
			held_avg[k] += j[k].held * (now - (last > t0 ? last : t0)) / (t1 - t0);
		last = now;
		if (cur[w] >= 0) {
			if (now >= t0 && now < t1)
				q[cur[w]] += batch;
			j[cur[w]].held--;
		}
		cur[w] = dlrt_sched_pick(j, n, cur[w]);
		j[cur[w]].held++;
		dlrt_sched_charge(j, n, (size_t)cur[w], batch);
		rng = rng * 1103515245u + 12345u;
		f = 1 - jitter + 3 * jitter * (double)(rng >> 8 & 0xffff) / 65536.0;
		busy_until[w] = now + batch * cost[cur[w]] * f;
	}
}

static double spread(const double *q, size_t n)
{
	double lo = q[0], hi = q[0];

	for (size_t k = 1; k < n; k++) {
		lo = fmin(lo, q[k]);
		hi = fmax(hi, q[k]);
	}
	return hi > 0 ? 1 - lo / hi : 1;
}

int main(void)
{
	struct dlrt_sched_job j[3];
	double q[3], held[3];

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

	/* The dispatch rule. */
	j[0].served = 400;
	j[1].served = 0;
	TAP_IS_INT(dlrt_sched_pick(j, 3, 0), 1, "a free worker goes to the job served least");
	dlrt_sched_charge(j, 3, 1, 10);
	TAP_OK(j[1].served == 10, "a task's queries are charged to its job");
	TAP_OK(j[2].served == 10, "a job with nothing to run is kept level with the least "
	       "served one (%.0f): it banks nothing", j[2].served);
	j[1].served = 400;
	j[0].target = j[1].target = 3;
	j[0].held = 2;
	j[1].held = 3;
	TAP_IS_INT(dlrt_sched_pick(j, 3, 1), 0, "a tie goes to the job furthest below its share");
	j[0].held = 3;
	TAP_IS_INT(dlrt_sched_pick(j, 3, 1), 1, "then the worker stays on its current job");
	TAP_IS_INT(dlrt_sched_pick(j, 3, -1), 0, "a tie without a current job: the first");
	j[2].runnable = true;
	j[2].served = 10;
	TAP_IS_INT(dlrt_sched_pick(j, 3, 0), 2, "it can run again: one task's worth of "
		   "catching up, no more");
	dlrt_sched_restart(j, 3);
	TAP_OK(j[0].served == 0 && j[1].served == 0 && j[2].served == 0,
	       "the set of jobs changed: counts start again");
	j[0].runnable = j[1].runnable = j[2].runnable = false;
	TAP_IS_INT(dlrt_sched_pick(j, 3, 0), -1, "nothing runnable: idle");

	/* A new job on a busy pool: it gets the free workers until it catches up. */
	{
		struct dlrt_sched_job k[2] = { { .runnable = true, .cost = 1e-3, .held = 6 },
					       { .runnable = true } };

		dlrt_sched_targets(k, 2, 6);
		int got = 0;

		for (int w = 0; w < 3; w++) {
			k[0].held--;
			if (dlrt_sched_pick(k, 2, 0) == 1) {
				k[1].held++;
				dlrt_sched_charge(k, 2, 1, 4);
				got++;
			} else {
				k[0].held++;
				dlrt_sched_charge(k, 2, 0, 4);
			}
		}
		TAP_IS_INT(got, 2, "a new job gets workers as they finish, by turns with the "
			   "old one (2 of the first 3)");
	}

	{
		double cost[2] = { 1e-3, 8e-3 };

		simulate(cost, 2, 6, 0, 0.5, 2.5, q, held);
		TAP_OK(spread(q, 2) < 0.02, "costs 1:8, 6 workers: rates within 2%% (%.0f vs %.0f "
		       "queries)", q[0], q[1]);
		TAP_OK(fabs(held[0] - 6.0 / 9) < 0.1 && fabs(held[1] - 48.0 / 9) < 0.1,
		       "and the workers split as the share model says (%.2f, %.2f held)", held[0],
		       held[1]);
		simulate(cost, 2, 6, 0.5, 0.5, 2.5, q, held);
		TAP_OK(spread(q, 2) < 0.02, "task times jumping by -50%%..+100%%: still within 2%% "
		       "(%.0f vs %.0f)", q[0], q[1]);
		simulate(cost, 2, 6, 0.5, 0.05, 0.15, q, held);
		TAP_OK(spread(q, 2) < 0.1, "and within 10%% over a 0.1 s window (%.0f vs %.0f)", q[0],
		       q[1]);
	}
	{
		double cost[3] = { 1e-3, 3e-3, 10e-3 };

		simulate(cost, 3, 6, 0.3, 0.5, 3.5, q, held);
		TAP_OK(spread(q, 3) < 0.02, "three jobs 1:3:10: within 2%% (%.0f %.0f %.0f)", q[0],
		       q[1], q[2]);
	}
	{
		double cost[2] = { 2e-3, 2e-3 };

		simulate(cost, 2, 6, 0, 0.5, 2.5, q, held);
		TAP_OK(spread(q, 2) < 0.02, "equal costs: equal rates (%.0f, %.0f)", q[0], q[1]);
	}
	return tap_done();
}
