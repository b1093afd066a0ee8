/* dlrt-topo: print the GPU/NIC plan dlrt would apply to a node.
 *
 * For admins (does the topology file match the node, are GPUs numbered as
 * gres.conf assumes?) and for srun debugging (`srun -N1 dlrt-topo --tasks 8`
 * shows what --dl-gpu-bind=closest would give each task). See dlrt-topo(1).
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpubind/gpuplan.h"

static int env_set(const char *name)
{
	const char *v = getenv(name);

	return v && *v;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dlrt-topo [--xml FILE] [--tasks N] [--cpus-per-task C] [--gpus LIST]\n"
		"                 [--visible LIST] [--bind closest|none|map:LIST]\n"
		"                 [--distribution block|cyclic] [--cpu-bind mask_cpu:L|map_cpu:L]\n"
		"                 [--env] [--restrict]\n"
		"Print the GPUs and NICs each local task would get (dlrt --dl-gpu-bind).\n"
		"  --xml FILE          hwloc XML topology (default: this machine)\n"
		"  --tasks N           local tasks (default: one per GPU, at least 1)\n"
		"  --cpus-per-task C   CPUs per task (default: all CPUs shared out evenly)\n"
		"  --gpus LIST         the step's GPUs, node-wide indices (default: $SLURM_STEP_GPUS,\n"
		"                      $SLURM_JOB_GPUS, $CUDA_VISIBLE_DEVICES, else every GPU)\n"
		"  --visible LIST      CUDA_VISIBLE_DEVICES as Slurm set it (0..n-1 = renumbered)\n"
		"  --bind MODE         closest (default), none, map:LIST (node-wide GPU per task)\n"
		"  --distribution D    cyclic (default, as srun): each task's PUs from the next package\n"
		"                      in turn; block: consecutive PUs\n"
		"  --cpu-bind T:LIST   task CPUs as srun --cpu-bind=mask_cpu:LIST or map_cpu:LIST\n"
		"                      gives them (the plugin reads SLURM_CPU_BIND_TYPE/_LIST)\n"
		"  --env               also print each task's environment variables\n"
		"  --restrict          live topology only: restrict to this process's CPU binding\n"
		"  --help, --version\n");
}

static void print_devices(const struct dlrt_gpuplan_topo *t, const char *what)
{
	char cpus[256];

	printf("topology: %s: %d CPUs, %d GPUs, %d NICs\n", what,
	       hwloc_bitmap_weight(dlrt_gpuplan_topology_cpus(t)), t->ngpus, t->nnics);
	if (t->ngpus == 0)
		printf("no GPU found (hwloc saw no NVIDIA display/3D PCI device and no "
		       "cuda/nvml/opencl/rsmi device)\n");
	else
		printf("%-4s %-13s %-6s %-20s %s\n", "GPU", "PCI", "class", "local CPUs", "OS devices");
	for (int i = 0; i < t->ngpus; i++) {
		const struct dlrt_gpuplan_gpu *g = &t->gpus[i];

		dlrt_gpuplan_format_cpus(g->cpuset, cpus, sizeof(cpus));
		printf("%-4d %-13s %04x   %-20s %s\n", g->index, g->busid, g->pci_class, cpus,
		       g->osdev[0] ? g->osdev : "-");
	}
	if (t->nnics == 0)
		printf("no network device found\n");
	else
		printf("%-10s %-6s %-13s %s\n", "NIC", "kind", "PCI", "local CPUs");
	for (int i = 0; i < t->nnics; i++) {
		const struct dlrt_gpuplan_nic *n = &t->nics[i];

		dlrt_gpuplan_format_cpus(n->cpuset, cpus, sizeof(cpus));
		printf("%-10s %-6s %-13s %s\n", n->name, n->openfabrics ? "verbs" : n->ipoib ? "ipoib" : "netdev",
		       n->busid[0] ? n->busid : "-", cpus);
	}
}

/* The step's GPU list names a GPU the topology lacks: say so in terms of
 * this command (the library's message speaks of the plugin's options). */
static int check_gpus(const struct dlrt_gpuplan_topo *t, const char *what, const char *opt,
		      const char *list, struct dlrt_err *err)
{
	uint64_t set = 0;
	int top = -1;

	if (!list || !*list)
		return 0;
	if (dlrt_gpuplan_parse_gpuset(list, opt, &set, err) < 0)
		return -1;
	for (int i = 0; i < 64; i++)
		if (set & (UINT64_C(1) << i))
			top = i;
	if (top < t->ngpus)
		return 0;
	if (t->ngpus == 0)
		return dlrt_err_set(err, "%s=%.40s names GPU %d but %s has no GPU: %s", opt, list,
				    top, what, strcmp(opt, "--gpus") == 0 ?
				    "drop --gpus, or give a GPU node's topology with --xml FILE "
				    "(lstopo --of xml on that node)" :
				    "give --gpus LIST, or a GPU node's topology with --xml FILE");
	return dlrt_err_set(err, "%s=%.40s names GPU %d but %s has GPUs 0-%d only: give "
			    "node-wide indices from the GPU table above", opt, list, top, what,
			    t->ngpus - 1);
}

static int parse_int(const char *s, const char *opt, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < 0 || v > DLRT_GPUPLAN_TASK_MAX * 64) {
		fprintf(stderr, "dlrt-topo: %s %s is not a number: give a count such as 8\n", opt, s);
		return -1;
	}
	*out = (int)v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "xml", required_argument, NULL, 'x' },
		{ "tasks", required_argument, NULL, 'n' },
		{ "cpus-per-task", required_argument, NULL, 'c' },
		{ "gpus", required_argument, NULL, 'g' },
		{ "visible", required_argument, NULL, 'v' },
		{ "bind", required_argument, NULL, 'b' },
		{ "distribution", required_argument, NULL, 'm' },
		{ "cpu-bind", required_argument, NULL, 'B' },
		{ "env", no_argument, NULL, 'e' },
		{ "restrict", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *xml = NULL, *gpus = NULL, *visible = NULL, *bindspec = "closest";
	const char *cpubind = NULL, *what;
	int ntasks = 0, cpt = 0, show_env = 0, rv = 1, opt;
	unsigned flags = 0;
	enum dlrt_gpuplan_dist dist = DLRT_GPUPLAN_CYCLIC;
	struct dlrt_gpuplan_topo *t = NULL;
	struct dlrt_gpuplan *p = NULL;
	struct dlrt_gpuplan_alloc al;
	struct dlrt_gpuplan_bind *bind = NULL;
	hwloc_bitmap_t *cpus = NULL;
	struct dlrt_err err = { "" };

	while ((opt = getopt_long(argc, argv, "x:n:c:g:v:b:m:B:erhV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'x': xml = optarg; break;
		case 'n': if (parse_int(optarg, "--tasks", &ntasks) < 0) return 2; break;
		case 'c': if (parse_int(optarg, "--cpus-per-task", &cpt) < 0) return 2; break;
		case 'g': gpus = optarg; break;
		case 'v': visible = optarg; break;
		case 'b': bindspec = optarg; break;
		case 'm':
			if (strcmp(optarg, "block") == 0) {
				dist = DLRT_GPUPLAN_BLOCK;
			} else if (strcmp(optarg, "cyclic") == 0) {
				dist = DLRT_GPUPLAN_CYCLIC;
			} else {
				fprintf(stderr, "dlrt-topo: --distribution %s is unknown: use block or "
					"cyclic\n", optarg);
				return 2;
			}
			break;
		case 'B': cpubind = optarg; break;
		case 'e': show_env = 1; break;
		case 'r': flags |= DLRT_GPUPLAN_LOAD_RESTRICT_CPUBIND; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("dlrt-topo %s\n", DLRT_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "dlrt-topo: unexpected argument %s: see dlrt-topo --help\n",
			argv[optind]);
		return 2;
	}
	bind = malloc(sizeof(*bind));
	if (!bind || dlrt_gpuplan_bind_parse(bind, bindspec, &err) < 0)
		goto fail;
	t = dlrt_gpuplan_topology_load(xml, flags, &err);
	if (!t)
		goto fail;
	what = xml ? xml : "this machine";
	print_devices(t, what);
	if (gpus) {
		if (check_gpus(t, what, "--gpus", gpus, &err) < 0 ||
		    dlrt_gpuplan_alloc_parse(&al, t, visible, gpus, NULL, &err) < 0)
			goto fail;
		al.source = "--gpus";
	} else if (check_gpus(t, what, "SLURM_STEP_GPUS", getenv("SLURM_STEP_GPUS"), &err) < 0 ||
		   (!env_set("SLURM_STEP_GPUS") &&
		    check_gpus(t, what, "SLURM_JOB_GPUS", getenv("SLURM_JOB_GPUS"), &err) < 0) ||
		   dlrt_gpuplan_alloc_parse(&al, t, visible ? visible :
					    getenv("CUDA_VISIBLE_DEVICES"),
					    getenv("SLURM_STEP_GPUS"), getenv("SLURM_JOB_GPUS"),
					    &err) < 0) {
		goto fail;
	}
	if (ntasks == 0)
		ntasks = al.ngpus > 0 ? al.ngpus : 1;
	cpus = calloc((size_t)ntasks, sizeof(*cpus));
	if (!cpus) {
		dlrt_err_set(&err, "out of memory");
		goto fail;
	}
	for (int i = 0; i < ntasks; i++)
		if (!(cpus[i] = hwloc_bitmap_alloc())) {
			dlrt_err_set(&err, "out of memory");
			goto fail;
		}
	if (cpubind) {
		const char *colon = strchr(cpubind, ':');
		char type[32];

		int rc;

		snprintf(type, sizeof(type), "%.*s", colon ? (int)(colon - cpubind) : 0, cpubind);
		rc = colon ? dlrt_gpuplan_parse_cpu_bind(type, colon + 1, cpus, ntasks, &err) : 0;
		if (rc == 0)
			dlrt_err_set(&err, "--cpu-bind %s: give mask_cpu:LIST or map_cpu:LIST", cpubind);
		if (rc != 1)
			goto fail;
	} else {
		/* The plugin's fallbacks, so that the plan shown is the one it uses. */
		int fit = dlrt_gpuplan_layout_step(t, NULL, ntasks, cpt, dist, cpus, &err);
		int ncpu = hwloc_bitmap_weight(dlrt_gpuplan_topology_cpus(t));

		if (fit < 0)
			goto fail;
		if (fit == DLRT_GPUPLAN_FIT_EVEN)
			printf("note: %d tasks x %d CPUs do not fit in %d CPUs: the CPUs are shared "
			       "out evenly, as the plugin does\n", ntasks, cpt, ncpu);
		else if (fit == DLRT_GPUPLAN_FIT_SHARED)
			printf("note: %d tasks on %d CPUs (oversubscribed): every task gets all "
			       "CPUs, as the plugin does\n", ntasks, ncpu);
	}
	p = dlrt_gpuplan_compute(t, &al, bind, (hwloc_const_cpuset_t const *)cpus, ntasks, &err);
	if (!p)
		goto fail;
	dlrt_gpuplan_print(stdout, "", p, t, &al, NULL, show_env);
	rv = 0;
fail:
	if (rv)
		fprintf(stderr, "dlrt-topo: %s\n", err.msg);
	for (int i = 0; cpus && i < ntasks; i++)
		hwloc_bitmap_free(cpus[i]);
	free(cpus);
	free(bind);
	dlrt_gpuplan_free(p);
	dlrt_gpuplan_topology_free(t);
	return rv;
}
