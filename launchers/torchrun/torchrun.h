/* torchrun.h - the torchrun runtime's own options (--dl-elastic,
 * --dl-nproc-per-node), kept in its block of struct dlrt_opts (opts.h) and
 * declared to the option table through dlrt_runtime_torchrun.options.
 */
#ifndef DLRT_TORCHRUN_H
#define DLRT_TORCHRUN_H

#include <stdint.h>

#include "runtime/opts.h"

struct torchrun_opts {
	uint32_t elastic_min, elastic_max; /* --dl-elastic=MIN:MAX; 0 = not elastic */
	char nproc_per_node[8];            /* --dl-nproc-per-node: "" = 1, N or "gpu" */
};

_Static_assert(sizeof(struct torchrun_opts) <= DLRT_RT_OPTS_SIZE, "torchrun options fit");

/* --dl-elastic and --dl-nproc-per-node, NULL-terminated (torchrun_opts.c). */
extern const struct dlrt_rt_option dlrt_torchrun_options[];

#endif
