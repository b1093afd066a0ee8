/* Unit tests: the privilege and child-process module (common/proc.c) and the
 * monotonic clock. The drop to another user runs when the tests run as root
 * (in a forked child, to nobody); otherwise only the "already that user" case. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/proc.h"
#include "tap.h"

static int fd_closed(void *arg)
{
	int fd = *(int *)arg;

	return fcntl(fd, F_GETFD) < 0 && errno == EBADF ? 0 : 1;
}

static int say_hello(void *arg)
{
	(void)arg;
	return write(1, "hello", 5) == 5 ? 7 : 1;
}

/* In a forked child: drop to nobody with one extra group, then report. */
static int drop_child(void)
{
	gid_t groups[] = { 65534, 4242 }, have[8];
	int n;

	if (dlrt_proc_drop_to_user(65534, 65534, groups, 2) < 0)
		return 1;
	n = getgroups(8, have);
	if (getuid() != 65534 || geteuid() != 65534 || getgid() != 65534 || n != 2)
		return 2;
	if (setresuid(0, 0, 0) == 0 || seteuid(0) == 0)
		return 3;
	return 0;
}

/* slurm_spank_user_init's state: root's real and saved ids, the user's effective one. */
static int drop_from_seteuid_child(void)
{
	if (setegid(65534) < 0 || seteuid(65534) < 0)
		return 10;
	if (dlrt_proc_drop_to_user(65534, 65534, NULL, 0) < 0)
		return 1;
	if (getgroups(0, NULL) != 0 || setresuid(0, 0, 0) == 0)
		return 2;
	return 0;
}

static int fork_status(int (*fn)(void))
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn());
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(void)
{
	char *echo[] = { "echo", "out", NULL }, *env[] = { "PATH=/usr/bin:/bin", NULL };
	char *sleeper[] = { "/bin/sleep", "30", NULL }, *yes[] = { "yes", NULL };
	char *nothere[] = { "dlrt-no-such-program", NULL };
	struct dlrt_proc_spec s = { .argv = echo, .envp = env, .timeout_ms = 20000,
				    .out_max = 4096 };
	struct dlrt_proc_result res;
	struct dlrt_err err = { "" };
	struct dlrt_buf out;
	int64_t t0, status;
	int fd, st;
	pid_t pid;

	t0 = dlrt_now_ms();
	TAP_OK(t0 > 0 && dlrt_now_ms() >= t0, "the monotonic clock does not go back");

	dlrt_buf_init(&out, 1u << 20);
	TAP_IS_INT(dlrt_proc_run(&s, "echo", &out, &res, &err), 0, "echo runs (%s)", err.msg);
	TAP_OK(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0, "echo exits 0");
	TAP_OK(out.len == 4 && !memcmp(dlrt_buf_head(&out), "out\n", 4),
	       "its output is captured, found through envp's PATH");

	s.argv = nothere;
	out.len = 0;
	TAP_IS_INT(dlrt_proc_run(&s, "nothing", &out, &res, &err), 0, "a missing program is reaped");
	TAP_IS_INT(WEXITSTATUS(res.status), DLRT_PROC_EXIT_EXEC, "it exits 127");
	TAP_IS_STR(dlrt_proc_status_text(res.status, err.msg, sizeof(err.msg)),
		   "could not execute the program", "and says why");

	/* A deadline: sleep 30 is ended, not waited for. */
	s.argv = sleeper;
	s.timeout_ms = 200;
	TAP_IS_INT(dlrt_proc_run(&s, "sleep", &out, &res, &err), -1, "a child past its deadline fails");
	TAP_OK(res.timed_out && WIFSIGNALED(res.status), "it was ended and reaped");
	TAP_OK(strstr(err.msg, "did not finish within 1 s") != NULL, "one line says so (%s)", err.msg);

	/* An output cap: yes is ended once it passes out_max. */
	s.argv = yes;
	s.timeout_ms = 20000;
	out.len = 0;
	TAP_IS_INT(dlrt_proc_run(&s, "yes", &out, &res, &err), -1, "endless output fails");
	TAP_OK(res.too_much && out.len <= 4096 && res.status != -1, "capped at out_max, reaped (%zu)",
	       out.len);

	/* ignore_end_signals: a SIGTERM (Slurm ending the step) does not end it. */
	{
		char *term[] = { "sh", "-c", "kill -TERM $$; echo alive", NULL };

		s.argv = term;
		s.ignore_end_signals = true;
		out.len = 0;
		TAP_IS_INT(dlrt_proc_run(&s, "sh", &out, &res, &err), 0, "ignore_end_signals: runs");
		TAP_OK(out.len == 6 && WIFEXITED(res.status), "it survives a SIGTERM");
		s.ignore_end_signals = false;
		out.len = 0;
		dlrt_proc_run(&s, "sh", &out, &res, &err);
		TAP_OK(WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGTERM,
		       "without it, SIGTERM ends the child (dispositions are reset)");
	}

	/* Inherited descriptors are closed in the child. */
	fd = open("/dev/null", O_RDONLY);
	s.argv = NULL;
	s.fn = fd_closed;
	s.arg = &fd;
	TAP_IS_INT(dlrt_proc_run(&s, "fd check", NULL, &res, &err), 0, "a function child runs");
	TAP_IS_INT(WEXITSTATUS(res.status), 0, "an inherited descriptor (not close-on-exec) is closed");
	close(fd);
	s.fn = say_hello;
	out.len = 0;
	TAP_IS_INT(dlrt_proc_run(&s, "hello", &out, &res, &err), 0, "a function child's output");
	TAP_OK(WEXITSTATUS(res.status) == 7 && out.len == 5, "its exit code and output come back");
	dlrt_buf_free(&out);

	/* The bounded wait and the end. */
	pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	TAP_IS_INT(dlrt_proc_wait(pid, dlrt_now_ms() + 50, &st), 0, "a running child: wait returns at the deadline");
	dlrt_proc_end(pid, false, &st);
	TAP_OK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "dlrt_proc_end: SIGTERM is enough");
	pid = fork();
	if (pid == 0) {
		signal(SIGTERM, SIG_IGN);
		pause();
		_exit(0);
	}
	usleep(100 * 1000);
	dlrt_proc_end(pid, false, &st);
	TAP_OK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "a child ignoring SIGTERM gets SIGKILL");
	TAP_IS_INT(dlrt_proc_wait(pid, dlrt_now_ms() + 50, &st), -1, "a reaped child: not ours any more");

	/* Privileges. */
	TAP_OK(dlrt_proc_drop_to_user(0, 0, NULL, 0) < 0, "never drops to uid 0");
	if (geteuid() == 0) {
		TAP_IS_INT(fork_status(drop_child), 0, "root drops to nobody with exactly its groups, for good");
		TAP_IS_INT(fork_status(drop_from_seteuid_child), 0,
			   "from user_init's state (euid user, root saved): groups set, root gone");
		s.fn = fd_closed;
		s.arg = &fd;
		s.cred = &(struct dlrt_proc_cred){ .uid = 65534, .gid = 65534 };
		fd = open("/dev/null", O_RDONLY);
		TAP_IS_INT(dlrt_proc_run(&s, "as nobody", NULL, &res, &err), 0, "a run as nobody");
		TAP_IS_INT(WEXITSTATUS(res.status), 0, "its inherited descriptor is closed too");
		close(fd);
	} else {
		status = dlrt_proc_drop_to_user(getuid(), getgid(), NULL, 0);
		TAP_IS_INT(status, 0, "not root: already the user is fine");
		TAP_OK(dlrt_proc_drop_to_user(getuid() + 1, getgid(), NULL, 0) < 0 && errno == EPERM,
		       "not root: another user is refused");
	}
	return tap_done();
}
