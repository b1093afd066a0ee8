#include "logrelay.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fdio.h"
#include "logline.h"

/* 0, or the errno of the write that failed. */
static int write_or_errno(int fd, const char *p, size_t n)
{
	return dlrt_write_all(fd, p, n) < 0 ? errno : 0;
}

static const char *const stream_name[2] = { "out", "err" };

#define MARK_GAP 2048 /* bytes between the fallback line starts kept in marks[] */

/* The raw output to srun: a reader that went away (srun killed) must not stop
 * the task, so its errors are deliberately not acted on. */
static void tee_write(int fd, const char *p, size_t n)
{
	if (fd >= 0 && write_or_errno(fd, p, n)) {
		/* nowhere left to report it */
	}
}

/* Remembers line ends between good and good + len (the buffer just written
 * holds whole lines only), at least MARK_GAP apart, the newest last. */
static void note_marks(struct dlrt_logrelay *r, const char *p, size_t len)
{
	off_t last = r->nmarks ? r->marks[r->nmarks - 1] : 0;

	for (;;) {
		off_t from = last + MARK_GAP - r->good;
		const char *nl;

		if (from < 0)
			from = 0;
		if ((size_t)from >= len || !(nl = memchr(p + from, '\n', len - (size_t)from)))
			return;
		last = r->good + (nl - p) + 1;
		if (r->nmarks == DLRT_LOGRELAY_MARKS) {
			memmove(r->marks, r->marks + 1, sizeof(r->marks) - sizeof(*r->marks));
			r->nmarks--;
		}
		r->marks[r->nmarks++] = last;
	}
}

/* A write failed: cut the file back to a complete line and end it with the
 * marker; when the disk is full, cutting back to `good` frees the half-written
 * buffer, and if even that leaves no room, to earlier line ends (losing a few
 * KiB of log that srun has already shown). Then one warning on stderr. */
static void cut_log(struct dlrt_logrelay *r, int e)
{
	char line[512], warn[3000];
	bool landed = false;
	int n, w;

	r->cut = e;
	n = snprintf(line, sizeof(line), "%s dlrt " DLRT_LOGRELAY_CUT "%s; the rest of this "
		     "task's output went only to srun\n", r->stamp, strerror(e));
	for (int i = r->nmarks; i >= 0 && !landed; i--) {
		off_t to = i == r->nmarks ? r->good : r->marks[i];

		if (ftruncate(r->file, to) < 0)
			break; /* not a regular file: nothing to cut back */
		lseek(r->file, to, SEEK_SET); /* for a file opened without O_APPEND */
		if (write_or_errno(r->file, line, (size_t)n) == 0)
			landed = true;
	}
	w = snprintf(warn, sizeof(warn), "dlrt: --dl-log-dir: writing %s failed: %s; %s, the "
		     "rest of this task's output goes only here\n", r->name ? r->name : "the log",
		     strerror(e), landed ? "the log ends with a \"" DLRT_LOGRELAY_CUT "\" line"
		     : "the log could not be marked");
	tee_write(r->tee[1], warn, (size_t)(w < (int)sizeof(warn) ? w : (int)sizeof(warn) - 1));
}

static void flush_out(struct dlrt_logrelay *r)
{
	int e;

	if (r->file >= 0 && !r->cut && r->out_len) {
		e = write_or_errno(r->file, r->out, r->out_len);
		if (e) {
			cut_log(r, e);
		} else {
			note_marks(r, r->out, r->out_len);
			r->good += (off_t)r->out_len;
		}
	}
	r->out_len = 0;
}

static void set_stamp(struct dlrt_logrelay *r)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	dlrt_logline_stamp(r->stamp, &ts);
}

/* Appends "STAMP STREAM TEXT\n" to the output buffer (flushed when full). */
static void emit(struct dlrt_logrelay *r, const char *stream, const char *text, size_t n)
{
	size_t need;

	if (n > DLRT_LOGRELAY_LINE)
		n = DLRT_LOGRELAY_LINE;
	need = DLRT_LOGSTAMP_LEN + 1 + strlen(stream) + 1 + n + 1;
	if (r->out_len + need > sizeof(r->out))
		flush_out(r);
	r->out_len += (size_t)snprintf(r->out + r->out_len, sizeof(r->out) - r->out_len, "%s %s ",
				       r->stamp, stream);
	memcpy(r->out + r->out_len, text, n);
	r->out_len += n;
	r->out[r->out_len++] = '\n';
}

void dlrt_logrelay_init(struct dlrt_logrelay *r, int file, const char *name)
{
	struct stat st;

	r->file = file;
	r->name = name;
	r->cut = 0;
	r->out_len = 0;
	r->nmarks = 0;
	/* Appending to an earlier attempt's log: its end is a line end. */
	r->good = file >= 0 && fstat(file, &st) == 0 ? st.st_size : 0;
}

void dlrt_logrelay_note(struct dlrt_logrelay *r, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	flush_out(r);
	set_stamp(r);
	emit(r, "dlrt", text, (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1);
	flush_out(r);
}

int dlrt_logrelay_close(struct dlrt_logrelay *r)
{
	int rv = r->cut ? -1 : 0;

	flush_out(r);
	if (r->file >= 0 && close(r->file) < 0 && !r->cut) {
		char warn[3000];
		int e = errno, w;

		w = snprintf(warn, sizeof(warn), "dlrt: --dl-log-dir: closing %s failed: %s; its "
			     "last lines may be missing (the task's output reached srun)\n",
			     r->name ? r->name : "the log", strerror(e));
		tee_write(r->tee[1], warn,
			  (size_t)(w < (int)sizeof(warn) ? w : (int)sizeof(warn) - 1));
		rv = -1;
	}
	r->file = -1;
	return rv;
}

/* Stamps every complete line in the buffer; keeps the unfinished rest. */
static void take(struct dlrt_logrelay *r, int s, const char *p, size_t n)
{
	while (n > 0) {
		size_t room = DLRT_LOGRELAY_LINE - r->len[s], k = n < room ? n : room;
		const char *nl = memchr(p, '\n', k);

		if (nl)
			k = (size_t)(nl - p) + 1;
		memcpy(r->line[s] + r->len[s], p, k);
		r->len[s] += k;
		p += k;
		n -= k;
		if (nl) {
			emit(r, stream_name[s], r->line[s], r->len[s] - 1);
			r->len[s] = 0;
		} else if (r->len[s] == DLRT_LOGRELAY_LINE) {
			emit(r, stream_name[s], r->line[s], r->len[s]);
			r->len[s] = 0;
		}
	}
}

static void flush_partial(struct dlrt_logrelay *r, int s)
{
	if (r->len[s]) {
		set_stamp(r);
		emit(r, stream_name[s], r->line[s], r->len[s]);
		flush_out(r);
	}
	r->len[s] = 0;
}

int dlrt_logrelay_run(struct dlrt_logrelay *r, pid_t child, int drain_ms, int *status)
{
	char buf[65536];
	int reaped = 0;
	long long deadline = 0;

	*status = 0;
	for (;;) {
		struct pollfd pfd[2];
		int n = 0, idx[2];

		for (int s = 0; s < 2; s++) {
			if (r->in[s] >= 0) {
				pfd[n] = (struct pollfd){ .fd = r->in[s], .events = POLLIN };
				idx[n++] = s;
			}
		}
		if (!reaped) {
			pid_t w = waitpid(child, status, WNOHANG);

			if (w == child || (w < 0 && errno == ECHILD)) {
				reaped = 1;
				deadline = dlrt_now_ms() + drain_ms;
			}
		}
		if (n == 0 && reaped)
			break;
		if (reaped && dlrt_now_ms() >= deadline)
			break;
		if (n == 0) {
			/* Both pipes closed but the program still runs: wait for it. */
			if (waitpid(child, status, 0) == child || errno == ECHILD)
				reaped = 1;
			break;
		}
		if (poll(pfd, (nfds_t)n, 100) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			int s = idx[i];
			ssize_t got;

			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			got = read(r->in[s], buf, sizeof(buf));
			if (got < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (got <= 0) {
				flush_partial(r, s);
				close(r->in[s]);
				r->in[s] = -1;
				continue;
			}
			tee_write(r->tee[s], buf, (size_t)got);
			set_stamp(r);
			take(r, s, buf, (size_t)got);
			flush_out(r);
		}
	}
	for (int s = 0; s < 2; s++) {
		flush_partial(r, s);
		if (r->in[s] >= 0)
			close(r->in[s]);
		r->in[s] = -1;
	}
	if (!reaped && waitpid(child, status, 0) != child)
		return -1;
	return 0;
}
