/* Unit tests: the torchrun runtime's contract (one agent per node, the PET_*
 * variables torch.distributed.run reads) and its options --dl-elastic and
 * --dl-nproc-per-node. Expected values are written out literally. */
#include <string.h>

#include "common/layout.h"
#include "runtime/runtime.h"
#include "tap.h"
#include "launchers/torchrun/torchrun.h"

extern const struct dlrt_runtime dlrt_runtime_torchrun;

/* The torchrun block of the options (its own, declared by the runtime). */
#define TR(o) ((const struct torchrun_opts *)dlrt_rt_opts_c((o), &dlrt_runtime_torchrun))
#define TRW(o) ((struct torchrun_opts *)dlrt_rt_opts((o), &dlrt_runtime_torchrun))

static struct dlrt_config cfg;
static const struct dlrt_runtime *rt;

static const struct dlrt_step_info step = { .job_id = 42, .step_id = 3, .restart_count = 2 };
static const struct dlrt_addrs addr = { .valid = true, .root_ip = "127.0.0.1",
					.root_port = 41234, .node_ip = "10.0.0.3" };

static int build(struct dlrt_plan *p, struct dlrt_layout *l, const char *nodes, const char *tpn,
		 const struct dlrt_opts *o, struct dlrt_err *err)
{
	if (dlrt_layout_init(l, nodes, tpn, DLRT_DIST_BLOCK, 0, err) < 0)
		return -2;
	if (dlrt_plan_build(p, rt, l, o, &cfg, err) < 0) {
		dlrt_layout_free(l);
		return -1;
	}
	return 0;
}

static bool keeps_user(const struct dlrt_env *env, const char *name)
{
	for (size_t i = 0; i < env->n; i++)
		if (!strcmp(env->vars[i].name, name))
			return env->vars[i].keep_user;
	return false;
}

static void test_options(void)
{
	struct dlrt_opts o;
	struct dlrt_err err;

	dlrt_opts_init(&o, &cfg);
	TAP_IS_INT(TR(&o)->elastic_max, 0, "not elastic by default");
	TAP_IS_STR(TR(&o)->nproc_per_node, "", "no --dl-nproc-per-node by default");
	TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-elastic", "2:3", &err), 0, "--dl-elastic=2:3");
	TAP_OK(TRW(&o)->elastic_min == 2 && TRW(&o)->elastic_max == 3, "MIN 2, MAX 3");
	TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-elastic", "1:1", &err), 0, "--dl-elastic=1:1");
	static const char *const bad[] = { "3:2", "0:2", "2", ":3", "2:", "a:b", "2:3:4", "-1:2",
					   "99999999999999999999:1", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-elastic", bad[i], &err), -1,
			   "--dl-elastic=%s is refused", bad[i]);
		TAP_OK(strstr(err.msg, "1 <= MIN <= MAX") != NULL, "one line naming the rule: %s",
		       err.msg);
	}
	TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-elastic", NULL, &err), -1, "--dl-elastic needs a value");
	TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-nproc-per-node", "4", &err), 0, "nproc 4");
	TAP_IS_STR(TR(&o)->nproc_per_node, "4", "stored as 4");
	TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-nproc-per-node", "gpu", &err), 0, "nproc gpu");
	TAP_IS_STR(TR(&o)->nproc_per_node, "gpu", "stored as gpu");
	TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-nproc-per-node", "0", &err), -1, "nproc 0 refused");
	TAP_OK(strstr(err.msg, "or gpu") != NULL, "names the values: %s", err.msg);
	TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-nproc-per-node", "auto", &err), -1,
		   "nproc auto refused (it would start a worker per CPU)");
	TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-nproc-per-node", NULL, &err), -1, "nproc needs a value");
}

static void test_validate(void)
{
	struct dlrt_opts o;
	struct dlrt_layout l;
	struct dlrt_plan p;
	struct dlrt_err err;

	dlrt_opts_init(&o, &cfg);
	TAP_IS_INT(build(&p, &l, "n[1-3]", "2,1,1", &o, &err), -1,
		   "two tasks on one node are refused");
	TAP_OK(strstr(err.msg, "--ntasks-per-node=1") && strstr(err.msg, "4 tasks on 3 nodes"),
	       "the line names the count and the fix: %s", err.msg);
	TAP_IS_INT(build(&p, &l, "n[1-3]", "1(x3)", &o, &err), 0, "one task per node");
	dlrt_plan_free(&p);
	dlrt_layout_free(&l);
	TRW(&o)->elastic_min = 2;
	TRW(&o)->elastic_max = 3;
	TAP_IS_INT(build(&p, &l, "n[1-3]", "1(x3)", &o, &err), 0, "--dl-elastic=2:3 on 3 nodes");
	dlrt_plan_free(&p);
	dlrt_layout_free(&l);
	TAP_IS_INT(build(&p, &l, "n1", "1", &o, &err), -1, "--dl-elastic=2:3 on 1 node is refused");
	TAP_OK(strstr(err.msg, "MIN must be at most") != NULL, "names the rule: %s", err.msg);
	TRW(&o)->elastic_min = 1;
	TRW(&o)->elastic_max = 2;
	TAP_IS_INT(build(&p, &l, "n[1-3]", "1(x3)", &o, &err), -1,
		   "--dl-elastic=1:2 on 3 nodes is refused");
	TAP_OK(strstr(err.msg, "--dl-elastic=2:3") != NULL, "suggests a range that fits: %s", err.msg);
}

static void test_env(void)
{
	struct dlrt_opts o;
	struct dlrt_layout l;
	struct dlrt_plan p;
	struct dlrt_env env;
	struct dlrt_err err;
	struct dlrt_service_spec spec;

	dlrt_opts_init(&o, &cfg);
	if (build(&p, &l, "n[1-3]", "1(x3)", &o, &err) < 0) {
		TAP_OK(0, "plan: %s", err.msg);
		return;
	}
	dlrt_env_init(&env);
	TAP_IS_INT(dlrt_plan_task_env(&p, 2, &step, &addr, &env, &err), 0, "env of agent 2");
	TAP_IS_STR(dlrt_env_get(&env, "PET_NNODES"), "3", "PET_NNODES is the node count");
	TAP_IS_STR(dlrt_env_get(&env, "PET_NPROC_PER_NODE"), "1", "one worker per node by default");
	TAP_IS_STR(dlrt_env_get(&env, "PET_RDZV_BACKEND"), "c10d", "c10d rendezvous");
	TAP_IS_STR(dlrt_env_get(&env, "PET_RDZV_ENDPOINT"), "127.0.0.1:41234",
		   "the endpoint is this node's relay to dlrt-c10d-store");
	TAP_IS_STR(dlrt_env_get(&env, "PET_RDZV_CONF"), "is_host=0", "no agent hosts a store");
	TAP_IS_STR(dlrt_env_get(&env, "PET_RDZV_ID"), "dlrt-42.3.2",
		   "the rendezvous id names job, step and attempt");
	TAP_IS_STR(dlrt_env_get(&env, "PET_MAX_RESTARTS"), "0", "no restarts without --dl-elastic");
	TAP_IS_STR(dlrt_env_get(&env, "PET_REDIRECTS"), "9:2",
		   "redirects: a mapping torch 1.13 on Python 3.11 can parse");
	TAP_IS_STR(dlrt_env_get(&env, "PET_TEE"), "9:2", "tee: the same");
	TAP_IS_STR(dlrt_env_get(&env, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"), "1",
		   "each round's workers get a fresh store (torch 2.4+ shares one across rounds)");
	TAP_OK(!dlrt_env_get(&env, "PET_NODE_RANK"), "no PET_NODE_RANK (c10d assigns node ranks)");
	TAP_OK(!dlrt_env_get(&env, "RANK") && !dlrt_env_get(&env, "MASTER_ADDR"),
	       "no worker variables: the agent gives them to its workers");
	TAP_OK(keeps_user(&env, "PET_NNODES") && keeps_user(&env, "PET_RDZV_CONF") &&
	       keeps_user(&env, "PET_NPROC_PER_NODE") && keeps_user(&env, "PET_RDZV_ID") &&
	       keeps_user(&env, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"),
	       "what the user exported wins");
	dlrt_env_free(&env);

	dlrt_service_spec_init(&spec, NULL, NULL);
	TAP_OK(rt->service(&p, &spec) && !strcmp(spec.program, "dlrt-c10d-store"),
	       "dlrt-c10d-store is the rendezvous store");
	dlrt_service_spec_free(&spec);
	TAP_OK(rt->needs_root_addr && !rt->program_uses_pmix, "the store's address is exchanged");
	TAP_IS_STR(rt->user_service_var, "PET_RDZV_ENDPOINT",
		   "the user's own PET_RDZV_ENDPOINT means their own rendezvous");
	p.user_service = true;
	dlrt_service_spec_init(&spec, NULL, NULL);
	TAP_OK(!rt->service(&p, &spec), "the user's endpoint: no store");
	dlrt_service_spec_free(&spec);
	dlrt_env_init(&env);
	dlrt_plan_task_env(&p, 0, &step, &addr, &env, &err);
	TAP_OK(!dlrt_env_get(&env, "PET_RDZV_ENDPOINT") && !dlrt_env_get(&env, "PET_RDZV_CONF"),
	       "the user's endpoint: no endpoint and no is_host from dlrt");
	dlrt_env_free(&env);
	p.user_service = false;
	p.no_exchange = true;
	dlrt_service_spec_init(&spec, NULL, NULL);
	TAP_OK(!rt->service(&p, &spec), "no exchange: no store");
	dlrt_service_spec_free(&spec);
	dlrt_plan_free(&p);
	dlrt_layout_free(&l);

	dlrt_opts_init(&o, &cfg);
	TRW(&o)->elastic_min = 2;
	TRW(&o)->elastic_max = 4;
	snprintf(TRW(&o)->nproc_per_node, sizeof(TR(&o)->nproc_per_node), "gpu");
	if (build(&p, &l, "n[1-3]", "1(x3)", &o, &err) < 0) {
		TAP_OK(0, "plan: %s", err.msg);
		return;
	}
	dlrt_env_init(&env);
	dlrt_plan_task_env(&p, 0, &step, &addr, &env, &err);
	TAP_IS_STR(dlrt_env_get(&env, "PET_NNODES"), "2:4", "elastic: PET_NNODES is MIN:MAX");
	TAP_IS_STR(dlrt_env_get(&env, "PET_MAX_RESTARTS"), "2",
		   "elastic: one restart per node the step may lose");
	TAP_IS_STR(dlrt_env_get(&env, "PET_NPROC_PER_NODE"), "gpu", "--dl-nproc-per-node=gpu");
	dlrt_env_free(&env);
	dlrt_plan_free(&p);
	dlrt_layout_free(&l);
}

int main(void)
{
	struct dlrt_err err;

	dlrt_config_parse(&cfg, 0, NULL, &err);
	rt = dlrt_runtimes[dlrt_runtime_index("torchrun")];
	TAP_OK(rt != NULL && dlrt_runtime_index("torchrun") >= 0, "torchrun is in the runtime table");
	test_options();
	test_validate();
	test_env();
	return tap_done();
}
