/* exchange.c - the address exchange, in each task just before exec.
 *
 * Runtimes whose tasks must find a root (a scheduler, a rank 0) learn its
 * address from the root task itself. The root picks a port that is free on
 * its node right now (or passes the port of a service the plugin started)
 * and publishes "ip:port"; the first task of every other node waits for it.
 * No redis, ZooKeeper or file. What carries the values is the step's choice
 * (exchange_via.h): Slurm's PMIx (exchange_pmix.c) or the key/value store
 * srun runs for the step (here, exchange/rdvclient.h: the task itself asks,
 * in one round trip; srun lives until the step ends, so the root's value
 * stays readable for every node that comes late).
 *
 * Runtimes whose every task listens (needs_task_ports) also get a port per
 * task: each node's first task checks one free port for each of its node's
 * tasks and publishes them next to its address ("tports"); every node's first
 * task reads them all.
 *
 * The answers are written as lines in the format exchange_reply.h reads, so
 * one tested parser reads every value that came over the network.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <slurm/slurm.h>
#include <slurm/spank.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/slurm_compat.h"
#include "exchange.h"
#include "hetstep.h"
#include "exchange_via.h"
#include "exchange/exchange_reply.h"
#include "common/netaddr.h"
#include "runtime/opts.h"
#include "exchange/rdvclient.h"
#include "common/env.h"
#include "plugin.h"
#include "services/svcauth.h"

/* Time the first task of a node may take beyond exchange_timeout (its checks
 * of free ports, connecting), as the node's other tasks wait for it. */
#define EXCHANGE_SLACK_S 2

bool dlrt_exchange_pmix_possible(spank_t sp)
{
	char **env = dlrt_task_environ(sp);

	return dlrt_envp_get(env, "PMIX_NAMESPACE") && dlrt_envp_get(env, "PMIX_RANK");
}

/* The first task of a node ends the wait of the others: the state word of
 * the page they share (mapped before slurmstepd forked them, so a futex on it
 * is one object in every task), set and woken in one place. */
static void share_finish(struct dlrt_node_share *sh, int state)
{
	__atomic_store_n(&sh->state, state, __ATOMIC_RELEASE);
	syscall(SYS_futex, &sh->state, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* The other tasks of a node: sleep until the first one's answer. A futex,
 * not a poll: with several tasks per node the polls of the waiting tasks
 * were most of what the exchange cost the node's CPU while the first task
 * waited for the root (bench/RESULTS.md, "CPU ms/node"). */
static int wait_share(const struct dlrt_exchange_req *req, struct dlrt_addrs *mine, double limit_s,
		      struct dlrt_err *err)
{
	int64_t deadline = dlrt_now_ms() + (int64_t)(limit_s * 1000);

	for (;;) {
		int state = __atomic_load_n(&req->share->state, __ATOMIC_ACQUIRE);
		int64_t left = deadline - dlrt_now_ms();

		if (state == 1)
			break;
		if (state == 2)
			return dlrt_err_set(err, "%s", req->share->err);
		if (left <= 0)
			return dlrt_err_set(err, "the first task of this node did not finish the address "
					    "exchange within %.0f s (did it start? see the slurmd log)",
					    limit_s);
		/* Returns at once if the state is no longer 0; EINTR and spurious
		 * wake-ups go round the loop, which rechecks the deadline. */
		syscall(SYS_futex, &req->share->state, FUTEX_WAIT, 0,
			&(struct timespec){ left / 1000, (left % 1000) * 1000000 }, NULL, 0);
	}
	if (dlrt_net_parse_hostport(req->share->root, mine->root_ip, &mine->root_port) < 0)
		return dlrt_err_set(err, "the first task of this node shared a bad root address");
	if (req->nlocal)
		mine->tasks = req->share->tasks;
	mine->valid = true;
	return 0;
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


int dlrt_exchange_rdv_take(spank_t sp, struct dlrt_rdv_coords *c)
{
	char **env = dlrt_task_environ(sp);
	const char *v = dlrt_envp_get(env, DLRT_RDV_ENV), *ip = dlrt_envp_get(env, "SLURM_LAUNCH_NODE_IPADDR");
	struct in_addr a;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	if (!v)
		return 0;
	if (ip && strlen(ip) < sizeof(c->ip) && inet_pton(AF_INET, ip, &a) == 1 &&
	    dlrt_rdv_env_parse(v, &c->port, c->secret) == 0) {
		snprintf(c->ip, sizeof(c->ip), "%s", ip);
		rc = 1;
	} else {
		memset(c, 0, sizeof(*c));
	}
	/* The program never sees it: it is the step's, not the program's, and a
	 * program that prints its environment into a shared log must not show it. */
	spank_unsetenv(sp, DLRT_RDV_ENV);
	return rc;
}

/* The root's value: its address ("ip:port") or "!<why>" when it cannot
 * serve. A node service's key never travels: every node derives it from the
 * step secret srun gave it (dlrt_exchange_service_key). */
static int root_value(const struct dlrt_exchange_req *req, const struct dlrt_addrs *mine,
		      char *out, size_t len, struct dlrt_err *err)
{
	uint16_t port = req->root_port;

	if (req->fail) {
		snprintf(out, len, "!%s", req->fail);
		return 0;
	}
	if (!port && dlrt_net_free_port(mine->node_ip, &port, err) < 0)
		return -1;
	snprintf(out, len, "%s:%u", mine->node_ip, port);
	return 0;
}

static int xlist_init(struct dlrt_xlist *l, size_t cap, const struct dlrt_exchange_req *req,
		      struct dlrt_err *err)
{
	l->n = 0;
	l->cap = cap;
	l->step_id = req->step_id;
	l->v = calloc(cap ? cap : 1, sizeof(*l->v));
	return l->v ? 0 : dlrt_err_set(err, "out of memory");
}

/* The value and its name on either carrier, "dlrt/<step>/<what>[/<rank>]",
 * which its signature binds too (exchange_via.h): named here alone. */
static void xlist_add(struct dlrt_xlist *l, const char *what, long rank, const char *value)
{
	struct dlrt_xvalue *v;

	if (l->n == l->cap)
		return;
	v = &l->v[l->n++];
	snprintf(v->what, sizeof(v->what), "%s", what);
	v->rank = rank;
	if (rank >= 0)
		snprintf(v->key, sizeof(v->key), "dlrt/%u/%s/%ld", l->step_id, what, rank);
	else
		snprintf(v->key, sizeof(v->key), "dlrt/%u/%s", l->step_id, what);
	v->value = value;
}

/* On the root task: its value into root_s (len bytes), published as "root". */
static int publish_root(struct dlrt_xlist *pub, const struct dlrt_exchange_req *req,
			const struct dlrt_addrs *mine, char *root_s, size_t len,
			struct dlrt_err *err)
{
	if (req->rank != req->root)
		return 0;
	if (root_value(req, mine, root_s, len, err) < 0)
		return -1;
	xlist_add(pub, "root", -1, root_s);
	return 0;
}

/* The carrier the step chose (req->via). */
static int carry(const struct dlrt_exchange_req *req, bool per_node, const struct dlrt_xlist *pub,
		 const struct dlrt_xlist *want, struct dlrt_buf *text, struct dlrt_err *err)
{
	if (req->via == DLRT_EXCHANGE_PMIX)
		return dlrt_exchange_via_pmix(req, per_node, pub, want, text, err);
	return dlrt_exchange_via_srun(req, pub, want, text, err);
}

/* One exchange per node (struct dlrt_exchange_req): the root's node
 * publishes the root's value; every node's first task publishes its task
 * ports if the runtime needs them, then reads the root's value and every
 * other node's ports, in one round trip to srun's rendezvous. */
static int exchange_per_node(const struct dlrt_exchange_req *req, struct dlrt_addrs *mine,
			     struct dlrt_err *err)
{
	char root_s[DLRT_SVCADDR_MAX + 520], *tports = NULL;
	struct dlrt_xlist pub = { 0 }, want = { 0 };
	struct dlrt_buf text;
	int rc = -1;

	dlrt_buf_init(&text, (size_t)req->ntasks * 48 + 65536);
	/* The peers are at most the entries of "R,R,...", plus the root. */
	if (xlist_init(&pub, 2, req, err) < 0 ||
	    xlist_init(&want, strlen(req->reps) / 2 + 3, req, err) < 0)
		goto out;
	xlist_add(&want, "root", -1, NULL);
	if (publish_root(&pub, req, mine, root_s, sizeof(root_s), err) < 0)
		goto out;
	if (req->nlocal) {
		size_t peers_len = strlen(req->reps) + 16;
		char *peers = malloc(peers_len);

		tports = malloc(4096);
		if (!tports || !peers) {
			free(peers);
			dlrt_err_set(err, "out of memory");
			goto out;
		}
		/* The root that cannot serve publishes no ports: "!" ends the
		 * other nodes' wait for them; its "!<fail>" root says why. */
		if (req->fail)
			snprintf(tports, 4096, "!");
		else if (task_ports_value(req, mine->node_ip, tports, 4096, err) < 0) {
			free(peers);
			goto out;
		}
		xlist_add(&pub, "tports", req->rank, tports);
		task_ports_peers(req, peers, peers_len);
		for (const char *r = peers; *r;) {
			char *end;
			unsigned long rank = strtoul(r, &end, 10);

			if (end == r)
				break;
			xlist_add(&want, "tports", (long)rank, NULL);
			r = end + (*end == ',');
		}
		free(peers);
	}
	/* One node: the root's node is the only one, and it knows its own
	 * value: nothing to carry, no PMIx client, no round trip. */
	if (!req->reps[0] && req->rank == req->root) {
		if (dlrt_buf_append(&text, root_s, strlen(root_s)) < 0 ||
		    dlrt_buf_append(&text, "\n", 1) < 0) {
			dlrt_err_set(err, "out of memory");
			goto out;
		}
	} else if (carry(req, true, &pub, &want, &text, err) < 0) {
		goto out;
	}
	rc = dlrt_exchange_reply_parse_tasks((const char *)dlrt_buf_head(&text), text.len,
					     req->ntasks, mine, NULL,
					     req->nlocal ? req->share->tasks : NULL, err);
	for (uint32_t t = 0; rc == 0 && req->nlocal && t < req->ntasks; t++)
		if (!req->share->tasks[t].port)
			rc = dlrt_err_set(err, "the exchange returned no port for task %u: the nodes "
					  "run different dlrt versions? reinstall dlrt on every "
					  "node", t);
	if (rc == 0 && req->nlocal)
		mine->tasks = req->share->tasks;
	if (rc == 0)
		mine->valid = true;
out:
	memset(root_s, 0, sizeof(root_s));
	if (text.len)
		memset(dlrt_buf_head(&text), 0, text.len);
	dlrt_buf_free(&text);
	free(tports);
	free(pub.v);
	free(want.v);
	return rc;
}

/* --dl-dry-run: every task publishes its node's address, and task 0 reads
 * every task's, to print them all. */
static int exchange_every_task(const struct dlrt_exchange_req *req, struct dlrt_addrs *mine,
			       struct dlrt_addrs *all, struct dlrt_err *err)
{
	char root_s[DLRT_SVCADDR_MAX + 520];
	struct dlrt_xlist pub = { 0 }, want = { 0 };
	struct dlrt_buf text;
	int rc = -1;

	dlrt_buf_init(&text, (size_t)req->ntasks * 48 + 65536);
	if (xlist_init(&pub, 2, req, err) < 0 ||
	    xlist_init(&want, all ? (size_t)req->ntasks + 1 : 1, req, err) < 0)
		goto out;
	xlist_add(&want, "root", -1, NULL);
	xlist_add(&pub, "host", req->rank, mine->node_ip);
	if (publish_root(&pub, req, mine, root_s, sizeof(root_s), err) < 0)
		goto out;
	for (uint32_t t = 0; all && t < req->ntasks; t++)
		xlist_add(&want, "host", (long)t, NULL);
	if (carry(req, false, &pub, &want, &text, err) < 0)
		goto out;
	rc = dlrt_exchange_reply_parse((const char *)dlrt_buf_head(&text), text.len, req->ntasks,
				       mine, all, err);
	if (rc == 0)
		mine->valid = true;
out:
	memset(root_s, 0, sizeof(root_s));
	dlrt_buf_free(&text);
	free(pub.v);
	free(want.v);
	return rc;
}

int dlrt_exchange_root(spank_t sp, const struct dlrt_exchange_req *req, struct dlrt_addrs *mine,
		       struct dlrt_addrs *all, struct dlrt_err *err)
{
	char launch_ip[64] = "";

	memset(mine, 0, sizeof(*mine));
	dlrt_task_getenv(sp, "SLURM_LAUNCH_NODE_IPADDR", launch_ip, sizeof(launch_ip));
	if (dlrt_net_node_ipv4(req->iface, launch_ip, mine->node_ip, err) < 0)
		goto shared_fail;
	snprintf(mine->iface, sizeof(mine->iface), "%s", req->iface ? req->iface : "");
	if (req->nlocal && !req->share && !all)
		return dlrt_err_set(err, "cannot map the page the tasks of this node share their "
				    "ports through (out of memory?): retry the step");
	if (req->share && !all && req->local != 0)
		return wait_share(req, mine, req->timeout_s + 2 * EXCHANGE_SLACK_S, err);
	if (req->share && !all) {
		struct dlrt_node_share *sh = req->share;

		if (exchange_per_node(req, mine, err) < 0)
			goto shared_fail;
		snprintf(sh->root, sizeof(sh->root), "%s:%u", mine->root_ip, mine->root_port);
		share_finish(sh, 1);
		return 0;
	}
	if (exchange_every_task(req, mine, all, err) < 0)
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
		share_finish(req->share, 2);
	}
	return -1;
}

/* ---- The decision: what carries the exchange, and which tasks take part ----
 *
 * srun chooses the carrier once for the whole step (dlrt_exchange_choose) and
 * hands every task its choice with the step secret in DLRT_RDV_ENV; each task
 * then decides whether its program takes the exchange at all
 * (dlrt_exchange_task_plan). Nothing else decides either. */

/* SLURM_MPI_TYPE in srun's environment: "pmix", "pmix_v4", ... srun puts the
 * step's MPI plugin (--mpi, else MpiDefault) there before any plugin runs
 * (seen on 22.05). */
static bool step_mpi_is_pmix(void)
{
	const char *mpi = getenv("SLURM_MPI_TYPE");
	char het[64];

	/* A heterogeneous step is chosen for in init_post_opt, before 24.11's
	 * srun exports it (hetstep.h). */
	if (dlrt_hetstep_client_het())
		mpi = dlrt_hetstep_client_mpi(het, sizeof(het)) == 0 ? het : NULL;
	return mpi && !strncmp(mpi, "pmix", 4);
}

/* Whether no other user can have a process on the job's nodes: the job holds
 * them whole (--exclusive, OverSubscribe=EXCLUSIVE) or for its user alone
 * (--exclusive=user, ExclusiveUser=YES). slurmctld reports both in the job's
 * `shared` (JOB_SHARED_NONE, JOB_SHARED_USER); a job it cannot tell us about
 * counts as shared. One RPC, from srun only. A heterogeneous step is chosen
 * for before its step exists (hetstep.h), so its job is the allocation's
 * (SLURM_JOB_ID, the het job's leader), and every component, each a job of
 * its own that slurmctld reports with the leader, must hold its nodes so. */
static bool job_nodes_private(spank_t sp)
{
	job_info_msg_t *msg = NULL;
	const char *leader = getenv("SLURM_JOB_ID");
	bool het = dlrt_hetstep_client_het(), private = true;
	uint32_t job = 0, seen = 0;

	if (het ? !leader || dlrt_parse_u32(leader, 1, UINT32_MAX - 1, &job) < 0 :
		  spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS)
		return false;
	if (dlrt_slurm_load_job(&msg, job, SHOW_ALL) == SLURM_SUCCESS && msg) {
		for (uint32_t i = 0; i < msg->record_count && seen < (het ? UINT32_MAX : 1); i++) {
			const slurm_job_info_t *r = &msg->job_array[i];

			if (het && r->het_job_id != job)
				continue;
			seen++;
			private = private && (r->shared == JOB_SHARED_NONE ||
					      r->shared == JOB_SHARED_USER);
		}
	}
	if (msg)
		slurm_free_job_info_msg(msg);
	return seen && private;
}

/* Whether every process of an ended job is gone from its nodes: slurmctld's
 * ProctrackType (into `name`). Only proctrack/cgroup holds all of a job's
 * processes (one that left its session with setsid stays in the job's
 * cgroup) and ends them with the job; linuxproc and pgid lose such a process,
 * which then stays on the node, into the next job's exclusive allocation. One
 * RPC, from srun only; a controller that does not answer counts as no. */
static bool proctrack_ends_jobs(char *name, size_t len)
{
	slurm_conf_t *conf = NULL;
	bool ends = false;

	snprintf(name, len, "unknown (slurmctld did not answer)");
	if (slurm_load_ctl_conf((time_t)0, &conf) != SLURM_SUCCESS || !conf)
		return false;
	if (conf->proctrack_type) {
		snprintf(name, len, "%s", conf->proctrack_type);
		ends = !strcmp(conf->proctrack_type, "proctrack/cgroup");
	}
	dlrt_slurm_free_conf(conf);
	return ends;
}

/* Whether no other user's process can be on the job's nodes: the job holds
 * them alone AND the process tracking ended every earlier job's processes
 * there. If not, `risk` says why, for the lines that name the choice. */
static bool nodes_closed(spank_t sp, char *risk, size_t len)
{
	char pt[64];

	if (!job_nodes_private(sp)) {
		snprintf(risk, len, "other users may be on the job's nodes (it does not hold them "
			 "alone)");
		return false;
	}
	if (!proctrack_ends_jobs(pt, sizeof(pt))) {
		snprintf(risk, len, "the job holds its nodes alone, but with ProctrackType=%s a "
			 "process an earlier job of another user left behind (setsid) may still "
			 "be there: only proctrack/cgroup ends them all", pt);
		return false;
	}
	return true;
}

enum dlrt_exchange_via dlrt_exchange_choose(spank_t sp, enum dlrt_exchange_via option, char *why,
					    size_t len, bool *risky)
{
	char risk[256];

	*risky = false;
	switch (option) {
	case DLRT_EXCHANGE_SRUN:
		snprintf(why, len, "--dl-exchange=srun");
		return DLRT_EXCHANGE_SRUN;
	case DLRT_EXCHANGE_PMIX:
		*risky = !nodes_closed(sp, risk, sizeof(risk));
		snprintf(why, len, "--dl-exchange=pmix%s%s", *risky ? ", though " : "",
			 *risky ? risk : "");
		return DLRT_EXCHANGE_PMIX;
	case DLRT_EXCHANGE_AUTO:
		break;
	}
	if (!step_mpi_is_pmix()) {
		snprintf(why, len, "auto, and the step has no PMIx server (its --mpi is not pmix)");
		return DLRT_EXCHANGE_SRUN;
	}
#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(24, 11, 0)
	/* Decided by the Slurm dlrt is built against: slurmd and srun load a
	 * plugin of their own release only. */
	if (dlrt_hetstep_client_het()) {
		snprintf(why, len, "auto, and a heterogeneous step on Slurm before 24.11, whose "
			 "srun --mpi=pmix may hang at such a step's end (SchedMD ticket 16817; "
			 "docs/hetjob.md)");
		return DLRT_EXCHANGE_SRUN;
	}
#endif
	/* Slurm's PMIx admits anyone on a node who states the job owner's uid
	 * (docs/SECURITY.md): taken only where nobody else can be. */
	if (!nodes_closed(sp, risk, sizeof(risk))) {
		snprintf(why, len, "auto, and %s; Slurm's PMIx admits any process of the node that "
			 "states the job owner's uid (docs/ADMIN.md says when auto takes PMIx)",
			 risk);
		return DLRT_EXCHANGE_SRUN;
	}
	snprintf(why, len, "auto, a --mpi=pmix step on nodes the job holds alone, where "
		 "proctrack/cgroup ended every earlier job's processes");
	return DLRT_EXCHANGE_PMIX;
}

void dlrt_exchange_service_key(const uint8_t step_secret[DLRT_SVCAUTH_SECRET_LEN],
			       uint8_t key[DLRT_SVCAUTH_SECRET_LEN])
{
	static const char label[] = "dlrt node service key v1";

	dlrt_crypto_hmac_sha256(step_secret, DLRT_SVCAUTH_SECRET_LEN, label, sizeof(label), key);
}

bool dlrt_exchange_program_takes(spank_t sp, bool say)
{
	char mode[16] = "";
	const char *prog;

	dlrt_task_getenv(sp, "DLRT_EXCHANGE", mode, sizeof(mode));
	if (!strcmp(mode, "none"))
		return false;
	if (!strcmp(mode, "yes") || !strcmp(mode, "pmix"))
		return true;
	/* Never read by root: progcheck.c. */
	if (dlrt_stepd_program_links_mpi(sp, &prog)) {
		if (say)
			fprintf(stderr, "dlrt: %s links MPI/PMIx: no address exchange before exec, "
				"the program's MPI does the wire-up (DLRT_EXCHANGE=yes forces "
				"it)\n", prog);
		return false;
	}
	return true;
}

/* srun's coordinates for this task, read (and removed from the program's
 * environment) once at the start of task_init, and the task's plan. task_init
 * runs in the task's own process, so these are per task. */
static struct dlrt_rdv_coords task_rdv;
static int task_rdv_state;
static struct dlrt_exchange_plan task_plan = { .part = DLRT_XPART_UNDECIDED };

void dlrt_exchange_task_start(spank_t sp)
{
	task_rdv_state = dlrt_exchange_rdv_take(sp, &task_rdv);
}

/* What srun chose: its rendezvous (a port), or Slurm's PMIx (port 0), which
 * this task must then be a client of. */
static int task_carrier(spank_t sp, enum dlrt_exchange_via *via, struct dlrt_err *err)
{
	if (task_rdv_state <= 0)
		return dlrt_err_set(err, "this step has no dlrt step secret (%s %s): start the "
				    "step with srun on a host where dlrt is installed and enabled "
				    "in plugstack.conf", DLRT_RDV_ENV,
				    task_rdv_state < 0 ? "is malformed" : "was not set by srun");
	if (task_rdv.port) {
		*via = DLRT_EXCHANGE_SRUN;
		return 0;
	}
	if (!dlrt_exchange_pmix_possible(sp))
		return dlrt_err_set(err, "--dl-exchange=pmix: this step has no PMIx server "
				    "(no PMIX_NAMESPACE in its tasks): start it with srun "
				    "--mpi=pmix (or MpiDefault=pmix in slurm.conf), or use "
				    "--dl-exchange=srun");
	*via = DLRT_EXCHANGE_PMIX;
	return 0;
}

int dlrt_exchange_task_plan(spank_t sp, bool needed, bool say,
			    const struct dlrt_exchange_plan **plan, struct dlrt_err *err)
{
	*plan = &task_plan;
	if (task_plan.part == DLRT_XPART_UNDECIDED) {
		task_plan.rdv = &task_rdv;
		if (!needed)
			task_plan.part = DLRT_XPART_NONE;
		else if (!dlrt_exchange_program_takes(sp, say))
			task_plan.part = DLRT_XPART_SKIPPED;
		else
			task_plan.part = DLRT_XPART_TAKES;
		if (task_plan.part == DLRT_XPART_TAKES &&
		    task_carrier(sp, &task_plan.via, &task_plan.err) < 0)
			task_plan.part = DLRT_XPART_NO_CARRIER;
	}
	if (task_plan.part == DLRT_XPART_NO_CARRIER) {
		*err = task_plan.err;
		return -1;
	}
	return 0;
}
