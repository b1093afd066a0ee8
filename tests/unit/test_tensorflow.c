/* Unit tests: the tensorflow runtime's launch contract (docs/contracts.md,
 * TensorFlow): TF_CONFIG as TFConfigClusterResolver reads it, from every
 * task's exchanged address, and its bound. Expected JSON is written out. */
#include <string.h>

#include "common/layout.h"
#include "runtime/runtime.h"
#include "tap.h"

int main(void)
{
	struct dlrt_config cfg;
	struct dlrt_err err;
	struct dlrt_layout l;
	struct dlrt_opts o;
	struct dlrt_plan p;
	struct dlrt_step_info step = { .job_id = 42, .step_id = 3 };
	struct dlrt_task_addr tasks[4] = {
		{ "10.0.0.1", 41000 }, { "10.0.0.1", 41001 }, { "10.0.0.2", 52000 },
		{ "10.0.0.2", 52001 },
	};
	struct dlrt_addrs addr = { .valid = true, .root_ip = "10.0.0.1", .root_port = 40000,
				   .node_ip = "10.0.0.2", .tasks = tasks };
	struct dlrt_env env;
	const struct dlrt_runtime *rt;
	int idx = dlrt_runtime_index("tensorflow");

	dlrt_config_parse(&cfg, 0, NULL, &err);
	TAP_OK(idx >= 0, "tensorflow is in the runtime table");
	if (idx < 0)
		return tap_done();
	rt = dlrt_runtimes[idx];
	TAP_OK(rt->needs_task_ports, "every task gets a port of its own from the exchange");
	TAP_OK(!rt->program_uses_pmix, "a TensorFlow program does not do its own PMIx wire-up");

	TAP_IS_INT(dlrt_layout_init(&l, "n[1-2]", "2(x2)", DLRT_DIST_BLOCK, 0, &err), 0, "layout");
	dlrt_opts_init(&o, &cfg);
	TAP_IS_INT(dlrt_plan_build(&p, rt, &l, &o, &cfg, &err), 0, "tensorflow plan");
	TAP_IS_INT(p.role_count[DLRT_ROLE_WORKER], 4, "every task is a worker (worker 0 the chief)");

	dlrt_env_init(&env);
	TAP_IS_INT(dlrt_plan_task_env(&p, 2, &step, &addr, &env, &err), 0, "env of task 2");
	TAP_IS_STR(dlrt_env_get(&env, "TF_CONFIG"),
		   "{\"cluster\":{\"worker\":[\"10.0.0.1:41000\",\"10.0.0.1:41001\","
		   "\"10.0.0.2:52000\",\"10.0.0.2:52001\"]},\"task\":{\"type\":\"worker\","
		   "\"index\":2}}", "TF_CONFIG: every task's address by task id, this task's index");
	for (size_t i = 0; i < env.n; i++)
		if (!strcmp(env.vars[i].name, "TF_CONFIG"))
			TAP_OK(!env.vars[i].keep_user,
			       "TF_CONFIG is dlrt's: an exported one is the same in every task");
	dlrt_env_free(&env);

	dlrt_env_init(&env);
	dlrt_plan_task_env(&p, 0, &step, &addr, &env, &err);
	TAP_OK(strstr(dlrt_env_get(&env, "TF_CONFIG"), "\"index\":0}}") != NULL, "task 0: index 0");
	dlrt_env_free(&env);

	/* No exchange (an MPI program, DLRT_EXCHANGE=none): no cluster to describe. */
	dlrt_env_init(&env);
	dlrt_plan_task_env(&p, 1, &step, NULL, &env, &err);
	TAP_OK(!dlrt_env_get(&env, "TF_CONFIG"), "no addresses: no TF_CONFIG");
	dlrt_env_free(&env);
	addr.tasks = NULL;
	dlrt_env_init(&env);
	dlrt_plan_task_env(&p, 1, &step, &addr, &env, &err);
	TAP_OK(!dlrt_env_get(&env, "TF_CONFIG"), "root address without task ports: no TF_CONFIG");
	dlrt_env_free(&env);
	dlrt_plan_free(&p);

	/* The bound: TF_CONFIG must stay under the kernel's 128 KiB per variable. */
	TAP_IS_INT(rt->validate(&o, &cfg, 5000, 100, &err), 0, "5000 tasks fit");
	TAP_IS_INT(rt->validate(&o, &cfg, 6000, 100, &err), -1, "6000 tasks could not");
	TAP_OK(strstr(err.msg, "128 KiB") && strstr(err.msg, "at most") && !strchr(err.msg, '\n'),
	       "one line naming the limit and the fix: %s", err.msg);
	{
		/* The largest allowed step with the longest addresses fits. */
		uint32_t n = 0;
		struct dlrt_layout big;
		struct dlrt_task_addr *many;
		char tpn[32];

		while (rt->validate(&o, &cfg, n + 1, 1, &err) == 0)
			n++;
		snprintf(tpn, sizeof(tpn), "%u", n);
		many = calloc(n, sizeof(*many));
		for (uint32_t t = 0; many && t < n; t++) {
			snprintf(many[t].ip, sizeof(many[t].ip), "255.255.255.255");
			many[t].port = 65535;
		}
		addr.tasks = many;
		TAP_IS_INT(dlrt_layout_init(&big, "n1", tpn, DLRT_DIST_BLOCK, 0, &err), 0,
			   "layout of %u tasks", n);
		TAP_IS_INT(dlrt_plan_build(&p, rt, &big, &o, &cfg, &err), 0, "plan of %u tasks", n);
		dlrt_env_init(&env);
		dlrt_plan_task_env(&p, n - 1, &step, &addr, &env, &err);
		TAP_OK(dlrt_env_get(&env, "TF_CONFIG") &&
		       strlen("TF_CONFIG=") + strlen(dlrt_env_get(&env, "TF_CONFIG")) < 128 * 1024,
		       "TF_CONFIG of %u tasks with the longest addresses: %zu bytes", n,
		       dlrt_env_get(&env, "TF_CONFIG") ? strlen(dlrt_env_get(&env, "TF_CONFIG")) : 0);
		dlrt_env_free(&env);
		dlrt_plan_free(&p);
		dlrt_layout_free(&big);
		free(many);
	}
	dlrt_layout_free(&l);
	return tap_done();
}
