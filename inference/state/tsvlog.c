#include "tsvlog.h"

#include "inference/pool/pool.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How much of a kept file's head (for the clock line) and tail (for the last
 * t) is read: a timeline grows by about 1 KB/s per job, so never all of it. */
#define SCAN_SLICE 65536

/* A number at the start of [p, p + n): finite and sane, else false. */
static bool num_at(const char *p, size_t n, double *v)
{
	char tmp[64], *end;

	if (n == 0 || n >= sizeof(tmp))
		return false;
	memcpy(tmp, p, n);
	tmp[n] = '\0';
	if (!((tmp[0] >= '0' && tmp[0] <= '9') || tmp[0] == '-'))
		return false;
	errno = 0;
	*v = strtod(tmp, &end);
	return errno == 0 && end != tmp && *end == '\0' && isfinite(*v) && fabs(*v) < 1e13;
}

static void scan_line(const char *p, size_t n, struct dlrt_tsv_scan *s)
{
	const char *tab1 = memchr(p, '\t', n), *tab2, *ev, *end;
	double t, w;

	if (!tab1 || !num_at(p, (size_t)(tab1 - p), &t) || t < 0)
		return; /* the header, or not a row */
	if (!s->has_t || t > s->last_t)
		s->last_t = t;
	s->has_t = true;
	tab2 = memchr(tab1 + 1, '\t', n - (size_t)(tab1 + 1 - p));
	if (!tab2 || s->has_origin)
		return;
	ev = tab2 + 1;
	end = memchr(ev, '\t', n - (size_t)(ev - p));
	if (!end)
		end = p + n;
	if ((size_t)(end - ev) > 6 && !memcmp(ev, "clock:", 6) &&
	    num_at(ev + 6, (size_t)(end - ev - 6), &w) && w > 0) {
		s->origin = w;
		s->has_origin = true;
	}
}

void dlrt_tsv_scan_text(const char *p, size_t n, bool partial_head, struct dlrt_tsv_scan *s)
{
	size_t off = 0;

	if (partial_head) {
		const char *nl = memchr(p, '\n', n);

		off = nl ? (size_t)(nl - p) + 1 : n;
	}
	while (off < n) {
		const char *nl = memchr(p + off, '\n', n - off);

		if (!nl)
			break; /* torn: a coordinator died mid-line */
		scan_line(p + off, (size_t)(nl - (p + off)), s);
		off = (size_t)(nl - p) + 1;
	}
	s->torn = n > 0 && p[n - 1] != '\n';
}

static int scan_slice(int fd, off_t at, size_t n, bool partial, struct dlrt_tsv_scan *s)
{
	char *buf = malloc(n ? n : 1);
	size_t got = 0;

	if (!buf)
		return -1;
	while (got < n) {
		ssize_t r = pread(fd, buf + got, n - got, at + (off_t)got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	dlrt_tsv_scan_text(buf, got, partial, s);
	free(buf);
	return got == n ? 0 : -1;
}

FILE *dlrt_tsv_open(const char *dir, const char *name, const char *header, bool fresh,
		    struct dlrt_tsv_scan *s, struct dlrt_err *err)
{
	char path[4200];
	struct stat sb;
	int fd;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		dlrt_err_errno(err, errno, "cannot open %s", path);
		return NULL;
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		dlrt_err_set(err, "%s is not a regular file: move it away", path);
		goto fail;
	}
	if (dlrt_pool_check_private(path, &sb, err) < 0)
		goto fail;
	if (fresh && sb.st_size > 0) {
		if (ftruncate(fd, 0) < 0) {
			dlrt_err_errno(err, errno, "cannot empty %s", path);
			goto fail;
		}
		sb.st_size = 0;
	}
	if (sb.st_size > 0) {
		size_t size = (size_t)sb.st_size;
		int rc;

		if (size <= 2 * SCAN_SLICE) {
			rc = scan_slice(fd, 0, size, false, s);
		} else {
			rc = scan_slice(fd, 0, SCAN_SLICE, false, s);
			if (rc == 0)
				rc = scan_slice(fd, (off_t)(size - SCAN_SLICE), SCAN_SLICE, true, s);
		}
		if (rc < 0) {
			dlrt_err_errno(err, errno ? errno : EIO, "cannot read %s", path);
			goto fail;
		}
	}
	f = fdopen(fd, "a");
	if (!f) {
		dlrt_err_errno(err, errno, "cannot open %s", path);
		goto fail;
	}
	/* Rows are flushed by the coordinator (after its fence check), not by
	 * stdio when a small buffer fills. */
	setvbuf(f, NULL, _IOFBF, 1 << 16);
	if (sb.st_size == 0)
		fputs(header, f);
	else if (s->torn)
		fputc('\n', f); /* our first row must not continue a dead one's half line */
	fflush(f);
	return f;
fail:
	close(fd);
	return NULL;
}

double dlrt_tsv_resume_t(const struct dlrt_tsv_scan *s, double wall_now)
{
	double t = 0;

	if (s->has_origin && isfinite(wall_now - s->origin) && wall_now > s->origin)
		t = wall_now - s->origin;
	if (s->has_t && s->last_t > t)
		t = s->last_t;
	return t;
}
