/* inputs.h - a job's inputs as the workers read them: mapped, not decompressed.
 *
 * Debian ships Fashion-MNIST gzip'd; decompressing the 60000-image training
 * file takes a worker about half a second, which would stall a job's first
 * task on every worker (and show up as a fake per-query cost). So `submit`,
 * which reads the file anyway to count the inputs, leaves one plain copy in
 * the pool directory (POOL/inputs/, mode 0600, shared by every job that uses
 * the same file), and workers mmap it: loading is instant and the pages come
 * in as tasks touch them.
 */
#ifndef DLRT_INFER_INPUTS_H
#define DLRT_INFER_INPUTS_H

#include <stddef.h>

#include "dlrt_err.h"
#include "models/idx.h"

struct dlrt_inputs {
	struct dlrt_idx idx;
	void *map;      /* mmap'd file, or NULL when idx owns a decompressed copy */
	size_t maplen;
};

/* Plain IDX files are mapped; gzip'd ones are decompressed (dlrt_idx_load). */
int dlrt_inputs_open(struct dlrt_inputs *in, const char *path, struct dlrt_err *err);
void dlrt_inputs_close(struct dlrt_inputs *in);

/* Writes `idx` (loaded from `src`) as a plain IDX file under <pool>/inputs/,
 * unless an identical copy is there; its path goes to out[len]. Returns 0,
 * or -1 (the caller then submits `src` itself). */
int dlrt_inputs_unpack(const struct dlrt_idx *idx, const char *src, const char *pool,
		       char *out, size_t len, struct dlrt_err *err);

#endif
