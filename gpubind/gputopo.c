/* gputopo.c - load a node's topology with hwloc and find its GPUs and NICs.
 *
 * Debian's hwloc has no CUDA/NVML component, so an NVIDIA GPU is normally a
 * plain PCI device (vendor 0x10de, display class 0x03xx: 0300 VGA, 0302 3D). Topologies
 * exported on a machine with those components also carry cudaN/nvmlN (or
 * opencl, rsmi) OS devices below the PCI device; both ways lead to the same
 * PCI device, which is what gets numbered. Locality is the cpuset of the
 * device's first non-I/O ancestor (a Package, Die, Group or NUMA parent), so
 * it works the same on an XML file as on the live node (the sysfs-based
 * hwloc_cuda_get_device_cpuset() would not).
 */
#include "gpuplan.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int is_gpu_pcidev(hwloc_obj_t o)
{
	unsigned cls = o->attr->pcidev.class_id;

	/* Base class 0x03 (display): 0300 VGA (GeForce, some Quadro), 0302 3D
	 * (Tesla, A100, H100), 0380 other; the GPU's audio function (0403) and
	 * NVSwitch bridges (0680) are not GPUs. */
	return o->attr->pcidev.vendor_id == DLRT_GPUPLAN_VENDOR_NVIDIA && (cls >> 8) == 0x03;
}

/* An OS device that makes its PCI device a GPU: cuda/nvml/opencl for NVIDIA
 * devices, rsmi (ROCm SMI) for AMD ones. OpenCL also lists other vendors'
 * display devices (an AMD card without ROCm, an Intel iGPU): neither CUDA nor
 * ROCm would number those, so they are no GPUs here. */
static int is_gpu_osdev(const char *n, hwloc_obj_t pci)
{
	static const char *const nv[] = { "cuda", "nvml", "opencl" };

	if (!n || !pci)
		return 0;
	if (strncmp(n, "rsmi", 4) == 0)
		return 1;
	if (pci->attr->pcidev.vendor_id != DLRT_GPUPLAN_VENDOR_NVIDIA)
		return 0;
	for (size_t i = 0; i < sizeof(nv) / sizeof(nv[0]); i++)
		if (strncmp(n, nv[i], strlen(nv[i])) == 0)
			return 1;
	return 0;
}

static hwloc_obj_t pci_parent(hwloc_obj_t o)
{
	while (o && o->type != HWLOC_OBJ_PCI_DEVICE)
		o = o->parent;
	return o;
}

static void format_busid(hwloc_obj_t pci, char *buf, size_t len)
{
	if (!pci) {
		buf[0] = '\0';
		return;
	}
	snprintf(buf, len, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain & 0xffffu,
		 pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
}

static long busid_key(hwloc_obj_t pci)
{
	if (!pci)
		return -1;
	return ((long)(pci->attr->pcidev.domain & 0xffffu) << 24) |
	       ((long)pci->attr->pcidev.bus << 16) | ((long)pci->attr->pcidev.dev << 8) |
	       pci->attr->pcidev.func;
}

static int locality(hwloc_topology_t topo, hwloc_obj_t io, hwloc_bitmap_t *out)
{
	hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, io);

	*out = hwloc_bitmap_dup(anc && anc->cpuset ? anc->cpuset
						   : hwloc_topology_get_topology_cpuset(topo));
	return *out ? 0 : -1;
}

static struct dlrt_gpuplan_gpu *add_gpu(struct dlrt_gpuplan_topo *t, hwloc_obj_t pci)
{
	struct dlrt_gpuplan_gpu *g;
	hwloc_obj_t up;

	for (int i = 0; i < t->ngpus; i++)
		if (t->gpus[i].pcidev == pci)
			return &t->gpus[i];
	if (t->ngpus == DLRT_GPUPLAN_GPU_MAX)
		return NULL;
	g = &t->gpus[t->ngpus];
	memset(g, 0, sizeof(*g));
	g->pcidev = pci;
	g->vendor = pci->attr->pcidev.vendor_id;
	g->device = pci->attr->pcidev.device_id;
	g->pci_class = pci->attr->pcidev.class_id;
	format_busid(pci, g->busid, sizeof(g->busid));
	if (locality(t->topo, pci, &g->cpuset) < 0)
		return NULL;
	up = hwloc_get_non_io_ancestor_obj(t->topo, pci);
	while (up && up->parent && hwloc_bitmap_isequal(up->cpuset, g->cpuset))
		up = up->parent;
	g->cpuset_up = hwloc_bitmap_dup(up && up->cpuset ? up->cpuset : g->cpuset);
	if (!g->cpuset_up) {
		hwloc_bitmap_free(g->cpuset);
		return NULL;
	}
	t->ngpus++;
	return g;
}

static int cmp_gpu(const void *a, const void *b)
{
	long ka = busid_key(((const struct dlrt_gpuplan_gpu *)a)->pcidev);
	long kb = busid_key(((const struct dlrt_gpuplan_gpu *)b)->pcidev);

	return (ka > kb) - (ka < kb);
}

static int cmp_nic(const void *a, const void *b)
{
	const struct dlrt_gpuplan_nic *x = a, *y = b;
	long ka = busid_key(pci_parent(x->obj)), kb = busid_key(pci_parent(y->obj));

	if (ka != kb)
		return (ka > kb) - (ka < kb);
	return strcmp(x->name, y->name);
}

/* hwloc's verbs component records "Port<N>State"; 4 is IBV_PORT_ACTIVE. */
static int active_port(hwloc_obj_t o)
{
	for (unsigned i = 0; i < o->infos_count; i++) {
		unsigned port;
		char tail[8];

		if (sscanf(o->infos[i].name, "Port%uStat%7s", &port, tail) == 2 &&
		    strcmp(tail, "e") == 0 && strcmp(o->infos[i].value, "4") == 0 && port > 0 &&
		    port < 1000)
			return (int)port;
	}
	return 1;
}

static int find_devices(struct dlrt_gpuplan_topo *t, struct dlrt_err *err)
{
	hwloc_obj_t o = NULL;

	while ((o = hwloc_get_next_pcidev(t->topo, o)))
		if (is_gpu_pcidev(o) && !add_gpu(t, o))
			goto full;
	o = NULL;
	while ((o = hwloc_get_next_osdev(t->topo, o))) {
		hwloc_obj_osdev_type_t ty = o->attr->osdev.type;
		hwloc_obj_t pci = pci_parent(o);

		if (is_gpu_osdev(o->name, pci)) {
			struct dlrt_gpuplan_gpu *g = add_gpu(t, pci);
			size_t len;

			if (!g)
				goto full;
			len = strlen(g->osdev);
			snprintf(g->osdev + len, sizeof(g->osdev) - len, "%s%s", len ? "," : "",
				 o->name);
		} else if ((ty == HWLOC_OBJ_OSDEV_NETWORK || ty == HWLOC_OBJ_OSDEV_OPENFABRICS) &&
			   o->name && t->nnics < DLRT_GPUPLAN_NIC_MAX) {
			struct dlrt_gpuplan_nic *n = &t->nics[t->nnics];

			memset(n, 0, sizeof(*n));
			snprintf(n->name, sizeof(n->name), "%s", o->name);
			n->openfabrics = ty == HWLOC_OBJ_OSDEV_OPENFABRICS;
			n->port = n->openfabrics ? active_port(o) : 0;
			n->obj = o;
			format_busid(pci, n->busid, sizeof(n->busid));
			if (locality(t->topo, o, &n->cpuset) < 0)
				return dlrt_err_set(err, "out of memory reading the topology");
			t->nnics++;
		}
	}
	/* Index i = i-th GPU in PCI bus id order: NVML's order, hence Slurm's
	 * (gres.conf written in that order) and CUDA's with PCI_BUS_ID. */
	qsort(t->gpus, (size_t)t->ngpus, sizeof(t->gpus[0]), cmp_gpu);
	for (int i = 0; i < t->ngpus; i++) {
		struct dlrt_gpuplan_gpu *g = &t->gpus[i];

		/* An rsmi device is ROCm's even on another vendor's card. */
		g->index = i;
		g->rt = g->vendor == DLRT_GPUPLAN_VENDOR_AMD || strstr(g->osdev, "rsmi") ?
				DLRT_GPUPLAN_RT_ROCM : DLRT_GPUPLAN_RT_CUDA;
		g->rt_index = t->nrt[g->rt]++;
	}
	qsort(t->nics, (size_t)t->nnics, sizeof(t->nics[0]), cmp_nic);
	for (int i = 0; i < t->nnics; i++)
		for (int j = 0; j < t->nnics; j++)
			if (!t->nics[i].openfabrics && t->nics[j].openfabrics &&
			    t->nics[i].busid[0] && strcmp(t->nics[i].busid, t->nics[j].busid) == 0)
				t->nics[i].ipoib = 1;
	return 0;
full:
	return dlrt_err_set(err, "the topology has more than %d GPUs (or memory ran out): dlrt "
			    "handles at most %d per node", DLRT_GPUPLAN_GPU_MAX, DLRT_GPUPLAN_GPU_MAX);
}

/* At most this much of a refused file is read to find out why. */
#define WHY_READ_MAX (64u << 20)

/* The file hwloc just refused (a path of the admin or of the command-line
 * user: slurmstepd loads a job's own file from memory), as bytes. */
static char *read_refused(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	char *buf = NULL;
	size_t got = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
	    (uint64_t)st.st_size > WHY_READ_MAX || !(buf = malloc((size_t)st.st_size + 1)))
		goto out;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	*len = got;
out:
	close(fd);
	return buf;
}

/* hwloc says why only on stderr (HWLOC_XML_VERBOSE) and often leaves errno
 * at 0 ("Success"): name the cause found in the text, else errno's. */
static void load_failed(struct dlrt_err *err, int e, const char *xml_path, const char *xml,
			size_t xml_len)
{
	char why[400] = "";
	char *own = NULL;

	if (!xml_path) {
		dlrt_err_errno(err, e, "hwloc could not load the node's topology");
		return;
	}
	if (!xml && (own = read_refused(xml_path, &xml_len)))
		xml = own;
	if (xml && dlrt_gpuplan_xml_why(xml, xml_len, why, sizeof(why)))
		dlrt_err_set(err, "hwloc could not load topology file %s: %s", xml_path, why);
	else if (e != 0)
		dlrt_err_errno(err, e, "hwloc could not load topology file %s (check that it is "
			       "hwloc XML from lstopo --of xml; HWLOC_XML_VERBOSE=1 shows hwloc's "
			       "reason)", xml_path);
	else
		dlrt_err_set(err, "hwloc could not load topology file %s and gave no reason: "
			     "HWLOC_XML_VERBOSE=1 dlrt-topo --xml %s shows hwloc's own messages",
			     xml_path, xml_path);
	free(own);
}

/* From the live node (xml_path and xml NULL), a file, or bytes in memory
 * named `xml_path` in errors. */
static struct dlrt_gpuplan_topo *load(const char *xml_path, const char *xml, size_t xml_len,
				      unsigned flags, struct dlrt_err *err)
{
	struct dlrt_gpuplan_topo *t = calloc(1, sizeof(*t));

	if (!t) {
		dlrt_err_set(err, "out of memory loading the topology");
		return NULL;
	}
	if (hwloc_topology_init(&t->topo) < 0) {
		free(t);
		dlrt_err_errno(err, errno, "hwloc_topology_init failed");
		return NULL;
	}
	/* I/O objects are dropped by default, also from XML input. */
	hwloc_topology_set_io_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	/* A live load runs inside slurmstepd: keep hwloc's discovery to sysfs and
	 * PCI. The gl component opens X displays and opencl initialises every
	 * OpenCL driver (on GPU nodes, CUDA itself): slow, and not ours to do
	 * there. NVIDIA GPUs are found by PCI class anyway; an XML file keeps
	 * whatever OS devices the exporting machine saw. */
	hwloc_topology_set_components(t->topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "gl");
	hwloc_topology_set_components(t->topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "opencl");
	if (xml) {
		t->from_xml = 1;
		/* hwloc wants the length with a terminating NUL: the caller's
		 * buffer has one past xml_len. */
		if (xml_len > INT_MAX - 1 || xml[xml_len] != '\0' ||
		    hwloc_topology_set_xmlbuffer(t->topo, xml, (int)xml_len + 1) < 0) {
			dlrt_err_errno(err, errno, "cannot use topology file %s (it must be hwloc "
				       "XML, e.g. from lstopo --of xml)", xml_path);
			goto fail;
		}
	} else if (xml_path) {
		t->from_xml = 1;
		if (hwloc_topology_set_xml(t->topo, xml_path) < 0) {
			dlrt_err_errno(err, errno, "cannot use topology file %s (check the path and "
				       "that it is hwloc XML, e.g. from lstopo --of xml)", xml_path);
			goto fail;
		}
	}
	if (hwloc_topology_load(t->topo) < 0) {
		int e = errno;

		load_failed(err, e, xml_path, xml, xml_len);
		goto fail;
	}
	t->cpus = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(t->topo));
	if (!t->cpus) {
		dlrt_err_set(err, "out of memory loading the topology");
		goto fail;
	}
	if (!t->from_xml && (flags & DLRT_GPUPLAN_LOAD_RESTRICT_CPUBIND)) {
		hwloc_bitmap_t b = hwloc_bitmap_alloc();

		if (b && hwloc_get_cpubind(t->topo, b, HWLOC_CPUBIND_PROCESS) == 0 &&
		    hwloc_bitmap_intersects(b, t->cpus))
			hwloc_bitmap_and(t->cpus, t->cpus, b);
		hwloc_bitmap_free(b);
	}
	if (find_devices(t, err) < 0)
		goto fail;
	return t;
fail:
	dlrt_gpuplan_topology_free(t);
	return NULL;
}

struct dlrt_gpuplan_topo *dlrt_gpuplan_topology_load(const char *xml_path, unsigned flags,
						     struct dlrt_err *err)
{
	return load(xml_path, NULL, 0, flags, err);
}

struct dlrt_gpuplan_topo *dlrt_gpuplan_topology_load_xml(const char *xml, size_t len,
							 const char *name, struct dlrt_err *err)
{
	return load(name ? name : "(in memory)", xml, len, 0, err);
}

void dlrt_gpuplan_topology_free(struct dlrt_gpuplan_topo *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->ngpus; i++) {
		hwloc_bitmap_free(t->gpus[i].cpuset);
		hwloc_bitmap_free(t->gpus[i].cpuset_up);
	}
	for (int i = 0; i < t->nnics; i++)
		hwloc_bitmap_free(t->nics[i].cpuset);
	hwloc_bitmap_free(t->cpus);
	if (t->topo)
		hwloc_topology_destroy(t->topo);
	free(t);
}

hwloc_const_cpuset_t dlrt_gpuplan_topology_cpus(const struct dlrt_gpuplan_topo *t)
{
	return t->cpus ? t->cpus : hwloc_topology_get_allowed_cpuset(t->topo);
}

int dlrt_gpuplan_cores_to_cpus(const struct dlrt_gpuplan_topo *t, const char *cores,
			       hwloc_bitmap_t out, struct dlrt_err *err)
{
	hwloc_bitmap_t c = hwloc_bitmap_alloc();
	int ncores = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_CORE), i, rv = -1;

	if (!c)
		return dlrt_err_set(err, "out of memory");
	if (dlrt_gpuplan_parse_cpulist(cores, c, err) < 0)
		goto fail;
	hwloc_bitmap_zero(out);
	hwloc_bitmap_foreach_begin(i, c)
		hwloc_obj_t core = hwloc_get_obj_by_type(t->topo, HWLOC_OBJ_CORE, (unsigned)i);

		if (!core) {
			dlrt_err_set(err, "Slurm's core list %.64s names core %d but the topology has "
				     "cores 0-%d only: the topology file does not describe this "
				     "node", cores, i, ncores - 1);
			goto fail;
		}
		hwloc_bitmap_or(out, out, core->cpuset);
	hwloc_bitmap_foreach_end();
	rv = 0;
fail:
	hwloc_bitmap_free(c);
	return rv;
}

/* ---- task layouts for dlrt-topo ------------------------------------------- */

static int take_block(hwloc_bitmap_t out, const int *pus, int npu, int *next, int c)
{
	hwloc_bitmap_zero(out);
	for (int k = 0; k < c; k++) {
		if (*next >= npu)
			return -1;
		hwloc_bitmap_set(out, (unsigned)pus[(*next)++]);
	}
	return 0;
}

int dlrt_gpuplan_layout(const struct dlrt_gpuplan_topo *t, hwloc_const_cpuset_t cpus, int ntasks,
			int cpus_per_task, enum dlrt_gpuplan_dist dist, hwloc_bitmap_t *out,
			struct dlrt_err *err)
{
	int npu_all = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_PU);
	int npkg = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_PACKAGE);
	int *pus = NULL, *pkg_of = NULL, npu = 0, rv = -1, c = cpus_per_task;

	if (!cpus)
		cpus = dlrt_gpuplan_topology_cpus(t);
	if (ntasks < 1 || ntasks > DLRT_GPUPLAN_TASK_MAX)
		return dlrt_err_set(err, "%d tasks: give between 1 and %d", ntasks,
				    DLRT_GPUPLAN_TASK_MAX);
	if (npkg < 1)
		npkg = 1;
	pus = calloc((size_t)npu_all + 1, sizeof(*pus));
	pkg_of = calloc((size_t)npu_all + 1, sizeof(*pkg_of));
	if (!pus || !pkg_of) {
		dlrt_err_set(err, "out of memory laying out tasks");
		goto fail;
	}
	/* hwloc logical order: cores of package 0 first, SMT siblings together. */
	for (int i = 0; i < npu_all; i++) {
		hwloc_obj_t pu = hwloc_get_obj_by_type(t->topo, HWLOC_OBJ_PU, (unsigned)i);
		hwloc_obj_t pkg;

		if (!hwloc_bitmap_isset(cpus, pu->os_index))
			continue;
		pkg = hwloc_get_ancestor_obj_by_type(t->topo, HWLOC_OBJ_PACKAGE, pu);
		pkg_of[npu] = pkg ? (int)pkg->logical_index : 0;
		pus[npu++] = (int)pu->os_index;
	}
	if (c == 0)
		c = npu / ntasks;
	if (c < 1 || (long)c * ntasks > npu) {
		dlrt_err_set(err, "%d tasks x %d CPUs need %ld CPUs but %d are available: lower "
			     "--tasks or --cpus-per-task", ntasks, c < 1 ? 1 : c,
			     (long)(c < 1 ? 1 : c) * ntasks, npu);
		goto fail;
	}
	if (dist == DLRT_GPUPLAN_BLOCK) {
		int next = 0;

		for (int i = 0; i < ntasks; i++)
			take_block(out[i], pus, npu, &next, c);
	} else {
		/* Per package: its PUs in order, then a cursor into them. */
		int *bypkg = calloc((size_t)npu + 1, sizeof(*bypkg));
		int *start = calloc((size_t)npkg + 1, sizeof(*start));
		int *cur = calloc((size_t)npkg, sizeof(*cur));
		int k = 0;

		if (!bypkg || !start || !cur) {
			free(bypkg), free(start), free(cur);
			dlrt_err_set(err, "out of memory laying out tasks");
			goto fail;
		}
		for (int p = 0; p < npkg; p++) {
			start[p] = k;
			for (int i = 0; i < npu; i++)
				if (pkg_of[i] == p)
					bypkg[k++] = pus[i];
			cur[p] = start[p];
		}
		start[npkg] = k;
		for (int i = 0; i < ntasks; i++) {
			int step, got = 0;

			/* Package i % npkg, or the next one with room (as Slurm's cyclic:
			 * "all CPUs of a task on one socket if possible")... */
			for (step = 0; step < npkg; step++) {
				int p = (i + step) % npkg;

				if (start[p + 1] - cur[p] >= c) {
					take_block(out[i], bypkg, start[p + 1], &cur[p], c);
					break;
				}
			}
			if (step < npkg)
				continue;
			/* ...else whatever is left, package after package. */
			hwloc_bitmap_zero(out[i]);
			for (step = 0; step < npkg && got < c; step++) {
				int p = (i + step) % npkg;

				while (cur[p] < start[p + 1] && got < c) {
					hwloc_bitmap_set(out[i], (unsigned)bypkg[cur[p]++]);
					got++;
				}
			}
		}
		free(bypkg), free(start), free(cur);
	}
	rv = 0;
fail:
	free(pus);
	free(pkg_of);
	return rv;
}

int dlrt_gpuplan_layout_step(const struct dlrt_gpuplan_topo *t, hwloc_const_cpuset_t cpus,
			     int ntasks, int cpus_per_task, enum dlrt_gpuplan_dist dist,
			     hwloc_bitmap_t *out, struct dlrt_err *err)
{
	if (ntasks < 1 || ntasks > DLRT_GPUPLAN_TASK_MAX)
		return dlrt_err_set(err, "%d tasks: give between 1 and %d", ntasks,
				    DLRT_GPUPLAN_TASK_MAX);
	if (!cpus)
		cpus = dlrt_gpuplan_topology_cpus(t);
	if (dlrt_gpuplan_layout(t, cpus, ntasks, cpus_per_task, dist, out, err) == 0)
		return DLRT_GPUPLAN_FIT_EXACT;
	if (cpus_per_task != 0 && dlrt_gpuplan_layout(t, cpus, ntasks, 0, dist, out, err) == 0)
		return DLRT_GPUPLAN_FIT_EVEN;
	/* Slurm runs more tasks than CPUs with --overcommit or --oversubscribe:
	 * the tasks share the CPUs, and the GPU plan still gives each its GPUs. */
	for (int i = 0; i < ntasks; i++)
		hwloc_bitmap_copy(out[i], cpus);
	return DLRT_GPUPLAN_FIT_SHARED;
}

void dlrt_gpuplan_format_cpus(hwloc_const_bitmap_t set, char *buf, size_t len)
{
	if (!set || hwloc_bitmap_iszero(set)) {
		snprintf(buf, len, "-");
		return;
	}
	hwloc_bitmap_list_snprintf(buf, len, set);
}

void dlrt_gpuplan_format_gpus(const int *idx, int n, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && off < len; i++) {
		int w = snprintf(buf + off, len - off, "%s%d", i ? "," : "", idx[i]);

		if (w < 0)
			break;
		off += (size_t)w;
	}
}
