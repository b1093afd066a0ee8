/* stepd.c - slurmstepd (remote context): the role of every task.
 *
 * user_init runs once per node as the user, before the tasks fork: it rebuilds
 * the step's layout and role table. task_init runs in each task just before
 * exec: it checks that Slurm put this task where the layout says, then sets
 * the task's environment (or, with --dl-dry-run, prints the table and exits).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <slurm/slurm.h>
#include <slurm/spank.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/instpath.h"
#include "exchange/elfneeds.h"
#include "jobpolicy/contcheck.h"
#include "jobpolicy/launchcheck.h"
#include "exchange.h"
#include "hetstep.h"
#include "exchange/rdvclient.h"
#include "runtime/plan_print.h"
#include "plugin.h"
#include "services/svcauth.h"

#define ENV_MAX 4096

/* Fails this task: the first task of each node prints the one line, every task
 * exits 1 so srun exits non-zero. We exit instead of returning -1 because Slurm
 * ignores the return codes of `optional` plugins (see client.c). */
static void __attribute__((noreturn)) task_fail(int local, const char *msg)
{
	if (local == 0)
		slurm_error("dlrt: %s", msg);
	dlrt_failfast_prexec_failed();
	_exit(1);
}

static int defer(const struct dlrt_err *err)
{
	dlrt_plugin.deferred_rc = -1;
	dlrt_plugin.deferred_err = *err;
	return 0;
}

/* srun refused this very step after Slurm had created it (client.c,
 * refuse_step). The value names the step, so one inherited from elsewhere
 * (a job's environment, an outer step) never matches. */
static bool step_refused(spank_t sp)
{
	char want[32], got[32] = "";

	snprintf(want, sizeof(want), "%u.%u", dlrt_plugin.step.job_id, dlrt_plugin.step.step_id);
	if (dlrt_task_getenv(sp, DLRT_REFUSED_ENV, got, sizeof(got)) < 0)
		return false;
	spank_unsetenv(sp, DLRT_REFUSED_ENV);
	return !strcmp(got, want);
}

int dlrt_stepd_post_opt(spank_t sp)
{
	uint32_t stepid = 0;
	struct dlrt_err err;

	if (dlrt_plugin.opt_failed) {
		/* srun already refused such a value; this only guards direct launches. */
		return defer(&dlrt_plugin.opt_err);
	}
	/* Here, in slurmstepd's own process: the pipes of what user_init starts
	 * (the batch step's watcher too), before user_init may run apart. */
	dlrt_stepd_pipes_make(dlrt_plugin.opts.runtime || dlrt_plugin.opts.requeue);
	if (!dlrt_plugin.opts.runtime)
		return 0;
	if (spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS)
		return 0;
	/* Only steps launched by srun get roles: never the batch script, the extern
	 * step or salloc's interactive step (their ids are above the normal range). */
	if (stepid > SLURM_MAX_NORMAL_STEP_ID)
		return 0;
	dlrt_plugin.step.step_id = stepid;
	spank_get_item(sp, S_JOB_ID, &dlrt_plugin.step.job_id);
	if (step_refused(sp)) {
		dlrt_plugin.refused = true;
		return 0;
	}
	dlrt_plugin.active = true;
	dlrt_plugin.step.restart_count = dlrt_restart_count(sp);
	{
		uint32_t array_job = 0, array_task = 0;

		/* Array elements are separate jobs; a runtime may give element 0
		 * another role than the rest (struct dlrt_step_info). */
		if (spank_get_item(sp, S_JOB_ARRAY_ID, &array_job) == ESPANK_SUCCESS && array_job &&
		    spank_get_item(sp, S_JOB_ARRAY_TASK_ID, &array_task) == ESPANK_SUCCESS) {
			dlrt_plugin.step.in_array = true;
			dlrt_plugin.step.array_job_id = array_job;
			dlrt_plugin.step.array_task_id = array_task;
		}
	}
	if (!dlrt_plugin.config_ok) {
		dlrt_err_set(&err, "plugstack.conf has an error (see the slurmd log); ask your "
			     "admin to fix it");
		return defer(&err);
	}
	dlrt_failfast_post_opt();
	return 0;
}

/* The runtime's node service, if this step needs one: every node learns that
 * it does (its tasks then run the exchange), the node of task 0 starts it
 * here, before any task of the step exists (service.c). */
static int ctx_getenv(void *sp, const char *name, char *buf, size_t len);

static int start_service(spank_t sp, struct dlrt_err *err)
{
	const struct dlrt_runtime *rt = dlrt_plugin.opts.runtime;
	const struct dlrt_step_ctx ctx = { .getenv = ctx_getenv, .sp = sp };
	struct dlrt_service_spec spec;
	int rc = 0;

	if (!rt->service)
		return 0;
	/* user_service_var may name several variables, separated by spaces. */
	for (const char *w = rt->user_service_var; w && *w;) {
		size_t n = strcspn(w, " ");
		char name[64];

		snprintf(name, sizeof(name), "%.*s", (int)n, w);
		if (dlrt_task_env_nonempty(sp, name))
			dlrt_plugin.plan.user_service = true;
		w += n + strspn(w + n, " ");
	}
	/* A service the tasks could not learn the address of (MPI program,
	 * DLRT_EXCHANGE=none): an optional one is not started (runtime.h). */
	dlrt_plugin.plan.no_exchange = !dlrt_exchange_program_takes(sp, false);
	dlrt_service_spec_init(&spec, NULL, NULL);
	dlrt_plugin.plan.step = &dlrt_plugin.step;
	dlrt_plugin.plan.step_ctx = &ctx;
	dlrt_plugin.has_service = rt->service(&dlrt_plugin.plan, &spec);
	dlrt_plugin.plan.step_ctx = NULL;
	dlrt_plugin.service_what = spec.what;
	dlrt_plugin.relay_config_fd = -1;
	if (dlrt_plugin.has_service && !dlrt_plugin.has_step_secret) {
		dlrt_service_spec_free(&spec);
		return dlrt_err_set(err, "%s needs the step secret srun gives every dlrt step "
				    "(%s is missing or malformed): start the step with srun on a "
				    "host where dlrt is installed and enabled in plugstack.conf",
				    dlrt_plugin.service_what, DLRT_RDV_ENV);
	}
	if (dlrt_plugin.has_service && dlrt_plugin.layout.task_node[0] == dlrt_plugin.node_id) {
		int64_t t0 = dlrt_now_us();

		rc = dlrt_service_start(sp, &spec, &dlrt_plugin.svc, err);
		dlrt_plugin.svc_start_us = (long)(dlrt_now_us() - t0);
		dlrt_plugin.svc_failed = rc < 0;
	}
	/* Every node, the root's too: the tasks reach the service only through
	 * their node's relay, so the service can admit only relays. */
	if (rc == 0 && dlrt_plugin.has_service)
		rc = dlrt_relay_start_node(sp, &dlrt_plugin.relay, &dlrt_plugin.relay_config_fd,
					   err);
	dlrt_service_spec_free(&spec);
	return rc;
}

static bool needs_exchange(void);

/* struct dlrt_step_ctx's getenv, for the runtime's hooks. */
static int ctx_getenv(void *sp, const char *name, char *buf, size_t len)
{
	return dlrt_task_getenv(sp, name, buf, len);
}

/* The runtime's own checks of the step, before any service starts. */
static int check_step(spank_t sp, struct dlrt_err *err)
{
	const struct dlrt_runtime *rt = dlrt_plugin.opts.runtime;
	struct dlrt_step_ctx ctx = {
		.getenv = ctx_getenv,
		.sp = sp,
		.program_takes_exchange = dlrt_exchange_program_takes(sp, false),
	};

	return rt->check_step ? rt->check_step(&dlrt_plugin.plan, &ctx, err) : 0;
}

/* The shared page, with room for every task's port when the runtime needs them. */
static size_t share_size(void)
{
	size_t n = dlrt_plugin.opts.runtime->needs_task_ports ? dlrt_plugin.layout.ntasks : 0;

	return sizeof(struct dlrt_node_share) + n * sizeof(struct dlrt_task_addr);
}

/* needs_task_ports: this node's task ids by local rank (exchange.h), or NULL. */
static uint32_t *node_tasks(uint32_t *n)
{
	const struct dlrt_layout *l = &dlrt_plugin.layout;
	uint32_t *ids;

	*n = 0;
	if (!dlrt_plugin.opts.runtime->needs_task_ports || !dlrt_plugin.share ||
	    dlrt_plugin.node_id >= l->nnodes)
		return NULL;
	ids = calloc(l->node_ntasks[dlrt_plugin.node_id] + 1, sizeof(*ids));
	for (uint32_t t = 0; ids && t < l->ntasks; t++)
		if (l->task_node[t] == dlrt_plugin.node_id &&
		    l->task_local[t] < l->node_ntasks[dlrt_plugin.node_id])
			ids[l->task_local[t]] = t;
	if (ids)
		*n = l->node_ntasks[dlrt_plugin.node_id];
	return ids;
}

/* The exchange's per-node sharing (exchange.h): a page every task of this
 * node inherits, and the ranks of the other nodes' first tasks. Without it
 * (no memory) every task runs the full exchange. */
static void share_init(void)
{
	const struct dlrt_layout *l = &dlrt_plugin.layout;
	size_t len = (size_t)l->nnodes * 11 + 1, off = 0;
	void *m;

	if (!needs_exchange())
		return;
	dlrt_plugin.reps = calloc(1, len);
	if (!dlrt_plugin.reps)
		return;
	for (uint32_t t = 0; t < l->ntasks; t++)
		if (l->task_local[t] == 0 && l->task_node[t] != l->task_node[0])
			off += (size_t)snprintf(dlrt_plugin.reps + off, len - off, "%s%u",
						off ? "," : "", t);
	dlrt_plugin.share_len = share_size();
	m = mmap(NULL, dlrt_plugin.share_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		free(dlrt_plugin.reps);
		dlrt_plugin.reps = NULL;
		return;
	}
	dlrt_plugin.share = m;
}

/* The step secret srun made (DLRT_RDV_ENV), and the node service's key
 * derived from it: the same on every node, so the key travels nowhere. A step
 * without it (srun without dlrt) gets no service here; its tasks then fail in
 * task_init with the line that names the fix (exchange.c). */
static void read_step_secret(spank_t sp)
{
	char v[DLRT_RDV_ENV_MAX];
	uint16_t port;

	if (dlrt_task_getenv(sp, DLRT_RDV_ENV, v, sizeof(v)) < 0 ||
	    dlrt_rdv_env_parse(v, &port, dlrt_plugin.step_secret) < 0)
		return;
	memset(v, 0, sizeof(v));
	dlrt_plugin.has_step_secret = true;
	dlrt_exchange_service_key(dlrt_plugin.step_secret, dlrt_plugin.secret);
}

int dlrt_stepd_user_init(spank_t sp)
{
	char nodelist[ENV_MAX], tpn[ENV_MAX], dist_s[128] = "", plane_s[32] = "";
	enum dlrt_dist dist;
	uint32_t plane = 0;
	struct dlrt_err err;
	int het;

	if (!dlrt_plugin.active || dlrt_plugin.deferred_rc)
		return 0;
	if (dlrt_task_getenv(sp, "SLURM_STEP_NODELIST", nodelist, sizeof(nodelist)) < 0 ||
	    dlrt_task_getenv(sp, "SLURM_STEP_TASKS_PER_NODE", tpn, sizeof(tpn)) < 0) {
		dlrt_err_set(&err, "the step environment lacks SLURM_STEP_NODELIST or "
			     "SLURM_STEP_TASKS_PER_NODE; was the step started by srun?");
		return defer(&err);
	}
	dlrt_task_getenv(sp, "SLURM_DISTRIBUTION", dist_s, sizeof(dist_s));
	if (dlrt_layout_parse_dist(dist_s, &dist, &plane, &err) < 0)
		return defer(&err);
	if (dist == DLRT_DIST_PLANE && plane == 0 &&
	    dlrt_task_getenv(sp, "SLURM_DIST_PLANESIZE", plane_s, sizeof(plane_s)) == 0)
		dlrt_parse_u32(plane_s, 1, 1u << 20, &plane);
	dlrt_plugin.plan_ms = dlrt_verbose_now_ms();
	/* A step over components of a heterogeneous job is one world (hetstep.h). */
	het = dlrt_hetstep_layout(sp, nodelist, tpn, dist, plane, &dlrt_plugin.layout,
				  &dlrt_plugin.node_id, &err);
	if (het > 0)
		dlrt_plugin.step.job_id = dlrt_hetstep_job_id(sp);
	else if (het == 0)
		spank_get_item(sp, S_JOB_NODEID, &dlrt_plugin.node_id);
	if (het < 0 ||
	    (het == 0 && dlrt_layout_init(&dlrt_plugin.layout, nodelist, tpn, dist, plane,
					  &err) < 0) ||
	    dlrt_plan_build(&dlrt_plugin.plan, dlrt_plugin.opts.runtime, &dlrt_plugin.layout,
			    &dlrt_plugin.opts, &dlrt_plugin.cfg, &err) < 0)
		return defer(&err);
	dlrt_plugin.plan_ms = dlrt_verbose_now_ms() - dlrt_plugin.plan_ms;
	if (dlrt_stepd_program_check(sp, &err) < 0 || check_step(sp, &err) < 0 ||
	    dlrt_stepd_gpu_user_init(sp, &err) < 0)
		return defer(&err);
	read_step_secret(sp);
	if (start_service(sp, &err) < 0) {
		/* The root's node still tells the other nodes why (task_init). */
		share_init();
		return defer(&err);
	}
	share_init();
	return 0;
}

/* The tasks need the root's address: the runtime says so, or the step has a
 * node service whose port only the root's node knows. */
static bool needs_exchange(void)
{
	return dlrt_plugin.opts.runtime->needs_root_addr || dlrt_plugin.has_service;
}

/* This task's part in the exchange (exchange.h), decided once per task. */
static const struct dlrt_exchange_plan *exchange_plan(spank_t sp, uint32_t rank, int local)
{
	const struct dlrt_exchange_plan *plan;
	struct dlrt_err err;

	if (dlrt_exchange_task_plan(sp, needs_exchange(), dlrt_plugin.opts.verbose && rank == 0,
				    &plan, &err) < 0)
		task_fail(local, err.msg);
	return plan;
}

static bool exchange_wanted(spank_t sp, uint32_t rank, int local)
{
	return exchange_plan(sp, rank, local)->part == DLRT_XPART_TAKES;
}

/* The exchange request of task `rank` (local task `local`), from the step's
 * facts and what srun chose (plan). per_node: the node's first task exchanges
 * for the node's tasks, which wait on the page they share (with task ports, it
 * gets their ids); else every task exchanges for itself. */
static void exchange_req(spank_t sp, const struct dlrt_exchange_plan *plan, uint32_t rank,
			 int local, bool per_node, struct dlrt_exchange_req *req)
{
	*req = (struct dlrt_exchange_req){
		.via = plan->via,
		.rdv = plan->rdv,
		.env = dlrt_task_environ(sp),
		.step_id = dlrt_plugin.step.step_id,
		.rank = rank,
		.ntasks = dlrt_plugin.layout.ntasks,
		.root = 0, /* the root of every runtime (scheduler, store host) is task 0 */
		.iface = dlrt_plugin.opts.iface[0] ? dlrt_plugin.opts.iface : NULL,
		.timeout_s = (int)dlrt_plugin.cfg.exchange_timeout,
		.root_port = dlrt_plugin.svc.port, /* non-zero on the root's node only */
		.share = per_node ? dlrt_plugin.share : NULL,
		.local = (uint32_t)local,
		.reps = dlrt_plugin.reps ? dlrt_plugin.reps : "",
	};
	if (per_node)
		req->local_tasks = node_tasks(&req->nlocal);
}

/* What the user exported into the step (the task's environment before dlrt),
 * for dlrt_env_resolve: read whole, up to 1 MiB. */
static int user_value(void *ctx, const char *name, char **value)
{
	return dlrt_task_getenv_whole(ctx, name, value);
}

/* PYTHONPATH with dlrt's sitecustomize folder first (rt->python_shim), then
 * the user's. Not found (a tree without it): the task keeps its own, as a
 * torch with libuv needs nothing of it. */
static void python_shim(spank_t sp, struct dlrt_env *env)
{
	char dir[PATH_MAX], *user = NULL;
	struct dlrt_err err;
	Dl_info info;

	if (!dladdr((void *)python_shim, &info))
		info.dli_fname = NULL;
	if (dlrt_instpath_find(dlrt_instpath_pkglibexecdir, info.dli_fname,
			       dlrt_instpath_plugin_to_pkglibexec, "python", dir, sizeof(dir),
			       &err) < 0)
		return;
	if (user_value(sp, "PYTHONPATH", &user) && user && *user)
		dlrt_env_set(env, "PYTHONPATH", "%s:%s", dir, user);
	else
		dlrt_env_set(env, "PYTHONPATH", "%s", dir);
	free(user);
}

/* The one environment of task `rank` (local task `local` of this node), in
 * env.h's precedence: the runtime's layer (DLRT_*, the contract, --dl-iface),
 * the GPU plan's, then what the user exported wins where dlrt only suggests.
 * The real task and the dry run both take it from here. */
static int task_env(spank_t sp, uint32_t rank, int local, const struct dlrt_addrs *addrs,
		    struct dlrt_env *env, struct dlrt_err *err)
{
	dlrt_env_init(env);
	const struct dlrt_runtime *rt = dlrt_plugin.opts.runtime;
	int ngpus;

	if (dlrt_plan_task_env(&dlrt_plugin.plan, rank, &dlrt_plugin.step, addrs, env, err) < 0 ||
	    dlrt_stepd_gpu_task_env(sp, local, env, err) < 0)
		return -1;
	/* The runtime's variables that follow the GPUs the plan gave this task
	 * (e.g. a framework's local device ids), in the same environment as the rest. */
	ngpus = dlrt_stepd_gpu_count(local);
	if (rt->gpu_env && ngpus >= 0)
		rt->gpu_env(&dlrt_plugin.plan, rank, ngpus, env);
	dlrt_env_resolve(env, user_value, sp);
	if (rt->python_shim)
		python_shim(sp, env);
	return dlrt_env_check(env, err);
}

/* The dry run's part of a node's first task: each local task's environment,
 * exactly as task_init would set it. Tasks learn the service through their
 * own node's relay. */
static void print_node_env(spank_t sp, const struct dlrt_addrs *mine, FILE *f)
{
	const struct dlrt_layout *l = &dlrt_plugin.layout;
	const char *node = l->nodes.names[dlrt_plugin.node_id];
	struct dlrt_addrs a = *mine;
	struct dlrt_env env;
	struct dlrt_err err;

	if (a.valid && dlrt_plugin.relay.pid > 0) {
		snprintf(a.root_ip, sizeof(a.root_ip), "127.0.0.1");
		a.root_port = dlrt_plugin.relay.port;
	}
	fprintf(f, "%s: environment of each task as it starts (the user's exported values "
		"kept, then --dl-iface's, then the GPU plan's)\n", node);
	for (uint32_t r = 0; r < l->ntasks; r++) {
		if (l->task_node[r] != dlrt_plugin.node_id)
			continue;
		if (task_env(sp, r, (int)l->task_local[r], &a, &env, &err) < 0) {
			fprintf(f, "%s: task %u: %s\n", node, r, err.msg);
			dlrt_env_free(&env);
			continue;
		}
		fprintf(f, "%s: task %u env:", node, r);
		for (size_t i = 0; i < env.n; i++)
			fprintf(f, " %s=%s", env.vars[i].name,
				env.vars[i].unread ? "(the user's, too long to show)" :
				env.vars[i].value);
		fprintf(f, "\n");
		dlrt_env_free(&env);
	}
}

/* --dl-dry-run: task 0 prints the whole table; every task exits 0 instead of
 * exec'ing the program. task_init runs in the forked task process, so _exit
 * ends only that task, never slurmstepd. When the step has a rendezvous, the exchange
 * runs as for real, so the table shows the real addresses. */
static void dry_run(spank_t sp, uint32_t rank, int local, const struct dlrt_exchange_req *req)
{
	struct dlrt_addrs mine = { .valid = false }, *all = NULL;
	struct dlrt_err err;

	if (exchange_wanted(sp, rank, local)) {
		all = rank == 0 ? calloc(dlrt_plugin.layout.ntasks, sizeof(*all)) : NULL;
		if (dlrt_exchange_root(sp, req, &mine, all, &err) < 0) {
			fprintf(stderr, "dlrt: %s\n", err.msg);
			_exit(1);
		}
	}
	/* The tasks would get their node's relay (use_relay); the table shows
	 * the address of task 0's node's relay. */
	for (uint32_t t = 0; all && dlrt_plugin.relay.pid > 0 && t < dlrt_plugin.layout.ntasks;
	     t++) {
		snprintf(all[t].root_ip, sizeof(all[t].root_ip), "127.0.0.1");
		all[t].root_port = dlrt_plugin.relay.port;
	}
	if (rank == 0) {
		if (dlrt_plan_print(stdout, &dlrt_plugin.plan, &dlrt_plugin.step, all,
				    user_value, sp, &err) < 0)
			fprintf(stderr, "dlrt: %s\n", err.msg);
		dlrt_hetstep_print(sp, stdout, &dlrt_plugin.plan);
		if (exchange_wanted(sp, rank, local))
			printf("address exchange: %s (--dl-exchange=%s)\n",
			       req->via == DLRT_EXCHANGE_PMIX ? "Slurm's PMIx" : "srun's rendezvous",
			       dlrt_exchange_via_name(dlrt_plugin.opts.exchange));
		fflush(stdout);
	}
	/* Each node plans its own GPUs: its first task prints that part and,
	 * with a plan, the whole environment of each task of the node (the
	 * GPU plan's layer is only known there). Without one the table above
	 * is the whole environment already. */
	if (local == 0) {
		dlrt_stepd_gpu_print(sp, stdout);
		if (dlrt_stepd_gpu_planned())
			print_node_env(sp, &mine, stdout);
		fflush(stdout);
	}
	_exit(0);
}

/* The service did not start on the root's node: its first task publishes the
 * error instead of the address, so the other nodes' tasks, which wait for
 * that address, fail at once with the same line instead of at
 * exchange_timeout. srun's rendezvous keeps it for the nodes that come
 * later. Nothing to do for a one-node step. */
static void publish_failure(spank_t sp, int local)
{
	uint32_t rank = 1;
	struct dlrt_addrs mine;
	struct dlrt_err err;
	struct dlrt_exchange_req req;
	const struct dlrt_exchange_plan *plan;

	if (!dlrt_plugin.svc_failed || local != 0 || !dlrt_plugin.share || !dlrt_plugin.reps ||
	    !dlrt_plugin.reps[0] || dlrt_task_rank(sp, &rank) < 0 ||
	    rank != 0 || dlrt_exchange_task_plan(sp, needs_exchange(), false, &plan, &err) < 0 ||
	    plan->part != DLRT_XPART_TAKES)
		return;
	exchange_req(sp, plan, 0, 0, true, &req);
	req.fail = dlrt_plugin.deferred_err.msg;
	dlrt_exchange_root(sp, &req, &mine, NULL, &err);
	free((void *)req.local_tasks);
}

/* The tasks talk to the service through their node's relay: the first task
 * gives the relay the service's address (from the exchange) and its key (this
 * node's, derived from the step secret in user_init; never in an argv), every
 * task gets the relay's loopback address. The relay holds clients that come
 * before this line, bounded. */
static void use_relay(int local, struct dlrt_addrs *addrs)
{
	if (dlrt_plugin.relay.pid <= 0)
		return;
	if (local == 0 && dlrt_plugin.relay_config_fd >= 0) {
		struct sigaction ign = { .sa_handler = SIG_IGN }, old;
		char line[DLRT_SVCADDR_MAX + 1];
		size_t len;
		ssize_t w;

		dlrt_svcaddr_format(line, addrs->root_ip, addrs->root_port, dlrt_plugin.secret);
		len = strlen(line);
		line[len++] = '\n';
		/* A relay that died must fail this task with a line, not SIGPIPE. */
		sigaction(SIGPIPE, &ign, &old);
		do
			w = write(dlrt_plugin.relay_config_fd, line, len);
		while (w < 0 && errno == EINTR);
		sigaction(SIGPIPE, &old, NULL);
		memset(line, 0, sizeof(line));
		if (w != (ssize_t)len)
			task_fail(local, "cannot give the node relay the service's address (its "
				  "pipe is closed: did dlrt-relay exit? rerun with --dl-verbose "
				  "and see /tmp/dlrt-relay.<job>.<step>.log on the node)");
	}
	if (dlrt_plugin.relay_config_fd >= 0)
		close(dlrt_plugin.relay_config_fd);
	dlrt_plugin.relay_config_fd = -1;
	memset(addrs->secret, 0, sizeof(addrs->secret));
	addrs->has_secret = false;
	snprintf(addrs->root_ip, sizeof(addrs->root_ip), "127.0.0.1");
	addrs->root_port = dlrt_plugin.relay.port;
}

/* A container that cuts the task off from its node's network or from its
 * environment, or a trainer's own launcher, fails now, in one line, instead of
 * in the framework's timeout or a world of the wrong size (jobpolicy/contcheck.h,
 * jobpolicy/launchcheck.h). */
static void container_check(spank_t sp, int local)
{
	char mode[8] = "";
	int argc = 0;
	char **argv = NULL;
	struct dlrt_err err;
	struct dlrt_companion c;

	/* Slurm 22.05 moves the step's command into the container's config.json
	 * before any task starts (S_JOB_ARGV is then its placeholder), and a
	 * process task 0 forks would run outside the container anyway: every
	 * task says so now, rather than waiting for a root that never comes. */
	if (dlrt_stepd_in_container(sp) && dlrt_plan_companion(&dlrt_plugin.plan, 0, &c)) {
		dlrt_err_set(&err, "%s cannot run inside srun --container's container (Slurm "
			     "puts only the task's own program there): let a task take its "
			     "role with %s", c.what, c.as_task ? c.as_task : "the runtime's option");
		task_fail(local, err.msg);
	}
	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1 || !argv)
		return;
	dlrt_task_getenv(sp, "DLRT_CONTAINER_CHECK", mode, sizeof(mode));
	if (strcmp(mode, "no") &&
	    dlrt_contcheck_argv((size_t)argc, (const char *const *)argv, &err) < 0)
		task_fail(local, err.msg);
	/* A trainer's own launcher (deepspeed, accelerate launch) would make a world
	 * of its own in every task: say so before it starts (jobpolicy/launchcheck.h). */
	dlrt_task_getenv(sp, "DLRT_LAUNCHER_CHECK", mode, sizeof(mode));
	if (strcmp(mode, "no") &&
	    dlrt_launchcheck_argv((size_t)argc, (const char *const *)argv, &err) < 0)
		task_fail(local, err.msg);
}

int dlrt_stepd_task_init(spank_t sp)
{
	uint32_t rank = 0;
	int local = 0;
	struct dlrt_exchange_req req;
	const struct dlrt_exchange_plan *plan;
	struct dlrt_addrs addrs = { .valid = false };
	struct dlrt_env env;
	struct dlrt_err err;
	double t0 = dlrt_verbose_now_ms(), t1;

	/* srun said why already; the step only has to end (client.c). */
	if (dlrt_plugin.refused)
		_exit(1);
	if (!dlrt_plugin.active && !dlrt_plugin.deferred_rc)
		return 0;
	dlrt_exchange_task_start(sp);
	spank_get_item(sp, S_TASK_ID, &local);
	if (dlrt_plugin.deferred_rc) {
		publish_failure(sp, local);
		task_fail(local, dlrt_plugin.deferred_err.msg);
	}
	if (dlrt_task_rank(sp, &rank) < 0)
		task_fail(local, "cannot read this task's id from Slurm");
	if (dlrt_layout_check_local(&dlrt_plugin.layout, dlrt_plugin.node_id, (uint32_t)local,
				    rank, &err) < 0)
		task_fail(local, err.msg);
	container_check(sp, local);
	plan = exchange_plan(sp, rank, local);
	/* The dry run prints every task's address: every task exchanges. */
	exchange_req(sp, plan, rank, local, !dlrt_plugin.opts.dry_run, &req);
	if (dlrt_plugin.has_service && plan->part != DLRT_XPART_TAKES) {
		const char *mpi = dlrt_plugin.opts.runtime->mpi_option;

		dlrt_err_set(&err, "the tasks learn the address of %s through the address "
			     "exchange before exec, which dlrt skips for this program (it links "
			     "MPI, or DLRT_EXCHANGE=none): %s%s%sset DLRT_EXCHANGE=yes",
			     dlrt_plugin.service_what, mpi ? "run MPI programs with " : "",
			     mpi ? mpi : "", mpi ? ", or " : "");
		task_fail(local, err.msg);
	}
	if (dlrt_plugin.opts.dry_run)
		dry_run(sp, rank, local, &req);
	if (local == 0)
		dlrt_verbose(rank, "role table (%u tasks, %u nodes) built in %.2f ms",
			     dlrt_plugin.layout.ntasks, dlrt_plugin.layout.nnodes, dlrt_plugin.plan_ms);
	t1 = dlrt_verbose_now_ms();
	if (plan->part == DLRT_XPART_TAKES) {
		if (dlrt_exchange_root(sp, &req, &addrs, NULL, &err) < 0) {
			dlrt_verbose(rank, "address exchange failed after %.1f ms",
				     dlrt_verbose_now_ms() - t1);
			task_fail(local, err.msg);
		}
		dlrt_verbose(rank, "address exchange through %s: %.1f ms, root %s:%u",
			     req.via == DLRT_EXCHANGE_PMIX ? "Slurm's PMIx" : "srun's rendezvous",
			     dlrt_verbose_now_ms() - t1, addrs.root_ip, addrs.root_port);
		use_relay(local, &addrs);
	}
	free((void *)req.local_tasks);

	if (task_env(sp, rank, local, &addrs, &env, &err) < 0)
		task_fail(local, err.msg);
	for (size_t i = 0; i < env.n; i++) {
		/* The user's own value is there already. */
		if (env.vars[i].from_user)
			continue;
		if (spank_setenv(sp, env.vars[i].name, env.vars[i].value, 1) != ESPANK_SUCCESS) {
			dlrt_err_set(&err, "cannot set %s in the task environment", env.vars[i].name);
			task_fail(local, err.msg);
		}
	}
	if (dlrt_stepd_gpu_task_init(sp, local, &err) < 0)
		task_fail(local, err.msg);
	/* Last: from here on the task's output goes to its log too. */
	if (dlrt_logs_task_start(sp, rank, &err) < 0)
		task_fail(local, err.msg);
	/* A runtime's companion process next to this task (its output goes
	 * to the task's log too). */
	if (dlrt_companion_task_start(sp, rank, &err) < 0)
		task_fail(local, err.msg);
	/* This task's pid for the --dl-signal watcher (the program's: after the
	 * log relay's and the companion's forks), and DLRT_CHECKPOINT_DIR. */
	if (dlrt_lifecycle_task_init(sp, local, &err) < 0)
		task_fail(local, err.msg);
	/* Last of all: the environment as set above, for srun --container. */
	if (dlrt_stepd_container_env(sp, &err) < 0)
		task_fail(local, err.msg);
	dlrt_verbose(rank, "ready after %.1f ms in dlrt: %s %s %u, starting the program",
		     dlrt_verbose_now_ms() - t0, dlrt_plugin.opts.runtime->name,
		     dlrt_role_name(dlrt_plugin.plan.task[rank].role),
		     dlrt_plugin.plan.task[rank].role_index);
	if (dlrt_plugin.svc.pid > 0 && local == 0)
		dlrt_verbose(rank, "%s listening on %s:%u (pid %d), started in %ld.%03ld ms, "
			     "log %s", dlrt_plugin.svc.what, dlrt_plugin.svc.ip,
			     dlrt_plugin.svc.port, (int)dlrt_plugin.svc.pid,
			     dlrt_plugin.svc_start_us / 1000, dlrt_plugin.svc_start_us % 1000,
			     dlrt_plugin.svc.log);
	if (dlrt_plugin.relay.pid > 0 && local == 0)
		dlrt_verbose(rank, "node relay listening on 127.0.0.1:%u (pid %d), for the job "
			     "user's processes only, log %s", dlrt_plugin.relay.port,
			     (int)dlrt_plugin.relay.pid, dlrt_plugin.relay.log);
	dlrt_env_free(&env);
	return 0;
}

/* Stops this node's relay, which lets go of the step's service
 * (services/svchold.h), then, on task 0's node, waits for the service to
 * end: it serves on until every other node's relay has let go too. */
static void stop_services(void)
{
	int64_t bound = (int64_t)dlrt_plugin.cfg.service_max_lifetime * 1000 + 1000;

	if (dlrt_stepd_apart()) {
		/* task_exit in a child of slurmstepd (contain_spank), which
		 * shares its memory but holds only copies of the pipes: the
		 * relay ends on SIGTERM, the service lingers on its signal. */
		dlrt_service_signal_within(&dlrt_plugin.relay, SIGTERM, 3000);
		dlrt_service_signal_within(&dlrt_plugin.svc, DLRT_SERVICE_LINGER_SIGNAL, bound);
		return;
	}
	if (dlrt_plugin.relay.pid > 0 && dlrt_plugin.relay_config_fd >= 0)
		close(dlrt_plugin.relay_config_fd);
	dlrt_plugin.relay_config_fd = -1;
	dlrt_service_stop(&dlrt_plugin.relay);
	dlrt_service_stop_within(&dlrt_plugin.svc, bound);
}

/* After the node's last task has ended, slurmstepd kills every process left
 * in the step's container (proctrack), the services it started for the step
 * too, before slurm_spank_exit: so the services end here, after the last
 * task's end and before that kill. Meanwhile slurmstepd's other threads
 * still answer Slurm: a cancel or the time limit kills the service and ends
 * the wait. */
void dlrt_stepd_task_exit(spank_t sp)
{
	uint32_t local_tasks = 0;

	if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_tasks) != ESPANK_SUCCESS ||
	    ++dlrt_plugin.tasks_ended < local_tasks)
		return;
	stop_services();
}

void dlrt_stepd_exit(void)
{
	if (dlrt_plugin.share)
		munmap(dlrt_plugin.share, dlrt_plugin.share_len); /* with its task ports */
	dlrt_plugin.share = NULL;
	free(dlrt_plugin.reps);
	dlrt_plugin.reps = NULL;
	stop_services(); /* if no task ended here (dlrt_stepd_task_exit) */
	dlrt_stepd_pipes_close();
	dlrt_stepd_gpu_free();
	dlrt_plan_free(&dlrt_plugin.plan);
	dlrt_layout_free(&dlrt_plugin.layout);
}
