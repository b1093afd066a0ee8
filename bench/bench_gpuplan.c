/* bench_gpuplan: time and quality of dlrt's GPU plan on the XML fixtures.
 *
 * Time: dlrt_gpuplan_compute() (overlaps, solver, NIC choice, allocations)
 * and dlrt_gpuplan_solve() alone, for 128 tasks x 8 GPUs and smaller steps.
 *
 * Quality: sum over tasks of the CPU-to-GPU distance of each task's CPUs to
 * the GPU it uses: 0 per CPU in the GPU's locality (its die/package), 1 per
 * CPU in the next larger object (same package), 2 per CPU farther away.
 * Compared with:
 *  - slurm: --gpu-bind=closest as gres.c does it with gres.conf Cores= set to
 *    each GPU's locality: a task sees every allocated GPU whose Cores
 *    intersect its CPU mask (the first GPU if none), and the usual training
 *    script picks device LOCAL_RANK % (GPUs it sees) among them;
 *  - naive: no binding (or task/none, where Slurm's closest sees whole-node
 *    masks): task i uses GPU i % G;
 *  - best: the minimum distance over all balanced plans (exact, by the same
 *    solver run directly on the distance costs).
 * "max/GPU" is the largest number of tasks sharing one GPU.
 *
 * usage: bench_gpuplan FIXTURE_DIR [REPEATS]
 *        bench_gpuplan --score FIXTURE NTASKS CPUS_PER_TASK block|cyclic G0 G1 ...
 *        (the distance of a given plan: task i uses GPU Gi; for plans measured
 *        on the cluster by bench/gpuplan.sh)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpubind/gpuplan.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int dist(const struct dlrt_gpuplan_gpu *g, hwloc_const_bitmap_t cpus)
{
	int d = 0, c;

	hwloc_bitmap_foreach_begin(c, cpus)
		d += hwloc_bitmap_isset(g->cpuset, (unsigned)c) ? 0 :
		     hwloc_bitmap_isset(g->cpuset_up, (unsigned)c) ? 1 : 2;
	hwloc_bitmap_foreach_end();
	return d;
}

struct quality {
	long dist;
	int maxper;
};

static void tally(struct quality *q, const struct dlrt_gpuplan_topo *t, const int *used,
		  hwloc_bitmap_t *cpus, int nt)
{
	int per[DLRT_GPUPLAN_GPU_MAX] = { 0 };

	q->dist = 0;
	q->maxper = 0;
	for (int i = 0; i < nt; i++) {
		q->dist += dist(&t->gpus[used[i]], cpus[i]);
		if (++per[used[i]] > q->maxper)
			q->maxper = per[used[i]];
	}
}

static void slurm_closest(const struct dlrt_gpuplan_topo *t, hwloc_bitmap_t *cpus, int nt,
			  int *used)
{
	for (int i = 0; i < nt; i++) {
		int seen[DLRT_GPUPLAN_GPU_MAX], ns = 0;

		for (int g = 0; g < t->ngpus; g++)
			if (hwloc_bitmap_intersects(t->gpus[g].cpuset, cpus[i]))
				seen[ns++] = g;
		if (ns == 0)
			seen[ns++] = 0;
		used[i] = seen[i % ns];
	}
}

static long best_dist(const struct dlrt_gpuplan_topo *t, hwloc_bitmap_t *cpus, int nt)
{
	int m = t->ngpus, *out = malloc(sizeof(*out) * (size_t)nt);
	int64_t *cost = malloc(sizeof(*cost) * (size_t)nt * (size_t)m);
	long sum = -1;

	if (out && cost) {
		for (int i = 0; i < nt; i++)
			for (int g = 0; g < m; g++)
				cost[i * m + g] = dist(&t->gpus[g], cpus[i]);
		if (dlrt_gpuplan_solve(nt, m, cost, out) == 0) {
			sum = 0;
			for (int i = 0; i < nt; i++)
				sum += cost[i * m + out[i]];
		}
	}
	free(out);
	free(cost);
	return sum;
}

static hwloc_bitmap_t *layout(const struct dlrt_gpuplan_topo *t, int nt, int cpt,
			      enum dlrt_gpuplan_dist d)
{
	hwloc_bitmap_t *c = calloc((size_t)nt, sizeof(*c));
	struct dlrt_err err;

	for (int i = 0; i < nt; i++)
		c[i] = hwloc_bitmap_alloc();
	if (dlrt_gpuplan_layout(t, NULL, nt, cpt, d, c, &err) < 0) {
		fprintf(stderr, "bench_gpuplan: %s\n", err.msg);
		exit(1);
	}
	return c;
}

static void free_layout(hwloc_bitmap_t *c, int nt)
{
	for (int i = 0; i < nt; i++)
		hwloc_bitmap_free(c[i]);
	free(c);
}

static void time_plan(const char *dir, const char *fx, int nt, int reps)
{
	char path[1024];
	struct dlrt_err err;
	struct dlrt_gpuplan_topo *t;
	struct dlrt_gpuplan_alloc al;
	struct dlrt_gpuplan_bind *b = calloc(1, sizeof(*b));
	hwloc_bitmap_t *cpus;
	double *tm = malloc(sizeof(*tm) * (size_t)reps), *ts = malloc(sizeof(*ts) * (size_t)reps);
	int64_t *cost;
	int *out, m;

	snprintf(path, sizeof(path), "%s/%s", dir, fx);
	t = dlrt_gpuplan_topology_load(path, 0, &err);
	if (!t || dlrt_gpuplan_alloc_parse(&al, t, NULL, NULL, NULL, &err) < 0) {
		fprintf(stderr, "bench_gpuplan: %s\n", err.msg);
		exit(1);
	}
	m = t->ngpus;
	cpus = layout(t, nt, 0, DLRT_GPUPLAN_BLOCK);
	b->mode = DLRT_GPUPLAN_CLOSEST;
	cost = malloc(sizeof(*cost) * (size_t)nt * (size_t)m);
	out = malloc(sizeof(*out) * (size_t)nt);
	for (int i = 0; i < nt; i++)
		for (int g = 0; g < m; g++)
			cost[i * m + g] = -(int64_t)dist(&t->gpus[g], cpus[i]);
	for (int r = 0; r < reps; r++) {
		double t0 = now_us();
		struct dlrt_gpuplan *p = dlrt_gpuplan_compute(t, &al, b,
			(hwloc_const_cpuset_t const *)cpus, nt, &err);
		double t1 = now_us();

		if (!p) {
			fprintf(stderr, "bench_gpuplan: %s\n", err.msg);
			exit(1);
		}
		dlrt_gpuplan_free(p);
		tm[r] = t1 - t0;
		t0 = now_us();
		if (nt >= m)
			dlrt_gpuplan_solve(nt, m, cost, out);
		ts[r] = now_us() - t0;
	}
	qsort(tm, (size_t)reps, sizeof(*tm), cmp_d);
	qsort(ts, (size_t)reps, sizeof(*ts), cmp_d);
	printf("| %s | %d x %d | %.1f | %.1f | %.1f |\n", fx, nt, m, tm[reps / 2],
	       tm[reps * 99 / 100], nt >= m ? ts[reps / 2] : 0.0);
	free_layout(cpus, nt);
	free(tm), free(ts), free(cost), free(out), free(b);
	dlrt_gpuplan_topology_free(t);
}

static void quality(const char *dir, const char *fx, int nt, int cpt, enum dlrt_gpuplan_dist d)
{
	char path[1024];
	struct dlrt_err err;
	struct dlrt_gpuplan_topo *t;
	struct dlrt_gpuplan_alloc al;
	struct dlrt_gpuplan_bind *b = calloc(1, sizeof(*b));
	struct dlrt_gpuplan *p;
	hwloc_bitmap_t *cpus;
	int *used = calloc((size_t)nt, sizeof(*used));
	struct quality qd, qs, qn;

	snprintf(path, sizeof(path), "%s/%s", dir, fx);
	t = dlrt_gpuplan_topology_load(path, 0, &err);
	if (!t || dlrt_gpuplan_alloc_parse(&al, t, NULL, NULL, NULL, &err) < 0) {
		fprintf(stderr, "bench_gpuplan: %s\n", err.msg);
		exit(1);
	}
	cpus = layout(t, nt, cpt, d);
	p = dlrt_gpuplan_compute(t, &al, b, (hwloc_const_cpuset_t const *)cpus, nt, &err);
	if (!p) {
		fprintf(stderr, "bench_gpuplan: %s\n", err.msg);
		exit(1);
	}
	for (int i = 0; i < nt; i++)
		used[i] = p->tasks[i].gpus[0];
	tally(&qd, t, used, cpus, nt);
	slurm_closest(t, cpus, nt, used);
	tally(&qs, t, used, cpus, nt);
	for (int i = 0; i < nt; i++)
		used[i] = i % t->ngpus;
	tally(&qn, t, used, cpus, nt);
	printf("| %s | %d x %d | %s | **%ld** | %ld | %ld | %ld | %d | %d |\n", fx, nt,
	       hwloc_bitmap_weight(cpus[0]), d == DLRT_GPUPLAN_BLOCK ? "block" : "cyclic", qd.dist,
	       qs.dist, qn.dist, best_dist(t, cpus, nt), qd.maxper, qs.maxper);
	dlrt_gpuplan_free(p);
	free_layout(cpus, nt);
	free(used);
	free(b);
	dlrt_gpuplan_topology_free(t);
}

static int score(int argc, char **argv)
{
	struct dlrt_err err;
	struct dlrt_gpuplan_topo *t;
	hwloc_bitmap_t *cpus;
	struct quality q;
	int nt, cpt, *used;

	if (argc < 7)
		return fprintf(stderr, "usage: bench_gpuplan --score FIXTURE NTASKS CPT "
			       "block|cyclic G0 G1 ...\n"), 2;
	nt = atoi(argv[3]);
	cpt = atoi(argv[4]);
	t = dlrt_gpuplan_topology_load(argv[2], 0, &err);
	if (!t || nt < 1 || argc != 6 + nt) {
		fprintf(stderr, "bench_gpuplan: %s\n", t ? "need one GPU per task" : err.msg);
		return 1;
	}
	cpus = layout(t, nt, cpt, strcmp(argv[5], "block") ? DLRT_GPUPLAN_CYCLIC :
				  DLRT_GPUPLAN_BLOCK);
	used = calloc((size_t)nt, sizeof(*used));
	for (int i = 0; i < nt; i++) {
		used[i] = atoi(argv[6 + i]);
		if (used[i] < 0 || used[i] >= t->ngpus) {
			fprintf(stderr, "bench_gpuplan: GPU %d is not in %s\n", used[i], argv[2]);
			return 1;
		}
	}
	tally(&q, t, used, cpus, nt);
	printf("%ld %d\n", q.dist, q.maxper);
	free(used);
	free_layout(cpus, nt);
	dlrt_gpuplan_topology_free(t);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--score"))
		return score(argc, argv);
	const char *dir = argc > 1 ? argv[1] : "tests/fixtures/topo";
	int reps = argc > 2 ? atoi(argv[2]) : 2000;
	static const char *const fx[] = { "dgx-2s4g.xml", "dgxa100-8g.xml", "2s2g.xml",
					  "onesocket-4g.xml", "switch-4g.xml", "cluster-2s4g.xml" };
	static const int ngpu[] = { 8, 8, 4, 4, 4, 4 };

	if (reps < 10)
		reps = 10;
	printf("### Plan time (us, %d runs)\n\n", reps);
	printf("| fixture | tasks x GPUs | compute median | compute p99 | solver median |\n");
	printf("|---|---|---|---|---|\n");
	time_plan(dir, "dgxa100-8g.xml", 128, reps);
	time_plan(dir, "dgx-2s4g.xml", 64, reps);
	time_plan(dir, "dgxa100-8g.xml", 8, reps);
	time_plan(dir, "dgxa100-8g.xml", 2, reps);
	printf("\n### Plan quality: sum of CPU-to-GPU distances (lower is better)\n\n");
	printf("| fixture | tasks x cpus | layout | dlrt | slurm closest | naive | best balanced "
	       "| dlrt max/GPU | slurm max/GPU |\n");
	printf("|---|---|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < sizeof(fx) / sizeof(*fx); i++) {
		quality(dir, fx[i], ngpu[i], 0, DLRT_GPUPLAN_BLOCK);
		quality(dir, fx[i], ngpu[i], 2, DLRT_GPUPLAN_CYCLIC);
		quality(dir, fx[i], 2 * ngpu[i], 0, DLRT_GPUPLAN_BLOCK);
		quality(dir, fx[i], 2 * ngpu[i], 1, DLRT_GPUPLAN_CYCLIC);
	}
	quality(dir, "dgxa100-8g.xml", 128, 2, DLRT_GPUPLAN_BLOCK);
	quality(dir, "dgxa100-8g.xml", 128, 2, DLRT_GPUPLAN_CYCLIC);
	return 0;
}
