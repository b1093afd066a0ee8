/* options.c - registers dlrt's options with Slurm and applies their values.
 *
 * Options are registered with spank_option_register() from slurm_spank_init in
 * srun, sbatch/salloc and slurmstepd alike: the static `spank_options` table is
 * not loaded in the allocator context, and then sbatch would not know
 * --dl-runtime (docs/contracts.md, "Slurm SPANK"). The names and usages come
 * from common/opts.c, the one place options are described.
 */
#include <slurm/spank.h>
#include <stdio.h>
#include <string.h>

#include "plugin.h"

static int option_cb(int val, const char *optarg, int remote)
{
	struct dlrt_err err;

	(void)remote;
	/* A bad value is reported from init_post_opt, not here: a failing option
	 * callback makes Slurm add its own "Invalid --dl-... argument" line, and
	 * the user should see exactly one line that names the valid choices. */
	if (dlrt_opts_set(&dlrt_plugin.opts, &dlrt_plugin.cfg, (enum dlrt_opt_id)val, optarg,
			  &err) < 0 && !dlrt_plugin.opt_failed) {
		dlrt_plugin.opt_failed = true;
		dlrt_plugin.opt_err = err;
	}
	return 0;
}

int dlrt_options_register(spank_t sp)
{
	static struct spank_option opts[DLRT_OPT_COUNT];
	static char runtime_usage[256];
	char names[160];

	dlrt_runtime_list(names, sizeof(names), dlrt_plugin.cfg.allowed);
	/* One line in --help: Slurm wraps usages longer than 50 columns. A
	 * list too long for it gives way to the generic usage (man dlrt, and
	 * the error for an unknown name, list them all). */
	snprintf(runtime_usage, sizeof(runtime_usage), "[dlrt] one of %s", names);
	if (strlen(runtime_usage) > 50)
		snprintf(runtime_usage, sizeof(runtime_usage), "%s",
			 dlrt_opt_descs[DLRT_OPT_RUNTIME].usage);
	for (int i = 0; i < DLRT_OPT_COUNT; i++) {
		const struct dlrt_opt_desc *d = &dlrt_opt_descs[i];
		spank_err_t rc;

		opts[i] = (struct spank_option){
			.name = (char *)d->name,
			.arginfo = (char *)d->arginfo,
			.usage = (char *)(i == DLRT_OPT_RUNTIME ? runtime_usage : d->usage),
			.has_arg = d->arginfo ? 1 : 0,
			.val = i,
			.cb = option_cb,
		};
		rc = spank_option_register(sp, &opts[i]);
		if (rc != ESPANK_SUCCESS) {
			slurm_error("dlrt: cannot register option --%s: %s", d->name,
				    spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}
