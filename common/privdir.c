#include "privdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crypto.h"

const char *dlrt_privdir_owner(uid_t uid, char *out, size_t len)
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
				    dlrt_privdir_owner(st->st_uid, who, sizeof(who)),
				    type == S_IFDIR ? "a folder" : "a regular file");
	if (st->st_uid != geteuid())
		return dlrt_err_set(err, "%s: %s belongs to %s, not to you: another user created "
				    "it before this job; have it removed (by its owner or an admin), "
				    "or use a folder only you can write", what, shown,
				    dlrt_privdir_owner(st->st_uid, who, sizeof(who)));
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
				    "root (mode 1777)", what, p,
				    dlrt_privdir_owner(st.st_uid, who, sizeof(who)));
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

/* ---- the job's folder, and its fallback when someone else took the name ---- */

#define ALT_HEX 32 /* <job>.<uid>.<16 hex: creation time in us><16 hex: random> */

/* "<name>.<uid>.": what every fallback name of `name` starts with. */
static void alt_prefix(const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s.%u.", name, (unsigned)geteuid());
}

/* A fallback folder of the caller's: the prefix, ALT_HEX lowercase hex
 * digits, a folder (not a link) owned by the caller, writable by no one else.
 * Another user can create such a name, never one the caller owns. */
static bool alt_ours(int dirfd, const char *entry, const char *prefix)
{
	size_t pl = strlen(prefix);
	struct stat st;

	if (strncmp(entry, prefix, pl) || strlen(entry + pl) != ALT_HEX ||
	    strspn(entry + pl, "0123456789abcdef") != ALT_HEX)
		return false;
	return fstatat(dirfd, entry, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_uid == geteuid() && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* Calls fn for each fallback folder of the caller's for `name` in dirfd, in
 * the order of their names (oldest first: the names start with the time).
 * Returns how many there are, or -1 (errno) if dirfd cannot be read. */
static int alt_each(int dirfd, const char *name, char (*names)[DLRT_PRIVDIR_NAME], int max)
{
	char prefix[DLRT_PRIVDIR_NAME];
	struct dirent *e;
	int fd, n = 0;
	DIR *d;

	alt_prefix(name, prefix, sizeof(prefix));
	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((e = readdir(d))) {
		int i;

		if (!alt_ours(dirfd, e->d_name, prefix) || strlen(e->d_name) >= DLRT_PRIVDIR_NAME)
			continue;
		/* Keep the `max` smallest names, sorted. */
		for (i = n; i > 0 && strcmp(names[i - 1], e->d_name) > 0; i--)
			if (i < max)
				memcpy(names[i], names[i - 1], DLRT_PRIVDIR_NAME);
		if (i < max) {
			snprintf(names[i], DLRT_PRIVDIR_NAME, "%s", e->d_name);
			if (n < max)
				n++;
		}
	}
	closedir(d);
	return n;
}

/* Why DIR/<name> cannot be the job's: it exists and is someone else's (a
 * folder, a file or a symbolic link). `why` gets "SHOWN belongs to WHO ...". */
static bool squatted(int dirfd, const char *name, const char *shown, char *why, size_t wlen)
{
	struct stat st;
	char who[160];

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_uid == geteuid())
		return false;
	dlrt_privdir_owner(st.st_uid, who, sizeof(who));
	snprintf(why, wlen, "%s %s %s%s: another user created it before this job", shown,
		 S_ISLNK(st.st_mode) ? "is a symbolic link owned by" : "belongs to", who,
		 S_ISLNK(st.st_mode) ? "" : ", not to you");
	return true;
}

/* Creates a new fallback folder: a name nobody can guess (the kernel's random
 * bytes), made by mkdir as the caller, so it is the caller's or it fails. */
static int alt_create(int dirfd, const char *name, const char *what, const char *base,
		      struct dlrt_err *err)
{
	char prefix[DLRT_PRIVDIR_NAME], entry[DLRT_PRIVDIR_NAME];
	struct timespec ts;
	uint64_t rnd;
	int k;

	alt_prefix(name, prefix, sizeof(prefix));
	for (int tries = 0; tries < 8; tries++) {
		clock_gettime(CLOCK_REALTIME, &ts);
		if (dlrt_crypto_random(&rnd, sizeof(rnd)) < 0)
			return dlrt_err_errno(err, errno, "%s: no random bytes for a folder name", what);
		k = snprintf(entry, sizeof(entry), "%s%016llx%016llx", prefix,
			     (unsigned long long)ts.tv_sec * 1000000ull +
			     (unsigned long long)ts.tv_nsec / 1000, (unsigned long long)rnd);
		if (k < 0 || (size_t)k >= sizeof(entry))
			return dlrt_err_set(err, "%s: %s: name too long", what, prefix);
		if (mkdirat(dirfd, entry, 0750) == 0)
			return 0;
		if (errno != EEXIST)
			return dlrt_err_errno(err, errno, "%s: cannot create %s/%s", what, base, entry);
	}
	return dlrt_err_set(err, "%s: cannot create a folder named %s* in %s: every name tried "
			    "exists; use a folder only you can write", what, prefix, base);
}

int dlrt_privdir_job(int dirfd, const char *base, const char *name, const char *what,
		     struct dlrt_privdir_jobdir *out, struct dlrt_err *err)
{
	char names[1][DLRT_PRIVDIR_NAME];
	int n;

	out->squatted[0] = '\0';
	snprintf(out->path, sizeof(out->path), "%s/%s", base, name);
	if (!name[0] || strchr(name, '/') || name[0] == '.')
		return dlrt_err_set(err, "%s: %s is not one folder name", what, name);
	if (mkdirat(dirfd, name, 0750) < 0 && errno != EEXIST)
		return dlrt_err_errno(err, errno, "%s: cannot create %s", what, out->path);
	if (!squatted(dirfd, name, out->path, out->squatted, sizeof(out->squatted)))
		return open_checked(dirfd, name, O_RDONLY | O_DIRECTORY, S_IFDIR, out->path, what,
				    err);
	/* The job's own folder under another name: the first one any of its
	 * processes made (the oldest name), so that the tasks of every node and
	 * every later step and the retry record meet in one folder. */
	n = alt_each(dirfd, name, names, 1);
	if (n == 0) {
		if (alt_create(dirfd, name, what, base, err) < 0)
			return -1;
		n = alt_each(dirfd, name, names, 1);
	}
	if (n <= 0)
		return dlrt_err_errno(err, n < 0 ? errno : ENOENT, "%s: cannot list %s", what, base);
	snprintf(out->path, sizeof(out->path), "%s/%s", base, names[0]);
	return open_checked(dirfd, names[0], O_RDONLY | O_DIRECTORY, S_IFDIR, out->path, what, err);
}

int dlrt_privdir_jobdirs(int dirfd, const char *name, const char *shown,
			 char (*names)[DLRT_PRIVDIR_NAME], int max, char *why, size_t wlen)
{
	struct stat st;
	int n = 0, alt;

	why[0] = '\0';
	if (max < 1 || !name[0] || strchr(name, '/') || name[0] == '.')
		return 0;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid == geteuid())
		snprintf(names[n++], DLRT_PRIVDIR_NAME, "%s", name);
	else
		squatted(dirfd, name, shown, why, wlen);
	alt = alt_each(dirfd, name, names + n, max - n);
	return n + (alt > 0 ? alt : 0);
}

int dlrt_privdir_open(int dirfd, const char *name, const char *shown, const char *what,
		      struct dlrt_err *err)
{
	return open_checked(dirfd, name, O_RDONLY | O_DIRECTORY, S_IFDIR, shown, what, err);
}
