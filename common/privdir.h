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

#include <stddef.h>

#include "dlrt_err.h"

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

#endif
