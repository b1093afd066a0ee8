/* exchange.c - the address exchange, in each task just before exec.
 *
 * Runtimes whose tasks must find a root (a scheduler, a rank 0)
 * learn its address from the root task itself through one PMIx fence: the root
 * picks a port that is free on its node right now (or passes the port of a
 * service the plugin started) and publishes "ip:port"; every task publishes its
 * node's address too. No redis, ZooKeeper or file.
 *
 * Why a separate process: this code runs in the task, a fork of slurmstepd.
 * slurmstepd's mpi/pmix plugin has loaded the same libpmix and initialised it
 * as the step's PMIx server, so in the fork PMIx_Init "succeeds" at once with
 * the server's identity, and the next blocking call waits forever for a
 * progress thread that did not survive fork() (observed: tasks stuck before
 * exec in PMIx_Get, t/04-roles.t hung). So the task runs dlrt-kv, a fresh
 * PMIx client, with the task's future environment (which holds the PMIX_*
 * coordinates) and reads its answer from a pipe; the task kills it at the
 * deadline, so no PMIx wait can outlive exchange_timeout by more than a few
 * seconds.
 *
 * Only for runtimes whose programs do not use PMIx themselves (see
 * pmix_bridge.h for why).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <slurm/spank.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "exchange.h"
#include "exchange_reply.h"
#include "instpath.h"
#include "netaddr.h"
#include "svcauth.h"

#define ROOT_VALUE_VAR "DLRT_KV_ROOT_VALUE"

/* Time dlrt-kv may take beyond exchange_timeout: connecting, and naming the
 * ranks that did not arrive after a timed-out fence (bounded at 5 s there). */
#define EXCHANGE_SLACK_S 8

static char **job_env(spank_t sp)
{
	char **env = NULL;

	if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS)
		return NULL;
	return env;
}

static const char *env_find(char **env, const char *name)
{
	size_t n = strlen(name);

	for (; env && *env; env++)
		if (!strncmp(*env, name, n) && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

/* slurmstepd puts the PMIx server's coordinates into the task's future
 * environment (S_JOB_ENV) before task_init; with --mpi=none they are absent. */
bool dlrt_exchange_possible(spank_t sp)
{
	char **env = job_env(sp);

	return env_find(env, "PMIX_NAMESPACE") && env_find(env, "PMIX_RANK");
}

/* dlrt-kv is in the compiled-in bindir, or in a moved tree at the same place
 * relative to the plugin (common/instpath.h). */
static int find_kv(char *out, size_t len, struct dlrt_err *err)
{
	Dl_info info;

	if (!dladdr((void *)dlrt_exchange_root, &info))
		info.dli_fname = NULL;
	if (dlrt_instpath_find(dlrt_instpath_bindir, info.dli_fname, dlrt_instpath_plugin_to_bin,
			       "dlrt-kv", out, len, err) < 0)
		return -1;
	if (access(out, X_OK) != 0)
		return dlrt_err_errno(err, errno, "%s is not executable: reinstall dlrt", out);
	return 0;
}

static void __attribute__((noreturn)) child_exec(const char *path, char **argv, char **env,
						 int out_fd)
{
	sigset_t all;
	int devnull = open("/dev/null", O_RDONLY);

	if (devnull >= 0)
		dup2(devnull, 0);
	dup2(out_fd, 1);
	dup2(out_fd, 2);
	close_range(3, ~0U, 0);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	signal(SIGPIPE, SIG_DFL);
	execve(path, argv, env);
	dprintf(1, "dlrt-kv: cannot run %s: %s\n", path, strerror(errno));
	_exit(127);
}

/* Runs dlrt-kv with `argv`, collecting what it prints, for at most
 * `limit_s` seconds. */
static int run_kv(const char *path, char **argv, char **env, int limit_s, char **out,
		  size_t *outlen, size_t cap, struct dlrt_err *err)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL }, old;
	double deadline = (dlrt_now_ms() / 1e3) + limit_s;
	size_t len = 0;
	char *buf = malloc(cap + 1);
	int fds[2], status = 0, rc = -1;
	bool timed_out = false;
	pid_t pid;

	if (!buf)
		return dlrt_err_set(err, "out of memory");
	if (pipe2(fds, O_CLOEXEC) < 0) {
		free(buf);
		return dlrt_err_errno(err, errno, "cannot create a pipe for the PMIx exchange");
	}
	/* A task may inherit SIGCHLD=ignore, which would make waitpid fail. */
	sigaction(SIGCHLD, &dfl, &old);
	pid = fork();
	if (pid < 0) {
		dlrt_err_errno(err, errno, "cannot fork dlrt-kv for the PMIx exchange");
		close(fds[0]);
		close(fds[1]);
		goto out;
	}
	if (pid == 0)
		child_exec(path, argv, env, fds[1]);
	close(fds[1]);
	for (;;) {
		double left = deadline - (dlrt_now_ms() / 1e3);
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		ssize_t n;

		if (left <= 0) {
			timed_out = true;
			break;
		}
		if (poll(&pfd, 1, (int)(left * 1000) + 1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!pfd.revents)
			continue;
		n = read(fds[0], buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* EOF (or a full buffer: the answer is malformed anyway) */
		len += (size_t)n;
		if (len == cap)
			break;
	}
	close(fds[0]);
	/* Output ended: dlrt-kv is exiting (PMIx_Finalize, then exit), which
	 * takes about a millisecond. Look often at first: the task starts its
	 * program only after this, so a coarse sleep here would be paid by
	 * every step (it was a fixed 5 ms). */
	for (long pause_us = 100; !timed_out; pause_us = pause_us < 5000 ? 2 * pause_us : 5000) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			status = 0;
			break;
		}
		if ((dlrt_now_ms() / 1e3) > deadline) {
			timed_out = true;
			break;
		}
		nanosleep(&(struct timespec){ 0, pause_us * 1000 }, NULL);
	}
	if (timed_out) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		dlrt_err_set(err, "the PMIx exchange did not finish within %d s and was stopped: "
			     "is Slurm's PMIx working? (try srun --mpi=pmix -n2 dlrt-kv put a b "
			     "fence)", limit_s);
		goto out;
	}
	buf[len] = '\0';
	if (WIFSIGNALED(status)) {
		dlrt_err_set(err, "dlrt-kv died of signal %d during the PMIx exchange",
			     WTERMSIG(status));
		goto out;
	}
	*out = buf;
	*outlen = len;
	buf = NULL;
	rc = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
out:
	sigaction(SIGCHLD, &old, NULL);
	free(buf);
	return rc;
}

/* Runs dlrt-kv with argv (two bounded waits at most: the start and the end of
 * the exchange) and reads its reply into mine (and all, when not NULL). */
static int run_kv_reply(const char *kv, char **argv, char **env,
			const struct dlrt_exchange_req *req, struct dlrt_addrs *mine,
			struct dlrt_addrs *all, struct dlrt_err *err)
{
	char *text = NULL;
	size_t textlen = 0;
	int status = run_kv(kv, argv, env, 2 * req->timeout_s + EXCHANGE_SLACK_S, &text,
			    &textlen, (size_t)req->ntasks * 48 + 4096, err);

	if (status < 0)
		return -1;
	if (dlrt_exchange_reply_parse(text, textlen, req->ntasks, mine, all, err) < 0) {
		free(text);
		return -1;
	}
	free(text);
	if (status != 0)
		return dlrt_err_set(err, "dlrt-kv exited with status %d during the PMIx exchange",
				    status);
	mine->valid = true;
	return 0;
}

/* The other tasks of a node: wait for the first one's answer. */
static int wait_share(const struct dlrt_exchange_req *req, struct dlrt_addrs *mine, double limit_s,
		      struct dlrt_err *err)
{
	double deadline = (dlrt_now_ms() / 1e3) + limit_s;
	long pause_us = 50; /* reading a shared page: cheap, so look often */

	for (;;) {
		int state = __atomic_load_n(&req->share->state, __ATOMIC_ACQUIRE);

		if (state == 1)
			break;
		if (state == 2)
			return dlrt_err_set(err, "%s", req->share->err);
		if ((dlrt_now_ms() / 1e3) > deadline)
			return dlrt_err_set(err, "the first task of this node did not finish the PMIx "
					    "exchange within %.0f s (did it start? see the slurmd log)",
					    limit_s);
		nanosleep(&(struct timespec){ 0, pause_us * 1000 }, NULL);
		if (pause_us < 1000)
			pause_us *= 2;
	}
	if (dlrt_net_parse_hostport(req->share->root, mine->root_ip, &mine->root_port) < 0)
		return dlrt_err_set(err, "the first task of this node shared a bad root address");
	mine->valid = true;
	return 0;
}

/* `env` plus NAME=VALUE: how a value that must not show in /proc/PID/cmdline
 * (world-readable) reaches dlrt-kv. One allocation; free() it after zeroing
 * the value (*value_at). */
static char **env_plus(char **env, const char *name, const char *value, char **value_at)
{
	size_t n = 0, len = strlen(name) + strlen(value) + 2;
	char **out, *s;

	while (env && env[n])
		n++;
	out = malloc((n + 2) * sizeof(*out) + len);
	if (!out)
		return NULL;
	s = (char *)(out + n + 2);
	snprintf(s, len, "%s=%s", name, value);
	for (size_t i = 0; i < n; i++)
		out[i] = env[i];
	out[n] = s;
	out[n + 1] = NULL;
	*value_at = s;
	return out;
}

/* One PMIx client per node (see struct dlrt_exchange_req). No fence: the root
 * publishes its address, every other node's first task reads it and says so
 * (got), and the root leaves only once all of them did, so its node (whose
 * PMIx server holds the address) stays in the step until then. A first task
 * then lingers until the root is done (bounded, never an error), so its own
 * node stays while the root reads its "got". */
static int exchange_per_node(const struct dlrt_exchange_req *req, const char *kv, char **env,
			     struct dlrt_addrs *mine, struct dlrt_err *err)
{
	char timeout_s[16], root_s[DLRT_SVCADDR_MAX + 520];
	char *argv[24], **env2 = NULL, *value = NULL;
	size_t n = 0;
	int rc;

	snprintf(timeout_s, sizeof(timeout_s), "%d", req->timeout_s);
	argv[n++] = "dlrt-kv";
	argv[n++] = "--timeout";
	argv[n++] = timeout_s;
	if (req->rank == req->root) {
		uint16_t port = req->root_port;

		if (req->fail) {
			snprintf(root_s, sizeof(root_s), "!%s", req->fail);
			argv[n++] = "put";
			argv[n++] = "root";
			argv[n++] = root_s;
		} else if (req->secret) {
			dlrt_svcaddr_format(root_s, mine->node_ip, port, req->secret);
			env2 = env_plus(env, ROOT_VALUE_VAR, root_s, &value);
			memset(root_s, 0, sizeof(root_s));
			if (!env2)
				return dlrt_err_set(err, "out of memory");
			argv[n++] = "putenv";
			argv[n++] = "root";
			argv[n++] = ROOT_VALUE_VAR;
		} else {
			if (!port && dlrt_net_free_port(mine->node_ip, &port, err) < 0)
				return -1;
			snprintf(root_s, sizeof(root_s), "%s:%u", mine->node_ip, port);
			argv[n++] = "put";
			argv[n++] = "root";
			argv[n++] = root_s;
		}
		argv[n++] = "await";
		argv[n++] = "0";
		argv[n++] = "root";
		if (req->reps[0]) {
			argv[n++] = "awaitlist";
			argv[n++] = "got";
			argv[n++] = (char *)req->reps;
			argv[n++] = "put";
			argv[n++] = "done";
			argv[n++] = "1";
		}
	} else {
		argv[n++] = "await";
		argv[n++] = "0";
		argv[n++] = "root";
		argv[n++] = "put";
		argv[n++] = "got";
		argv[n++] = mine->node_ip;
		argv[n++] = "linger";
		argv[n++] = "0";
		argv[n++] = "done";
		argv[n++] = "5";
	}
	argv[n] = NULL;
	rc = run_kv_reply(kv, argv, env2 ? env2 : env, req, mine, NULL, err);
	if (value)
		memset(value, 0, strlen(value));
	free(env2);
	return rc;
}

int dlrt_exchange_root(spank_t sp, const struct dlrt_exchange_req *req, struct dlrt_addrs *mine,
		       struct dlrt_addrs *all, struct dlrt_err *err)
{
	char launch_ip[64] = "", kv[4096], timeout_s[16], root_s[64], rank_s[16];
	char *argv[24], **env = job_env(sp);
	size_t n = 0;

	memset(mine, 0, sizeof(*mine));
	if (!dlrt_exchange_possible(sp))
		return dlrt_err_set(err, "this step has no PMIx, which dlrt needs to tell every task "
				    "the root's address: add --mpi=pmix to srun, or ask your admin "
				    "for MpiDefault=pmix in slurm.conf");
	spank_getenv(sp, "SLURM_LAUNCH_NODE_IPADDR", launch_ip, sizeof(launch_ip));
	if (dlrt_net_node_ipv4(req->iface, launch_ip, mine->node_ip, err) < 0)
		return -1;
	snprintf(mine->iface, sizeof(mine->iface), "%s", req->iface ? req->iface : "");
	if (req->share && !all && req->local != 0)
		return wait_share(req, mine, 2 * req->timeout_s + 2 * EXCHANGE_SLACK_S, err);
	if (find_kv(kv, sizeof(kv), err) < 0)
		goto shared_fail;
	if (req->share && !all) {
		struct dlrt_node_share *sh = req->share;

		if (exchange_per_node(req, kv, env, mine, err) < 0)
			goto shared_fail;
		snprintf(sh->root, sizeof(sh->root), "%s:%u", mine->root_ip, mine->root_port);
		__atomic_store_n(&sh->state, 1, __ATOMIC_RELEASE);
		return 0;
	}
	snprintf(timeout_s, sizeof(timeout_s), "%d", req->timeout_s);
	snprintf(rank_s, sizeof(rank_s), "%u", req->root);
	/* The order matters on Slurm 22.05, whose PMIx plugin loses messages
	 * sent to a node whose slurmstepd does not exist yet or is still starting
	 * its tasks (with the user's uid it then rejects the munge credential of
	 * a new connection): a fence at task start hangs now and then under load.
	 * So the tasks first only *ask* (await: retried, each try bounded), and
	 * the root publishes its address only once every task has published its
	 * host, i.e. once every node has started its tasks. The closing fence
	 * then runs between running slurmstepds, and keeps the root's node in the
	 * step until every task has read the address. */
	argv[n++] = "dlrt-kv";
	argv[n++] = "--timeout";
	argv[n++] = timeout_s;
	argv[n++] = "put";
	argv[n++] = "host";
	argv[n++] = mine->node_ip;
	if (req->rank == req->root || all) {
		argv[n++] = "awaitall";
		argv[n++] = "host";
	}
	if (req->rank == req->root) {
		uint16_t port = req->root_port;

		if (!port && dlrt_net_free_port(mine->node_ip, &port, err) < 0)
			return -1;
		snprintf(root_s, sizeof(root_s), "%s:%u", mine->node_ip, port);
		argv[n++] = "put";
		argv[n++] = "root";
		argv[n++] = root_s;
	}
	argv[n++] = "await";
	argv[n++] = rank_s;
	argv[n++] = "root";
	argv[n++] = "fence";
	argv[n] = NULL;
	/* Two waits (the start, the closing fence), each bounded by the timeout. */
	if (run_kv_reply(kv, argv, env, req, mine, all, err) < 0)
		return -1;
	for (uint32_t t = 0; all && t < req->ntasks; t++) {
		char ip[sizeof(all[t].node_ip)];

		memcpy(ip, all[t].node_ip, sizeof(ip));
		all[t] = *mine;
		memcpy(all[t].node_ip, ip, sizeof(ip));
	}
	return 0;
shared_fail:
	/* The node's other tasks wait for this one: tell them why. */
	if (req->share && !all && req->local == 0) {
		snprintf(req->share->err, sizeof(req->share->err), "%s", err->msg);
		__atomic_store_n(&req->share->state, 2, __ATOMIC_RELEASE);
	}
	return -1;
}
