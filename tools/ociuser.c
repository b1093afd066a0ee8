/* ociuser.c - the runtime as the job's user, under a root parent that bounds
 * it (ociuser.h). */
#include "ociuser.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fdio.h"

/* In the child: the user's uid, primary gid and groups, for good (no way back
 * to root: the user may stop, trace or signal this process from now on). */
static int become(const char *user, uid_t uid, gid_t gid)
{
	if (geteuid() == uid)
		return 0;
	if (initgroups(user, gid) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
		return -1;
	if (setuid(0) == 0 || geteuid() != uid || getuid() != uid || getegid() != gid) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

/* (stderr is flushed before each _exit: a caller may have made it buffered) */
static void child(const char *user, uid_t uid, gid_t gid, char *const *argv,
		  int (*prepare)(char *const *argv))
{
	if (become(user, uid, gid) < 0) {
		fprintf(stderr, "dlrt-oci-run: --user %s: cannot become that user (uid %u, gid %u): "
			"%s: slurmstepd runs RunTimeQuery, RunTimeKill and RunTimeDelete as root; "
			"run dlrt-oci-run --user there only\n", user, (unsigned)uid, (unsigned)gid,
			strerror(errno));
		fflush(stderr);
		_exit(1);
	}
	if (prepare && prepare(argv) < 0) {
		fflush(stderr);
		_exit(1);
	}
	fflush(stdout);
	execvp(argv[0], argv);
	fprintf(stderr, "dlrt-oci-run: cannot run %s: %s: install it on the nodes or fix oci.conf\n",
		argv[0], strerror(errno));
	fflush(stderr);
	_exit(127);
}

/* Copies what fd has now to `to`; closes fd (-1) at its end. */
static void relay(int *fd, int to)
{
	char buf[4096];
	ssize_t n;

	while (*fd >= 0) {
		n = read(*fd, buf, sizeof(buf));
		if (n > 0) {
			(void)dlrt_write_all(to, buf, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		close(*fd);
		*fd = -1;
	}
}

/* Relays the child's output until it has ended (then what it left in the
 * pipes: a process it left behind with them open is not waited for) or the
 * deadline. 1 when it ended (*status set), 0 at the deadline. */
static int follow(pid_t pid, int fds[2], int64_t deadline, int *status)
{
	static const int to[2] = { STDOUT_FILENO, STDERR_FILENO };

	for (;;) {
		struct pollfd p[2];
		int n = 0;
		int64_t left;

		if (waitpid(pid, status, WNOHANG) == pid) {
			relay(&fds[0], to[0]);
			relay(&fds[1], to[1]);
			return 1;
		}
		left = deadline - dlrt_now_ms();
		if (left <= 0)
			return 0;
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				p[n++] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		/* (ticks of 100 ms: a pipe kept open by what the child left
		 * behind must not hide the child's end) */
		if (poll(p, (nfds_t)n, left < 100 ? (int)left : 100) < 0 && errno != EINTR)
			return 0;
		for (int i = 0; i < 2; i++)
			relay(&fds[i], to[i]);
	}
}

int dlrt_ociuser_run(const char *user, char *const *argv, int timeout_s,
		     int (*prepare)(char *const *argv), struct dlrt_err *err)
{
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 }, fds[2], status = 0, ended;
	struct passwd *pw;
	uid_t uid;
	gid_t gid;
	pid_t pid;

	errno = 0;
	pw = getpwnam(user);
	if (!pw)
		return dlrt_err_set(err, "--user %s: no such user (%s): give it %%u, the job's user, "
				    "in RunTimeQuery, RunTimeKill and RunTimeDelete of oci.conf", user,
				    errno ? strerror(errno) : "not in the passwd database");
	uid = pw->pw_uid;
	gid = pw->pw_gid;
	if (geteuid() != 0 && geteuid() != uid)
		return dlrt_err_set(err, "--user %s: running as uid %u, neither root nor that user "
				    "(uid %u): give --user only in oci.conf's RunTimeQuery, "
				    "RunTimeKill and RunTimeDelete, which slurmstepd runs as root",
				    user, (unsigned)geteuid(), (unsigned)uid);
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		dlrt_err_errno(err, errno, "--user %s: cannot make a pipe", user);
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		dlrt_err_errno(err, errno, "--user %s: cannot start the runtime", user);
		goto fail;
	}
	if (pid == 0) {
		if (dup2(out[1], STDOUT_FILENO) < 0 || dup2(errp[1], STDERR_FILENO) < 0)
			_exit(1);
		child(user, uid, gid, argv, prepare);
	}
	close(out[1]);
	close(errp[1]);
	fds[0] = out[0];
	fds[1] = errp[0];
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	ended = follow(pid, fds, dlrt_now_ms() + (int64_t)timeout_s * 1000, &status);
	if (!ended) {
		kill(pid, SIGKILL);
		/* A process killed in the kernel's uninterruptible sleep ends
		 * when that ends: wait for it, bounded, and leave it to init. */
		follow(pid, fds, dlrt_now_ms() + 5000, &status);
	}
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (!ended)
		return dlrt_err_set(err, "--user %s: %s did not end within %d s, so it was killed: the "
				    "state folder it reads is %s's, who may have put something there "
				    "it waits on (a named pipe in place of a state file); the "
				    "container's state is not known", user, argv[0], timeout_s,
				    user);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
fail:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	return -1;
}
