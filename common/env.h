/* env.h - the environment dlrt hands one task.
 *
 * Runtimes add variables here instead of calling spank_setenv directly, so the
 * same list feeds the real task (spank_setenv), the --dl-dry-run table and the
 * unit tests.
 */
#ifndef DLRT_ENV_H
#define DLRT_ENV_H

#include <stdbool.h>
#include <stddef.h>

#include "dlrt_err.h"

struct dlrt_env_var {
	char *name;
	char *value;
	bool keep_user; /* a value the user already exported wins (e.g. MASTER_PORT) */
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

int dlrt_env_check(const struct dlrt_env *env, struct dlrt_err *err);

#endif
