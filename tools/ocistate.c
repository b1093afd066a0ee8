#include "ocistate.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/privdir.h"

static const char what[] = "the runtime's state folder (--root)";

/* What oci.conf should say instead, in every message about a folder others
 * can reach: Slurm makes the step's folder (%b) under SlurmdSpoolDir, which
 * only root can write, and gives it to the job's user. */
static const char fix_root[] =
	"keep it in the step's own folder: --root=%b/crun in every RunTime* line of oci.conf";

/* "group NAME (gid N)", or "gid N" where the name is unknown, into out. */
static const char *group_name(gid_t gid, char *out, size_t len)
{
	struct group gr, *res = NULL;
	char buf[8192];

	if (getgrgid_r(gid, &gr, buf, sizeof(buf), &res) == 0 && res)
		snprintf(out, len, "group %s (gid %u)", res->gr_name, (unsigned)gid);
	else
		snprintf(out, len, "gid %u", (unsigned)gid);
	return out;
}

/* 1 when fd has an extended POSIX ACL of the kind `name` (ACL_ACCESS: who
 * may use it beyond the mode bits' owner, group and others; ACL_DEFAULT: what
 * new files in a folder get), 0 when not (or the filesystem has none), -1 on
 * another error. The kernel stores no access ACL for one that only repeats the
 * mode bits. */
#define ACL_ACCESS "system.posix_acl_access"
#define ACL_DEFAULT "system.posix_acl_default"
static int has_acl(int fd, const char *name)
{
	if (fgetxattr(fd, name, NULL, 0) >= 0)
		return 1;
	return errno == ENODATA || errno == ENOTSUP || errno == EOPNOTSUPP ? 0 : -1;
}

/* Takes the group's write (a folder) and then every ACL off fd (a folder or
 * file of the caller's), then st is fd's status again. Slurm 24.11 makes the
 * step's and the task's spool folders mode 0770, group the job's, and a
 * default ACL on SlurmdSpoolDir gives them named users of its own: who shares
 * that group cannot be known (an account whose primary group it is is in no
 * member list), so no one but the user may write them from here on. (In that
 * order: with an ACL, the mode's group bits are its mask, which become the
 * owning group's own bits once the ACL is gone.) What someone else put in
 * them before is checked where it is used: crun's state folder, config.json. */
static int lock(int fd, struct stat *st, const char *shown, const char *label,
		struct dlrt_err *err)
{
	static const char *const acls[] = { ACL_ACCESS, ACL_DEFAULT };
	mode_t mode = st->st_mode & 07777;

	if (S_ISDIR(st->st_mode) && (mode & S_IWGRP) && fchmod(fd, mode & ~(mode_t)S_IWGRP) < 0)
		return dlrt_err_errno(err, errno, "%s: cannot take the group's write off %s, which "
				      "is yours: chmod g-w %s", label, shown, shown);
	for (size_t i = 0; i < (S_ISDIR(st->st_mode) ? 2u : 1u); i++) {
		int acl = has_acl(fd, acls[i]);

		if (acl < 0 || (acl == 1 && fremovexattr(fd, acls[i]) < 0 && errno != ENODATA))
			return dlrt_err_errno(err, errno, "%s: cannot take the ACL (%s) off %s, "
					      "which is yours: setfacl -b %s", label, acls[i], shown,
					      shown);
	}
	if (fstat(fd, st) < 0)
		return dlrt_err_errno(err, errno, "%s: cannot check %s", label, shown);
	return 0;
}

/* What a walk checks: `target` (its full path, for messages) is `name` in the
 * first folder of the walk; `fix` ends every message about a folder others
 * can reach. */
struct way {
	const char *what, *target, *name, *fix;
};

/* One folder on the way from the target up to a folder of root's alone,
 * `depth` levels above the target's own folder (0: the folder that holds it).
 * Anyone else who can write it could take the target's name first, or rename
 * the folders below it away and put theirs in their place. The user's own
 * folders are locked first (above). Returns 1 when the walk can stop here, 0
 * to go on up, -1 (err set) when refused. */
static int check_level(int dfd, struct stat *st, int depth, const char *shown,
		       const struct way *w, struct dlrt_err *err)
{
	char who[160], grp[160], there[256] = "";
	struct stat in;
	const char *rel = depth ? "under" : "in";
	int acl;

	if (st->st_uid != 0 && st->st_uid != geteuid() && depth == 0)
		return dlrt_err_set(err, "%s: %s is in %s, which belongs to %s, who could replace it: "
				    "%s", w->what, w->target, shown,
				    dlrt_privdir_owner(st->st_uid, who, sizeof(who)), w->fix);
	/* Higher up: SlurmdSpoolDir or above (some packages give it to slurm). */
	if (st->st_uid != 0 && st->st_uid != geteuid())
		return dlrt_err_set(err, "%s: %s is under %s, which belongs to %s, who could replace "
				    "the folders below it: keep the step's folder (%%b) under a "
				    "SlurmdSpoolDir that is root's, and folders above it that are "
				    "root's too", w->what, w->target, shown,
				    dlrt_privdir_owner(st->st_uid, who, sizeof(who)));
	if (st->st_uid == geteuid() && !(st->st_mode & S_IWOTH) && lock(dfd, st, shown, w->what, err) < 0)
		return -1;
	/* In a sticky folder of root's, only the owner of a name can rename it:
	 * the user's folder below stays where it is. (Not for the folder that
	 * holds the target itself: another user can still take the name first.) */
	if (depth > 0 && st->st_uid == 0 && (st->st_mode & S_ISVTX))
		return 1;
	if (depth == 0 && fstatat(dfd, w->name, &in, AT_SYMLINK_NOFOLLOW) == 0 &&
	    in.st_uid != geteuid() && in.st_uid != 0)
		snprintf(there, sizeof(there), " (%s of %s is there now)",
			 S_ISLNK(in.st_mode) ? "a symbolic link" :
			 S_ISDIR(in.st_mode) ? "a folder" : "a file",
			 dlrt_privdir_owner(in.st_uid, who, sizeof(who)));
	if (st->st_mode & S_IWOTH)
		return dlrt_err_set(err, "%s: %s is %s %s, which other users can write (mode %04o), "
				    "so another user can take its name, or a container's, before "
				    "the job%s: %s", w->what, w->target, rel, shown,
				    (unsigned)(st->st_mode & 07777), there, w->fix);
	/* Only root's folders are still group-writable here (the user's are locked). */
	if (st->st_mode & S_IWGRP)
		return dlrt_err_set(err, "%s: %s is %s %s, which %s can write (mode %04o), and no one "
				    "can tell who is in a group (an account whose primary group it "
				    "is is named in no member list)%s: make %s writable by root "
				    "alone (chmod g-w)", w->what, w->target, rel, shown,
				    group_name(st->st_gid, grp, sizeof(grp)),
				    (unsigned)(st->st_mode & 07777), there, shown);
	acl = st->st_uid == geteuid() ? 0 : has_acl(dfd, ACL_ACCESS);
	if (acl != 0)
		return dlrt_err_set(err, "%s: %s is %s %s, which has %s: named users or groups "
				    "may write it beyond its mode bits%s: remove it (setfacl -b %s), "
				    "or keep the step's folders in a SlurmdSpoolDir without ACLs",
				    w->what, w->target, rel, shown,
				    acl < 0 ? "an ACL that cannot be read" : "an access ACL", there,
				    shown);
	return st->st_uid == 0;
}

/* Walks from the folder `pfd` (`parent`) that holds the target up ("..", on
 * descriptors) until a folder of root's that only root can write: Slurm 24.11
 * puts the task's folder (task-T/) in the step's (oci-jobJ-S/), both the
 * user's, under SlurmdSpoolDir; 22.05 has one user's folder
 * (oci-jobJJJJJ-SSSSS). */
static int check_way_up(int pfd, const char *parent, const struct way *w, struct dlrt_err *err)
{
	char shown[4096];
	struct stat st, up;
	int fd = dup(pfd), nfd, r = -1;

	snprintf(shown, sizeof(shown), "%s", parent);
	if (fd < 0 || fstat(fd, &st) < 0) {
		dlrt_err_errno(err, errno, "%s: cannot check %s", w->what, parent);
		goto out;
	}
	for (int depth = 0; depth < 256; depth++) {
		char *slash;

		r = check_level(fd, &st, depth, shown, w, err);
		if (r != 0)
			goto out;
		r = -1;
		nfd = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (nfd < 0 || fstat(nfd, &up) < 0) {
			dlrt_err_errno(err, errno, "%s: cannot check the folder above %s", w->what,
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
		     "no one else): %s", w->what, w->target, w->fix);
out:
	if (fd >= 0)
		close(fd);
	return r < 0 ? -1 : 0;
}

/* The path still leads to the folder checked on fd: the runtime gets paths. */
static int same_path(int fd, const char *path, const char *label, const char *fix,
		     struct dlrt_err *err)
{
	struct stat st, now;

	if (stat(path, &now) < 0 || fstat(fd, &st) < 0 || now.st_dev != st.st_dev ||
	    now.st_ino != st.st_ino)
		return dlrt_err_set(err, "%s: %s was replaced while it was being checked: another "
				    "user may be tampering with it; %s", label, path, fix);
	return 0;
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
	struct way w = { what, root, NULL, fix_root };
	char parent[4096];
	int pfd = -1, fd = -1, e;
	size_t n = strlen(root);
	char *slash;
	struct stat st;

	if (root[0] != '/' || n >= sizeof(parent))
		return dlrt_err_set(err, "%s: %s is not an absolute path: give the runtime "
				    "--root=%%b/crun in every RunTime* line of oci.conf", what, root);
	memcpy(parent, root, n + 1);
	while (n > 1 && parent[n - 1] == '/')
		parent[--n] = '\0';
	slash = strrchr(parent, '/');
	w.name = slash + 1;
	if (!w.name[0] || !strcmp(w.name, ".") || !strcmp(w.name, ".."))
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
	if (check_way_up(pfd, parent, &w, err) < 0)
		goto fail;
	/* 0700: the containers' states are the job user's business alone. One
	 * already there must be the user's own folder, writable by no one else
	 * (common/privdir.c): what another member of a 0770 task folder's group
	 * may have put in a group-writable one cannot be known. */
	if (mkdirat(pfd, w.name, 0700) < 0 && errno != EEXIST) {
		dlrt_err_errno(err, errno, "%s: cannot create %s (check that %s is yours)", what,
			       root, parent);
		goto fail;
	}
	fd = dlrt_privdir_open(pfd, w.name, root, what, err);
	if (fd < 0 || fstat(fd, &st) < 0 || lock(fd, &st, root, what, err) < 0 ||
	    same_path(fd, root, what, fix_root, err) < 0)
		goto fail;
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

int dlrt_ocistate_bundle(const char *bundle, const char *file, struct dlrt_err *err)
{
	static const char bwhat[] = "the container's bundle (%b)";
	static const char fix[] = "keep RunTimeRun's bundle the one Slurm makes: %b";
	char target[4200];
	struct way w = { bwhat, target, file, fix };
	int fd;

	snprintf(target, sizeof(target), "%s%s%s", bundle,
		 bundle[0] && bundle[strlen(bundle) - 1] == '/' ? "" : "/", file);
	if (bundle[0] != '/')
		return dlrt_err_set(err, "%s: %s is not an absolute path: %s", bwhat, bundle, fix);
	fd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return dlrt_err_errno(err, errno, "%s: cannot open %s: %s", bwhat, bundle, fix);
	if (check_way_up(fd, bundle, &w, err) < 0 || same_path(fd, bundle, bwhat, fix, err) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int dlrt_ocistate_file(int fd, const char *shown, struct dlrt_err *err)
{
	static const char fwhat[] = "the container's bundle (%b)";
	static const char why[] = "another account that could write the step's spool folder "
				  "(Slurm 24.11 makes it mode 0770, group the job's) may have "
				  "replaced it: submit the job again, with --gid=<a group of yours "
				  "alone> if others share your group";
	struct stat st;
	char who[160];
	int acl;

	if (fstat(fd, &st) < 0)
		return dlrt_err_errno(err, errno, "%s: cannot check %s", fwhat, shown);
	if (!S_ISREG(st.st_mode))
		return dlrt_err_set(err, "%s: %s is not a regular file: %s", fwhat, shown, why);
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return dlrt_err_set(err, "%s: %s belongs to %s, not to you or root: %s", fwhat, shown,
				    dlrt_privdir_owner(st.st_uid, who, sizeof(who)), why);
	if (st.st_nlink != 1)
		return dlrt_err_set(err, "%s: %s has %u hard links, so it may be another file of "
				    "yours that others can write: %s", fwhat, shown,
				    (unsigned)st.st_nlink, why);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return dlrt_err_set(err, "%s: %s is writable by other users (mode %04o): %s", fwhat,
				    shown, (unsigned)(st.st_mode & 07777), why);
	if (st.st_uid == geteuid())
		return lock(fd, &st, shown, fwhat, err);
	acl = has_acl(fd, ACL_ACCESS);
	if (acl != 0)
		return dlrt_err_set(err, "%s: %s has %s: named users or groups may write it beyond "
				    "its mode bits: remove the default ACL of SlurmdSpoolDir "
				    "(setfacl -k), whose folders' files inherit it", fwhat, shown,
				    acl < 0 ? "an ACL that cannot be read" : "an access ACL");
	return 0;
}
