#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fdio.h"
#include "services/evloop.h"
#include "inference/pool/pool.h"
#include "inference/proto/proto.h"

/* ---- CRC32C (reflected polynomial 0x82F63B78), table driven -------------------- */

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_table[i] = c;
	}
}

#if defined(__x86_64__)
/* The CPU's own CRC32C instruction (SSE 4.2: the same polynomial), 8 bytes
 * at a time: the coordinator checksums every change it journals. */
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *b,
							    size_t n)
{
	uint64_t c = crc;

	for (; n >= 8; n -= 8, b += 8) {
		uint64_t v;

		memcpy(&v, b, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	crc = (uint32_t)c;
	while (n--)
		crc = __builtin_ia32_crc32qi(crc, *b++);
	return crc;
}
#endif

uint32_t dlrt_crc32c(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;

	crc = ~crc;
#if defined(__x86_64__)
	if (__builtin_cpu_supports("sse4.2"))
		return ~crc_sse42(crc, b, n);
#endif
	if (!crc_table[1])
		crc_init();
	while (n--)
		crc = crc_table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* ---- parsing --------------------------------------------------------------------- */

int dlrt_journal_parse(const uint8_t *p, size_t n, dlrt_journal_rec_fn fn, void *arg,
		       struct dlrt_journal_scan *scan, struct dlrt_err *err)
{
	size_t off = DLRT_JOURNAL_MAGIC_LEN;

	memset(scan, 0, sizeof(*scan));
	if (n == 0)
		return 0;
	if (n < DLRT_JOURNAL_MAGIC_LEN) {
		/* A crash while the first bytes were written: nothing to trust. */
		scan->torn = true;
		snprintf(scan->why, sizeof(scan->why), "only %zu bytes of the header", n);
		return 0;
	}
	if (memcmp(p, DLRT_JOURNAL_MAGIC, DLRT_JOURNAL_MAGIC_LEN) != 0)
		return dlrt_err_set(err, "not a dlrt-infer journal (bad magic): move it away");
	scan->good = off;
	while (off < n) {
		struct dlrt_ip_frame f;
		struct dlrt_err e2;
		uint32_t len, crc;
		size_t left = n - off;

		if (left < DLRT_JOURNAL_REC_HDR) {
			snprintf(scan->why, sizeof(scan->why), "record %llu: torn header (%zu bytes)",
				 (unsigned long long)scan->records + 1, left);
			break;
		}
		len = le32(p + off);
		crc = le32(p + off + 4);
		if (len < DLRT_IP_HDR || len > DLRT_IP_MAX_FRAME + 4) {
			snprintf(scan->why, sizeof(scan->why), "record %llu: bad length %u",
				 (unsigned long long)scan->records + 1, len);
			break;
		}
		if (left - DLRT_JOURNAL_REC_HDR < len) {
			snprintf(scan->why, sizeof(scan->why), "record %llu: torn (%zu of %u bytes)",
				 (unsigned long long)scan->records + 1, left - DLRT_JOURNAL_REC_HDR,
				 len);
			break;
		}
		if (dlrt_crc32c(0, p + off + DLRT_JOURNAL_REC_HDR, len) != crc) {
			snprintf(scan->why, sizeof(scan->why), "record %llu: checksum mismatch",
				 (unsigned long long)scan->records + 1);
			break;
		}
		if (len >= DLRT_IP_HDR &&
		    (p[off + DLRT_JOURNAL_REC_HDR + 4] | p[off + DLRT_JOURNAL_REC_HDR + 5] << 8) !=
			    DLRT_IP_VERSION)
			/* Sound (its checksum holds) but of another dlrt: cutting it
			 * would lose every job, so refuse the whole file. */
			return dlrt_err_set(err, "journal record %llu was written by dlrt-infer protocol "
					    "version %u, this one speaks %u: restart the pool with the "
					    "dlrt that wrote it, or move the journal away",
					    (unsigned long long)scan->records + 1,
					    p[off + DLRT_JOURNAL_REC_HDR + 4] |
						    p[off + DLRT_JOURNAL_REC_HDR + 5] << 8,
					    DLRT_IP_VERSION);
		if (dlrt_ip_frame_peek(p + off + DLRT_JOURNAL_REC_HDR, len, &f, &e2) != 1 ||
		    f.frame_len != len || f.type != DLRT_IP_CHANGE) {
			snprintf(scan->why, sizeof(scan->why), "record %llu: not a state change",
				 (unsigned long long)scan->records + 1);
			break;
		}
		if (fn && fn(arg, p + off + DLRT_JOURNAL_REC_HDR, len, &e2) < 0) {
			snprintf(scan->why, sizeof(scan->why), "record %llu: %.200s",
				 (unsigned long long)scan->records + 1, e2.msg);
			break;
		}
		off += DLRT_JOURNAL_REC_HDR + len;
		scan->good = off;
		scan->records++;
	}
	scan->torn = scan->good < n;
	return 0;
}

int dlrt_journal_put(struct dlrt_buf *b, const uint8_t *frame, size_t n)
{
	uint8_t h[DLRT_JOURNAL_REC_HDR];

	put_le32(h, (uint32_t)n);
	put_le32(h + 4, dlrt_crc32c(0, frame, n));
	if (dlrt_buf_reserve(b, sizeof(h) + n) < 0)
		return -1;
	dlrt_buf_append(b, h, sizeof(h));
	dlrt_buf_append(b, frame, n);
	return 0;
}

/* ---- loading --------------------------------------------------------------------- */

struct load_ctx {
	struct dlrt_infer_state *st;
	struct dlrt_buf *log;
};

static int apply_frame(struct dlrt_infer_state *st, const uint8_t *frame, size_t n,
		       struct dlrt_err *err)
{
	struct dlrt_infer_change ch;
	int rc;

	rc = dlrt_infer_change_get(frame + DLRT_IP_HDR, n - DLRT_IP_HDR, &ch, err);
	if (rc == 0)
		rc = dlrt_infer_state_apply(st, &ch, err);
	dlrt_infer_change_free(&ch);
	return rc;
}

static int load_rec(void *arg, const uint8_t *frame, size_t n, struct dlrt_err *err)
{
	struct load_ctx *l = arg;

	if (apply_frame(l->st, frame, n, err) < 0)
		return -1;
	if (l->log && dlrt_buf_append(l->log, frame, n) < 0)
		return dlrt_err_set(err, "out of memory holding the journal");
	return 0;
}

int dlrt_journal_apply_log(const uint8_t *log, size_t n, struct dlrt_infer_state *st,
			   struct dlrt_err *err)
{
	size_t off = 0;

	while (off < n) {
		struct dlrt_ip_frame f;

		if (dlrt_ip_frame_peek(log + off, n - off, &f, err) != 1)
			return dlrt_err_set(err, "the change log is cut short");
		if (f.type != DLRT_IP_CHANGE || apply_frame(st, log + off, f.frame_len, err) < 0)
			return -1;
		off += f.frame_len;
	}
	return 0;
}

int dlrt_journal_load(const char *dir, struct dlrt_infer_state *st, struct dlrt_buf *log,
		      struct dlrt_journal_scan *scan, struct dlrt_err *err)
{
	struct load_ctx l = { st, log };
	char path[4200];
	struct stat sb;
	void *map = NULL;
	int fd, rc;

	memset(scan, 0, sizeof(*scan));
	snprintf(path, sizeof(path), "%s/journal", dir);
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return dlrt_err_errno(err, errno, "cannot open the journal %s", path);
	}
	if (fstat(fd, &sb) < 0) {
		dlrt_err_errno(err, errno, "cannot read the journal %s", path);
		close(fd);
		return -1;
	}
	if (dlrt_pool_check_private(path, &sb, err) < 0) {
		close(fd);
		return -1;
	}
	if (sb.st_size > 0) {
		map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			dlrt_err_errno(err, errno, "cannot map the journal %s", path);
			close(fd);
			return -1;
		}
	}
	rc = dlrt_journal_parse(map, (size_t)sb.st_size, load_rec, &l, scan, err);
	if (map)
		munmap(map, (size_t)sb.st_size);
	if (rc == 0 && scan->torn && ftruncate(fd, (off_t)scan->good) < 0)
		rc = dlrt_err_errno(err, errno, "cannot cut the torn tail of %s", path);
	close(fd);
	return rc;
}

/* ---- writing --------------------------------------------------------------------- */

/* Holds disk space ahead of the journal's end (DLRT_JOURNAL_RESERVE). A
 * filesystem without fallocate (EOPNOTSUPP) simply gets no reserve. */
static void reserve(struct dlrt_journal *j)
{
	if (j->reserved - j->size >= DLRT_JOURNAL_RESERVE / 2 || j->size < j->reserve_next)
		return;
	if (fallocate(j->fd, FALLOC_FL_KEEP_SIZE, j->size, DLRT_JOURNAL_RESERVE) == 0) {
		j->reserved = j->size + DLRT_JOURNAL_RESERVE;
		j->reserve_errno = 0;
		return;
	}
	j->reserve_errno = errno;
	/* Not once per answer: after 64 KiB more (a full disk may clear), or
	 * never where the filesystem cannot do it. */
	j->reserve_next = errno == EOPNOTSUPP ? (off_t)INT64_MAX : j->size + (64 << 10);
}

int dlrt_journal_open(struct dlrt_journal *j, const char *dir, const uint8_t *log, size_t n,
		      struct dlrt_err *err)
{
	char tmp[4300];
	char *path = j->path;
	struct dlrt_buf b;
	size_t off = 0;
	int fd;

	memset(j, 0, sizeof(*j));
	j->fd = -1;
	dlrt_buf_init(&j->batch, (size_t)-1);
	snprintf(j->path, sizeof(j->path), "%s/journal", dir);
	snprintf(tmp, sizeof(tmp), "%s/.journal.%d", dir, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return dlrt_err_errno(err, errno, "cannot write %s", tmp);
	dlrt_buf_init(&b, (size_t)-1);
	if (dlrt_buf_append(&b, DLRT_JOURNAL_MAGIC, DLRT_JOURNAL_MAGIC_LEN) < 0)
		goto fail;
	while (off < n) {
		struct dlrt_ip_frame f;
		struct dlrt_err e2;

		if (dlrt_ip_frame_peek(log + off, n - off, &f, &e2) != 1 ||
		    dlrt_journal_put(&b, log + off, f.frame_len) < 0)
			goto fail;
		off += f.frame_len;
	}
	if (dlrt_write_all(fd, dlrt_buf_head(&b), b.len) < 0 || fsync(fd) < 0)
		goto fail;
	if (rename(tmp, path) < 0)
		goto fail;
	j->fd = fd;
	j->size = (off_t)b.len;
	dlrt_buf_free(&b);
	j->synced_ms = dlrt_now_ms();
	reserve(j);
	return 0;
fail:
	dlrt_err_set(err, "cannot write the journal %s: %s: free space in the pool folder and "
		     "start the coordinator again", path, strerror(errno));
	dlrt_buf_free(&b);
	close(fd);
	unlink(tmp);
	return -1;
}

int dlrt_journal_sync(struct dlrt_journal *j, struct dlrt_err *err)
{
	if (j->fd < 0 || !j->dirty)
		return 0;
	if (fdatasync(j->fd) < 0)
		return dlrt_err_set(err, "cannot sync the journal %s: %s: check the pool folder's "
				    "filesystem, then dlrt-infer pool restart", j->path,
				    strerror(errno));
	j->dirty = false;
	j->syncs++;
	j->synced_ms = dlrt_now_ms();
	return 0;
}

int dlrt_journal_write(struct dlrt_journal *j, const uint8_t *frames, size_t n, bool sync,
		       struct dlrt_err *err)
{
	size_t off = 0;
	uint64_t recs = 0;

	if (j->fd < 0 || n == 0)
		return 0;
	/* Every record of the batch in one write: a crash tears at most the
	 * last one, which loading cuts. */
	dlrt_buf_consume(&j->batch, j->batch.len);
	while (off < n) {
		struct dlrt_ip_frame f;
		struct dlrt_err e2;

		if (dlrt_ip_frame_peek(frames + off, n - off, &f, &e2) != 1)
			return dlrt_err_set(err, "cannot write the journal %s: a change frame is cut "
					    "short (a bug): dlrt-infer pool restart", j->path);
		if (dlrt_journal_put(&j->batch, frames + off, f.frame_len) < 0)
			return dlrt_err_set(err, "cannot write the journal %s: out of memory: "
					    "dlrt-infer pool restart", j->path);
		off += f.frame_len;
		recs++;
	}
	if (dlrt_write_all(j->fd, dlrt_buf_head(&j->batch), j->batch.len) < 0) {
		int e = errno;

		/* Cut a partial batch: later records after it would be lost at
		 * load (parsing stops at the first torn one), and none of its
		 * changes is acknowledged. Best effort: load cuts a torn tail anyway. */
		if (ftruncate(j->fd, j->size) == 0)
			lseek(j->fd, j->size, SEEK_SET);
		dlrt_buf_consume(&j->batch, j->batch.len);
		return dlrt_err_set(err, "cannot write the journal %s: %s: free space in the pool "
				    "folder, then dlrt-infer pool restart", j->path, strerror(e));
	}
	j->size += (off_t)j->batch.len;
	j->dirty = true;
	j->records += recs;
	j->writes++;
	/* A large batch (a burst after a takeover) does not keep its memory. */
	if (j->batch.cap > ((size_t)1 << 20))
		dlrt_buf_free(&j->batch);
	else
		dlrt_buf_consume(&j->batch, j->batch.len);
	reserve(j);
	if (sync || dlrt_now_ms() - j->synced_ms >= DLRT_JOURNAL_SYNC_MS)
		return dlrt_journal_sync(j, err);
	return 0;
}

int dlrt_journal_append(struct dlrt_journal *j, const uint8_t *frame, size_t n, bool sync,
			struct dlrt_err *err)
{
	return dlrt_journal_write(j, frame, n, sync, err);
}

void dlrt_journal_close(struct dlrt_journal *j)
{
	struct dlrt_err e;

	if (j->fd < 0)
		return;
	dlrt_journal_sync(j, &e);
	close(j->fd);
	j->fd = -1;
	dlrt_buf_free(&j->batch);
}
