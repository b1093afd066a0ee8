/* proc.c - running things as the job's user from slurmstepd (proc.h).
 *
 * Everything between fork and exec uses async-signal-safe calls only:
 * slurmstepd has threads, and a lock another thread held at fork time
 * (malloc's, stdio's, NSS's) would never be released in the child. Callers
 * whose child runs a function (spec->fn) instead of a program are the
 * exception the header documents.
 */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/close_range.h>

#define GROUPS_CHECKED 256 /* groups compared one by one; more: the count only */

static bool has_group(const gid_t *list, int n, gid_t g)
{
	for (int i = 0; i < n; i++)
		if (list[i] == g)
			return true;
	return false;
}

/* Are the process's groups the n in want[]? (order and duplicates aside) */
static bool groups_are(const gid_t *want, int n)
{
	gid_t have[GROUPS_CHECKED];
	int k = getgroups(0, NULL);

	if (k < 0)
		return false;
	if (k > GROUPS_CHECKED || n > GROUPS_CHECKED)
		return k <= n; /* too many to compare here: at least none was added */
	k = getgroups(GROUPS_CHECKED, have);
	if (k < 0)
		return false;
	for (int i = 0; i < n; i++)
		if (!has_group(have, k, want[i]))
			return false;
	for (int i = 0; i < k; i++)
		if (!has_group(want, n, have[i]))
			return false;
	return true;
}

int dlrt_proc_drop_to_user(uid_t uid, gid_t gid, const gid_t *groups, int ngroups)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;

	if (uid == 0 || ngroups < 0 || (ngroups > 0 && !groups)) {
		errno = EINVAL;
		return -1;
	}
	if (getresuid(&r, &e, &s) < 0)
		return -1;
	/* slurm_spank_user_init runs with only the effective uid switched to
	 * the user; root's real and saved ids let this child take root back
	 * for a moment, which setgroups needs. */
	if (e != 0 && (r == 0 || s == 0) && setresuid((uid_t)-1, 0, (uid_t)-1) < 0)
		return -1;
	if (geteuid() == 0) {
		if (setgroups((size_t)ngroups, groups) < 0 || setresgid(gid, gid, gid) < 0 ||
		    setresuid(uid, uid, uid) < 0)
			return -1;
		if (!groups_are(groups, ngroups)) {
			errno = EPERM;
			return -1;
		}
	}
	/* Not root: only the ids it already has are possible; the checks below
	 * refuse anything else. */
	if (getresuid(&r, &e, &s) < 0 || getresgid(&rg, &eg, &sg) < 0)
		return -1;
	if (r != uid || e != uid || s != uid || rg != gid || eg != gid || sg != gid) {
		errno = EPERM;
		return -1;
	}
	/* The proof: root cannot be regained, by any id. */
	if (setresuid(0, 0, 0) == 0 || setuid(0) == 0 || (gid != 0 && setresgid(0, 0, 0) == 0)) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

int dlrt_proc_close_fds(const int *keep, int nkeep)
{
	unsigned from = 3;

	/* keep[] is tiny (one to three descriptors): ascending by selection. */
	for (int done = 0; done < nkeep; done++) {
		int next = -1;

		for (int i = 0; i < nkeep; i++)
			if (keep[i] >= (int)from && (next < 0 || keep[i] < next))
				next = keep[i];
		if (next < 0)
			break;
		if ((unsigned)next > from && close_range(from, (unsigned)next - 1, 0) < 0)
			return -1;
		if (fcntl(next, F_SETFD, 0) < 0)
			return -1;
		from = (unsigned)next + 1;
	}
	return close_range(from, ~0U, 0);
}

/* Reaps pid if it has ended (with `group`, first SIGKILLs what is left of its
 * process group, while the pid cannot have been reused). 1 reaped, 0 not
 * yet, -1 gone (ECHILD). */
static int reap_if_done(pid_t pid, bool group, int *status)
{
	siginfo_t si = { .si_pid = 0 };

	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return errno == EINTR ? 0 : -1;
	if (si.si_pid != pid)
		return 0;
	if (group)
		kill(-pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return 1;
}

static int wait_until(pid_t pid, int64_t deadline_ms, bool group, int *status)
{
	int pause_ms = 1;

	for (;;) {
		int rc = reap_if_done(pid, group, status);
		int64_t left = deadline_ms - dlrt_now_ms();

		if (rc != 0)
			return rc;
		if (left <= 0)
			return 0;
		/* Short first (most children end at once), then at most 50 ms. */
		usleep((useconds_t)(pause_ms < left ? pause_ms : left) * 1000);
		if (pause_ms < 50)
			pause_ms *= 2;
	}
}

int dlrt_proc_wait(pid_t pid, int64_t deadline_ms, int *status)
{
	*status = -1;
	return wait_until(pid, deadline_ms, false, status);
}

void dlrt_proc_end(pid_t pid, bool group, int *status)
{
	/* A child that ignores SIGTERM (ignore_end_signals) gets SIGKILL after
	 * the grace period. */
	*status = -1;
	if (group)
		kill(-pid, SIGTERM);
	kill(pid, SIGTERM);
	if (wait_until(pid, dlrt_now_ms() + DLRT_PROC_GRACE_MS, group, status) != 0)
		return;
	if (group)
		kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	wait_until(pid, dlrt_now_ms() + DLRT_PROC_GRACE_MS, group, status);
}

/* execve of argv[0], searched in envp's PATH when it has no '/' (execvpe
 * would search the caller's PATH: slurmstepd's, not the job's). */
static void exec_search(char *const argv[], char *const envp[])
{
	const char *path = "/usr/bin:/bin", *p;
	size_t nlen = strlen(argv[0]);
	char full[4096];

	if (strchr(argv[0], '/')) {
		execve(argv[0], argv, envp);
		return;
	}
	for (char *const *e = envp; e && *e; e++)
		if (!strncmp(*e, "PATH=", 5))
			path = *e + 5;
	for (p = path;; p++) {
		const char *end = strchr(p, ':');
		size_t dlen = end ? (size_t)(end - p) : strlen(p);

		if (dlen && dlen + nlen + 2 <= sizeof(full)) {
			memcpy(full, p, dlen);
			full[dlen] = '/';
			memcpy(full + dlen + 1, argv[0], nlen + 1);
			execve(full, argv, envp);
		}
		if (!end)
			return;
		p = end;
	}
}

static void __attribute__((noreturn)) child(const struct dlrt_proc_spec *s, int out_w)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;
	int null;

	if (s->cred && dlrt_proc_drop_to_user(s->cred->uid, s->cred->gid, s->cred->groups,
					      s->cred->ngroups) < 0)
		_exit(DLRT_PROC_EXIT_DROP);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out_w >= 0 ? out_w : null, 1) < 0 ||
	    dup2(out_w >= 0 && s->with_stderr ? out_w : null, 2) < 0)
		_exit(DLRT_PROC_EXIT_SETUP);
	/* slurmstepd's descriptors (task stdio, slurmd's sockets) end here. */
	if (dlrt_proc_close_fds(NULL, 0) < 0)
		_exit(DLRT_PROC_EXIT_SETUP);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &dfl, NULL);
	if (s->ignore_end_signals) {
		struct sigaction ign = { .sa_handler = SIG_IGN };

		sigaction(SIGTERM, &ign, NULL);
		sigaction(SIGINT, &ign, NULL);
		sigaction(SIGHUP, &ign, NULL);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (chdir(s->dir ? s->dir : "/") < 0)
		_exit(DLRT_PROC_EXIT_SETUP);
	if (s->fn)
		_exit(s->fn(s->arg));
	exec_search(s->argv, s->envp);
	_exit(DLRT_PROC_EXIT_EXEC);
}

/* Reads the child's output into out until EOF or the deadline. 0 at EOF,
 * -1 at the deadline (timed_out) or past out_max (too_much). */
static int read_output(int fd, int64_t deadline, size_t out_max, struct dlrt_buf *out,
		       struct dlrt_proc_result *res)
{
	char chunk[16384];
	size_t got = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - dlrt_now_ms();
		ssize_t n;

		if (left <= 0) {
			res->timed_out = true;
			return -1;
		}
		if (poll(&p, 1, (int)(left > 60000 ? 60000 : left)) < 0 && errno != EINTR) {
			res->timed_out = true; /* cannot wait: treat as the deadline */
			return -1;
		}
		if (!p.revents)
			continue;
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return 0;
		if ((size_t)n > out_max - got || dlrt_buf_append(out, chunk, (size_t)n) < 0) {
			res->too_much = true;
			return -1;
		}
		got += (size_t)n;
	}
}

int dlrt_proc_run(const struct dlrt_proc_spec *spec, const char *what, struct dlrt_buf *out,
		  struct dlrt_proc_result *res, struct dlrt_err *err)
{
	int64_t deadline = dlrt_now_ms() + spec->timeout_ms;
	int pfd[2] = { -1, -1 }, rc = 0;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	res->status = -1;
	if (out) {
		int r, w;

		if (pipe2(pfd, O_CLOEXEC) < 0)
			return dlrt_err_errno(err, errno, "cannot create a pipe to run %s", what);
		/* Above stdio, so the child's dup2 onto 1 and 2 always copies. */
		r = fcntl(pfd[0], F_DUPFD_CLOEXEC, 3);
		w = fcntl(pfd[1], F_DUPFD_CLOEXEC, 3);
		close(pfd[0]);
		close(pfd[1]);
		pfd[0] = r;
		pfd[1] = w;
		if (r < 0 || w < 0) {
			rc = dlrt_err_errno(err, errno, "cannot create a pipe to run %s", what);
			goto out;
		}
	}
	pid = fork();
	if (pid < 0) {
		rc = dlrt_err_errno(err, errno, "cannot fork to run %s", what);
		goto out;
	}
	if (pid == 0)
		child(spec, pfd[1]);
	if (pfd[1] >= 0) {
		close(pfd[1]);
		pfd[1] = -1;
	}
	if (out && read_output(pfd[0], deadline, spec->out_max, out, res) < 0) {
		dlrt_proc_end(pid, false, &res->status);
		if (!res->too_much)
			goto late;
		rc = dlrt_err_set(err, "%s wrote more than %zu bytes, so it was ended", what,
				  spec->out_max);
		goto out;
	}
	if (dlrt_proc_wait(pid, deadline, &res->status) == 0) {
		res->timed_out = true;
		dlrt_proc_end(pid, false, &res->status);
		goto late;
	}
	goto out;
late:
	rc = dlrt_err_set(err, "%s did not finish within %d s, so it was ended", what,
			  (spec->timeout_ms + 999) / 1000);
out:
	for (int i = 0; i < 2; i++)
		if (pfd[i] >= 0)
			close(pfd[i]);
	return rc;
}

const char *dlrt_proc_status_text(int status, char *buf, size_t len)
{
	if (status == -1)
		return "not reaped";
	if (WIFSIGNALED(status)) {
		snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
		return buf;
	}
	switch (WEXITSTATUS(status)) {
	case DLRT_PROC_EXIT_DROP: return "could not switch to the job's user";
	case DLRT_PROC_EXIT_SETUP: return "could not set up its descriptors or folder";
	case DLRT_PROC_EXIT_EXEC: return "could not execute the program";
	default:
		snprintf(buf, len, "exit %d", WEXITSTATUS(status));
		return buf;
	}
}
