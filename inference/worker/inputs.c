#include "inputs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int dlrt_inputs_open(struct dlrt_inputs *in, const char *path, struct dlrt_err *err)
{
	struct stat st;
	uint8_t magic[2] = { 0, 0 };
	int fd;

	memset(in, 0, sizeof(*in));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return dlrt_err_errno(err, errno, "cannot open the inputs %s", path);
	if (fstat(fd, &st) < 0 || pread(fd, magic, 2, 0) != 2 || !S_ISREG(st.st_mode) ||
	    (magic[0] == 0x1f && magic[1] == 0x8b)) {
		close(fd);
		return dlrt_idx_load(&in->idx, path, err);
	}
	in->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (in->map == MAP_FAILED) {
		in->map = NULL;
		return dlrt_idx_load(&in->idx, path, err);
	}
	in->maplen = (size_t)st.st_size;
	if (dlrt_idx_parse(&in->idx, in->map, in->maplen, err) < 0) {
		munmap(in->map, in->maplen);
		in->map = NULL;
		return -1;
	}
	return 0;
}

void dlrt_inputs_close(struct dlrt_inputs *in)
{
	if (in->map)
		munmap(in->map, in->maplen);
	else
		dlrt_idx_free(&in->idx);
	memset(in, 0, sizeof(*in));
}

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

int dlrt_inputs_unpack(const struct dlrt_idx *idx, const char *src, const char *pool,
		       char *out, size_t len, struct dlrt_err *err)
{
	char dir[4200], tmp[4300];
	uint8_t hdr[4 + 4 * DLRT_IDX_MAX_DIMS];
	size_t hlen = 4 + 4 * (size_t)idx->ndims, dlen = idx->count * idx->item_size;
	struct stat st;
	uint64_t h = 1469598103934665603ULL;
	FILE *f;
	int fd;

	if (stat(src, &st) < 0)
		return dlrt_err_errno(err, errno, "cannot stat %s", src);
	/* Same file, same size and time: same copy. */
	h = fnv(src, strlen(src), h);
	h = fnv(&st.st_size, sizeof(st.st_size), h);
	h = fnv(&st.st_mtim, sizeof(st.st_mtim), h);
	snprintf(dir, sizeof(dir), "%s/inputs", pool);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return dlrt_err_errno(err, errno, "cannot create %s", dir);
	if ((size_t)snprintf(out, len, "%s/%016llx.idx", dir, (unsigned long long)h) >= len)
		return dlrt_err_set(err, "pool path too long");
	if (stat(out, &st) == 0 && (size_t)st.st_size == hlen + dlen)
		return 0;
	hdr[0] = hdr[1] = 0;
	hdr[2] = DLRT_IDX_TYPE_U8;
	hdr[3] = (uint8_t)idx->ndims;
	for (unsigned i = 0; i < idx->ndims; i++) {
		hdr[4 + 4 * i] = (uint8_t)(idx->dims[i] >> 24);
		hdr[5 + 4 * i] = (uint8_t)(idx->dims[i] >> 16);
		hdr[6 + 4 * i] = (uint8_t)(idx->dims[i] >> 8);
		hdr[7 + 4 * i] = (uint8_t)idx->dims[i];
	}
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", out, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return dlrt_err_errno(err, errno, "cannot write %s", tmp);
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return dlrt_err_errno(err, errno, "cannot write %s", tmp);
	}
	if (fwrite(hdr, 1, hlen, f) != hlen || fwrite(idx->data, 1, dlen, f) != dlen ||
	    fclose(f) != 0) {
		unlink(tmp);
		return dlrt_err_errno(err, errno, "cannot write %s", tmp);
	}
	if (rename(tmp, out) < 0) {
		unlink(tmp);
		return dlrt_err_errno(err, errno, "cannot write %s", out);
	}
	return 0;
}

/* ---- inputs as a list of image files ---------------------------------------------- */

/* Reads a PGM header number, skipping whitespace and '#' comments. */
static int pgm_number(const uint8_t *b, size_t len, size_t *off, unsigned *v)
{
	unsigned long n = 0;
	size_t digits = 0;

	for (;;) {
		while (*off < len && isspace(b[*off]))
			(*off)++;
		if (*off < len && b[*off] == '#') {
			while (*off < len && b[*off] != '\n')
				(*off)++;
			continue;
		}
		break;
	}
	while (*off < len && isdigit(b[*off]) && digits < 6) {
		n = n * 10 + (unsigned long)(b[*off] - '0');
		(*off)++;
		digits++;
	}
	if (!digits || (*off < len && isdigit(b[*off])))
		return -1;
	*v = (unsigned)n;
	return 0;
}

int dlrt_inputs_parse_image(const uint8_t *buf, size_t len, uint8_t out[DLRT_INPUTS_IMAGE],
			    struct dlrt_err *err)
{
	size_t off = 2;
	unsigned w, h, maxval;

	if (len >= 2 && buf[0] == 'P' && buf[1] == '5') {
		if (pgm_number(buf, len, &off, &w) < 0 || pgm_number(buf, len, &off, &h) < 0 ||
		    pgm_number(buf, len, &off, &maxval) < 0)
			return dlrt_err_set(err, "bad PGM header");
		if (w != 28 || h != 28 || maxval != 255)
			return dlrt_err_set(err, "a %ux%u PGM with maxval %u: expected 28x28, maxval "
					    "255 (an image of the model's input size)", w, h, maxval);
		/* Exactly one whitespace byte, then the pixels. */
		if (off >= len || !isspace(buf[off]))
			return dlrt_err_set(err, "bad PGM header");
		off++;
		if (len - off != DLRT_INPUTS_IMAGE)
			return dlrt_err_set(err, "PGM with %zu bytes of pixels, expected %d", len - off,
					    DLRT_INPUTS_IMAGE);
		memcpy(out, buf + off, DLRT_INPUTS_IMAGE);
		return 0;
	}
	if (len != DLRT_INPUTS_IMAGE)
		return dlrt_err_set(err, "neither a binary PGM (P5) nor %d raw bytes (%zu bytes)",
				    DLRT_INPUTS_IMAGE, len);
	memcpy(out, buf, DLRT_INPUTS_IMAGE);
	return 0;
}

int dlrt_inputs_is_idx(const char *path)
{
	uint8_t m[3] = { 0, 0, 0 };
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return -1;
	n = fread(m, 1, 3, f);
	fclose(f);
	return (n >= 2 && m[0] == 0x1f && m[1] == 0x8b) || (n == 3 && !m[0] && !m[1] && m[2] == 8);
}

#define LIST_MAX_IMAGES (1u << 20)
#define IMAGE_FILE_MAX 4096

int dlrt_inputs_load_list(struct dlrt_idx *out, const char *list, struct dlrt_err *err)
{
	char line[4096], path[8300], dir[4096];
	uint8_t *data = NULL, file[IMAGE_FILE_MAX + 1];
	size_t n = 0, cap = 0, lineno = 0;
	const char *slash = strrchr(list, '/');
	FILE *f = fopen(list, "r");

	memset(out, 0, sizeof(*out));
	if (!f)
		return dlrt_err_errno(err, errno, "cannot read the input list %s", list);
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - list) : 1, slash ? list : ".");
	while (fgets(line, sizeof(line), f)) {
		size_t len = strcspn(line, "\r\n"), got;
		FILE *img;

		lineno++;
		line[len] = '\0';
		if (!len || line[0] == '#')
			continue;
		if (n == LIST_MAX_IMAGES) {
			dlrt_err_set(err, "%s lists more than %u images", list, LIST_MAX_IMAGES);
			goto fail;
		}
		snprintf(path, sizeof(path), "%s%s%s", line[0] == '/' ? "" : dir,
			 line[0] == '/' ? "" : "/", line);
		img = fopen(path, "rb");
		if (!img) {
			dlrt_err_errno(err, errno, "%s line %zu: cannot read %s", list, lineno, path);
			goto fail;
		}
		got = fread(file, 1, sizeof(file), img);
		fclose(img);
		if (n == cap) {
			size_t c2 = cap ? cap * 2 : 256;
			uint8_t *p = realloc(data, c2 * DLRT_INPUTS_IMAGE);

			if (!p) {
				dlrt_err_set(err, "out of memory reading %s", list);
				goto fail;
			}
			data = p;
			cap = c2;
		}
		if (got > IMAGE_FILE_MAX ||
		    dlrt_inputs_parse_image(file, got, data + n * DLRT_INPUTS_IMAGE, err) < 0) {
			char why[DLRT_ERR_MAX];

			snprintf(why, sizeof(why), "%s", got > IMAGE_FILE_MAX ? "file too large" : err->msg);
			dlrt_err_set(err, "%.200s line %zu: %.200s: %s", list, lineno, path, why);
			goto fail;
		}
		n++;
	}
	fclose(f);
	f = NULL;
	if (!n) {
		dlrt_err_set(err, "%s lists no images (one image file per line)", list);
		goto fail;
	}
	out->ndims = 3;
	out->dims[0] = (uint32_t)n;
	out->dims[1] = out->dims[2] = 28;
	out->count = n;
	out->item_size = DLRT_INPUTS_IMAGE;
	out->data = data;
	out->alloc = data;
	return 0;
fail:
	if (f)
		fclose(f);
	free(data);
	return -1;
}
