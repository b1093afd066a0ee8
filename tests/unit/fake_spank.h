/* fake_spank.h - a fake SPANK host for driving the real dlrt.so in unit tests.
 *
 * The test program defines every spank_* and slurm_* function Slurm would
 * provide (exported with -rdynamic, so the dlopen'ed plugin binds to them),
 * using the real <slurm/spank.h> so every signature is Slurm's. Tests set the
 * step's environment and items, call the plugin's entry points in
 * slurmstepd's order, and read back what the plugin set.
 */
#ifndef DLRT_FAKE_SPANK_H
#define DLRT_FAKE_SPANK_H

#include <slurm/spank.h>
#include <stdint.h>
#include <sys/types.h>

struct spank_handle {
	int dummy;
};

typedef int (*fake_spank_fn)(spank_t, int, char **);

/* The items spank_get_item answers (anything else: ESPANK_NOT_AVAIL). */
struct fake_spank_items {
	uint32_t job_id, step_id, node_id, restart_count, cpus_per_task;
	uint32_t task_global_id; /* S_TASK_GLOBAL_ID */
	int task_local_id;       /* S_TASK_ID */
	uid_t job_uid;           /* S_JOB_UID */
	gid_t job_gid;           /* S_JOB_GID (S_JOB_SUPPLEMENTARY_GIDS: none) */
	char **job_env;          /* S_JOB_ENV; NULL: ESPANK_NOT_AVAIL */
};

extern struct fake_spank_items fake_spank_items;
extern spank_context_t fake_spank_ctx;   /* default S_CTX_REMOTE */
extern char fake_spank_last_error[512];  /* the last slurm_error() line */
extern int fake_spank_nregistered;       /* options the plugin registered */

/* The plugin's entry points, from its handle; -1 if one is missing. */
struct fake_spank_plugin {
	fake_spank_fn init, post_opt, local_user_init, user_init, task_init, fini;
};
int fake_spank_bind(void *dl, struct fake_spank_plugin *p);

/* Step-wide variables (what spank_getenv sees); a repeated name replaces. */
void fake_spank_step_env(const char *name, const char *value);

/* What the plugin set with spank_setenv (the last value), or NULL. */
const char *fake_spank_got(const char *name);
/* Forgets what the plugin set (before the next task). */
void fake_spank_clear_task_env(void);

/* The callback of a registered option (and its val), or NULL. */
spank_opt_cb_f fake_spank_option(const char *name, int *val);
/* Calls option `name`'s callback as Slurm does; -1 if not registered. */
int fake_spank_set_option(const char *name, const char *arg);

#endif
