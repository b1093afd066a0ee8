/* fake_spank.c - the fake SPANK host of fake_spank.h. Fixed-size tables: a
 * test that outgrows one fails loudly (ESPANK_ERROR / a dropped variable shows
 * as a failed assertion), it never overflows. */
#include "fake_spank.h"

#include <dlfcn.h>
#include <slurm/slurm.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/slurm_compat.h"

#define NOPTS 64
#define NVARS 64

struct fake_spank_items fake_spank_items;
spank_context_t fake_spank_ctx = S_CTX_REMOTE;
char fake_spank_last_error[512];
int fake_spank_nregistered;

static struct spank_option registered[NOPTS];
static const char *step_env[NVARS][2];
static char task_env[NVARS][2][256];
static int ntask_env;

int fake_spank_bind(void *dl, struct fake_spank_plugin *p)
{
	p->init = (fake_spank_fn)dlsym(dl, "slurm_spank_init");
	p->post_opt = (fake_spank_fn)dlsym(dl, "slurm_spank_init_post_opt");
	p->local_user_init = (fake_spank_fn)dlsym(dl, "slurm_spank_local_user_init");
	p->user_init = (fake_spank_fn)dlsym(dl, "slurm_spank_user_init");
	p->task_init = (fake_spank_fn)dlsym(dl, "slurm_spank_task_init");
	p->fini = (fake_spank_fn)dlsym(dl, "slurm_spank_exit");
	return p->init && p->post_opt && p->local_user_init && p->user_init && p->task_init &&
			       p->fini ? 0 : -1;
}

void fake_spank_step_env(const char *name, const char *value)
{
	int i;

	for (i = 0; i < NVARS - 1 && step_env[i][0]; i++)
		if (!strcmp(step_env[i][0], name))
			break;
	if (i < NVARS - 1) {
		step_env[i][0] = name;
		step_env[i][1] = value;
	}
}

const char *fake_spank_got(const char *name)
{
	const char *v = NULL;

	for (int i = 0; i < ntask_env; i++)
		if (!strcmp(task_env[i][0], name))
			v = task_env[i][1];
	return v;
}

void fake_spank_clear_task_env(void)
{
	ntask_env = 0;
}

spank_opt_cb_f fake_spank_option(const char *name, int *val)
{
	for (int i = 0; i < fake_spank_nregistered; i++) {
		if (!strcmp(registered[i].name, name)) {
			*val = registered[i].val;
			return registered[i].cb;
		}
	}
	return NULL;
}

int fake_spank_set_option(const char *name, const char *arg)
{
	int val;
	spank_opt_cb_f cb = fake_spank_option(name, &val);

	return cb ? cb(val, arg, 1) : -1;
}

/* ---- what Slurm provides -------------------------------------------------- */

spank_context_t spank_context(void) { return fake_spank_ctx; }
int spank_remote(spank_t sp) { (void)sp; return fake_spank_ctx == S_CTX_REMOTE; }
const char *spank_strerror(spank_err_t err) { (void)err; return "fake error"; }

spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
	(void)sp;
	if (fake_spank_nregistered >= NOPTS)
		return ESPANK_ERROR;
	registered[fake_spank_nregistered++] = *opt;
	return ESPANK_SUCCESS;
}

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
	const struct fake_spank_items *it = &fake_spank_items;
	va_list ap;
	void *p;

	(void)sp;
	va_start(ap, item);
	p = va_arg(ap, void *);
	if (item == S_JOB_SUPPLEMENTARY_GIDS) {
		*(gid_t **)p = NULL;
		*va_arg(ap, int *) = 0;
	}
	va_end(ap);
	switch (item) {
	case S_JOB_SUPPLEMENTARY_GIDS: break;
	case S_JOB_UID: *(uid_t *)p = it->job_uid; break;
	case S_JOB_GID: *(gid_t *)p = it->job_gid; break;
	case S_JOB_ID: *(uint32_t *)p = it->job_id; break;
	case S_JOB_STEPID: *(uint32_t *)p = it->step_id; break;
	case S_JOB_NODEID: *(uint32_t *)p = it->node_id; break;
	case S_SLURM_RESTART_COUNT: *(uint32_t *)p = it->restart_count; break;
	case S_STEP_CPUS_PER_TASK: *(uint32_t *)p = it->cpus_per_task; break;
	case S_TASK_GLOBAL_ID: *(uint32_t *)p = it->task_global_id; break;
	case S_TASK_ID: *(int *)p = it->task_local_id; break;
	case S_JOB_ENV:
		if (!it->job_env)
			return ESPANK_NOT_AVAIL;
		*(char ***)p = it->job_env;
		break;
	default: return ESPANK_NOT_AVAIL;
	}
	return ESPANK_SUCCESS;
}

spank_err_t spank_getenv(spank_t sp, const char *var, char *buf, int len)
{
	(void)sp;
	for (int i = 0; step_env[i][0]; i++) {
		if (!strcmp(step_env[i][0], var)) {
			snprintf(buf, (size_t)len, "%s", step_env[i][1]);
			return ESPANK_SUCCESS;
		}
	}
	return ESPANK_ENV_NOEXIST;
}

spank_err_t spank_setenv(spank_t sp, const char *var, const char *val, int overwrite)
{
	(void)sp;
	(void)overwrite;
	if (ntask_env >= NVARS)
		return ESPANK_ERROR;
	snprintf(task_env[ntask_env][0], sizeof(task_env[0][0]), "%s", var);
	snprintf(task_env[ntask_env][1], sizeof(task_env[0][1]), "%s", val);
	ntask_env++;
	return ESPANK_SUCCESS;
}

spank_err_t spank_unsetenv(spank_t sp, const char *var)
{
	(void)sp;
	(void)var;
	return ESPANK_SUCCESS;
}

void slurm_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fake_spank_last_error, sizeof(fake_spank_last_error), fmt, ap);
	va_end(ap);
}
void slurm_info(const char *fmt, ...) { (void)fmt; }

/* libslurm, as srun exports it (spank/exchange.c asks slurmctld whether the
 * job holds its nodes alone): this host has no controller, so every job
 * counts as sharing its nodes. */
int slurm_load_job(job_info_msg_t **resp, dlrt_slurm_job_ref job_id, uint16_t show_flags)
{
	(void)job_id;
	(void)show_flags;
	*resp = NULL;
	return SLURM_ERROR;
}

void slurm_free_job_info_msg(job_info_msg_t *msg) { (void)msg; }

/* A heterogeneous step's components (spank/hetstep.c asks slurmctld for
 * each one's layout): no controller here, so srun leaves the check to the
 * nodes. */
slurm_step_layout_t *slurm_job_step_layout_get(slurm_step_id_t *step_id)
{
	(void)step_id;
	return NULL;
}

void slurm_job_step_layout_free(slurm_step_layout_t *layout) { (void)layout; }

/* slurmctld's configuration (ProctrackType, for the exchange's choice): no
 * controller here. */
int slurm_load_ctl_conf(time_t update_time, slurm_conf_t **conf)
{
	(void)update_time;
	*conf = NULL;
	return SLURM_ERROR;
}

#if DLRT_SLURM_AT_LEAST(26, 5)
void slurm_free_conf(slurm_conf_t *conf) { (void)conf; }
#else
void slurm_free_ctl_conf(slurm_conf_t *conf) { (void)conf; }
#endif
void slurm_verbose(const char *fmt, ...) { (void)fmt; }
void slurm_debug(const char *fmt, ...) { (void)fmt; }
void slurm_debug2(const char *fmt, ...) { (void)fmt; }
void slurm_debug3(const char *fmt, ...) { (void)fmt; }
void slurm_spank_log(const char *fmt, ...) { (void)fmt; }
