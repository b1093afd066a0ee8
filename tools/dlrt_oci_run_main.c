/* dlrt-oci-run - RunTimeRun for Slurm 22.05's OCI containers (srun
 * --container), so that each task gets its own environment inside the
 * container:
 *
 *   RunTimeRun="PKGLIBEXECDIR/dlrt-oci-run %b %t -- crun ... run --bundle %b --config %b/config-task%t.json %n.%u.%j.%s.%t"
 *
 * Slurm 22.05 writes BUNDLE/config.json once per step with the step's
 * environment: SLURM_PROCID, PMIX_RANK and whatever SPANK plugins set for the
 * task (dlrt's RANK, MASTER_ADDR, CUDA_VISIBLE_DEVICES, ...) are not in it.
 * dlrt's plugin leaves the task's whole environment in the environment
 * RunTimeRun runs with (spank/container.c); this writes
 * BUNDLE/config-taskTASK.json, a copy of config.json whose process.env is
 * that environment (tools/ocitask.c), then runs the rest of its arguments. A
 * step without dlrt (no SLURM_PROCID in the environment: it is slurmstepd's
 * own) keeps Slurm's config.json unchanged. A dlrt step whose bundle gives
 * the task a network namespace of its own fails at once, in one line,
 * instead of in the framework's timeout. It reads only Slurm's config.json
 * in the user's own spool folder, as the job's user. Before all that, the
 * runtime's state folder (its --root) must be the job user's own, in a
 * folder no other user can write (tools/ocistate.c): oci.conf gives
 * --root=%b/crun, the step's own folder; the user's own folders on the way
 * lose the group's write and their ACLs (Slurm 24.11 makes them mode 0770,
 * group the job's), and config.json must be root's or the user's, writable
 * by no one else. Slurm 23.02 and later write each task's environment
 * themselves: there the copy holds the environment Slurm wrote, and the
 * wrapper is for those checks. docs/containers.md has the whole setup.
 *
 *   RunTimeQuery="PKGLIBEXECDIR/dlrt-oci-run --user %u -- crun ... state %n.%u.%j.%s.%t"
 *
 * (and RunTimeKill, RunTimeDelete): Slurm runs those three as root, on the
 * state folder the user's crun keeps; with --user crun runs as the job's user,
 * with the user's rights alone, and within a time limit (tools/ociuser.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fdio.h"
#include "ocistate.h"
#include "ocitask.h"
#include "ociuser.h"

extern char **environ;

/* Python's os.path.join(dir, name). */
static char *join(const char *dir, const char *name)
{
	size_t n = strlen(dir);
	char *out = NULL;

	if (asprintf(&out, "%s%s%s", dir, n && dir[n - 1] != '/' ? "/" : "", name) < 0)
		return NULL;
	return out;
}

/* Writes data to dst through a new file next to it (mode 0600), renamed
 * over dst once complete. */
static int write_file(const char *dst, const void *data, size_t len, struct dlrt_err *err)
{
	char *tmp = NULL;
	int fd, e;

	if (asprintf(&tmp, "%s.XXXXXX", dst) < 0)
		return dlrt_err_set(err, "out of memory");
	fd = mkostemp(tmp, O_CLOEXEC); /* mode 0600 */
	if (fd < 0) {
		e = errno;
		dlrt_err_errno(err, e, "cannot create %s", tmp);
		free(tmp);
		return -1;
	}
	if (dlrt_write_all(fd, data, len) < 0) {
		e = errno;
		close(fd);
		dlrt_err_errno(err, e, "cannot write %s", tmp);
		goto fail;
	}
	if (close(fd) < 0) {
		dlrt_err_errno(err, errno, "cannot write %s", tmp);
		goto fail;
	}
	if (rename(tmp, dst) < 0) {
		dlrt_err_errno(err, errno, "cannot rename %s to %s", tmp, dst);
		goto fail;
	}
	free(tmp);
	return 0;
fail:
	unlink(tmp);
	free(tmp);
	return -1;
}

/* The runtime's state folder, when its arguments name one: checked (and
 * created) before the runtime runs, as the job user. */
static int check_state(char *const *runtime)
{
	struct dlrt_err err = { "" };
	const char *state = dlrt_ocistate_root(runtime);
	int fd;

	if (!state)
		return 0;
	fd = dlrt_ocistate_open(state, &err);
	if (fd < 0) {
		fprintf(stderr, "dlrt-oci-run: %s\n", err.msg);
		return -1;
	}
	close(fd);
	return 0;
}

/* dlrt-oci-run --user NAME -- RUNTIME ARGS...: oci.conf's RunTimeQuery,
 * RunTimeKill and RunTimeDelete, run by slurmstepd as root on crun's state
 * folder, which the job's user can write: the runtime runs as that user, its
 * state folder checked first, within a time limit (tools/ociuser.c). NAME is
 * %u, the job's user as Slurm names it (22.05 has no %U). */
static int run_as_user(char **argv)
{
	struct dlrt_err err = { "" };
	int rc = dlrt_ociuser_run(argv[2], argv + 4, DLRT_OCIUSER_TIMEOUT_S, check_state, &err);

	if (rc < 0) {
		fprintf(stderr, "dlrt-oci-run: %s\n", err.msg);
		return 1;
	}
	return rc;
}

/* bundle/config.json, open for reading, checked (ocistate.h): -1 with the
 * line printed. */
static int open_config(const char *bundle, const char *src)
{
	struct dlrt_err err = { "" };
	int bfd, fd, e;

	bfd = dlrt_ocistate_bundle(bundle, "config.json", &err);
	if (bfd < 0) {
		fprintf(stderr, "dlrt-oci-run: %s\n", err.msg);
		return -1;
	}
	fd = openat(bfd, "config.json", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	e = errno;
	close(bfd);
	if (fd < 0 && e != ELOOP) {
		fprintf(stderr, "dlrt-oci-run: cannot write the task's config.json from %s: cannot "
			"open %s: %s: check the bundle's config.json\n", src, src, strerror(e));
		return -1;
	}
	if (fd < 0)
		dlrt_err_set(&err, "the container's bundle (%%b): %s is a symbolic link: another "
			     "account that could write the step's spool folder may have put it "
			     "there: submit the job again", src);
	if (fd >= 0 && dlrt_ocistate_file(fd, src, &err) < 0) {
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		fprintf(stderr, "dlrt-oci-run: %s\n", err.msg);
	return fd;
}

int main(int argc, char **argv)
{
	const char *bundle, *task;
	struct dlrt_err err = { "" };
	struct dlrt_buf out;
	char *src, *dst = NULL, *doc = NULL, *name = NULL;
	size_t len;
	int rc, cfd;

	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		fputs("usage: dlrt-oci-run BUNDLE TASK -- RUNTIME ARGS...\n"
		      "       dlrt-oci-run --user USER -- RUNTIME ARGS...\n"
		      "oci.conf's RunTimeRun for Slurm 22.05's srun --container: checks the\n"
		      "runtime's --root (the job user's own, --root=%b/crun), writes\n"
		      "BUNDLE/config-taskTASK.json, BUNDLE/config.json with the task's environment\n"
		      "as process.env, then runs RUNTIME ARGS. With --user (RunTimeQuery, RunTimeKill,\n"
		      "RunTimeDelete, which slurmstepd runs as root: --user %u): becomes USER, checks\n"
		      "--root, runs RUNTIME ARGS. dlrt-oci-run(8), docs/containers.md.\n",
		      stdout);
		return 0;
	}
	if (argc < 5 || strcmp(argv[3], "--") != 0) {
		fputs("usage: dlrt-oci-run BUNDLE TASK -- RUNTIME ARGS...\n"
		      "       dlrt-oci-run --user USER -- RUNTIME ARGS...\n", stderr);
		return 2;
	}
	if (strcmp(argv[1], "--user") == 0)
		return run_as_user(argv);
	bundle = argv[1];
	task = argv[2];
	if (!task[0] || strspn(task, "0123456789") != strlen(task)) {
		fprintf(stderr, "dlrt-oci-run: task id '%s' is not a number: give it %%t\n", task);
		return 2;
	}
	/* Before anything is written: a state folder another user could have
	 * made or reached first fails the task here, in one line, instead of in
	 * crun (or in root's RunTimeKill once the task ends). */
	if (check_state(argv + 4) < 0)
		return 1;
	src = join(bundle, "config.json");
	if (!src || asprintf(&name, "config-task%s.json", task) < 0 || !(dst = join(bundle, name))) {
		fputs("dlrt-oci-run: out of memory\n", stderr);
		return 1;
	}
	cfd = open_config(bundle, src);
	if (cfd < 0)
		return 1;
	dlrt_buf_init(&out, DLRT_OCITASK_MAX_OUT);
	rc = dlrt_ocitask_read_fd(cfd, src, &doc, &len, &err);
	close(cfd);
	if (rc == 0)
		rc = dlrt_ocitask_build(doc, len, getenv("SLURM_PROCID") ? environ : NULL, &out,
					&err);
	if (rc == DLRT_OCITASK_OWN_NETWORK) {
		fprintf(stderr, "dlrt-oci-run: %s gives each task its own network namespace "
			"(linux.namespaces has a network entry without a path), where its node's "
			"relay on 127.0.0.1 and the other tasks' addresses are out of reach: remove "
			"that entry from the bundle's config.json\n", src);
		return 1;
	}
	if (rc == 0)
		rc = write_file(dst, dlrt_buf_head(&out), out.len, &err);
	if (rc < 0) {
		fprintf(stderr, "dlrt-oci-run: cannot write the task's config.json from %s: %s: "
			"check the bundle's config.json\n", src, err.msg);
		return 1;
	}
	free(doc);
	dlrt_buf_free(&out);
	free(src);
	free(dst);
	free(name);
	execvp(argv[4], argv + 4);
	fprintf(stderr, "dlrt-oci-run: cannot run %s: %s: install it on the nodes or fix "
		"RunTimeRun in oci.conf\n", argv[4], strerror(errno));
	return 127;
}
