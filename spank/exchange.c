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
 * Runtimes whose every task listens (needs_task_ports) also get
 * a port per task: each node's first task checks one free port for each of
 * its node's tasks and publishes them next to its address ("tports"); every
 * node's first task reads them all. Other runtimes run the exchange as
 * before, word for word.
 *
 * Only for runtimes whose programs do not use PMIx themselves (see
 * pmix_bridge.h for why).
 */
#include <dlfcn.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <slurm/spank.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "exchange.h"
#include "exchange_reply.h"
#include "instpath.h"
#include "netaddr.h"
#include "opts.h"
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
			struct dlrt_addrs *all, struct dlrt_task_addr *tasks, struct dlrt_err *err)
{
	char *text = NULL;
	size_t textlen = 0;
	int status = run_kv(kv, argv, env, 2 * req->timeout_s + EXCHANGE_SLACK_S, &text,
			    &textlen, (size_t)req->ntasks * 48 + 4096, err);

	if (status < 0)
		return -1;
	if (dlrt_exchange_reply_parse_tasks(text, textlen, req->ntasks, mine, all, tasks, err) < 0) {
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
	if (req->nlocal)
		mine->tasks = req->share->tasks;
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

/* One free port for each of this node's tasks, all held open at once so
 * they differ, bound on every address (0.0.0.0) because that is where a
 * framework's per-task server binds it (docs/contracts.md). */
static int free_task_ports(uint32_t n, uint16_t *ports, struct dlrt_err *err)
{
	int *fds = malloc(n * sizeof(*fds));
	uint32_t opened = 0;
	int rc = 0;

	if (!fds)
		return dlrt_err_set(err, "out of memory");
	for (; opened < n; opened++) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = INADDR_ANY };
		socklen_t len = sizeof(sa);

		fds[opened] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[opened] < 0 || bind(fds[opened], (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    getsockname(fds[opened], (struct sockaddr *)&sa, &len) < 0) {
			rc = dlrt_err_errno(err, errno, "cannot find %u free TCP ports on this node "
					    "for its tasks", n);
			if (fds[opened] >= 0)
				close(fds[opened]);
			break;
		}
		ports[opened] = ntohs(sa.sin_port);
	}
	while (opened)
		close(fds[--opened]);
	free(fds);
	return rc;
}

/* This node's "IP:T=P,T=P,...", its tasks filled in share->tasks. */
static int task_ports_value(const struct dlrt_exchange_req *req, const char *ip, char *out,
			    size_t len, struct dlrt_err *err)
{
	uint16_t ports[DLRT_EXCHANGE_NODE_TASKS_MAX];
	size_t off;

	if (req->nlocal > DLRT_EXCHANGE_NODE_TASKS_MAX)
		return dlrt_err_set(err, "this node runs %u tasks and dlrt exchanges a port for at "
				    "most %d tasks per node: use fewer tasks per node (more nodes, "
				    "or threads inside each task)", req->nlocal,
				    DLRT_EXCHANGE_NODE_TASKS_MAX);
	if (free_task_ports(req->nlocal, ports, err) < 0)
		return -1;
	off = (size_t)snprintf(out, len, "%s:", ip);
	for (uint32_t i = 0; i < req->nlocal && off < len; i++) {
		struct dlrt_task_addr *t = &req->share->tasks[req->local_tasks[i]];

		snprintf(t->ip, sizeof(t->ip), "%s", ip);
		t->port = ports[i];
		off += (size_t)snprintf(out + off, len - off, "%s%u=%u", i ? "," : "",
					req->local_tasks[i], ports[i]);
	}
	if (off >= len)
		return dlrt_err_set(err, "the task ports of this node do not fit in %zu bytes", len);
	return 0;
}

/* "R,R,...": the first tasks of every node but this one (the root's too). */
static void task_ports_peers(const struct dlrt_exchange_req *req, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	if (req->rank != req->root)
		off = (size_t)snprintf(out, len, "%u", req->root);
	for (const char *r = req->reps; *r && off < len;) {
		size_t n = strcspn(r, ",");
		char one[16];
		uint32_t rank;

		if (n && n < sizeof(one)) {
			memcpy(one, r, n);
			one[n] = '\0';
			if (dlrt_parse_u32(one, 0, UINT32_MAX - 1, &rank) == 0 && rank != req->rank)
				off += (size_t)snprintf(out + off, len - off, "%s%u", off ? "," : "",
							rank);
		}
		r += n + (r[n] == ',');
	}
}

/* The acknowledgements run up a binary tree over the nodes, so the root waits
 * for two nodes, not for every node in turn: node i (0 = the root's node, then
 * the nodes in the order of req->reps) reads the "got" of nodes 2i+1 and 2i+2
 * before it publishes its own, which thus says "this node and every node
 * below it have the root's address". Fills `kids` with the children's ranks
 * ("R,R" or "") and returns the parent's rank (the root for the root itself). */
static uint32_t tree_links(const struct dlrt_exchange_req *req, char *kids, size_t len)
{
	uint32_t idx = 0, me = 0, parent = req->root, nkids = 0;
	size_t off = 0;

	kids[0] = '\0';
	if (req->rank != req->root)
		for (const char *r = req->reps; *r; idx++) {
			if (strtoul(r, NULL, 10) == req->rank)
				me = idx + 1;
			r += strcspn(r, ",");
			r += *r == ',';
		}
	idx = 0;
	for (const char *r = req->reps; *r; idx++) {
		uint32_t rank = (uint32_t)strtoul(r, NULL, 10), pos = idx + 1;

		if (pos == 2 * me + 1 || pos == 2 * me + 2) {
			off += (size_t)snprintf(kids + off, len - off, "%s%u", nkids++ ? "," : "",
						rank);
			if (off >= len)
				off = len - 1;
		}
		if (me && pos == (me - 1) / 2)
			parent = rank;
		r += strcspn(r, ",");
		r += *r == ',';
	}
	return parent;
}

/* One PMIx client per node (see struct dlrt_exchange_req). No fence: the root
 * publishes its address, every other node's first task reads it and says so
 * (got) once its children in the tree (tree_links) said so too, and the root
 * leaves only once its own children did, so its node (whose PMIx server holds
 * the address) stays in the step until every node has it. A first task then
 * lingers until its parent published its own "got" (or the root "done";
 * bounded, never an error), so its node stays while the parent reads it. */
static int exchange_per_node(const struct dlrt_exchange_req *req, const char *kv, char **env,
			     struct dlrt_addrs *mine, struct dlrt_err *err)
{
	char timeout_s[16], root_s[DLRT_SVCADDR_MAX + 520], kids[24], parent_s[16];
	char *argv[32], **env2 = NULL, *value = NULL, *tports = NULL, *peers = NULL;
	size_t n = 0, peers_len = strlen(req->reps) + 16;
	int rc;

	uint32_t parent = tree_links(req, kids, sizeof(kids));

	snprintf(timeout_s, sizeof(timeout_s), "%d", req->timeout_s);
	snprintf(parent_s, sizeof(parent_s), "%u", parent);
	argv[n++] = "dlrt-kv";
	argv[n++] = "--timeout";
	argv[n++] = timeout_s;
	/* Task ports: published first, read after the root's address (which
	 * every node's first task awaits anyway), before "got", so a node says
	 * "got" only once it has every node's ports. */
	if (req->nlocal) {
		tports = malloc(4096);
		peers = malloc(peers_len);
		if (!tports || !peers) {
			free(tports);
			free(peers);
			return dlrt_err_set(err, "out of memory");
		}
		/* The root that cannot serve publishes no ports: "!" ends the
		 * other nodes' wait for them; its "!<fail>" root says why. */
		if (req->fail)
			snprintf(tports, 4096, "!");
		else if (task_ports_value(req, mine->node_ip, tports, 4096, err) < 0) {
			free(tports);
			free(peers);
			return -1;
		}
		task_ports_peers(req, peers, peers_len);
		argv[n++] = "put";
		argv[n++] = "tports";
		argv[n++] = tports;
	}
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
	}
	/* Every node: the root's value, the other nodes' task ports, then the
	 * acknowledgements of its children in the tree. */
	argv[n++] = "await";
	argv[n++] = "0";
	argv[n++] = "root";
	if (peers && peers[0]) {
		argv[n++] = "awaitlist";
		argv[n++] = "tports";
		argv[n++] = peers;
	}
	if (kids[0]) {
		argv[n++] = "awaitlist";
		argv[n++] = "got";
		argv[n++] = kids;
	}
	if (req->rank == req->root) {
		if (kids[0]) {
			argv[n++] = "put";
			argv[n++] = "done";
			argv[n++] = "1";
		}
	} else {
		argv[n++] = "put";
		argv[n++] = "got";
		argv[n++] = mine->node_ip;
		argv[n++] = "linger";
		argv[n++] = parent_s;
		argv[n++] = parent == req->root ? "done" : "got";
		argv[n++] = "5";
	}
	argv[n] = NULL;
	rc = run_kv_reply(kv, argv, env2 ? env2 : env, req, mine, NULL,
			  req->nlocal ? req->share->tasks : NULL, err);
	if (value)
		memset(value, 0, strlen(value));
	free(env2);
	free(tports);
	free(peers);
	for (uint32_t t = 0; rc == 0 && req->nlocal && t < req->ntasks; t++)
		if (!req->share->tasks[t].port)
			rc = dlrt_err_set(err, "the PMIx exchange returned no port for task %u: "
					  "the nodes run different dlrt versions? reinstall dlrt "
					  "on every node", t);
	if (rc == 0 && req->nlocal)
		mine->tasks = req->share->tasks;
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
	if (req->nlocal && !req->share && !all)
		return dlrt_err_set(err, "cannot map the page the tasks of this node share their "
				    "ports through (out of memory?): retry the step");
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
	if (run_kv_reply(kv, argv, env, req, mine, all, NULL, err) < 0)
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
