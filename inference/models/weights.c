#include "weights.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch.h"

static const uint8_t magic[8] = { 'D', 'L', 'R', 'T', 'W', '\r', '\n', 0x1a };

uint32_t dlrt_crc32(uint32_t crc, const void *buf, size_t len)
{
	static uint32_t table[256];
	static int ready;
	const uint8_t *p = buf;
	size_t i;

	/* Building the table is idempotent, so a race only repeats work. */
	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
		uint32_t t[256];

		for (i = 0; i < 256; i++) {
			uint32_t c = (uint32_t)i;
			int k;

			for (k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320U ^ (c >> 1) : c >> 1;
			t[i] = c;
		}
		memcpy(table, t, sizeof(t));
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	}
	crc = ~crc;
	for (i = 0; i < len; i++)
		crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void putf(uint8_t *p, float f)
{
	uint32_t v;

	memcpy(&v, &f, 4);
	put32(p, v);
}

static float getf(const uint8_t *p)
{
	uint32_t v = get32(p);
	float f;

	memcpy(&f, &v, 4);
	return f;
}

/* The tensor shapes of layer l: weight (ndim, dims) and bias. */
static int tensor_shape(const struct dlrt_layer *l, int bias, uint32_t *dims)
{
	if (bias) {
		dims[0] = (uint32_t)l->b_len;
		return 1;
	}
	if (l->s.op == DLRT_LAYER_CONV) {
		dims[0] = (uint32_t)l->oc;
		dims[1] = (uint32_t)l->ic;
		dims[2] = (uint32_t)l->s.k;
		dims[3] = (uint32_t)l->s.k;
		return 4;
	}
	dims[0] = (uint32_t)l->oc;
	dims[1] = (uint32_t)l->in_size;
	return 2;
}

static uint32_t ntensors(const struct dlrt_net *net)
{
	uint32_t n = 0;
	int i;

	for (i = 0; i < net->nlayers; i++)
		if (net->l[i].w_len)
			n += 2;
	return n;
}

size_t dlrt_weights_size(const struct dlrt_net *net)
{
	size_t sz = DLRT_WEIGHTS_HDR + 4 + 4 * net->nparams;
	uint32_t dims[4];
	int i;

	for (i = 0; i < net->nlayers; i++)
		if (net->l[i].w_len)
			sz += 4 + 4 * (size_t)tensor_shape(&net->l[i], 0, dims) +
			      4 + 4 * (size_t)tensor_shape(&net->l[i], 1, dims);
	return sz;
}

void dlrt_weights_encode(const struct dlrt_net *net, uint32_t kind,
			 const struct dlrt_weights_meta *meta, uint8_t *buf)
{
	uint8_t *p = buf + DLRT_WEIGHTS_HDR;
	uint32_t dims[4];
	int i, b, nd, d;
	size_t j, off, len;

	memcpy(buf, magic, 8);
	put32(buf + 8, DLRT_WEIGHTS_VERSION);
	put32(buf + 12, kind);
	put32(buf + 16, ntensors(net));
	put32(buf + 20, meta ? meta->seed : 0);
	put32(buf + 24, meta ? meta->epochs : 0);
	put32(buf + 28, meta ? meta->train_samples : 0);
	putf(buf + 32, meta ? meta->test_acc : -1.0f);
	put32(buf + 36, 0);
	for (i = 0; i < net->nlayers; i++) {
		const struct dlrt_layer *l = &net->l[i];

		if (!l->w_len)
			continue;
		for (b = 0; b < 2; b++) {
			nd = tensor_shape(l, b, dims);
			put32(p, (uint32_t)nd);
			p += 4;
			for (d = 0; d < nd; d++, p += 4)
				put32(p, dims[d]);
			off = b ? l->b_off : l->w_off;
			len = b ? l->b_len : l->w_len;
			for (j = 0; j < len; j++, p += 4)
				putf(p, net->params[off + j]);
		}
	}
	put32(p, dlrt_crc32(0, buf, (size_t)(p - buf)));
}

int dlrt_weights_save(const char *path, const struct dlrt_net *net,
		      uint32_t kind, const struct dlrt_weights_meta *meta,
		      struct dlrt_err *err)
{
	size_t sz = dlrt_weights_size(net);
	uint8_t *buf = malloc(sz);
	char tmp[4096];
	FILE *f;
	int ok;

	if (!buf)
		return dlrt_err_set(err, "out of memory encoding %s", path);
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path,
			     (long)getpid()) >= sizeof(tmp)) {
		free(buf);
		return dlrt_err_set(err, "weights path %s is too long", path);
	}
	dlrt_weights_encode(net, kind, meta, buf);
	f = fopen(tmp, "wb");
	if (!f) {
		free(buf);
		return dlrt_err_errno(err, errno, "cannot create %s (does the "
				      "directory exist and is it writable?)", tmp);
	}
	ok = fwrite(buf, 1, sz, f) == sz;
	ok = (fclose(f) == 0) && ok;
	free(buf);
	if (!ok) {
		unlink(tmp);
		return dlrt_err_errno(err, errno, "cannot write %s (disk full?)",
				      tmp);
	}
	if (rename(tmp, path) < 0) {
		int e = errno;

		unlink(tmp);
		return dlrt_err_errno(err, e, "cannot rename %s to %s", tmp, path);
	}
	return 0;
}

int dlrt_weights_parse(const uint8_t *buf, size_t len, struct dlrt_net *net,
		       uint32_t *kind, struct dlrt_weights_meta *meta,
		       struct dlrt_err *err)
{
	const struct dlrt_arch *arch;
	uint32_t v, k, nt, crc, dims[4];
	const uint8_t *p;
	size_t want, j, off, n;
	int i, b, nd, d;

	memset(net, 0, sizeof(*net));
	if (len < 8 || memcmp(buf, magic, 8) != 0)
		return dlrt_err_set(err, "not a dlrt weights file (bad magic): "
				    "pass a .dlrtw file written by dlrt-train");
	if (len < DLRT_WEIGHTS_HDR + 4)
		return dlrt_err_set(err, "weights file is truncated (%zu bytes, "
				    "header alone is %d): rerun make models",
				    len, DLRT_WEIGHTS_HDR + 4);
	v = get32(buf + 8);
	if (v != DLRT_WEIGHTS_VERSION)
		return dlrt_err_set(err, "weights file version %u, this build "
				    "reads version %d: retrain with this "
				    "build's dlrt-train", v, DLRT_WEIGHTS_VERSION);
	k = get32(buf + 12);
	arch = dlrt_arch_by_kind(k);
	if (!arch || !arch->spec)
		return dlrt_err_set(err, "weights file is for model kind %u, "
				    "which this build has no network for "
				    "(known: 1 lenet5, 2 deepcnn)", k);
	if (dlrt_net_init(net, arch->spec, arch->nspec, DLRT_MODEL_IN_C,
			  DLRT_MODEL_IN_H, DLRT_MODEL_IN_W, err) < 0)
		return -1;
	want = dlrt_weights_size(net);
	if (len != want) {
		dlrt_err_set(err, "%s weights file is %zu bytes, expected %zu: "
			     "the file is %s; rerun make models", arch->name,
			     len, want, len < want ? "truncated" :
			     "followed by extra bytes");
		goto fail;
	}
	crc = get32(buf + len - 4);
	if (crc != dlrt_crc32(0, buf, len - 4)) {
		dlrt_err_set(err, "%s weights file fails its CRC-32 check "
			     "(stored %08x, computed %08x): the file is "
			     "corrupt; rerun make models", arch->name, crc,
			     dlrt_crc32(0, buf, len - 4));
		goto fail;
	}
	nt = get32(buf + 16);
	if (nt != ntensors(net)) {
		dlrt_err_set(err, "%s weights file has %u tensors, the network "
			     "needs %u", arch->name, nt, ntensors(net));
		goto fail;
	}
	p = buf + DLRT_WEIGHTS_HDR;
	for (i = 0; i < net->nlayers; i++) {
		const struct dlrt_layer *l = &net->l[i];

		if (!l->w_len)
			continue;
		for (b = 0; b < 2; b++) {
			nd = tensor_shape(l, b, dims);
			/* The size check above used the expected shapes, so
			 * reading them back here stays inside the buffer
			 * until a shape differs, and then we stop. */
			if (get32(p) != (uint32_t)nd) {
				dlrt_err_set(err, "%s weights: layer %d %s has %u "
					     "dimensions, expected %d", arch->name,
					     i, b ? "bias" : "weight", get32(p), nd);
				goto fail;
			}
			p += 4;
			for (d = 0; d < nd; d++, p += 4)
				if (get32(p) != dims[d]) {
					dlrt_err_set(err, "%s weights: layer %d %s "
						     "dimension %d is %u, expected "
						     "%u", arch->name, i,
						     b ? "bias" : "weight", d,
						     get32(p), dims[d]);
					goto fail;
				}
			off = b ? l->b_off : l->w_off;
			n = b ? l->b_len : l->w_len;
			for (j = 0; j < n; j++, p += 4)
				net->params[off + j] = getf(p);
		}
	}
	if (kind)
		*kind = k;
	if (meta) {
		meta->seed = get32(buf + 20);
		meta->epochs = get32(buf + 24);
		meta->train_samples = get32(buf + 28);
		meta->test_acc = getf(buf + 32);
	}
	return 0;
fail:
	dlrt_net_free(net);
	return -1;
}

int dlrt_weights_load(const char *path, struct dlrt_net *net, uint32_t *kind,
		      struct dlrt_weights_meta *meta, struct dlrt_err *err)
{
	char why[DLRT_ERR_MAX];
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	ssize_t r;
	int fd, rv;

	memset(net, 0, sizeof(*net));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return dlrt_err_errno(err, errno, "cannot open weights file %s "
				      "(run make models, or set DLRT_MODEL_DIR)",
				      path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size > DLRT_WEIGHTS_MAX_BYTES) {
		close(fd);
		return dlrt_err_set(err, "weights file %s is not a regular file "
				    "of at most %zu MiB", path,
				    DLRT_WEIGHTS_MAX_BYTES >> 20);
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return dlrt_err_set(err, "out of memory reading %s", path);
	}
	while (got < (size_t)st.st_size) {
		r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	rv = dlrt_weights_parse(buf, got, net, kind, meta, err);
	free(buf);
	if (rv < 0 && err) {
		memcpy(why, err->msg, sizeof(why));
		dlrt_err_set(err, "%s: %s", path, why);
	}
	return rv;
}
