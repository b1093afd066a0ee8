/* env.h - the environment dlrt hands one task.
 *
 * Runtimes and the GPU plan add variables here instead of calling spank_setenv
 * directly, so the same list feeds the real task (spank_setenv), the
 * --dl-dry-run output and the unit tests.
 *
 * One precedence rule, implemented in env.c only (dlrt_env_add and
 * dlrt_env_resolve), decides a variable that several sources set:
 *   1. what the user exported, for the variables dlrt only suggests
 *      (keep_user: the NIC names NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME,
 *      NCCL_IB_HCA, UCX_NET_DEVICES, and e.g. MASTER_PORT);
 *   2. the runtime's layer: DLRT_*, the runtime's contract and the interface
 *      of --dl-iface (or of the route to task 0): HOROVOD_GLOO_IFACE,
 *      DMLC_INTERFACE, GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME;
 *   3. the GPU plan's layer (spank/gpu.c): CUDA_VISIBLE_DEVICES,
 *      CUDA_DEVICE_ORDER, ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES and the
 *      visibility variables Slurm set (ZE_AFFINITY_MASK, GPU_DEVICE_ORDINAL),
 *      which replace Slurm's step-wide lists; NCCL_IB_HCA, UCX_NET_DEVICES,
 *      NCCL_SOCKET_IFNAME, which the user's or the runtime's value beats.
 * Variables that are not keep_user (the contract, the GPU lists) replace what
 * the task's environment held.
 */
#ifndef DLRT_ENV_H
#define DLRT_ENV_H

#include <stdbool.h>
#include <stddef.h>

#include "dlrt_err.h"

/* Where a variable comes from; a lower layer wins over a higher one. */
enum dlrt_env_layer {
	DLRT_ENV_RUNTIME = 0, /* DLRT_*, the runtime's contract, --dl-iface's names */
	DLRT_ENV_GPU,         /* the GPU plan's devices and NICs */
};

struct dlrt_env_var {
	char *name;
	char *value;
	bool keep_user; /* a value the user already exported wins (e.g. MASTER_PORT) */
	enum dlrt_env_layer layer;
	bool from_user; /* dlrt_env_resolve found the user's value: value is it */
	bool unread;    /* ... but too long to read: value is dlrt's, the task keeps its own */
};

struct dlrt_env {
	struct dlrt_env_var *vars;
	size_t n, cap;
	bool failed; /* an allocation failed: reported once by dlrt_env_check */
};

void dlrt_env_init(struct dlrt_env *env);
void dlrt_env_free(struct dlrt_env *env);

/* Sets (or replaces) name=value. Errors are sticky: check once with dlrt_env_check. */
void dlrt_env_set(struct dlrt_env *env, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void dlrt_env_set_default(struct dlrt_env *env, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const char *dlrt_env_get(const struct dlrt_env *env, const char *name);
/* The value of name in a NULL-terminated "NAME=value" array (a job's or task's
 * environment, as Slurm hands it over), or NULL. */
const char *dlrt_envp_get(char **envp, const char *name);

/* The one place of the precedence rule between layers: adds name=value from
 * `layer` unless a lower layer already set that name (it wins); the same
 * layer replaces. keep_user as above. Errors are sticky. */
void dlrt_env_add(struct dlrt_env *env, enum dlrt_env_layer layer, bool keep_user,
		  const char *name, const char *value);

/* What the user exported: 1 with *value (malloc'd; NULL when it exists but
 * cannot be read, e.g. too long), 0 when not exported. */
typedef int (*dlrt_env_user_fn)(void *ctx, const char *name, char **value);

/* The precedence rule's first step: every keep_user variable the user
 * exported takes the user's value (from_user), so the list is exactly what
 * the task gets. Errors are sticky. */
void dlrt_env_resolve(struct dlrt_env *env, dlrt_env_user_fn user, void *ctx);

int dlrt_env_check(const struct dlrt_env *env, struct dlrt_err *err);

#endif
