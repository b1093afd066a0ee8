/* gpubind.c - --dl-cpu-bind=gpu: move a task onto the CPUs next to its GPU.
 *
 * Called in the task itself (slurm_spank_task_init runs in the task process
 * just before exec), so it binds the calling process. The target is the
 * union of the task's GPUs' locality, cut down to the CPUs the task may use
 * right now (cgroup, Slurm's own binding): binding outside them would fail
 * or escape the allocation.
 */
#include "gpuplan.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

int dlrt_gpuplan_bind_self(const struct dlrt_gpuplan *p, int task, struct dlrt_err *err)
{
	const struct dlrt_gpuplan_task *tk;
	int ncpu = DLRT_GPUPLAN_CPU_MAX, rv = -1, c, n = 0;
	size_t sz = CPU_ALLOC_SIZE(ncpu);
	cpu_set_t *cur = CPU_ALLOC(ncpu), *want = CPU_ALLOC(ncpu);
	char gl[256];

	if (!cur || !want) {
		dlrt_err_set(err, "out of memory binding task %d", task);
		goto out;
	}
	if (task < 0 || task >= p->ntasks) {
		dlrt_err_set(err, "local task %d is not in the GPU plan (0-%d)", task,
			     p->ntasks - 1);
		goto out;
	}
	tk = &p->tasks[task];
	if (tk->ngpus == 0) {
		dlrt_err_set(err, "--dl-cpu-bind=gpu: task %d has no GPU to bind next to; drop the "
			     "option or request GPUs", task);
		goto out;
	}
	if (sched_getaffinity(0, sz, cur) < 0) {
		dlrt_err_errno(err, errno, "--dl-cpu-bind=gpu: sched_getaffinity failed");
		goto out;
	}
	CPU_ZERO_S(sz, want);
	hwloc_bitmap_foreach_begin(c, tk->gpu_cpuset)
		if (c < ncpu && CPU_ISSET_S(c, sz, cur)) {
			CPU_SET_S(c, sz, want);
			n++;
		}
	hwloc_bitmap_foreach_end();
	if (n == 0) {
		/* Slurm bound the task elsewhere (a balanced plan can give a task
		 * a GPU of the other socket): move it to the GPU's CPUs, which the
		 * kernel cuts down to the job's cpuset, failing if none is left. */
		hwloc_bitmap_foreach_begin(c, tk->gpu_cpuset)
			if (c < ncpu)
				CPU_SET_S(c, sz, want);
		hwloc_bitmap_foreach_end();
	}
	if (sched_setaffinity(0, sz, want) < 0) {
		dlrt_gpuplan_format_cpus(tk->gpu_cpuset, gl, sizeof(gl));
		dlrt_err_set(err, "--dl-cpu-bind=gpu: none of the CPUs local to task %d's GPUs (%s) "
			     "is available to it (%s); check the topology file or drop the option",
			     task, gl, strerror(errno));
		goto out;
	}
	rv = 0;
out:
	if (cur)
		CPU_FREE(cur);
	if (want)
		CPU_FREE(want);
	return rv;
}
