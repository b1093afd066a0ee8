/* gpuplan.h - pick each local task's GPUs and NICs from the hwloc topology.
 *
 * Slurm tells a step which GPUs it may use (SLURM_STEP_GPUS, CUDA_VISIBLE_DEVICES)
 * but, on Debian's Slurm (no NVML, hand-written gres.conf), not which one is
 * closest to the CPUs each task runs on. This module reads the node's PCI tree
 * with hwloc (the live node or an XML file), finds the GPUs (NVIDIA PCI
 * display/3D devices, or cuda/nvml/opencl/rsmi OS devices) and the network
 * devices, and solves a small balanced assignment problem: every task gets
 * the GPU(s) whose local CPUs overlap its CPU set the most, no GPU gets a
 * second task while another has none, ties are broken the same way on every
 * node. docs/gpu-binding.md explains the model; dlrt-topo(1) prints a plan.
 *
 * Use from the SPANK plugin:
 *   slurm_spank_user_init (once per node, before fork):
 *     topo = dlrt_gpuplan_topology_load(xml_or_NULL, flags, &err);
 *     dlrt_gpuplan_alloc_parse(&alloc, topo, cvd, step_gpus, job_gpus, &err);
 *     dlrt_gpuplan_bind_parse(&bind, "closest", &err);
 *     dlrt_gpuplan_layout(topo, NULL, ntasks, cpus_per_task,
 *                         dlrt_gpuplan_dist_from_slurm(SLURM_DISTRIBUTION), cpus, &err);
 *     plan = dlrt_gpuplan_compute(topo, &alloc, &bind, cpus, ntasks, &err);
 *   slurm_spank_task_init (per task, after fork):
 *     dlrt_gpuplan_env(plan, topo, local_task_id, spank_setenv_cb, sp, &err);
 *
 * Library code: nothing prints, errors are one line in struct dlrt_err.
 */
#ifndef DLRT_GPUPLAN_H
#define DLRT_GPUPLAN_H

#include <stdint.h>
#include <stdio.h>

#include <hwloc.h>

#include "common/dlrt_err.h"

#define DLRT_GPUPLAN_GPU_MAX 64    /* GPUs on one node (a GPU set is a uint64_t) */
#define DLRT_GPUPLAN_NIC_MAX 64    /* network devices on one node */
#define DLRT_GPUPLAN_TASK_MAX 4096 /* local tasks of one step */
#define DLRT_GPUPLAN_MAP_MAX 1024  /* entries of a map:LIST */
#define DLRT_GPUPLAN_CPU_MAX 65536 /* highest CPU number a cpuset list may name + 1 */
#define DLRT_GPUPLAN_TASK_NICS 4   /* NICs recorded per task */

/* ---- topology ------------------------------------------------------------ */

#define DLRT_GPUPLAN_VENDOR_NVIDIA 0x10deu
#define DLRT_GPUPLAN_VENDOR_AMD 0x1002u /* PCI vendor id: ROCR_VISIBLE_DEVICES too */

/* The runtime that numbers a GPU for programs: CUDA numbers only NVIDIA GPUs
 * (PCI bus order with CUDA_DEVICE_ORDER=PCI_BUS_ID), ROCm only AMD ones (its
 * own enumeration, which follows the PCI bus order), so on a mixed node the
 * node-wide index is neither. */
enum dlrt_gpuplan_rt {
	DLRT_GPUPLAN_RT_CUDA = 0,
	DLRT_GPUPLAN_RT_ROCM,
	DLRT_GPUPLAN_RT_COUNT
};

struct dlrt_gpuplan_gpu {
	int index;                 /* node-wide index: rank in PCI bus id order (NVML, Slurm) */
	int rt;                    /* enum dlrt_gpuplan_rt */
	int rt_index;              /* rank among the node's GPUs of that runtime, bus order */
	char busid[16];            /* "0000:07:00.0" */
	char osdev[64];            /* OS device names hwloc saw ("cuda0,nvml0"), or "" */
	unsigned vendor, device, pci_class;
	hwloc_obj_t pcidev;
	hwloc_bitmap_t cpuset;     /* locality: cpuset of the first non-I/O ancestor */
	hwloc_bitmap_t cpuset_up;  /* next larger ancestor's cpuset (the package, say):
				    * breaks ties between GPUs no task is local to */
};

struct dlrt_gpuplan_nic {
	char name[32];             /* "mlx5_0", "ib0", "eno1" */
	int openfabrics;           /* 1: verbs device (NCCL_IB_HCA, UCX_NET_DEVICES), 0: netdev */
	int ipoib;                 /* netdev on the PCI device of a verbs device (IPoIB) */
	int port;                  /* first active verbs port (1 if none is known) */
	char busid[16];            /* PCI device holding it, or "" */
	hwloc_obj_t obj;
	hwloc_bitmap_t cpuset;     /* locality */
};

struct dlrt_gpuplan_topo {
	hwloc_topology_t topo;
	int ngpus;
	int nrt[DLRT_GPUPLAN_RT_COUNT]; /* GPUs per runtime */
	struct dlrt_gpuplan_gpu gpus[DLRT_GPUPLAN_GPU_MAX];
	int nnics;
	struct dlrt_gpuplan_nic nics[DLRT_GPUPLAN_NIC_MAX];
	int from_xml;
	hwloc_bitmap_t cpus;       /* CPUs tasks may use (see dlrt_gpuplan_topology_cpus) */
};

/* Live topology only: take the CPUs the calling process is bound to (task/
 * affinity, cpusets) as the step's CPUs instead of every CPU hwloc allows
 * (the cgroup). The topology itself is not restricted: hwloc would drop the
 * GPUs hanging below removed CPU objects, and every GPU of the node must be
 * counted for the numbering to match Slurm's. */
#define DLRT_GPUPLAN_LOAD_RESTRICT_CPUBIND 0x1u

/* Loads the topology with I/O devices (KEEP_IMPORTANT filter) from `xml_path`,
 * or from the live node when it is NULL, and finds GPUs and NICs. Costly on a
 * live node (PCI scan): call once per node and reuse. NULL + err on failure. */
struct dlrt_gpuplan_topo *dlrt_gpuplan_topology_load(const char *xml_path, unsigned flags,
						     struct dlrt_err *err);
/* Same from hwloc XML held in memory: xml[len] must be '\0' (one byte past
 * the text). `name` names it in errors (the file it came from). Lets
 * slurmstepd parse a user's file that only the user opened and read. */
struct dlrt_gpuplan_topo *dlrt_gpuplan_topology_load_xml(const char *xml, size_t len,
							 const char *name, struct dlrt_err *err);
void dlrt_gpuplan_topology_free(struct dlrt_gpuplan_topo *t);

/* Why hwloc refused the topology text xml[0..len) (no NUL needed), found by
 * looking at the text: an XML version newer than hwloc reads, an object without a
 * cpuset or with a cpuset that is no hwloc bitmap, an allowed_cpuset without
 * any of the machine's CPUs. 1 and one line with its fix in `why`, or 0. */
int dlrt_gpuplan_xml_why(const char *xml, size_t len, char *why, size_t whylen);

/* The CPUs tasks may use: hwloc's allowed set (all CPUs of an XML file,
 * the cgroup's on a live node), or the process binding with
 * DLRT_GPUPLAN_LOAD_RESTRICT_CPUBIND. Owned by the topology. */
hwloc_const_cpuset_t dlrt_gpuplan_topology_cpus(const struct dlrt_gpuplan_topo *t);

/* Converts Slurm's core list (S_STEP_ALLOC_CORES / S_JOB_ALLOC_CORES,
 * e.g. "0-3,8": core indices in socket-major order, hwloc's logical core
 * order) into the PUs of those cores, for dlrt_gpuplan_layout(). */
int dlrt_gpuplan_cores_to_cpus(const struct dlrt_gpuplan_topo *t, const char *cores,
			       hwloc_bitmap_t out, struct dlrt_err *err);

/* ---- allocation: which GPUs the step has, in which numbering -------------- */

struct dlrt_gpuplan_alloc {
	int ngpus;
	int global[DLRT_GPUPLAN_GPU_MAX]; /* node-wide indices, ascending */
	int renumbered;                   /* 1: tasks see 0..ngpus-1 (ConstrainDevices) */
	const char *source;               /* which variable gave the list (static string) */
};

/* Builds the allocation from the variables Slurm sets (any may be NULL or ""):
 * the GPU list comes from SLURM_STEP_GPUS, else SLURM_JOB_GPUS, else
 * CUDA_VISIBLE_DEVICES, else every GPU of `topo`; CUDA_VISIBLE_DEVICES then
 * tells whether Slurm renumbered the devices (0..n-1 while the list holds
 * other node-wide indices). Indices past the topology's GPUs are an error.
 * `topo` may be NULL (no range check, no default list). */
int dlrt_gpuplan_alloc_parse(struct dlrt_gpuplan_alloc *a, const struct dlrt_gpuplan_topo *topo,
			     const char *cuda_visible_devices, const char *step_gpus,
			     const char *job_gpus, struct dlrt_err *err);

/* ---- binding policy ------------------------------------------------------ */

enum dlrt_gpuplan_mode {
	DLRT_GPUPLAN_CLOSEST = 0,
	DLRT_GPUPLAN_NONE,
	DLRT_GPUPLAN_MAP,
};

struct dlrt_gpuplan_bind {
	enum dlrt_gpuplan_mode mode;
	int nmap;
	uint64_t map[DLRT_GPUPLAN_MAP_MAX]; /* map: GPU set of local task i % nmap (node-wide) */
};

/* Parses "closest", "none" or "map:LIST". LIST is comma separated; an entry
 * is a node-wide GPU index, several joined with '+' (one task, several GPUs),
 * optionally followed by "*N" to repeat it for N tasks: "map:0*2,1*2,2+3". */
int dlrt_gpuplan_bind_parse(struct dlrt_gpuplan_bind *b, const char *spec, struct dlrt_err *err);

/* ---- string parsers (also used by the fuzzer) ----------------------------- */

/* Parses a GPU index list "0,1,4-7" into a set; `what` names the variable in
 * errors. Rejects UUIDs, duplicates, indices >= DLRT_GPUPLAN_GPU_MAX. */
int dlrt_gpuplan_parse_gpuset(const char *s, const char *what, uint64_t *set,
			      struct dlrt_err *err);

/* Parses a CPU list "0-5,12,14-15" into `set` (which the caller allocated). */
int dlrt_gpuplan_parse_cpulist(const char *s, hwloc_bitmap_t set, struct dlrt_err *err);

/* The CPUs of each of `ntasks` local tasks from srun --cpu-bind=mask_cpu:
 * or map_cpu: as Slurm exports them (SLURM_CPU_BIND_TYPE, _LIST), entries
 * reused from the start for further tasks. 1: out[] filled; 0: the type has
 * no explicit list (Slurm computes masks itself); -1 + err: a bad list. */
int dlrt_gpuplan_parse_cpu_bind(const char *type, const char *list, hwloc_bitmap_t *out,
				int ntasks, struct dlrt_err *err);

/* Replaces %n by `node` and %% by % in a topology path (one file per node). */
int dlrt_gpuplan_path_expand(const char *pattern, const char *node, char *out, size_t len,
			     struct dlrt_err *err);

/* ---- task layout (dlrt-topo, and the plugin when it has no real masks) ---- */

enum dlrt_gpuplan_dist {
	DLRT_GPUPLAN_BLOCK = 0, /* task i: PUs [i*c, (i+1)*c) in hwloc logical order (-m *:block) */
	DLRT_GPUPLAN_CYCLIC,    /* task i: next c PUs of package i % npackages (srun's default) */
};

/* The socket-level distribution of SLURM_DISTRIBUTION ("block:block",
 * "cyclic", "plane", NULL...): BLOCK for ":block", else CYCLIC, which is
 * srun's default for distributing CPUs across sockets. */
enum dlrt_gpuplan_dist dlrt_gpuplan_dist_from_slurm(const char *slurm_distribution);

/* Fills out[0..ntasks-1] (allocated by the caller) with each task's CPUs,
 * taken from `cpus` (NULL: all CPUs of the topology). cpus_per_task 0 means
 * "share the CPUs out evenly". Fails when ntasks * cpus_per_task is larger
 * than the CPUs available. */
int dlrt_gpuplan_layout(const struct dlrt_gpuplan_topo *t, hwloc_const_cpuset_t cpus, int ntasks,
			int cpus_per_task, enum dlrt_gpuplan_dist dist, hwloc_bitmap_t *out,
			struct dlrt_err *err);

/* The layout the plugin uses when srun gave no CPU masks: cpus_per_task CPUs
 * each when they fit, else `cpus` shared out evenly, else (more tasks than
 * CPUs: oversubscribed) every task gets all of `cpus`. Returns how: */
enum dlrt_gpuplan_fit {
	DLRT_GPUPLAN_FIT_EXACT = 0, /* cpus_per_task each (0: shared out evenly) */
	DLRT_GPUPLAN_FIT_EVEN,      /* cpus_per_task did not fit: shared out evenly */
	DLRT_GPUPLAN_FIT_SHARED,    /* oversubscribed: every task has all CPUs */
};
int dlrt_gpuplan_layout_step(const struct dlrt_gpuplan_topo *t, hwloc_const_cpuset_t cpus,
			     int ntasks, int cpus_per_task, enum dlrt_gpuplan_dist dist,
			     hwloc_bitmap_t *out, struct dlrt_err *err);

/* ---- the plan ------------------------------------------------------------ */

struct dlrt_gpuplan_task {
	int ngpus;
	int gpus[DLRT_GPUPLAN_GPU_MAX];    /* node-wide indices, ascending */
	int visible[DLRT_GPUPLAN_GPU_MAX]; /* same GPUs as their runtime numbers them (CUDA_
					    * or ROCR_VISIBLE_DEVICES): per runtime, node-wide or
					    * renumbered among the step's GPUs */
	int overlap;                       /* PUs of the task local to its GPUs (sum over GPUs) */
	int nnics;
	int nics[DLRT_GPUPLAN_TASK_NICS];  /* verbs devices, indices into topo->nics */
	int netdev;                        /* closest netdev (NCCL_SOCKET_IFNAME), -1: none */
	hwloc_bitmap_t cpuset;             /* the task's CPUs as given */
	hwloc_bitmap_t gpu_cpuset;         /* union of its GPUs' locality (--dl-cpu-bind=gpu) */
};

struct dlrt_gpuplan {
	enum dlrt_gpuplan_mode mode;
	int ntasks;
	int renumbered;
	struct dlrt_gpuplan_task *tasks;
};

/* Computes the plan for `ntasks` local tasks whose CPU sets are task_cpus[i].
 * closest: optimal balanced assignment (see docs/gpu-binding.md); none: every
 * task keeps all allocated GPUs; map: the map's GPUs, which must be allocated.
 * NULL + err on failure. */
struct dlrt_gpuplan *dlrt_gpuplan_compute(const struct dlrt_gpuplan_topo *t,
					  const struct dlrt_gpuplan_alloc *alloc,
					  const struct dlrt_gpuplan_bind *bind,
					  hwloc_const_cpuset_t const *task_cpus, int ntasks,
					  struct dlrt_err *err);
void dlrt_gpuplan_free(struct dlrt_gpuplan *p);

/* The environment of local task `task`, one setenv_fn call per variable, in
 * this order, when the task has GPUs: CUDA_VISIBLE_DEVICES (its NVIDIA GPUs in
 * CUDA's numbering; with AMD GPUs only, "" on a node with NVIDIA GPUs, else
 * 0..n-1 as HIP reads it), CUDA_DEVICE_ORDER=PCI_BUS_ID, ROCR_VISIBLE_DEVICES
 * (its AMD GPUs in ROCm's numbering, "" for none; on nodes with AMD GPUs) and
 * HIP_VISIBLE_DEVICES=0..n-1 (with AMD GPUs: HIP numbers what ROCR left);
 * then NCCL_IB_HCA and UCX_NET_DEVICES (verbs devices), NCCL_SOCKET_IFNAME.
 * Mode none sets nothing. A non-zero return of setenv_fn
 * stops and fails. The callback decides about overwriting: the plugin should
 * replace CUDA_VISIBLE_DEVICES (Slurm set it step-wide) but may keep NCCL_*
 * and UCX_* values the user set on purpose. */
typedef int (*dlrt_gpuplan_setenv_fn)(void *ctx, const char *name, const char *value);
int dlrt_gpuplan_env(const struct dlrt_gpuplan *p, const struct dlrt_gpuplan_topo *t, int task,
		     dlrt_gpuplan_setenv_fn setenv_fn, void *ctx, struct dlrt_err *err);

/* --dl-cpu-bind=gpu: binds the calling process (the task, in task_init) to
 * the CPUs local to its GPUs that it is allowed to run on now (its current
 * affinity). Fails, leaving the affinity alone, when the two do not meet
 * (e.g. an XML topology of another machine). */
int dlrt_gpuplan_bind_self(const struct dlrt_gpuplan *p, int task, struct dlrt_err *err);

/* Prints the plan as a table, every line starting with `prefix`: task
 * (and its global rank when `ranks` is not NULL), CPUs, CUDA_VISIBLE_DEVICES,
 * node-wide GPUs, overlap, NICs; with show_env each task's variables. */
void dlrt_gpuplan_print(FILE *f, const char *prefix, const struct dlrt_gpuplan *p,
			const struct dlrt_gpuplan_topo *t, const struct dlrt_gpuplan_alloc *al,
			const uint32_t *ranks, int show_env);

/* ---- the solver, exposed for the benchmark and tests ---------------------- */

/* Balanced assignment: each of n items goes to one of m bins (n >= m >= 1),
 * every bin holds floor(n/m) or ceil(n/m) items, and the sum of
 * cost[i * m + bin] is minimal. out[i] receives the bin. 0, or -1 (ENOMEM or
 * bad sizes). Successive shortest paths over the m bins: O(n * (n*m + m^3)). */
int dlrt_gpuplan_solve(int n, int m, const int64_t *cost, int *out);

/* "0-3,8" style text of a set, for printing. */
void dlrt_gpuplan_format_cpus(hwloc_const_bitmap_t set, char *buf, size_t len);
void dlrt_gpuplan_format_gpus(const int *idx, int n, char *buf, size_t len);

#endif
