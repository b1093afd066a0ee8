#include "idx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int dlrt_idx_parse(struct dlrt_idx *out, const uint8_t *buf, size_t len,
		   struct dlrt_err *err)
{
	size_t hdr, total = 1, item = 1;
	unsigned i, nd;

	memset(out, 0, sizeof(*out));
	if (len < 4)
		return dlrt_err_set(err, "IDX data is %zu bytes, shorter than the "
				    "4-byte magic: pass an IDX file (e.g. "
				    "train-images-idx3-ubyte[.gz])", len);
	if (buf[0] != 0 || buf[1] != 0)
		return dlrt_err_set(err, "IDX magic starts with 0x%02x%02x, not "
				    "0x0000: not an IDX file (or still compressed "
				    "in a format other than gzip)", buf[0], buf[1]);
	if (buf[2] != DLRT_IDX_TYPE_U8)
		return dlrt_err_set(err, "IDX element type 0x%02x is not supported: "
				    "only 0x08 (unsigned byte, as in (Fashion-)MNIST) "
				    "is read", buf[2]);
	nd = buf[3];
	if (nd < 1 || nd > DLRT_IDX_MAX_DIMS)
		return dlrt_err_set(err, "IDX file has %u dimensions; 1 to %d are "
				    "supported", nd, DLRT_IDX_MAX_DIMS);
	hdr = 4 + 4 * (size_t)nd;
	if (len < hdr)
		return dlrt_err_set(err, "IDX header is truncated: %u dimensions "
				    "need %zu header bytes but only %zu are there",
				    nd, hdr, len);
	for (i = 0; i < nd; i++) {
		uint32_t d = be32(buf + 4 + 4 * i);

		if (d == 0)
			return dlrt_err_set(err, "IDX dimension %u is 0: the file "
					    "holds no data", i);
		/* DLRT_IDX_MAX_BYTES < 2^32, so checking after each product
		 * keeps the size_t multiplication from overflowing. */
		total *= d;
		if (total > DLRT_IDX_MAX_BYTES)
			return dlrt_err_set(err, "IDX dimensions describe more "
					    "than %zu MiB of data: refusing a "
					    "corrupt or oversized file",
					    DLRT_IDX_MAX_BYTES >> 20);
		if (i > 0)
			item *= d;
		out->dims[i] = d;
	}
	if (len - hdr != total)
		return dlrt_err_set(err, "IDX data is %zu bytes but the header "
				    "dimensions need %zu: the file is %s",
				    len - hdr, total,
				    len - hdr < total ? "truncated" :
				    "followed by extra bytes");
	out->ndims = nd;
	out->count = out->dims[0];
	out->item_size = item;
	out->data = buf + hdr;
	return 0;
}

int dlrt_idx_load(struct dlrt_idx *out, const char *path, struct dlrt_err *err)
{
	uint8_t *data = NULL, *p;
	size_t len = 0, cap = 0;
	gzFile gz;
	int n, errnum;
	char why[DLRT_ERR_MAX];

	memset(out, 0, sizeof(*out));
	errno = 0;
	gz = gzopen(path, "rb");
	if (!gz)
		return dlrt_err_errno(err, errno ? errno : ENOMEM,
				      "cannot open IDX file %s", path);
	/* Grow with the bytes actually read, so a lying header cannot make
	 * us allocate more than the (decompressed) file holds. */
	for (;;) {
		if (len == cap) {
			if (cap >= DLRT_IDX_MAX_BYTES + 64) {
				gzclose(gz);
				free(data);
				return dlrt_err_set(err, "IDX file %s is larger than "
						    "%zu MiB decompressed: refusing it",
						    path, DLRT_IDX_MAX_BYTES >> 20);
			}
			cap = cap ? cap * 2 : 1 << 16;
			if (cap > DLRT_IDX_MAX_BYTES + 64)
				cap = DLRT_IDX_MAX_BYTES + 64;
			p = realloc(data, cap);
			if (!p) {
				gzclose(gz);
				free(data);
				return dlrt_err_set(err, "out of memory reading IDX "
						    "file %s", path);
			}
			data = p;
		}
		n = gzread(gz, data + len, (unsigned)(cap - len));
		if (n < 0) {
			const char *msg = gzerror(gz, &errnum);

			dlrt_err_set(err, "cannot read IDX file %s: %s (corrupt "
				     "gzip data?)", path, msg ? msg : "read error");
			gzclose(gz);
			free(data);
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	gzclose(gz);
	if (dlrt_idx_parse(out, data, len, err) < 0) {
		if (err) {
			memcpy(why, err->msg, sizeof(why));
			dlrt_err_set(err, "%s: %s", path, why);
		}
		free(data);
		return -1;
	}
	out->alloc = data;
	return 0;
}

void dlrt_idx_free(struct dlrt_idx *idx)
{
	free(idx->alloc);
	memset(idx, 0, sizeof(*idx));
}

int dlrt_idx_check_labels(const struct dlrt_idx *images,
			  const struct dlrt_idx *labels, unsigned nclasses,
			  struct dlrt_err *err)
{
	size_t i;

	if (images->ndims != 3)
		return dlrt_err_set(err, "image IDX file has %u dimensions, not 3 "
				    "(count x rows x columns): pass the images "
				    "file", images->ndims);
	if (labels->ndims != 1)
		return dlrt_err_set(err, "label IDX file has %u dimensions, not 1: "
				    "pass the labels file", labels->ndims);
	if (labels->count != images->count)
		return dlrt_err_set(err, "%zu labels for %zu images: pass the "
				    "labels file that matches the images",
				    labels->count, images->count);
	for (i = 0; i < labels->count; i++)
		if (labels->data[i] >= nclasses)
			return dlrt_err_set(err, "label %zu is %u, not below %u "
					    "classes: corrupt labels file", i,
					    labels->data[i], nclasses);
	return 0;
}
