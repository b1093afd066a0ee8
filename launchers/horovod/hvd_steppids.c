#include "hvd_steppids.h"

#include <stdio.h>
#include <unistd.h>

#include "common/slurm_compat.h"

int dlrt_hvd_steppids_write(int fd, void *arg)
{
	const struct dlrt_hvd_steppids_req *req = arg;
	slurm_step_id_t id = {
		.job_id = req->job_id, .step_het_comp = NO_VAL, .step_id = req->step_id,
	};
	job_step_pids_response_msg_t *resp = NULL;
	FILE *f = fdopen(fd, "w");
	int rc = 0;

	if (!f) {
		close(fd);
		return 1;
	}
	/* $SLURM_CONF (the node's, passed by the plugin) or Slurm's default. */
	slurm_init(NULL);
	/* A node whose part of the step ended answers "already done", one that is
	 * down does not answer: both only leave their line out of pid_list. */
	slurm_job_step_get_pids(&id, req->nodes[0] ? (char *)req->nodes : NULL, &resp);
	if (resp && resp->pid_list) {
		dlrt_list_itr it = slurm_list_iterator_create(resp->pid_list);
		job_step_pids_t *p;

		while (it && (p = slurm_list_next(it))) {
			if (!p->node_name)
				continue;
			fprintf(f, "%u.%u|%s|", req->job_id, req->step_id, p->node_name);
			for (uint32_t i = 0; i < p->pid_cnt; i++)
				fprintf(f, "%s%u", i ? "," : "", p->pid[i]);
			fputc('\n', f);
		}
		if (it)
			slurm_list_iterator_destroy(it);
	}
	if (resp)
		slurm_job_step_pids_response_msg_free(resp);
	if (fclose(f) != 0)
		rc = 1;
	return rc;
}
