/* gpu.c - slurmstepd: --dl-gpu-bind, --dl-cpu-bind=gpu, --dl-topology.
 *
 * user_init (once per node, before the tasks fork) loads the topology, reads
 * the step's GPUs as Slurm exposes them and plans every local task; the
 * tasks inherit the plan through fork. task_init (in each task, just before
 * exec) adds that task's CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER and NIC
 * variables to its environment (the GPU plan's layer, env.h) and, with
 * --dl-cpu-bind=gpu, moves it onto its GPU's cores.
 *
 * Each task's CPUs: the list of srun --cpu-bind=mask_cpu:/map_cpu: when the
 * user gave one (task/affinity applies exactly that), else the step's cores
 * on this node (S_STEP_ALLOC_CORES) laid out over the tasks the way
 * task/affinity binds by default (SLURM_DISTRIBUTION's socket level,
 * SLURM_CPUS_PER_TASK). docs/gpu-binding.md explains the choice.
 *
 * Nobody asked for the default (closest on the live node): when it cannot be
 * honoured (hwloc sees no GPU, gres.conf lists more GPUs than the node has)
 * the step runs with Slurm's values, and --dl-verbose says why. Anything the
 * job or the site chose explicitly fails the step with one line instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <slurm/spank.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpubind/gpuplan.h"
#include "plugin.h"
#include "common/proc.h"

#define VAL_MAX 4096

struct dlrt_stepd_gpu {
	struct dlrt_gpuplan_topo *topo;
	struct dlrt_gpuplan *plan;
	struct dlrt_gpuplan_alloc alloc;
	char topo_path[1100]; /* "" = the live node */
	const char *cpus_from;
	uint32_t *ranks;      /* global rank of each local task */
	char skipped[DLRT_ERR_MAX]; /* why the default binding was not applied */
	struct dlrt_gpuplan_bind *bind;
	char bind_type[256];  /* SLURM_CPU_BIND_TYPE/_LIST as the plan used them */
	char bind_list[VAL_MAX];
};

static struct dlrt_stepd_gpu g;

/* Each local task's CPUs into cpus[0..n-1]; see the top of this file. */
static int task_cpus(spank_t sp, hwloc_bitmap_t *cpus, int n, struct dlrt_err *err)
{
	char type[256], list[VAL_MAX], dist[128];
	char *cores = NULL;
	uint32_t cpt = 0;
	hwloc_bitmap_t alloc = NULL;
	int rc;

	dlrt_task_getenv(sp, "SLURM_CPU_BIND_TYPE", type, sizeof(type));
	dlrt_task_getenv(sp, "SLURM_CPU_BIND_LIST", list, sizeof(list));
	snprintf(g.bind_type, sizeof(g.bind_type), "%s", type);
	snprintf(g.bind_list, sizeof(g.bind_list), "%s", list);
	rc = dlrt_gpuplan_parse_cpu_bind(type, list, cpus, n, err);
	if (rc != 0) {
		g.cpus_from = "srun --cpu-bind";
		return rc < 0 ? -1 : 0;
	}
	alloc = hwloc_bitmap_alloc();
	if (!alloc)
		return dlrt_err_set(err, "out of memory planning GPUs");
	if (spank_get_item(sp, S_STEP_ALLOC_CORES, &cores) == ESPANK_SUCCESS && cores && *cores &&
	    dlrt_gpuplan_cores_to_cpus(g.topo, cores, alloc, err) == 0) {
		g.cpus_from = "the step's cores";
	} else {
		/* No core list (or one the topology file does not fit): every
		 * task may run anywhere, as with task/none. */
		hwloc_bitmap_copy(alloc, dlrt_gpuplan_topology_cpus(g.topo));
		g.cpus_from = "all CPUs";
	}
	spank_get_item(sp, S_STEP_CPUS_PER_TASK, &cpt);
	dlrt_task_getenv(sp, "SLURM_DISTRIBUTION", dist, sizeof(dist));
	/* More tasks than CPUs (oversubscribed): all share the step's CPUs.
	 * dlrt-topo shows the same layout (dlrt_gpuplan_layout_step). */
	rc = dlrt_gpuplan_layout_step(g.topo, alloc, n, (int)cpt,
				      dlrt_gpuplan_dist_from_slurm(dist), cpus, err);
	hwloc_bitmap_free(alloc);
	return rc < 0 ? -1 : 0;
}

/* A job's own --dl-topology file is a path the user controls: slurmstepd
 * (root) never opens it. A child that has become the job's user opens it
 * without blocking (a FIFO or a device would hang or never end a read as
 * root), accepts only a regular file of at most TOPO_MAX_BYTES, reads it,
 * parses it once (hwloc's XML reader must never crash slurmstepd: the parse
 * is deterministic, so a crash shows here first) and hands the bytes over a
 * pipe. slurmstepd parses those bytes from memory. */
#define TOPO_MAX_BYTES (64u << 20) /* lstopo of a large GPU node: well under 1 MiB */
#define TOPO_READ_MS 10000

/* In the child: one line on stdout and exit 1. */
static int __attribute__((format(printf, 1, 2))) topo_refuse(const char *fmt, ...)
{
	char line[DLRT_ERR_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0 && write(1, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
		return 2;
	return 1;
}

static int topo_read_child(void *arg)
{
	const char *path = arg;
	struct dlrt_gpuplan_topo *t;
	struct dlrt_err e;
	struct stat st;
	size_t got = 0;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return topo_refuse("cannot open topology file %s as the job's user (%s): check the "
				   "path and that you can read it", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return topo_refuse("topology file %s is not a regular file (a FIFO, a device or a "
				   "folder): give a plain hwloc XML file (lstopo --of xml)", path);
	if (st.st_size > (off_t)TOPO_MAX_BYTES)
		return topo_refuse("topology file %s is larger than %u MiB: give the hwloc XML of "
				   "one node (lstopo --of xml)", path, TOPO_MAX_BYTES >> 20);
	buf = malloc((size_t)st.st_size + 2);
	if (!buf)
		return topo_refuse("out of memory reading topology file %s", path);
	/* One byte more than fstat said: a file that grows is refused too. */
	while (got <= (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size + 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return topo_refuse("cannot read topology file %s (%s)", path, strerror(errno));
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (got > (size_t)st.st_size)
		return topo_refuse("topology file %s changed while it was read: give a file "
				   "nothing writes to", path);
	buf[got] = '\0';
	t = dlrt_gpuplan_topology_load_xml(buf, got, path, &e);
	if (!t)
		return topo_refuse("%s", e.msg);
	for (size_t off = 0; off < got;) {
		ssize_t n = write(1, buf + off, got - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 3;
		off += (size_t)n;
	}
	return 0;
}

static struct dlrt_gpuplan_topo *load_user_topology(spank_t sp, const char *path,
						    struct dlrt_err *err)
{
	struct dlrt_proc_cred cred = { 0 };
	gid_t *groups = NULL;
	struct dlrt_proc_spec spec = { .cred = &cred, .fn = topo_read_child, .arg = (void *)path,
				       .timeout_ms = TOPO_READ_MS, .out_max = TOPO_MAX_BYTES };
	struct dlrt_proc_result res;
	struct dlrt_gpuplan_topo *t = NULL;
	struct dlrt_buf xml;
	struct dlrt_err e;
	char why[64];

	if (spank_get_item(sp, S_JOB_UID, &cred.uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &cred.gid) != ESPANK_SUCCESS) {
		dlrt_err_set(err, "cannot read the job's user from Slurm, so not reading topology "
			     "file %s: drop --dl-topology or report this", path);
		return NULL;
	}
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &groups, &cred.ngroups) != ESPANK_SUCCESS)
		cred.ngroups = 0;
	cred.groups = groups;
	dlrt_buf_init(&xml, (size_t)TOPO_MAX_BYTES + 1);
	if (dlrt_proc_run(&spec, "the reader of the topology file", &xml, &res, &e) < 0) {
		if (res.timed_out)
			dlrt_err_set(err, "reading topology file %s took over %d s: give a plain "
				     "hwloc XML file (lstopo --of xml)", path, TOPO_READ_MS / 1000);
		else if (res.too_much)
			dlrt_err_set(err, "topology file %s is larger than %u MiB: give the hwloc "
				     "XML of one node (lstopo --of xml)", path, TOPO_MAX_BYTES >> 20);
		else
			dlrt_err_set(err, "%s, so not reading topology file %s", e.msg, path);
	} else if (WIFSIGNALED(res.status)) {
		dlrt_err_set(err, "topology file %s crashes hwloc's XML reader (signal %d): "
			     "regenerate it with lstopo --of xml", path, WTERMSIG(res.status));
	} else if (WEXITSTATUS(res.status) == 1) {
		dlrt_err_set(err, "%.*s", (int)(xml.len < DLRT_ERR_MAX ? xml.len : DLRT_ERR_MAX - 1),
			     (const char *)dlrt_buf_head(&xml));
	} else if (WEXITSTATUS(res.status) != 0) {
		dlrt_err_set(err, "the reader of topology file %s failed (%s): check the node's "
			     "slurmd log", path, dlrt_proc_status_text(res.status, why, sizeof(why)));
	} else if (dlrt_buf_append(&xml, "", 1) < 0) {
		dlrt_err_set(err, "out of memory reading topology file %s", path);
	} else {
		t = dlrt_gpuplan_topology_load_xml((const char *)dlrt_buf_head(&xml), xml.len - 1,
						   path, err);
	}
	dlrt_buf_free(&xml);
	return t;
}

static int plan_node(spank_t sp, struct dlrt_err *err)
{
	const struct dlrt_opts *o = &dlrt_plugin.opts;
	const struct dlrt_layout *l = &dlrt_plugin.layout;
	const char *pattern = o->topology[0] ? o->topology : dlrt_plugin.cfg.topology_xml;
	char cvd[VAL_MAX], step_gpus[VAL_MAX], job_gpus[VAL_MAX];
	struct dlrt_gpuplan_bind *bind;
	hwloc_bitmap_t *cpus = NULL;
	uint32_t node = dlrt_plugin.node_id;
	int n, rv = -1;

	if (node >= l->nnodes)
		return dlrt_err_set(err, "Slurm's node id %u is outside the step's %u nodes: "
				    "use --dl-gpu-bind=none and report this", node, l->nnodes);
	n = (int)l->node_ntasks[node];

	dlrt_task_getenv(sp, "CUDA_VISIBLE_DEVICES", cvd, sizeof(cvd));
	/* A site that exports only the AMD variable (gres.conf Flags=amd_gpu_env):
	 * Slurm puts the same list there. */
	if (!cvd[0])
		dlrt_task_getenv(sp, "ROCR_VISIBLE_DEVICES", cvd, sizeof(cvd));
	dlrt_task_getenv(sp, "SLURM_STEP_GPUS", step_gpus, sizeof(step_gpus));
	dlrt_task_getenv(sp, "SLURM_JOB_GPUS", job_gpus, sizeof(job_gpus));
	bind = g.bind = malloc(sizeof(*bind));
	if (!bind)
		return dlrt_err_set(err, "out of memory planning GPUs");
	if (dlrt_gpuplan_bind_parse(bind, o->gpu_bind, err) < 0)
		goto out;
	if (!cvd[0] && !step_gpus[0] && !job_gpus[0]) {
		/* No GPU in this step: nothing to bind, unless the user asked. */
		if (bind->mode == DLRT_GPUPLAN_MAP || o->cpu_bind_gpu) {
			dlrt_err_set(err, "--dl-%s needs GPUs but the step has none: request them "
				     "(e.g. srun --gpus-per-node=4) or drop the option",
				     o->cpu_bind_gpu ? "cpu-bind=gpu" : "gpu-bind=map");
			goto out;
		}
		rv = 0;
		goto out;
	}
	if (bind->mode == DLRT_GPUPLAN_NONE) {
		rv = 0; /* Slurm's own CUDA_VISIBLE_DEVICES stays */
		goto out;
	}
	if (pattern[0] && dlrt_gpuplan_path_expand(pattern, l->nodes.names[node], g.topo_path,
						   sizeof(g.topo_path), err) < 0)
		goto out;
	/* The site's file (plugstack.conf topology_xml) is the admin's: loaded
	 * directly. The job's own is read as the job's user. */
	if (o->topology[0])
		g.topo = load_user_topology(sp, g.topo_path, err);
	else
		g.topo = dlrt_gpuplan_topology_load(g.topo_path[0] ? g.topo_path : NULL, 0, err);
	if (!g.topo)
		goto out;
	if (dlrt_gpuplan_alloc_parse(&g.alloc, g.topo, cvd, step_gpus, job_gpus, err) < 0)
		goto out;
	cpus = calloc((size_t)n, sizeof(*cpus));
	g.ranks = calloc((size_t)n, sizeof(*g.ranks));
	if (!cpus || !g.ranks) {
		dlrt_err_set(err, "out of memory planning GPUs");
		goto out;
	}
	for (int i = 0; i < n; i++)
		if (!(cpus[i] = hwloc_bitmap_alloc())) {
			dlrt_err_set(err, "out of memory planning GPUs");
			goto out;
		}
	for (uint32_t r = 0; r < l->ntasks; r++)
		if (l->task_node[r] == node && l->task_local[r] < (uint32_t)n)
			g.ranks[l->task_local[r]] = r;
	if (task_cpus(sp, cpus, n, err) < 0)
		goto out;
	g.plan = dlrt_gpuplan_compute(g.topo, &g.alloc, bind, (hwloc_const_cpuset_t const *)cpus,
				      n, err);
	if (g.plan)
		rv = 0;
out:
	for (int i = 0; cpus && i < n; i++)
		hwloc_bitmap_free(cpus[i]);
	free(cpus);
	return rv;
}

int dlrt_stepd_gpu_user_init(spank_t sp, struct dlrt_err *err)
{
	const struct dlrt_opts *o = &dlrt_plugin.opts;
	bool strict = o->gpu_bind_set || o->cpu_bind_gpu || o->topology[0] ||
		      dlrt_plugin.cfg.topology_xml[0] || strcmp(o->gpu_bind, "closest") != 0;

	if (plan_node(sp, err) == 0)
		return 0;
	dlrt_gpuplan_free(g.plan);
	g.plan = NULL;
	if (strict)
		return -1;
	snprintf(g.skipped, sizeof(g.skipped), "%s", err->msg);
	return 0;
}

struct env_ctx {
	spank_t sp;
	struct dlrt_env *env;
};

/* Slurm gives every GPU visibility variable of the step the same list as
 * CUDA_VISIBLE_DEVICES (gres.conf Flags=*_gpu_env choose which). Each one it
 * set gets the task's list too: left step-wide, ROCm, oneAPI or OpenCL would
 * show the task every GPU of the step. */
static const char *const visibility_vars[] = { "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK",
					       "GPU_DEVICE_ORDINAL" };

/* The GPU plan's layer of the task's environment (env.h has the precedence):
 * CUDA_* and the visibility variables replace what Slurm set step-wide; NIC
 * variables the user exported or the runtime set (--dl-iface, the route to
 * task 0) win over the plan's. */
static int add_one(void *ctx, const char *name, const char *value)
{
	struct env_ctx *c = ctx;
	char cur[VAL_MAX];
	bool replace = !strncmp(name, "CUDA_", 5) || !strcmp(name, "ROCR_VISIBLE_DEVICES") ||
		       !strcmp(name, "HIP_VISIBLE_DEVICES");

	dlrt_env_add(c->env, DLRT_ENV_GPU, !replace, name, value);
	if (strcmp(name, "CUDA_VISIBLE_DEVICES") != 0)
		return 0;
	for (size_t i = 0; i < sizeof(visibility_vars) / sizeof(visibility_vars[0]); i++)
		if (dlrt_task_getenv(c->sp, visibility_vars[i], cur, sizeof(cur)) == 0)
			dlrt_env_add(c->env, DLRT_ENV_GPU, false, visibility_vars[i], value);
	return 0;
}

/* With task/affinity, slurmstepd writes the masks it computed for the node's
 * tasks into each task's SLURM_CPU_BIND_TYPE/_LIST, after user_init. When
 * they differ from what the plan used, this task plans again with them:
 * every task of the node sees the same list, so all reach the same plan. A
 * list that cannot be used leaves the first plan in place. */
static void replan(spank_t sp)
{
	char type[256], list[VAL_MAX];
	hwloc_bitmap_t *cpus;
	struct dlrt_gpuplan *p = NULL;
	struct dlrt_err err;
	int n = g.plan->ntasks, ok = 1;

	dlrt_task_getenv(sp, "SLURM_CPU_BIND_TYPE", type, sizeof(type));
	dlrt_task_getenv(sp, "SLURM_CPU_BIND_LIST", list, sizeof(list));
	if (!strcmp(type, g.bind_type) && !strcmp(list, g.bind_list))
		return;
	cpus = calloc((size_t)n, sizeof(*cpus));
	for (int i = 0; cpus && i < n; i++)
		ok &= (cpus[i] = hwloc_bitmap_alloc()) != NULL;
	if (cpus && ok && dlrt_gpuplan_parse_cpu_bind(type, list, cpus, n, &err) == 1)
		p = dlrt_gpuplan_compute(g.topo, &g.alloc, g.bind,
					 (hwloc_const_cpuset_t const *)cpus, n, &err);
	if (p) {
		dlrt_gpuplan_free(g.plan);
		g.plan = p;
		g.cpus_from = "Slurm's task binding";
	}
	/* Once per list: the dry run asks for every task of the node. */
	snprintf(g.bind_type, sizeof(g.bind_type), "%s", type);
	snprintf(g.bind_list, sizeof(g.bind_list), "%s", list);
	for (int i = 0; cpus && i < n; i++)
		hwloc_bitmap_free(cpus[i]);
	free(cpus);
}

bool dlrt_stepd_gpu_planned(void)
{
	return g.plan != NULL;
}

int dlrt_stepd_gpu_task_env(spank_t sp, int local, struct dlrt_env *env, struct dlrt_err *err)
{
	struct env_ctx c = { sp, env };

	if (!g.plan)
		return 0;
	replan(sp);
	if (dlrt_gpuplan_env(g.plan, g.topo, local, add_one, &c, err) < 0)
		return -1;
	return dlrt_env_check(env, err);
}

int dlrt_stepd_gpu_task_init(spank_t sp, int local, struct dlrt_err *err)
{
	if (g.skipped[0] && local == 0 && dlrt_plugin.opts.verbose)
		fprintf(stderr, "dlrt: %s: GPU binding skipped, Slurm's CUDA_VISIBLE_DEVICES "
			"stays: %s\n", dlrt_plugin.layout.nodes.names[dlrt_plugin.node_id], g.skipped);
	if (!g.plan)
		return 0;
	replan(sp);
	if (dlrt_plugin.opts.cpu_bind_gpu && dlrt_gpuplan_bind_self(g.plan, local, err) < 0)
		return -1;
	if (dlrt_plugin.opts.verbose && local < g.plan->ntasks) {
		const struct dlrt_gpuplan_task *tk = &g.plan->tasks[local];
		char gl[256], cpus[256];

		dlrt_gpuplan_format_gpus(tk->visible, tk->ngpus, gl, sizeof(gl));
		dlrt_gpuplan_format_cpus(tk->cpuset, cpus, sizeof(cpus));
		fprintf(stderr, "dlrt: task %u on %s: CPUs %s, CUDA_VISIBLE_DEVICES=%s%s\n",
			g.ranks[local], dlrt_plugin.layout.nodes.names[dlrt_plugin.node_id], cpus,
			tk->ngpus ? gl : "-", dlrt_plugin.opts.cpu_bind_gpu ? " (bound next to it)" : "");
	}
	return 0;
}

/* How many GPUs the plan gave local task
 * `local` (its CUDA_VISIBLE_DEVICES), or -1 when dlrt planned none. */
int dlrt_stepd_gpu_count(int local)
{
	if (!g.plan || local < 0 || local >= g.plan->ntasks)
		return -1;
	return g.plan->tasks[local].ngpus;
}

void dlrt_stepd_gpu_print(spank_t sp, FILE *f)
{
	char prefix[96];
	const char *node = dlrt_plugin.layout.nodes.names[dlrt_plugin.node_id];

	snprintf(prefix, sizeof(prefix), "%s: ", node);
	if (g.skipped[0])
		fprintf(f, "%sGPU binding skipped, Slurm's CUDA_VISIBLE_DEVICES stays: %s\n", prefix,
			g.skipped);
	if (!g.plan)
		return;
	replan(sp);
	fprintf(f, "%sGPU plan (topology %s, task CPUs from %s%s)\n", prefix,
		g.topo_path[0] ? g.topo_path : "of this node", g.cpus_from,
		dlrt_plugin.opts.cpu_bind_gpu ? ", --dl-cpu-bind=gpu" : "");
	/* Without the plan's own variables: the dry run prints each task's whole
	 * environment after this, the plan's variables as they win or lose. */
	dlrt_gpuplan_print(f, prefix, g.plan, g.topo, &g.alloc, g.ranks, 0);
}

void dlrt_stepd_gpu_free(void)
{
	dlrt_gpuplan_free(g.plan);
	dlrt_gpuplan_topology_free(g.topo);
	free(g.ranks);
	free(g.bind);
	memset(&g, 0, sizeof(g));
}
