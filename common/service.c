#include "service.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

void dlrt_service_spec_init(struct dlrt_service_spec *s, const char *program, const char *what)
{
	memset(s, 0, sizeof(*s));
	s->program = program;
	s->what = what;
}

void dlrt_service_spec_add(struct dlrt_service_spec *s, const char *fmt, ...)
{
	va_list ap;
	char *a = NULL;
	int n;

	if (s->failed || s->nargs == DLRT_SERVICE_MAX_ARGS) {
		s->failed = true;
		return;
	}
	va_start(ap, fmt);
	n = vasprintf(&a, fmt, ap);
	va_end(ap);
	if (n < 0) {
		s->failed = true;
		return;
	}
	s->args[s->nargs++] = a;
}

void dlrt_service_spec_free(struct dlrt_service_spec *s)
{
	for (size_t i = 0; i < s->nargs; i++)
		free(s->args[i]);
	s->nargs = 0;
}

char **dlrt_service_argv(const struct dlrt_service_spec *s, const struct dlrt_service_common *c,
			 struct dlrt_err *err)
{
	char life[16], ready[16], secret[16];
	const char *fixed[] = {
		c->path, "--bind", c->bind_ip, "--port", "0", "--allow", c->allow,
		"--lifetime-fd", life, "--ready-fd", ready,
	};
	size_t nfixed = sizeof(fixed) / sizeof(*fixed), n = nfixed + s->nargs + 4, bytes = 0, k = 0;
	const char **src = NULL;
	char **argv = NULL, *p;

	if (s->failed)
		return dlrt_err_set(err, "out of memory or too many arguments building the command "
				    "line of %s", s->what), NULL;
	snprintf(life, sizeof(life), "%d", c->lifetime_fd);
	snprintf(ready, sizeof(ready), "%d", c->ready_fd);
	src = calloc(n, sizeof(*src));
	if (!src)
		goto oom;
	for (size_t i = 0; i < nfixed; i++)
		src[k++] = fixed[i];
	if (c->secret_fd > 0) {
		snprintf(secret, sizeof(secret), "%d", c->secret_fd);
		src[k++] = "--secret-fd";
		src[k++] = secret;
	}
	if (c->verbose)
		src[k++] = "--verbose";
	for (size_t i = 0; i < s->nargs; i++)
		src[k++] = s->args[i];
	for (size_t i = 0; i < k; i++)
		bytes += strlen(src[i]) + 1;
	/* One block: the pointers, then the strings, so the caller frees once. */
	argv = malloc((k + 1) * sizeof(*argv) + bytes);
	if (!argv)
		goto oom;
	p = (char *)(argv + k + 1);
	for (size_t i = 0; i < k; i++) {
		size_t l = strlen(src[i]) + 1;

		memcpy(p, src[i], l);
		argv[i] = p;
		p += l;
	}
	argv[k] = NULL;
	free(src);
	return argv;
oom:
	free(src);
	dlrt_err_set(err, "out of memory building the command line of %s", s->what);
	return NULL;
}

int dlrt_service_parse_ready(const char *buf, size_t len, uint16_t *port)
{
	unsigned long v = 0;
	size_t i = 0;

	while (i < len && buf[i] >= '0' && buf[i] <= '9' && i < 5)
		v = v * 10 + (unsigned long)(buf[i++] - '0');
	if (i == 0 || i >= len || buf[i] != '\n' || i + 1 != len || v == 0 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

int dlrt_service_parse_allow(const char *list, uint32_t **out, size_t *n, struct dlrt_err *err)
{
	size_t cap = 2, k = 1;
	char *copy = strdup(list), *save = NULL;
	uint32_t *a;

	for (const char *p = list; *p; p++)
		cap += *p == ',';
	a = calloc(cap, sizeof(*a));
	if (!copy || !a) {
		free(copy);
		free(a);
		return dlrt_err_set(err, "out of memory reading --allow");
	}
	a[0] = htonl(INADDR_LOOPBACK);
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (inet_pton(AF_INET, t, &a[k]) != 1) {
			dlrt_err_set(err, "--allow: '%s' is not a numeric IPv4 address: pass the step "
				     "nodes' addresses, comma-separated", t);
			free(copy);
			free(a);
			return -1;
		}
		k++;
	}
	free(copy);
	*out = a;
	*n = k;
	return 0;
}

int dlrt_service_write_ready(int fd, uint16_t port)
{
	char line[16];
	int n = snprintf(line, sizeof(line), "%u\n", port);
	ssize_t w;

	do
		w = write(fd, line, (size_t)n);
	while (w < 0 && errno == EINTR);
	close(fd);
	return w == n ? 0 : -1;
}

static void signal_event(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	const char **why = arg;
	struct signalfd_siginfo si;

	(void)events;
	if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		*why = strsignal((int)si.ssi_signo);
		dlrt_evloop_stop(loop);
	}
}

int dlrt_service_stop_on_signals(struct dlrt_evloop *loop, const char **why)
{
	sigset_t sigs;
	int fd;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	fd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (dlrt_evloop_add_fd(loop, fd, DLRT_EV_READ, signal_event, (void *)why) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* EOF on the lifetime pipe ends the service at once, not at a later tick:
 * slurmstepd waits for it in slurm_spank_exit, and the next step of a batch
 * script may be waiting for this step's nodes. */
static void lifetime_event(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	struct dlrt_service_watch *w = arg;
	char buf[256];
	ssize_t n;

	(void)events;
	n = read(fd, buf, sizeof(buf));
	if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR)))
		return; /* anything written is ignored; only the end counts */
	*w->why = "the step ended (lifetime fd closed)";
	dlrt_evloop_del_fd(loop, fd);
	dlrt_evloop_stop(loop);
}

/* A pidfd cannot be fooled by pid reuse; without one, a parent that was our
 * parent is gone once we are reparented, any other once kill(pid, 0) says so. */
static bool parent_gone(const struct dlrt_service_watch *w)
{
	if (w->parent_pidfd >= 0) {
		struct pollfd p = { .fd = w->parent_pidfd, .events = POLLIN };

		return poll(&p, 1, 0) > 0;
	}
	return (w->parent_is_ppid && getppid() != w->parent_pid) ||
	       (kill(w->parent_pid, 0) < 0 && errno == ESRCH);
}

static int64_t parent_check(struct dlrt_evloop *loop, void *arg)
{
	struct dlrt_service_watch *w = arg;

	if (!parent_gone(w))
		return DLRT_SERVICE_WATCH_MS;
	*w->why = "the parent process is gone";
	dlrt_evloop_stop(loop);
	return -1;
}

int dlrt_service_watch_start(struct dlrt_service_watch *w, struct dlrt_evloop *loop,
			     int lifetime_fd, pid_t parent_pid, const char **why)
{
	*w = (struct dlrt_service_watch){ .lifetime_fd = lifetime_fd, .parent_pid = parent_pid,
					  .parent_pidfd = -1, .why = why };
	if (lifetime_fd >= 0) {
		int fl = fcntl(lifetime_fd, F_GETFL);

		/* The event may be spurious; the read must never block the loop. */
		if (fl < 0 || fcntl(lifetime_fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
		    dlrt_evloop_add_fd(loop, lifetime_fd, DLRT_EV_READ, lifetime_event, w) < 0)
			return -1;
	}
	if (parent_pid > 0) {
		w->parent_is_ppid = getppid() == parent_pid;
#ifdef SYS_pidfd_open
		w->parent_pidfd = (int)syscall(SYS_pidfd_open, parent_pid, 0);
#endif
		if (dlrt_evloop_add_timer(loop, DLRT_SERVICE_WATCH_MS, parent_check, w) < 0)
			return -1;
	}
	return 0;
}

void dlrt_service_watch_end(struct dlrt_service_watch *w)
{
	if (w->parent_pidfd >= 0)
		close(w->parent_pidfd);
	w->parent_pidfd = -1;
}
