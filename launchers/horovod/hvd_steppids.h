/* hvd_steppids.h - the step's pids per node, from Slurm (libslurm).
 *
 * Linked into dlrt-hvd-driver only (never into libdlrt.a, so nothing else
 * links libslurm). Runs in the driver's forked child (hvd_watch.h).
 */
#ifndef DLRT_HVD_STEPPIDS_H
#define DLRT_HVD_STEPPIDS_H

#include <stdint.h>

struct dlrt_hvd_steppids_req {
	uint32_t job_id, step_id;
	char nodes[8192]; /* the nodes to ask, "n1,n2,..." */
};

/* slurm_job_step_get_pids on req->nodes; writes "JOB.STEP|node|pid,pid\n"
 * for every node that answered with pids, closes fd. Returns 0 (a node
 * that did not answer is what the caller wants to learn, not an error), 1
 * if no answer could be written. */
int dlrt_hvd_steppids_write(int fd, void *req);

#endif
