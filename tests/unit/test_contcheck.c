/* Unit tests: container command lines that cut a task off from its node's
 * network or its environment (jobpolicy/contcheck.h). */
#include <string.h>

#include "jobpolicy/contcheck.h"
#include "tap.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void expect(size_t argc, const char *const *argv, const char *needle, const char *what)
{
	struct dlrt_err err = { "" };
	int rc = dlrt_contcheck_argv(argc, argv, &err);

	if (!needle)
		TAP_OK(rc == 0, "%s: accepted", what);
	else
		TAP_OK(rc < 0 && strstr(err.msg, needle) && !strchr(err.msg, '\n'),
		       "%s: refused in one line: %s", what, err.msg);
}

int main(void)
{
	const char *bare[] = { "/usr/bin/python3", "train.py", "--network", "x" };
	const char *ch[] = { "ch-run", "-b", "/usr:/usr", "/img", "--", "prog" };
	const char *ok1[] = { "podman", "run", "--rm", "--network=host", "--env-host", "img", "p" };
	const char *ok2[] = { "/usr/bin/podman", "--log-level=warn", "run", "--net", "host",
			      "--env-host=true", "--rootfs", "/img:O", "p" };
	const char *ok3[] = { "docker", "container", "run", "--network", "host", "img" };
	const char *nonet[] = { "podman", "run", "--env-host", "--rootfs", "/img", "p" };
	const char *slirp[] = { "podman", "run", "--network=slirp4netns", "--env-host", "img" };
	const char *noenv[] = { "podman", "run", "--network=host", "img", "p" };
	const char *envfalse[] = { "podman", "run", "--network=host", "--env-host=false", "img" };
	const char *dk[] = { "docker", "run", "img", "p" };
	const char *other[] = { "podman", "exec", "ctr", "p" };
	const char *app_ok[] = { "apptainer", "exec", "--bind", "/x", "img.sif", "p", "-e" };
	const char *app_net[] = { "singularity", "exec", "--net", "img.sif", "p" };
	const char *app_clean[] = { "apptainer", "run", "--cleanenv", "img.sif" };
	const char *lone[] = { "podman" };
	const char *dangling[] = { "podman", "run", "--network" };

	expect(N(bare), bare, NULL, "a bare program");
	expect(N(ch), ch, NULL, "ch-run");
	expect(N(ok1), ok1, NULL, "podman run --network=host --env-host");
	expect(N(ok2), ok2, NULL, "podman with its own options, --net host, --env-host=true");
	expect(N(ok3), ok3, NULL, "docker container run --network host");
	expect(N(nonet), nonet, "podman run without --network=host", "podman's default network");
	expect(N(nonet), nonet, "add --network=host", "the fix is named");
	expect(N(slirp), slirp, "with a network other than host", "podman --network=slirp4netns");
	expect(N(noenv), noenv, "add --env-host", "podman without --env-host");
	expect(N(envfalse), envfalse, "without --env-host", "podman --env-host=false");
	expect(N(dk), dk, "docker run without --network=host", "docker's default network");
	expect(N(other), other, NULL, "podman exec: not a new container");
	expect(N(app_ok), app_ok, NULL, "apptainer exec, a program's own -e");
	expect(N(app_net), app_net, "leave out --net", "singularity --net");
	expect(N(app_clean), app_clean, "--cleanenv or --containall", "apptainer --cleanenv");
	expect(N(lone), lone, NULL, "podman alone");
	expect(N(dangling), dangling, "without --network=host", "a dangling --network");
	expect(0, bare, NULL, "no argv");
	return tap_done();
}
