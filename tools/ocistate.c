#include "ocistate.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
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

/* Who the group `gid` is, for the rule below, into `out` ("group NAME (gid N)"):
 * 1 when it is the user's private group (the user's primary group, with no
 * other member named in it), 0 when others may be in it (`why` says how), -1
 * when it cannot be looked up (refused: nothing shows who is in it). Another
 * account whose primary group is the same gid is not named in gr_mem: only a
 * full passwd listing would show it, which sssd/LDAP sites often forbid. */
static int private_group(gid_t gid, uid_t uid, char *out, size_t len, char *why, size_t wlen)
{
	struct passwd pw, *pres = NULL;
	struct group gr, *gres = NULL;
	char pbuf[1024], gbuf[8192];
	size_t n = 0;

	snprintf(out, len, "gid %u", (unsigned)gid);
	if (getgrgid_r(gid, &gr, gbuf, sizeof(gbuf), &gres) != 0 || !gres) {
		snprintf(why, wlen, "no such group: who is in it cannot be checked");
		return -1;
	}
	snprintf(out, len, "group %s (gid %u)", gres->gr_name, (unsigned)gid);
	if (getpwuid_r(uid, &pw, pbuf, sizeof(pbuf), &pres) != 0 || !pres) {
		snprintf(why, wlen, "your uid %u has no passwd entry", (unsigned)uid);
		return -1;
	}
	if (pres->pw_gid != gid) {
		snprintf(why, wlen, "it is not your primary group");
		return 0;
	}
	why[0] = '\0';
	for (char **m = gres->gr_mem; m && *m; m++) {
		if (!strcmp(*m, pres->pw_name))
			continue;
		n += (size_t)snprintf(why + n, n < wlen ? wlen - n : 0, "%s%s",
				      n ? ", " : "its other members: ", *m);
	}
	return n == 0;
}

/* One folder on the way from --root up to a folder of root's alone, `depth`
 * levels above --root's own folder (0: the folder that holds it). Anyone else
 * who can write it could take --root's name first, or rename the folders
 * below it away and put theirs in their place. Returns 1 when the walk can
 * stop here, 0 to go on up, -1 (err set) when refused. */
static int check_level(int dfd, const struct stat *st, int depth, const char *shown,
		       const char *root, const char *name, struct dlrt_err *err)
{
	char who[160], grp[160], why[512], there[256] = "";
	struct stat in;
	const char *rel = depth ? "under" : "in";

	if (st->st_uid != 0 && st->st_uid != geteuid() && depth == 0)
		return dlrt_err_set(err, "%s: %s is in %s, which belongs to %s, who could replace it: "
				    FIX, what, root, shown,
				    dlrt_privdir_owner(st->st_uid, who, sizeof(who)));
	/* Higher up: SlurmdSpoolDir or above (some packages give it to slurm). */
	if (st->st_uid != 0 && st->st_uid != geteuid())
		return dlrt_err_set(err, "%s: %s is under %s, which belongs to %s, who could replace "
				    "the folders below it: keep it in the step's own folder (%%b/crun) "
				    "under a SlurmdSpoolDir that is root's, and folders above it that "
				    "are root's too", what, root, shown,
				    dlrt_privdir_owner(st->st_uid, who, sizeof(who)));
	/* In a sticky folder of root's, only the owner of a name can rename it:
	 * the user's folder below stays where it is. (Not for the folder that
	 * holds --root itself: another user can still take the name first.) */
	if (depth > 0 && st->st_uid == 0 && (st->st_mode & S_ISVTX))
		return 1;
	if (depth == 0 && fstatat(dfd, name, &in, AT_SYMLINK_NOFOLLOW) == 0 &&
	    in.st_uid != geteuid())
		snprintf(there, sizeof(there), " (%s of %s is there now)",
			 S_ISLNK(in.st_mode) ? "a symbolic link" :
			 S_ISDIR(in.st_mode) ? "a folder" : "a file",
			 dlrt_privdir_owner(in.st_uid, who, sizeof(who)));
	if (st->st_mode & S_IWOTH)
		return dlrt_err_set(err, "%s: %s is %s %s, which other users can write (mode %04o), "
				    "so another user can take its name, or a container's, before "
				    "the job%s: " FIX, what, root, rel, shown,
				    (unsigned)(st->st_mode & 07777), there);
	/* Slurm 24.11 makes the step's folders mode 0770, group the job's: the
	 * group must be the user's alone (the rule of Debian's OpenSSH for ~/.ssh). */
	if ((st->st_mode & S_IWGRP) &&
	    private_group(st->st_gid, geteuid(), grp, sizeof(grp), why, sizeof(why)) != 1)
		return dlrt_err_set(err, "%s: %s is %s %s, which %s can write (mode %04o), and that "
				    "group is not yours alone (%s)%s: submit the job with "
				    "--gid=<a group of yours alone>, or give each user a private "
				    "group", what, root, rel, shown, grp,
				    (unsigned)(st->st_mode & 07777), why, there);
	return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* Walks from the folder `pfd` that holds --root up ("..", on descriptors)
 * until a folder of root's that only root can write: Slurm 24.11 puts the
 * task's folder (task-T/) in the step's (oci-jobJ-S/), both the user's, under
 * SlurmdSpoolDir; 22.05 has one user's folder (oci-jobJJJJJ-SSSSS). */
static int check_way_up(int pfd, const char *parent, const char *root, const char *name,
			struct dlrt_err *err)
{
	char shown[4096];
	struct stat st, up;
	int fd = dup(pfd), nfd, r = -1;

	snprintf(shown, sizeof(shown), "%s", parent);
	if (fd < 0 || fstat(fd, &st) < 0) {
		dlrt_err_errno(err, errno, "%s: cannot check %s", what, parent);
		goto out;
	}
	for (int depth = 0; depth < 256; depth++) {
		char *slash;

		r = check_level(fd, &st, depth, shown, root, name, err);
		if (r != 0)
			goto out;
		r = -1;
		nfd = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (nfd < 0 || fstat(nfd, &up) < 0) {
			dlrt_err_errno(err, errno, "%s: cannot check the folder above %s", what,
				       shown);
			if (nfd >= 0)
				close(nfd);
			goto out;
		}
		close(fd);
		fd = nfd;
		if (up.st_dev == st.st_dev && up.st_ino == st.st_ino)
			break; /* "/" itself, and not root's alone */
		st = up;
		slash = strrchr(shown, '/');
		if (slash && slash != shown)
			*slash = '\0';
		else
			snprintf(shown, sizeof(shown), "/");
	}
	dlrt_err_set(err, "%s: no folder above %s is root's alone (owned by root, writable by "
		     "no one else): " FIX, what, root);
out:
	if (fd >= 0)
		close(fd);
	return r < 0 ? -1 : 0;
}

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
	char parent[4096];
	const char *name;
	struct stat st, now;
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
	if (check_way_up(pfd, parent, root, name, err) < 0)
		goto fail;
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
