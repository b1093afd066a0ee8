/* test_ocistate.c - the runtime's state folder of srun --container
 * (tools/ocistate.c): found in the runtime's arguments; created 0700 when
 * absent; the job user's own folder taken; a link, a file, a folder others
 * can write, another user's folder, or any of them in a folder others can
 * write (a shared /tmp) or in another user's folder, refused in one line
 * that names the cause and the fix; the user's own group-writable folders on
 * the way (Slurm 24.11's) lose the group's write and their ACLs; root's with
 * group write or an ACL refused. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
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

static void mkdir_mode(const char *rel, mode_t mode)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	mkdir(p, mode);
	chmod(p, mode);
}

static int mode_of(const char *rel)
{
	char p[512];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	return stat(p, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

/* An extended access ACL for `rel` with a named entry rwx for uid 4242 (who
 * may write when `mask` has w), or a default ACL (`dflt`), set through the xattr itself (no
 * libacl): the kernel's format, version 2, then (tag, perm, id) entries. */
static int set_acl(const char *rel, bool dflt, uint16_t mask)
{
	struct { uint16_t tag, perm; uint32_t id; } e[] = {
		{ 0x01, 7, (uint32_t)-1 },	/* ACL_USER_OBJ rwx */
		{ 0x02, 7, STRANGER },		/* ACL_USER 4242 rwx */
		{ 0x04, 7, (uint32_t)-1 },	/* ACL_GROUP_OBJ rwx */
		{ 0x10, mask, (uint32_t)-1 },	/* ACL_MASK */
		{ 0x20, 5, (uint32_t)-1 },	/* ACL_OTHER r-x */
	};
	char buf[4 + sizeof(e)], p[512];
	uint32_t version = 2;

	memcpy(buf, &version, 4);
	memcpy(buf + 4, e, sizeof(e));
	snprintf(p, sizeof(p), "%s/%s", top, rel);
	return setxattr(p, dflt ? "system.posix_acl_default" : "system.posix_acl_access", buf,
			sizeof(buf), 0);
}

static bool acl_there(const char *rel, const char *name)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	return getxattr(p, name, NULL, 0) >= 0;
}

/* Slurm 24.11: SlurmdSpoolDir/oci-jobJ-S/task-T/, both the user's, group the
 * job's, mode 0770; Slurm 22.05: SlurmdSpoolDir/oci-jobJJJJJ-SSSSS/, 0750.
 * Who else is in a group cannot be known (an account whose primary group it
 * is is in no member list), so the user's own folders lose the group's write
 * and their ACLs, whatever the group. */
static void test_group_writable(void)
{
	char msg[DLRT_ERR_MAX];

	mkdir_mode("step", 0770);
	mkdir_mode("step/task-0", 0770);
	mkdir_mode("s2205", 0750);
	TAP_IS_INT(try("s2205/crun", msg, sizeof(msg)), 0700,
		   "22.05: in a 0750 folder of ours: taken (%s)", msg);
	TAP_IS_INT(mode_of("s2205"), 0750, "22.05: its folder stays 0750");
	TAP_IS_INT(try("step/task-0/crun", msg, sizeof(msg)), 0700,
		   "24.11: 0770 folders of ours: taken (%s)", msg);
	TAP_IS_INT(mode_of("step/task-0"), 0750, "24.11: the task's folder loses the group's write");
	/* (as root, a folder of root's that only root can write ends the walk) */
	if (geteuid() != 0)
		TAP_IS_INT(mode_of("step"), 0750, "24.11: and the step's folder");
	mkdir_mode("step/task-0/open", 0777);
	TAP_IS_INT(try("step/task-0/open/crun", msg, sizeof(msg)), -1,
		   "with a folder every user can write on the way: refused");
	TAP_OK(has(msg, "/open, which other users can write (mode 0777)"), "%s", msg);
	/* ACLs (a default ACL on SlurmdSpoolDir gives Slurm's folders one): taken off. */
	mkdir_mode("acl", 0770);
	mkdir_mode("acl/task-0", 0770);
	if (set_acl("acl", false, 7) < 0 && (errno == ENOTSUP || errno == EOPNOTSUPP)) {
		printf("# no ACLs on this filesystem: the ACL tests skipped\n");
		return;
	}
	TAP_IS_INT(set_acl("acl/task-0", false, 7) + set_acl("acl/task-0", true, 7), 0,
		   "a task folder of ours with an access ACL for uid 4242, and a default ACL");
	TAP_IS_INT(try("acl/task-0/crun", msg, sizeof(msg)), 0700, "taken (%s)", msg);
	TAP_OK((geteuid() == 0 || !acl_there("acl", "system.posix_acl_access")) &&
	       !acl_there("acl/task-0", "system.posix_acl_access") &&
	       !acl_there("acl/task-0", "system.posix_acl_default") &&
	       !acl_there("acl/task-0/crun", "system.posix_acl_access"),
	       "every ACL is taken off the folders on the way and the state folder");
	TAP_IS_INT(mode_of("acl/task-0"), 0755,
		   "and the group's write (the mask; others r-x, as the ACL had it)");
}

/* As a user (run by root through a child that becomes uid 4242): a folder of
 * root's that its group can write, or with an ACL, is not root's alone; our
 * Slurm 24.11 layout under a folder of another user's (4243), who could
 * rename the step's folder away and put theirs in its place, is refused. */
static void test_roots_group(void)
{
	char p[512], msg[DLRT_ERR_MAX];
	int st = -1, ok = 1;
	pid_t pid;

	mkdir_mode("rg", 0755);
	mkdir_mode("rg/sp", 0775);
	mkdir_mode("rg/sp/step", 0700);
	mkdir_mode("rg/acl", 0755);
	mkdir_mode("rg/acl/step", 0700);
	mkdir_mode("gp", 0755);
	mkdir_mode("gp/step", 0770);
	mkdir_mode("gp/step/task-0", 0770);
	snprintf(p, sizeof(p), "%s/gp", top);
	ok &= chown(p, STRANGER + 1, STRANGER + 1) == 0;
	snprintf(p, sizeof(p), "%s/gp/step", top);
	ok &= chown(p, STRANGER, STRANGER) == 0;
	snprintf(p, sizeof(p), "%s/gp/step/task-0", top);
	ok &= chown(p, STRANGER, STRANGER) == 0;
	snprintf(p, sizeof(p), "%s/rg/sp/step", top);
	ok &= chown(p, STRANGER, STRANGER) == 0;
	snprintf(p, sizeof(p), "%s/rg/acl/step", top);
	ok &= chown(p, STRANGER, STRANGER) == 0;
	snprintf(p, sizeof(p), "%s", top);
	ok &= chmod(p, 0755) == 0;
	TAP_OK(ok, "a root's folder 0775 and one with an ACL, each with a step folder of uid "
	       "4242's, and 0770 step and task folders of 4242's in a folder of 4243's");
	pid = fork();
	if (pid == 0) {
		int acl = set_acl("rg/acl", false, 5) == 0, r1, r2, r3;

		if (setgid(STRANGER) < 0 || setuid(STRANGER) < 0)
			_exit(9);
		r1 = try("rg/sp/step/crun", msg, sizeof(msg)) == -1 &&
		     has(msg, "/rg/sp, which group ") + has(msg, "which gid ") &&
		     has(msg, "can write (mode 0775), and no one can tell who is in a group") &&
		     has(msg, "make ") && has(msg, "/rg/sp writable by root alone (chmod g-w)");
		if (!r1)
			fprintf(stderr, "# %s\n", msg);
		r2 = !acl || (try("rg/acl/step/crun", msg, sizeof(msg)) == -1 &&
			      has(msg, "/rg/acl, which has an access ACL: named users or groups may "
				  "write it beyond its mode bits") && has(msg, "setfacl -b "));
		if (!r2)
			fprintf(stderr, "# %s\n", msg);
		r3 = try("gp/step/task-0/crun", msg, sizeof(msg)) == -1 &&
		     has(msg, "/gp/step/task-0/crun is under ") && has(msg, "/gp, which belongs to "
		     "uid 4243, who could replace the folders below it: keep the step's folder (%b) "
		     "under a SlurmdSpoolDir that is root's");
		if (!r3)
			fprintf(stderr, "# %s\n", msg);
		_exit(r1 && r2 && r3 ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	TAP_IS_INT(st, 0, "as that user: all three refused, in one line naming the cause and the "
		   "fix");
	snprintf(p, sizeof(p), "%s", top);
	chmod(p, 0700);
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
	test_group_writable();

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
	test_roots_group();
	snprintf(p, sizeof(p), "%s/other", top);
	mkdir(p, 0755);
	TAP_IS_INT(chown(p, STRANGER, STRANGER), 0, "a folder above of another user's, 0755");
	TAP_IS_INT(try("other/crun", msg, sizeof(msg)), -1, "is refused");
	TAP_OK(has(msg, "/other, which belongs to uid 4242, who could replace it: keep it in the "
		   "step's own folder: --root=%b/crun"), "%s", msg);
	clean();
	return tap_done();
}
