/* torchrun_opts.c - parsing of --dl-elastic and --dl-nproc-per-node. */
#include "torchrun.h"

#include <stdio.h>
#include <string.h>

/* torchrun's own upper bound is the machine; this only keeps the number sane. */
#define NPROC_MAX 1024u
#define NODES_MAX 100000u

static int set_elastic(void *opts, const void *cfg, const char *arg, struct dlrt_err *err)
{
	struct torchrun_opts *o = opts;
	char min[16], max[16];
	const char *colon = arg ? strchr(arg, ':') : NULL;
	uint32_t lo, hi;
	size_t n;

	(void)cfg;

	if (!colon)
		goto bad;
	n = (size_t)(colon - arg);
	if (n == 0 || n >= sizeof(min) || strlen(colon + 1) >= sizeof(max))
		goto bad;
	memcpy(min, arg, n);
	min[n] = '\0';
	snprintf(max, sizeof(max), "%s", colon + 1);
	if (dlrt_parse_u32(min, 1, NODES_MAX, &lo) < 0 || dlrt_parse_u32(max, 1, NODES_MAX, &hi) < 0 ||
	    lo > hi)
		goto bad;
	o->elastic_min = lo;
	o->elastic_max = hi;
	return 0;
bad:
	return dlrt_err_set(err, "--dl-elastic=%.64s: must be MIN:MAX nodes with 1 <= MIN <= MAX, "
			    "e.g. --dl-elastic=2:3 (run with srun --no-kill)", arg ? arg : "");
}

static int set_nproc(void *opts, const void *cfg, const char *arg, struct dlrt_err *err)
{
	struct torchrun_opts *o = opts;
	uint32_t v;

	(void)cfg;
	if (arg && !strcmp(arg, "gpu")) {
		snprintf(o->nproc_per_node, sizeof(o->nproc_per_node), "gpu");
		return 0;
	}
	if (dlrt_parse_u32(arg, 1, NPROC_MAX, &v) < 0)
		return dlrt_err_set(err, "--dl-nproc-per-node=%.64s: must be a number from 1 to %u, "
				    "or gpu (one worker per GPU the task sees)", arg ? arg : "",
				    NPROC_MAX);
	snprintf(o->nproc_per_node, sizeof(o->nproc_per_node), "%u", v);
	return 0;
}

/* Both refuse another --dl-runtime: given to any other runtime they would
 * silently do nothing. */
const struct dlrt_rt_option dlrt_torchrun_options[] = {
	{ "dl-elastic", "MIN:MAX", "[dlrt] torchrun: go on with MIN to MAX nodes", set_elastic, true },
	{ "dl-nproc-per-node", "N", "[dlrt] torchrun: workers per node (N or gpu)", set_nproc, true },
	{ NULL, NULL, NULL, NULL, false },
};
