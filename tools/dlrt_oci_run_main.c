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
 * --root=%b/crun, the step's own folder. Slurm 23.02 and later
 * write each task's environment themselves: there, RunTimeRun needs no
 * wrapper. docs/containers.md has the whole setup.
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

int main(int argc, char **argv)
{
	const char *bundle, *task, *state;
	struct dlrt_err err = { "" };
	struct dlrt_buf out;
	char *src, *dst = NULL, *doc = NULL, *name = NULL;
	size_t len;
	int rc;

	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		fputs("usage: dlrt-oci-run BUNDLE TASK -- RUNTIME ARGS...\n"
		      "oci.conf's RunTimeRun for Slurm 22.05's srun --container: checks the\n"
		      "runtime's --root (the job user's own, --root=%b/crun), writes\n"
		      "BUNDLE/config-taskTASK.json, BUNDLE/config.json with the task's environment\n"
		      "as process.env, then runs RUNTIME ARGS. dlrt-oci-run(8), docs/containers.md.\n",
		      stdout);
		return 0;
	}
	if (argc < 5 || strcmp(argv[3], "--") != 0) {
		fputs("usage: dlrt-oci-run BUNDLE TASK -- RUNTIME ARGS...\n", stderr);
		return 2;
	}
	bundle = argv[1];
	task = argv[2];
	if (!task[0] || strspn(task, "0123456789") != strlen(task)) {
		fprintf(stderr, "dlrt-oci-run: task id '%s' is not a number: give it %%t\n", task);
		return 2;
	}
	/* Before anything is written: a state folder another user could have
	 * made or reached first fails the task here, in one line, instead of in
	 * crun (or in root's RunTimeKill once the task ends). */
	if ((state = dlrt_ocistate_root(argv + 4))) {
		int fd = dlrt_ocistate_open(state, &err);

		if (fd < 0) {
			fprintf(stderr, "dlrt-oci-run: %s\n", err.msg);
			return 1;
		}
		close(fd);
	}
	src = join(bundle, "config.json");
	if (!src || asprintf(&name, "config-task%s.json", task) < 0 || !(dst = join(bundle, name))) {
		fputs("dlrt-oci-run: out of memory\n", stderr);
		return 1;
	}
	dlrt_buf_init(&out, DLRT_OCITASK_MAX_OUT);
	rc = dlrt_ocitask_read(src, &doc, &len, &err);
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
