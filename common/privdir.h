/* privdir.h - the job's own folders and files inside a folder others may share.
 *
 * --dl-log-dir often points at scratch space that every user can write (mode
 * 1777). Another user can then create DIR/<job>, DIR/<job>/<step> or a log file
 * before the job does, to read its output or to plant a line in its retry record.
 * These functions create the job's folders and files as the caller (the job's
 * user, never root) and refuse anything that already exists and is not the
 * caller's own: another owner, a symbolic link, a hard link, something other
 * than a folder or a regular file, write access for group or others. Each step
 * of the walk is opened relative to the verified folder above it (openat with
 * O_NOFOLLOW), and the checks run on the open descriptor (fstat), so a rename
 * or a swap between the check and the use cannot redirect a write.
 * Every error is one line naming the path, its owner and the fix.
 */
#ifndef DLRT_PRIVDIR_H
#define DLRT_PRIVDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "dlrt_err.h"

/* "user NAME (uid N)" into `out`, or "uid N" where the name is unknown, for
 * messages that name the owner of something found in the way. Returns out. */
const char *dlrt_privdir_owner(uid_t uid, char *out, size_t len);

/* Creates `path` with its missing parents (mode 0750) and opens it. It may be a
 * shared folder (owned by root, typically mode 1777) or one of the caller's:
 * another owner could move or replace what the job creates in it, so it is
 * refused. `what` prefixes every error ("--dl-log-dir"). Returns a descriptor. */
int dlrt_privdir_base(const char *path, const char *what, struct dlrt_err *err);

/* Creates the folder `name` (one component) inside `dirfd` with mode 0750, or
 * takes the existing one if it is the caller's, not a link and writable by the
 * caller alone. `shown` is its full path for errors. Returns a descriptor. */
int dlrt_privdir_sub(int dirfd, const char *name, const char *shown, const char *what,
		     struct dlrt_err *err);

/* Opens the file `name` inside a folder from dlrt_privdir_sub for appending:
 * a new file is created exclusively (mode 0640); an existing one is used only
 * if it is the caller's own regular file with a single link (a requeued job's
 * next attempt appends to its own log). Returns a descriptor. */
int dlrt_privdir_append(int dirfd, const char *name, const char *shown, const char *what,
			struct dlrt_err *err);

/* Opens an existing file inside a verified folder for reading, with the same
 * checks. Returns a descriptor; -1 with errno ENOENT (and err set) if absent. */
int dlrt_privdir_read(int dirfd, const char *name, const char *shown, const char *what,
		      struct dlrt_err *err);

/* ---- the job's folder DIR/<job> -------------------------------------------
 * Job ids are easy to guess, so another user can create DIR/<job> first in a
 * shared DIR. That must neither fail the job nor receive its output: the job
 * then uses a folder of its own, DIR/<job>.<uid>.<time><random> (the time in
 * microseconds and 8 random bytes, 32 hex digits), which nobody can guess and
 * which only mkdir by the job's user can make that user's. Every process of the
 * job (each task of each step, the retry record) takes the oldest such folder
 * of the user's, so they meet in one; readers (dlrt-logs) take them all. */

#define DLRT_PRIVDIR_NAME 256 /* a folder name and its NUL */

struct dlrt_privdir_jobdir {
	char path[4400];     /* the folder used: DIR/<job>, or the fallback */
	char squatted[1024]; /* why DIR/<job> was not used ("" when it was) */
};

/* Creates or takes DIR/<name> in `dirfd` (from dlrt_privdir_base; `base` is
 * its path, for messages) as dlrt_privdir_sub does; when it exists and is
 * another user's (anything, a link included), the fallback above, created if
 * the job has none yet, and out->squatted says why. Returns a descriptor. */
int dlrt_privdir_job(int dirfd, const char *base, const char *name, const char *what,
		     struct dlrt_privdir_jobdir *out, struct dlrt_err *err);

/* The folders that may hold a job's files, to read them: DIR/<name> if it is
 * the caller's, then the caller's fallback folders, oldest first, at most
 * `max` names (each checked on the folder's status; open them with
 * dlrt_privdir_open, which checks the descriptor). `why` gets the reason when
 * DIR/<name> (`shown`) exists and is someone else's, else "". */
int dlrt_privdir_jobdirs(int dirfd, const char *name, const char *shown,
			 char (*names)[DLRT_PRIVDIR_NAME], int max, char *why, size_t wlen);

/* Opens an existing folder `name` in `dirfd` with dlrt_privdir_sub's checks,
 * creating nothing. Returns a descriptor; -1 with errno ENOENT if absent. */
int dlrt_privdir_open(int dirfd, const char *name, const char *shown, const char *what,
		      struct dlrt_err *err);

#endif
