/* Unit tests: task layout (block/cyclic/plane) and the role model of every runtime.
 * Expected tables are written out literally, not computed by the code under test. */
#include <signal.h>
#include <string.h>

#include "runtime/failfast.h"
#include "common/layout.h"
#include "runtime/runtime.h"
#include "tap.h"

static struct dlrt_config cfg;

static const char *roles_string(const struct dlrt_plan *p, char *buf, size_t len)
{
	size_t off = 0;

	for (uint32_t t = 0; t < p->layout->ntasks && off + 2 < len; t++)
		buf[off++] = dlrt_role_name(p->task[t].role)[0]; /* w s s(cheduler)->c below */
	buf[off] = '\0';
	for (size_t i = 0; i < off; i++)
		if (p->task[i].role == DLRT_ROLE_SCHEDULER)
			buf[i] = 'S';
	return buf;
}

static void check_layout(const char *nodes, const char *tpn, enum dlrt_dist d, uint32_t plane,
			 const char *want_nodes, const char *want_local)
{
	struct dlrt_layout l;
	struct dlrt_err err;
	char gotn[64] = "", gotl[64] = "";

	if (dlrt_layout_init(&l, nodes, tpn, d, plane, &err) < 0) {
		TAP_OK(0, "layout %s %s: %s", nodes, tpn, err.msg);
		return;
	}
	for (uint32_t t = 0; t < l.ntasks && t < 63; t++) {
		gotn[t] = (char)('0' + l.task_node[t]);
		gotl[t] = (char)('0' + l.task_local[t]);
	}
	TAP_IS_STR(gotn, want_nodes, "%s layout of %s: node of each task", dlrt_dist_name(d), tpn);
	TAP_IS_STR(gotl, want_local, "%s layout of %s: local rank of each task", dlrt_dist_name(d), tpn);
	dlrt_layout_free(&l);
}

/* Sets a --dl-* option through the option table, as Slurm's callback does. */
static void set_opt(struct dlrt_opts *o, const char *name, const char *arg)
{
	struct dlrt_err err = { "" };

	if (dlrt_opts_set_name(o, &cfg, name, arg, &err) < 0)
		TAP_OK(0, "--%s=%s: %s", name, arg, err.msg);
}

static void set_servers(struct dlrt_opts *o, int servers)
{
	char v[16];

	snprintf(v, sizeof(v), "%d", servers);
	if (servers > 0)
		set_opt(o, "dl-servers", v);
}

static void check_mxnet_sched(const char *tpn, uint32_t nnodes, int servers, enum dlrt_dist d,
			      const char *sched, const char *want)
{
	struct dlrt_layout l;
	struct dlrt_opts o;
	struct dlrt_plan p;
	struct dlrt_err err;
	char nodes[32], buf[64];

	snprintf(nodes, sizeof(nodes), "n[1-%u]", nnodes);
	dlrt_opts_init(&o, &cfg);
	set_servers(&o, servers);
	set_opt(&o, "dl-mxnet-sched", sched);
	if (dlrt_layout_init(&l, nodes, tpn, d, 0, &err) < 0 ||
	    dlrt_plan_build(&p, dlrt_runtimes[dlrt_runtime_index("mxnet")], &l, &o, &cfg, &err) < 0) {
		TAP_OK(0, "mxnet %s servers=%d: %s", tpn, servers, err.msg);
		return;
	}
	TAP_IS_STR(roles_string(&p, buf, sizeof(buf)), want, "mxnet roles, tasks per node %s, "
		   "servers %d, %s, scheduler %s", tpn, servers, dlrt_dist_name(d),
		   sched);
	TAP_IS_INT(dlrt_plan_companion(&p, 0, NULL), !strcmp(sched, "extra"),
		   "task 0 has the extra scheduler as its companion");
	TAP_IS_INT(dlrt_plan_companion(&p, 1, NULL), 0, "no other task has one");
	dlrt_plan_free(&p);
	dlrt_layout_free(&l);
}

static void check_mxnet(const char *tpn, uint32_t nnodes, int servers, enum dlrt_dist d,
			const char *want)
{
	check_mxnet_sched(tpn, nnodes, servers, d, "task", want);
}

/* The first-failure line (runtime/failfast.c) for task `rank` of an mxnet plan. */
static void check_failfast(void)
{
	struct dlrt_layout l;
	struct dlrt_opts o;
	struct dlrt_plan p;
	struct dlrt_err err;
	char line[512];

	TAP_OK(dlrt_failfast_is_failure(1 << 8), "exit 1 is a failure");
	TAP_OK(!dlrt_failfast_is_failure(0), "exit 0 is not");
	TAP_OK(dlrt_failfast_is_failure(SIGKILL), "death by SIGKILL is a failure");
	TAP_OK(dlrt_failfast_is_failure(SIGABRT), "death by SIGABRT (ps-lite's CHECK) is a failure");
	TAP_OK(!dlrt_failfast_is_failure(SIGTERM), "SIGTERM is how steps end, not a cause");
	TAP_OK(!dlrt_failfast_is_failure(SIGINT), "SIGINT (Ctrl-C) neither");
	TAP_OK(!dlrt_failfast_is_failure(SIGHUP), "SIGHUP neither");
	dlrt_opts_init(&o, &cfg);
	set_servers(&o, 1);
	dlrt_layout_init(&l, "n[1-2]", "2,2", DLRT_DIST_BLOCK, 0, &err);
	dlrt_plan_build(&p, dlrt_runtimes[dlrt_runtime_index("mxnet")], &l, &o, &cfg, &err);
	dlrt_failfast_message(&p, 0, false, SIGKILL, line, sizeof(line));
	TAP_IS_STR(line, "mxnet scheduler (task 0 on n1) was killed by signal 9 (Killed): ending the "
		   "step, since the servers and workers would wait for it forever", "scheduler task");
	dlrt_failfast_message(&p, 3, false, 3 << 8, line, sizeof(line));
	TAP_IS_STR(line, "mxnet worker 1 (task 3 on n2) exited with status 3: ending the step, "
		   "since the other roles would wait for it forever", "a worker names its index and task");
	dlrt_plan_free(&p);
	set_opt(&o, "dl-mxnet-sched", "extra");
	dlrt_plan_build(&p, dlrt_runtimes[dlrt_runtime_index("mxnet")], &l, &o, &cfg, &err);
	dlrt_failfast_message(&p, 0, true, 1 << 8, line, sizeof(line));
	TAP_IS_STR(line, "mxnet scheduler (the extra process on n1, next to task 0) exited with "
		   "status 1: ending the step, since the servers and workers would wait for it "
		   "forever", "the extra scheduler");
	dlrt_failfast_message(&p, 0, false, SIGSEGV, line, sizeof(line));
	TAP_OK(strstr(line, "mxnet worker 0 (task 0 on n1) was killed by signal 11") == line,
	       "task 0 is a worker in the extra layout: %s", line);
	dlrt_plan_free(&p);
	dlrt_layout_free(&l);
}

int main(void)
{
	struct dlrt_err err;
	struct dlrt_layout l;
	struct dlrt_opts o;
	struct dlrt_plan p;
	struct dlrt_step_info step = { .job_id = 42, .step_id = 3, .restart_count = 1 };
	struct dlrt_env env;
	struct dlrt_addrs addr = { .valid = true, .root_ip = "10.0.0.1", .root_port = 29400,
				   .node_ip = "10.0.0.3" };
	enum dlrt_dist d;
	uint32_t plane;

	dlrt_config_parse(&cfg, 0, NULL, &err);

	/* Distribution strings as Slurm exports them. */
	TAP_OK(dlrt_layout_parse_dist("cyclic:block", &d, &plane, &err) == 0 && d == DLRT_DIST_CYCLIC,
	       "cyclic:block is cyclic across nodes");
	TAP_OK(dlrt_layout_parse_dist("block", &d, &plane, &err) == 0 && d == DLRT_DIST_BLOCK, "block");
	TAP_OK(dlrt_layout_parse_dist(NULL, &d, &plane, &err) == 0 && d == DLRT_DIST_BLOCK, "unset = block");
	TAP_OK(dlrt_layout_parse_dist("plane=2", &d, &plane, &err) == 0 && d == DLRT_DIST_PLANE &&
	       plane == 2, "plane=2");
	TAP_OK(dlrt_layout_parse_dist("plane", &d, &plane, &err) == 0 && d == DLRT_DIST_PLANE &&
	       plane == 0, "plane without a size: the size comes from SLURM_DIST_PLANESIZE");
	TAP_OK(dlrt_layout_init(&l, "n1", "1", DLRT_DIST_PLANE, 0, &err) < 0, "plane size 0 rejected");
	TAP_OK(dlrt_layout_parse_dist("planet", &d, &plane, &err) < 0, "planet rejected");
	TAP_OK(dlrt_layout_parse_dist("arbitrary", &d, &plane, &err) < 0 && strstr(err.msg, "-m block"),
	       "arbitrary rejected with the fix: %s", err.msg);

	/* Placement: uneven 3,1,2. */
	check_layout("n[1-3]", "3,1,2", DLRT_DIST_BLOCK, 0, "000122", "012001");
	check_layout("n[1-3]", "3,1,2", DLRT_DIST_CYCLIC, 0, "012020", "000112");
	check_layout("n[1-3]", "3,1,2", DLRT_DIST_PLANE, 2, "001220", "010012");
	check_layout("n1", "1", DLRT_DIST_BLOCK, 0, "0", "0");
	check_layout("n[1-2]", "4(x2)", DLRT_DIST_CYCLIC, 0, "01010101", "00112233");

	/* Cross-checks Slurm's own view of a task. */
	dlrt_layout_init(&l, "n[1-3]", "3,1,2", DLRT_DIST_CYCLIC, 0, &err);
	TAP_IS_INT(dlrt_layout_check_local(&l, 2, 1, 4, &err), 0, "task 4 is local 1 on node 2 (cyclic)");
	TAP_IS_INT(dlrt_layout_check_local(&l, 0, 1, 1, &err), -1, "a wrong placement is detected");
	dlrt_layout_free(&l);

	/* mxnet: S=scheduler, s=server, w=worker. Servers spread over nodes first,
	 * from each node's highest local rank. */
	check_mxnet("3,1,2", 3, -1, DLRT_DIST_BLOCK, "Swssws");
	check_mxnet("3,1,2", 3, 1, DLRT_DIST_BLOCK, "Swswww");
	check_mxnet("3,1,2", 3, 4, DLRT_DIST_BLOCK, "Ssssws");
	check_mxnet("3,1,2", 3, 2, DLRT_DIST_CYCLIC, "Sswwws");
	check_mxnet("6", 1, 2, DLRT_DIST_BLOCK, "Swwwss");
	check_mxnet("1,1,1", 3, -1, DLRT_DIST_BLOCK, "Ssw");
	check_mxnet("2(x2)", 2, 2, DLRT_DIST_BLOCK, "Ssws");
	/* --dl-mxnet-sched=extra: no task is the scheduler; the default server
	 * count leaves one worker. */
	check_mxnet_sched("3,1,2", 3, -1, DLRT_DIST_BLOCK, "extra", "wwssws");
	check_mxnet_sched("1,1,1", 3, -1, DLRT_DIST_BLOCK, "extra", "ssw");
	check_mxnet_sched("1,1,1", 3, 1, DLRT_DIST_BLOCK, "extra", "sww");
	check_mxnet_sched("2", 1, -1, DLRT_DIST_BLOCK, "extra", "ws");
	check_mxnet_sched("3,1,2", 3, 2, DLRT_DIST_CYCLIC, "extra", "wswwws");
	check_failfast();

	/* mxnet validation: too few tasks, and more servers than nodes. */
	dlrt_opts_init(&o, &cfg);
	set_servers(&o, 3);
	dlrt_layout_init(&l, "n[1-2]", "2,2", DLRT_DIST_BLOCK, 0, &err);
	TAP_IS_INT(dlrt_plan_build(&p, dlrt_runtimes[dlrt_runtime_index("mxnet")], &l, &o, &cfg, &err),
		   -1, "mxnet with 4 tasks and 3 servers is rejected");
	TAP_OK(strstr(err.msg, "needs at least 5 tasks (1 scheduler + 3 servers + 1 worker)") != NULL,
	       "message names the count and the fix: %s", err.msg);
	dlrt_layout_free(&l);
	dlrt_layout_init(&l, "n1", "1", DLRT_DIST_BLOCK, 0, &err);
	dlrt_opts_init(&o, &cfg);
	TAP_IS_INT(dlrt_plan_build(&p, dlrt_runtimes[dlrt_runtime_index("mxnet")], &l, &o, &cfg, &err),
		   -1, "mxnet with one task is rejected");
	set_opt(&o, "dl-mxnet-sched", "extra");
	TAP_IS_INT(dlrt_plan_build(&p, dlrt_runtimes[dlrt_runtime_index("mxnet")], &l, &o, &cfg, &err),
		   -1, "mxnet with one task and an extra scheduler is rejected (1 server + 1 worker)");
	TAP_OK(strstr(err.msg, "--dl-mxnet-sched=extra needs at least 2 tasks (1 server + 1 "
		      "worker; the scheduler is an extra process)") != NULL, "names the rule: %s",
	       err.msg);
	set_opt(&o, "dl-mxnet-sched", "task");
	TAP_IS_INT(dlrt_plan_build(&p, dlrt_runtimes[dlrt_runtime_index("torch")], &l, &o, &cfg, &err),
		   0, "torch with one task is fine");
	dlrt_plan_free(&p);
	dlrt_layout_free(&l);

	/* Horovod cross ranks for unequal tasks per node (get_host_assignments). */
	dlrt_layout_init(&l, "a,b,c", "3,1,2", DLRT_DIST_BLOCK, 0, &err);
	dlrt_opts_init(&o, &cfg);
	dlrt_plan_build(&p, dlrt_runtimes[dlrt_runtime_index("horovod")], &l, &o, &cfg, &err);
	{
		/* task:        0 1 2 3 4 5   (a:0,1,2  b:3  c:4,5) */
		const uint32_t cr[] = { 0, 0, 0, 1, 2, 1 };
		const uint32_t cs[] = { 3, 2, 1, 3, 3, 2 };
		int ok = 1;

		for (int t = 0; t < 6; t++)
			ok &= p.task[t].cross_rank == cr[t] && p.task[t].cross_size == cs[t];
		TAP_OK(ok, "horovod cross rank/size for 3,1,2");
	}
	dlrt_env_init(&env);
	TAP_IS_INT(dlrt_plan_task_env(&p, 4, &step, NULL, &env, &err), 0, "horovod env of task 4");
	TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_RANK"), "4", "HOROVOD_RANK");
	TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_LOCAL_RANK"), "0", "HOROVOD_LOCAL_RANK");
	TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_LOCAL_SIZE"), "2", "HOROVOD_LOCAL_SIZE");
	TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_CROSS_RANK"), "2", "HOROVOD_CROSS_RANK");
	TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_CROSS_SIZE"), "3", "HOROVOD_CROSS_SIZE");
	TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_HOSTNAME"), "c", "HOROVOD_HOSTNAME is the node name");
	TAP_IS_STR(dlrt_env_get(&env, "DLRT_ATTEMPT"), "1", "DLRT_ATTEMPT from the restart count");
	dlrt_env_free(&env);
	dlrt_plan_free(&p);

	/* Caffe2: master + workers, Kubeflow variables. */
	dlrt_plan_build(&p, dlrt_runtimes[dlrt_runtime_index("caffe2")], &l, &o, &cfg, &err);
	dlrt_env_init(&env);
	dlrt_plan_task_env(&p, 3, &step, NULL, &env, &err);
	TAP_IS_STR(dlrt_env_get(&env, "SHARD_ID"), "3", "SHARD_ID");
	TAP_IS_STR(dlrt_env_get(&env, "NUM_SHARDS"), "6", "NUM_SHARDS");
	TAP_IS_STR(dlrt_env_get(&env, "RUN_ID"), "dlrt-42-3-1", "RUN_ID unique per job, step, attempt");
	TAP_IS_STR(dlrt_env_get(&env, "CAFFE2_CONFIG"),
		   "{\"cluster\":{\"master\":[\"a\"],\"worker\":[\"a\",\"a\",\"b\",\"c\",\"c\"]},"
		   "\"task\":{\"type\":\"worker\",\"index\":2}}", "CAFFE2_CONFIG JSON");
	TAP_IS_STR(dlrt_env_get(&env, "DLRT_ROLE"), "worker", "DLRT_ROLE");
	TAP_OK(!dlrt_env_get(&env, "REDIS_HOST"), "no REDIS_HOST without a helper address");
	dlrt_env_free(&env);
	/* The helper's address comes from the exchange; a user's REDIS_* wins by default. */
	dlrt_env_init(&env);
	dlrt_plan_task_env(&p, 3, &step, &addr, &env, &err);
	TAP_IS_STR(dlrt_env_get(&env, "REDIS_HOST"), "10.0.0.1", "REDIS_HOST is the helper's node");
	TAP_IS_STR(dlrt_env_get(&env, "REDIS_PORT"), "29400", "REDIS_PORT is the helper's port");
	{
		bool keep_host = false, keep_run = false, keep_shard = true;

		for (size_t i = 0; i < env.n; i++) {
			if (!strcmp(env.vars[i].name, "REDIS_HOST"))
				keep_host = env.vars[i].keep_user;
			if (!strcmp(env.vars[i].name, "RUN_ID"))
				keep_run = env.vars[i].keep_user;
			if (!strcmp(env.vars[i].name, "SHARD_ID"))
				keep_shard = env.vars[i].keep_user;
		}
		TAP_OK(keep_host && keep_run, "a user's REDIS_HOST and RUN_ID win (default store)");
		TAP_OK(!keep_shard, "SHARD_ID is always dlrt's");
	}
	dlrt_env_free(&env);
	dlrt_plan_free(&p);
	{
		struct dlrt_opts o2 = o;

		set_opt(&o2, "dl-store", "helper");
		dlrt_plan_build(&p, dlrt_runtimes[dlrt_runtime_index("caffe2")], &l, &o2, &cfg, &err);
		dlrt_env_init(&env);
		dlrt_plan_task_env(&p, 0, &step, &addr, &env, &err);
		for (size_t i = 0; i < env.n; i++)
			if (!strcmp(env.vars[i].name, "REDIS_PORT"))
				TAP_OK(!env.vars[i].keep_user, "--dl-store=helper overrides REDIS_PORT");
		dlrt_env_free(&env);
		dlrt_plan_free(&p);

		/* Which steps get the helper store (dlrt-store) as their node service. */
		{
			const struct dlrt_runtime *c2 = dlrt_runtimes[dlrt_runtime_index("caffe2")];
			struct dlrt_service_spec spec;

			o2 = o; /* the default store */
			dlrt_plan_build(&p, c2, &l, &o2, &cfg, &err);
			TAP_IS_STR(c2->user_service_var, "REDIS_HOST", "a user's REDIS_HOST means their redis");
			dlrt_service_spec_init(&spec, NULL, NULL);
			TAP_OK(c2->service(&p, &spec), "default store: the helper is started");
			TAP_IS_STR(spec.program, "dlrt-store", "the service is libexec/dlrt/dlrt-store");
			dlrt_service_spec_free(&spec);
			p.user_service = true;
			dlrt_service_spec_init(&spec, NULL, NULL);
			TAP_OK(!c2->service(&p, &spec), "default store with the user's REDIS_HOST: no helper");
			dlrt_service_spec_free(&spec);
			dlrt_plan_free(&p);
			set_opt(&o2, "dl-store", "helper");
			dlrt_plan_build(&p, c2, &l, &o2, &cfg, &err);
			p.user_service = true;
			dlrt_service_spec_init(&spec, NULL, NULL);
			TAP_OK(c2->service(&p, &spec), "--dl-store=helper: the helper even so");
			dlrt_service_spec_free(&spec);
			dlrt_plan_free(&p);
			set_opt(&o2, "dl-store", "file:/tmp");
			dlrt_plan_build(&p, c2, &l, &o2, &cfg, &err);
			dlrt_service_spec_init(&spec, NULL, NULL);
			TAP_OK(!c2->service(&p, &spec), "--dl-store=file:DIR: no helper");
			dlrt_service_spec_free(&spec);
			dlrt_plan_free(&p);
		}
		set_opt(&o2, "dl-store", "file:/nonexistent/dlrt-c2");
		TAP_IS_INT(dlrt_plan_build(&p, dlrt_runtimes[dlrt_runtime_index("caffe2")], &l, &o2,
					   &cfg, &err), -1, "file store: a missing folder is refused");
		TAP_OK(strstr(err.msg, "mkdir -p /nonexistent/dlrt-c2") != NULL, "message: %s", err.msg);
		set_opt(&o2, "dl-store", "file:/tmp");
		TAP_IS_INT(dlrt_plan_build(&p, dlrt_runtimes[dlrt_runtime_index("caffe2")], &l, &o2,
					   &cfg, &err), 0, "file store in an existing folder");
		dlrt_env_init(&env);
		dlrt_plan_task_env(&p, 1, &step, &addr, &env, &err);
		TAP_IS_STR(dlrt_env_get(&env, "NFS_PATH"), "/tmp", "NFS_PATH is the file store's folder");
		TAP_OK(!dlrt_env_get(&env, "REDIS_HOST"), "no REDIS_HOST with a file store");
		dlrt_env_free(&env);
		dlrt_plan_free(&p);
	}

	/* torch: torchrun's variables. */
	dlrt_plan_build(&p, dlrt_runtimes[dlrt_runtime_index("torch")], &l, &o, &cfg, &err);
	dlrt_env_init(&env);
	dlrt_plan_task_env(&p, 5, &step, &addr, &env, &err);
	TAP_IS_STR(dlrt_env_get(&env, "RANK"), "5", "RANK");
	TAP_IS_STR(dlrt_env_get(&env, "WORLD_SIZE"), "6", "WORLD_SIZE");
	TAP_IS_STR(dlrt_env_get(&env, "LOCAL_RANK"), "1", "LOCAL_RANK");
	TAP_IS_STR(dlrt_env_get(&env, "LOCAL_WORLD_SIZE"), "2", "LOCAL_WORLD_SIZE");
	TAP_IS_STR(dlrt_env_get(&env, "GROUP_RANK"), "2", "GROUP_RANK is the node rank");
	TAP_IS_STR(dlrt_env_get(&env, "GROUP_WORLD_SIZE"), "3", "GROUP_WORLD_SIZE");
	TAP_IS_STR(dlrt_env_get(&env, "ROLE_NAME"), "default", "ROLE_NAME");
	TAP_OK(!dlrt_env_get(&env, "SLURM_NTASKS_PER_NODE"),
	       "no SLURM_NTASKS_PER_NODE for 3,1,2 tasks per node (Lightning cannot run it)");
	TAP_IS_STR(dlrt_env_get(&env, "MASTER_ADDR"), "10.0.0.1", "MASTER_ADDR from the exchange");
	TAP_IS_STR(dlrt_env_get(&env, "MASTER_PORT"), "29400", "MASTER_PORT from the exchange");
	TAP_IS_STR(dlrt_env_get(&env, "TORCHELASTIC_USE_AGENT_STORE"), "True",
		   "every rank is a client of dlrt's store");
	TAP_IS_STR(dlrt_env_get(&env, "TORCHELASTIC_RESTART_COUNT"), "1",
		   "TORCHELASTIC_RESTART_COUNT is the attempt");
	TAP_IS_STR(dlrt_env_get(&env, "DLRT_NODE_ADDR"), "10.0.0.3", "DLRT_NODE_ADDR");
	{
		struct dlrt_service_spec spec;

		dlrt_service_spec_init(&spec, NULL, NULL);
		TAP_OK(p.runtime->service && p.runtime->service(&p, &spec) &&
		       !strcmp(spec.program, "dlrt-c10d-store"), "torch: dlrt-c10d-store hosts the store");
		dlrt_service_spec_free(&spec);
		p.no_exchange = true;
		dlrt_service_spec_init(&spec, NULL, NULL);
		TAP_OK(!p.runtime->service(&p, &spec), "torch with an MPI program: no store");
		dlrt_service_spec_free(&spec);
		p.no_exchange = false;
		p.user_service = true;
		dlrt_service_spec_init(&spec, NULL, NULL);
		TAP_OK(!p.runtime->service(&p, &spec), "torch with the user's MASTER_PORT: no store");
		dlrt_service_spec_free(&spec);
		TAP_OK(strstr(p.runtime->user_service_var, "MASTER_ADDR") &&
		       strstr(p.runtime->user_service_var, "MASTER_PORT"),
		       "MASTER_ADDR or MASTER_PORT exported means the user's own store");
	}
	dlrt_env_free(&env);
	/* The user's own store: their values win, no agent-store variables. */
	dlrt_env_init(&env);
	dlrt_plan_task_env(&p, 5, &step, &addr, &env, &err);
	TAP_OK(!dlrt_env_get(&env, "TORCHELASTIC_USE_AGENT_STORE"),
	       "the user's own store: rank 0 hosts it, no TORCHELASTIC_USE_AGENT_STORE");
	for (size_t i = 0; i < env.n; i++)
		if (!strcmp(env.vars[i].name, "MASTER_PORT"))
			TAP_OK(env.vars[i].keep_user, "a user's own MASTER_PORT wins");
	dlrt_env_free(&env);
	dlrt_plan_free(&p);
	dlrt_layout_free(&l);
	/* Equal tasks per node: SLURM_NTASKS_PER_NODE, which Lightning needs; Slurm's
	 * own value (--ntasks-per-node given) wins. */
	dlrt_layout_init(&l, "n[1-3]", "2,2,2", DLRT_DIST_BLOCK, 0, &err);
	dlrt_plan_build(&p, dlrt_runtimes[dlrt_runtime_index("torch")], &l, &o, &cfg, &err);
	dlrt_env_init(&env);
	dlrt_plan_task_env(&p, 5, &step, &addr, &env, &err);
	TAP_IS_STR(dlrt_env_get(&env, "SLURM_NTASKS_PER_NODE"), "2",
		   "SLURM_NTASKS_PER_NODE for 2,2,2 tasks per node");
	for (size_t i = 0; i < env.n; i++)
		if (!strcmp(env.vars[i].name, "SLURM_NTASKS_PER_NODE"))
			TAP_OK(env.vars[i].keep_user, "Slurm's own SLURM_NTASKS_PER_NODE wins");
	dlrt_env_free(&env);
	dlrt_plan_free(&p);
	dlrt_layout_free(&l);
	return tap_done();
}
