#include "contcheck.h"

#include <stdbool.h>
#include <string.h>

enum kind { K_NONE, K_PODMAN, K_DOCKER, K_APPTAINER };

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static enum kind kind_of(const char *prog)
{
	const char *b = base(prog);

	if (!strcmp(b, "podman"))
		return K_PODMAN;
	if (!strcmp(b, "docker"))
		return K_DOCKER;
	if (!strcmp(b, "apptainer") || !strcmp(b, "singularity"))
		return K_APPTAINER;
	return K_NONE;
}

/* "--NAME=VALUE" or "--NAME VALUE" at argv[i], for one of the names: the value. */
static const char *opt_value(size_t argc, const char *const *argv, size_t i,
			     const char *const *names)
{
	for (const char *const *n = names; *n; n++) {
		size_t len = strlen(*n);

		if (!strncmp(argv[i], *n, len) && argv[i][len] == '=')
			return argv[i] + len + 1;
		if (!strcmp(argv[i], *n) && i + 1 < argc)
			return argv[i + 1];
	}
	return NULL;
}

static bool has_flag(size_t argc, const char *const *argv, size_t from, const char *const *flags)
{
	for (size_t i = from; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return false;
		for (const char *const *f = flags; *f; f++)
			if (!strcmp(argv[i], *f) || (!strncmp(argv[i], *f, strlen(*f)) &&
						      argv[i][strlen(*f)] == '=' &&
						      strcmp(argv[i] + strlen(*f) + 1, "false")))
				return true;
	}
	return false;
}

/* Podman and Docker: `run` (or `container run`), its network and environment. */
static int check_oci_cli(size_t argc, const char *const *argv, enum kind k, struct dlrt_err *err)
{
	static const char *const net[] = { "--network", "--net", NULL };
	static const char *const envhost[] = { "--env-host", NULL };
	const char *name = k == K_PODMAN ? "podman" : "docker";
	size_t i = 1;
	const char *v = NULL;

	while (i < argc && argv[i][0] == '-') /* the runtime's own options */
		i++;
	if (i < argc && !strcmp(argv[i], "container"))
		i++;
	if (i >= argc || strcmp(argv[i], "run"))
		return 0;
	for (size_t j = i + 1; j < argc && strcmp(argv[j], "--"); j++) {
		const char *got = opt_value(argc, argv, j, net);

		if (got)
			v = got;
	}
	if (!v || strcmp(v, "host"))
		return dlrt_err_set(err, "%s run %s: the task gets its own network namespace, "
				    "where its node's relay on 127.0.0.1 and the other tasks' "
				    "addresses are out of reach (connections are refused or time "
				    "out): add --network=host to %s run", name,
				    v ? "with a network other than host" : "without --network=host",
				    name);
	if (k == K_PODMAN && !has_flag(argc, argv, i + 1, envhost))
		return dlrt_err_set(err, "podman run without --env-host: the container does not "
				    "get the task's environment (RANK, MASTER_ADDR, DMLC_*, "
				    "CUDA_VISIBLE_DEVICES, ... that dlrt sets): add --env-host to "
				    "podman run");
	return 0;
}

/* Apptainer/Singularity share the node's network and pass the environment
 * unless told otherwise. */
static int check_apptainer(size_t argc, const char *const *argv, struct dlrt_err *err)
{
	/* Long forms only: a short one may as well be the program's own. */
	static const char *const net[] = { "--net", "--network", NULL };
	static const char *const clean[] = { "--cleanenv", "--containall", NULL };
	const char *name = base(argv[0]);

	if (has_flag(argc, argv, 1, net))
		return dlrt_err_set(err, "%s --net: the task gets its own network namespace, "
				    "where its node's relay on 127.0.0.1 and the other tasks' "
				    "addresses are out of reach: leave out --net", name);
	if (has_flag(argc, argv, 1, clean))
		return dlrt_err_set(err, "%s with --cleanenv or --containall: the container does "
				    "not get the task's environment (RANK, MASTER_ADDR, ... that "
				    "dlrt sets): leave them out, or pass the variables with --env",
				    name);
	return 0;
}

int dlrt_contcheck_argv(size_t argc, const char *const *argv, struct dlrt_err *err)
{
	enum kind k;

	if (argc < 1 || !argv || !argv[0])
		return 0;
	k = kind_of(argv[0]);
	if (k == K_PODMAN || k == K_DOCKER)
		return check_oci_cli(argc, argv, k, err);
	if (k == K_APPTAINER)
		return check_apptainer(argc, argv, err);
	return 0;
}
