/* Unit tests of the GPU/NIC planner on the hwloc XML fixtures.
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

#include "gpubind/gpuplan.h"
#include "tap.h"

static char path_buf[1024];

static const char *fixture(const char *name)
{
	const char *src = getenv("DLRT_SRCDIR");

	snprintf(path_buf, sizeof(path_buf), "%s/tests/fixtures/topo/%s", src ? src : ".", name);
	return path_buf;
}

static struct dlrt_gpuplan_topo *load(const char *name)
{
	struct dlrt_err err = { "" };
	struct dlrt_gpuplan_topo *t = dlrt_gpuplan_topology_load(fixture(name), 0, &err);

	if (!t)
		printf("# load %s: %s\n", name, err.msg);
	return t;
}

/* Plans `n` tasks with the given CPU lists; NULL and a diagnostic on error
 * (the error text is left in *err for the tests that expect failure). */
static struct dlrt_gpuplan *plan(const struct dlrt_gpuplan_topo *t, const char *step,
				 const char *cvd, const char *bindspec, const char *const *cpus,
				 int n, struct dlrt_err *err)
{
	struct dlrt_gpuplan_alloc al;
	struct dlrt_gpuplan_bind *b = malloc(sizeof(*b));
	hwloc_bitmap_t set[64];
	struct dlrt_gpuplan *p = NULL;

	err->msg[0] = '\0';
	for (int i = 0; i < n; i++)
		set[i] = hwloc_bitmap_alloc();
	if (!b || dlrt_gpuplan_bind_parse(b, bindspec, err) < 0)
		goto out;
	if (dlrt_gpuplan_alloc_parse(&al, t, cvd, step, NULL, err) < 0)
		goto out;
	for (int i = 0; i < n; i++)
		if (dlrt_gpuplan_parse_cpulist(cpus[i], set[i], err) < 0)
			goto out;
	p = dlrt_gpuplan_compute(t, &al, b, (hwloc_const_cpuset_t const *)set, n, err);
out:
	for (int i = 0; i < n; i++)
		hwloc_bitmap_free(set[i]);
	free(b);
	return p;
}

/* "6|7|4,5" : each task's visible (or node-wide) GPU list. */
static const char *show(const struct dlrt_gpuplan *p, int nodewide)
{
	static char buf[1024];
	size_t off = 0;

	if (!p)
		return "(no plan)";
	buf[0] = '\0';
	for (int i = 0; i < p->ntasks; i++) {
		char g[256];

		dlrt_gpuplan_format_gpus(nodewide ? p->tasks[i].gpus : p->tasks[i].visible,
					 p->tasks[i].ngpus, g, sizeof(g));
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s", i ? "|" : "", g);
	}
	return buf;
}

static const char *show_nics(const struct dlrt_gpuplan *p, const struct dlrt_gpuplan_topo *t)
{
	static char buf[1024];
	size_t off = 0;

	if (!p)
		return "(no plan)";
	buf[0] = '\0';
	for (int i = 0; i < p->ntasks; i++) {
		const struct dlrt_gpuplan_task *tk = &p->tasks[i];

		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s", i ? "|" : "");
		for (int k = 0; k < tk->nnics; k++)
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s", k ? "," : "",
						t->nics[tk->nics[k]].name);
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "/%s",
					tk->netdev >= 0 ? t->nics[tk->netdev].name : "-");
	}
	return buf;
}

struct envrec {
	char text[1024];
	int calls;
};

static int rec_env(void *ctx, const char *name, const char *value)
{
	struct envrec *r = ctx;
	size_t len = strlen(r->text);

	snprintf(r->text + len, sizeof(r->text) - len, "%s=%s;", name, value);
	r->calls++;
	return 0;
}

static const char *env_of(const struct dlrt_gpuplan *p, const struct dlrt_gpuplan_topo *t, int i)
{
	static struct envrec r;
	static struct dlrt_err err;

	memset(&r, 0, sizeof(r));
	if (!p)
		return "(no plan)";
	if (dlrt_gpuplan_env(p, t, i, rec_env, &r, &err) < 0)
		return err.msg;
	return r.text;
}

static int one_line(const struct dlrt_err *e)
{
	return e->msg[0] != '\0' && !strchr(e->msg, '\n');
}

static void test_discovery(void)
{
	struct dlrt_gpuplan_topo *t = load("dgx-2s4g.xml");
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

	t = load("switch-4g.xml");
	TAP_OK(t && t->ngpus == 4, "switch fixture: 4 GPUs");
	if (t) {
		TAP_IS_STR(t->gpus[2].osdev, "cuda2,nvml2", "switch: OS devices recorded");
		dlrt_gpuplan_topology_free(t);
	}
	t = load("onesocket-4g.xml");
	TAP_OK(t && t->ngpus == 4 && t->gpus[0].pci_class == 0x0300,
	       "onesocket: display-class (0300) GPUs found");
	TAP_OK(t && t->nnics == 0, "onesocket: no NIC");
	dlrt_gpuplan_topology_free(t);
	t = load("nogpu.xml");
	TAP_OK(t && t->ngpus == 0 && t->nnics == 1, "nogpu: no GPU, one NIC");
	dlrt_gpuplan_topology_free(t);

	/* GPUs known only through OS devices (class 1200, one AMD with rsmi0,
	 * one NVIDIA with cuda0/nvml0); an AMD VGA without OS device is not one. */
	t = load("osdev-2g.xml");
	TAP_OK(t && t->ngpus == 2, "osdev: 2 GPUs from rsmi/cuda OS devices");
	if (t && t->ngpus == 2) {
		struct dlrt_err err;
		static const char *const rev[] = { "4-7", "0-3" };
		struct dlrt_gpuplan *p;

		TAP_OK(!strcmp(t->gpus[0].osdev, "rsmi0") && t->gpus[0].vendor == 0x1002 &&
		       !strcmp(t->gpus[1].osdev, "cuda0,nvml0") && t->gpus[1].pci_class == 0x1200,
		       "osdev: GPU 0 is the AMD (rsmi0), GPU 1 the NVIDIA 1200 (cuda0,nvml0)");
		p = plan(t, "0,1", NULL, "closest", rev, 2, &err);
		TAP_IS_STR(show(p, 1), "1|0", "osdev: each task gets the GPU of its package");
		TAP_IS_STR(show(p, 0), "0|0", "osdev: each is device 0 of its own runtime");
		TAP_IS_STR(env_of(p, t, 1), "CUDA_VISIBLE_DEVICES=;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
			   "ROCR_VISIBLE_DEVICES=0;HIP_VISIBLE_DEVICES=0;",
		           "osdev: the AMD GPU's task: ROCm's device 0, no CUDA device");
		TAP_IS_STR(env_of(p, t, 0), "CUDA_VISIBLE_DEVICES=0;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
			   "ROCR_VISIBLE_DEVICES=;",
		           "osdev: the NVIDIA GPU's task: CUDA's device 0, no ROCm device");
		dlrt_gpuplan_free(p);
	}
	dlrt_gpuplan_topology_free(t);
}

static void test_dgx(void)
{
	struct dlrt_gpuplan_topo *t = load("dgx-2s4g.xml");
	struct dlrt_err err;
	struct dlrt_gpuplan *p;

	if (!t)
		return;
	/* Tasks placed on the dies in reverse order: GPU i for task i is wrong. */
	static const char *const rev[] = { "24-27,56-59", "28-31,60-63", "16-19,48-51",
					   "20-23,52-55", "8-11,40-43",  "12-15,44-47",
					   "0-3,32-35",   "4-7,36-39" };
	p = plan(t, "0-7", "0,1,2,3,4,5,6,7", "closest", rev, 8, &err);
	TAP_IS_STR(show(p, 0), "6|7|4|5|2|3|0|1", "dgx 8x8 reversed dies: closest GPU each");
	/* Socket interface: the on-board Ethernet, never IPoIB (may have no IP). */
	TAP_IS_STR(show_nics(p, t), "mlx5_3/eno1|mlx5_3/eno1|mlx5_2/eno1|mlx5_2/eno1|mlx5_1/eno1|"
		   "mlx5_1/eno1|mlx5_0/eno1|mlx5_0/eno1", "dgx: HCA on the GPU's PCIe switch");
	TAP_IS_STR(env_of(p, t, 0), "CUDA_VISIBLE_DEVICES=6;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "NCCL_IB_HCA==mlx5_3:1;UCX_NET_DEVICES=mlx5_3:1;NCCL_SOCKET_IFNAME==eno1;",
		   "dgx: task 0 environment");
	TAP_OK(t->nics[0].ipoib && !strcmp(t->nics[0].name, "ib0") && !t->nics[2].ipoib,
	       "dgx: ib0 is IPoIB, eno1 is not");
	TAP_IS_INT(p ? p->tasks[0].overlap : -1, 8, "dgx: task 0 fully local");
	dlrt_gpuplan_free(p);

	/* Renumbered (ConstrainDevices): the step has GPUs 4-7, tasks see 0-3. Two
	 * tasks per die; equal tasks keep their order on the die's two GPUs. */
	static const char *const two[] = { "24-31", "16-23", "56-63", "48-55" };
	p = plan(t, "4,5,6,7", "0,1,2,3", "closest", two, 4, &err);
	TAP_OK(p && p->renumbered, "dgx: CUDA_VISIBLE_DEVICES=0-3 with SLURM_STEP_GPUS=4-7 "
	       "is renumbered");
	TAP_IS_STR(show(p, 0), "2|0|3|1", "dgx renumbered: visible indices");
	TAP_IS_STR(show(p, 1), "6|4|7|5", "dgx renumbered: node-wide indices");
	TAP_IS_STR(env_of(p, t, 1), "CUDA_VISIBLE_DEVICES=0;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "NCCL_IB_HCA==mlx5_2:1;UCX_NET_DEVICES=mlx5_2:1;NCCL_SOCKET_IFNAME==eno1;",
		   "dgx renumbered: task 1 environment");
	dlrt_gpuplan_free(p);
	p = plan(t, "4,5,6,7", "4,5,6,7", "closest", two, 4, &err);
	TAP_OK(p && !p->renumbered, "dgx: node-wide CUDA_VISIBLE_DEVICES is not renumbered");
	TAP_IS_STR(show(p, 0), "6|4|7|5", "dgx node-wide: visible = node-wide indices");
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
	p = plan(t, "0-7", NULL, "closest", halves, 2, &err);
	TAP_IS_STR(show(p, 0), "4,5,6,7|0,1,2,3", "dgx 2 tasks x 4 GPUs");
	TAP_IS_STR(show_nics(p, t), "mlx5_2,mlx5_3/eno1|mlx5_0,mlx5_1/eno1",
		   "dgx 2 tasks: one HCA per GPU pair");
	TAP_IS_STR(env_of(p, t, 0), "CUDA_VISIBLE_DEVICES=4,5,6,7;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "NCCL_IB_HCA==mlx5_2:1,mlx5_3:1;UCX_NET_DEVICES=mlx5_2:1,mlx5_3:1;"
		   "NCCL_SOCKET_IFNAME==eno1;", "dgx 2 tasks: task 0 environment");
	dlrt_gpuplan_free(p);

	/* 3 tasks, 8 GPUs: 3+3+2. Task 1 spans dies 1-2 (GPUs 2-5 are local) but
	 * may hold only 3, so one of them goes to task 0 or 2 at no overlap. The
	 * tie rule ((3j - 8t)^2, GPU j's natural task is j*3/8) prefers GPU 5 ->
	 * task 2 (cost 1 + 4+1+16 for GPUs 2-4 on task 1) over GPU 2 -> task 0
	 * (36 + 1+16+49). */
	static const char *const three[] = { "0-7", "8-23", "24-31" };
	p = plan(t, "0-7", NULL, "closest", three, 3, &err);
	TAP_IS_STR(show(p, 0), "0,1|2,3,4|5,6,7", "dgx 3 tasks: balanced 2/3/3");
	dlrt_gpuplan_free(p);

	/* map: explicit GPUs, reused cyclically; '+' gives several GPUs. */
	static const char *const four[] = { "0-7", "8-15", "16-23", "24-31" };
	p = plan(t, "0-7", NULL, "map:7,6", four, 4, &err);
	TAP_IS_STR(show(p, 0), "7|6|7|6", "map:7,6 reused for 4 tasks");
	dlrt_gpuplan_free(p);
	p = plan(t, "0-7", NULL, "map:0+1,2*2", three, 3, &err);
	TAP_IS_STR(show(p, 0), "0,1|2|2", "map:0+1,2*2");
	dlrt_gpuplan_free(p);
	p = plan(t, "4-7", "0-3", "map:5,4", two, 2, &err);
	TAP_IS_STR(show(p, 0), "1|0", "map in node-wide indices, shown renumbered");
	dlrt_gpuplan_free(p);
	p = plan(t, "0,1", NULL, "map:3", two, 2, &err);
	TAP_OK(!p && strstr(err.msg, "GPU 3, which the step does not have") && one_line(&err),
	       "map naming an unallocated GPU fails: %s", err.msg);
	dlrt_gpuplan_free(p);

	/* none: every task keeps every allocated GPU and nothing is set. */
	p = plan(t, "0,1", NULL, "none", two, 2, &err);
	TAP_IS_STR(show(p, 0), "0,1|0,1", "none: all allocated GPUs");
	TAP_IS_STR(env_of(p, t, 0), "", "none: no variable set");
	dlrt_gpuplan_free(p);
	dlrt_gpuplan_topology_free(t);
}

static void test_2s2g(void)
{
	struct dlrt_gpuplan_topo *t = load("2s2g.xml");
	struct dlrt_err err;
	struct dlrt_gpuplan *p;

	if (!t)
		return;
	/* 8 tasks alternating sockets: 2 per GPU, in task order per socket. */
	static const char *const alt[] = { "0-1", "8-9", "2-3", "10-11",
					   "4-5", "12-13", "6-7", "14-15" };
	p = plan(t, "0-3", NULL, "closest", alt, 8, &err);
	TAP_IS_STR(show(p, 0), "0|2|0|2|1|3|1|3", "2s2g 8 tasks alternating sockets");
	/* Only one HCA (mlx5_0, port 2 active); eth0 is on socket 0. */
	TAP_IS_STR(env_of(p, t, 0), "CUDA_VISIBLE_DEVICES=0;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "NCCL_IB_HCA==mlx5_0:2;UCX_NET_DEVICES=mlx5_0:2;NCCL_SOCKET_IFNAME==eth0;",
		   "2s2g: active port 2, eth0 next to socket 0");
	TAP_IS_STR(env_of(p, t, 1), "CUDA_VISIBLE_DEVICES=2;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "NCCL_IB_HCA==mlx5_0:2;UCX_NET_DEVICES=mlx5_0:2;NCCL_SOCKET_IFNAME==eth0;",
		   "2s2g: eth0 also for socket 1 (ib0 is IPoIB)");
	dlrt_gpuplan_free(p);

	/* 5 tasks all on socket 1: balance first (every GPU gets a task), then
	 * the spare task goes to a socket-1 GPU, in task order. */
	static const char *const s1[] = { "8-15", "8-15", "8-15", "8-15", "8-15" };
	p = plan(t, "0-3", NULL, "closest", s1, 5, &err);
	TAP_IS_STR(show(p, 0), "0|1|2|2|3", "2s2g 5 tasks on one socket: balanced");
	dlrt_gpuplan_free(p);

	/* Whole-node masks (task/none): task i gets GPU i. */
	static const char *const all[] = { "0-15", "0-15", "0-15", "0-15" };
	p = plan(t, "0-3", NULL, "closest", all, 4, &err);
	TAP_IS_STR(show(p, 0), "0|1|2|3", "2s2g task/none masks: task i -> GPU i");
	dlrt_gpuplan_free(p);
	/* Two GPUs of one socket allocated, tasks on the other socket first. */
	static const char *const cross[] = { "0-7", "8-15" };
	p = plan(t, "2,3", NULL, "closest", cross, 2, &err);
	TAP_IS_STR(show(p, 0), "2|3", "2s2g GPUs 2,3 only: still one each");
	dlrt_gpuplan_free(p);
	dlrt_gpuplan_topology_free(t);
}

static void test_onesocket_switch(void)
{
	struct dlrt_gpuplan_topo *t = load("onesocket-4g.xml");
	struct dlrt_err err;
	struct dlrt_gpuplan *p;

	if (!t)
		return;
	static const char *const blk[] = { "0-1", "2-3", "4-5", "6-7",
					   "8-9", "10-11", "12-13", "14-15" };
	p = plan(t, "0-3", NULL, "closest", blk, 8, &err);
	TAP_IS_STR(show(p, 0), "0|0|1|1|2|2|3|3", "onesocket 8 tasks: 2 per GPU");
	TAP_IS_STR(env_of(p, t, 5), "CUDA_VISIBLE_DEVICES=2;CUDA_DEVICE_ORDER=PCI_BUS_ID;",
		   "onesocket: no NIC variables without NICs");
	dlrt_gpuplan_free(p);
	/* More GPUs than tasks; task 1 is the local one but may take only half. */
	static const char *const two[] = { "8-15", "0-7" };
	p = plan(t, "0-3", NULL, "closest", two, 2, &err);
	TAP_IS_STR(show(p, 0), "0,1|2,3", "onesocket 2 tasks: 2 GPUs each");
	TAP_IS_INT(p ? p->tasks[1].overlap : -1, 16, "onesocket: task 1 overlap 2 x 8");
	TAP_IS_INT(p ? p->tasks[0].overlap : -1, 0, "onesocket: task 0 overlap 0");
	dlrt_gpuplan_free(p);
	dlrt_gpuplan_topology_free(t);

	t = load("switch-4g.xml");
	if (!t)
		return;
	static const char *const sw[] = { "0-3", "4-7", "8-11", "12-15" };
	p = plan(t, "0-3", "0-3", "closest", sw, 4, &err);
	TAP_IS_STR(show(p, 0), "0|1|2|3", "switch 4 tasks");
	/* mlx5_0 shares the GPUs' switch; mlx5_1 is next to socket 0 only. */
	TAP_IS_STR(show_nics(p, t), "mlx5_0/eth0|mlx5_0/eth0|mlx5_0/eth0|mlx5_0/eth0",
		   "switch: the HCA behind the GPUs' switch wins");
	dlrt_gpuplan_free(p);
	dlrt_gpuplan_topology_free(t);
}

/* --dl-cpu-bind=gpu on this machine: a fixture GPU local to CPUs 0-7 meets
 * our CPU 0 (every Linux box has it); one local to 8-15 may not. */
static void test_bind_self(void)
{
	struct dlrt_gpuplan_topo *t = load("2s2g.xml");
	struct dlrt_err err;
	struct dlrt_gpuplan *p;
	cpu_set_t saved, now;

	if (!t)
		return;
	static const char *const one[] = { "0-7" };
	p = plan(t, "0", NULL, "closest", one, 1, &err);
	if (p && sched_getaffinity(0, sizeof(saved), &saved) == 0 && CPU_ISSET(0, &saved)) {
		TAP_OK(dlrt_gpuplan_bind_self(p, 0, &err) == 0, "bind next to GPU 0: %s", err.msg);
		TAP_OK(sched_getaffinity(0, sizeof(now), &now) == 0 && CPU_ISSET(0, &now) &&
		       !CPU_ISSET(8, &now), "now on GPU 0's CPUs only");
		sched_setaffinity(0, sizeof(saved), &saved);
	}
	dlrt_gpuplan_free(p);
	p = plan(t, "2", NULL, "closest", one, 1, &err);
	if (p && sched_getaffinity(0, sizeof(saved), &saved) == 0 && CPU_COUNT(&saved) <= 8 &&
	    !CPU_ISSET(8, &saved)) {
		TAP_OK(dlrt_gpuplan_bind_self(p, 0, &err) < 0 && one_line(&err) &&
		       strstr(err.msg, "8-15"), "GPU 2's CPUs are not ours: %s", err.msg);
	}
	dlrt_gpuplan_free(p);
	p = plan(t, NULL, NULL, "map:1", one, 1, &err);
	TAP_OK(p && dlrt_gpuplan_bind_self(p, 3, &err) < 0, "bind of a task not in the plan fails");
	dlrt_gpuplan_free(p);
	/* Slurm bound us to CPU 0 but our GPU is local to the odd CPUs (the
	 * cluster fixture): the task moves to them, as far as the kernel allows. */
	if (sched_getaffinity(0, sizeof(saved), &saved) == 0 && CPU_ISSET(0, &saved) &&
	    CPU_ISSET(1, &saved)) {
		struct dlrt_gpuplan_topo *ct = load("cluster-2s4g.xml");
		cpu_set_t only0;

		CPU_ZERO(&only0);
		CPU_SET(0, &only0);
		p = ct ? plan(ct, "2", NULL, "closest", one, 1, &err) : NULL;
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
		TAP_OK(dlrt_gpuplan_cores_to_cpus(t, "16", c, &err) < 0 && one_line(&err),
		       "core 16 is past the topology: %s", err.msg);
		hwloc_bitmap_free(c);
	}
	dlrt_gpuplan_topology_free(t);
	t = load("dgx-2s4g.xml");
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
	struct dlrt_gpuplan_topo *t = load("dgxa100-8g.xml");
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
	p = plan(t, "0-7", NULL, "closest", dies, 8, &err);
	TAP_IS_STR(show(p, 0), "0|2|3|1|4|6|7|5", "a100 one task per die");
	dlrt_gpuplan_free(p);
	/* Tasks only on GPU-less dies, package 1 first: each gets 2 GPUs of its
	 * own package (the next level up decides when no GPU is local). */
	static const char *const far[] = { "64-79", "96-111", "0-15", "32-47" };
	p = plan(t, "0-7", NULL, "closest", far, 4, &err);
	TAP_IS_STR(show(p, 0), "4,5|6,7|0,1|2,3", "a100: same-package GPUs when none is local");
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
	struct dlrt_gpuplan_topo *t = load("nogpu.xml");
	struct dlrt_err err;
	struct dlrt_gpuplan *p;
	struct dlrt_gpuplan_alloc al;

	if (!t)
		return;
	static const char *const two[] = { "0-1", "2-3" };
	p = plan(t, NULL, NULL, "closest", two, 2, &err);
	TAP_OK(p != NULL, "nogpu: a plan without GPUs");
	TAP_IS_STR(show(p, 0), "|", "nogpu: no GPU for any task");
	TAP_IS_STR(env_of(p, t, 1), "NCCL_SOCKET_IFNAME==eth0;", "nogpu: only the NIC variable");
	dlrt_gpuplan_free(p);
	TAP_OK(dlrt_gpuplan_alloc_parse(&al, t, NULL, "0", NULL, &err) < 0 &&
	       strstr(err.msg, "hwloc found no NVIDIA GPU") && one_line(&err),
	       "nogpu: SLURM_STEP_GPUS=0 fails: %s", err.msg);
	dlrt_gpuplan_topology_free(t);
}

static void test_layout(void)
{
	struct dlrt_gpuplan_topo *t = load("2s2g.xml");
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
	       one_line(&err), "layout past the CPUs fails: %s", err.msg);
	for (int i = 0; i < 4; i++)
		hwloc_bitmap_free(c[i]);
	dlrt_gpuplan_topology_free(t);
	dlrt_gpuplan_topology_load("/nonexistent/topo.xml", 0, &err);
	TAP_OK(strstr(err.msg, "/nonexistent/topo.xml") && one_line(&err),
	       "missing XML names the file: %s", err.msg);
}

/* More GPUs than CPUs (hwloc's nvidiaDGX2.xml shape: 16 GPUs, 4 CPUs): the
 * plugin's layout (dlrt_gpuplan_layout_step, also dlrt-topo's) oversubscribes
 * instead of failing, and every task still gets its own GPUs. */
static void test_oversubscribed(void)
{
	struct dlrt_gpuplan_topo *t = load("dgx2-16g.xml");
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
	TAP_IS_STR(show(p, 0), "0|1|2|3|4|5|6|7|8|9|10|11|12|13|14|15",
		   "dgx2: 16 tasks, task i gets GPU i");
	dlrt_gpuplan_free(p);
	fit = dlrt_gpuplan_layout_step(t, NULL, 8, 0, DLRT_GPUPLAN_CYCLIC, c, &err);
	TAP_IS_INT(fit, DLRT_GPUPLAN_FIT_SHARED, "dgx2: 8 tasks on 4 CPUs are oversubscribed");
	p = dlrt_gpuplan_compute(t, &al, &b, (hwloc_const_cpuset_t const *)c, 8, &err);
	TAP_IS_STR(show(p, 0), "0,1|2,3|4,5|6,7|8,9|10,11|12,13|14,15",
		   "dgx2: 8 tasks get 2 GPUs each, in order");
	dlrt_gpuplan_free(p);
	fit = dlrt_gpuplan_layout_step(t, NULL, 2, 4, DLRT_GPUPLAN_CYCLIC, c, &err);
	TAP_IS_INT(fit, DLRT_GPUPLAN_FIT_EVEN, "dgx2: 2 tasks x 4 CPUs are shared out evenly");
	dlrt_gpuplan_format_cpus(c[1], buf, sizeof(buf));
	TAP_IS_STR(buf, "2-3", "dgx2: task 1 on package 1");
	p = dlrt_gpuplan_compute(t, &al, &b, (hwloc_const_cpuset_t const *)c, 2, &err);
	TAP_IS_STR(show(p, 0), "0,1,2,3,4,5,6,7|8,9,10,11,12,13,14,15",
		   "dgx2: 2 tasks get the GPUs of their package");
	dlrt_gpuplan_free(p);
	TAP_IS_INT(dlrt_gpuplan_layout_step(t, NULL, 0, 0, DLRT_GPUPLAN_CYCLIC, c, &err), -1,
		   "dgx2: 0 tasks is an error");
	for (int i = 0; i < 16; i++)
		hwloc_bitmap_free(c[i]);
	dlrt_gpuplan_topology_free(t);
}

/* nogpu.xml's text with `from` replaced by `to` (first occurrence). */
static char *nogpu_with(const char *from, const char *to, size_t *len)
{
	FILE *f = fopen(fixture("nogpu.xml"), "r");
	char *in = calloc(1, 1 << 16), *out = calloc(1, (1 << 16) + 256), *at;
	size_t n = f ? fread(in, 1, (1 << 16) - 1, f) : 0;

	if (f)
		fclose(f);
	at = n ? strstr(in, from) : NULL;
	if (!at) {
		free(in);
		free(out);
		return NULL;
	}
	snprintf(out, (1 << 16) + 256, "%.*s%s%s", (int)(at - in), in, to, at + strlen(from));
	free(in);
	*len = strlen(out);
	return out;
}

/* hwloc refuses these files with "Invalid argument" or errno 0 ("Success")
 * and says why only on stderr: the error must name the cause itself. */
static void test_load_errors(void)
{
	static const struct {
		const char *from, *to, *want, *desc;
	} cases[] = {
		{ "<topology version=\"2.0\">", "<topology version=\"3.0\">",
		  "hwloc XML version 3.0 and this hwloc", "newer XML version" },
		{ "allowed_cpuset=\"0x0000000f\"", "allowed_cpuset=\"0x000000f0\"",
		  "allowed_cpuset=\"0x000000f0\" holds none of the machine's CPUs",
		  "allowed_cpuset without the machine's CPUs" },
		{ "allowed_cpuset=\"0x0000000f\"", "allowed_cpuset=\"zz\"",
		  "allowed_cpuset=\"zz\", which is not an hwloc bitmap", "cpuset text" },
		{ "<object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\"",
		  "<object type=\"PU\" os_index=\"0\"", "object PU P#0 has no cpuset",
		  "object without cpuset" },
	};
	char tmp[] = "/tmp/dlrt-test-topo-XXXXXX";
	int fd = mkstemp(tmp);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct dlrt_err err = { "" };
		size_t len = 0;
		char *x = nogpu_with(cases[i].from, cases[i].to, &len);
		struct dlrt_gpuplan_topo *t;

		if (!x || fd < 0) {
			TAP_OK(0, "%s: fixture text", cases[i].desc);
			free(x);
			continue;
		}
		t = dlrt_gpuplan_topology_load_xml(x, len, "job.xml", &err);
		TAP_OK(!t && strstr(err.msg, cases[i].want) && !strstr(err.msg, "Success") &&
		       !strstr(err.msg, "Invalid argument") && one_line(&err),
		       "%s, from memory: %s", cases[i].desc, err.msg);
		dlrt_gpuplan_topology_free(t);
		if (ftruncate(fd, 0) == 0 && pwrite(fd, x, len, 0) == (ssize_t)len) {
			t = dlrt_gpuplan_topology_load(tmp, 0, &err);
			TAP_OK(!t && strstr(err.msg, cases[i].want) && strstr(err.msg, tmp) &&
			       !strstr(err.msg, "Success") && one_line(&err),
			       "%s, from a file: %s", cases[i].desc, err.msg);
			dlrt_gpuplan_topology_free(t);
		}
		free(x);
	}
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	{
		char why[256] = "";
		static const char good[] = "<topology version=\"2.0\"><object type=\"Machine\" "
					   "cpuset=\"0x0000000f,0xf...f\" allowed_cpuset=\"0x1\">";

		TAP_IS_INT(dlrt_gpuplan_xml_why(good, sizeof(good) - 1, why, sizeof(why)), 0,
			   "a sound text has no reason: %s", why);
		TAP_IS_INT(dlrt_gpuplan_xml_why("<topology version=\"", 20, why, sizeof(why)), 0,
			   "a cut text has none either");
	}
}

/* dlrt-topo itself: its messages speak of its own options. */
static void test_topo_tool(void)
{
	const char *plugin = getenv("DLRT_PLUGIN");
	char bin[1024], cmd[4096], out[4096];
	const char *slash = plugin ? strrchr(plugin, '/') : NULL;
	FILE *p;
	size_t n;
	int rc;

	if (!slash) {
		TAP_OK(0, "DLRT_PLUGIN is not set: run through make unit");
		return;
	}
	snprintf(bin, sizeof(bin), "%.*s/bin/dlrt-topo", (int)(slash - plugin), plugin);
	snprintf(cmd, sizeof(cmd), "env -u SLURM_STEP_GPUS -u SLURM_JOB_GPUS -u "
		 "CUDA_VISIBLE_DEVICES %s --xml %s --gpus 0,1 2>&1 >/dev/null", bin,
		 fixture("nogpu.xml"));
	p = popen(cmd, "r");
	n = p ? fread(out, 1, sizeof(out) - 1, p) : 0;
	out[n] = '\0';
	rc = p ? pclose(p) : -1;
	TAP_OK(rc != 0 && strstr(out, "--gpus=0,1 names GPU 1 but") &&
	       strstr(out, "has no GPU: drop --gpus") && !strstr(out, "SLURM_STEP_GPUS") &&
	       !strstr(out, "--dl-"), "dlrt-topo --gpus on a GPU-less file: %s", out);
	snprintf(cmd, sizeof(cmd), "env -u SLURM_STEP_GPUS -u SLURM_JOB_GPUS -u "
		 "CUDA_VISIBLE_DEVICES %s --xml %s --tasks 8 2>&1", bin, fixture("dgx2-16g.xml"));
	p = popen(cmd, "r");
	n = p ? fread(out, 1, sizeof(out) - 1, p) : 0;
	out[n] = '\0';
	rc = p ? pclose(p) : -1;
	TAP_OK(rc == 0 && strstr(out, "note: 8 tasks on 4 CPUs (oversubscribed)") &&
	       strstr(out, "\n7     0-3                  14,15 "),
	       "dlrt-topo --tasks 8 on 16 GPUs and 4 CPUs shows the plugin's plan");
}

/* A node with NVIDIA and AMD GPUs (mixed-nv-amd.xml): each runtime numbers
 * only its own vendor's GPUs, and an AMD card seen only through OpenCL is no
 * GPU. Node-wide by bus: 0 NV(05), 1 AMD(06), 2 NV(07), 3 AMD(85), 4 NV(86). */
static void test_mixed(void)
{
	struct dlrt_gpuplan_topo *t = load("mixed-nv-amd.xml");
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
	p = plan(t, NULL, NULL, "closest", five, 5, &err);
	TAP_IS_STR(show(p, 1), "0|1|2|3|4", "mixed: node-wide, task i gets GPU i");
	TAP_IS_STR(show(p, 0), "0|0|1|1|2", "mixed: numbered per runtime");
	TAP_IS_STR(env_of(p, t, 2), "CUDA_VISIBLE_DEVICES=1;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "ROCR_VISIBLE_DEVICES=;", "mixed: GPU 2 is CUDA's device 1, ROCm sees none");
	TAP_IS_STR(env_of(p, t, 3), "CUDA_VISIBLE_DEVICES=;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "ROCR_VISIBLE_DEVICES=1;HIP_VISIBLE_DEVICES=0;",
		   "mixed: GPU 3 is ROCm's device 1 (HIP's 0), CUDA sees none");
	dlrt_gpuplan_free(p);
	/* ConstrainDevices: each runtime sees the step's GPUs of its kind as 0..n-1. */
	p = plan(t, "1,2,3", "0,1,2", "closest", three, 3, &err);
	TAP_IS_STR(show(p, 1), "1|2|3", "mixed renumbered: node-wide GPUs 1, 2, 3");
	TAP_IS_STR(show(p, 0), "0|0|1", "mixed renumbered: ROCm 0, CUDA 0, ROCm 1");
	TAP_IS_STR(env_of(p, t, 2), "CUDA_VISIBLE_DEVICES=;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "ROCR_VISIBLE_DEVICES=1;HIP_VISIBLE_DEVICES=0;", "mixed renumbered: task 2");
	dlrt_gpuplan_free(p);
	p = plan(t, NULL, NULL, "map:0+1+3+4", one, 1, &err);
	TAP_IS_STR(env_of(p, t, 0), "CUDA_VISIBLE_DEVICES=0,2;CUDA_DEVICE_ORDER=PCI_BUS_ID;"
		   "ROCR_VISIBLE_DEVICES=0,1;HIP_VISIBLE_DEVICES=0,1;",
		   "mixed: a task with GPUs of both kinds gets both lists");
	dlrt_gpuplan_free(p);
	dlrt_gpuplan_topology_free(t);
}

static void test_parsers(void)
{
	static const char *const bad_gpus[] = { "", "0,,1", "a", "1-0", "0,0", "64", "0-",
						"-1", "1 2", "GPU-5f3c", "NoDevFiles", "0,",
						"9999999999" };
	static const char *const bad_binds[] = { "closer", "map:", "map:a", "map:1*0",
						 "map:99", "map:0,", "map:1+", "Closest" };
	static const char *const bad_cpus[] = { "", "0-", "5-2", "99999999", "0,,1", "x" };
	struct dlrt_err err;
	uint64_t set;
	struct dlrt_gpuplan_bind *b = malloc(sizeof(*b));
	struct dlrt_gpuplan_alloc al;
	hwloc_bitmap_t cs = hwloc_bitmap_alloc();

	TAP_OK(dlrt_gpuplan_parse_gpuset("0,2-4,7", "X", &set, &err) == 0 && set == 0x9d,
	       "gpuset 0,2-4,7");
	for (size_t i = 0; i < sizeof(bad_gpus) / sizeof(*bad_gpus); i++) {
		err.msg[0] = '\0';
		TAP_OK(dlrt_gpuplan_parse_gpuset(bad_gpus[i], "SLURM_STEP_GPUS", &set, &err) < 0 &&
		       one_line(&err) && strstr(err.msg, "SLURM_STEP_GPUS"),
		       "bad GPU list '%s': %s", bad_gpus[i], err.msg);
	}
	for (size_t i = 0; i < sizeof(bad_binds) / sizeof(*bad_binds); i++) {
		err.msg[0] = '\0';
		TAP_OK(dlrt_gpuplan_bind_parse(b, bad_binds[i], &err) < 0 && one_line(&err) &&
		       strstr(err.msg, "--dl-gpu-bind"), "bad bind '%s': %s", bad_binds[i], err.msg);
	}
	for (size_t i = 0; i < sizeof(bad_cpus) / sizeof(*bad_cpus); i++) {
		err.msg[0] = '\0';
		TAP_OK(dlrt_gpuplan_parse_cpulist(bad_cpus[i], cs, &err) < 0 && one_line(&err),
		       "bad CPU list '%s': %s", bad_cpus[i], err.msg);
	}
	TAP_OK(dlrt_gpuplan_parse_cpulist("0-3,8", cs, &err) == 0 && hwloc_bitmap_weight(cs) == 5,
	       "CPU list 0-3,8");
	TAP_OK(dlrt_gpuplan_bind_parse(b, "map_gpu:1*3,0", &err) == 0 && b->nmap == 4 &&
	       b->map[2] == 2 && b->map[3] == 1, "map_gpu:1*3,0 (Slurm spelling)");
	TAP_OK(dlrt_gpuplan_bind_parse(b, "none", &err) == 0 && b->mode == DLRT_GPUPLAN_NONE,
	       "none");
	TAP_OK(dlrt_gpuplan_dist_from_slurm("block:block") == DLRT_GPUPLAN_BLOCK &&
	       dlrt_gpuplan_dist_from_slurm("cyclic:block:cyclic") == DLRT_GPUPLAN_BLOCK &&
	       dlrt_gpuplan_dist_from_slurm("block") == DLRT_GPUPLAN_CYCLIC &&
	       dlrt_gpuplan_dist_from_slurm("block:blockx") == DLRT_GPUPLAN_CYCLIC &&
	       dlrt_gpuplan_dist_from_slurm("block:cyclic") == DLRT_GPUPLAN_CYCLIC &&
	       dlrt_gpuplan_dist_from_slurm(NULL) == DLRT_GPUPLAN_CYCLIC,
	       "SLURM_DISTRIBUTION socket level");
	/* Renumbering detection without a topology. */
	TAP_OK(dlrt_gpuplan_alloc_parse(&al, NULL, "0-3", "4-7", NULL, &err) == 0 &&
	       al.renumbered == 1, "4-7 seen as 0-3: renumbered");
	TAP_OK(dlrt_gpuplan_alloc_parse(&al, NULL, "0-3", "0-3", NULL, &err) == 0 &&
	       al.renumbered == 0, "0-3 seen as 0-3: node-wide");
	TAP_OK(dlrt_gpuplan_alloc_parse(&al, NULL, "1", "2,5", NULL, &err) == 0 &&
	       al.renumbered == 1, "2,5 with CUDA_VISIBLE_DEVICES=1 (Slurm --gpu-bind): renumbered");
	TAP_OK(dlrt_gpuplan_alloc_parse(&al, NULL, "5", "2,5", NULL, &err) == 0 &&
	       al.renumbered == 0, "2,5 with CUDA_VISIBLE_DEVICES=5: node-wide");
	TAP_OK(dlrt_gpuplan_alloc_parse(&al, NULL, "7", "2,5", NULL, &err) < 0 && one_line(&err),
	       "CUDA_VISIBLE_DEVICES=7 vs 2,5 rejected: %s", err.msg);
	TAP_OK(dlrt_gpuplan_alloc_parse(&al, NULL, NULL, NULL, "3,1", &err) == 0 &&
	       al.ngpus == 2 && al.global[0] == 1 && al.global[1] == 3, "SLURM_JOB_GPUS sorted");
	hwloc_bitmap_free(cs);
	free(b);
}

/* The solver against brute force on random small instances. */
static int64_t brute(int n, int m, const int64_t *cost)
{
	int64_t best = INT64_MAX;
	long total = 1;
	int a[8];

	for (int i = 0; i < n; i++)
		total *= m;
	for (long code = 0; code < total; code++) {
		int load[8] = { 0 }, ok = 1;
		long c = code;
		int64_t sum = 0;

		for (int i = 0; i < n; i++, c /= m) {
			a[i] = (int)(c % m);
			load[a[i]]++;
			sum += cost[i * m + a[i]];
		}
		for (int b = 0; b < m; b++)
			ok &= load[b] == n / m || load[b] == n / m + (n % m > 0);
		if (ok && sum < best)
			best = sum;
	}
	return best;
}

static void test_solver(void)
{
	/* Greedy row by row takes bin 0 for item 0 and pays 100 for item 1. */
	int64_t c1[] = { 1, 2, 1, 100 };
	int out[8], bad = 0, trials = 300;
	unsigned seed = 12345;

	TAP_OK(dlrt_gpuplan_solve(2, 2, c1, out) == 0 && out[0] == 1 && out[1] == 0,
	       "solver beats greedy");
	TAP_OK(dlrt_gpuplan_solve(1, 2, c1, out) < 0, "solver rejects fewer items than bins");
	for (int tr = 0; tr < trials; tr++) {
		int m = 1 + (int)(rand_r(&seed) % 4), n = m + (int)(rand_r(&seed) % (8 - m));
		int64_t cost[64], sum = 0;
		int load[8] = { 0 }, ok = 1;

		for (int i = 0; i < n * m; i++)
			cost[i] = (int64_t)(rand_r(&seed) % 21) - 10;
		if (dlrt_gpuplan_solve(n, m, cost, out) < 0) {
			bad++;
			continue;
		}
		for (int i = 0; i < n; i++) {
			load[out[i]]++;
			sum += cost[i * m + out[i]];
		}
		for (int b = 0; b < m; b++)
			ok &= load[b] == n / m || load[b] == n / m + (n % m > 0);
		if (!ok || sum != brute(n, m, cost)) {
			if (!bad)
				printf("# trial %d n=%d m=%d: got %lld want %lld balanced=%d\n", tr, n,
				       m, (long long)sum, (long long)brute(n, m, cost), ok);
			bad++;
		}
	}
	TAP_IS_INT(bad, 0, "solver optimal and balanced on %d random instances", trials);
}

/* Every fixture, random task CPU sets and allocations: the plan's total
 * overlap (the primary objective) equals the best of all balanced
 * assignments, found by brute force. */
static int brute_overlap(int nt, int ng, const int *ov)
{
	int n = nt >= ng ? nt : ng, m = nt >= ng ? ng : nt, best = -1, a[10];
	long total = 1;

	for (int i = 0; i < n; i++)
		total *= m;
	for (long code = 0; code < total; code++) {
		int load[10] = { 0 }, ok = 1, sum = 0;
		long c = code;

		for (int i = 0; i < n; i++, c /= m) {
			a[i] = (int)(c % m);
			load[a[i]]++;
			/* items are tasks when nt >= ng, else GPUs */
			sum += nt >= ng ? ov[i * ng + a[i]] : ov[a[i] * ng + i];
		}
		for (int b = 0; b < m; b++)
			ok &= load[b] == n / m || load[b] == n / m + (n % m > 0);
		if (ok && sum > best)
			best = sum;
	}
	return best;
}

static void test_optimal(void)
{
	static const char *const fx[] = { "dgx-2s4g.xml", "2s2g.xml", "onesocket-4g.xml",
					  "switch-4g.xml", "dgxa100-8g.xml", "cluster-2s4g.xml",
					  "osdev-2g.xml", "mixed-nv-amd.xml" };
	unsigned seed = 777;
	int bad = 0, trials = 0, unbalanced = 0;

	for (size_t f = 0; f < sizeof(fx) / sizeof(*fx); f++) {
		struct dlrt_gpuplan_topo *t = load(fx[f]);
		int npu;

		if (!t)
			continue;
		npu = hwloc_bitmap_weight(dlrt_gpuplan_topology_cpus(t));
		for (int tr = 0; tr < 120; tr++) {
			struct dlrt_gpuplan_alloc al = { .source = "test" };
			struct dlrt_gpuplan_bind b = { .mode = DLRT_GPUPLAN_CLOSEST };
			hwloc_bitmap_t set[10];
			int nt, ng, ov[100], got = 0, cnt[64] = { 0 };
			uint64_t gs = 0;
			struct dlrt_err err;
			struct dlrt_gpuplan *p;

			/* T >= G with G <= 4 and T <= 8, or G > T with T <= 3, G <= 8 */
			if (tr % 2) {
				ng = 1 + (int)(rand_r(&seed) % (t->ngpus < 4 ? t->ngpus : 4));
				nt = ng + (int)(rand_r(&seed) % (9 - ng));
			} else {
				nt = 1 + (int)(rand_r(&seed) % (unsigned)(t->ngpus - 1 < 3 ?
									    t->ngpus - 1 : 3));
				ng = nt + 1 + (int)(rand_r(&seed) % (t->ngpus - nt));
				if (ng > t->ngpus)
					ng = t->ngpus;
			}
			while (__builtin_popcountll(gs) < ng)
				gs |= UINT64_C(1) << (rand_r(&seed) % (unsigned)t->ngpus);
			for (int i = 0, j = 0; i < t->ngpus; i++)
				if (gs & (UINT64_C(1) << i))
					al.global[j++] = i;
			al.ngpus = ng;
			for (int i = 0; i < nt; i++) {
				/* a random contiguous run of PUs in logical order, some
				 * spanning two locality domains */
				int len = 1 + (int)(rand_r(&seed) % (unsigned)(npu / 2));
				int st = (int)(rand_r(&seed) % (unsigned)(npu - len + 1));

				set[i] = hwloc_bitmap_alloc();
				/* or PUs scattered over the node, one in `len` */
				for (int k = st; tr % 4 < 2 && k < st + len; k++) {
					hwloc_obj_t pu = hwloc_get_obj_by_type(t->topo, HWLOC_OBJ_PU,
									       (unsigned)k);
					hwloc_bitmap_set(set[i], pu->os_index);
				}
				for (int k = 0; tr % 4 >= 2 && k < npu; k++) {
					hwloc_obj_t pu = hwloc_get_obj_by_type(t->topo, HWLOC_OBJ_PU,
									       (unsigned)k);

					if (rand_r(&seed) % (unsigned)len == 0)
						hwloc_bitmap_set(set[i], pu->os_index);
				}
				for (int j = 0; j < ng; j++) {
					hwloc_bitmap_t x = hwloc_bitmap_alloc();

					hwloc_bitmap_and(x, set[i], t->gpus[al.global[j]].cpuset);
					ov[i * ng + j] = hwloc_bitmap_weight(x);
					hwloc_bitmap_free(x);
				}
			}
			p = dlrt_gpuplan_compute(t, &al, &b, (hwloc_const_cpuset_t const *)set, nt,
						 &err);
			trials++;
			for (int i = 0; p && i < nt; i++) {
				got += p->tasks[i].overlap;
				for (int k = 0; k < p->tasks[i].ngpus; k++)
					cnt[p->tasks[i].gpus[k]]++;
			}
			for (int j = 0; p && j < ng; j++) {
				int c = cnt[al.global[j]];
				int lo = nt >= ng ? nt / ng : 1, hi = nt >= ng ? (nt + ng - 1) / ng : 1;

				if (c < lo || c > hi)
					unbalanced++;
			}
			if (!p || got != brute_overlap(nt, ng, ov)) {
				if (!bad)
					printf("# %s trial %d: %d tasks %d GPUs: overlap %d, best %d\n",
					       fx[f], tr, nt, ng, got, brute_overlap(nt, ng, ov));
				bad++;
			}
			dlrt_gpuplan_free(p);
			for (int i = 0; i < nt; i++)
				hwloc_bitmap_free(set[i]);
		}
		dlrt_gpuplan_topology_free(t);
	}
	TAP_IS_INT(bad, 0, "closest is optimal (brute force) in %d random fixture plans", trials);
	TAP_IS_INT(unbalanced, 0, "and balanced");
}


/* srun --cpu-bind lists as Slurm exports them, and %n in topology paths. */
static void test_cpu_bind_and_path(void)
{
	hwloc_bitmap_t c[3];
	struct dlrt_err err;
	char buf[64];

	for (int i = 0; i < 3; i++)
		c[i] = hwloc_bitmap_alloc();
	TAP_IS_INT(dlrt_gpuplan_parse_cpu_bind("mask_cpu:", "0x3,0xC00", c, 3, &err), 1,
		   "mask_cpu list");
	dlrt_gpuplan_format_cpus(c[1], buf, sizeof(buf));
	TAP_IS_STR(buf, "10-11", "mask 0xC00 -> CPUs 10-11");
	dlrt_gpuplan_format_cpus(c[2], buf, sizeof(buf));
	TAP_IS_STR(buf, "0-1", "task 2 reuses the first mask");
	TAP_IS_INT(dlrt_gpuplan_parse_cpu_bind("verbose,map_cpu:", "5,0x7", c, 2, &err), 1,
		   "map_cpu list (decimal and hex)");
	dlrt_gpuplan_format_cpus(c[1], buf, sizeof(buf));
	TAP_IS_STR(buf, "7", "map 0x7 -> CPU 7");
	TAP_IS_INT(dlrt_gpuplan_parse_cpu_bind("cores", "0x3", c, 2, &err), 0,
		   "cores: Slurm computes the masks");
	TAP_IS_INT(dlrt_gpuplan_parse_cpu_bind("mask_cpu:", NULL, c, 2, &err), 0, "no list");
	TAP_OK(dlrt_gpuplan_parse_cpu_bind("mask_cpu:", "0x3,zz", c, 2, &err) < 0 && one_line(&err),
	       "bad mask: %s", err.msg);
	TAP_OK(dlrt_gpuplan_parse_cpu_bind("mask_cpu:", "0x0", c, 1, &err) < 0, "empty mask");
	TAP_OK(dlrt_gpuplan_parse_cpu_bind("map_cpu:", "99999", c, 1, &err) < 0, "CPU too large");
	TAP_OK(dlrt_gpuplan_parse_cpu_bind("map_cpu:", "1,,2", c, 2, &err) < 0, "empty entry");
	for (int i = 0; i < 3; i++)
		hwloc_bitmap_free(c[i]);
	TAP_OK(dlrt_gpuplan_path_expand("/t/%n-%%.xml", "n12", buf, sizeof(buf), &err) == 0 &&
	       !strcmp(buf, "/t/n12-%.xml"), "%%n and %%%% in a path: %s", buf);
	TAP_OK(dlrt_gpuplan_path_expand("/very/long/%n/%n/%n", "nodename", buf, 16, &err) < 0 &&
	       one_line(&err), "too long: %s", err.msg);
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
	test_load_errors();
	test_topo_tool();
	test_parsers();
	test_solver();
	test_optimal();
	test_cpu_bind_and_path();
	return tap_done();
}
