/* Unit tests of the GPU/NIC planner on the hwloc XML fixtures: the plans of
 * real machines' shapes (the solver, the parsers and the load errors are in
 * test_gpuplan_solver.c).
 *
 * Every expected plan below is written out by hand from the fixture's shape
 * (tests/fixtures/topo/gen-topo.py describes each one), not computed by the
 * code under test. A plan is shown as "task0|task1|..." with each task's
 * CUDA_VISIBLE_DEVICES value.
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuplan_fixture.h"
#include "tap.h"

static void test_discovery(void)
{
	struct dlrt_gpuplan_topo *t = fixture_load("dgx-2s4g.xml");
	char buf[128];

	TAP_OK(t != NULL, "dgx fixture loads");
	if (!t)
		return;
	/* The Matrox VGA (102b) and the NVIDIA class-0680 bridge are not GPUs. */
	TAP_IS_INT(t->ngpus, 8, "dgx: 8 GPUs");
	/* 0f:00.0 comes first in the XML, but numbering is by bus id. */
	TAP_IS_STR(t->gpus[0].busid, "0000:07:00.0", "dgx: GPU 0 is 07:00.0");
	TAP_IS_STR(t->gpus[1].busid, "0000:0f:00.0", "dgx: GPU 1 is 0f:00.0");
	TAP_IS_STR(t->gpus[7].busid, "0000:bd:00.0", "dgx: GPU 7 is bd:00.0");
	dlrt_gpuplan_format_cpus(t->gpus[0].cpuset, buf, sizeof(buf));
	TAP_IS_STR(buf, "0-7,32-39", "dgx: GPU 0 local to die 0 (with SMT siblings)");
	dlrt_gpuplan_format_cpus(t->gpus[5].cpuset, buf, sizeof(buf));
	TAP_IS_STR(buf, "16-23,48-55", "dgx: GPU 5 local to die 2");
	TAP_IS_INT(t->nnics, 9, "dgx: 4 HCAs + 4 IPoIB + eno1");
	dlrt_gpuplan_topology_free(t);

	t = fixture_load("switch-4g.xml");
	TAP_OK(t && t->ngpus == 4, "switch fixture: 4 GPUs");
	if (t) {
		TAP_IS_STR(t->gpus[2].osdev, "cuda2,nvml2", "switch: OS devices recorded");
		dlrt_gpuplan_topology_free(t);
	}
	t = fixture_load("onesocket-4g.xml");
	TAP_OK(t && t->ngpus == 4 && t->gpus[0].pci_class == 0x0300,
	       "onesocket: display-class (0300) GPUs found");
	TAP_OK(t && t->nnics == 0, "onesocket: no NIC");
	dlrt_gpuplan_topology_free(t);
	t = fixture_load("nogpu.xml");
	TAP_OK(t && t->ngpus == 0 && t->nnics == 1, "nogpu: no GPU, one NIC");
	dlrt_gpuplan_topology_free(t);

	/* GPUs known only through OS devices (class 1200, one AMD with rsmi0,
	 * one NVIDIA with cuda0/nvml0); an AMD VGA without OS device is not one. */
	t = fixture_load("osdev-2g.xml");
	TAP_OK(t && t->ngpus == 2, "osdev: 2 GPUs from rsmi/cuda OS devices");
	if (t && t->ngpus == 2) {
		struct dlrt_err err;
		static const char *const rev[] = { "4-7", "0-3" };
		struct dlrt_gpuplan *p;

		TAP_OK(!strcmp(t->gpus[0].osdev, "rsmi0") && t->gpus[0].vendor == 0x1002 &&
		       !strcmp(t->gpus[1].osdev, "cuda0,nvml0") && t->gpus[1].pci_class == 0x1200,
		       "osdev: GPU 0 is the AMD (rsmi0), GPU 1 the NVIDIA 1200 (cuda0,nvml0)");
		p = fixture_plan(t, "0,1", NULL, "closest", rev, 2, &err);
		TAP_IS_STR(plan_gpus(p, 1), "1|0", "osdev: each task gets the GPU of its package");
		TAP_IS_STR(plan_gpus(p, 0), "0|0", "osdev: each is device 0 of its own runtime");
		TAP_IS_STR(plan_env(p, t, 1), "CUDA_VISIBLE_DEVICES=;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
			   "ROCR_VISIBLE_DEVICES=0;HIP_VISIBLE_DEVICES=0;",
		           "osdev: the AMD GPU's task: ROCm's device 0, no CUDA device");
		TAP_IS_STR(plan_env(p, t, 0), "CUDA_VISIBLE_DEVICES=0;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
			   "ROCR_VISIBLE_DEVICES=;",
		           "osdev: the NVIDIA GPU's task: CUDA's device 0, no ROCm device");
		dlrt_gpuplan_free(p);
	}
	dlrt_gpuplan_topology_free(t);
}

static void test_dgx(void)
{
	struct dlrt_gpuplan_topo *t = fixture_load("dgx-2s4g.xml");
	struct dlrt_err err;
	struct dlrt_gpuplan *p;

	if (!t)
		return;
	/* Tasks placed on the dies in reverse order: GPU i for task i is wrong. */
	static const char *const rev[] = { "24-27,56-59", "28-31,60-63", "16-19,48-51",
					   "20-23,52-55", "8-11,40-43",  "12-15,44-47",
					   "0-3,32-35",   "4-7,36-39" };
	p = fixture_plan(t, "0-7", "0,1,2,3,4,5,6,7", "closest", rev, 8, &err);
	TAP_IS_STR(plan_gpus(p, 0), "6|7|4|5|2|3|0|1", "dgx 8x8 reversed dies: closest GPU each");
	/* Socket interface: the on-board Ethernet, never IPoIB (may have no IP). */
	TAP_IS_STR(plan_nics(p, t), "mlx5_3/eno1|mlx5_3/eno1|mlx5_2/eno1|mlx5_2/eno1|mlx5_1/eno1|"
		   "mlx5_1/eno1|mlx5_0/eno1|mlx5_0/eno1", "dgx: HCA on the GPU's PCIe switch");
	TAP_IS_STR(plan_env(p, t, 0), "CUDA_VISIBLE_DEVICES=6;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "NCCL_IB_HCA==mlx5_3:1;UCX_NET_DEVICES=mlx5_3:1;NCCL_SOCKET_IFNAME==eno1;",
		   "dgx: task 0 environment");
	TAP_OK(t->nics[0].ipoib && !strcmp(t->nics[0].name, "ib0") && !t->nics[2].ipoib,
	       "dgx: ib0 is IPoIB, eno1 is not");
	TAP_IS_INT(p ? p->tasks[0].overlap : -1, 8, "dgx: task 0 fully local");
	dlrt_gpuplan_free(p);

	/* Renumbered (ConstrainDevices): the step has GPUs 4-7, tasks see 0-3. Two
	 * tasks per die; equal tasks keep their order on the die's two GPUs. */
	static const char *const two[] = { "24-31", "16-23", "56-63", "48-55" };
	p = fixture_plan(t, "4,5,6,7", "0,1,2,3", "closest", two, 4, &err);
	TAP_OK(p && p->renumbered, "dgx: CUDA_VISIBLE_DEVICES=0-3 with SLURM_STEP_GPUS=4-7 "
	       "is renumbered");
	TAP_IS_STR(plan_gpus(p, 0), "2|0|3|1", "dgx renumbered: visible indices");
	TAP_IS_STR(plan_gpus(p, 1), "6|4|7|5", "dgx renumbered: node-wide indices");
	TAP_IS_STR(plan_env(p, t, 1), "CUDA_VISIBLE_DEVICES=0;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "NCCL_IB_HCA==mlx5_2:1;UCX_NET_DEVICES=mlx5_2:1;NCCL_SOCKET_IFNAME==eno1;",
		   "dgx renumbered: task 1 environment");
	dlrt_gpuplan_free(p);
	p = fixture_plan(t, "4,5,6,7", "4,5,6,7", "closest", two, 4, &err);
	TAP_OK(p && !p->renumbered, "dgx: node-wide CUDA_VISIBLE_DEVICES is not renumbered");
	TAP_IS_STR(plan_gpus(p, 0), "6|4|7|5", "dgx node-wide: visible = node-wide indices");
	dlrt_gpuplan_free(p);
	/* SLURM_JOB_GPUS alone (no step list) also works. */
	{
		struct dlrt_gpuplan_alloc al;

		TAP_OK(dlrt_gpuplan_alloc_parse(&al, t, "0,1", NULL, "6,7", &err) == 0 &&
		       al.ngpus == 2 && al.global[0] == 6 && al.renumbered,
		       "SLURM_JOB_GPUS=6,7 + CUDA_VISIBLE_DEVICES=0,1: renumbered");
	}

	/* More GPUs than tasks: 2 tasks, 4 GPUs each, both HCAs of their dies. */
	static const char *const halves[] = { "16-31", "0-15" };
	p = fixture_plan(t, "0-7", NULL, "closest", halves, 2, &err);
	TAP_IS_STR(plan_gpus(p, 0), "4,5,6,7|0,1,2,3", "dgx 2 tasks x 4 GPUs");
	TAP_IS_STR(plan_nics(p, t), "mlx5_2,mlx5_3/eno1|mlx5_0,mlx5_1/eno1",
		   "dgx 2 tasks: one HCA per GPU pair");
	TAP_IS_STR(plan_env(p, t, 0), "CUDA_VISIBLE_DEVICES=4,5,6,7;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "NCCL_IB_HCA==mlx5_2:1,mlx5_3:1;UCX_NET_DEVICES=mlx5_2:1,mlx5_3:1;"
		   "NCCL_SOCKET_IFNAME==eno1;", "dgx 2 tasks: task 0 environment");
	dlrt_gpuplan_free(p);

	/* 3 tasks, 8 GPUs: 3+3+2. Task 1 spans dies 1-2 (GPUs 2-5 are local) but
	 * may hold only 3, so one of them goes to task 0 or 2 at no overlap. The
	 * tie rule ((3j - 8t)^2, GPU j's natural task is j*3/8) prefers GPU 5 ->
	 * task 2 (cost 1 + 4+1+16 for GPUs 2-4 on task 1) over GPU 2 -> task 0
	 * (36 + 1+16+49). */
	static const char *const three[] = { "0-7", "8-23", "24-31" };
	p = fixture_plan(t, "0-7", NULL, "closest", three, 3, &err);
	TAP_IS_STR(plan_gpus(p, 0), "0,1|2,3,4|5,6,7", "dgx 3 tasks: balanced 2/3/3");
	dlrt_gpuplan_free(p);

	/* map: explicit GPUs, reused cyclically; '+' gives several GPUs. */
	static const char *const four[] = { "0-7", "8-15", "16-23", "24-31" };
	p = fixture_plan(t, "0-7", NULL, "map:7,6", four, 4, &err);
	TAP_IS_STR(plan_gpus(p, 0), "7|6|7|6", "map:7,6 reused for 4 tasks");
	dlrt_gpuplan_free(p);
	p = fixture_plan(t, "0-7", NULL, "map:0+1,2*2", three, 3, &err);
	TAP_IS_STR(plan_gpus(p, 0), "0,1|2|2", "map:0+1,2*2");
	dlrt_gpuplan_free(p);
	p = fixture_plan(t, "4-7", "0-3", "map:5,4", two, 2, &err);
	TAP_IS_STR(plan_gpus(p, 0), "1|0", "map in node-wide indices, shown renumbered");
	dlrt_gpuplan_free(p);
	p = fixture_plan(t, "0,1", NULL, "map:3", two, 2, &err);
	TAP_OK(!p && strstr(err.msg, "GPU 3, which the step does not have") && err_is_one_line(&err),
	       "map naming an unallocated GPU fails: %s", err.msg);
	dlrt_gpuplan_free(p);

	/* none: every task keeps every allocated GPU and nothing is set. */
	p = fixture_plan(t, "0,1", NULL, "none", two, 2, &err);
	TAP_IS_STR(plan_gpus(p, 0), "0,1|0,1", "none: all allocated GPUs");
	TAP_IS_STR(plan_env(p, t, 0), "", "none: no variable set");
	dlrt_gpuplan_free(p);
	dlrt_gpuplan_topology_free(t);
}

static void test_2s2g(void)
{
	struct dlrt_gpuplan_topo *t = fixture_load("2s2g.xml");
	struct dlrt_err err;
	struct dlrt_gpuplan *p;

	if (!t)
		return;
	/* 8 tasks alternating sockets: 2 per GPU, in task order per socket. */
	static const char *const alt[] = { "0-1", "8-9", "2-3", "10-11",
					   "4-5", "12-13", "6-7", "14-15" };
	p = fixture_plan(t, "0-3", NULL, "closest", alt, 8, &err);
	TAP_IS_STR(plan_gpus(p, 0), "0|2|0|2|1|3|1|3", "2s2g 8 tasks alternating sockets");
	/* Only one HCA (mlx5_0, port 2 active); eth0 is on socket 0. */
	TAP_IS_STR(plan_env(p, t, 0), "CUDA_VISIBLE_DEVICES=0;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "NCCL_IB_HCA==mlx5_0:2;UCX_NET_DEVICES=mlx5_0:2;NCCL_SOCKET_IFNAME==eth0;",
		   "2s2g: active port 2, eth0 next to socket 0");
	TAP_IS_STR(plan_env(p, t, 1), "CUDA_VISIBLE_DEVICES=2;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "NCCL_IB_HCA==mlx5_0:2;UCX_NET_DEVICES=mlx5_0:2;NCCL_SOCKET_IFNAME==eth0;",
		   "2s2g: eth0 also for socket 1 (ib0 is IPoIB)");
	dlrt_gpuplan_free(p);

	/* 5 tasks all on socket 1: balance first (every GPU gets a task), then
	 * the spare task goes to a socket-1 GPU, in task order. */
	static const char *const s1[] = { "8-15", "8-15", "8-15", "8-15", "8-15" };
	p = fixture_plan(t, "0-3", NULL, "closest", s1, 5, &err);
	TAP_IS_STR(plan_gpus(p, 0), "0|1|2|2|3", "2s2g 5 tasks on one socket: balanced");
	dlrt_gpuplan_free(p);

	/* Whole-node masks (task/none): task i gets GPU i. */
	static const char *const all[] = { "0-15", "0-15", "0-15", "0-15" };
	p = fixture_plan(t, "0-3", NULL, "closest", all, 4, &err);
	TAP_IS_STR(plan_gpus(p, 0), "0|1|2|3", "2s2g task/none masks: task i -> GPU i");
	dlrt_gpuplan_free(p);
	/* Two GPUs of one socket allocated, tasks on the other socket first. */
	static const char *const cross[] = { "0-7", "8-15" };
	p = fixture_plan(t, "2,3", NULL, "closest", cross, 2, &err);
	TAP_IS_STR(plan_gpus(p, 0), "2|3", "2s2g GPUs 2,3 only: still one each");
	dlrt_gpuplan_free(p);
	dlrt_gpuplan_topology_free(t);
}

static void test_onesocket_switch(void)
{
	struct dlrt_gpuplan_topo *t = fixture_load("onesocket-4g.xml");
	struct dlrt_err err;
	struct dlrt_gpuplan *p;

	if (!t)
		return;
	static const char *const blk[] = { "0-1", "2-3", "4-5", "6-7",
					   "8-9", "10-11", "12-13", "14-15" };
	p = fixture_plan(t, "0-3", NULL, "closest", blk, 8, &err);
	TAP_IS_STR(plan_gpus(p, 0), "0|0|1|1|2|2|3|3", "onesocket 8 tasks: 2 per GPU");
	TAP_IS_STR(plan_env(p, t, 5), "CUDA_VISIBLE_DEVICES=2;CUDA_DEVICE_ORDER=PCI_BUS_ID;",
		   "onesocket: no NIC variables without NICs");
	dlrt_gpuplan_free(p);
	/* More GPUs than tasks; task 1 is the local one but may take only half. */
	static const char *const two[] = { "8-15", "0-7" };
	p = fixture_plan(t, "0-3", NULL, "closest", two, 2, &err);
	TAP_IS_STR(plan_gpus(p, 0), "0,1|2,3", "onesocket 2 tasks: 2 GPUs each");
	TAP_IS_INT(p ? p->tasks[1].overlap : -1, 16, "onesocket: task 1 overlap 2 x 8");
	TAP_IS_INT(p ? p->tasks[0].overlap : -1, 0, "onesocket: task 0 overlap 0");
	dlrt_gpuplan_free(p);
	dlrt_gpuplan_topology_free(t);

	t = fixture_load("switch-4g.xml");
	if (!t)
		return;
	static const char *const sw[] = { "0-3", "4-7", "8-11", "12-15" };
	p = fixture_plan(t, "0-3", "0-3", "closest", sw, 4, &err);
	TAP_IS_STR(plan_gpus(p, 0), "0|1|2|3", "switch 4 tasks");
	/* mlx5_0 shares the GPUs' switch; mlx5_1 is next to socket 0 only. */
	TAP_IS_STR(plan_nics(p, t), "mlx5_0/eth0|mlx5_0/eth0|mlx5_0/eth0|mlx5_0/eth0",
		   "switch: the HCA behind the GPUs' switch wins");
	dlrt_gpuplan_free(p);
	dlrt_gpuplan_topology_free(t);
}

/* --dl-cpu-bind=gpu on this machine: a fixture GPU local to CPUs 0-7 meets
 * our CPU 0 (every Linux box has it); one local to 8-15 may not. */
static void test_bind_self(void)
{
	struct dlrt_gpuplan_topo *t = fixture_load("2s2g.xml");
	struct dlrt_err err;
	struct dlrt_gpuplan *p;
	cpu_set_t saved, now;

	if (!t)
		return;
	static const char *const one[] = { "0-7" };
	p = fixture_plan(t, "0", NULL, "closest", one, 1, &err);
	if (p && sched_getaffinity(0, sizeof(saved), &saved) == 0 && CPU_ISSET(0, &saved)) {
		TAP_OK(dlrt_gpuplan_bind_self(p, 0, &err) == 0, "bind next to GPU 0: %s", err.msg);
		TAP_OK(sched_getaffinity(0, sizeof(now), &now) == 0 && CPU_ISSET(0, &now) &&
		       !CPU_ISSET(8, &now), "now on GPU 0's CPUs only");
		sched_setaffinity(0, sizeof(saved), &saved);
	}
	dlrt_gpuplan_free(p);
	p = fixture_plan(t, "2", NULL, "closest", one, 1, &err);
	if (p && sched_getaffinity(0, sizeof(saved), &saved) == 0 && CPU_COUNT(&saved) <= 8 &&
	    !CPU_ISSET(8, &saved)) {
		TAP_OK(dlrt_gpuplan_bind_self(p, 0, &err) < 0 && err_is_one_line(&err) &&
		       strstr(err.msg, "8-15"), "GPU 2's CPUs are not ours: %s", err.msg);
	}
	dlrt_gpuplan_free(p);
	p = fixture_plan(t, NULL, NULL, "map:1", one, 1, &err);
	TAP_OK(p && dlrt_gpuplan_bind_self(p, 3, &err) < 0, "bind of a task not in the plan fails");
	dlrt_gpuplan_free(p);
	/* Slurm bound us to CPU 0 but our GPU is local to the odd CPUs (the
	 * cluster fixture): the task moves to them, as far as the kernel allows. */
	if (sched_getaffinity(0, sizeof(saved), &saved) == 0 && CPU_ISSET(0, &saved) &&
	    CPU_ISSET(1, &saved)) {
		struct dlrt_gpuplan_topo *ct = fixture_load("cluster-2s4g.xml");
		cpu_set_t only0;

		CPU_ZERO(&only0);
		CPU_SET(0, &only0);
		p = ct ? fixture_plan(ct, "2", NULL, "closest", one, 1, &err) : NULL;
		if (p && sched_setaffinity(0, sizeof(only0), &only0) == 0) {
			TAP_OK(dlrt_gpuplan_bind_self(p, 0, &err) == 0, "bind outside Slurm's CPUs: %s",
			       err.msg);
			TAP_OK(sched_getaffinity(0, sizeof(now), &now) == 0 && CPU_ISSET(1, &now) &&
			       !CPU_ISSET(0, &now), "moved to the GPU's CPU 1");
		}
		sched_setaffinity(0, sizeof(saved), &saved);
		dlrt_gpuplan_free(p);
		dlrt_gpuplan_topology_free(ct);
	}
	{
		hwloc_bitmap_t c = hwloc_bitmap_alloc();
		char buf[64];

		TAP_OK(dlrt_gpuplan_cores_to_cpus(t, "1-2,9", c, &err) == 0, "cores_to_cpus");
		dlrt_gpuplan_format_cpus(c, buf, sizeof(buf));
		TAP_IS_STR(buf, "1-2,9", "cores 1-2,9 -> PUs (no SMT)");
		TAP_OK(dlrt_gpuplan_cores_to_cpus(t, "16", c, &err) < 0 && err_is_one_line(&err),
		       "core 16 is past the topology: %s", err.msg);
		hwloc_bitmap_free(c);
	}
	dlrt_gpuplan_topology_free(t);
	t = fixture_load("dgx-2s4g.xml");
	if (t) {
		hwloc_bitmap_t c = hwloc_bitmap_alloc();
		char buf[64];

		TAP_OK(dlrt_gpuplan_cores_to_cpus(t, "0-1,8", c, &err) == 0, "dgx cores_to_cpus");
		dlrt_gpuplan_format_cpus(c, buf, sizeof(buf));
		TAP_IS_STR(buf, "0-1,8,32-33,40", "dgx cores 0-1,8 -> both threads");
		hwloc_bitmap_free(c);
		dlrt_gpuplan_topology_free(t);
	}
}

static void test_a100(void)
{
	struct dlrt_gpuplan_topo *t = fixture_load("dgxa100-8g.xml");
	struct dlrt_err err;
	struct dlrt_gpuplan *p;

	if (!t)
		return;
	/* One task per die (block, 32 PUs): dies 1,3,5,7 hold GPUs 2-3, 0-1, 6-7,
	 * 4-5. Tasks 1,3,5,7 get one local GPU each; tasks on GPU-less dies get
	 * the leftover GPU of their own package; order-preserving among ties:
	 * package 0: 0,2,3,1 costs (j-t)^2 = 0+1+1+4, the lowest of the 4 options. */
	static const char *const dies[] = { "0-15,128-143",  "16-31,144-159", "32-47,160-175",
					    "48-63,176-191", "64-79,192-207", "80-95,208-223",
					    "96-111,224-239", "112-127,240-255" };
	p = fixture_plan(t, "0-7", NULL, "closest", dies, 8, &err);
	TAP_IS_STR(plan_gpus(p, 0), "0|2|3|1|4|6|7|5", "a100 one task per die");
	dlrt_gpuplan_free(p);
	/* Tasks only on GPU-less dies, package 1 first: each gets 2 GPUs of its
	 * own package (the next level up decides when no GPU is local). */
	static const char *const far[] = { "64-79", "96-111", "0-15", "32-47" };
	p = fixture_plan(t, "0-7", NULL, "closest", far, 4, &err);
	TAP_IS_STR(plan_gpus(p, 0), "4,5|6,7|0,1|2,3", "a100: same-package GPUs when none is local");
	dlrt_gpuplan_free(p);
	/* 1024 whole-node tasks: squared tie costs would overflow, the linear
	 * fallback must still give 128 tasks per GPU in task order. */
	{
		static hwloc_bitmap_t big[1024];
		struct dlrt_gpuplan_alloc al;
		struct dlrt_gpuplan_bind b = { .mode = DLRT_GPUPLAN_CLOSEST };
		int ok = 1;

		for (int i = 0; i < 1024; i++)
			big[i] = hwloc_bitmap_dup(dlrt_gpuplan_topology_cpus(t));
		dlrt_gpuplan_alloc_parse(&al, t, NULL, NULL, NULL, &err);
		p = dlrt_gpuplan_compute(t, &al, &b, (hwloc_const_cpuset_t const *)big, 1024, &err);
		for (int i = 0; p && i < 1024; i++)
			ok &= p->tasks[i].ngpus == 1 && p->tasks[i].gpus[0] == i / 128;
		TAP_OK(p && ok, "a100 1024 tasks: task i -> GPU i/128 %s", p ? "" : err.msg);
		dlrt_gpuplan_free(p);
		for (int i = 0; i < 1024; i++)
			hwloc_bitmap_free(big[i]);
	}
	dlrt_gpuplan_topology_free(t);
}

static void test_nogpu(void)
{
	struct dlrt_gpuplan_topo *t = fixture_load("nogpu.xml");
	struct dlrt_err err;
	struct dlrt_gpuplan *p;
	struct dlrt_gpuplan_alloc al;

	if (!t)
		return;
	static const char *const two[] = { "0-1", "2-3" };
	p = fixture_plan(t, NULL, NULL, "closest", two, 2, &err);
	TAP_OK(p != NULL, "nogpu: a plan without GPUs");
	TAP_IS_STR(plan_gpus(p, 0), "|", "nogpu: no GPU for any task");
	TAP_IS_STR(plan_env(p, t, 1), "NCCL_SOCKET_IFNAME==eth0;", "nogpu: only the NIC variable");
	dlrt_gpuplan_free(p);
	TAP_OK(dlrt_gpuplan_alloc_parse(&al, t, NULL, "0", NULL, &err) < 0 &&
	       strstr(err.msg, "hwloc found no NVIDIA GPU") && err_is_one_line(&err),
	       "nogpu: SLURM_STEP_GPUS=0 fails: %s", err.msg);
	dlrt_gpuplan_topology_free(t);
}

static void test_layout(void)
{
	struct dlrt_gpuplan_topo *t = fixture_load("2s2g.xml");
	struct dlrt_err err;
	hwloc_bitmap_t c[4];
	char buf[64];

	if (!t)
		return;
	for (int i = 0; i < 4; i++)
		c[i] = hwloc_bitmap_alloc();
	TAP_OK(dlrt_gpuplan_layout(t, NULL, 4, 4, DLRT_GPUPLAN_CYCLIC, c, &err) == 0,
	       "cyclic layout");
	dlrt_gpuplan_format_cpus(c[1], buf, sizeof(buf));
	TAP_IS_STR(buf, "8-11", "cyclic: task 1 on package 1");
	dlrt_gpuplan_format_cpus(c[2], buf, sizeof(buf));
	TAP_IS_STR(buf, "4-7", "cyclic: task 2 back on package 0");
	TAP_OK(dlrt_gpuplan_layout(t, NULL, 3, 0, DLRT_GPUPLAN_BLOCK, c, &err) == 0, "block");
	dlrt_gpuplan_format_cpus(c[2], buf, sizeof(buf));
	TAP_IS_STR(buf, "10-14", "block: 16 CPUs / 3 tasks = 5 each");
	/* 3 x 5 CPUs cyclic on 2 x 8: task 2 fits in neither package's rest. */
	TAP_OK(dlrt_gpuplan_layout(t, NULL, 3, 5, DLRT_GPUPLAN_CYCLIC, c, &err) == 0, "cyclic 3x5");
	dlrt_gpuplan_format_cpus(c[2], buf, sizeof(buf));
	TAP_IS_STR(buf, "5-7,13-14", "cyclic: a task spills over packages when it must");
	TAP_OK(dlrt_gpuplan_layout(t, NULL, 4, 5, DLRT_GPUPLAN_BLOCK, c, &err) < 0 &&
	       err_is_one_line(&err), "layout past the CPUs fails: %s", err.msg);
	for (int i = 0; i < 4; i++)
		hwloc_bitmap_free(c[i]);
	dlrt_gpuplan_topology_free(t);
	dlrt_gpuplan_topology_load("/nonexistent/topo.xml", 0, &err);
	TAP_OK(strstr(err.msg, "/nonexistent/topo.xml") && err_is_one_line(&err),
	       "missing XML names the file: %s", err.msg);
}

/* More GPUs than CPUs (hwloc's nvidiaDGX2.xml shape: 16 GPUs, 4 CPUs): the
 * plugin's layout (dlrt_gpuplan_layout_step, also dlrt-topo's) oversubscribes
 * instead of failing, and every task still gets its own GPUs. */
static void test_oversubscribed(void)
{
	struct dlrt_gpuplan_topo *t = fixture_load("dgx2-16g.xml");
	struct dlrt_gpuplan_alloc al;
	struct dlrt_gpuplan_bind b;
	struct dlrt_gpuplan *p;
	struct dlrt_err err;
	hwloc_bitmap_t c[16];
	char buf[64];
	int fit;

	if (!t)
		return;
	TAP_IS_INT(t->ngpus, 16, "dgx2: 16 GPUs");
	TAP_IS_INT(hwloc_bitmap_weight(dlrt_gpuplan_topology_cpus(t)), 4, "dgx2: 4 CPUs");
	for (int i = 0; i < 16; i++)
		c[i] = hwloc_bitmap_alloc();
	TAP_OK(dlrt_gpuplan_layout(t, NULL, 16, 0, DLRT_GPUPLAN_CYCLIC, c, &err) < 0,
	       "dgx2: the strict layout of 16 tasks fails: %s", err.msg);
	fit = dlrt_gpuplan_layout_step(t, NULL, 16, 0, DLRT_GPUPLAN_CYCLIC, c, &err);
	TAP_IS_INT(fit, DLRT_GPUPLAN_FIT_SHARED, "dgx2: 16 tasks are oversubscribed");
	dlrt_gpuplan_format_cpus(c[15], buf, sizeof(buf));
	TAP_IS_STR(buf, "0-3", "dgx2: task 15 has all CPUs");
	dlrt_gpuplan_alloc_parse(&al, t, NULL, NULL, NULL, &err);
	dlrt_gpuplan_bind_parse(&b, "closest", &err);
	p = dlrt_gpuplan_compute(t, &al, &b, (hwloc_const_cpuset_t const *)c, 16, &err);
	TAP_IS_STR(plan_gpus(p, 0), "0|1|2|3|4|5|6|7|8|9|10|11|12|13|14|15",
		   "dgx2: 16 tasks, task i gets GPU i");
	dlrt_gpuplan_free(p);
	fit = dlrt_gpuplan_layout_step(t, NULL, 8, 0, DLRT_GPUPLAN_CYCLIC, c, &err);
	TAP_IS_INT(fit, DLRT_GPUPLAN_FIT_SHARED, "dgx2: 8 tasks on 4 CPUs are oversubscribed");
	p = dlrt_gpuplan_compute(t, &al, &b, (hwloc_const_cpuset_t const *)c, 8, &err);
	TAP_IS_STR(plan_gpus(p, 0), "0,1|2,3|4,5|6,7|8,9|10,11|12,13|14,15",
		   "dgx2: 8 tasks get 2 GPUs each, in order");
	dlrt_gpuplan_free(p);
	fit = dlrt_gpuplan_layout_step(t, NULL, 2, 4, DLRT_GPUPLAN_CYCLIC, c, &err);
	TAP_IS_INT(fit, DLRT_GPUPLAN_FIT_EVEN, "dgx2: 2 tasks x 4 CPUs are shared out evenly");
	dlrt_gpuplan_format_cpus(c[1], buf, sizeof(buf));
	TAP_IS_STR(buf, "2-3", "dgx2: task 1 on package 1");
	p = dlrt_gpuplan_compute(t, &al, &b, (hwloc_const_cpuset_t const *)c, 2, &err);
	TAP_IS_STR(plan_gpus(p, 0), "0,1,2,3,4,5,6,7|8,9,10,11,12,13,14,15",
		   "dgx2: 2 tasks get the GPUs of their package");
	dlrt_gpuplan_free(p);
	TAP_IS_INT(dlrt_gpuplan_layout_step(t, NULL, 0, 0, DLRT_GPUPLAN_CYCLIC, c, &err), -1,
		   "dgx2: 0 tasks is an error");
	for (int i = 0; i < 16; i++)
		hwloc_bitmap_free(c[i]);
	dlrt_gpuplan_topology_free(t);
}

/* A node with NVIDIA and AMD GPUs (mixed-nv-amd.xml): each runtime numbers
 * only its own vendor's GPUs, and an AMD card seen only through OpenCL is no
 * GPU. Node-wide by bus: 0 NV(05), 1 AMD(06), 2 NV(07), 3 AMD(85), 4 NV(86). */
static void test_mixed(void)
{
	struct dlrt_gpuplan_topo *t = fixture_load("mixed-nv-amd.xml");
	static const char *const five[] = { "0", "1", "2", "4", "5" };
	static const char *const three[] = { "0", "1", "4" };
	static const char *const one[] = { "0-7" };
	struct dlrt_gpuplan *p;
	struct dlrt_err err;

	if (!t)
		return;
	TAP_IS_INT(t->ngpus, 5, "mixed: 5 GPUs, not the OpenCL-only AMD card");
	TAP_OK(t->nrt[DLRT_GPUPLAN_RT_CUDA] == 3 && t->nrt[DLRT_GPUPLAN_RT_ROCM] == 2,
	       "mixed: 3 CUDA and 2 ROCm GPUs");
	p = fixture_plan(t, NULL, NULL, "closest", five, 5, &err);
	TAP_IS_STR(plan_gpus(p, 1), "0|1|2|3|4", "mixed: node-wide, task i gets GPU i");
	TAP_IS_STR(plan_gpus(p, 0), "0|0|1|1|2", "mixed: numbered per runtime");
	TAP_IS_STR(plan_env(p, t, 2), "CUDA_VISIBLE_DEVICES=1;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "ROCR_VISIBLE_DEVICES=;", "mixed: GPU 2 is CUDA's device 1, ROCm sees none");
	TAP_IS_STR(plan_env(p, t, 3), "CUDA_VISIBLE_DEVICES=;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "ROCR_VISIBLE_DEVICES=1;HIP_VISIBLE_DEVICES=0;",
		   "mixed: GPU 3 is ROCm's device 1 (HIP's 0), CUDA sees none");
	dlrt_gpuplan_free(p);
	/* ConstrainDevices: each runtime sees the step's GPUs of its kind as 0..n-1. */
	p = fixture_plan(t, "1,2,3", "0,1,2", "closest", three, 3, &err);
	TAP_IS_STR(plan_gpus(p, 1), "1|2|3", "mixed renumbered: node-wide GPUs 1, 2, 3");
	TAP_IS_STR(plan_gpus(p, 0), "0|0|1", "mixed renumbered: ROCm 0, CUDA 0, ROCm 1");
	TAP_IS_STR(plan_env(p, t, 2), "CUDA_VISIBLE_DEVICES=;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "ROCR_VISIBLE_DEVICES=1;HIP_VISIBLE_DEVICES=0;", "mixed renumbered: task 2");
	dlrt_gpuplan_free(p);
	p = fixture_plan(t, NULL, NULL, "map:0+1+3+4", one, 1, &err);
	TAP_IS_STR(plan_env(p, t, 0), "CUDA_VISIBLE_DEVICES=0,2;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "ROCR_VISIBLE_DEVICES=0,1;HIP_VISIBLE_DEVICES=0,1;",
		   "mixed: a task with GPUs of both kinds gets both lists");
	dlrt_gpuplan_free(p);
	dlrt_gpuplan_topology_free(t);
}


int main(void)
{
	test_discovery();
	test_dgx();
	test_2s2g();
	test_onesocket_switch();
	test_a100();
	test_bind_self();
	test_nogpu();
	test_layout();
	test_oversubscribed();
	test_mixed();
	return tap_done();
}
