/* hetstep.h - a step over the components of a heterogeneous job as one dlrt
 * world (docs/hetjob.md): the slurmstepd side rebuilds the whole step's
 * layout and offsets this component's task ids and node index into it; the
 * srun side hands every component the same step secret and carrier and
 * checks the components against the runtime's roles before they start.
 */
#ifndef DLRT_HETSTEP_H
#define DLRT_HETSTEP_H

#include <slurm/spank.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/layout.h"
#include "runtime/runtime.h"

/* slurmstepd, user_init: in a step over two or more components, builds the
 * whole step's layout into l and this node's index in it into *node_id and
 * returns 1; 0 for a plain step (the caller builds it as always, nothing
 * read but SLURM_HET_SIZE); -1 + err. */
int dlrt_hetstep_layout(spank_t sp, const char *nodelist, const char *tpn, enum dlrt_dist dist,
			uint32_t plane, struct dlrt_layout *l, uint32_t *node_id,
			struct dlrt_err *err);
/* The job id the whole step shares: the het job's leader (SLURM_JOB_ID) in a
 * step over components, else S_JOB_ID. 0: unknown. */
uint32_t dlrt_hetstep_job_id(spank_t sp);
/* This task's rank in the whole step: S_TASK_GLOBAL_ID, which Slurm numbers
 * per component, plus the component's first task id. -1 when Slurm has none. */
int dlrt_task_rank(spank_t sp, uint32_t *rank);
/* "JOB.STEP" of every component of this step, separated by spaces (scancel's
 * arguments; each component is a job of its own), or of the step itself in a
 * plain one. job_env: the job's environment (S_JOB_ENV). */
void dlrt_hetstep_step_ids(char *out, size_t len, char **job_env, uint32_t job_id,
			   uint32_t step_id);
/* " (component N)" of task `rank` in a step over components, else "". */
const char *dlrt_hetstep_comp_of(uint32_t rank, char *buf, size_t len);
/* --dl-dry-run: one line per component (its group, nodes, tasks, resources
 * from the allocation, roles). Nothing in a plain step. */
void dlrt_hetstep_print(spank_t sp, FILE *f, const struct dlrt_plan *plan);

/* The batch script of a hetjob (--dl-retries' decision): every component's
 * job id into ids ("96 97") and every component's nodes, comma-separated,
 * into nodes. Unchanged when the job is not heterogeneous. */
void dlrt_hetstep_batch_jobs(spank_t sp, char *ids, size_t ilen, char *nodes, size_t nlen);

/* srun: init_post_opt runs once per component of the step (seen on 22.05);
 * this counts them. From the second on the step is heterogeneous. */
uint32_t dlrt_hetstep_client_count(void);
bool dlrt_hetstep_client_het(void);
/* srun, init_post_opt: the step's MPI plugin (--mpi, SLURM_MPI_TYPE, or
 * MpiDefault), into out. Slurm 24.11's srun exports SLURM_MPI_TYPE only after
 * every component's init_post_opt (22.05's before), when a heterogeneous
 * step's carrier is already chosen. -1: slurmctld did not say. */
int dlrt_hetstep_client_mpi(char *out, size_t len);
/* srun, init_post_opt of every component after the first: the step secret
 * and the carrier (srun's rendezvous' port, or 0: Slurm's PMIx) into the
 * environment every component's launch gets. */
int dlrt_hetstep_client_env(uint16_t rdv_port, const uint8_t secret[32], struct dlrt_err *err);
/* srun, local_user_init: each component's task count from slurmctld, checked
 * against the runtime's roles (dlrt_plan_validate). 0 also when slurmctld
 * does not answer: slurmstepd checks again. */
int dlrt_hetstep_client_check(spank_t sp, struct dlrt_err *err);

#endif
