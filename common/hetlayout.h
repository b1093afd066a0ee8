/* hetlayout.h - the layout of a heterogeneous step: one world over its components.
 *
 * `srun --het-group=0,1` (or a hetjob's srun over its components) starts one
 * step per component. Slurm numbers their tasks one after the other (the
 * first component's first; SLURM_PROCID is that global id) but each
 * component's slurmstepd gets only its own component's task ids and node
 * index (S_TASK_GLOBAL_ID, S_JOB_NODEID). What every component sees of the
 * whole step is the node list and tasks per node of all components, merged
 * and sorted by node name (SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE:
 * srun's _reorder_het_job_recs), and the allocation of each component
 * (SLURM_JOB_NODELIST_HET_GROUP_<g>). So a node belongs to the component whose
 * allocation holds it, each component's tasks are laid out over its own nodes
 * by the distribution as in a plain step, and the components follow each
 * other in group order (docs/hetjob.md).
 */
#ifndef DLRT_HETLAYOUT_H
#define DLRT_HETLAYOUT_H

#include <stdint.h>

#include "dlrt_err.h"
#include "layout.h"

/* Upper bound on SLURM_HET_SIZE that dlrt reads (Slurm's own limit is 128). */
#define DLRT_HET_GROUPS_MAX 128

struct dlrt_het_input {
	const char *step_nodes;         /* SLURM_STEP_NODELIST: every component's nodes */
	const char *step_tpn;           /* SLURM_STEP_TASKS_PER_NODE, in that order */
	uint32_t ngroups;               /* SLURM_HET_SIZE */
	const char *const *group_nodes; /* [ngroups] each group's allocation; NULL: unset */
	enum dlrt_dist dist;            /* the same for every component */
	uint32_t plane_size;
};

/* Builds the step's layout with its components (struct dlrt_layout's comp_*):
 * nodes in component order, task ids in Slurm's global order. A node of the
 * step in no group's allocation, or in two, is an error that names it. */
int dlrt_layout_init_het(struct dlrt_layout *l, const struct dlrt_het_input *in,
			 struct dlrt_err *err);

/* The component of group `group`, or -1 when that group has no task in the step. */
int dlrt_layout_comp_of_group(const struct dlrt_layout *l, uint32_t group);

#endif
