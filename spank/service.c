/* service.c - starts and ends a runtime's node service (services/service.h).
 *
 * In slurm_spank_user_init on the node of the root task (task 0), slurmstepd
 * forks the service program from the install's libexec/dlrt, as the job user,
 * and waits (bounded) for the port on a readiness pipe: the service listens
 * before any task of the step starts. It lives exactly as long as the step,
 * not as long as the tasks of its own node:
 *   - slurm_spank_exit on its node closes the lifetime pipe and waits for it:
 *     the service serves on until every node's relay has let go of it, which
 *     each does when its node's tasks have ended (services/svchold.h), then
 *     exits; the wait is bounded by service_max_lifetime, SIGKILL after it;
 *   - if slurmstepd dies, the pipe closes too, and PR_SET_PDEATHSIG kills it;
 *   - alarm() set before exec is kept across execve: a last-resort bound
 *     (plugstack.conf service_max_lifetime) even if everything else failed.
 * Only the step's nodes may connect: their IPv4 addresses go to --allow.
 *
 * With SlurmdParameters=contain_spank (Slurm 24.05+) user_init runs in a child
 * process of slurmstepd that ends when it returns (dlrt_stepd_apart): the
 * program is then started as slurmstepd's own child (CLONE_PARENT, spawn()),
 * and the pipe ends slurmstepd keeps were made in slurmstepd itself, in
 * init_post_opt (struct dlrt_stepd_pipe), so nothing ends with that child.
 *
 * The service admits only connections that prove the step secret (32 random
 * bytes made here, handed over on a pipe, never in an argv or a file), and
 * only the node relays hold it: every node of the step runs dlrt-relay
 * (started here too, the same way, before any task), which admits only the
 * job user's loopback sockets. The node's first task gives its relay the
 * service's address and the secret after the address exchange, on a pipe
 * made here (close-on-exec, so no program keeps it). See services/relay.h.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "common/argv.h"
#include "common/buf.h"
#include "common/crypto.h"
#include "common/instpath.h"
#include "common/netaddr.h"
#include "plugin.h"
#include "common/proc.h"
#include "services/svcauth.h"

#define STOP_GRACE_MS 1000
#define LOG_EXIT 123 /* child(): its --dl-verbose log could not be created */

/* The services are in the compiled-in pkglibexecdir, or in a moved tree at the
 * same place relative to the plugin that starts them (common/instpath.h). */
static int program_path(const char *program, char *out, size_t len, struct dlrt_err *err)
{
	Dl_info info;
	struct stat st;

	if (!dladdr((void *)program_path, &info))
		info.dli_fname = NULL;
	if (dlrt_instpath_find(dlrt_instpath_pkglibexecdir, info.dli_fname,
			       dlrt_instpath_plugin_to_pkglibexec, program, out, len, err) < 0)
		return -1;
	if (stat(out, &st) < 0)
		return dlrt_err_errno(err, errno, "cannot find %s: reinstall dlrt", out);
	/* Run as the user, but never a program anyone else could have replaced. */
	if (!S_ISREG(st.st_mode) || !(st.st_mode & S_IXUSR) || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return dlrt_err_set(err, "%s is not an executable file writable only by its owner: "
				    "ask your admin to reinstall dlrt", out);
	return 0;
}

/* Is ",ip" already in the comma list? (a node's name and the bind address
 * usually resolve to the same address) */
static bool already_listed(const struct dlrt_buf *b, const char *comma_ip)
{
	const char *list = (const char *)dlrt_buf_head(b), *end = list + b->len;
	size_t n = strlen(comma_ip + 1);

	for (const char *p = list; p < end;) {
		const char *q = memchr(p, ',', (size_t)(end - p));
		size_t len = q ? (size_t)(q - p) : (size_t)(end - p);

		if (len == n && !memcmp(p, comma_ip + 1, n))
			return true;
		p += len + 1;
	}
	return false;
}

/* The IPv4 addresses of the step's nodes, as "a,b,c" (plus the bind address). */
static int allow_list(const struct dlrt_layout *l, const char *bind_ip, struct dlrt_buf *b,
		      struct dlrt_err *err)
{
	dlrt_buf_printf(b, "%s", bind_ip);
	for (uint32_t i = 0; i < l->nnodes; i++) {
		struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
		struct addrinfo *res = NULL;
		int rc = getaddrinfo(l->nodes.names[i], NULL, &hints, &res);

		if (rc != 0)
			return dlrt_err_set(err, "cannot resolve step node %s (%s), so the service "
					    "cannot admit it: fix the nodes' names in DNS or /etc/hosts",
					    l->nodes.names[i], gai_strerror(rc));
		for (struct addrinfo *a = res; a; a = a->ai_next) {
			char ip[INET_ADDRSTRLEN + 2];

			inet_ntop(AF_INET, &((struct sockaddr_in *)a->ai_addr)->sin_addr, ip + 1,
				  INET_ADDRSTRLEN);
			ip[0] = ',';
			if (!already_listed(b, ip))
				dlrt_buf_printf(b, "%s", ip);
		}
		freeaddrinfo(res);
	}
	if (dlrt_buf_append(b, "", 1) < 0)
		return dlrt_err_set(err, "the step has too many nodes for the service's allow list");
	return 0;
}

/* Moves fd above stdio and keeps it close-on-exec in slurmstepd. */
static int high_fd(int fd)
{
	int n = fcntl(fd, F_DUPFD_CLOEXEC, 10);

	close(fd);
	return n;
}

struct child_args {
	char **argv;
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	int ngroups;
	int life_r, ready_w;
	int extra_fd;      /* the secret (service) or config (relay) pipe; -1: none */
	int extra_fd2;     /* a watcher's second one (its secret pipe); -1 or 0: none */
	pid_t parent;
	unsigned max_lifetime;
	const char *log;
	bool keep_stderr;  /* srun's rendezvous with --dl-verbose: its lines go to srun's */
	/* "SLURM_CONF=<slurmstepd's>", or "": a service that runs Slurm's clients
	 * (Horovod's driver: sstat) reads the node's configuration. */
	char slurm_conf[1024];
};

/* In the forked child of slurmstepd: only async-signal-safe calls until exec. */
static void __attribute__((noreturn)) child(const struct child_args *a)
{
	char *const envp[] = { "PATH=/usr/bin:/bin", "LC_ALL=C",
			       a->slurm_conf[0] ? (char *)a->slurm_conf : NULL, NULL };
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;
	int fd;

	/* user_init runs with only the effective ids switched to the user. Make the
	 * switch permanent (real and saved too, the job's groups) before anything
	 * else, so the service can never regain root. */
	if (dlrt_proc_drop_to_user(a->uid, a->gid, a->groups, a->ngroups) < 0)
		_exit(DLRT_PROC_EXIT_DROP);
	/* Cleared by the credential change above, so set it after. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != a->parent)
		_exit(121);
	setsid();
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (chdir("/") < 0)
		_exit(122);
	umask(077);
	fd = open("/dev/null", O_RDWR);
	if (fd < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0)
		_exit(122);
	if (a->log) {
		/* An unpredictable name (dlrt_service_start), created here by the
		 * user: never a link someone planted in /tmp, never their file. No
		 * log is an error, not a silent /dev/null. */
		int lfd = open(a->log, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

		if (lfd < 0 || dup2(lfd, 2) < 0)
			_exit(LOG_EXIT);
	} else if (!a->keep_stderr && dup2(fd, 2) < 0) {
		_exit(122);
	}
	/* slurmstepd's own descriptors (task stdio, slurmd sockets) must not live on
	 * in the service: all closed but the pipes it is given. */
	{
		int keep[] = { a->life_r, a->ready_w, a->extra_fd, a->extra_fd2 };

		/* below 3 (-1: none) a kept descriptor means nothing to it */
		if (dlrt_proc_close_fds(keep, 4) < 0)
			_exit(122);
	}
	alarm(a->max_lifetime);
	execve(a->argv[0], a->argv, envp);
	_exit(127);
}

static int child_entry(void *arg)
{
	child(arg);
}

/* fork(), or where user_init runs in a child process of slurmstepd
 * (contain_spank: dlrt_stepd_apart), a process whose parent is slurmstepd
 * itself (CLONE_PARENT), as without: slurmstepd reaps it and PR_SET_PDEATHSIG
 * ties it to slurmstepd, not to the child that ends when user_init returns. */
static pid_t spawn(struct child_args *a, bool apart)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));

	if (!apart)
		return fork();
	return clone(child_entry, stack + sizeof(stack), CLONE_PARENT | SIGCHLD, a);
}

static const char *exit_reason(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status)) {
		snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
		return buf;
	}
	switch (WEXITSTATUS(status)) {
	case DLRT_SERVICE_EXIT_USAGE: return "exit 2: bad arguments";
	case DLRT_SERVICE_EXIT_LISTEN: return "exit 3: cannot listen on the node's address";
	case DLRT_SERVICE_EXIT_READY: return "exit 4: cannot write its port to --ready-fd";
	case 120: return "could not switch to the job user";
	case 121: return "could not tie its life to slurmstepd";
	case 122: return "could not set up its descriptors";
	case LOG_EXIT: return "could not create its --dl-verbose log in /tmp";
	case 127: return "cannot execute the program";
	default:
		snprintf(buf, len, "exit %d", WEXITSTATUS(status));
		return buf;
	}
}

/* Waits up to `ms` for the child to exit, then kills what is left of its
 * process group (setsid in child(): helpers it started) and reaps it. The
 * group is killed before the reap, while the pid cannot have been reused.
 * True once it is reaped (or gone: slurmstepd may reap it first). */
static bool reap(pid_t pid, int ms, int *status)
{
	int64_t start = dlrt_now_ms(), end = start + ms;
	/* Readable once the child has ended: its end wakes this wait at once,
	 * which every node's slurm_spank_exit (and so the step's end) waits on. */
	struct pollfd p = { .fd = (int)syscall(SYS_pidfd_open, pid, 0), .events = POLLIN };
	bool done = false;

	*status = -1;
	for (;;) {
		siginfo_t si = { .si_pid = 0 };
		int64_t now = dlrt_now_ms();

		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
			done = errno == ECHILD;
			break;
		}
		if (si.si_pid == pid) {
			kill(-pid, SIGKILL);
			while (waitpid(pid, status, 0) < 0 && errno == EINTR)
				;
			done = true;
			break;
		}
		if (now >= end)
			break;
		/* Most services are gone within milliseconds; a lingering one
		 * may take as long as the step's other nodes: no busy wait
		 * (without a pidfd, short sleeps first). */
		if (p.fd >= 0)
			poll(&p, 1, end - now > 1000 ? 1000 : (int)(end - now));
		else
			usleep(now - start < 1000 ? 5000 : 100000);
	}
	if (p.fd >= 0)
		close(p.fd);
	return done;
}

static int read_ready(int fd, int timeout_ms, uint16_t *port)
{
	char buf[16];
	size_t n = 0;
	int64_t end = dlrt_now_ms() + timeout_ms;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = end - dlrt_now_ms();
		ssize_t r;

		if (left <= 0)
			return -1;
		if (poll(&p, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (!p.revents)
			continue;
		r = read(fd, buf + n, sizeof(buf) - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) /* EOF: the line is complete, or the service died */
			return dlrt_service_parse_ready(buf, n, port);
		n += (size_t)r;
		if (n == sizeof(buf))
			return -1;
	}
}

/* The job user, who runs every program started here (never root). */
static int job_user(spank_t sp, struct child_args *a, const char *what, struct dlrt_err *err)
{
	if (spank_get_item(sp, S_JOB_UID, &a->uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &a->gid) != ESPANK_SUCCESS)
		return dlrt_err_set(err, "cannot read the job's user from Slurm, so not starting %s",
				    what);
	if (a->uid == 0)
		return dlrt_err_set(err, "dlrt never runs %s as root: submit the job as a regular "
				    "user", what);
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &a->groups, &a->ngroups) != ESPANK_SUCCESS)
		a->ngroups = 0;
	return 0;
}

/* Forks the program of `a` and waits (bounded) for its port; `life` is the
 * lifetime pipe, whose write end svc keeps on success. */
static int launch(struct child_args *a, const char *program, const char *what,
		  const char *path, int life[2], int ready[2], struct dlrt_svc *svc,
		  struct dlrt_err *err)
{
	struct dlrt_plugin *pl = &dlrt_plugin;
	const char *node = pl->layout.nodes.names ? pl->layout.nodes.names[pl->node_id] :
			   "srun's host";
	bool apart = dlrt_stepd_apart();
	char why[64];
	int status;
	pid_t pid;

	a->life_r = life[0];
	a->ready_w = ready[1];
	a->parent = apart ? getppid() : getpid();
	a->max_lifetime = pl->cfg.service_max_lifetime;
	if (pl->opts.verbose && !a->keep_stderr) {
		/* Random, so nobody can create it first (the name is in the
		 * verbose line and in errors). */
		uint8_t r[8];

		if (dlrt_crypto_random(r, sizeof(r)) < 0)
			return dlrt_err_errno(err, errno, "cannot name the --dl-verbose log of %s",
					      what);
		snprintf(svc->log, sizeof(svc->log),
			 "/tmp/%s.%u.%u.%02x%02x%02x%02x%02x%02x%02x%02x.log", program,
			 pl->step.job_id, pl->step.step_id, r[0], r[1], r[2], r[3], r[4], r[5],
			 r[6], r[7]);
		a->log = svc->log;
	}
	{
		const char *conf = getenv("SLURM_CONF");

		a->slurm_conf[0] = '\0';
		if (conf && *conf && strlen(conf) < sizeof(a->slurm_conf) - 12)
			snprintf(a->slurm_conf, sizeof(a->slurm_conf), "SLURM_CONF=%s", conf);
	}
	pid = spawn(a, apart);
	if (pid < 0)
		return dlrt_err_errno(err, errno, "cannot fork to start %s", what);
	if (pid == 0)
		child(a);
	close(life[0]);
	if (ready[1] >= 0)
		close(ready[1]);
	life[0] = ready[1] = -1;
	/* No readiness pipe (a watcher: dlrt_watcher_start): nothing to wait for. */
	if (ready[0] >= 0 &&
	    read_ready(ready[0], (int)pl->cfg.service_timeout * 1000, &svc->port) < 0) {
		bool exited;

		if (apart) {
			/* slurmstepd's child, not ours: its pid cannot be reused
			 * before slurmstepd reaps it, after user_init. */
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			return dlrt_err_set(err, "%s (%s) did not start on %s within %u s%s%s", what,
					    path, node, pl->cfg.service_timeout,
					    a->log ? "; its log: " : "; rerun with --dl-verbose for "
					    "its log", a->log ? a->log : "");
		}
		exited = reap(pid, 200, &status);
		if (!exited) {
			kill(-pid, SIGKILL); /* its own process group (setsid): helpers too */
			kill(pid, SIGKILL);  /* in case it had not reached setsid yet */
			reap(pid, STOP_GRACE_MS, &status);
		}
		if (exited && status != -1)
			return dlrt_err_set(err, "%s (%s) did not start on %s (%s)%s%s", what, path,
					    node, exit_reason(status, why, sizeof(why)),
					    a->log ? "; its log: " : "; rerun with --dl-verbose for "
					    "its log", a->log ? a->log : "");
		return dlrt_err_set(err, "%s (%s) did not report its port within %u s on %s: the "
				    "node is overloaded, or raise service_timeout in plugstack.conf",
				    what, path, pl->cfg.service_timeout, node);
	}
	svc->pid = pid;
	svc->life_fd = life[1];
	life[1] = -1;
	svc->what = what;
	return 0;
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
	p[0] = p[1] = -1;
}

static int make_pipe(int p[2])
{
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	if ((p[0] = high_fd(p[0])) < 0 || (p[1] = high_fd(p[1])) < 0) {
		close_pair(p);
		return -1;
	}
	return 0;
}

static struct dlrt_stepd_pipe *const stepd_pipes[] = {
	&dlrt_plugin.pipe_svc, &dlrt_plugin.pipe_relay, &dlrt_plugin.pipe_relay_config,
	&dlrt_plugin.pipe_watcher,
};
#define NPIPES (sizeof(stepd_pipes) / sizeof(*stepd_pipes))

void dlrt_stepd_pipes_make(bool want)
{
	dlrt_plugin.stepd_pid = getpid();
	for (size_t i = 0; i < NPIPES; i++)
		if (!want || make_pipe(stepd_pipes[i]->fd) < 0) /* made where used, then */
			stepd_pipes[i]->fd[0] = stepd_pipes[i]->fd[1] = -1;
}

/* Apart from slurmstepd's own process, whose pid dlrt_stepd_pipes_make recorded. */
bool dlrt_stepd_apart(void)
{
	return dlrt_plugin.stepd_pid > 0 && getpid() != dlrt_plugin.stepd_pid;
}

void dlrt_stepd_pipes_close(void)
{
	for (size_t i = 0; i < NPIPES; i++)
		if (dlrt_plugin.stepd_pid > 0) /* never made outside slurmstepd: fd 0 is not ours */
			close_pair(stepd_pipes[i]->fd);
}

/* The pipe made for it in slurmstepd (dlrt_stepd_pipes_make), or a new one. */
static int take_pipe(const struct dlrt_stepd_pipe *made, int p[2])
{
	if (dlrt_plugin.stepd_pid > 0 && made->fd[0] >= 0) {
		p[0] = made->fd[0];
		p[1] = made->fd[1];
		return 0;
	}
	return make_pipe(p);
}

/* After its start: in slurmstepd's own process, what the start closed or handed
 * on is no longer slurmstepd's to close; apart from it (contain_spank), only the
 * write end handed on (`kept`: a service's lifetime, the relay's config) is
 * accounted for, and slurmstepd closes its copy of the rest at exit. */
static void settle_pipe(struct dlrt_stepd_pipe *made, bool kept)
{
	if (dlrt_plugin.stepd_pid <= 0)
		return;
	if (!dlrt_stepd_apart())
		made->fd[0] = made->fd[1] = -1;
	else if (kept)
		made->fd[1] = -1;
}

/* The step secret goes to the service on a pipe that holds it whole before
 * the fork (32 bytes fit any pipe), so nothing waits on the child. */
static int secret_pipe(const uint8_t *secret, struct dlrt_err *err)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return dlrt_err_errno(err, errno, "cannot create the pipe for the step secret");
	if (write(p[1], secret, DLRT_SVCAUTH_SECRET_LEN) != DLRT_SVCAUTH_SECRET_LEN) {
		close(p[0]);
		close(p[1]);
		return dlrt_err_errno(err, errno, "cannot write the step secret to its pipe");
	}
	close(p[1]);
	return high_fd(p[0]);
}

int dlrt_service_start(spank_t sp, const struct dlrt_service_spec *spec, struct dlrt_svc *svc,
		       struct dlrt_err *err)
{
	struct dlrt_plugin *pl = &dlrt_plugin;
	char path[4096], launch_ip[64] = "";
	struct dlrt_service_common c = { .path = path, .verbose = pl->opts.verbose };
	struct child_args a = { .extra_fd = -1 };
	int life[2] = { -1, -1 }, ready[2] = { -1, -1 }, rc = -1;
	struct dlrt_buf allow;
	char **argv = NULL;

	memset(svc, 0, sizeof(*svc));
	svc->life_fd = -1;
	dlrt_buf_init(&allow, 1u << 24);
	if (job_user(sp, &a, spec->what, err) < 0)
		goto out;
	if (program_path(spec->program, path, sizeof(path), err) < 0)
		goto out;
	dlrt_task_getenv(sp, "SLURM_LAUNCH_NODE_IPADDR", launch_ip, sizeof(launch_ip));
	if (dlrt_net_node_ipv4(pl->opts.iface[0] ? pl->opts.iface : NULL, launch_ip, svc->ip,
			       err) < 0)
		goto out;
	if (allow_list(&pl->layout, svc->ip, &allow, err) < 0)
		goto out;
	/* pl->secret: the service's key, derived from the step secret srun made
	 * (stepd.c), so every node has it without it travelling anywhere. */
	if ((a.extra_fd = secret_pipe(pl->secret, err)) < 0)
		goto out;
	if (take_pipe(&pl->pipe_svc, life) < 0 || make_pipe(ready) < 0) {
		dlrt_err_errno(err, errno, "cannot create the pipes to start %s", spec->what);
		goto out;
	}
	c.bind_ip = svc->ip;
	c.allow = (const char *)dlrt_buf_head(&allow);
	c.step_nodes = pl->layout.nnodes;
	c.lifetime_fd = life[0];
	c.ready_fd = ready[1];
	c.secret_fd = a.extra_fd;
	argv = dlrt_service_argv(spec, &c, err);
	if (!argv)
		goto out;
	a.argv = argv;
	rc = launch(&a, spec->program, spec->what, path, life, ready, svc, err);
out:
	close_pair(life);
	close_pair(ready);
	settle_pipe(&pl->pipe_svc, rc == 0);
	if (a.extra_fd >= 0)
		close(a.extra_fd);
	free(argv);
	dlrt_buf_free(&allow);
	return rc;
}

int dlrt_relay_start_node(spank_t sp, struct dlrt_svc *relay, int *config_w,
			  struct dlrt_err *err)
{
	static const char what[] = "the node relay (dlrt-relay)";
	char path[4096], life_s[16], ready_s[16], config_s[16], node_s[16];
	struct child_args a = { .extra_fd = -1 };
	int life[2] = { -1, -1 }, ready[2] = { -1, -1 }, config[2] = { -1, -1 }, rc = -1;
	char *argv[12];
	size_t n = 0;

	memset(relay, 0, sizeof(*relay));
	relay->life_fd = -1;
	*config_w = -1;
	if (job_user(sp, &a, what, err) < 0 || program_path("dlrt-relay", path, sizeof(path), err) < 0)
		return -1;
	if (take_pipe(&dlrt_plugin.pipe_relay, life) < 0 || make_pipe(ready) < 0 ||
	    take_pipe(&dlrt_plugin.pipe_relay_config, config) < 0) {
		dlrt_err_errno(err, errno, "cannot create the pipes to start %s", what);
		goto out;
	}
	snprintf(life_s, sizeof(life_s), "%d", life[0]);
	snprintf(ready_s, sizeof(ready_s), "%d", ready[1]);
	snprintf(config_s, sizeof(config_s), "%d", config[0]);
	snprintf(node_s, sizeof(node_s), "%u", (unsigned)dlrt_plugin.node_id);
	argv[n++] = path;
	argv[n++] = "--lifetime-fd";
	argv[n++] = life_s;
	argv[n++] = "--ready-fd";
	argv[n++] = ready_s;
	argv[n++] = "--config-fd";
	argv[n++] = config_s;
	argv[n++] = "--node"; /* it holds the service until this node is done */
	argv[n++] = node_s;
	if (dlrt_plugin.opts.verbose)
		argv[n++] = "--verbose";
	argv[n] = NULL;
	a.argv = argv;
	a.extra_fd = config[0];
	snprintf(relay->ip, sizeof(relay->ip), "127.0.0.1");
	if (launch(&a, "dlrt-relay", what, path, life, ready, relay, err) < 0)
		goto out;
	*config_w = config[1];
	config[1] = -1;
	rc = 0;
out:
	close_pair(life);
	close_pair(ready);
	close_pair(config);
	settle_pipe(&dlrt_plugin.pipe_relay, rc == 0);
	settle_pipe(&dlrt_plugin.pipe_relay_config, rc == 0);
	return rc;
}

int dlrt_watcher_start(spank_t sp, const char *program, const char *what, struct dlrt_argv *args,
		       int extra_fd, const uint8_t *secret, struct dlrt_svc *svc,
		       struct dlrt_err *err)
{
	char path[4096];
	struct child_args a = { .extra_fd = extra_fd, .extra_fd2 = -1 };
	int life[2] = { -1, -1 }, ready[2] = { -1, -1 }, rc = -1;

	memset(svc, 0, sizeof(svc[0]));
	svc->life_fd = -1;
	if (job_user(sp, &a, what, err) < 0 || program_path(program, path, sizeof(path), err) < 0)
		return -1;
	if (secret && (a.extra_fd2 = secret_pipe(secret, err)) < 0)
		return -1;
	if (take_pipe(&dlrt_plugin.pipe_watcher, life) < 0) {
		dlrt_err_errno(err, errno, "cannot create the pipes to start %s", what);
		goto out;
	}
	dlrt_argv_program(args, path);
	dlrt_argv_add(args, "--lifetime-fd");
	dlrt_argv_add(args, "%d", life[0]);
	if (a.extra_fd2 >= 0) {
		dlrt_argv_add(args, "--secret-fd");
		dlrt_argv_add(args, "%d", a.extra_fd2);
	}
	if (args->full || !args->v[0]) {
		dlrt_err_set(err, "the arguments of %s do not fit in %d bytes (a checkpoint or log "
			     "folder's path that long?): shorten it", what, DLRT_ARGV_ROOM);
		goto out;
	}
	a.argv = args->v;
	/* No --ready-fd: the step's tasks never wait for a watcher's exec (it
	 * only reads the task page they write); one that could not start says
	 * so when it is stopped (dlrt_watcher_stop). */
	rc = launch(&a, program, what, path, life, ready, svc, err);
out:
	close_pair(life);
	if (a.extra_fd2 >= 0)
		close(a.extra_fd2);
	settle_pipe(&dlrt_plugin.pipe_watcher, rc == 0);
	return rc;
}

void dlrt_watcher_stop(struct dlrt_svc *svc, const char *node)
{
	char why[64];
	int status = -1;

	if (svc->pid <= 0)
		return;
	close(svc->life_fd);
	svc->life_fd = -1;
	if (!reap(svc->pid, STOP_GRACE_MS, &status)) {
		kill(-svc->pid, SIGKILL);
		kill(svc->pid, SIGKILL);
		reap(svc->pid, STOP_GRACE_MS, &status);
	}
	svc->pid = 0;
	/* Its own exit statuses are 0, 2 (bad arguments) and 4; the rest are
	 * child()'s: it never ran. */
	if (status != -1 && (WIFSIGNALED(status) ? WTERMSIG(status) != SIGKILL :
			     WEXITSTATUS(status) != 0))
		slurm_error("dlrt: %s on %s ended early (%s)%s%s", svc->what ? svc->what : "a watcher",
			    node, exit_reason(status, why, sizeof(why)),
			    svc->log[0] ? "; its log: " : "", svc->log);
}

void dlrt_service_stop(struct dlrt_svc *svc)
{
	dlrt_service_stop_within(svc, STOP_GRACE_MS);
}

void dlrt_service_stop_within(struct dlrt_svc *svc, int64_t ms)
{
	int status;

	if (svc->pid <= 0)
		return;
	close(svc->life_fd); /* the service sees EOF and exits (or lingers: svchold.h) */
	svc->life_fd = -1;
	if (!reap(svc->pid, ms > INT_MAX ? INT_MAX : (int)ms, &status)) {
		kill(-svc->pid, SIGKILL);
		kill(svc->pid, SIGKILL);
		reap(svc->pid, STOP_GRACE_MS, &status);
	}
	svc->pid = 0;
}

void dlrt_service_signal_within(struct dlrt_svc *svc, int sig, int64_t ms)
{
	struct pollfd p = { .events = POLLIN };
	int64_t end = dlrt_now_ms() + ms;
	int r;

	if (svc->pid <= 0)
		return;
	/* Not our child, so no waitid: a pidfd says when it has ended (a
	 * zombie counts), and its pid cannot be reused before slurmstepd
	 * reaps it, in slurm_spank_exit. Without one it is left to that. */
	p.fd = (int)syscall(SYS_pidfd_open, svc->pid, 0);
	if (p.fd < 0)
		return;
	kill(svc->pid, sig);
	do {
		int64_t left = end - dlrt_now_ms();

		r = left > 0 ? poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left) : 0;
	} while ((r < 0 && errno == EINTR) || (r == 0 && dlrt_now_ms() < end));
	if (r <= 0) {
		kill(-svc->pid, SIGKILL);
		kill(svc->pid, SIGKILL);
	}
	close(p.fd);
}

/* srun's rendezvous (exchange/rdvclient.h): the step's key/value store, run by
 * srun as its user before it asks Slurm for the step, on every address of
 * srun's host (the nodes reach srun on the address Slurm gives them,
 * SLURM_LAUNCH_NODE_IPADDR, which srun does not know itself). No allow list:
 * the nodes are not known yet (srun may still have to get the allocation);
 * every connection must prove the rendezvous secret, which only the step's
 * tasks get, in their environment. It runs as srun's user (as "nobody" for
 * root's srun, never as root). It ends with srun: the lifetime pipe's
 * write end is srun's (close-on-exec), PR_SET_PDEATHSIG if srun is killed. */
/* Where Slurm reads slurm.conf without SLURM_CONF (its packages' default). */
#define SLURM_CONF_DEFAULT "/etc/slurm/slurm.conf"

int dlrt_service_program_path(const char *program, char *out, size_t len, struct dlrt_err *err)
{
	return program_path(program, out, len, err);
}

int dlrt_rendezvous_start(struct dlrt_svc *rdv, const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
			  struct dlrt_err *err)
{
	static const char what[] = "srun's rendezvous for the step (dlrt-c10d-store)";
	const char *conf = getenv("SLURM_CONF");
	char path[4096], life_s[16], ready_s[16], secret_s[16], range_s[16];
	uint16_t lo, hi;
	struct child_args a = { .extra_fd = -1, .keep_stderr = dlrt_plugin.opts.verbose };
	int life[2] = { -1, -1 }, ready[2] = { -1, -1 }, rc = -1, ngroups;
	gid_t groups[256];
	char *argv[28];
	size_t n = 0;

	memset(rdv, 0, sizeof(*rdv));
	rdv->life_fd = -1;
	a.uid = getuid();
	a.gid = getgid();
	if (a.uid == 0) {
		/* root's own srun (an admin's test): the store still never runs
		 * as root, it needs no file and no privilege. */
		const struct passwd *pw = getpwnam("nobody");

		a.uid = pw ? pw->pw_uid : 65534;
		a.gid = pw ? pw->pw_gid : 65534;
		a.ngroups = 0;
	} else {
		ngroups = getgroups((int)(sizeof(groups) / sizeof(*groups)), groups);
		a.groups = groups;
		a.ngroups = ngroups < 0 ? 0 : ngroups;
	}
	if (program_path("dlrt-c10d-store", path, sizeof(path), err) < 0)
		return -1;
	/* Sites that firewall their login nodes admit the compute nodes only to
	 * SrunPortRange (srun's own ports): the rendezvous listens inside it too. */
	range_s[0] = '\0';
	switch (dlrt_service_srun_port_range(conf && *conf ? conf : SLURM_CONF_DEFAULT, &lo, &hi,
					     err)) {
	case -1:
		return -1;
	case 1:
		snprintf(range_s, sizeof(range_s), "%u-%u", lo, hi);
		break;
	}
	if ((a.extra_fd = secret_pipe(secret, err)) < 0)
		return -1;
	if (pipe2(life, O_CLOEXEC) < 0 || pipe2(ready, O_CLOEXEC) < 0 ||
	    (life[0] = high_fd(life[0])) < 0 || (ready[1] = high_fd(ready[1])) < 0) {
		dlrt_err_errno(err, errno, "cannot create the pipes to start %s", what);
		goto out;
	}
	snprintf(life_s, sizeof(life_s), "%d", life[0]);
	snprintf(ready_s, sizeof(ready_s), "%d", ready[1]);
	snprintf(secret_s, sizeof(secret_s), "%d", a.extra_fd);
	argv[n++] = path;
	argv[n++] = "--bind";
	argv[n++] = "0.0.0.0";
	argv[n++] = "--port";
	argv[n++] = "0";
	if (range_s[0]) {
		argv[n++] = "--port-range";
		argv[n++] = range_s;
	}
	argv[n++] = "--allow-any";
	argv[n++] = "--secret-fd";
	argv[n++] = secret_s;
	argv[n++] = "--lifetime-fd";
	argv[n++] = life_s;
	argv[n++] = "--ready-fd";
	argv[n++] = ready_s;
	/* A task sets at most a node's task ports (rdvclient.h), a step one
	 * value per node (per task in a dry run); a stranger cannot set anything
	 * without the secret. --max-store also counts the key lists of parked
	 * WAITs, and every node's first task waits for every other node's ports
	 * (about 26 bytes a key): N nodes that all wait at once hold N x N x 26
	 * bytes, so 1 GiB in all serves 6,000 nodes (64 MiB: 1,500). */
	argv[n++] = "--max-value";
	argv[n++] = "9216";
	argv[n++] = "--max-key";
	argv[n++] = "128";
	argv[n++] = "--max-store";
	argv[n++] = "1073741824";
	argv[n++] = "--max-wait-keys"; /* a node waits for every other node's ports */
	argv[n++] = "65536";
	if (dlrt_plugin.opts.verbose)
		argv[n++] = "--verbose";
	argv[n] = NULL;
	a.argv = argv;
	snprintf(rdv->ip, sizeof(rdv->ip), "0.0.0.0");
	rc = launch(&a, "dlrt-c10d-store", what, path, life, ready, rdv, err);
out:
	close_pair(life);
	close_pair(ready);
	if (a.extra_fd >= 0)
		close(a.extra_fd);
	return rc;
}
