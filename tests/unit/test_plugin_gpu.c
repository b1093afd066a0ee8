/* Fake-host test of the plugin's GPU glue (spank/gpu.c), in the spirit of
 * test_plugin_load.c: this program provides the spank_* functions, dlopens
 * the real dlrt.so and drives slurmstepd's sequence for one node with 4
 * local tasks, 4 GPUs and the 2s2g.xml fixture (GPUs 0-1 local to CPUs 0-7,
 * 2-3 to CPUs 8-15). What the cluster cannot show (it runs task/none):
 * slurmstepd writes task/affinity's masks into each task's
 * SLURM_CPU_BIND_TYPE/_LIST after user_init, and the plan must follow them.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <slurm/spank.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_spank.h"
#include "tap.h"

/* task_init of local task `local` in its own process, as slurmstepd forks
 * it: the plan replaced in one task must not leak into the next. */
static const char *task_cvd(fake_spank_fn task_init, struct spank_handle *h, int local)
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
		const char *cvd;

		fake_spank_items.task_local_id = local;
		fake_spank_items.task_global_id = (uint32_t)local;
		fake_spank_clear_task_env();
		if (task_init(h, 0, NULL) == 0)
			dprintf(fds[1], "%s", (cvd = fake_spank_got("CUDA_VISIBLE_DEVICES")) ? cvd : "(unset)");
		else
			dprintf(fds[1], "(task_init failed: %s)", fake_spank_last_error);
		_exit(0);
	}
	close(fds[1]);
	n = read(fds[0], out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	waitpid(pid, NULL, 0);
	return out;
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
	const char *path = getenv("DLRT_PLUGIN"), *src = getenv("DLRT_SRCDIR");
	static char topo[1024];
	struct spank_handle h;
	struct fake_spank_plugin plugin;
	bool bound;
	void *dl;

	/* The --dl-topology file is read as the job's user: nobody when the
	 * test runs as root (it must still be able to read the fixture). */
	fake_spank_items = (struct fake_spank_items){ .job_id = 7, .cpus_per_task = 4,
		.job_uid = geteuid() == 0 ? 65534 : getuid(),
		.job_gid = geteuid() == 0 ? 65534 : getgid() };
	snprintf(topo, sizeof(topo), "%s/tests/fixtures/topo/2s2g.xml", src ? src : ".");
	dl = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
	TAP_OK(dl != NULL, "dlopen %s", path ? path : "(DLRT_PLUGIN unset)");
	if (!dl)
		return tap_done();
	bound = fake_spank_bind(dl, &plugin) == 0;
	if (!bound)
		return tap_done();
	TAP_IS_INT(plugin.init(&h, 0, NULL), 0, "init");
	/* horovod (MPI mode) needs no address exchange, which this host cannot give. */
	TAP_IS_INT(fake_spank_set_option("dl-runtime", "horovod"), 0, "--dl-runtime=horovod");
	TAP_IS_INT(fake_spank_set_option("dl-horovod", "mpi"), 0, "--dl-horovod=mpi (gloo would start a driver)");
	TAP_IS_INT(fake_spank_set_option("dl-topology", topo), 0, "--dl-topology=2s2g.xml");
	/* No watcher (this host has no slurmctld); the checkpoint folder in /tmp. */
	TAP_IS_INT(fake_spank_set_option("dl-signal", "none"), 0, "--dl-signal=none");
	{
		TAP_OK(mkdtemp(ck) != NULL, "a checkpoint base folder");
		TAP_IS_INT(fake_spank_set_option("dl-checkpoint-dir", ck), 0, "--dl-checkpoint-dir");
	}
	fake_spank_step_env("SLURM_STEP_NODELIST", "n1");
	fake_spank_step_env("SLURM_STEP_TASKS_PER_NODE", "4");
	fake_spank_step_env("SLURM_DISTRIBUTION", "block");
	fake_spank_step_env("SLURM_STEP_GPUS", "0-3");
	fake_spank_step_env("CUDA_VISIBLE_DEVICES", "0,1,2,3");
	TAP_IS_INT(plugin.post_opt(&h, 0, NULL), 0, "init_post_opt");
	TAP_IS_INT(plugin.user_init(&h, 0, NULL), 0, "user_init plans the node");
	/* No core list from this host: the node's CPUs laid out as task/affinity
	 * would by default (4 per task, cyclic over the sockets: tasks 0,2 on
	 * package 0, 1,3 on package 1), so the plan is 0,2,1,3. */
	TAP_IS_STR(task_cvd(plugin.task_init, &h, 0), "0", "default layout: task 0 -> GPU 0");
	TAP_IS_STR(task_cvd(plugin.task_init, &h, 1), "2", "default layout: task 1 (package 1) -> GPU 2");
	TAP_IS_STR(task_cvd(plugin.task_init, &h, 2), "1", "default layout: task 2 -> GPU 1");
	/* task/affinity bound tasks 0-1 to CPUs 8-15 and 2-3 to 0-7 after user_init. */
	fake_spank_step_env("SLURM_CPU_BIND_TYPE", "mask_cpu:");
	fake_spank_step_env("SLURM_CPU_BIND_LIST", "0xff00,0xff00,0xff,0xff");
	TAP_IS_STR(task_cvd(plugin.task_init, &h, 0), "2", "task 0 bound to CPUs 8-15 -> GPU 2");
	TAP_IS_STR(task_cvd(plugin.task_init, &h, 1), "3", "task 1 -> GPU 3");
	TAP_IS_STR(task_cvd(plugin.task_init, &h, 2), "0", "task 2 bound to CPUs 0-7 -> GPU 0");
	TAP_IS_STR(task_cvd(plugin.task_init, &h, 3), "1", "task 3 -> GPU 1");
	/* Slurm's own spelling (no 0x); a list that cannot be used keeps the plan. */
	fake_spank_step_env("SLURM_CPU_BIND_LIST", "ff,ff,ff00,ff00");
	TAP_IS_STR(task_cvd(plugin.task_init, &h, 0), "0", "masks without 0x: task 0 -> GPU 0");
	fake_spank_step_env("SLURM_CPU_BIND_LIST", "zz");
	TAP_IS_STR(task_cvd(plugin.task_init, &h, 1), "2", "an unusable list keeps the first plan");
	TAP_OK(fake_spank_last_error[0] == '\0', "no error logged (%s)", fake_spank_last_error);
	plugin.fini(&h, 0, NULL);
	dlclose(dl);
	return done();
}
