/* test_env.c - the task environment's one precedence rule (env.h): what the
 * user exported, then the runtime's layer (--dl-iface), then the GPU plan. */
#include <stdlib.h>
#include <string.h>

#include "common/env.h"
#include "tap.h"

/* The user's environment: NAME=VALUE strings; "NAME" alone = exported but
 * unreadable (too long). */
static int user_get(void *ctx, const char *name, char **value)
{
	size_t n = strlen(name);

	for (const char *const *e = ctx; *e; e++) {
		if (strncmp(*e, name, n))
			continue;
		if ((*e)[n] == '=') {
			*value = strdup(*e + n + 1);
			return 1;
		}
		if (!(*e)[n]) {
			*value = NULL;
			return 1;
		}
	}
	return 0;
}

static const struct dlrt_env_var *var(const struct dlrt_env *env, const char *name)
{
	for (size_t i = 0; i < env->n; i++)
		if (!strcmp(env->vars[i].name, name))
			return &env->vars[i];
	return NULL;
}

/* The runtime's layer then the GPU plan's, as spank/stepd.c builds a task's. */
static void build(struct dlrt_env *env)
{
	dlrt_env_init(env);
	dlrt_env_set(env, "DLRT_RANK", "3");
	dlrt_env_set_default(env, "NCCL_SOCKET_IFNAME", "eth1"); /* --dl-iface */
	dlrt_env_set_default(env, "MASTER_PORT", "29500");
	dlrt_env_add(env, DLRT_ENV_GPU, false, "CUDA_VISIBLE_DEVICES", "2");
	dlrt_env_add(env, DLRT_ENV_GPU, true, "NCCL_IB_HCA", "=mlx5_1:1");
	dlrt_env_add(env, DLRT_ENV_GPU, true, "NCCL_SOCKET_IFNAME", "=ib1");
}

int main(void)
{
	struct dlrt_env env;
	struct dlrt_err err;
	static const char *const none[] = { NULL };
	static const char *const user[] = { "NCCL_SOCKET_IFNAME=myeth", "CUDA_VISIBLE_DEVICES=0,1,2,3",
					    "DLRT_RANK=99", "MASTER_PORT", NULL };

	build(&env);
	TAP_IS_STR(dlrt_env_get(&env, "NCCL_SOCKET_IFNAME"), "eth1",
		   "--dl-iface's NCCL_SOCKET_IFNAME wins over the GPU plan's");
	TAP_IS_INT(var(&env, "NCCL_SOCKET_IFNAME")->layer, DLRT_ENV_RUNTIME,
		   "and stays in the runtime's layer");
	TAP_IS_STR(dlrt_env_get(&env, "NCCL_IB_HCA"), "=mlx5_1:1", "the GPU plan's NIC without rival");
	TAP_IS_INT(env.n, 5, "one entry per name");
	dlrt_env_resolve(&env, user_get, (void *)none);
	TAP_OK(!var(&env, "NCCL_SOCKET_IFNAME")->from_user, "nothing exported: nothing from the user");
	TAP_IS_STR(dlrt_env_get(&env, "NCCL_SOCKET_IFNAME"), "eth1", "and the value stays");
	dlrt_env_free(&env);

	build(&env);
	dlrt_env_resolve(&env, user_get, (void *)user);
	TAP_IS_STR(dlrt_env_get(&env, "NCCL_SOCKET_IFNAME"), "myeth",
		   "the user's NCCL_SOCKET_IFNAME wins over --dl-iface's and the GPU plan's");
	TAP_OK(var(&env, "NCCL_SOCKET_IFNAME")->from_user, "marked as the user's");
	TAP_IS_STR(dlrt_env_get(&env, "CUDA_VISIBLE_DEVICES"), "2",
		   "the GPU plan replaces the step-wide CUDA_VISIBLE_DEVICES");
	TAP_IS_STR(dlrt_env_get(&env, "DLRT_RANK"), "3", "the contract replaces what the user set");
	TAP_OK(var(&env, "MASTER_PORT")->from_user && var(&env, "MASTER_PORT")->unread,
	       "an exported value too long to read: the task keeps its own");
	TAP_OK(dlrt_env_check(&env, &err) == 0, "no error");
	dlrt_env_free(&env);

	/* The GPU plan's layer replaces within itself; the runtime's replaces
	 * the GPU plan's whatever the order. */
	dlrt_env_init(&env);
	dlrt_env_add(&env, DLRT_ENV_GPU, true, "NCCL_SOCKET_IFNAME", "=ib0");
	dlrt_env_add(&env, DLRT_ENV_GPU, true, "NCCL_SOCKET_IFNAME", "=ib1");
	TAP_IS_STR(dlrt_env_get(&env, "NCCL_SOCKET_IFNAME"), "=ib1", "same layer: the last wins");
	dlrt_env_set_default(&env, "NCCL_SOCKET_IFNAME", "eth0");
	TAP_IS_STR(dlrt_env_get(&env, "NCCL_SOCKET_IFNAME"), "eth0",
		   "the runtime's layer wins over the GPU plan's set before it");
	dlrt_env_add(&env, DLRT_ENV_GPU, true, "NCCL_SOCKET_IFNAME", "=ib2");
	TAP_IS_STR(dlrt_env_get(&env, "NCCL_SOCKET_IFNAME"), "eth0", "and after it");
	dlrt_env_free(&env);

	{
		char *envp[] = { "PATHX=no", "PATH=/bin", "A=", NULL };

		TAP_IS_STR(dlrt_envp_get(envp, "PATH"), "/bin", "envp: the name, not a longer one");
		TAP_IS_STR(dlrt_envp_get(envp, "A"), "", "envp: an empty value");
		TAP_OK(dlrt_envp_get(envp, "B") == NULL && dlrt_envp_get(NULL, "A") == NULL,
		       "envp: absent, or no environment");
	}
	return tap_done();
}
