/* Loader and fake-host test of the plugin.
 *
 * A test host in the spirit of slurm-spank-hwloc-notes.md §4: this program
 * defines the spank_* and slurm_* functions Slurm would provide (exported with
 * -rdynamic), dlopens the real dlrt.so and drives the slurmstepd sequence
 * init -> option callbacks -> init_post_opt -> user_init -> task_init for every
 * task of a step, checking what the plugin sets. The real header spank.h is
 * included, so every signature is Slurm's.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <slurm/slurm_version.h>
#include <slurm/spank.h>
#include <stdarg.h>

#include "opts.h"
#include "tap.h"

struct spank_handle {
	int dummy;
};

/* ---- the fake host ----------------------------------------------------- */
static struct spank_option registered[16];
static int nregistered;
static char *step_env[16][2];   /* step-wide variables (S_JOB_ENV) */
static char task_env[64][2][256];
static int ntask_env;
static uint32_t cur_global, cur_local;
static int ctx = S_CTX_REMOTE;
static char last_error[512];

spank_context_t spank_context(void) { return (spank_context_t)ctx; }
int spank_remote(spank_t sp) { (void)sp; return ctx == S_CTX_REMOTE; }
const char *spank_strerror(spank_err_t err) { (void)err; return "fake"; }

spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
	(void)sp;
	registered[nregistered++] = *opt;
	return ESPANK_SUCCESS;
}

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
	va_list ap;
	void *p;

	(void)sp;
	va_start(ap, item);
	p = va_arg(ap, void *);
	va_end(ap);
	switch (item) {
	case S_JOB_ID: *(uint32_t *)p = 42; break;
	case S_JOB_STEPID: *(uint32_t *)p = 7; break;
	case S_JOB_NODEID: *(uint32_t *)p = 1; break;
	case S_SLURM_RESTART_COUNT: *(uint32_t *)p = 0; break;
	case S_TASK_GLOBAL_ID: *(uint32_t *)p = cur_global; break;
	case S_TASK_ID: *(int *)p = (int)cur_local; break;
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
	snprintf(task_env[ntask_env][0], 256, "%s", var);
	snprintf(task_env[ntask_env][1], 256, "%s", val);
	ntask_env++;
	return ESPANK_SUCCESS;
}

spank_err_t spank_unsetenv(spank_t sp, const char *var) { (void)sp; (void)var; return ESPANK_SUCCESS; }

void slurm_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
}
void slurm_info(const char *fmt, ...) { (void)fmt; }
void slurm_verbose(const char *fmt, ...) { (void)fmt; }
void slurm_debug(const char *fmt, ...) { (void)fmt; }
void slurm_debug2(const char *fmt, ...) { (void)fmt; }
void slurm_debug3(const char *fmt, ...) { (void)fmt; }
void slurm_spank_log(const char *fmt, ...) { (void)fmt; }

static const char *got(const char *name)
{
	for (int i = 0; i < ntask_env; i++)
		if (!strcmp(task_env[i][0], name))
			return task_env[i][1];
	return NULL;
}

static spank_opt_cb_f find_cb(const char *name, int *val)
{
	for (int i = 0; i < nregistered; i++) {
		if (!strcmp(registered[i].name, name)) {
			*val = registered[i].val;
			return registered[i].cb;
		}
	}
	return NULL;
}

typedef int (*spank_fn)(spank_t, int, char **);

int main(void)
{
	const char *path = getenv("DLRT_PLUGIN");
	static const char *const internal[] = { "dlrt_opts_set", "dlrt_plugin", "dlrt_layout_init",
						"dlrt_runtimes", "dlrt_evloop_run", "option_cb" };
	struct spank_handle handle;
	spank_fn init, post_opt, user_init, task_init, fini;
	spank_opt_cb_f cb;
	int val = -1;
	void *h;

	if (!path) {
		printf("not ok 1 - DLRT_PLUGIN is not set (run through make unit)\n1..1\n");
		return 1;
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	TAP_OK(h != NULL, "dlopen %s: %s", path, h ? "ok" : dlerror());
	if (!h)
		return tap_done();
	TAP_IS_STR((const char *)dlsym(h, "plugin_name"), "dlrt", "plugin_name");
	TAP_IS_STR((const char *)dlsym(h, "plugin_type"), "spank", "plugin_type");
	{
		const unsigned int *v = dlsym(h, "plugin_version");

		TAP_OK(v && *v == SLURM_VERSION_NUMBER, "plugin_version 0x%x is the Slurm it was "
		       "built against (0x%x)", v ? *v : 0, SLURM_VERSION_NUMBER);
	}
	for (size_t i = 0; i < sizeof(internal) / sizeof(*internal); i++)
		TAP_OK(dlsym(h, internal[i]) == NULL, "internal symbol %s is not exported", internal[i]);

	init = (spank_fn)dlsym(h, "slurm_spank_init");
	post_opt = (spank_fn)dlsym(h, "slurm_spank_init_post_opt");
	user_init = (spank_fn)dlsym(h, "slurm_spank_user_init");
	task_init = (spank_fn)dlsym(h, "slurm_spank_task_init");
	fini = (spank_fn)dlsym(h, "slurm_spank_exit");
	TAP_OK(init && post_opt && user_init && task_init && fini, "SPANK entry points exported");
	if (!(init && post_opt && user_init && task_init && fini))
		return tap_done();

	/* slurmstepd of node 1 (n2) of a step of 6 tasks laid out 3,1,2. */
	TAP_IS_INT(init(&handle, 0, NULL), 0, "init in the remote context");
	TAP_IS_INT(nregistered, (int)DLRT_OPT_COUNT, "every dlrt option registered");
	cb = find_cb("dl-runtime", &val);
	TAP_OK(cb != NULL, "--dl-runtime registered");
	if (!cb)
		return tap_done();
	/* Slurm may call twice with the same value (env, then launch message).
	 * horovod (MPI mode) needs no PMIx exchange, which this fake host cannot
	 * give; the exchange is tested on the real cluster. */
	TAP_IS_INT(cb(val, "horovod", 1), 0, "option callback horovod");
	TAP_IS_INT(cb(val, "horovod", 1), 0, "option callback again, same value");
	cb = find_cb("dl-horovod", &val);
	TAP_OK(cb != NULL, "--dl-horovod registered");
	if (!cb)
		return tap_done();
	TAP_IS_INT(cb(val, "mpi", 1), 0, "option callback --dl-horovod=mpi");
	step_env[0][0] = "SLURM_STEP_NODELIST"; step_env[0][1] = "n[1-3]";
	step_env[1][0] = "SLURM_STEP_TASKS_PER_NODE"; step_env[1][1] = "3,1,2";
	step_env[2][0] = "SLURM_DISTRIBUTION"; step_env[2][1] = "block";
	/* GPU binding through the same callbacks: the step has 4 GPUs, the node's
	 * topology is a fixture, map:3+1 gives the task GPUs 1 and 3. */
	{
		static char topo[1024];
		spank_opt_cb_f gcb;
		int gval = -1;

		snprintf(topo, sizeof(topo), "%s/tests/fixtures/topo/2s2g.xml",
			 getenv("DLRT_SRCDIR") ? getenv("DLRT_SRCDIR") : ".");
		gcb = find_cb("dl-topology", &gval);
		TAP_OK(gcb && gcb(gval, topo, 1) == 0, "--dl-topology callback");
		gcb = find_cb("dl-gpu-bind", &gval);
		TAP_OK(gcb && gcb(gval, "map:3+1", 1) == 0, "--dl-gpu-bind=map:3+1 callback");
		step_env[3][0] = "SLURM_STEP_GPUS"; step_env[3][1] = "0-3";
		step_env[4][0] = "CUDA_VISIBLE_DEVICES"; step_env[4][1] = "0,1,2,3";
	}
	TAP_IS_INT(post_opt(&handle, 0, NULL), 0, "init_post_opt");
	TAP_IS_INT(user_init(&handle, 0, NULL), 0, "user_init builds the role table");
	cur_global = 3;
	cur_local = 0;
	TAP_IS_INT(task_init(&handle, 0, NULL), 0, "task_init of task 3");
	TAP_IS_STR(got("DLRT_ROLE"), "worker", "task 3 (only task of n2) is a worker");
	TAP_IS_STR(got("HOROVOD_RANK"), "3", "HOROVOD_RANK");
	TAP_IS_STR(got("HOROVOD_SIZE"), "6", "HOROVOD_SIZE");
	TAP_IS_STR(got("HOROVOD_LOCAL_RANK"), "0", "HOROVOD_LOCAL_RANK");
	TAP_IS_STR(got("HOROVOD_CROSS_RANK"), "1", "HOROVOD_CROSS_RANK (second node with a local rank 0)");
	TAP_IS_STR(got("HOROVOD_CROSS_SIZE"), "3", "HOROVOD_CROSS_SIZE");
	TAP_IS_STR(got("DLRT_NODE_NAME"), "n2", "DLRT_NODE_NAME");
	TAP_IS_STR(got("DLRT_LOCAL_SIZE"), "1", "DLRT_LOCAL_SIZE");
	TAP_IS_STR(got("CUDA_VISIBLE_DEVICES"), "1,3", "CUDA_VISIBLE_DEVICES from the map");
	TAP_IS_STR(got("CUDA_DEVICE_ORDER"), "PCI_BUS_ID", "CUDA_DEVICE_ORDER");
	TAP_IS_STR(got("NCCL_IB_HCA"), "=mlx5_0:2", "NCCL_IB_HCA: the fixture's HCA, active port 2");
	TAP_OK(last_error[0] == '\0', "no error logged (%s)", last_error);
	fini(&handle, 0, NULL);
	dlclose(h);
	return tap_done();
}
