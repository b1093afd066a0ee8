/* Fake-host test of the plugin's GPU glue (spank/gpu.c), in the spirit of
 * test_plugin_load.c: this program provides the spank_* functions, dlopens
 * the real dlrt.so and drives slurmstepd's sequence for one node with 4
 * local tasks, 4 GPUs and the 2s2g.xml fixture (GPUs 0-1 local to CPUs 0-7,
 * 2-3 to CPUs 8-15). What the cluster cannot show (it runs task/none):
 * slurmstepd writes task/affinity's masks into each task's
 * SLURM_CPU_BIND_TYPE/_LIST after user_init, and the plan must follow them.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <slurm/spank.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

struct spank_handle {
	int dummy;
};

static struct spank_option registered[64];
static int nregistered;
static const char *env[32][2];
static char task_env[64][2][256];
static int ntask_env;
static int cur_local;
static char last_error[512];

spank_context_t spank_context(void) { return S_CTX_REMOTE; }
int spank_remote(spank_t sp) { (void)sp; return 1; }
const char *spank_strerror(spank_err_t err) { (void)err; return "fake error"; }
spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
	(void)sp;
	if (nregistered < 64)
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
	case S_JOB_ID: *(uint32_t *)p = 7; break;
	case S_JOB_STEPID: *(uint32_t *)p = 0; break;
	case S_JOB_NODEID: *(uint32_t *)p = 0; break;
	case S_SLURM_RESTART_COUNT: *(uint32_t *)p = 0; break;
	case S_TASK_GLOBAL_ID: *(uint32_t *)p = (uint32_t)cur_local; break;
	case S_TASK_ID: *(int *)p = cur_local; break;
	case S_STEP_CPUS_PER_TASK: *(uint32_t *)p = 4; break;
	default: return ESPANK_NOT_AVAIL;
	}
	return ESPANK_SUCCESS;
}

static void set_env(const char *name, const char *value)
{
	int i;

	for (i = 0; env[i][0]; i++)
		if (!strcmp(env[i][0], name))
			break;
	env[i][0] = name;
	env[i][1] = value;
}

spank_err_t spank_getenv(spank_t sp, const char *var, char *buf, int len)
{
	(void)sp;
	for (int i = 0; env[i][0]; i++) {
		if (!strcmp(env[i][0], var)) {
			snprintf(buf, (size_t)len, "%s", env[i][1]);
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
	const char *v = NULL;

	for (int i = 0; i < ntask_env; i++)
		if (!strcmp(task_env[i][0], name))
			v = task_env[i][1];
	return v ? v : "(unset)";
}

static int set_opt(const char *name, const char *arg)
{
	for (int i = 0; i < nregistered; i++)
		if (!strcmp(registered[i].name, name))
			return registered[i].cb(registered[i].val, arg, 1);
	return -1;
}

typedef int (*spank_fn)(spank_t, int, char **);

/* task_init of local task `local` in its own process, as slurmstepd forks
 * it: the plan replaced in one task must not leak into the next. */
static const char *task_cvd(spank_fn task_init, struct spank_handle *h, int local)
{
	static char out[256];
	int fds[2];
	pid_t pid;
	ssize_t n;

	if (pipe(fds) < 0)
		return "(pipe failed)";
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		cur_local = local;
		ntask_env = 0;
		if (task_init(h, 0, NULL) == 0)
			dprintf(fds[1], "%s", got("CUDA_VISIBLE_DEVICES"));
		else
			dprintf(fds[1], "(task_init failed: %s)", last_error);
		_exit(0);
	}
	close(fds[1]);
	n = read(fds[0], out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	waitpid(pid, NULL, 0);
	return out;
}

int main(void)
{
	const char *path = getenv("DLRT_PLUGIN"), *src = getenv("DLRT_SRCDIR");
	static char topo[1024];
	struct spank_handle h;
	spank_fn init, post_opt, user_init, task_init, fini;
	void *dl;

	snprintf(topo, sizeof(topo), "%s/tests/fixtures/topo/2s2g.xml", src ? src : ".");
	dl = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
	TAP_OK(dl != NULL, "dlopen %s", path ? path : "(DLRT_PLUGIN unset)");
	if (!dl)
		return tap_done();
	init = (spank_fn)dlsym(dl, "slurm_spank_init");
	post_opt = (spank_fn)dlsym(dl, "slurm_spank_init_post_opt");
	user_init = (spank_fn)dlsym(dl, "slurm_spank_user_init");
	task_init = (spank_fn)dlsym(dl, "slurm_spank_task_init");
	fini = (spank_fn)dlsym(dl, "slurm_spank_exit");
	if (!init || !post_opt || !user_init || !task_init || !fini)
		return tap_done();
	TAP_IS_INT(init(&h, 0, NULL), 0, "init");
	/* horovod (MPI mode) needs no PMIx exchange, which this host cannot give. */
	TAP_IS_INT(set_opt("dl-runtime", "horovod"), 0, "--dl-runtime=horovod");
	TAP_IS_INT(set_opt("dl-horovod", "mpi"), 0, "--dl-horovod=mpi (gloo would start a driver)");
	TAP_IS_INT(set_opt("dl-topology", topo), 0, "--dl-topology=2s2g.xml");
	set_env("SLURM_STEP_NODELIST", "n1");
	set_env("SLURM_STEP_TASKS_PER_NODE", "4");
	set_env("SLURM_DISTRIBUTION", "block");
	set_env("SLURM_STEP_GPUS", "0-3");
	set_env("CUDA_VISIBLE_DEVICES", "0,1,2,3");
	TAP_IS_INT(post_opt(&h, 0, NULL), 0, "init_post_opt");
	TAP_IS_INT(user_init(&h, 0, NULL), 0, "user_init plans the node");
	/* No core list from this host: the node's CPUs laid out as task/affinity
	 * would by default (4 per task, cyclic over the sockets: tasks 0,2 on
	 * package 0, 1,3 on package 1), so the plan is 0,2,1,3. */
	TAP_IS_STR(task_cvd(task_init, &h, 0), "0", "default layout: task 0 -> GPU 0");
	TAP_IS_STR(task_cvd(task_init, &h, 1), "2", "default layout: task 1 (package 1) -> GPU 2");
	TAP_IS_STR(task_cvd(task_init, &h, 2), "1", "default layout: task 2 -> GPU 1");
	/* task/affinity bound tasks 0-1 to CPUs 8-15 and 2-3 to 0-7 after user_init. */
	set_env("SLURM_CPU_BIND_TYPE", "mask_cpu:");
	set_env("SLURM_CPU_BIND_LIST", "0xff00,0xff00,0xff,0xff");
	TAP_IS_STR(task_cvd(task_init, &h, 0), "2", "task 0 bound to CPUs 8-15 -> GPU 2");
	TAP_IS_STR(task_cvd(task_init, &h, 1), "3", "task 1 -> GPU 3");
	TAP_IS_STR(task_cvd(task_init, &h, 2), "0", "task 2 bound to CPUs 0-7 -> GPU 0");
	TAP_IS_STR(task_cvd(task_init, &h, 3), "1", "task 3 -> GPU 1");
	/* Slurm's own spelling (no 0x); a list that cannot be used keeps the plan. */
	set_env("SLURM_CPU_BIND_LIST", "ff,ff,ff00,ff00");
	TAP_IS_STR(task_cvd(task_init, &h, 0), "0", "masks without 0x: task 0 -> GPU 0");
	set_env("SLURM_CPU_BIND_LIST", "zz");
	TAP_IS_STR(task_cvd(task_init, &h, 1), "2", "an unusable list keeps the first plan");
	TAP_OK(last_error[0] == '\0', "no error logged (%s)", last_error);
	fini(&h, 0, NULL);
	dlclose(dl);
	return tap_done();
}
