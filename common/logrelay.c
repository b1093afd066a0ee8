#include "logrelay.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "logline.h"

static const char *const stream_name[2] = { "out", "err" };

static void write_all(int fd, const char *p, size_t n)
{
	while (fd >= 0 && n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* a full disk or a gone reader must not stop the task */
		p += w;
		n -= (size_t)w;
	}
}

static void flush_out(struct dlrt_logrelay *r)
{
	write_all(r->file, r->out, r->out_len);
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

void dlrt_logrelay_note(int file, const char *fmt, ...)
{
	struct dlrt_logrelay *r = calloc(1, sizeof(*r));
	char text[512];
	va_list ap;
	int n;

	if (!r)
		return;
	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n >= 0) {
		r->file = file;
		set_stamp(r);
		emit(r, "dlrt", text, (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1);
		flush_out(r);
	}
	free(r);
}

/* Stamps every complete line in the buffer; keeps the unfinished rest. */
static void take(struct dlrt_logrelay *r, int s, const char *p, size_t n)
{
	while (n > 0) {
		size_t room = DLRT_LOGRELAY_LINE - r->len[s], k = n < room ? n : room;
		char *nl = memchr(p, '\n', k);

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

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
				deadline = now_ms() + drain_ms;
			}
		}
		if (n == 0 && reaped)
			break;
		if (reaped && now_ms() >= deadline)
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
			write_all(r->tee[s], buf, (size_t)got);
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
