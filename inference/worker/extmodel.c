/* extmodel.c - an external model command run by a worker (model spec "ext:CMD").
 *
 * The worker starts `/bin/sh -c CMD` once per job, waits for READY, and for
 * every task writes one BATCH (header + raw input bytes) and reads the answers
 * through the protocol reader of inference/models/extproto.h, which checks
 * that every query is answered exactly once. Writing and reading are
 * interleaved with poll(), so a model that answers while the batch is still
 * being written cannot deadlock the two pipes. Every wait has a timeout; a
 * protocol error or a timeout kills the model and fails the task.
 */
#include "extmodel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "services/evloop.h"
#include "inference/models/extproto.h"

struct dlrt_extmodel {
	pid_t pid;
	int in_fd;   /* the model's stdin */
	int out_fd;  /* its stdout */
	struct dlrt_extproto_reader r;
	uint64_t next_task;
};

/* Reads what is there and feeds it; returns the reader's result or -1. */
static int pump(struct dlrt_extmodel *m, struct dlrt_err *err)
{
	char buf[65536];
	ssize_t n = read(m->out_fd, buf, sizeof(buf));

	if (n == 0)
		return dlrt_err_set(err, "the model command exited (closed its stdout)");
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? DLRT_EXTPROTO_MORE
			: dlrt_err_errno(err, errno, "cannot read the model's output");
	return dlrt_extproto_reader_feed(&m->r, buf, (size_t)n, err);
}

/* Waits for the reader to report `want`, writing `out` meanwhile. */
static int exchange(struct dlrt_extmodel *m, const uint8_t *out, size_t outlen, int want,
		    int timeout_ms, struct dlrt_err *err)
{
	int64_t deadline = dlrt_now_ms() + timeout_ms;
	size_t off = 0;
	int rc = dlrt_extproto_reader_feed(&m->r, NULL, 0, err);

	for (;;) {
		struct pollfd p[2] = { { .fd = m->out_fd, .events = POLLIN },
				       { .fd = m->in_fd, .events = POLLOUT } };
		int64_t left = deadline - dlrt_now_ms();

		if (rc < 0)
			return -1;
		if (rc == want && off == outlen)
			return 0;
		if (rc != DLRT_EXTPROTO_MORE && rc != want)
			return dlrt_err_set(err, "the model answered out of turn");
		if (left <= 0)
			return dlrt_err_set(err, "the model command did not answer within %d s",
					    timeout_ms / 1000);
		if (poll(p, off < outlen ? 2 : 1, (int)left) < 0 && errno != EINTR)
			return dlrt_err_errno(err, errno, "poll");
		if (off < outlen && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t n = write(m->in_fd, out + off, outlen - off);

			if (n < 0 && errno != EAGAIN && errno != EINTR)
				return dlrt_err_errno(err, errno, "cannot write to the model command");
			if (n > 0)
				off += (size_t)n;
		}
		if (p[0].revents & (POLLIN | POLLERR | POLLHUP)) {
			rc = pump(m, err);
			while (rc == DLRT_EXTPROTO_GOT_READY && want != rc)
				rc = dlrt_extproto_reader_feed(&m->r, NULL, 0, err);
		}
	}
}

int dlrt_extmodel_start(struct dlrt_extmodel **out, const char *cmd, int timeout_ms,
			struct dlrt_err *err)
{
	struct dlrt_extmodel *m = calloc(1, sizeof(*m));
	int in[2] = { -1, -1 }, o[2] = { -1, -1 };

	if (!m)
		return dlrt_err_set(err, "out of memory");
	dlrt_extproto_reader_init(&m->r);
	m->in_fd = m->out_fd = -1;
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(o, O_CLOEXEC) < 0) {
		dlrt_err_errno(err, errno, "cannot create pipes for the model command");
		goto fail;
	}
	m->pid = fork();
	if (m->pid < 0) {
		dlrt_err_errno(err, errno, "cannot start the model command");
		goto fail;
	}
	if (m->pid == 0) {
		dup2(in[0], 0);
		dup2(o[1], 1);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(o[1]);
	m->in_fd = in[1];
	m->out_fd = o[0];
	fcntl(m->in_fd, F_SETFL, O_NONBLOCK);
	fcntl(m->out_fd, F_SETFL, O_NONBLOCK);
	if (exchange(m, NULL, 0, DLRT_EXTPROTO_GOT_READY, timeout_ms, err) < 0) {
		char msg[DLRT_ERR_MAX];

		snprintf(msg, sizeof(msg), "%s", err->msg);
		dlrt_err_set(err, "model command '%.200s' did not get READY: %s", cmd, msg);
		dlrt_extmodel_stop(m);
		return -1;
	}
	*out = m;
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (o[i] >= 0)
			close(o[i]);
	}
	dlrt_extproto_reader_free(&m->r);
	free(m);
	return -1;
}

int dlrt_extmodel_infer(struct dlrt_extmodel *m, const uint8_t *inputs, uint32_t n,
			uint32_t bytes_per_query, int32_t *pred, float *score, int timeout_ms,
			struct dlrt_err *err)
{
	struct dlrt_extproto_batch b = { .task_id = ++m->next_task, .n = n,
					 .bytes_per_query = bytes_per_query };
	char hdr[128];
	int hl = dlrt_extproto_format_batch(hdr, sizeof(hdr), &b, err);
	size_t len;
	uint8_t *buf;
	int rc;

	if (hl < 0)
		return -1;
	len = (size_t)hl + (size_t)n * bytes_per_query;
	buf = malloc(len);
	if (!buf)
		return dlrt_err_set(err, "out of memory");
	memcpy(buf, hdr, (size_t)hl);
	memcpy(buf + hl, inputs, (size_t)n * bytes_per_query);
	rc = dlrt_extproto_reader_begin(&m->r, b.task_id, n, err);
	if (rc == 0)
		rc = exchange(m, buf, len, DLRT_EXTPROTO_GOT_BATCH, timeout_ms, err);
	free(buf);
	if (rc < 0)
		return -1;
	memcpy(pred, m->r.pred, n * sizeof(*pred));
	memcpy(score, m->r.score, n * sizeof(*score));
	return 0;
}

void dlrt_extmodel_stop(struct dlrt_extmodel *m)
{
	int status;

	if (!m)
		return;
	if (m->in_fd >= 0)
		close(m->in_fd); /* EOF: the model exits 0 */
	for (int i = 0; i < 40 && m->pid > 0; i++) {
		if (waitpid(m->pid, &status, WNOHANG) == m->pid) {
			m->pid = 0;
			break;
		}
		usleep(50000);
	}
	if (m->pid > 0) {
		kill(m->pid, SIGKILL);
		waitpid(m->pid, &status, 0);
	}
	if (m->out_fd >= 0)
		close(m->out_fd);
	dlrt_extproto_reader_free(&m->r);
	free(m);
}
