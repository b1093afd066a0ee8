#include "ocistate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/privdir.h"

static const char what[] = "the runtime's state folder (--root)";

/* What oci.conf should say instead, in every message about a folder others
 * can reach: Slurm makes the step's folder (%b) under SlurmdSpoolDir, which
 * only root can write, and gives it to the job's user alone. */
#define FIX "keep it in the step's own folder: --root=%%b/crun in every RunTime* line of oci.conf"

const char *dlrt_ocistate_root(char *const *args)
{
	if (!args || !args[0])
		return NULL;
	for (size_t i = 1; args[i]; i++) {
		if (!strncmp(args[i], "--root=", 7))
			return args[i] + 7;
		if (!strcmp(args[i], "--root"))
			return args[i + 1];
	}
	return NULL;
}

int dlrt_ocistate_open(const char *root, struct dlrt_err *err)
{
	char parent[4096], who[160];
	const char *name;
	struct stat pst, st, now;
	int pfd = -1, fd = -1, e;
	size_t n = strlen(root);
	char *slash;

	if (root[0] != '/' || n >= sizeof(parent))
		return dlrt_err_set(err, "%s: %s is not an absolute path: give the runtime "
				    "--root=%%b/crun in every RunTime* line of oci.conf", what, root);
	memcpy(parent, root, n + 1);
	while (n > 1 && parent[n - 1] == '/')
		parent[--n] = '\0';
	slash = strrchr(parent, '/');
	name = slash + 1;
	if (!name[0] || !strcmp(name, ".") || !strcmp(name, ".."))
		return dlrt_err_set(err, "%s: %s names no folder of its own: give the runtime "
				    "--root=%%b/crun in every RunTime* line of oci.conf", what, root);
	*slash = '\0';
	if (!parent[0])
		snprintf(parent, sizeof(parent), "/");

	pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return dlrt_err_errno(err, errno, "%s: cannot open %s, the folder above %s: "
				      "give the runtime --root=%%b/crun (%%b: the step's folder, "
				      "which Slurm makes)", what, parent, root);
	if (fstat(pfd, &pst) < 0) {
		dlrt_err_errno(err, errno, "%s: cannot check %s", what, parent);
		goto fail;
	}
	/* Anyone who can write the folder above could take the state folder's
	 * name first, or rename the job's away and put theirs in its place. */
	if (pst.st_uid != 0 && pst.st_uid != geteuid()) {
		dlrt_err_set(err, "%s: %s is in %s, which belongs to %s, who could replace it: "
			     FIX, what, root, parent,
			     dlrt_privdir_owner(pst.st_uid, who, sizeof(who)));
		goto fail;
	}
	if (pst.st_mode & (S_IWGRP | S_IWOTH)) {
		char there[256] = "";

		if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid != geteuid())
			snprintf(there, sizeof(there), " (%s of %s is there now)",
				 S_ISLNK(st.st_mode) ? "a symbolic link" :
				 S_ISDIR(st.st_mode) ? "a folder" : "a file",
				 dlrt_privdir_owner(st.st_uid, who, sizeof(who)));
		dlrt_err_set(err, "%s: %s is in %s, which other users can write (mode %04o), so "
			     "another user can take its name, or a container's, before the job%s: "
			     FIX, what, root, parent, (unsigned)(pst.st_mode & 07777), there);
		goto fail;
	}
	/* 0700: the containers' states are the job user's business alone. One
	 * already there must be the user's own folder (common/privdir.c). */
	if (mkdirat(pfd, name, 0700) < 0 && errno != EEXIST) {
		dlrt_err_errno(err, errno, "%s: cannot create %s (check that %s is yours)", what,
			       root, parent);
		goto fail;
	}
	fd = dlrt_privdir_open(pfd, name, root, what, err);
	if (fd < 0)
		goto fail;
	/* The runtime gets the path, not the descriptor: the path must still
	 * lead to the folder just checked. */
	if (stat(root, &now) < 0 || fstat(fd, &st) < 0 || now.st_dev != st.st_dev ||
	    now.st_ino != st.st_ino) {
		dlrt_err_set(err, "%s: %s was replaced while it was being checked: another user "
			     "may be tampering with it; " FIX, what, root);
		goto fail;
	}
	close(pfd);
	return fd;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	close(pfd);
	errno = e;
	return -1;
}
