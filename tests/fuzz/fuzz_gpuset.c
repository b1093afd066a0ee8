/* Fuzz the GPU binding parsers: GPU index lists (CUDA_VISIBLE_DEVICES,
 * SLURM_STEP_GPUS, SLURM_JOB_GPUS), the allocation built from all three,
 * --dl-gpu-bind=closest|none|map:LIST and CPU lists.
 *
 * Input: first byte selects the parser, the rest is the string; for the
 * allocation the rest is split on '\n' into CUDA_VISIBLE_DEVICES,
 * SLURM_STEP_GPUS and SLURM_JOB_GPUS; for srun's CPU binding into
 * SLURM_CPU_BIND_TYPE and SLURM_CPU_BIND_LIST; or a topology path with %n.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpubind/gpuplan.h"

static void check_err(int rc, const struct dlrt_err *err)
{
	/* A failure must leave one non-empty line. */
	if (rc < 0 && (err->msg[0] == '\0' || strchr(err->msg, '\n')))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dlrt_gpuplan_bind bind;
	struct dlrt_gpuplan_alloc al;
	struct dlrt_err err;
	char *s, *f[3] = { NULL, NULL, NULL };
	uint64_t set;
	int rc;

	if (size < 1 || size > 4096)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	err.msg[0] = '\0';
	switch (data[0] % 6) {
	case 0:
		rc = dlrt_gpuplan_parse_gpuset(s, "CUDA_VISIBLE_DEVICES", &set, &err);
		check_err(rc, &err);
		if (rc == 0 && set == 0)
			abort(); /* a valid list names at least one GPU */
		break;
	case 1: {
		hwloc_bitmap_t cs = hwloc_bitmap_alloc();

		rc = dlrt_gpuplan_parse_cpulist(s, cs, &err);
		check_err(rc, &err);
		if (rc == 0 && (hwloc_bitmap_iszero(cs) ||
				hwloc_bitmap_last(cs) >= DLRT_GPUPLAN_CPU_MAX))
			abort();
		hwloc_bitmap_free(cs);
		break;
	}
	case 2:
		(void)dlrt_gpuplan_dist_from_slurm(s);
		rc = dlrt_gpuplan_bind_parse(&bind, s, &err);
		check_err(rc, &err);
		if (rc == 0 && bind.mode == DLRT_GPUPLAN_MAP &&
		    (bind.nmap < 1 || bind.nmap > DLRT_GPUPLAN_MAP_MAX))
			abort();
		break;
	case 4: {
		hwloc_bitmap_t cs[5];
		char *list = strchr(s, '\n');

		if (list)
			*list++ = '\0';
		for (int i = 0; i < 5; i++)
			cs[i] = hwloc_bitmap_alloc();
		rc = dlrt_gpuplan_parse_cpu_bind(s, list, cs, 5, &err);
		check_err(rc, &err);
		for (int i = 0; rc == 1 && i < 5; i++)
			if (hwloc_bitmap_iszero(cs[i]))
				abort(); /* every task gets CPUs */
		for (int i = 0; i < 5; i++)
			hwloc_bitmap_free(cs[i]);
		break;
	}
	case 5: {
		char out[128];

		rc = dlrt_gpuplan_path_expand(s, "node-1", out, sizeof(out), &err);
		check_err(rc, &err);
		if (rc == 0 && strlen(out) >= sizeof(out))
			abort();
		break;
	}
	default: {
		char *p = s;

		for (int i = 0; i < 3 && p; i++) {
			f[i] = p;
			p = strchr(p, '\n');
			if (p)
				*p++ = '\0';
		}
		rc = dlrt_gpuplan_alloc_parse(&al, NULL, f[0], f[1], f[2], &err);
		check_err(rc, &err);
		if (rc == 0)
			for (int i = 1; i < al.ngpus; i++)
				if (al.global[i] <= al.global[i - 1])
					abort();
		break;
	}
	}
	free(s);
	return 0;
}
