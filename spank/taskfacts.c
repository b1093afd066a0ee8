/* taskfacts.c - what Slurm says about this task and its job that several
 * files of the plugin need: a variable of the step's or task's environment
 * (the plugin's only calls of spank_getenv: a value, whether one is set, a
 * value read whole), the task's whole environment, the program it will exec,
 * and the job's attempt (the restart count). Every file reads them here, so
 * none calls into another for a fact Slurm gives.
 */
#include <slurm/spank.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/env.h"
#include "common/parse.h"
#include "plugin.h"

int dlrt_task_getenv(spank_t sp, const char *name, char *buf, size_t len)
{
	if (spank_getenv(sp, name, buf, len > 0x7fffffff ? 0x7fffffff : (int)len) !=
	    ESPANK_SUCCESS) {
		buf[0] = '\0';
		return -1;
	}
	return 0;
}

bool dlrt_task_env_nonempty(spank_t sp, const char *name)
{
	char v[2];
	spank_err_t rc = spank_getenv(sp, name, v, sizeof(v));

	return rc == ESPANK_NOSPACE || (rc == ESPANK_SUCCESS && v[0]); /* too long: not empty */
}

int dlrt_task_getenv_whole(spank_t sp, const char *name, char **value)
{
	size_t len = 256;

	*value = NULL;
	for (;;) {
		char *buf = malloc(len);
		spank_err_t e;

		if (!buf)
			return 1; /* exists or not, the caller keeps what it has */
		e = spank_getenv(sp, name, buf, (int)len);
		if (e == ESPANK_SUCCESS) {
			*value = buf;
			return 1;
		}
		free(buf);
		if (e != ESPANK_NOSPACE)
			return 0;
		if (len >= (1u << 20))
			return 1;
		len *= 4;
	}
}

char **dlrt_task_environ(spank_t sp)
{
	char **env = NULL;

	if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS)
		return NULL;
	return env;
}

bool dlrt_task_program_path(spank_t sp, char *out, size_t len)
{
	int argc = 0;
	char **argv = NULL;
	const char *path;

	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1 ||
	    !argv[0] || !argv[0][0])
		return false;
	if (strchr(argv[0], '/'))
		return snprintf(out, len, "%s", argv[0]) < (int)len;
	path = dlrt_envp_get(dlrt_task_environ(sp), "PATH");
	while (path && *path) {
		const char *colon = strchr(path, ':');
		size_t dlen = colon ? (size_t)(colon - path) : strlen(path);

		if (snprintf(out, len, "%.*s/%s", (int)dlen, path, argv[0]) < (int)len &&
		    access(out, X_OK) == 0)
			return true;
		path = colon ? colon + 1 : NULL;
	}
	return false;
}

/* The job's attempt. S_SLURM_RESTART_COUNT reads 0 in srun steps of a requeued
 * job (observed on 22.05); the step inherits SLURM_RESTART_COUNT from the batch
 * script's environment, which Slurm sets from the 2nd attempt on. */
uint32_t dlrt_restart_count(spank_t sp)
{
	uint32_t item = 0, env = 0;
	char buf[32];

	spank_get_item(sp, S_SLURM_RESTART_COUNT, &item);
	if (dlrt_task_getenv(sp, "SLURM_RESTART_COUNT", buf, sizeof(buf)) == 0)
		dlrt_parse_u32(buf, 0, 1u << 30, &env);
	return item > env ? item : env;
}
