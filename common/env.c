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

/* Takes `value` (malloc'd). */
static void env_put(struct dlrt_env *env, enum dlrt_env_layer layer, bool keep_user,
		    const char *name, char *value)
{
	char *n;
	size_t i;

	for (i = 0; i < env->n; i++) {
		if (!strcmp(env->vars[i].name, name)) {
			if (env->vars[i].layer < layer) {
				free(value); /* the lower layer wins */
				return;
			}
			free(env->vars[i].value);
			env->vars[i].value = value;
			env->vars[i].keep_user = keep_user;
			env->vars[i].layer = layer;
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
	n = strdup(name);
	if (!n) {
		free(value);
		env->failed = true;
		return;
	}
	env->vars[env->n++] = (struct dlrt_env_var){ .name = n, .value = value,
						     .keep_user = keep_user, .layer = layer };
}

static void env_vset(struct dlrt_env *env, bool keep_user, const char *name,
		     const char *fmt, va_list ap)
{
	char *value = NULL;

	if (vasprintf(&value, fmt, ap) < 0) {
		env->failed = true;
		return;
	}
	env_put(env, DLRT_ENV_RUNTIME, keep_user, name, value);
}

void dlrt_env_add(struct dlrt_env *env, enum dlrt_env_layer layer, bool keep_user,
		  const char *name, const char *value)
{
	char *v = strdup(value);

	if (!v) {
		env->failed = true;
		return;
	}
	env_put(env, layer, keep_user, name, v);
}

void dlrt_env_resolve(struct dlrt_env *env, dlrt_env_user_fn user, void *ctx)
{
	for (size_t i = 0; i < env->n; i++) {
		struct dlrt_env_var *v = &env->vars[i];
		char *mine = NULL;

		if (!v->keep_user || v->from_user || user(ctx, v->name, &mine) != 1)
			continue;
		v->from_user = true;
		if (!mine) {
			v->unread = true;
			continue;
		}
		free(v->value);
		v->value = mine;
	}
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

const char *dlrt_envp_get(char **envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}
