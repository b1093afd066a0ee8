/* layout.h - where every task of a step runs.
 *
 * Each slurmstepd only sees its own node's tasks, but a role model needs the
 * whole step: which node task 7 is on, how many tasks each node has. Slurm
 * places tasks deterministically from the node list, the task counts and the
 * distribution (-m), so dlrt rebuilds the placement from those three and then
 * checks it against the tasks it can see (see dlrt_layout_check_local).
 */
#ifndef DLRT_LAYOUT_H
#define DLRT_LAYOUT_H

#include <stdint.h>

#include "dlrt_err.h"
#include "hostlist.h"

enum dlrt_dist {
	DLRT_DIST_BLOCK,  /* fill node 0, then node 1, ... (Slurm's default) */
	DLRT_DIST_CYCLIC, /* one task per node in turn */
	DLRT_DIST_PLANE,  /* blocks of `plane_size` tasks per node in turn */
};

struct dlrt_layout {
	uint32_t nnodes;
	uint32_t ntasks;
	struct dlrt_hostlist nodes; /* node names in step order */
	uint32_t *node_ntasks;      /* [nnodes] tasks on each node */
	uint32_t *node_first;       /* [nnodes] lowest task id on each node */
	uint32_t *task_node;        /* [ntasks] node index of each task */
	uint32_t *task_local;       /* [ntasks] local rank (SLURM_LOCALID) of each task */
	enum dlrt_dist dist;
	/* A heterogeneous step (common/hetlayout.h): its components in Slurm's
	 * order, each a block of task ids and of nodes; 0 and NULL for a plain
	 * step, which is one component. */
	uint32_t ncomps;
	uint32_t *comp_first;       /* [ncomps + 1] lowest task id of each, then ntasks */
	uint32_t *comp_node_first;  /* [ncomps + 1] its first node index, then nnodes */
	uint32_t *comp_group;       /* [ncomps] its het group (SLURM_JOB_ID_HET_GROUP_<g>) */
};

/* Parses a SLURM_DISTRIBUTION value ("block", "cyclic:block", "plane=4", ...).
 * NULL or "" means block. */
int dlrt_layout_parse_dist(const char *s, enum dlrt_dist *dist, uint32_t *plane_size,
			   struct dlrt_err *err);

/* Builds the placement. `plane_size` matters only for DLRT_DIST_PLANE. */
int dlrt_layout_init(struct dlrt_layout *l, const char *nodelist, const char *tasks_per_node,
		     enum dlrt_dist dist, uint32_t plane_size, struct dlrt_err *err);

/* Confirms that task `global_id` is local task `local_id` of node `node_id`,
 * as Slurm says; a mismatch means a distribution dlrt cannot rebuild. */
int dlrt_layout_check_local(const struct dlrt_layout *l, uint32_t node_id, uint32_t local_id,
			    uint32_t global_id, struct dlrt_err *err);

void dlrt_layout_free(struct dlrt_layout *l);

/* The component of task `t` (0 in a plain step). */
uint32_t dlrt_layout_task_comp(const struct dlrt_layout *l, uint32_t t);

const char *dlrt_dist_name(enum dlrt_dist dist);

#endif
