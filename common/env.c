#include "env.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dlrt_env_init(struct dlrt_env *env)
{
	memset(env, 0, sizeof(*env));
}

void dlrt_env_free(struct dlrt_env *env)
{
	for (size_t i = 0; i < env->n; i++) {
		free(env->vars[i].name);
		free(env->vars[i].value);
	}
	free(env->vars);
	dlrt_env_init(env);
}

static void env_vset(struct dlrt_env *env, bool keep_user, const char *name,
		     const char *fmt, va_list ap)
{
	char *value = NULL;
	size_t i;

	if (vasprintf(&value, fmt, ap) < 0) {
		env->failed = true;
		return;
	}
	for (i = 0; i < env->n; i++) {
		if (!strcmp(env->vars[i].name, name)) {
			free(env->vars[i].value);
			env->vars[i].value = value;
			env->vars[i].keep_user = keep_user;
			return;
		}
	}
	if (env->n == env->cap) {
		size_t cap = env->cap ? env->cap * 2 : 32;
		struct dlrt_env_var *p = realloc(env->vars, cap * sizeof(*p));

		if (!p) {
			free(value);
			env->failed = true;
			return;
		}
		env->vars = p;
		env->cap = cap;
	}
	env->vars[env->n].name = strdup(name);
	if (!env->vars[env->n].name) {
		free(value);
		env->failed = true;
		return;
	}
	env->vars[env->n].value = value;
	env->vars[env->n].keep_user = keep_user;
	env->n++;
}

void dlrt_env_set(struct dlrt_env *env, const char *name, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	env_vset(env, false, name, fmt, ap);
	va_end(ap);
}

void dlrt_env_set_default(struct dlrt_env *env, const char *name, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	env_vset(env, true, name, fmt, ap);
	va_end(ap);
}

const char *dlrt_env_get(const struct dlrt_env *env, const char *name)
{
	for (size_t i = 0; i < env->n; i++)
		if (!strcmp(env->vars[i].name, name))
			return env->vars[i].value;
	return NULL;
}

int dlrt_env_check(const struct dlrt_env *env, struct dlrt_err *err)
{
	if (env->failed)
		return dlrt_err_set(err, "out of memory building the task environment");
	return 0;
}
