/* test_ocistate.c - the runtime's state folder of srun --container
 * (tools/ocistate.c): found in the runtime's arguments; created 0700 when
 * absent; the job user's own folder taken; a link, a file, a folder others
 * can write, another user's folder, or any of them in a folder others can
 * write (a shared /tmp) or in another user's folder, refused in one line
 * that names the cause and the fix. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "tools/ocistate.h"

#define STRANGER 4242 /* a uid that is not ours (the tests that chown need root) */

static char top[] = "/tmp/dlrt-test-ocistate.XXXXXX";

static void clean(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", top);
}

/* dlrt_ocistate_open(TOP/rel): -1 and the message, or the folder's mode. */
static int try(const char *rel, char *msg, size_t len)
{
	struct dlrt_err err = { "" };
	char root[512];
	struct stat st;
	int fd, mode = -1;

	snprintf(root, sizeof(root), "%s/%s", top, rel);
	fd = dlrt_ocistate_open(root, &err);
	snprintf(msg, len, "%s", err.msg);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
		mode = (int)(st.st_mode & 07777);
	close(fd);
	return mode;
}

static bool has(const char *msg, const char *part)
{
	return strstr(msg, part) != NULL;
}

static void test_root_arg(void)
{
	TAP_IS_STR(dlrt_ocistate_root((char *[]){ "crun", "--rootless=true", "--root=/s/crun",
						   "run", "x", NULL }), "/s/crun",
		   "--root=DIR is the state folder");
	TAP_IS_STR(dlrt_ocistate_root((char *[]){ "runc", "--root", "/s/runc", "run", NULL }),
		   "/s/runc", "--root DIR too");
	TAP_IS_STR(dlrt_ocistate_root((char *[]){ "crun", "run", "--bundle", "/b", "x", NULL }),
		   NULL, "no --root: none (the runtime's own default)");
	TAP_IS_STR(dlrt_ocistate_root((char *[]){ "crun", "--root", NULL }), NULL,
		   "--root with nothing after it: none");
	TAP_IS_STR(dlrt_ocistate_root((char *[]){ "--root=/not-an-option-here", NULL }), NULL,
		   "the runtime's name itself is not an option");
}

/* Whether our primary group is ours alone (no other member named), as
 * tools/ocistate.c decides it: Slurm 24.11's 0770 folders are accepted then. */
static bool our_group_private(void)
{
	struct passwd *pw = getpwuid(geteuid());
	struct group *gr = pw ? getgrgid(pw->pw_gid) : NULL;

	if (!gr || pw->pw_gid != getegid()) /* (our new folders' group is getegid()) */
		return false;
	for (char **m = gr->gr_mem; *m; m++)
		if (strcmp(*m, pw->pw_name))
			return false;
	return true;
}

static void mkdir_mode(const char *rel, mode_t mode)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	mkdir(p, mode);
	chmod(p, mode);
}

/* Slurm 24.11: SlurmdSpoolDir/oci-jobJ-S/task-T/, both the user's, group the
 * job's, mode 0770; Slurm 22.05: SlurmdSpoolDir/oci-jobJJJJJ-SSSSS/, 0750. */
static void test_private_group(void)
{
	char msg[DLRT_ERR_MAX];
	bool priv = our_group_private();

	mkdir_mode("step", 0770);
	mkdir_mode("step/task-0", 0770);
	mkdir_mode("s2205", 0750);
	TAP_IS_INT(try("s2205/crun", msg, sizeof(msg)), 0700,
		   "22.05: in a 0750 folder of ours: taken (%s)", msg);
	if (!priv) {
		TAP_IS_INT(try("step/task-0/crun", msg, sizeof(msg)), -1,
			   "24.11: 0770 folders of ours, our group shared with others: refused");
		TAP_OK(has(msg, "/step/task-0, which group ") && has(msg, "can write (mode 0770), "
		       "and that group is not yours alone (") && has(msg, "): submit the job with "
		       "--gid=<a group of yours alone>, or give each user a private group"),
		       "%s", msg);
		return;
	}
	TAP_IS_INT(try("step/task-0/crun", msg, sizeof(msg)), 0700,
		   "24.11: 0770 folders of ours, group our private one: taken (%s)", msg);
	mkdir_mode("step/task-0/open", 0777);
	TAP_IS_INT(try("step/task-0/open/crun", msg, sizeof(msg)), -1,
		   "with a folder every user can write on the way: refused");
	TAP_OK(has(msg, "/open, which other users can write (mode 0777)"), "%s", msg);
}

/* As root: folders on the way that another group, or another user, can write. */
static void test_foreign_groups(void)
{
	char p[512], msg[DLRT_ERR_MAX];
	struct group *gr = getgrgid(1);

	mkdir_mode("fgrp", 0770);
	snprintf(p, sizeof(p), "%s/fgrp", top);
	TAP_IS_INT(chown(p, geteuid(), STRANGER), 0, "a 0770 folder of ours, group gid 4242");
	TAP_IS_INT(try("fgrp/crun", msg, sizeof(msg)), -1, "is refused (no such group)");
	TAP_OK(has(msg, "/fgrp/crun is in ") && has(msg, "/fgrp, which gid 4242 can write (mode "
	       "0770), and that group is not yours alone (no such group: who is in it cannot be "
	       "checked): submit the job with --gid=<a group of yours alone>, or give each user "
	       "a private group"), "%s", msg);
	mkdir_mode("fgrp/task-0", 0770);
	TAP_IS_INT(try("fgrp/task-0/crun", msg, sizeof(msg)), -1,
		   "one level further down (24.11's step folder): refused too");
	TAP_OK(has(msg, "/fgrp/task-0/crun is under ") && has(msg, "/fgrp, which gid 4242 can "
	       "write"), "%s", msg);
	if (gr) {
		mkdir_mode("ogrp", 0770);
		snprintf(p, sizeof(p), "%s/ogrp", top);
		TAP_IS_INT(chown(p, geteuid(), 1), 0, "a 0770 folder of ours, group %s", gr->gr_name);
		TAP_IS_INT(try("ogrp/crun", msg, sizeof(msg)), -1, "(not our primary group): refused");
		TAP_OK(has(msg, "which group ") && has(msg, "(it is not your primary group)"), "%s",
		       msg);
	}
	/* 24.11's layout under a folder of another user's: they could rename
	 * the step's folder away and put theirs in its place. */
	mkdir_mode("gp", 0755);
	mkdir_mode("gp/step", 0770);
	mkdir_mode("gp/step/task-0", 0770);
	snprintf(p, sizeof(p), "%s/gp", top);
	TAP_IS_INT(chown(p, STRANGER, STRANGER), 0, "our step folder in another user's folder");
	TAP_IS_INT(try("gp/step/task-0/crun", msg, sizeof(msg)), -1, "is refused");
	TAP_OK(has(msg, "/gp/step/task-0/crun is under ") && has(msg, "/gp, which belongs to uid "
	       "4242, who could replace the folders below it: keep it in the step's own folder "
	       "(%b/crun) under a SlurmdSpoolDir that is root's"), "%s", msg);
}

int main(void)
{
	char p[512], msg[DLRT_ERR_MAX];
	bool root = geteuid() == 0;
	int fd;

	umask(022);
	if (!mkdtemp(top)) /* 0700, ours: the step's folder Slurm makes (%b) */
		return 1;
	test_root_arg();

	TAP_IS_INT(try("crun", msg, sizeof(msg)), 0700,
		   "absent: created, the caller's, mode 0700 (%s)", msg);
	TAP_IS_INT(try("crun", msg, sizeof(msg)), 0700, "there and ours: taken (the next task)");
	TAP_IS_INT(try("/crun//", msg, sizeof(msg)), 0700, "%%b/crun/ with Slurm's trailing '/'");
	snprintf(p, sizeof(p), "%s/crun", top);
	chmod(p, 0750);
	TAP_IS_INT(try("crun", msg, sizeof(msg)), 0750, "ours and 0750: taken (no one else writes)");
	chmod(p, 0770);
	TAP_IS_INT(try("crun", msg, sizeof(msg)), -1, "ours but group-writable: refused");
	TAP_OK(has(msg, "the runtime's state folder (--root): ") && has(msg, "/crun is writable by "
	       "other users (mode 0770): chmod go-w "), "%s", msg);

	snprintf(p, sizeof(p), "%s/file", top);
	close(open(p, O_WRONLY | O_CREAT, 0600));
	TAP_IS_INT(try("file", msg, sizeof(msg)), -1, "a file: refused");
	TAP_OK(has(msg, "/file is a file owned by ") && has(msg, "not a folder"), "%s", msg);
	snprintf(p, sizeof(p), "%s/mine", top);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/link", top);
	TAP_IS_INT(symlink("mine", p), 0, "a symbolic link to a folder of ours");
	TAP_IS_INT(try("link", msg, sizeof(msg)), -1, "is refused, never followed");
	TAP_OK(has(msg, "/link is a symbolic link owned by "), "%s", msg);
	TAP_IS_INT(try("missing/crun", msg, sizeof(msg)), -1, "a folder above that is not there");
	TAP_OK(has(msg, "cannot open ") && has(msg, "/missing, the folder above ") &&
	       has(msg, "give the runtime --root=%b/crun"), "%s", msg);

	/* A shared /tmp: anyone can take the name first, so it is never used. */
	snprintf(p, sizeof(p), "%s/shared", top);
	mkdir(p, 0777);
	chmod(p, 01777);
	TAP_IS_INT(try("shared/dlrt-crun-u", msg, sizeof(msg)), -1,
		   "in a folder every user can write (1777): refused");
	TAP_OK(has(msg, "/shared, which other users can write (mode 1777), so another user can "
		   "take its name, or a container's, before the job: keep it in the step's own "
		   "folder: --root=%b/crun in every RunTime* line of oci.conf"), "%s", msg);
	snprintf(p, sizeof(p), "%s/shared/dlrt-crun-u", top);
	TAP_IS_INT(access(p, F_OK), -1, "and nothing was created there");
	mkdir(p, 0700);
	TAP_IS_INT(try("shared/dlrt-crun-u", msg, sizeof(msg)), -1,
		   "even when the folder there is ours");
	test_private_group();

	{
		struct dlrt_err err = { "" };

		TAP_IS_INT(dlrt_ocistate_open("tmp/crun", &err), -1, "a relative path: refused");
		TAP_OK(has(err.msg, "tmp/crun is not an absolute path: give the runtime "
			   "--root=%b/crun"), "%s", err.msg);
		TAP_IS_INT(dlrt_ocistate_open("/", &err), -1, "/ itself: refused");
		TAP_OK(has(err.msg, "/ names no folder of its own"), "%s", err.msg);
		fd = dlrt_ocistate_open("/..", &err);
		TAP_IS_INT(fd, -1, "/..: refused");
	}

	if (!root) {
		printf("# the tests of another user's folders need root: skipped\n");
		clean();
		return tap_done();
	}
	/* What another user on the node can plant first. */
	snprintf(p, sizeof(p), "%s/theirs", top);
	mkdir(p, 0755);
	TAP_IS_INT(chown(p, STRANGER, STRANGER), 0, "another user's folder");
	TAP_IS_INT(try("theirs", msg, sizeof(msg)), -1, "is refused");
	TAP_OK(has(msg, "/theirs belongs to uid 4242, not to you: another user created it before "
		   "this job"), "%s", msg);
	snprintf(p, sizeof(p), "%s/shared/dlrt-crun-v", top);
	mkdir(p, 0777);
	chmod(p, 0777);
	TAP_IS_INT(chown(p, STRANGER, STRANGER), 0, "another user's folder, open to all, in /tmp");
	TAP_IS_INT(try("shared/dlrt-crun-v", msg, sizeof(msg)), -1,
		   "is refused");
	TAP_OK(has(msg, "/shared/dlrt-crun-v is in ") && has(msg, "/shared, which other users can "
		   "write (mode 1777), so another user can take its name, or a container's, before "
		   "the job (a folder of uid 4242 is there now): keep it in the step's own folder: "
		   "--root=%b/crun in every RunTime* line of oci.conf"), "%s", msg);
	snprintf(p, sizeof(p), "%s/shared/dlrt-crun-w", top);
	TAP_IS_INT(symlink("../theirs", p), 0, "a link to another user's folder, in /tmp");
	TAP_IS_INT(lchown(p, STRANGER, STRANGER), 0, "(the link is theirs too)");
	TAP_IS_INT(try("shared/dlrt-crun-w", msg, sizeof(msg)), -1, "is refused");
	TAP_OK(has(msg, "(a symbolic link of uid 4242 is there now): keep it in"), "%s", msg);
	test_foreign_groups();
	snprintf(p, sizeof(p), "%s/other", top);
	mkdir(p, 0755);
	TAP_IS_INT(chown(p, STRANGER, STRANGER), 0, "a folder above of another user's, 0755");
	TAP_IS_INT(try("other/crun", msg, sizeof(msg)), -1, "is refused");
	TAP_OK(has(msg, "/other, which belongs to uid 4242, who could replace it: keep it in the "
		   "step's own folder: --root=%b/crun"), "%s", msg);
	clean();
	return tap_done();
}
