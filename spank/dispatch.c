/* dispatch.c - the SPANK entry points (and, from Slurm 25.05, the failure mode of
 * slurm_spank_init), and nothing else.
 *
 * Like NVIDIA/pyxis, each entry point only routes to the file of the context
 * it runs in: client.c (srun, sbatch, salloc), stepd.c (slurmstepd). The
 * linker script dlrt.lds exports exactly these symbols.
 */
#include <slurm/slurm_errno.h>
#include <slurm/slurm_version.h>
#include <slurm/spank.h>
#include <string.h>
#include <unistd.h>

#include "plugin.h"

SPANK_PLUGIN(dlrt, 1);

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
/* Slurm reads a SPANK callback's failure only from a plugin loaded `required`,
 * and then a failing slurm_spank_init in slurmstepd drains the node unless the
 * plugin exports this (25.05 on): the job fails instead. dlrt's init fails only
 * when Slurm refuses to register its options (another plugin's of the same name),
 * never on a user's value; every failure a user can cause in slurmstepd fails the
 * step's tasks instead (stepd.c: deferred to task_init), on every release, so no
 * node is drained for it (docs/ADMIN.md, "Required or optional"). */
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	struct dlrt_err err;

	memset(&dlrt_plugin, 0, sizeof(dlrt_plugin));
	if (dlrt_config_parse(&dlrt_plugin.cfg, ac, av, &err) < 0) {
		/* Still register the options, so srun can report the error instead
		 * of "unrecognized option"; every later callback refuses to run. */
		slurm_error("dlrt: %s", err.msg);
		dlrt_config_parse(&dlrt_plugin.cfg, 0, NULL, &err);
	} else {
		dlrt_plugin.config_ok = true;
	}
	dlrt_opts_init(&dlrt_plugin.opts, &dlrt_plugin.cfg);

	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
	case S_CTX_REMOTE:
		return dlrt_options_register(sp);
	default:
		return 0;
	}
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		return dlrt_client_post_opt(sp);
	case S_CTX_REMOTE:
		dlrt_lifecycle_post_opt(sp);
		return dlrt_stepd_post_opt(sp);
	default:
		return 0;
	}
}

int slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return dlrt_client_local_user_init(sp);
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	int rc;

	(void)ac;
	(void)av;
	rc = dlrt_stepd_user_init(sp);
	dlrt_lifecycle_user_init(sp);
	return rc;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	struct dlrt_err err;

	(void)ac;
	(void)av;
	if (dlrt_lifecycle_batch_task_init(sp, &err) < 0) {
		/* The batch script: one line, and it does not run (as a step's task). */
		slurm_error("dlrt: %s", err.msg);
		_exit(1);
	}
	return dlrt_stepd_task_init(sp);
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() == S_CTX_REMOTE) {
		dlrt_failfast_task_exit(sp);
		dlrt_requeue_task_exit(sp);
		dlrt_stepd_task_exit(sp);
	}
	return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)sp;
	(void)ac;
	(void)av;
	if (spank_context() == S_CTX_REMOTE) {
		dlrt_lifecycle_exit();
		dlrt_stepd_exit();
	}
	else if (spank_context() == S_CTX_LOCAL)
		dlrt_client_exit();
	return 0;
}
