/* Loader and fake-host test of the plugin.
 *
 * A fake SPANK host (docs/contracts.md, "Slurm SPANK"; fake_spank.c
 * provides what Slurm would, exported with -rdynamic): this program dlopens the real dlrt.so and drives the slurmstepd sequence
 * init -> option callbacks -> init_post_opt -> user_init -> task_init for every
 * task of a step, checking what the plugin sets. The real header spank.h is
 * included, so every signature is Slurm's.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <slurm/slurm_version.h>
#include <slurm/spank.h>

#include <sys/wait.h>
#include <unistd.h>

#include "fake_spank.h"
#include "runtime/opts.h"
#include "tap.h"


/* srun --container (spank/container.c): in the task's process, task_init
 * leaves the task's environment (S_JOB_ENV) as the process environment, for
 * Slurm 22.05's RunTimeRun; slurmstepd's own variables are gone. */
static void container_env(struct fake_spank_plugin *plugin, struct spank_handle *handle)
{
	static char *job_env[] = { "SLURM_CONTAINER=/bundle", "SLURM_PROCID=3", "HOROVOD_RANK=3",
				   "WITH_EQUALS=a=b", NULL };
	char buf[512] = "";
	size_t len = 0;
	ssize_t n;
	int fds[2];
	pid_t pid;

	if (pipe(fds) < 0) {
		TAP_OK(0, "pipe");
		return;
	}
	pid = fork();
	if (pid == 0) {
		int rc;

		close(fds[0]);
		setenv("ONLY_IN_SLURMSTEPD", "1", 1);
		fake_spank_step_env("SLURM_CONTAINER", "/bundle");
		fake_spank_items.job_env = job_env;
		fake_spank_clear_task_env();
		rc = plugin->task_init(handle, 0, NULL);
		dprintf(fds[1], "rc=%d procid=%s rank=%s eq=%s stepd=%s", rc,
			getenv("SLURM_PROCID") ? getenv("SLURM_PROCID") : "-",
			getenv("HOROVOD_RANK") ? getenv("HOROVOD_RANK") : "-",
			getenv("WITH_EQUALS") ? getenv("WITH_EQUALS") : "-",
			getenv("ONLY_IN_SLURMSTEPD") ? getenv("ONLY_IN_SLURMSTEPD") : "-");
		_exit(0);
	}
	close(fds[1]);
	while (len < sizeof(buf) - 1 && (n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(fds[0]);
	waitpid(pid, NULL, 0);
	TAP_IS_STR(buf, "rc=0 procid=3 rank=3 eq=a=b stepd=-",
		   "srun --container: the task's environment is its process environment");
}

/* The checkpoint base folder the plugin is given; removed at the end. */
static char ck[] = "/tmp/dlrt-test-ckpt.XXXXXX";

static int done(void)
{
	char cmd[64];

	if (strcmp(ck + strlen(ck) - 6, "XXXXXX")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ck);
		if (system(cmd) != 0)
			fprintf(stderr, "# could not remove %s\n", ck);
	}
	return tap_done();
}

int main(void)
{
	const char *path = getenv("DLRT_PLUGIN");
	static const char *const internal[] = { "dlrt_opts_set", "dlrt_plugin", "dlrt_layout_init",
						"dlrt_runtimes", "dlrt_evloop_run", "option_cb" };
	struct spank_handle handle;
	struct fake_spank_plugin plugin;
	bool bound;
	spank_opt_cb_f cb;
	int val = -1;
	void *h;

	/* slurmstepd of node 1 (n2) of job 42, step 7. */
	/* The job's user reads the --dl-topology file: nobody when run as root. */
	fake_spank_items = (struct fake_spank_items){ .job_id = 42, .step_id = 7, .node_id = 1,
		.job_uid = geteuid() == 0 ? 65534 : getuid(),
		.job_gid = geteuid() == 0 ? 65534 : getgid() };
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
	{
		/* Where Slurm has it (25.05 on), a failing init fails the job, never
		 * drains the node (spank/dispatch.c); an older Slurm never looks. */
		const int *mode = dlsym(h, "slurm_spank_init_failure_mode");

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
		TAP_OK(mode && *mode == ESPANK_JOB_FAILURE, "slurm_spank_init_failure_mode "
		       "exported as ESPANK_JOB_FAILURE");
#else
		TAP_OK(mode == NULL, "no slurm_spank_init_failure_mode before Slurm 25.05");
#endif
	}
	for (size_t i = 0; i < sizeof(internal) / sizeof(*internal); i++)
		TAP_OK(dlsym(h, internal[i]) == NULL, "internal symbol %s is not exported", internal[i]);

	bound = fake_spank_bind(h, &plugin) == 0;
	TAP_OK(bound, "SPANK entry points exported");
	if (!bound)
		return tap_done();

	/* slurmstepd of node 1 (n2) of a step of 6 tasks laid out 3,1,2. */
	TAP_IS_INT(plugin.init(&handle, 0, NULL), 0, "init in the remote context");
	TAP_IS_INT(fake_spank_nregistered, dlrt_opt_count(), "every dlrt option registered");
	cb = fake_spank_option("dl-runtime", &val);
	TAP_OK(cb != NULL, "--dl-runtime registered");
	if (!cb)
		return tap_done();
	/* Slurm may call twice with the same value (env, then launch message).
	 * horovod (MPI mode) needs no address exchange, which this fake host cannot
	 * give; the exchange is tested on the real cluster. */
	TAP_IS_INT(cb(val, "horovod", 1), 0, "option callback horovod");
	TAP_IS_INT(cb(val, "horovod", 1), 0, "option callback again, same value");
	cb = fake_spank_option("dl-horovod", &val);
	TAP_OK(cb != NULL, "--dl-horovod registered");
	if (!cb)
		return tap_done();
	TAP_IS_INT(cb(val, "mpi", 1), 0, "option callback --dl-horovod=mpi");
	/* No --dl-signal watcher: this host has no slurmctld to ask. */
	cb = fake_spank_option("dl-signal", &val);
	TAP_OK(cb && cb(val, "none", 1) == 0, "option callback --dl-signal=none");
	{
		cb = fake_spank_option("dl-checkpoint-dir", &val);
		TAP_OK(mkdtemp(ck) && cb && cb(val, ck, 1) == 0, "--dl-checkpoint-dir in /tmp");
	}
	fake_spank_step_env("SLURM_STEP_NODELIST", "n[1-3]");
	fake_spank_step_env("SLURM_STEP_TASKS_PER_NODE", "3,1,2");
	fake_spank_step_env("SLURM_DISTRIBUTION", "block");
	/* GPU binding through the same callbacks: the step has 4 GPUs, the node's
	 * topology is a fixture, map:3+1 gives the task GPUs 1 and 3. */
	{
		static char topo[1024];
		spank_opt_cb_f gcb;
		int gval = -1;

		snprintf(topo, sizeof(topo), "%s/tests/fixtures/topo/2s2g.xml",
			 getenv("DLRT_SRCDIR") ? getenv("DLRT_SRCDIR") : ".");
		gcb = fake_spank_option("dl-topology", &gval);
		TAP_OK(gcb && gcb(gval, topo, 1) == 0, "--dl-topology callback");
		gcb = fake_spank_option("dl-gpu-bind", &gval);
		TAP_OK(gcb && gcb(gval, "map:3+1", 1) == 0, "--dl-gpu-bind=map:3+1 callback");
		fake_spank_step_env("SLURM_STEP_GPUS", "0-3");
		fake_spank_step_env("CUDA_VISIBLE_DEVICES", "0,1,2,3");
	}
	TAP_IS_INT(plugin.post_opt(&handle, 0, NULL), 0, "init_post_opt");
	TAP_IS_INT(plugin.user_init(&handle, 0, NULL), 0, "user_init builds the role table");
	fake_spank_items.task_global_id = 3;
	fake_spank_items.task_local_id = 0;
	TAP_IS_INT(plugin.task_init(&handle, 0, NULL), 0, "task_init of task 3");
	TAP_IS_STR(fake_spank_got("DLRT_ROLE"), "worker", "task 3 (only task of n2) is a worker");
	TAP_IS_STR(fake_spank_got("HOROVOD_RANK"), "3", "HOROVOD_RANK");
	TAP_IS_STR(fake_spank_got("HOROVOD_SIZE"), "6", "HOROVOD_SIZE");
	TAP_IS_STR(fake_spank_got("HOROVOD_LOCAL_RANK"), "0", "HOROVOD_LOCAL_RANK");
	TAP_IS_STR(fake_spank_got("HOROVOD_CROSS_RANK"), "1", "HOROVOD_CROSS_RANK (second node with a local rank 0)");
	TAP_IS_STR(fake_spank_got("HOROVOD_CROSS_SIZE"), "3", "HOROVOD_CROSS_SIZE");
	TAP_IS_STR(fake_spank_got("DLRT_NODE_NAME"), "n2", "DLRT_NODE_NAME");
	TAP_IS_STR(fake_spank_got("DLRT_LOCAL_SIZE"), "1", "DLRT_LOCAL_SIZE");
	TAP_IS_STR(fake_spank_got("CUDA_VISIBLE_DEVICES"), "1,3", "CUDA_VISIBLE_DEVICES from the map");
	TAP_IS_STR(fake_spank_got("CUDA_DEVICE_ORDER"), "PCI_BUS_ID", "CUDA_DEVICE_ORDER");
	TAP_IS_STR(fake_spank_got("NCCL_IB_HCA"), "=mlx5_0:2", "NCCL_IB_HCA: the fixture's HCA, active port 2");
	TAP_OK(fake_spank_last_error[0] == '\0', "no error logged (%s)", fake_spank_last_error);
	TAP_OK(getenv("PATH") != NULL, "a task without a container keeps its process environment");
	container_env(&plugin, &handle);
	plugin.fini(&handle, 0, NULL);
	dlclose(h);
	return done();
}
