/* options.c - registers dlrt's options with Slurm and applies their values.
 *
 * Options are registered with spank_option_register() from slurm_spank_init in
 * srun, sbatch/salloc and slurmstepd alike: the static `spank_options` table is
 * not loaded in the allocator context, and then sbatch would not know
 * --dl-runtime (docs/contracts.md, "Slurm SPANK"). The names and usages come
 * from runtime/opts.c's flat list: the generic options, then every runtime's
 * own (struct dlrt_runtime.options), whichever runtime the job picks, since
 * option values arrive before --dl-runtime is known.
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
	if (dlrt_opts_set(&dlrt_plugin.opts, &dlrt_plugin.cfg, val, optarg, &err) < 0 && !dlrt_plugin.opt_failed) {
		dlrt_plugin.opt_failed = true;
		dlrt_plugin.opt_err = err;
	}
	return 0;
}

int dlrt_options_register(spank_t sp)
{
	static struct spank_option opts[DLRT_OPT_GENERIC_COUNT + 32 * DLRT_RUNTIME_MAX];
	static char runtime_usage[256];
	struct dlrt_opt_desc d;
	char names[160];

	dlrt_runtime_list(names, sizeof(names), dlrt_plugin.cfg.allowed);
	/* One line in --help: Slurm wraps usages longer than 50 columns. A
	 * list that does not fit ends with "..." after the last name that does
	 * (dlrt(7) and the error for a bad name list them all). */
	snprintf(runtime_usage, sizeof(runtime_usage), "[dlrt] one of %s", names);
	if (strlen(runtime_usage) > 50) {
		char *comma;

		while ((comma = strrchr(runtime_usage, ',')) && (comma - runtime_usage) + 5 > 50)
			*comma = '\0';
		if (comma)
			strcpy(comma, ", ...");
	}
	for (int i = 0; dlrt_opt_describe(i, &d) == 0; i++) {
		spank_err_t rc;

		if ((size_t)i >= sizeof(opts) / sizeof(*opts)) {
			slurm_error("dlrt: more than %zu options; raise the table in options.c",
				    sizeof(opts) / sizeof(*opts));
			return -1;
		}
		opts[i] = (struct spank_option){
			.name = (char *)d.name,
			.arginfo = (char *)d.arginfo,
			.usage = (char *)(i == DLRT_OPT_RUNTIME ? runtime_usage : d.usage),
			.has_arg = d.arginfo ? 1 : 0,
			.val = i,
			.cb = option_cb,
		};
		rc = spank_option_register(sp, &opts[i]);
		if (rc != ESPANK_SUCCESS) {
			slurm_error("dlrt: cannot register option --%s: %s", d.name,
				    spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}
