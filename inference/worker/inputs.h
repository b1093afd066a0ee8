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
#include <stdint.h>

#include "common/dlrt_err.h"
#include "inference/models/idx.h"

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

/* One 28x28 image from a file's bytes: a binary PGM ("P5", width and height
 * 28, maxval 255, comments allowed in the header) or exactly 784 raw bytes. */
#define DLRT_INPUTS_IMAGE 784
int dlrt_inputs_parse_image(const uint8_t *buf, size_t len, uint8_t out[DLRT_INPUTS_IMAGE],
			    struct dlrt_err *err);

/* Inputs given as a list: a text file with one image file per line (a path,
 * relative to the list's folder unless absolute; blank lines and lines
 * starting with '#' are skipped). Builds an IDX image (N x 28 x 28) in
 * memory, owned by `out` (dlrt_idx_free); query i is line i's image. */
int dlrt_inputs_load_list(struct dlrt_idx *out, const char *list, struct dlrt_err *err);

/* 1 if `path` looks like an IDX file (plain or gzip'd), 0 if not, -1 if unreadable. */
int dlrt_inputs_is_idx(const char *path);

#endif
