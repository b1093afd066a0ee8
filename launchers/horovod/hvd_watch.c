#include "hvd_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/hostlist.h"
#include "common/proc.h"

/* The answer for a step of 65536 nodes is far below this. */
#define MAX_OUT (4u << 20)

static int is_digits(const char *s, size_t n)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* "pid,pid,...": at least one pid. */
static int has_pid(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t j = i;

		while (j < n && s[j] != ',')
			j++;
		if (is_digits(s + i, j - i))
			return 1;
		i = j + 1;
	}
	return 0;
}

static int mark_nodes(const char *nodes, size_t n, const struct dlrt_hvd_plan *plan,
		      unsigned char *alive, struct dlrt_err *err)
{
	struct dlrt_hostlist hl = { 0 };
	char *copy = strndup(nodes, n);
	int rc;

	if (!copy)
		return dlrt_err_set(err, "out of memory reading the step's pids");
	rc = dlrt_hostlist_expand(&hl, copy, err);
	free(copy);
	if (rc < 0)
		return -1;
	for (uint32_t i = 0; i < hl.n; i++) {
		long h = dlrt_hvd_plan_host(plan, hl.names[i], strlen(hl.names[i]));

		if (h >= 0)
			alive[h] = 1;
	}
	dlrt_hostlist_free(&hl);
	return 0;
}

int dlrt_hvd_pids_parse(const char *text, size_t len, const struct dlrt_hvd_plan *plan,
			 unsigned char *alive, struct dlrt_err *err)
{
	unsigned char *mark = calloc(plan->nhosts + 1, 1);
	size_t i = 0;

	if (!mark)
		return dlrt_err_set(err, "out of memory reading the step's pids");
	while (i < len) {
		const char *line = text + i, *f[3];
		size_t n = 0, flen[3], k = 0;

		while (i + n < len && text[i + n] != '\n')
			n++;
		i += n + 1;
		if (n && line[n - 1] == '\r')
			n--;
		if (!n)
			continue;
		/* JOB.STEP|nodes|pids, with -P a trailing '|' may follow. */
		for (size_t p = 0; k < 3;) {
			size_t q = p;

			while (q < n && line[q] != '|')
				q++;
			f[k] = line + p;
			flen[k++] = q - p;
			if (q >= n)
				break;
			p = q + 1;
		}
		if (k < 3 || !flen[0] || !flen[1] || line[0] < '0' || line[0] > '9') {
			free(mark);
			return dlrt_err_set(err, "unexpected line in the step's pids: '%.*s'",
					    (int)(n > 80 ? 80 : n), line);
		}
		if (has_pid(f[2], flen[2]) && mark_nodes(f[1], flen[1], plan, mark, err) < 0) {
			free(mark);
			return -1;
		}
	}
	for (size_t h = 0; h < plan->nhosts; h++)
		alive[h] |= mark[h];
	free(mark);
	return 0;
}

struct dlrt_hvd_watch {
	struct dlrt_evloop *loop;
	pid_t pid;
	int fd;
	int64_t timer;
	char *out;
	size_t len;
	int overflow;
	dlrt_hvd_watch_fn fn;
	void *arg;
};

/* After EOF the child is about to exit; one that ran out of time, or keeps
 * running after closing its output, is ended. Bounded either way (the one
 * bounded wait of common/proc.h): the driver's loop never hangs on it. */
#define WATCH_EXIT_MS 1000

static void reap(struct dlrt_hvd_watch *w, int kill_it, int *status)
{
	if (w->pid <= 0)
		return;
	if (kill_it || dlrt_proc_wait(w->pid, dlrt_now_ms() + WATCH_EXIT_MS, status) == 0)
		dlrt_proc_end(w->pid, false, status);
	w->pid = -1;
}

static void release(struct dlrt_hvd_watch *w)
{
	if (w->fd >= 0)
		dlrt_evloop_close_fd(w->loop, w->fd);
	if (w->timer > 0)
		dlrt_evloop_del_timer(w->loop, w->timer);
	free(w->out);
	free(w);
}

static void finish(struct dlrt_hvd_watch *w, int timed_out)
{
	int status = -1;

	reap(w, timed_out, &status);
	if (timed_out)
		w->timer = 0; /* the timer removes itself */
	w->fn(w->arg, !timed_out && !w->overflow && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      w->out ? w->out : "", w->len);
	release(w);
}

static void on_read(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	struct dlrt_hvd_watch *w = arg;
	char buf[4096];
	ssize_t n;

	(void)loop;
	(void)events;
	n = read(fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n > 0) {
		if (w->len + (size_t)n > MAX_OUT) {
			w->overflow = 1;
			return;
		}
		char *p = realloc(w->out, w->len + (size_t)n + 1);

		if (!p) {
			w->overflow = 1;
			return;
		}
		w->out = p;
		memcpy(w->out + w->len, buf, (size_t)n);
		w->len += (size_t)n;
		w->out[w->len] = '\0';
		return;
	}
	finish(w, 0);
}

static int64_t on_timeout(struct dlrt_evloop *loop, void *arg)
{
	(void)loop;
	finish(arg, 1);
	return -1;
}

int dlrt_hvd_watch_start(struct dlrt_hvd_watch **out, struct dlrt_evloop *loop,
			 dlrt_hvd_watch_child_fn child, void *child_arg, int64_t timeout_ms,
			 dlrt_hvd_watch_fn fn, void *arg, struct dlrt_err *err)
{
	struct dlrt_hvd_watch *w = calloc(1, sizeof(*w));
	int pfd[2];

	*out = NULL;
	if (!w)
		return dlrt_err_set(err, "out of memory asking Slurm for the step's pids");
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		free(w);
		return dlrt_err_errno(err, errno, "cannot create a pipe to ask Slurm for the step's pids");
	}
	w->loop = loop;
	w->fn = fn;
	w->arg = arg;
	w->fd = pfd[0];
	w->pid = fork();
	if (w->pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		free(w);
		return dlrt_err_errno(err, errno, "cannot fork to ask Slurm for the step's pids");
	}
	if (w->pid == 0) {
		/* The child of a single-threaded service: it owns nothing of the
		 * loop's and leaves it with _exit, running no atexit handler. */
		int keep[] = { pfd[1], 2 };

		/* Not the listener, not the clients' sockets: a closed connection
		 * must not live on in this child while Slurm answers. */
		if (dlrt_proc_close_fds(keep, 2) < 0)
			_exit(126);
		_exit(child(pfd[1], child_arg));
	}
	close(pfd[1]);
	fcntl(w->fd, F_SETFL, fcntl(w->fd, F_GETFL) | O_NONBLOCK);
	w->timer = dlrt_evloop_add_timer(loop, timeout_ms, on_timeout, w);
	if (w->timer < 0 || dlrt_evloop_add_fd(loop, w->fd, DLRT_EV_READ, on_read, w) < 0) {
		if (w->timer > 0)
			dlrt_evloop_del_timer(loop, w->timer);
		w->timer = 0;
		reap(w, 1, &(int){ 0 });
		close(w->fd);
		free(w);
		return dlrt_err_set(err, "cannot watch the answer on the step's pids");
	}
	*out = w;
	return 0;
}

void dlrt_hvd_watch_cancel(struct dlrt_hvd_watch *w)
{
	if (!w)
		return;
	reap(w, 1, &(int){ 0 });
	release(w);
}
