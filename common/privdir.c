#include "privdir.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "user NAME (uid N)", or "uid N" where the name is unknown. */
static const char *owner_name(uid_t uid, char *out, size_t len)
{
	struct passwd pw, *res = NULL;
	char buf[1024];

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res)
		snprintf(out, len, "user %s (uid %u)", res->pw_name, (unsigned)uid);
	else
		snprintf(out, len, "uid %u", (unsigned)uid);
	return out;
}

static const char *kind_name(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a folder";
	if (S_ISREG(mode))
		return "a file";
	if (S_ISLNK(mode))
		return "a symbolic link";
	if (S_ISFIFO(mode))
		return "a named pipe";
	return "a special file";
}

/* The one rule for everything below DIR: the caller's own, not linked from
 * elsewhere, writable by the caller alone. */
static int check(const struct stat *st, mode_t type, const char *shown, const char *what,
		 struct dlrt_err *err)
{
	char who[160];

	if ((st->st_mode & S_IFMT) != type)
		return dlrt_err_set(err, "%s: %s is %s owned by %s, not %s: remove it, or use "
				    "another folder", what, shown, kind_name(st->st_mode),
				    owner_name(st->st_uid, who, sizeof(who)),
				    type == S_IFDIR ? "a folder" : "a regular file");
	if (st->st_uid != geteuid())
		return dlrt_err_set(err, "%s: %s belongs to %s, not to you: another user created "
				    "it before this job; have it removed (by its owner or an admin), "
				    "or use a folder only you can write", what, shown,
				    owner_name(st->st_uid, who, sizeof(who)));
	if (type == S_IFREG && st->st_nlink != 1)
		return dlrt_err_set(err, "%s: %s has %u hard links, so others may read it under "
				    "another name: remove it", what, shown, (unsigned)st->st_nlink);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return dlrt_err_set(err, "%s: %s is writable by other users (mode %04o): "
				    "chmod go-w %s", what, shown, (unsigned)(st->st_mode & 07777),
				    shown);
	return 0;
}

/* Opens name in dirfd without following a link, then checks what was opened.
 * The lstat before the open keeps a named pipe or a device from being opened
 * at all; the fstat after it is the check that counts. */
static int open_checked(int dirfd, const char *name, int flags, mode_t type, const char *shown,
			const char *what, struct dlrt_err *err)
{
	struct stat before, st;
	int fd, e;

	if (fstatat(dirfd, name, &before, AT_SYMLINK_NOFOLLOW) < 0) {
		e = errno;
		dlrt_err_errno(err, e, "%s: cannot use %s", what, shown);
		errno = e; /* ENOENT tells dlrt_privdir_read's caller there is no file */
		return -1;
	}
	if (check(&before, type, shown, what, err) < 0) {
		errno = EPERM;
		return -1;
	}
	fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return dlrt_err_errno(err, errno, "%s: cannot open %s", what, shown);
	if (fstat(fd, &st) < 0) {
		e = errno;
		close(fd);
		return dlrt_err_errno(err, e, "%s: cannot check %s", what, shown);
	}
	if (st.st_dev != before.st_dev || st.st_ino != before.st_ino) {
		close(fd);
		errno = EPERM;
		return dlrt_err_set(err, "%s: %s was replaced while it was being opened: another "
				    "user may be tampering with the folder; use a folder only you "
				    "can write", what, shown);
	}
	if (check(&st, type, shown, what, err) < 0) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	/* Blocking writes again for a regular file (O_NONBLOCK only guarded the open). */
	if (type == S_IFREG && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		e = errno;
		close(fd);
		return dlrt_err_errno(err, e, "%s: cannot use %s", what, shown);
	}
	return fd;
}

int dlrt_privdir_base(const char *path, const char *what, struct dlrt_err *err)
{
	char p[4096], who[160];
	struct stat st;
	int fd, n = snprintf(p, sizeof(p), "%s", path);

	if (n < 0 || (size_t)n >= sizeof(p) || p[0] != '/')
		return dlrt_err_set(err, "%s: %s is too long or not absolute", what, path);
	/* mkdir -p as the caller; a folder that exists is fine here. */
	for (char *q = p + 1;; q++) {
		char c = *q;

		if (c != '/' && c != '\0')
			continue;
		*q = '\0';
		if (mkdir(p, 0750) < 0 && errno != EEXIST)
			return dlrt_err_errno(err, errno, "%s: cannot create %s (check the folder "
					      "exists and is yours)", what, p);
		*q = c;
		if (!c)
			break;
	}
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return dlrt_err_errno(err, errno, "%s: cannot open %s", what, p);
	if (fstat(fd, &st) < 0) {
		n = errno;
		close(fd);
		return dlrt_err_errno(err, n, "%s: cannot check %s", what, p);
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		close(fd);
		return dlrt_err_set(err, "%s: %s belongs to %s, who could move or replace the job's "
				    "files in it: use a folder of yours, or a shared one owned by "
				    "root (mode 1777)", what, p, owner_name(st.st_uid, who, sizeof(who)));
	}
	return fd;
}

int dlrt_privdir_sub(int dirfd, const char *name, const char *shown, const char *what,
		     struct dlrt_err *err)
{
	if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return dlrt_err_set(err, "%s: %s is not one folder name", what, name);
	if (mkdirat(dirfd, name, 0750) < 0 && errno != EEXIST)
		return dlrt_err_errno(err, errno, "%s: cannot create %s", what, shown);
	return open_checked(dirfd, name, O_RDONLY | O_DIRECTORY, S_IFDIR, shown, what, err);
}

int dlrt_privdir_append(int dirfd, const char *name, const char *shown, const char *what,
			struct dlrt_err *err)
{
	int fd = openat(dirfd, name, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW |
			O_CLOEXEC, 0640);

	if (fd >= 0)
		return fd;
	if (errno != EEXIST)
		return dlrt_err_errno(err, errno, "%s: cannot create %s", what, shown);
	return open_checked(dirfd, name, O_WRONLY | O_APPEND, S_IFREG, shown, what, err);
}

int dlrt_privdir_read(int dirfd, const char *name, const char *shown, const char *what,
		      struct dlrt_err *err)
{
	return open_checked(dirfd, name, O_RDONLY, S_IFREG, shown, what, err);
}
