/* Fuzz target: everything dlrt parses from the step environment and from
 * plugstack.conf (hostlists, task counts, distributions, config keys, option
 * values: --dl-signal's SIG@SECS among them), and the layout/role model built from them. Input: NUL-separated
 * fields: nodelist, tasks-per-node, distribution, config args, option value,
 * and, for a heterogeneous step, the allocations of het groups 0 and 1
 * (SLURM_JOB_NODELIST_HET_GROUP_<g>, common/hetlayout.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hetlayout.h"
#include "common/layout.h"
#include "runtime/runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *field[7] = { "", "", "", "", "", "", "" };
	struct dlrt_config cfg;
	struct dlrt_opts opts;
	struct dlrt_layout l;
	struct dlrt_err err;
	enum dlrt_dist dist;
	uint32_t plane;
	size_t f = 0, start = 0;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (size_t i = 0; i <= size && f < 7; i++) {
		if (buf[i] == '\0') {
			field[f++] = buf + start;
			start = i + 1;
		}
	}
	{
		char *av[1] = { field[3] };

		if (dlrt_config_parse(&cfg, 1, av, &err) < 0)
			dlrt_config_parse(&cfg, 0, NULL, &err);
	}
	dlrt_opts_init(&opts, &cfg);
	dlrt_opts_set(&opts, &cfg, dlrt_opt_find("dl-servers"), field[4], &err);
	dlrt_opts_set(&opts, &cfg, DLRT_OPT_RUNTIME, field[4], &err);
	dlrt_opts_set_name(&opts, &cfg, "dl-elastic", field[4], &err);
	dlrt_opts_set_name(&opts, &cfg, "dl-nproc-per-node", field[4], &err);
	dlrt_opts_set_name(&opts, &cfg, "dl-signal", field[4], &err);
	dlrt_opts_set_name(&opts, &cfg, "dl-requeue", field[4], &err);
	dlrt_opts_set_name(&opts, &cfg, "dl-checkpoint-dir", field[4], &err);
	dlrt_opts_set_name(&opts, &cfg, "dl-hang-timeout", field[4], &err);
	dlrt_opts_set_name(&opts, &cfg, "dl-het-roles", field[4], &err);
	if (dlrt_layout_parse_dist(field[2], &dist, &plane, &err) == 0 &&
	    (field[5][0] ? dlrt_layout_init_het(&l, &(struct dlrt_het_input){
				.step_nodes = field[0], .step_tpn = field[1], .ngroups = 2,
				.group_nodes = (const char *const[]){ field[5], field[6] },
				.dist = dist, .plane_size = plane ? plane : 1 }, &err) :
			   dlrt_layout_init(&l, field[0], field[1], dist, plane ? plane : 1,
					    &err)) == 0) {
		/* Keep role tables small enough for the fuzzer's speed. */
		if (l.ntasks <= 4096) {
			for (int r = 0; dlrt_runtimes[r]; r++) {
				struct dlrt_plan p;
				struct dlrt_step_info step = { .job_id = 1, .step_id = 2, .restart_count = 3 };

				if (dlrt_plan_build(&p, dlrt_runtimes[r], &l, &opts, &cfg, &err) == 0) {
					struct dlrt_env env;

					dlrt_env_init(&env);
					dlrt_plan_task_env(&p, l.ntasks - 1, &step, NULL, &env, &err);
					dlrt_env_free(&env);
					dlrt_plan_free(&p);
				}
			}
		}
		dlrt_layout_free(&l);
	}
	free(buf);
	return 0;
}
