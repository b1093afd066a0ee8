/* gpuplan.c - assign the step's GPUs (and NICs) to the local tasks.
 *
 * The problem is a small balanced assignment: T tasks, G allocated GPUs,
 * score(task, GPU) = number of the task's CPUs in the GPU's locality. With
 * T >= G every task gets one GPU and every GPU floor(T/G) or ceil(T/G) tasks;
 * with G > T every GPU goes to one task and every task gets floor(G/T) or
 * ceil(G/T) GPUs. Among those balanced plans we take one with the largest
 * total overlap, and among equal ones the one closest to the "natural" order
 * (task i of T <-> GPU position i*G/T), so that with no locality information
 * (task/none: every task sees the whole node) task i simply gets GPU i.
 *
 * Both objectives go into one integer cost (overlap * K dominates the tie
 * term, which sums to less than K), and dlrt_gpuplan_solve() finds the exact
 * optimum by successive shortest paths (the Hungarian method's augmenting
 * step) over the m bins, which is cheap because m (the GPUs, or the tasks
 * when there are fewer of them) is small: about 0.1 ms for 128 x 8.
 */
#include "gpuplan.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define INF INT64_MAX

int dlrt_gpuplan_solve(int n, int m, const int64_t *cost, int *out)
{
	int q, r, rv = -1;
	int64_t cmax = 0, big;
	int64_t *e = NULL, *dist = NULL;
	int *arg = NULL, *pb = NULL, *pi = NULL, *load = NULL;

	if (n < 1 || m < 1 || n < m || n > 1 << 20 || m > 1 << 12)
		return -1;
	q = n / m;
	r = n % m;
	for (long i = 0; i < (long)n * m; i++) {
		int64_t c = cost[i] < 0 ? -cost[i] : cost[i];

		if (cost[i] == INT64_MIN)
			return -1;
		if (c > cmax)
			cmax = c;
	}
	/* `big` rewards the first floor(n/m) items of every bin; it must beat any
	 * difference of path costs (at most m moves of 2*cmax each, plus entry). */
	if (cmax > INT64_MAX / 16 / ((int64_t)n + 2))
		return -1;
	big = 4 * ((int64_t)n + 2) * (cmax + 1);
	e = malloc(sizeof(*e) * (size_t)m * (size_t)m);
	arg = malloc(sizeof(*arg) * (size_t)m * (size_t)m);
	dist = malloc(sizeof(*dist) * (size_t)m);
	pb = malloc(sizeof(*pb) * (size_t)m);
	pi = malloc(sizeof(*pi) * (size_t)m);
	load = calloc((size_t)m, sizeof(*load));
	if (!e || !arg || !dist || !pb || !pi || !load)
		goto fail;

	for (int k = 0; k < n; k++) {
		const int64_t *ck = cost + (size_t)k * (size_t)m;
		int best = -1, b;
		int64_t bestv = INF;

		for (b = 0; b < m; b++) {
			dist[b] = ck[b];
			pb[b] = -1;
			pi[b] = -1;
		}
		/* Cheapest way to move one placed item from bin a to bin b. */
		for (int i = 0; i < m * m; i++)
			e[i] = INF;
		for (int i = 0; i < k; i++) {
			const int64_t *ci = cost + (size_t)i * (size_t)m;
			int a = out[i];

			for (b = 0; b < m; b++) {
				int64_t d = ci[b] - ci[a];

				if (b != a && d < e[a * m + b]) {
					e[a * m + b] = d;
					arg[a * m + b] = i;
				}
			}
		}
		/* Bellman-Ford over the bins; the current placement is optimal, so
		 * there is no negative cycle and m rounds suffice. */
		for (int round = 0; round < m; round++) {
			int changed = 0;

			for (int a = 0; a < m; a++) {
				for (b = 0; b < m; b++) {
					int64_t w = e[a * m + b];

					if (w == INF || dist[a] + w >= dist[b])
						continue;
					dist[b] = dist[a] + w;
					pb[b] = a;
					pi[b] = arg[a * m + b];
					changed = 1;
				}
			}
			if (!changed)
				break;
		}
		for (b = 0; b < m; b++) {
			int64_t ex, v;

			if (load[b] < q)
				ex = -big;
			else if (load[b] < q + (r > 0))
				ex = 0;
			else
				continue;
			v = dist[b] + ex;
			if (best < 0 || v < bestv) {
				best = b;
				bestv = v;
			}
		}
		if (best < 0)
			goto fail; /* cannot happen: total capacity >= n */
		load[best]++;
		b = best;
		for (int hops = 0; pi[b] >= 0 && hops <= m; hops++) {
			int i = pi[b], a = pb[b];

			out[i] = b;
			b = a;
		}
		out[k] = b;
	}
	rv = 0;
fail:
	free(e);
	free(arg);
	free(dist);
	free(pb);
	free(pi);
	free(load);
	return rv;
}

/* |a & b|, with a caller-provided scratch bitmap: allocating one per pair
 * was most of the plan time for 128 tasks. */
static int overlap(hwloc_bitmap_t scratch, hwloc_const_bitmap_t a, hwloc_const_bitmap_t b)
{
	int w;

	hwloc_bitmap_and(scratch, a, b);
	w = hwloc_bitmap_weight(scratch);
	return w < 0 ? 0 : w;
}

/* Edges between two objects of the tree: 2 for two devices on one PCIe
 * switch port pair, more through a host bridge, more across packages. */
static int tree_hops(hwloc_obj_t a, hwloc_obj_t b)
{
	int ha = 0;

	for (hwloc_obj_t x = a; x; x = x->parent, ha++) {
		int hb = 0;

		for (hwloc_obj_t y = b; y; y = y->parent, hb++)
			if (x == y)
				return ha + hb;
	}
	return 1 << 20;
}

/* Best NIC of one kind for a GPU (gpu >= 0) or for the task's CPUs. For
 * NCCL_SOCKET_IFNAME an Ethernet netdev beats IPoIB: the socket bootstrap
 * needs an IP address, which IPoIB interfaces often lack, so forcing one
 * could hang NCCL. Then: fewest tree hops to the GPU, most CPUs shared
 * with the task, least used by earlier tasks, first in PCI order. */
static int pick_nic(const struct dlrt_gpuplan_topo *t, int want_verbs, int gpu,
		    hwloc_const_bitmap_t task_cpus, const int *uses, const int *hops,
		    hwloc_bitmap_t scratch)
{
	int best = -1;
	long bkey[4] = { 0, 0, 0, 0 };

	for (int i = 0; i < t->nnics; i++) {
		const struct dlrt_gpuplan_nic *n = &t->nics[i];
		long key[4];
		int k;

		if (n->openfabrics != want_verbs)
			continue;
		key[0] = n->ipoib;
		key[1] = gpu >= 0 ? hops[gpu * t->nnics + i] : 0;
		key[2] = -overlap(scratch, n->cpuset, task_cpus);
		key[3] = uses[i];
		for (k = 0; k < 4 && key[k] == bkey[k]; k++)
			;
		if (best < 0 || (k < 4 && key[k] < bkey[k])) {
			best = i;
			memcpy(bkey, key, sizeof(key));
		}
	}
	return best;
}

static int pick_nics(const struct dlrt_gpuplan_topo *t, struct dlrt_gpuplan *p,
		     hwloc_bitmap_t scratch)
{
	int uses[DLRT_GPUPLAN_NIC_MAX] = { 0 };
	int *hops = malloc(sizeof(*hops) * (size_t)(t->ngpus * t->nnics + 1));

	if (!hops)
		return -1;
	for (int g = 0; g < t->ngpus; g++)
		for (int i = 0; i < t->nnics; i++)
			hops[g * t->nnics + i] = tree_hops(t->gpus[g].pcidev, t->nics[i].obj);
	for (int ti = 0; ti < p->ntasks; ti++) {
		struct dlrt_gpuplan_task *tk = &p->tasks[ti];
		int first = tk->ngpus ? tk->gpus[0] : -1;
		int nd = pick_nic(t, 0, first, tk->cpuset, uses, hops, scratch);

		tk->netdev = nd;
		if (nd >= 0)
			uses[nd]++;
		for (int k = 0; k < (tk->ngpus ? tk->ngpus : 1); k++) {
			int nic = pick_nic(t, 1, tk->ngpus ? tk->gpus[k] : -1, tk->cpuset, uses,
					   hops, scratch);
			int dup = 0;

			if (nic < 0)
				break;
			for (int j = 0; j < tk->nnics; j++)
				dup |= tk->nics[j] == nic;
			if (dup || tk->nnics == DLRT_GPUPLAN_TASK_NICS)
				continue;
			tk->nics[tk->nnics++] = nic;
			uses[nic]++;
		}
	}
	free(hops);
	return 0;
}

/* Tie cost of item/bin pair: squared distance from the natural partner
 * (task ti of nt <-> GPU position j of ng when j/ng == ti/nt). Squared, so
 * that crossing two pairs always costs more than keeping their order: equal
 * tasks get GPUs in task order. Linear when squares could overflow. */
static int64_t tie_cost(int ti, int nt, int j, int ng, int squared)
{
	int64_t d = (int64_t)j * nt - (int64_t)ti * ng;

	if (d < 0)
		d = -d;
	return squared ? d * d : d;
}

/* Positions (into alloc->global) given to each task, as bit sets. */
static int plan_closest(const struct dlrt_gpuplan_topo *t, const struct dlrt_gpuplan_alloc *al,
			hwloc_const_cpuset_t const *cpus, int nt, uint64_t *pos,
			hwloc_bitmap_t scratch, struct dlrt_err *err)
{
	int ng = al->ngpus, n = nt >= ng ? nt : ng, m = nt >= ng ? ng : nt;
	int64_t *cost = malloc(sizeof(*cost) * (size_t)n * (size_t)m);
	int *ov = malloc(sizeof(*ov) * 2 * (size_t)n * (size_t)m);
	int *out = malloc(sizeof(*out) * (size_t)n);
	int64_t k, w, maxov = 0, maxup = 0, maxtie;
	int rv = -1, squared = 1;

	if (!cost || !ov || !out) {
		dlrt_err_set(err, "out of memory planning GPUs");
		goto fail;
	}
	/* Score = overlap with the GPU's locality, then (weight 1/w) overlap
	 * with the next larger CPU object: a task on a die without GPU prefers
	 * a GPU of its own package over one across the socket link. */
	for (int ti = 0; ti < nt; ti++) {
		for (int j = 0; j < ng; j++) {
			const struct dlrt_gpuplan_gpu *g = &t->gpus[al->global[j]];
			int o = overlap(scratch, cpus[ti], g->cpuset);
			int u = overlap(scratch, cpus[ti], g->cpuset_up);

			ov[ti * ng + j] = o;
			if (o > maxov)
				maxov = o;
			if (u > maxup)
				maxup = u;
			ov[(size_t)nt * ng + (size_t)ti * ng + j] = u;
		}
	}
	/* A plan pairs n items, so its second-level sum is at most n * maxup:
	 * w must be larger for one more local CPU to always win (a smaller w
	 * traded local overlap for package overlap: found by brute force). */
	w = (int64_t)n * maxup + 1;
	maxov = maxov * w + maxup;
	/* score * k must dominate the sum of all tie costs (< k), and the
	 * solver needs |cost| * 16 * (n + 2) to fit in 64 bits: squared tie
	 * costs, else linear ones, else none (then ties go by solver order). */
	maxtie = tie_cost(0, nt, ng - 1, ng, 1);
	if (tie_cost(nt - 1, nt, 0, ng, 1) > maxtie)
		maxtie = tie_cost(nt - 1, nt, 0, ng, 1);
	k = (int64_t)n * maxtie + 1;
	if ((maxov + 1) > INT64_MAX / 32 / (n + 2) / k) {
		squared = 0;
		maxtie = (int64_t)nt * ng;
		k = (int64_t)n * maxtie + 1;
	}
	if ((maxov + 1) > INT64_MAX / 32 / (n + 2) / k) {
		squared = -1;
		k = 1;
	}
	if ((maxov + 1) > INT64_MAX / 32 / (n + 2)) {
		dlrt_err_set(err, "GPU plan for %d tasks and %d GPUs is too large: use fewer "
			     "tasks per node or --dl-gpu-bind=map:LIST", nt, ng);
		goto fail;
	}
	for (int ti = 0; ti < nt; ti++) {
		for (int j = 0; j < ng; j++) {
			int64_t sc = (int64_t)ov[ti * ng + j] * w +
				     ov[(size_t)nt * ng + (size_t)ti * ng + j];
			int64_t c = -sc * k + (squared < 0 ? 0 : tie_cost(ti, nt, j, ng, squared));

			if (nt >= ng)
				cost[(size_t)ti * (size_t)m + (size_t)j] = c;
			else
				cost[(size_t)j * (size_t)m + (size_t)ti] = c;
		}
	}
	if (dlrt_gpuplan_solve(n, m, cost, out) < 0) {
		dlrt_err_set(err, "GPU assignment failed for %d tasks and %d GPUs", nt, ng);
		goto fail;
	}
	for (int i = 0; i < n; i++) {
		if (nt >= ng)
			pos[i] |= UINT64_C(1) << out[i];
		else
			pos[out[i]] |= UINT64_C(1) << i;
	}
	rv = 0;
fail:
	free(cost);
	free(ov);
	free(out);
	return rv;
}

static int position_of(const struct dlrt_gpuplan_alloc *al, int global)
{
	for (int j = 0; j < al->ngpus; j++)
		if (al->global[j] == global)
			return j;
	return -1;
}

static int plan_map(const struct dlrt_gpuplan_alloc *al, const struct dlrt_gpuplan_bind *b,
		    int nt, uint64_t *pos, struct dlrt_err *err)
{
	char have[256];

	dlrt_gpuplan_format_gpus(al->global, al->ngpus, have, sizeof(have));
	if (b->nmap < 1)
		return dlrt_err_set(err, "--dl-gpu-bind=map: needs a GPU per task, e.g. map:0,1");
	for (int ti = 0; ti < nt; ti++) {
		uint64_t set = b->map[ti % b->nmap];

		for (int g = 0; g < DLRT_GPUPLAN_GPU_MAX; g++) {
			int j;

			if (!(set & (UINT64_C(1) << g)))
				continue;
			j = position_of(al, g);
			if (j < 0)
				return dlrt_err_set(err, "--dl-gpu-bind=map gives task %d GPU %d, which "
						    "the step does not have (%s=%s): map only "
						    "allocated GPUs", ti, g, al->source,
						    al->ngpus ? have : "none");
			pos[ti] |= UINT64_C(1) << j;
		}
	}
	return 0;
}

/* Renumbered (ConstrainDevices): each runtime sees only the step's GPUs of
 * its kind, numbered 0..n-1 in bus order. */
static int rt_position(const struct dlrt_gpuplan_topo *t, const struct dlrt_gpuplan_alloc *al,
		       int j)
{
	int rt = t->gpus[al->global[j]].rt, n = 0;

	for (int k = 0; k < j; k++)
		n += t->gpus[al->global[k]].rt == rt;
	return n;
}

struct dlrt_gpuplan *dlrt_gpuplan_compute(const struct dlrt_gpuplan_topo *t,
					  const struct dlrt_gpuplan_alloc *al,
					  const struct dlrt_gpuplan_bind *b,
					  hwloc_const_cpuset_t const *cpus, int nt,
					  struct dlrt_err *err)
{
	struct dlrt_gpuplan *p = NULL;
	uint64_t *pos = NULL;
	hwloc_bitmap_t scratch = NULL;

	if (nt < 1 || nt > DLRT_GPUPLAN_TASK_MAX) {
		dlrt_err_set(err, "%d local tasks: dlrt plans 1 to %d tasks per node", nt,
			     DLRT_GPUPLAN_TASK_MAX);
		return NULL;
	}
	for (int j = 0; j < al->ngpus; j++) {
		if (al->global[j] < 0 || al->global[j] >= t->ngpus) {
			dlrt_err_set(err, "%s names GPU %d but the topology has %d GPUs: give the "
				     "node's topology (--dl-topology) or use --dl-gpu-bind=none",
				     al->source ? al->source : "the allocation", al->global[j],
				     t->ngpus);
			return NULL;
		}
	}
	p = calloc(1, sizeof(*p));
	pos = calloc((size_t)nt, sizeof(*pos));
	scratch = hwloc_bitmap_alloc();
	if (!p || !pos || !scratch || !(p->tasks = calloc((size_t)nt, sizeof(*p->tasks)))) {
		dlrt_err_set(err, "out of memory planning GPUs");
		goto fail;
	}
	p->mode = b->mode;
	p->ntasks = nt;
	p->renumbered = al->renumbered;
	for (int ti = 0; ti < nt; ti++) {
		p->tasks[ti].cpuset = hwloc_bitmap_dup(cpus[ti]);
		p->tasks[ti].gpu_cpuset = hwloc_bitmap_alloc();
		p->tasks[ti].netdev = -1;
		if (!p->tasks[ti].cpuset || !p->tasks[ti].gpu_cpuset) {
			dlrt_err_set(err, "out of memory planning GPUs");
			goto fail;
		}
	}
	if (b->mode == DLRT_GPUPLAN_MAP) {
		if (plan_map(al, b, nt, pos, err) < 0)
			goto fail;
	} else if (b->mode == DLRT_GPUPLAN_NONE) {
		for (int ti = 0; ti < nt; ti++)
			pos[ti] = al->ngpus == 64 ? UINT64_MAX : (UINT64_C(1) << al->ngpus) - 1;
	} else if (al->ngpus > 0) {
		if (plan_closest(t, al, cpus, nt, pos, scratch, err) < 0)
			goto fail;
	}
	for (int ti = 0; ti < nt; ti++) {
		struct dlrt_gpuplan_task *tk = &p->tasks[ti];

		for (int j = 0; j < al->ngpus; j++) {
			const struct dlrt_gpuplan_gpu *g = &t->gpus[al->global[j]];

			if (!(pos[ti] & (UINT64_C(1) << j)))
				continue;
			tk->gpus[tk->ngpus] = g->index;
			tk->visible[tk->ngpus] = al->renumbered ? rt_position(t, al, j) : g->rt_index;
			tk->ngpus++;
			tk->overlap += overlap(scratch, tk->cpuset, g->cpuset);
			hwloc_bitmap_or(tk->gpu_cpuset, tk->gpu_cpuset, g->cpuset);
		}
	}
	if (pick_nics(t, p, scratch) < 0) {
		dlrt_err_set(err, "out of memory choosing NICs");
		goto fail;
	}
	free(pos);
	hwloc_bitmap_free(scratch);
	return p;
fail:
	free(pos);
	hwloc_bitmap_free(scratch);
	dlrt_gpuplan_free(p);
	return NULL;
}

void dlrt_gpuplan_free(struct dlrt_gpuplan *p)
{
	if (!p)
		return;
	for (int i = 0; p->tasks && i < p->ntasks; i++) {
		hwloc_bitmap_free(p->tasks[i].cpuset);
		hwloc_bitmap_free(p->tasks[i].gpu_cpuset);
	}
	free(p->tasks);
	free(p);
}

static void append(char *buf, size_t len, int v)
{
	size_t off = strlen(buf);

	snprintf(buf + off, len - off, "%s%d", off ? "," : "", v);
}

/* Each runtime gets its own variable in its own numbering: a CUDA program
 * must not be handed an AMD GPU's number, nor ROCm an NVIDIA one's. */
static int gpu_env(const struct dlrt_gpuplan_task *tk, const struct dlrt_gpuplan_topo *t,
		   dlrt_gpuplan_setenv_fn setenv_fn, void *ctx)
{
	char cuda[512] = "", rocm[512] = "", pos[512] = "";
	int nrocm = 0;

	for (int k = 0; k < tk->ngpus; k++) {
		int rt = tk->gpus[k] >= 0 && tk->gpus[k] < t->ngpus ? t->gpus[tk->gpus[k]].rt
								     : DLRT_GPUPLAN_RT_CUDA;

		if (rt == DLRT_GPUPLAN_RT_ROCM) {
			append(rocm, sizeof(rocm), tk->visible[k]);
			append(pos, sizeof(pos), nrocm++);
		} else {
			append(cuda, sizeof(cuda), tk->visible[k]);
		}
	}
	/* HIP reads CUDA_VISIBLE_DEVICES too, as positions among the devices
	 * ROCR_VISIBLE_DEVICES left; on a node with NVIDIA GPUs "" hides them
	 * from CUDA, and HIP_VISIBLE_DEVICES (which HIP prefers) keeps HIP's. */
	if (setenv_fn(ctx, "CUDA_VISIBLE_DEVICES",
		      cuda[0] ? cuda : t->nrt[DLRT_GPUPLAN_RT_CUDA] ? "" : pos) != 0 ||
	    setenv_fn(ctx, "CUDA_DEVICE_ORDER", "PCI_BUS_ID") != 0)
		return -1;
	/* On a node with AMD GPUs, ROCm reads ROCR_VISIBLE_DEVICES first (Slurm
	 * may have set it step-wide): "" for a task without AMD GPU. */
	if (t->nrt[DLRT_GPUPLAN_RT_ROCM] && setenv_fn(ctx, "ROCR_VISIBLE_DEVICES", rocm) != 0)
		return -1;
	if (nrocm && setenv_fn(ctx, "HIP_VISIBLE_DEVICES", pos) != 0)
		return -1;
	return 0;
}

int dlrt_gpuplan_env(const struct dlrt_gpuplan *p, const struct dlrt_gpuplan_topo *t, int task,
		     dlrt_gpuplan_setenv_fn setenv_fn, void *ctx, struct dlrt_err *err)
{
	const struct dlrt_gpuplan_task *tk;
	char hca[512], ucx[512], v[512];
	size_t oh = 0, ou = 0;

	if (task < 0 || task >= p->ntasks)
		return dlrt_err_set(err, "local task %d is not in the GPU plan (0-%d)", task,
				    p->ntasks - 1);
	if (p->mode == DLRT_GPUPLAN_NONE)
		return 0;
	tk = &p->tasks[task];
	if (tk->ngpus > 0 && gpu_env(tk, t, setenv_fn, ctx) < 0)
		goto setfail;
	/* "=" asks NCCL for exact names: a bare mlx5_1 would also match mlx5_10. */
	for (int k = 0; k < tk->nnics; k++) {
		const struct dlrt_gpuplan_nic *n = &t->nics[tk->nics[k]];

		oh += (size_t)snprintf(hca + oh, sizeof(hca) - oh, "%s%s:%d", k ? "," : "=",
				       n->name, n->port);
		ou += (size_t)snprintf(ucx + ou, sizeof(ucx) - ou, "%s%s:%d", k ? "," : "",
				       n->name, n->port);
		if (oh >= sizeof(hca) || ou >= sizeof(ucx))
			return dlrt_err_set(err, "NIC list too long for task %d", task);
	}
	if (tk->nnics > 0 && (setenv_fn(ctx, "NCCL_IB_HCA", hca) != 0 ||
			      setenv_fn(ctx, "UCX_NET_DEVICES", ucx) != 0))
		goto setfail;
	if (tk->netdev >= 0) {
		snprintf(v, sizeof(v), "=%s", t->nics[tk->netdev].name);
		if (setenv_fn(ctx, "NCCL_SOCKET_IFNAME", v) != 0)
			goto setfail;
	}
	return 0;
setfail:
	return dlrt_err_set(err, "could not set the GPU environment of task %d", task);
}
