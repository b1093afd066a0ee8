#include "layout.h"

#include <stdlib.h>
#include <string.h>

const char *dlrt_dist_name(enum dlrt_dist dist)
{
	switch (dist) {
	case DLRT_DIST_BLOCK:
		return "block";
	case DLRT_DIST_CYCLIC:
		return "cyclic";
	case DLRT_DIST_PLANE:
		return "plane";
	}
	return "?";
}

int dlrt_layout_parse_dist(const char *s, enum dlrt_dist *dist, uint32_t *plane_size,
			   struct dlrt_err *err)
{
	size_t n;

	*plane_size = 0;
	*dist = DLRT_DIST_BLOCK;
	if (!s || !*s)
		return 0;
	/* Only the node level (before ':' or ',') decides which node a task is on. */
	n = strcspn(s, ":,");
	if ((n == 5 && !strncmp(s, "block", 5)) || (n == 4 && !strncmp(s, "pack", 4)) ||
	    (n == 1 && *s == '*'))
		return 0;
	if (n == 6 && !strncmp(s, "cyclic", 6)) {
		*dist = DLRT_DIST_CYCLIC;
		return 0;
	}
	if (!strncmp(s, "plane", 5) && (n == 5 || s[5] == '=')) {
		/* Slurm exports "plane" and the size separately in SLURM_DIST_PLANESIZE;
		 * the size stays 0 here until the caller supplies it. */
		char *end;
		unsigned long v = 0;

		if (s[5] == '=') {
			v = strtoul(s + 6, &end, 10);
			if (v == 0 || v > 1u << 20 || (end != s + n && *end != ':'))
				return dlrt_err_set(err, "task distribution '%s' has a bad plane size, "
						    "e.g. -m plane=4", s);
		}
		*dist = DLRT_DIST_PLANE;
		*plane_size = (uint32_t)v;
		return 0;
	}
	return dlrt_err_set(err, "task distribution '%s' is not supported by dlrt: use -m block, "
			    "-m cyclic or -m plane=N", s);
}

int dlrt_layout_init(struct dlrt_layout *l, const char *nodelist, const char *tasks_per_node,
		     enum dlrt_dist dist, uint32_t plane_size, struct dlrt_err *err)
{
	uint32_t *left = NULL, t = 0;

	memset(l, 0, sizeof(*l));
	l->dist = dist;
	if (dist == DLRT_DIST_PLANE && plane_size == 0)
		return dlrt_err_set(err, "plane distribution without a plane size (SLURM_DIST_PLANESIZE)");
	if (dlrt_hostlist_expand(&l->nodes, nodelist, err) < 0)
		return -1;
	l->nnodes = l->nodes.n;
	l->node_ntasks = calloc(l->nnodes, sizeof(uint32_t));
	l->node_first = calloc(l->nnodes, sizeof(uint32_t));
	left = calloc(l->nnodes, sizeof(uint32_t));
	if (!l->node_ntasks || !l->node_first || !left) {
		dlrt_err_set(err, "out of memory building the task layout");
		goto fail;
	}
	if (dlrt_counts_expand(l->node_ntasks, l->nnodes, tasks_per_node, err) < 0)
		goto fail;
	for (uint32_t i = 0; i < l->nnodes; i++) {
		if (l->node_ntasks[i] > (1u << 20) || l->ntasks > (1u << 24)) {
			dlrt_err_set(err, "tasks-per-node list '%s' is implausibly large", tasks_per_node);
			goto fail;
		}
		l->ntasks += l->node_ntasks[i];
		left[i] = l->node_ntasks[i];
	}
	if (l->ntasks == 0) {
		dlrt_err_set(err, "the step has no tasks");
		goto fail;
	}
	l->task_node = calloc(l->ntasks, sizeof(uint32_t));
	l->task_local = calloc(l->ntasks, sizeof(uint32_t));
	if (!l->task_node || !l->task_local) {
		dlrt_err_set(err, "out of memory building the task layout");
		goto fail;
	}
	/* Hand out task ids in Slurm's order: whole nodes (block), one per node per
	 * round (cyclic), or plane_size per node per round (plane), skipping nodes
	 * whose final count is reached. */
	{
		uint32_t chunk = dist == DLRT_DIST_BLOCK ? UINT32_MAX :
				 dist == DLRT_DIST_CYCLIC ? 1 : plane_size;

		while (t < l->ntasks) {
			for (uint32_t i = 0; i < l->nnodes && t < l->ntasks; i++) {
				for (uint32_t k = 0; k < chunk && left[i]; k++, t++) {
					uint32_t local = l->node_ntasks[i] - left[i]--;

					if (local == 0)
						l->node_first[i] = t;
					l->task_node[t] = i;
					l->task_local[t] = local;
				}
			}
		}
	}
	free(left);
	return 0;
fail:
	free(left);
	dlrt_layout_free(l);
	return -1;
}

int dlrt_layout_check_local(const struct dlrt_layout *l, uint32_t node_id, uint32_t local_id,
			    uint32_t global_id, struct dlrt_err *err)
{
	if (global_id >= l->ntasks || node_id >= l->nnodes ||
	    l->task_node[global_id] != node_id || l->task_local[global_id] != local_id)
		return dlrt_err_set(err, "task %u (local %u on node %u) is not where distribution "
				    "'%s' puts it: dlrt supports -m block, -m cyclic and -m plane=N",
				    global_id, local_id, node_id, dlrt_dist_name(l->dist));
	return 0;
}

void dlrt_layout_free(struct dlrt_layout *l)
{
	dlrt_hostlist_free(&l->nodes);
	free(l->node_ntasks);
	free(l->node_first);
	free(l->task_node);
	free(l->task_local);
	free(l->comp_first);
	free(l->comp_node_first);
	free(l->comp_group);
	memset(l, 0, sizeof(*l));
}

uint32_t dlrt_layout_task_comp(const struct dlrt_layout *l, uint32_t t)
{
	uint32_t c = 0;

	while (c + 1 < l->ncomps && t >= l->comp_first[c + 1])
		c++;
	return c;
}
