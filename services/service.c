#include "service.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tcpserver.h"

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
	char life[16], ready[16], secret[16], nodes[16];
	const char *fixed[] = {
		c->path, "--bind", c->bind_ip, "--port", "0", "--allow", c->allow,
		"--lifetime-fd", life, "--ready-fd", ready,
	};
	size_t nfixed = sizeof(fixed) / sizeof(*fixed), n = nfixed + s->nargs + 6, bytes = 0, k = 0;
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
	if (c->step_nodes > 0) {
		snprintf(nodes, sizeof(nodes), "%u", (unsigned)c->step_nodes);
		src[k++] = "--step-nodes";
		src[k++] = nodes;
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

/* EOF on the lifetime pipe ends the service at once (or, for a service the
 * step's nodes hold, starts its lingering: w->lifetime_end), not at a later tick:
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
	if (w->lifetime_end)
		w->lifetime_end(w->lifetime_end_arg);
	else
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

/* ---- the common command line of the service programs ------------------- */

int dlrt_service_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max,
			   uint64_t *out, struct dlrt_err *err)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *end || errno || v < min || v > max || *s == '-')
		return dlrt_err_set(err, "%s '%s' is not a number between %" PRIu64 " and %" PRIu64
				    ": pass a plain decimal number", opt, s, min, max);
	*out = v;
	return 0;
}

int dlrt_service_parse_port_range(const char *s, uint16_t *lo, uint16_t *hi)
{
	unsigned long v[2];
	const char *p = s;

	for (int i = 0; i < 2; i++) {
		char *end;

		if (*p < '0' || *p > '9')
			return -1;
		errno = 0;
		v[i] = strtoul(p, &end, 10);
		if (errno || v[i] < 1 || v[i] > 65535 || *end != (i ? '\0' : '-'))
			return -1;
		p = end + 1;
	}
	if (v[0] > v[1])
		return -1;
	*lo = (uint16_t)v[0];
	*hi = (uint16_t)v[1];
	return 0;
}

int dlrt_service_srun_port_range(const char *path, uint16_t *lo, uint16_t *hi,
				 struct dlrt_err *err)
{
	static const char key[] = "SrunPortRange";
	/* $SLURM_CONF is the caller's to set: never wait on a FIFO or a device,
	 * read only a regular file (srun would not start with anything else). */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	char line[1024], val[64] = "";
	struct stat st;
	int found = 0;
	FILE *f;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !(f = fdopen(fd, "r"))) {
		close(fd);
		return 0;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " \t");

		if (strncasecmp(p, key, sizeof(key) - 1) || p[sizeof(key) - 1] != '=')
			continue;
		p += sizeof(key);
		p[strcspn(p, " \t\r\n#")] = '\0';
		snprintf(val, sizeof(val), "%s", p);
		found = 1;
	}
	fclose(f);
	if (found && dlrt_service_parse_port_range(val, lo, hi) < 0)
		return dlrt_err_set(err, "SrunPortRange=%s in %s is not LO-HI: fix it there (srun "
				    "and dlrt read the same line)", val, path);
	return found;
}

void dlrt_service_args_init(struct dlrt_service_args *a, const char *bind)
{
	memset(a, 0, sizeof(*a));
	a->bind = bind;
	a->lifetime_fd = -1;
	a->ready_fd = -1;
	a->loopback = htonl(INADDR_LOOPBACK);
}

static int parse_fd(const char *opt, const char *arg, int *fd, struct dlrt_err *err)
{
	uint64_t v;

	if (dlrt_service_parse_u64(opt, arg, 0, INT32_MAX, &v, err) < 0)
		return -1;
	*fd = (int)v;
	return 1;
}

int dlrt_service_args_option(struct dlrt_service_args *a, int opt, const char *arg,
			     struct dlrt_err *err)
{
	uint64_t v;
	int fd;

	switch (opt) {
	case DLRT_SERVICE_O_BIND:
		a->bind = arg;
		return 1;
	case DLRT_SERVICE_O_PORT:
		if (dlrt_service_parse_u64("--port", arg, 0, 65535, &v, err) < 0)
			return -1;
		a->port = (uint16_t)v;
		return 1;
	case DLRT_SERVICE_O_ALLOW:
		/* The last --allow counts, as for every other option. */
		free(a->allow);
		a->allow = NULL;
		a->nallow = 0;
		return dlrt_service_parse_allow(arg, &a->allow, &a->nallow, err) < 0 ? -1 : 1;
	case DLRT_SERVICE_O_ALLOW_ANY:
		a->allow_any = true;
		return 1;
	case DLRT_SERVICE_O_LIFETIME_FD:
		return parse_fd("--lifetime-fd", arg, &a->lifetime_fd, err);
	case DLRT_SERVICE_O_READY_FD:
		return parse_fd("--ready-fd", arg, &a->ready_fd, err);
	case DLRT_SERVICE_O_PARENT_PID:
		if (dlrt_service_parse_u64("--parent-pid", arg, 1, INT32_MAX, &v, err) < 0)
			return -1;
		a->parent_pid = (pid_t)v;
		return 1;
	case DLRT_SERVICE_O_SECRET_FD:
		/* Read now: a program may close its other descriptors next. */
		if (parse_fd("--secret-fd", arg, &fd, err) < 0 ||
		    dlrt_svcauth_read_secret(fd, 5000, a->secret, err) < 0)
			return -1;
		a->has_secret = true;
		return 1;
	case DLRT_SERVICE_O_VERBOSE:
		a->verbose = true;
		return 1;
	case DLRT_SERVICE_O_STEP_NODES:
		if (dlrt_service_parse_u64("--step-nodes", arg, 1, 1u << 20, &v, err) < 0)
			return -1;
		a->step_nodes = (uint32_t)v;
		return 1;
	case DLRT_SERVICE_O_PORT_RANGE:
		if (dlrt_service_parse_port_range(arg, &a->port_lo, &a->port_hi) < 0)
			return dlrt_err_set(err, "--port-range '%s' is not LO-HI (two ports, "
					    "1-65535, the first not above the second)", arg);
		return 1;
	default:
		return 0;
	}
}

int dlrt_service_args_check(const struct dlrt_service_args *a, const char *what,
			    struct dlrt_err *err)
{
	if (a->ready_fd >= 0 && fcntl(a->ready_fd, F_GETFD) < 0)
		return dlrt_err_set(err, "--ready-fd %d is not an open file descriptor: open a "
				    "pipe in the launcher and pass its write end", a->ready_fd);
	if (a->lifetime_fd >= 0 && fcntl(a->lifetime_fd, F_GETFD) < 0)
		return dlrt_err_set(err, "--lifetime-fd %d is not an open file descriptor: pass "
				    "the read end of a pipe the step holds open", a->lifetime_fd);
	/* Our parent may be a process we cannot signal (another user's, after
	 * a reparenting): it exists all the same. */
	if (a->parent_pid && getppid() != a->parent_pid && kill(a->parent_pid, 0) < 0 &&
	    errno == ESRCH)
		return dlrt_err_set(err, "--parent-pid %d does not exist: pass the pid of the "
				    "process whose end should stop %s", (int)a->parent_pid, what);
	return 0;
}

void dlrt_service_args_server(struct dlrt_service_args *a, struct dlrt_tcpserver_cfg *cfg)
{
	cfg->bind_addr = a->bind;
	cfg->port = a->port;
	cfg->port_lo = a->port_lo;
	cfg->port_hi = a->port_hi;
	cfg->secret = a->has_secret ? a->secret : NULL;
	if (a->allow_any) {
		cfg->allow = NULL;
		cfg->nallow = 0; /* tcpserver: everyone */
	} else if (a->allow) {
		cfg->allow = a->allow;
		cfg->nallow = a->nallow;
	} else {
		/* Never an empty list: that would mean everyone. */
		cfg->allow = &a->loopback;
		cfg->nallow = 1;
	}
}

int dlrt_service_args_watch(const struct dlrt_service_args *a, struct dlrt_service_watch *w,
			    struct dlrt_evloop *loop, const char **why, struct dlrt_err *err)
{
	if (dlrt_service_watch_start(w, loop, a->lifetime_fd, a->parent_pid, why) == 0)
		return 0;
	if (a->lifetime_fd >= 0)
		return dlrt_err_set(err, "--lifetime-fd %d cannot be watched (%s): pass a pipe or "
				    "socket, not a regular file", a->lifetime_fd, strerror(errno));
	return dlrt_err_errno(err, errno, "cannot set up the event loop");
}

int dlrt_service_args_ready(const struct dlrt_service_args *a, uint16_t port, const char *what,
			    struct dlrt_err *err)
{
	if (a->ready_fd >= 0 && dlrt_service_write_ready(a->ready_fd, port) < 0)
		return dlrt_err_set(err, "cannot write the port to --ready-fd %d: the launcher "
				    "closed its end of the pipe before %s was ready", a->ready_fd,
				    what);
	return 0;
}

void dlrt_service_args_free(struct dlrt_service_args *a)
{
	free(a->allow);
	a->allow = NULL;
	a->nallow = 0;
	memset(a->secret, 0, sizeof(a->secret));
	a->has_secret = false;
}
