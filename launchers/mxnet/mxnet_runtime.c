/* mxnet_runtime.c - MXNet / ps-lite: one scheduler, N servers, the rest workers.
 *
 * Contract (docs/contracts.md, mxnet): the role comes only from DMLC_ROLE; the
 * scheduler waits for exactly DMLC_NUM_SERVER + DMLC_NUM_WORKER registrations,
 * so the counts must be exact or ps-lite hangs forever. Ranks are assigned by
 * the scheduler, never by the launcher (no DMLC_RANK).
 *
 * Placement: task 0 is the scheduler, or with --dl-mxnet-sched=extra no
 * task is: dlrt then starts the scheduler as one more process next to task 0
 * (its companion, spank/companion.c), as dmlc's launcher does, and -n counts servers and
 * workers only. Servers are spread over the nodes before
 * any node gets a second one (a server per node spreads the parameter traffic),
 * and on each node the server takes the highest local rank, so workers keep the
 * low local ranks that line up with GPU indices.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "runtime/runtime.h"

/* --dl-mxnet-sched: where ps-lite's scheduler runs. */
enum mxnet_sched {
	MXSCHED_TASK,  /* task 0 is the scheduler: -n counts scheduler + servers + workers */
	MXSCHED_EXTRA, /* dlrt starts one more process next to task 0 (dmlc's launcher):
			* -n counts servers + workers only */
};

static const char *const sched_names[] = { "task", "extra", NULL };

/* Site keys (plugstack.conf), in the runtime's config block. */
struct mxnet_config {
	uint32_t default_servers; /* servers when --dl-servers is absent; 0 = one per node */
	uint32_t max_servers;     /* upper bound for --dl-servers */
	uint32_t sched;           /* default of --dl-mxnet-sched (enum mxnet_sched) */
};

/* The job's options, in the runtime's options block. */
struct mxnet_opts {
	int32_t servers; /* --dl-servers; -1 = not given */
	uint32_t sched;  /* --dl-mxnet-sched (enum mxnet_sched) */
};

/* The plan's state (plan->rt_state). */
struct mxnet_plan {
	uint32_t servers;     /* resolved server count */
	/* --dl-mxnet-sched=extra: the scheduler is no task but a companion of
	 * task 0; the tasks are servers and workers only. */
	bool extra_scheduler;
};

_Static_assert(sizeof(struct mxnet_config) <= DLRT_RT_CONFIG_SIZE, "mxnet site keys fit");
_Static_assert(sizeof(struct mxnet_opts) <= DLRT_RT_OPTS_SIZE, "mxnet options fit");
_Static_assert(sizeof(struct mxnet_plan) <= DLRT_RT_STATE_SIZE, "mxnet plan state fits");

extern const struct dlrt_runtime dlrt_runtime_mxnet;

static const struct mxnet_opts *mx_opts(const struct dlrt_opts *o)
{
	return dlrt_rt_opts_c(o, &dlrt_runtime_mxnet);
}

static const struct mxnet_config *mx_cfg(const struct dlrt_config *cfg)
{
	return dlrt_rt_config(cfg, &dlrt_runtime_mxnet);
}

static struct mxnet_plan *mx_plan(struct dlrt_plan *plan)
{
	return (struct mxnet_plan *)plan->rt_state.b;
}

static const struct mxnet_plan *mx_plan_c(const struct dlrt_plan *plan)
{
	return (const struct mxnet_plan *)plan->rt_state.b;
}

static const struct dlrt_site_key mxnet_keys[] = {
	{ .name = "default_servers", .type = DLRT_KEY_U32,
	  .offset = offsetof(struct mxnet_config, default_servers), .def = 0, .lo = 0,
	  .hi = 1u << 20, .fix = "is not a number (0 = one per node)" },
	{ .name = "max_servers", .type = DLRT_KEY_U32,
	  .offset = offsetof(struct mxnet_config, max_servers), .def = 1024, .lo = 1,
	  .hi = 1u << 20, .fix = "is not a number >= 1" },
	{ .name = "mxnet_sched", .type = DLRT_KEY_CHOICE,
	  .offset = offsetof(struct mxnet_config, sched), .def = MXSCHED_TASK,
	  .choices = sched_names, .fix = "is not task or extra" },
	{ .name = NULL },
};

static void mxnet_opts_init(void *opts, const void *cfg)
{
	struct mxnet_opts *o = opts;
	const struct mxnet_config *c = cfg;

	o->servers = -1;
	o->sched = c->sched;
}

static int set_servers(void *opts, const void *cfg, const char *arg, struct dlrt_err *err)
{
	struct mxnet_opts *o = opts;
	const struct mxnet_config *c = cfg;
	uint32_t v;

	if (dlrt_parse_u32(arg, 1, c->max_servers, &v) < 0)
		return dlrt_err_set(err, "--dl-servers=%s: must be a number from 1 to %u",
				    arg ? arg : "", c->max_servers);
	o->servers = (int32_t)v;
	return 0;
}

static int set_sched(void *opts, const void *cfg, const char *arg, struct dlrt_err *err)
{
	struct mxnet_opts *o = opts;

	(void)cfg;
	for (uint32_t i = 0; arg && sched_names[i]; i++) {
		if (!strcmp(arg, sched_names[i])) {
			o->sched = i;
			return 0;
		}
	}
	return dlrt_err_set(err, "--dl-mxnet-sched=%.64s: must be task (task 0 is the scheduler) "
			    "or extra (dlrt starts one more process, -n counts servers and "
			    "workers only)", arg ? arg : "");
}

static const struct dlrt_rt_option mxnet_options[] = {
	{ "dl-servers", "N", "[dlrt] mxnet: parameter servers (default 1/node)", set_servers,
	  false },
	{ "dl-mxnet-sched", "WHERE", "[dlrt] mxnet: task (task 0, default) or extra", set_sched,
	  false },
	{ NULL, NULL, NULL, NULL, false },
};

/* The server count, shared by validation and assignment. */
static uint32_t mxnet_servers(const struct dlrt_opts *opts, const struct dlrt_config *cfg,
			      uint32_t ntasks, uint32_t nnodes)
{
	const struct mxnet_opts *o = mx_opts(opts);
	uint32_t s, others = o->sched == MXSCHED_EXTRA ? 1 : 2;

	if (o->servers > 0)
		return (uint32_t)o->servers;
	if (mx_cfg(cfg)->default_servers)
		return mx_cfg(cfg)->default_servers;
	/* One per node, leaving room for the scheduler task (unless it is an
	 * extra process) and at least one worker. */
	s = nnodes;
	if (ntasks >= others + 1 && s > ntasks - others)
		s = ntasks - others;
	return s ? s : 1;
}

static int mxnet_validate(const struct dlrt_opts *o, const struct dlrt_config *cfg,
			  uint32_t ntasks, uint32_t nnodes, struct dlrt_err *err)
{
	uint32_t s = mxnet_servers(o, cfg, ntasks, nnodes);

	if (mx_opts(o)->sched == MXSCHED_EXTRA) {
		if ((uint64_t)ntasks < (uint64_t)s + 1)
			return dlrt_err_set(err, "--dl-runtime=mxnet --dl-mxnet-sched=extra needs "
					    "at least %u tasks (%u server%s + 1 worker; the scheduler is "
					    "an extra process) but the step has %u: add tasks with -n or "
					    "lower --dl-servers", s + 1, s, s == 1 ? "" : "s", ntasks);
		return 0;
	}
	if ((uint64_t)ntasks < (uint64_t)s + 2)
		return dlrt_err_set(err, "--dl-runtime=mxnet needs at least %u tasks (1 scheduler + "
				    "%u server%s + 1 worker) but the step has %u: add tasks with -n "
				    "or lower --dl-servers", s + 2, s, s == 1 ? "" : "s", ntasks);
	return 0;
}

/* --dl-het-roles=split: the first component is the scheduler (unless it
 * is an extra process) and the servers, the other components the workers. */
static int mxnet_validate_comps(const struct dlrt_opts *o, const struct dlrt_config *cfg,
				uint32_t ncomps, const uint32_t *comp_ntasks, struct dlrt_err *err)
{
	bool extra = mx_opts(o)->sched == MXSCHED_EXTRA;
	uint32_t first = comp_ntasks[0], servers = first - (extra ? 0 : 1);

	(void)cfg;
	(void)ncomps;
	if (first < (extra ? 1u : 2u))
		return dlrt_err_set(err, "--dl-runtime=mxnet on a heterogeneous step puts the "
				    "scheduler and the servers in the first component, which has "
				    "%u task: give it at least 2 (-n2 before the first ':'), or use "
				    "--dl-mxnet-sched=extra, or --dl-het-roles=flat", first);
	if (mx_opts(o)->servers > 0 && (uint32_t)mx_opts(o)->servers != servers)
		return dlrt_err_set(err, "--dl-servers=%d does not fit this heterogeneous step: its "
				    "first component's %u tasks are %s%u server%s; drop --dl-servers, "
				    "give the first component %d tasks, or use --dl-het-roles=flat",
				    mx_opts(o)->servers, first, extra ? "" : "the scheduler and ",
				    servers, servers == 1 ? "" : "s",
				    mx_opts(o)->servers + (extra ? 0 : 1));
	return 0;
}

static void mxnet_assign_comps(struct dlrt_plan *plan)
{
	const struct dlrt_layout *l = plan->layout;
	struct mxnet_plan *mp = mx_plan(plan);

	mp->extra_scheduler = mx_opts(plan->opts)->sched == MXSCHED_EXTRA;
	mp->servers = 0;
	for (uint32_t t = 0; t < l->ntasks; t++) {
		bool first = t < l->comp_first[1];

		plan->task[t].role = !first ? DLRT_ROLE_WORKER :
				     t == 0 && !mp->extra_scheduler ? DLRT_ROLE_SCHEDULER :
				     DLRT_ROLE_SERVER;
		mp->servers += plan->task[t].role == DLRT_ROLE_SERVER;
	}
}

static void mxnet_assign_spread(struct dlrt_plan *plan, const struct dlrt_config *cfg)
{
	const struct dlrt_layout *l = plan->layout;
	uint32_t *start = calloc(l->nnodes, sizeof(uint32_t));    /* first slot of each node */
	uint32_t *next = calloc(l->nnodes, sizeof(uint32_t));     /* one past its highest free slot */
	uint32_t *slot_task = calloc(l->ntasks, sizeof(uint32_t)); /* slot -> task id */
	struct mxnet_plan *mp = mx_plan(plan);
	uint32_t left, off = 0;
	bool placed = true;

	mp->servers = mxnet_servers(plan->opts, cfg, l->ntasks, l->nnodes);
	left = mp->servers;
	for (uint32_t t = 0; t < l->ntasks; t++)
		plan->task[t].role = DLRT_ROLE_WORKER;
	mp->extra_scheduler = mx_opts(plan->opts)->sched == MXSCHED_EXTRA;
	if (!mp->extra_scheduler)
		plan->task[0].role = DLRT_ROLE_SCHEDULER;
	if (!start || !next || !slot_task) {
		/* Only on allocation failure: keep counts exact with the lowest ids. */
		for (uint32_t t = mp->extra_scheduler ? 0 : 1; t < l->ntasks && left; t++, left--)
			plan->task[t].role = DLRT_ROLE_SERVER;
		goto out;
	}
	/* A node's slots are its tasks ordered by local rank. */
	for (uint32_t i = 0; i < l->nnodes; off += l->node_ntasks[i++]) {
		start[i] = off;
		next[i] = off + l->node_ntasks[i];
	}
	for (uint32_t t = 0; t < l->ntasks; t++)
		slot_task[start[l->task_node[t]] + l->task_local[t]] = t;
	/* Each round gives every node that still has a worker one server, taken
	 * from its highest local rank down. Validation guarantees enough tasks;
	 * `placed` only guards against looping forever if it did not. */
	while (left && placed) {
		placed = false;
		for (uint32_t i = 0; i < l->nnodes && left; i++) {
			while (next[i] > start[i]) {
				uint32_t t = slot_task[--next[i]];

				if (plan->task[t].role != DLRT_ROLE_WORKER)
					continue;
				plan->task[t].role = DLRT_ROLE_SERVER;
				left--;
				placed = true;
				break;
			}
		}
	}
out:
	free(start);
	free(next);
	free(slot_task);
}

static void mxnet_assign(struct dlrt_plan *plan, const struct dlrt_config *cfg)
{
	if (dlrt_plan_het_split(plan))
		mxnet_assign_comps(plan);
	else
		mxnet_assign_spread(plan, cfg);
}

static void mxnet_task_env(const struct dlrt_plan *plan, uint32_t rank,
			   const struct dlrt_step_info *step, const struct dlrt_addrs *addrs,
			   struct dlrt_env *env)
{
	dlrt_env_set(env, "DMLC_ROLE", "%s", dlrt_role_name(plan->task[rank].role));
	dlrt_env_set(env, "DMLC_NUM_SERVER", "%u", plan->role_count[DLRT_ROLE_SERVER]);
	dlrt_env_set(env, "DMLC_NUM_WORKER", "%u", plan->role_count[DLRT_ROLE_WORKER]);
	dlrt_env_set(env, "DMLC_NUM_ATTEMPT", "%u", step->restart_count);
	dlrt_env_set(env, "DMLC_JOB_CLUSTER", "slurm");
	if (addrs && addrs->valid) {
		/* Numeric on purpose: ZMQ binds and ps-lite advertises these as given. */
		dlrt_env_set(env, "DMLC_PS_ROOT_URI", "%s", addrs->root_ip);
		dlrt_env_set(env, "DMLC_PS_ROOT_PORT", "%u", addrs->root_port);
		dlrt_env_set(env, "DMLC_NODE_HOST", "%s", addrs->node_ip);
		if (addrs->iface[0])
			dlrt_env_set(env, "DMLC_INTERFACE", "%s", addrs->iface);
	}
	if (plan->opts->verbose)
		dlrt_env_set(env, "PS_VERBOSE", "1");
}

/* The extra scheduler reads the address exchange's answer like every task
 * (DMLC_PS_ROOT_URI/PORT): without the exchange it cannot start. */
static int mxnet_check_step(const struct dlrt_plan *plan, const struct dlrt_step_ctx *ctx,
			    struct dlrt_err *err)
{
	if (!mx_plan_c(plan)->extra_scheduler || plan->opts->dry_run ||
	    ctx->program_takes_exchange)
		return 0;
	return dlrt_err_set(err, "--dl-mxnet-sched=extra needs the address exchange, which dlrt "
			    "skips for this program (it links MPI, or DLRT_EXCHANGE=none): use "
			    "--dl-mxnet-sched=task, or set DLRT_EXCHANGE=yes");
}

/* --dl-mxnet-sched=extra: ps-lite's scheduler next to task 0, running the
 * step's own command as dmlc's launcher starts it (docs/mxnet.md). */
static bool mxnet_companion(const struct dlrt_plan *plan, uint32_t rank,
			    struct dlrt_companion *c)
{
	static const char *const env[] = { "DMLC_ROLE=scheduler", "DLRT_ROLE=scheduler",
					   "DLRT_ROLE_INDEX=0", "DLRT_ROLE_SIZE=1", NULL };

	if (!mx_plan_c(plan)->extra_scheduler || rank != 0)
		return false;
	c->what = "the extra mxnet scheduler";
	c->role = DLRT_ROLE_SCHEDULER;
	c->proc_name = "dlrt-mxsched";
	c->env = env;
	c->as_task = "--dl-mxnet-sched=task";
	return true;
}

const struct dlrt_runtime dlrt_runtime_mxnet = {
	.name = "mxnet",
	.summary = "MXNet/ps-lite parameter server: 1 scheduler, --dl-servers servers, the rest workers",
	.program_uses_pmix = false,
	.needs_root_addr = true,  /* DMLC_PS_ROOT_URI/PORT from the address exchange */
	.end_step_on_failure = true, /* ps-lite waits forever for a dead peer */
	.options = mxnet_options,
	.opts_init = mxnet_opts_init,
	.keys = mxnet_keys,
	.validate = mxnet_validate,
	.validate_comps = mxnet_validate_comps,
	.assign = mxnet_assign,
	.check_step = mxnet_check_step,
	.companion = mxnet_companion,
	.task_env = mxnet_task_env,
};
