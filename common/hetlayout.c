#include "hetlayout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* The step's nodes, sorted by name for lookups (the list may hold thousands). */
struct node_index {
	const struct dlrt_hostlist *hl;
	uint32_t *by_name;
};

static const struct dlrt_hostlist *cmp_hl;

static int cmp_name(const void *a, const void *b)
{
	return strcmp(cmp_hl->names[*(const uint32_t *)a], cmp_hl->names[*(const uint32_t *)b]);
}

static int index_find(const struct node_index *ix, const char *name)
{
	uint32_t lo = 0, hi = ix->hl->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(ix->hl->names[ix->by_name[mid]], name);

		if (!c)
			return (int)ix->by_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* The group of every step node into owner[]: from each group's allocation. */
static int claim_nodes(const struct dlrt_het_input *in, const struct node_index *ix,
		       uint32_t *owner, struct dlrt_err *err)
{
	for (uint32_t g = 0; g < in->ngroups; g++) {
		struct dlrt_hostlist a;

		if (!in->group_nodes[g] || !in->group_nodes[g][0])
			continue;
		if (dlrt_hostlist_expand(&a, in->group_nodes[g], err) < 0)
			return -1;
		for (uint32_t i = 0; i < a.n; i++) {
			int s = index_find(ix, a.names[i]);

			if (s < 0)
				continue;
			/* Slurm names a node once; a list that repeats one would give
			 * it twice the tasks it holds (build_comps sizes for once). */
			if (owner[s] == g) {
				dlrt_err_set(err, "node %s is listed twice in "
					     "SLURM_JOB_NODELIST_HET_GROUP_%u: start the step with "
					     "srun inside the job, and leave those variables as Slurm "
					     "set them", a.names[i], g);
				dlrt_hostlist_free(&a);
				return -1;
			}
			if (owner[s] != UINT32_MAX) {
				dlrt_err_set(err, "node %s is in heterogeneous job components %u and "
					     "%u: dlrt needs each node of a heterogeneous step in one "
					     "component (give the components different nodes)",
					     a.names[i], owner[s], g);
				dlrt_hostlist_free(&a);
				return -1;
			}
			owner[s] = g;
		}
		dlrt_hostlist_free(&a);
	}
	for (uint32_t s = 0; s < ix->hl->n; s++)
		if (owner[s] == UINT32_MAX)
			return dlrt_err_set(err, "node %s of this heterogeneous step is in no "
					    "component's allocation (SLURM_JOB_NODELIST_HET_GROUP_<N>): "
					    "start the step with srun inside the job, and leave those "
					    "variables as Slurm set them", ix->hl->names[s]);
	return 0;
}

/* Appends component `g`'s layout (its nodes in allocation order, `nodes` and
 * `tpn` as comma lists) to l, which has room for every node and task. */
static int append_comp(struct dlrt_layout *l, const struct dlrt_het_input *in, uint32_t g,
		       const char *nodes, const char *tpn, struct dlrt_err *err)
{
	struct dlrt_layout c;
	uint32_t k = l->ncomps, t0 = l->comp_first[k], n0 = l->comp_node_first[k];

	if (dlrt_layout_init(&c, nodes, tpn, in->dist, in->plane_size, err) < 0)
		return -1;
	for (uint32_t i = 0; i < c.nnodes; i++) {
		l->nodes.names[n0 + i] = strdup(c.nodes.names[i]);
		if (!l->nodes.names[n0 + i]) {
			dlrt_layout_free(&c);
			return dlrt_err_set(err, "out of memory building the task layout");
		}
		l->nodes.n = n0 + i + 1;
		l->node_ntasks[n0 + i] = c.node_ntasks[i];
		l->node_first[n0 + i] = t0 + c.node_first[i];
	}
	for (uint32_t t = 0; t < c.ntasks; t++) {
		l->task_node[t0 + t] = n0 + c.task_node[t];
		l->task_local[t0 + t] = c.task_local[t];
	}
	l->comp_group[k] = g;
	l->comp_first[k + 1] = t0 + c.ntasks;
	l->comp_node_first[k + 1] = n0 + c.nnodes;
	l->ncomps = k + 1;
	dlrt_layout_free(&c);
	return 0;
}

/* Every component that has nodes in the step, in group order; its nodes in
 * its allocation's order, which is the order of its own step's node list. */
static int build_comps(struct dlrt_layout *l, const struct dlrt_het_input *in,
		       const struct node_index *ix, const uint32_t *counts, const uint32_t *owner,
		       struct dlrt_err *err)
{
	size_t cap = 0;
	char *nodes, *tpn;
	int rc = 0;

	for (uint32_t s = 0; s < ix->hl->n; s++)
		cap += strlen(ix->hl->names[s]) + 1;
	nodes = malloc(cap + 1);
	tpn = malloc((size_t)ix->hl->n * 12 + 1);
	if (!nodes || !tpn) {
		free(nodes);
		free(tpn);
		return dlrt_err_set(err, "out of memory building the task layout");
	}
	for (uint32_t g = 0; g < in->ngroups && rc == 0; g++) {
		struct dlrt_hostlist a;
		size_t no = 0, to = 0;

		if (!in->group_nodes[g] || !in->group_nodes[g][0])
			continue;
		if (dlrt_hostlist_expand(&a, in->group_nodes[g], err) < 0) {
			rc = -1;
			break;
		}
		for (uint32_t i = 0; i < a.n; i++) {
			int s = index_find(ix, a.names[i]);

			if (s < 0 || owner[s] != g)
				continue;
			no += (size_t)sprintf(nodes + no, "%s%s", no ? "," : "", a.names[i]);
			to += (size_t)sprintf(tpn + to, "%s%u", to ? "," : "", counts[s]);
		}
		dlrt_hostlist_free(&a);
		if (no)
			rc = append_comp(l, in, g, nodes, tpn, err);
	}
	free(nodes);
	free(tpn);
	return rc;
}

static int alloc_layout(struct dlrt_layout *l, uint32_t nnodes, uint32_t ntasks,
			uint32_t ngroups, struct dlrt_err *err)
{
	l->nnodes = nnodes;
	l->ntasks = ntasks;
	l->nodes.names = calloc(nnodes, sizeof(char *));
	l->node_ntasks = calloc(nnodes, sizeof(uint32_t));
	l->node_first = calloc(nnodes, sizeof(uint32_t));
	l->task_node = calloc(ntasks, sizeof(uint32_t));
	l->task_local = calloc(ntasks, sizeof(uint32_t));
	l->comp_first = calloc(ngroups + 1, sizeof(uint32_t));
	l->comp_node_first = calloc(ngroups + 1, sizeof(uint32_t));
	l->comp_group = calloc(ngroups, sizeof(uint32_t));
	if (!l->nodes.names || !l->node_ntasks || !l->node_first || !l->task_node ||
	    !l->task_local || !l->comp_first || !l->comp_node_first || !l->comp_group)
		return dlrt_err_set(err, "out of memory building the task layout");
	return 0;
}

int dlrt_layout_init_het(struct dlrt_layout *l, const struct dlrt_het_input *in,
			 struct dlrt_err *err)
{
	struct dlrt_hostlist s = { 0 };
	struct node_index ix = { .hl = &s };
	uint32_t *counts = NULL, *owner = NULL, ntasks = 0;

	memset(l, 0, sizeof(*l));
	l->dist = in->dist;
	if (in->ngroups < 1 || in->ngroups > DLRT_HET_GROUPS_MAX)
		return dlrt_err_set(err, "SLURM_HET_SIZE=%u is not a heterogeneous job's size "
				    "(1 to %u)", in->ngroups, DLRT_HET_GROUPS_MAX);
	if (dlrt_hostlist_expand(&s, in->step_nodes, err) < 0)
		return -1;
	counts = calloc(s.n ? s.n : 1, sizeof(uint32_t));
	owner = malloc((s.n ? s.n : 1) * sizeof(uint32_t));
	ix.by_name = malloc((s.n ? s.n : 1) * sizeof(uint32_t));
	if (!counts || !owner || !ix.by_name) {
		dlrt_err_set(err, "out of memory building the task layout");
		goto fail;
	}
	if (dlrt_counts_expand(counts, s.n, in->step_tpn, err) < 0)
		goto fail;
	for (uint32_t i = 0; i < s.n; i++) {
		if (counts[i] > (1u << 20) || ntasks > (1u << 24)) {
			dlrt_err_set(err, "tasks-per-node list '%s' is implausibly large",
				     in->step_tpn);
			goto fail;
		}
		ntasks += counts[i];
		owner[i] = UINT32_MAX;
		ix.by_name[i] = i;
	}
	cmp_hl = &s;
	qsort(ix.by_name, s.n, sizeof(uint32_t), cmp_name);
	for (uint32_t i = 1; i < s.n; i++)
		if (!strcmp(s.names[ix.by_name[i - 1]], s.names[ix.by_name[i]])) {
			dlrt_err_set(err, "node %s holds tasks of two components of this "
				     "heterogeneous step: dlrt needs each node in one component "
				     "(give the components different nodes)",
				     s.names[ix.by_name[i]]);
			goto fail;
		}
	if (ntasks == 0) {
		dlrt_err_set(err, "the step has no tasks");
		goto fail;
	}
	if (claim_nodes(in, &ix, owner, err) < 0 ||
	    alloc_layout(l, s.n, ntasks, in->ngroups, err) < 0 ||
	    build_comps(l, in, &ix, counts, owner, err) < 0)
		goto fail;
	free(counts);
	free(owner);
	free(ix.by_name);
	dlrt_hostlist_free(&s);
	return 0;
fail:
	free(counts);
	free(owner);
	free(ix.by_name);
	dlrt_hostlist_free(&s);
	dlrt_layout_free(l);
	return -1;
}

int dlrt_layout_comp_of_group(const struct dlrt_layout *l, uint32_t group)
{
	for (uint32_t c = 0; c < l->ncomps; c++)
		if (l->comp_group[c] == group)
			return (int)c;
	return -1;
}
