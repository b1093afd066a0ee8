/* Unit tests: the job's folders and files in a shared folder (common/privdir.c). */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/privdir.h"
#include "tap.h"

#define STRANGER 4242 /* a uid that is not ours (the tests that chown need root) */

static const char what[] = "--dl-log-dir";

static void clean(const char *top)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", top);
}

static off_t size_of(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 ? st.st_size : -1;
}

/* DIR/<job> taken first by another user (a folder, then a link): the job
 * gets a folder of its own under a name nobody can guess, every process of
 * the job the same one, and a reader finds it but never the stranger's. */
static void test_squatted(int base, const char *top)
{
	char q[512], prefix[64], names[4][DLRT_PRIVDIR_NAME], why[1024];
	struct dlrt_privdir_jobdir jd, jd2;
	struct dlrt_err err = { "" };
	struct stat st, st2;
	int fd, fd2, n;

	snprintf(q, sizeof(q), "%s/logs/deep/90", top);
	mkdir(q, 0777);
	chmod(q, 0777);
	TAP_IS_INT(chown(q, STRANGER, STRANGER), 0, "a stranger's DIR/90");
	/* A look-alike of the stranger's, named to sort first: never used. */
	snprintf(prefix, sizeof(prefix), "90.%u.", (unsigned)geteuid());
	snprintf(q, sizeof(q), "%s/logs/deep/%s%032d", top, prefix, 0);
	mkdir(q, 0750);
	TAP_IS_INT(chown(q, STRANGER, STRANGER), 0, "and a look-alike fallback of theirs");
	fd = dlrt_privdir_job(base, "DIR", "90", what, &jd, &err);
	TAP_OK(fd >= 0, "the job gets a folder anyway (%s)", err.msg);
	TAP_OK(strstr(jd.squatted, "DIR/90 belongs to uid 4242, not to you") != NULL, "%s",
	       jd.squatted);
	TAP_OK(!strncmp(jd.path, "DIR/", 4) && !strncmp(jd.path + 4, prefix, strlen(prefix)) &&
	       strlen(jd.path + 4 + strlen(prefix)) == 32 &&
	       strcmp(jd.path + 4 + strlen(prefix), "00000000000000000000000000000000"),
	       "named DIR/90.<uid>.<32 hex digits>, not the stranger's (%s)", jd.path);
	TAP_OK(fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 07777) == 0750,
	       "the caller's, mode 0750");
	fd2 = dlrt_privdir_job(base, "DIR", "90", what, &jd2, &err);
	TAP_OK(fd2 >= 0 && fstat(fd2, &st2) == 0 && st2.st_ino == st.st_ino &&
	       !strcmp(jd.path, jd2.path), "a second process of the job takes the same folder");
	close(fd2);
	close(fd);
	n = dlrt_privdir_jobdirs(base, "90", "DIR/90", names, 4, why, sizeof(why));
	TAP_IS_INT(n, 1, "a reader finds that one folder only");
	TAP_OK(n == 1 && !strcmp(names[0], jd.path + 4), "%s", n ? names[0] : "");
	TAP_OK(strstr(why, "DIR/90 belongs to uid 4242") != NULL, "and says why: %s", why);
	/* A symbolic link of the stranger's as DIR/91. */
	snprintf(q, sizeof(q), "%s/logs/deep/91", top);
	TAP_IS_INT(symlink("/tmp", q), 0, "DIR/91: a link");
	TAP_IS_INT(lchown(q, STRANGER, STRANGER), 0, "of the stranger's");
	fd = dlrt_privdir_job(base, "DIR", "91", what, &jd, &err);
	TAP_OK(fd >= 0 && strstr(jd.squatted, "DIR/91 is a symbolic link owned by uid 4242"),
	       "a link is passed by too: %s", jd.squatted);
	if (fd >= 0)
		close(fd);
	/* Readers: a job folder that is the caller's is listed as before. */
	n = dlrt_privdir_jobdirs(base, "77", "DIR/77", names, 4, why, sizeof(why));
	TAP_OK(n == 1 && !strcmp(names[0], "77") && !why[0], "DIR/77 (the caller's) is read");
	n = dlrt_privdir_jobdirs(base, "92", "DIR/92", names, 4, why, sizeof(why));
	TAP_OK(n == 0 && !why[0], "no folder, no reason");
}

int main(void)
{
	char top[] = "/tmp/dlrt-test-privdir-XXXXXX", p[512], q[512];
	struct dlrt_err err = { "" };
	struct stat st;
	int base, job, fd, fd2;
	bool root = geteuid() == 0;

	umask(022);
	if (!mkdtemp(top))
		return 1;
	chmod(top, 01777); /* the shared scratch folder */

	snprintf(p, sizeof(p), "%s/logs/deep", top);
	base = dlrt_privdir_base(p, what, &err);
	TAP_OK(base >= 0, "DIR and its parents are created: %s", err.msg);
	job = dlrt_privdir_sub(base, "77", "DIR/77", what, &err);
	TAP_OK(job >= 0, "the job's folder is created: %s", err.msg);
	TAP_OK(fstat(job, &st) == 0 && (st.st_mode & 07777) == 0750, "mode 0750");
	fd = dlrt_privdir_sub(base, "77", "DIR/77", what, &err);
	TAP_OK(fd >= 0, "an existing folder of ours is taken (a second task, a second step)");
	close(fd);
	TAP_IS_INT(dlrt_privdir_sub(base, "..", "DIR/..", what, &err), -1, "one name only");

	fd = dlrt_privdir_append(job, "worker-0.log", "DIR/77/worker-0.log", what, &err);
	TAP_OK(fd >= 0, "a new file is created: %s", err.msg);
	TAP_OK(fstat(fd, &st) == 0 && (st.st_mode & 07777) == 0640 && S_ISREG(st.st_mode),
	       "mode 0640");
	TAP_IS_INT((int)write(fd, "a\n", 2), 2, "written");
	fd2 = dlrt_privdir_append(job, "worker-0.log", "DIR/77/worker-0.log", what, &err);
	TAP_OK(fd2 >= 0, "our own file is appended to (a requeued job's next attempt)");
	TAP_IS_INT((int)write(fd2, "b\n", 2), 2, "appended");
	TAP_IS_INT((int)lseek(fd2, 0, SEEK_CUR), 4, "at the end, after the first attempt");
	close(fd);
	close(fd2);
	fd = dlrt_privdir_read(job, "worker-0.log", "DIR/77/worker-0.log", what, &err);
	TAP_OK(fd >= 0, "our file can be read back");
	close(fd);
	errno = 0;
	TAP_IS_INT(dlrt_privdir_read(job, "none.log", "DIR/77/none.log", what, &err), -1,
		   "a missing file");
	TAP_IS_INT(errno, ENOENT, "says ENOENT");

	/* A hard link to our file (someone could read it under another name). */
	snprintf(p, sizeof(p), "%s/logs/deep/77/worker-0.log", top);
	snprintf(q, sizeof(q), "%s/logs/deep/77/worker-1.log", top);
	TAP_IS_INT(link(p, q), 0, "hard link made");
	TAP_IS_INT(dlrt_privdir_append(job, "worker-1.log", "DIR/77/worker-1.log", what, &err), -1,
		   "a file with two links is refused");
	TAP_OK(strstr(err.msg, "DIR/77/worker-1.log has 2 hard links") != NULL, "%s", err.msg);
	unlink(q);

	/* A symbolic link, to a file or to a folder. */
	snprintf(q, sizeof(q), "%s/logs/deep/77/worker-2.log", top);
	TAP_IS_INT(symlink(p, q), 0, "symlink made");
	TAP_IS_INT(dlrt_privdir_append(job, "worker-2.log", "DIR/77/worker-2.log", what, &err), -1,
		   "a symbolic link is not followed");
	TAP_OK(strstr(err.msg, "--dl-log-dir: DIR/77/worker-2.log is a symbolic link owned by") &&
	       strstr(err.msg, "not a regular file"), "%s", err.msg);
	TAP_IS_INT((int)size_of(p), 4, "its target is untouched");
	snprintf(q, sizeof(q), "%s/logs/deep/78", top);
	TAP_IS_INT(symlink(top, q), 0, "folder symlink made");
	TAP_IS_INT(dlrt_privdir_sub(base, "78", "DIR/78", what, &err), -1,
		   "a symbolic link to a folder is refused");
	TAP_OK(strstr(err.msg, "DIR/78 is a symbolic link") != NULL, "%s", err.msg);

	/* A named pipe must not block the task. */
	snprintf(q, sizeof(q), "%s/logs/deep/77/worker-3.log", top);
	TAP_IS_INT(mkfifo(q, 0600), 0, "fifo made");
	TAP_IS_INT(dlrt_privdir_append(job, "worker-3.log", "DIR/77/worker-3.log", what, &err), -1,
		   "a named pipe is refused, without blocking");
	TAP_OK(strstr(err.msg, "is a named pipe") != NULL, "%s", err.msg);

	/* Writable by others. */
	snprintf(q, sizeof(q), "%s/logs/deep/79", top);
	mkdir(q, 0700);
	chmod(q, 0777);
	TAP_IS_INT(dlrt_privdir_sub(base, "79", "DIR/79", what, &err), -1,
		   "a folder open to others is refused");
	TAP_OK(strstr(err.msg, "DIR/79 is writable by other users (mode 0777): chmod go-w DIR/79") !=
	       NULL, "%s", err.msg);

	if (!root) {
		close(job);
		close(base);
		clean(top);
		return tap_done();
	}
	/* Another user's folder and file (as a stranger would plant them). */
	snprintf(q, sizeof(q), "%s/logs/deep/80", top);
	mkdir(q, 0777);
	chmod(q, 0777);
	TAP_IS_INT(chown(q, STRANGER, STRANGER), 0, "stranger's folder");
	TAP_IS_INT(dlrt_privdir_sub(base, "80", "DIR/80", what, &err), -1,
		   "another user's folder is refused");
	TAP_OK(strstr(err.msg, "--dl-log-dir: DIR/80 belongs to uid 4242, not to you") != NULL,
	       "%s", err.msg);
	snprintf(q, sizeof(q), "%s/logs/deep/77/worker-4.log", top);
	fd = open(q, O_WRONLY | O_CREAT, 0666);
	fchmod(fd, 0666);
	TAP_IS_INT(fchown(fd, STRANGER, STRANGER), 0, "stranger's file");
	close(fd);
	TAP_IS_INT(dlrt_privdir_append(job, "worker-4.log", "DIR/77/worker-4.log", what, &err), -1,
		   "another user's file is refused");
	TAP_OK(strstr(err.msg, "belongs to uid 4242") != NULL, "%s", err.msg);
	TAP_IS_INT((int)size_of(q), 0, "and stays empty");
	TAP_IS_INT(dlrt_privdir_read(job, "worker-4.log", "DIR/77/worker-4.log", what, &err), -1,
		   "and is never read");
	/* DIR itself owned by another user (not root). */
	snprintf(q, sizeof(q), "%s/other", top);
	mkdir(q, 0755);
	TAP_IS_INT(chown(q, STRANGER, STRANGER), 0, "stranger's DIR");
	TAP_IS_INT(dlrt_privdir_base(q, what, &err), -1, "a DIR of another user is refused");
	TAP_OK(strstr(err.msg, "belongs to uid 4242, who could move or replace") != NULL, "%s",
	       err.msg);
	test_squatted(base, top);
	close(job);
	close(base);
	clean(top);
	return tap_done();
}
