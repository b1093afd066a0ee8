/* gpuparse.c - the strings of GPU binding: index lists, CPU lists, map:LIST,
 * and the step's allocation from Slurm's variables.
 *
 * These come from the user (--dl-gpu-bind) or from the environment, so each
 * parser is strict, bounded and fuzzed (tests/fuzz/fuzz_gpuset.c).
 */
#include "gpuplan.h"

#include <ctype.h>
#include <string.h>

/* Reads a decimal number of at most 9 digits at *p; -1 if there is none. */
static long read_num(const char **p)
{
	const char *s = *p;
	long v = 0;
	int n = 0;

	while (isdigit((unsigned char)*s)) {
		if (++n > 9)
			return -1;
		v = v * 10 + (*s - '0');
		s++;
	}
	if (n == 0)
		return -1;
	*p = s;
	return v;
}

/* Reads one "N" or "N-M" (N <= M) of a comma list at *p, into lo..hi;
 * -1 with *p where it is malformed. The GPU and CPU lists share it. */
static int read_range(const char **p, long *lo, long *hi)
{
	*lo = read_num(p);
	if (*lo < 0)
		return -1;
	*hi = *lo;
	if (**p == '-') {
		(*p)++;
		*hi = read_num(p);
		if (*hi < *lo)
			return -1;
	}
	return 0;
}

/* Copies at most len-4 characters of a bad value for an error line, with
 * control characters replaced so the error stays one printable line. */
static const char *clip(const char *s, char *buf, size_t len)
{
	size_t i;

	for (i = 0; s[i] && i + 4 < len; i++)
		buf[i] = isprint((unsigned char)s[i]) ? s[i] : '?';
	if (s[i]) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

int dlrt_gpuplan_parse_gpuset(const char *s, const char *what, uint64_t *set,
			      struct dlrt_err *err)
{
	char cb[44];
	const char *p = s;

	*set = 0;
	if (!s || !*s)
		return dlrt_err_set(err, "%s is empty: it must list GPU indices such as 0,1 or 0-3",
				    what);
	if (strncmp(s, "GPU-", 4) == 0 || strncmp(s, "MIG-", 4) == 0)
		return dlrt_err_set(err, "%s=%s holds GPU UUIDs: dlrt needs indices; let Slurm set it "
				    "or use --dl-gpu-bind=none", what, clip(s, cb, sizeof(cb)));
	if (strcmp(s, "NoDevFiles") == 0)
		return dlrt_err_set(err, "%s=NoDevFiles: the gres has no File= device list; add "
				    "File=/dev/nvidiaN to gres.conf or use --dl-gpu-bind=none", what);
	for (;;) {
		long lo, hi;

		if (read_range(&p, &lo, &hi) < 0)
			goto bad;
		if (hi >= DLRT_GPUPLAN_GPU_MAX)
			return dlrt_err_set(err, "%s=%s names GPU %ld but dlrt handles GPUs 0-%d per node",
					    what, clip(s, cb, sizeof(cb)), hi, DLRT_GPUPLAN_GPU_MAX - 1);
		for (long i = lo; i <= hi; i++) {
			if (*set & (UINT64_C(1) << i))
				return dlrt_err_set(err, "%s=%s names GPU %ld twice: list each GPU once",
						    what, clip(s, cb, sizeof(cb)), i);
			*set |= UINT64_C(1) << i;
		}
		if (*p == '\0')
			return 0;
		if (*p != ',')
			goto bad;
		p++;
	}
bad:
	return dlrt_err_set(err, "%s=%s is not a GPU index list (bad at offset %d): write it like "
			    "0,1,4-7", what, clip(s, cb, sizeof(cb)), (int)(p - s));
}

int dlrt_gpuplan_parse_cpulist(const char *s, hwloc_bitmap_t set, struct dlrt_err *err)
{
	char cb[44];
	const char *p = s;

	hwloc_bitmap_zero(set);
	if (!s || !*s)
		return dlrt_err_set(err, "empty CPU list: write CPUs like 0-5,12");
	for (;;) {
		long lo, hi;

		if (read_range(&p, &lo, &hi) < 0)
			goto bad;
		if (hi >= DLRT_GPUPLAN_CPU_MAX)
			return dlrt_err_set(err, "CPU list %s names CPU %ld, past the limit %d",
					    clip(s, cb, sizeof(cb)), hi, DLRT_GPUPLAN_CPU_MAX - 1);
		hwloc_bitmap_set_range(set, (unsigned)lo, (int)hi);
		if (*p == '\0')
			return 0;
		if (*p != ',')
			goto bad;
		p++;
	}
bad:
	return dlrt_err_set(err, "CPU list %s is malformed at offset %d: write CPUs like 0-5,12",
			    clip(s, cb, sizeof(cb)), (int)(p - s));
}

static int parse_map(struct dlrt_gpuplan_bind *b, const char *list, struct dlrt_err *err)
{
	char cb[44];
	const char *p = list;

	if (!*p)
		return dlrt_err_set(err, "--dl-gpu-bind=map: needs a GPU per task, e.g. map:0,1,2,3");
	for (;;) {
		uint64_t set = 0;
		long rep = 1;

		for (;;) {
			long g = read_num(&p);

			if (g < 0)
				goto bad;
			if (g >= DLRT_GPUPLAN_GPU_MAX)
				return dlrt_err_set(err, "--dl-gpu-bind=map:%s names GPU %ld but dlrt "
						    "handles GPUs 0-%d", clip(list, cb, sizeof(cb)),
						    g, DLRT_GPUPLAN_GPU_MAX - 1);
			set |= UINT64_C(1) << g;
			if (*p != '+')
				break;
			p++;
		}
		if (*p == '*') {
			p++;
			rep = read_num(&p);
			if (rep < 1)
				goto bad;
		}
		if (rep > DLRT_GPUPLAN_MAP_MAX - b->nmap)
			return dlrt_err_set(err, "--dl-gpu-bind=map:%s has more than %d entries",
					    clip(list, cb, sizeof(cb)), DLRT_GPUPLAN_MAP_MAX);
		while (rep-- > 0)
			b->map[b->nmap++] = set;
		if (*p == '\0')
			return 0;
		if (*p != ',')
			goto bad;
		p++;
	}
bad:
	return dlrt_err_set(err, "--dl-gpu-bind=map:%s is malformed at offset %d: write one GPU "
			    "per task like map:0,1 or map:0*2,1*2 or map:0+1,2+3",
			    clip(list, cb, sizeof(cb)), (int)(p - list));
}

int dlrt_gpuplan_bind_parse(struct dlrt_gpuplan_bind *b, const char *spec, struct dlrt_err *err)
{
	char cb[44];

	memset(b, 0, sizeof(*b));
	if (!spec || strcmp(spec, "closest") == 0) {
		b->mode = DLRT_GPUPLAN_CLOSEST;
		return 0;
	}
	if (strcmp(spec, "none") == 0) {
		b->mode = DLRT_GPUPLAN_NONE;
		return 0;
	}
	if (strncmp(spec, "map:", 4) == 0 || strncmp(spec, "map_gpu:", 8) == 0) {
		b->mode = DLRT_GPUPLAN_MAP;
		return parse_map(b, strchr(spec, ':') + 1, err);
	}
	return dlrt_err_set(err, "--dl-gpu-bind=%s is unknown: use closest, none or map:LIST",
			    clip(spec, cb, sizeof(cb)));
}

static int set_to_list(uint64_t set, int *out)
{
	int n = 0;

	for (int i = 0; i < DLRT_GPUPLAN_GPU_MAX; i++)
		if (set & (UINT64_C(1) << i))
			out[n++] = i;
	return n;
}

static int is_set(const char *s)
{
	return s && *s;
}

int dlrt_gpuplan_alloc_parse(struct dlrt_gpuplan_alloc *a, const struct dlrt_gpuplan_topo *topo,
			     const char *cvd, const char *step_gpus, const char *job_gpus,
			     struct dlrt_err *err)
{
	uint64_t list = 0, vis = 0;
	const char *src, *srcval = NULL;
	char cb[44], cb2[44];
	int n;

	memset(a, 0, sizeof(*a));
	if (is_set(step_gpus)) {
		src = "SLURM_STEP_GPUS";
		srcval = step_gpus;
		if (dlrt_gpuplan_parse_gpuset(step_gpus, src, &list, err) < 0)
			return -1;
	} else if (is_set(job_gpus)) {
		src = "SLURM_JOB_GPUS";
		srcval = job_gpus;
		if (dlrt_gpuplan_parse_gpuset(job_gpus, src, &list, err) < 0)
			return -1;
	} else if (is_set(cvd)) {
		src = "CUDA_VISIBLE_DEVICES";
		if (dlrt_gpuplan_parse_gpuset(cvd, src, &list, err) < 0)
			return -1;
	} else {
		/* Outside Slurm's gres (or no GPU requested): every GPU hwloc found. */
		src = "topology";
		if (topo)
			for (int i = 0; i < topo->ngpus; i++)
				list |= UINT64_C(1) << i;
	}
	a->source = src;
	n = set_to_list(list, a->global);
	a->ngpus = n;
	if (topo && n > 0 && a->global[n - 1] >= topo->ngpus) {
		if (topo->ngpus == 0)
			return dlrt_err_set(err, "%s names GPU %d but hwloc found no NVIDIA GPU on this "
					    "node: give the node's topology with --dl-topology=FILE "
					    "(or topology_xml=) or use --dl-gpu-bind=none",
					    src, a->global[n - 1]);
		return dlrt_err_set(err, "%s names GPU %d but the topology has GPUs 0-%d: check that "
				    "gres.conf File= lists this node's GPUs in PCI bus order",
				    src, a->global[n - 1], topo->ngpus - 1);
	}
	/* Renumbering (task/cgroup + ConstrainDevices): CUDA_VISIBLE_DEVICES holds
	 * 0..n-1 while SLURM_STEP_GPUS keeps the node-wide indices. A value that is
	 * in the list itself is taken as node-wide, unless it is exactly 0..n-1. */
	if (is_set(cvd) && srcval && n > 0) {
		uint64_t first_n = n == 64 ? UINT64_MAX : (UINT64_C(1) << n) - 1;

		if (dlrt_gpuplan_parse_gpuset(cvd, "CUDA_VISIBLE_DEVICES", &vis, err) < 0)
			return -1;
		if (vis == first_n && list != first_n)
			a->renumbered = 1;
		else if ((vis & ~list) == 0)
			a->renumbered = 0;
		else if ((vis & ~first_n) == 0)
			a->renumbered = 1;
		else
			return dlrt_err_set(err, "CUDA_VISIBLE_DEVICES=%s does not match %s=%s: "
					    "do not set CUDA_VISIBLE_DEVICES by hand in the job",
					    clip(cvd, cb, sizeof(cb)), src,
					    clip(srcval, cb2, sizeof(cb2)));
	}
	return 0;
}

enum dlrt_gpuplan_dist dlrt_gpuplan_dist_from_slurm(const char *d)
{
	const char *colon = d ? strchr(d, ':') : NULL;

	if (colon && strncmp(colon + 1, "block", 5) == 0 &&
	    (colon[6] == '\0' || colon[6] == ':' || colon[6] == ','))
		return DLRT_GPUPLAN_BLOCK;
	return DLRT_GPUPLAN_CYCLIC;
}

/* One entry of SLURM_CPU_BIND_LIST: "0x3f" (mask_cpu) or "5" / "0x5" (map_cpu). */
static int cpu_bind_entry(const char *s, size_t n, int is_mask, hwloc_bitmap_t out)
{
	char buf[1100];
	unsigned long v = 0;
	size_t i = 0;
	int hex = n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');

	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (is_mask) {
		/* Slurm also accepts masks without 0x; both are hex. */
		for (i = hex ? 2 : 0; i < n; i++)
			if (!isxdigit((unsigned char)buf[i]))
				return -1;
		if (i == (hex ? 2u : 0u))
			return -1;
		return hwloc_bitmap_taskset_sscanf(out, buf) < 0 ? -1 : 0;
	}
	for (i = hex ? 2 : 0; i < n; i++) {
		int d = isdigit((unsigned char)buf[i]) ? buf[i] - '0' :
			hex && isxdigit((unsigned char)buf[i]) ? (tolower(buf[i]) - 'a' + 10) : -1;

		if (d < 0)
			return -1;
		v = v * (hex ? 16 : 10) + (unsigned long)d;
		if (v >= DLRT_GPUPLAN_CPU_MAX)
			return -1;
	}
	if (i == (hex ? 2u : 0u))
		return -1;
	hwloc_bitmap_only(out, (unsigned)v);
	return 0;
}

int dlrt_gpuplan_parse_cpu_bind(const char *type, const char *list, hwloc_bitmap_t *out,
				int ntasks, struct dlrt_err *err)
{
	char cb[44];
	int is_mask, nent = 0;
	const char *p;

	if (!type || !list || !*list)
		return 0;
	if (strstr(type, "mask_cpu"))
		is_mask = 1;
	else if (strstr(type, "map_cpu"))
		is_mask = 0;
	else
		return 0; /* cores, sockets, ldoms, none: Slurm computes the masks */
	/* Slurm reuses the list from its start when there are more tasks. */
	for (p = list; *p; nent++) {
		size_t n = strcspn(p, ",");

		p += n + (p[n] == ',');
	}
	for (int i = 0; i < ntasks; i++) {
		int k = i % nent;
		size_t n;

		p = list;
		while (k-- > 0)
			p += strcspn(p, ",") + 1;
		n = strcspn(p, ",");
		if (cpu_bind_entry(p, n, is_mask, out[i]) < 0 || hwloc_bitmap_iszero(out[i]))
			return dlrt_err_set(err, "SLURM_CPU_BIND_LIST=%s is not a %s list: fix "
					    "srun --cpu-bind=%s:LIST", clip(list, cb, sizeof(cb)),
					    is_mask ? "CPU mask" : "CPU id", is_mask ? "mask_cpu" :
					    "map_cpu");
	}
	return 1;
}

int dlrt_gpuplan_path_expand(const char *pattern, const char *node, char *out, size_t len,
			     struct dlrt_err *err)
{
	size_t o = 0;

	for (const char *p = pattern; *p; p++) {
		const char *add = NULL;
		char one[2] = { *p, '\0' };

		if (*p == '%' && p[1] == 'n') {
			add = node;
			p++;
		} else if (*p == '%' && p[1] == '%') {
			add = "%";
			p++;
		} else {
			add = one;
		}
		if (o + strlen(add) >= len) {
			char cb[44];

			return dlrt_err_set(err, "topology path %s is too long once %%n is "
					    "replaced: use a shorter path", clip(pattern, cb, sizeof(cb)));
		}
		memcpy(out + o, add, strlen(add));
		o += strlen(add);
	}
	out[o] = '\0';
	return 0;
}
