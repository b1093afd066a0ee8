/* Fake-host test of the node's shared page (spank/stepd.c, share_init and
 * dlrt_stepd_exit), in the spirit of test_plugin_load.c: slurmstepd maps it
 * in user_init, before the tasks fork, and must unmap all of it in
 * slurm_spank_exit. With task ports (tensorflow) the page is longer than
 * struct dlrt_node_share, one address per task of the step: unmapped at the
 * struct's size, the tail stayed mapped in slurmstepd until it exited. The
 * cluster cannot show it (slurmstepd ends with its step), so this host counts
 * the shared anonymous mappings of its own process instead.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <slurm/spank.h>
#include <unistd.h>

#include "fake_spank.h"
#include "tap.h"

/* Bytes of this process's shared anonymous mappings (what mmap's
 * MAP_SHARED | MAP_ANONYMOUS makes: "/dev/zero (deleted)" in maps), or -1. */
static long shared_anon_bytes(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	long total = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[3] == 's' &&
		    strstr(line, "/dev/zero"))
			total += (long)(hi - lo);
	}
	fclose(f);
	return total;
}

static bool set_option(const char *name, const char *arg)
{
	int val = -1;
	spank_opt_cb_f cb = fake_spank_option(name, &val);

	return cb && cb(val, arg, 1) == 0;
}

int main(void)
{
	const char *path = getenv("DLRT_PLUGIN");
	long page = sysconf(_SC_PAGESIZE), before, mapped, after;
	struct spank_handle handle;
	struct fake_spank_plugin plugin;
	void *h;

	/* slurmstepd of node 1 of job 42, step 7: 4 nodes of 256 tasks. */
	fake_spank_items = (struct fake_spank_items){ .job_id = 42, .step_id = 7, .node_id = 1,
		.job_uid = geteuid() == 0 ? 65534 : getuid(),
		.job_gid = geteuid() == 0 ? 65534 : getgid() };
	if (!path) {
		printf("not ok 1 - DLRT_PLUGIN is not set (run through make unit)\n1..1\n");
		return 1;
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	TAP_OK(h != NULL, "dlopen %s: %s", path, h ? "ok" : dlerror());
	if (!h || fake_spank_bind(h, &plugin) < 0)
		return tap_done();
	TAP_IS_INT(plugin.init(&handle, 0, NULL), 0, "init in the remote context");
	TAP_OK(set_option("dl-runtime", "tensorflow"), "--dl-runtime=tensorflow (task ports)");
	/* No watcher (no slurmctld here); the exchange's mode needs no program check. */
	TAP_OK(set_option("dl-signal", "none"), "--dl-signal=none");
	fake_spank_step_env("DLRT_EXCHANGE", "yes");
	fake_spank_step_env("SLURM_STEP_NODELIST", "n[1-4]");
	fake_spank_step_env("SLURM_STEP_TASKS_PER_NODE", "256(x4)");
	fake_spank_step_env("SLURM_DISTRIBUTION", "block");
	TAP_IS_INT(plugin.post_opt(&handle, 0, NULL), 0, "init_post_opt");

	before = shared_anon_bytes();
	TAP_OK(before >= 0, "/proc/self/maps read");
	TAP_IS_INT(plugin.user_init(&handle, 0, NULL), 0, "user_init");
	TAP_OK(fake_spank_last_error[0] == '\0', "no error logged (%s)", fake_spank_last_error);
	mapped = shared_anon_bytes() - before;
	/* 1024 task addresses of 20 bytes past the struct: several pages. */
	TAP_OK(mapped > 4 * page, "user_init mapped the shared page with every task's port "
	       "(%ld bytes)", mapped);
	TAP_IS_INT(plugin.fini(&handle, 0, NULL), 0, "slurm_spank_exit");
	after = shared_anon_bytes();
	TAP_OK(after == before, "slurm_spank_exit unmapped all of it (%ld bytes left mapped)",
	       after - before);
	dlclose(h);
	return tap_done();
}
