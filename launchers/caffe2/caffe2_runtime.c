/* caffe2_runtime.c - Caffe2 as the Kubeflow operator runs it: task 0 the MASTER,
 * the others WORKERs, each a shard.
 *
 * Contract (docs/contracts.md, Caffe2): the operator injects NUM_SHARDS,
 * SHARD_ID, RUN_ID and CAFFE2_CONFIG into every replica. RUN_ID prefixes every
 * store key and keys are write-once (SETNX), so it must be unique per attempt:
 * job id, step id and Slurm's restart count together are.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "runtime/runtime.h"

/* --dl-store: where caffe2 trainers rendezvous. */
enum store_kind {
	STORE_AUTO,   /* the helper, unless the user exported REDIS_HOST (their redis) */
	STORE_HELPER, /* always the helper; overrides REDIS_HOST/REDIS_PORT */
	STORE_FILE,   /* no helper: a folder on a shared filesystem (NFS_PATH) */
};

struct caffe2_opts {
	uint32_t store;      /* enum store_kind; zeroed = STORE_AUTO */
	char store_dir[1024]; /* --dl-store=file:DIR, an absolute path */
};

_Static_assert(sizeof(struct caffe2_opts) <= DLRT_RT_OPTS_SIZE, "caffe2 options fit");

extern const struct dlrt_runtime dlrt_runtime_caffe2;

static const struct caffe2_opts *c2_opts(const struct dlrt_opts *o)
{
	return dlrt_rt_opts_c(o, &dlrt_runtime_caffe2);
}

/* helper | file:DIR. DIR must be absolute: the tasks of a step may start in
 * another folder than srun, and every node must name the same place. */
static int set_store(void *opts, const void *cfg, const char *arg, struct dlrt_err *err)
{
	struct caffe2_opts *o = opts;

	(void)cfg;
	if (arg && !strcmp(arg, "helper")) {
		o->store = STORE_HELPER;
		o->store_dir[0] = '\0';
		return 0;
	}
	if (!arg || strncmp(arg, "file:", 5))
		return dlrt_err_set(err, "--dl-store=%s: must be helper or file:DIR", arg ? arg : "");
	if (arg[5] != '/' || strlen(arg + 5) >= sizeof(o->store_dir) || strpbrk(arg + 5, "\n\r"))
		return dlrt_err_set(err, "--dl-store=%s: DIR must be an absolute path on a filesystem "
				    "every node shares (e.g. file:$HOME/c2store)", arg);
	o->store = STORE_FILE;
	snprintf(o->store_dir, sizeof(o->store_dir), "%s", arg + 5);
	return 0;
}

/* only_this_runtime: a store given to another runtime would do nothing. */
static const struct dlrt_rt_option caffe2_options[] = {
	{ "dl-store", "KIND", "[dlrt] caffe2 store: helper (default), file:DIR", set_store, true },
	{ NULL, NULL, NULL, NULL, false },
};

static void caffe2_assign(struct dlrt_plan *plan, const struct dlrt_config *cfg)
{
	(void)cfg;
	for (uint32_t t = 0; t < plan->layout->ntasks; t++)
		plan->task[t].role = t == 0 ? DLRT_ROLE_MASTER : DLRT_ROLE_WORKER;
}

/* {"cluster":{"master":["n1"],"worker":["n1","n2"]},"task":{"type":"worker","index":0}}
 * Node names are Slurm node names: letters, digits, '-', '_' and '.', nothing to escape. */
static void caffe2_config_json(const struct dlrt_plan *plan, uint32_t rank, struct dlrt_env *env)
{
	const struct dlrt_layout *l = plan->layout;
	static const enum dlrt_role roles[] = { DLRT_ROLE_MASTER, DLRT_ROLE_WORKER };
	struct dlrt_buf b;

	dlrt_buf_init(&b, 1u << 24);
	dlrt_buf_printf(&b, "{\"cluster\":{");
	for (size_t r = 0; r < 2; r++) {
		bool first = true;

		dlrt_buf_printf(&b, "%s\"%s\":[", r ? "," : "", dlrt_role_name(roles[r]));
		for (uint32_t t = 0; t < l->ntasks; t++) {
			if (plan->task[t].role != roles[r])
				continue;
			dlrt_buf_printf(&b, "%s\"%s\"", first ? "" : ",", l->nodes.names[l->task_node[t]]);
			first = false;
		}
		dlrt_buf_printf(&b, "]");
	}
	if (dlrt_buf_printf(&b, "},\"task\":{\"type\":\"%s\",\"index\":%u}}",
			    dlrt_role_name(plan->task[rank].role), plan->task[rank].role_index) < 0)
		env->failed = true;
	else
		dlrt_env_set(env, "CAFFE2_CONFIG", "%.*s", (int)b.len, (const char *)dlrt_buf_head(&b));
	dlrt_buf_free(&b);
}

static void caffe2_task_env(const struct dlrt_plan *plan, uint32_t rank,
			    const struct dlrt_step_info *step, const struct dlrt_addrs *addrs,
			    struct dlrt_env *env)
{
	const struct caffe2_opts *o = c2_opts(plan->opts);

	/* Who this task is: always dlrt's, since a value exported before srun is
	 * the same in every task and so wrong in all but one. */
	dlrt_env_set(env, "NUM_SHARDS", "%u", plan->layout->ntasks);
	dlrt_env_set(env, "SHARD_ID", "%u", rank);
	caffe2_config_json(plan, rank, env);
	/* Names and places the user may have chosen: theirs win. */
	dlrt_env_set_default(env, "RUN_ID", "dlrt-%u-%u-%u", step->job_id, step->step_id,
			     step->restart_count);
	if (o->store == STORE_FILE) {
		/* Asked for on the command line, so it beats an exported NFS_PATH. */
		dlrt_env_set(env, "NFS_PATH", "%s", o->store_dir);
		return;
	}
	/* The helper's address, published by the root task through the exchange.
	 * With the default store a REDIS_HOST the user exported means "my redis"
	 * (the plugin then starts no helper); --dl-store=helper overrides it. */
	if (!addrs || !addrs->valid || !addrs->root_port)
		return;
	if (o->store == STORE_HELPER) {
		dlrt_env_set(env, "REDIS_HOST", "%s", addrs->root_ip);
		dlrt_env_set(env, "REDIS_PORT", "%u", addrs->root_port);
	} else {
		dlrt_env_set_default(env, "REDIS_HOST", "%s", addrs->root_ip);
		dlrt_env_set_default(env, "REDIS_PORT", "%u", addrs->root_port);
	}
}

/* dlrt-store on the master's node, unless the trainers use a shared folder or
 * the user's own redis (REDIS_HOST exported, and no --dl-store=helper). */
static bool caffe2_service(const struct dlrt_plan *plan, struct dlrt_service_spec *spec)
{
	const struct caffe2_opts *o = c2_opts(plan->opts);

	if (o->store == STORE_FILE || (o->store == STORE_AUTO && plan->user_service))
		return false;
	dlrt_service_spec_init(spec, "dlrt-store", "the Caffe2 helper store (dlrt-store)");
	return true;
}

/* srun, before anything runs: a file store's folder must exist (Caffe2's
 * FileStoreHandler CHECKs realpath() and aborts otherwise). srun runs as the
 * user, so this stat sees what the user's tasks will see on a shared fs. */
static int caffe2_validate(const struct dlrt_opts *opts, const struct dlrt_config *cfg,
			   uint32_t ntasks, uint32_t nnodes, struct dlrt_err *err)
{
	const struct caffe2_opts *o = c2_opts(opts);
	struct stat st;

	(void)cfg;
	(void)ntasks;
	(void)nnodes;
	if (o->store != STORE_FILE)
		return 0;
	if (stat(o->store_dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return dlrt_err_set(err, "--dl-store=file:%s: no such folder; create it on a "
				    "filesystem every node shares (mkdir -p %s)", o->store_dir,
				    o->store_dir);
	return 0;
}

const struct dlrt_runtime dlrt_runtime_caffe2 = {
	.name = "caffe2",
	.summary = "Caffe2 (Kubeflow operator contract): task 0 master, the others workers",
	.program_uses_pmix = false,
	.options = caffe2_options,
	.validate = caffe2_validate,
	.assign = caffe2_assign,
	.service = caffe2_service,
	.user_service_var = "REDIS_HOST",
	.task_env = caffe2_task_env,
};
