/* idx.h - strict reader for IDX files (the MNIST / Fashion-MNIST format).
 *
 * An IDX file is: two zero bytes, a type byte (0x08 = unsigned byte), the
 * number of dimensions, one big-endian uint32 per dimension, then the items in
 * row-major order. Debian's dataset-fashion-mnist ships them gzip'd, so the
 * file loader reads plain and gzip'd files alike (zlib). Everything is
 * validated before use: magic, type, dimension count, zero or overflowing
 * sizes, and that the data is exactly as long as the header says; the
 * allocation is bounded by DLRT_IDX_MAX_BYTES and by the bytes actually read.
 */
#ifndef DLRT_IDX_H
#define DLRT_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "common/dlrt_err.h"

#define DLRT_IDX_MAX_DIMS 4
#define DLRT_IDX_MAX_BYTES ((size_t)512 << 20) /* decompressed file size */
#define DLRT_IDX_TYPE_U8 0x08

struct dlrt_idx {
	unsigned ndims;
	uint32_t dims[DLRT_IDX_MAX_DIMS];
	size_t count;       /* dims[0]: number of items (images, labels) */
	size_t item_size;   /* bytes per item: product of dims[1..] (1 if ndims == 1) */
	const uint8_t *data;/* count * item_size bytes */
	void *alloc;        /* owned buffer when loaded from a file, else NULL */
};

/* Parses an IDX image held in memory; `out->data` then points into `buf`,
 * which must outlive `out`. Returns 0 or -1 with a one-line error. */
int dlrt_idx_parse(struct dlrt_idx *out, const uint8_t *buf, size_t len,
		   struct dlrt_err *err);

/* Reads a plain or gzip'd IDX file (detected by content, not name). */
int dlrt_idx_load(struct dlrt_idx *out, const char *path, struct dlrt_err *err);

void dlrt_idx_free(struct dlrt_idx *idx);

/* Checks that `images` (N x H x W) and `labels` (N) belong together: same
 * item count, every label below `nclasses`. */
int dlrt_idx_check_labels(const struct dlrt_idx *images,
			  const struct dlrt_idx *labels, unsigned nclasses,
			  struct dlrt_err *err);

#endif
