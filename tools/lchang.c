/* lchang.c - the hang watch (lchang.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <slurm/slurm.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/slurm_compat.h"
#include "lchang.h"
#include "lcproc.h"
#include "lcprogress.h"
#include "jobpolicy/hangwhere.h"

#define STACK_MAX 65536 /* of a task's gdb output, kept to find where it is */
#define WHERE_WAIT_S 60 /* task 0's node waits this long for the others' positions */

struct io_sum {
	uint64_t *sum;
};

static void add_child_io(pid_t child, size_t i, void *ctx)
{
	struct io_sum *s = ctx;

	s->sum[i] += dlrt_lcproc_wchar(child);
}

/* This node's progress: a task (or a child of it: a shell's program, an
 * agent's workers) wrote something, or touched its DLRT_HEARTBEAT file. */
static void node_progress(struct dlrt_lchang *h, const struct dlrt_lcw *w, time_t now)
{
	static pid_t pids[DLRT_LC_MAX_TASKS];
	uint64_t sum[DLRT_LC_MAX_TASKS] = { 0 };
	struct io_sum s = { sum };
	uint32_t nt = dlrt_lcw_ntasks(w);

	for (uint32_t t = 0; t < nt; t++) {
		pids[t] = w->page->pid[t];
		if (pids[t] > 0)
			sum[t] = dlrt_lcproc_wchar(pids[t]);
	}
	dlrt_lcproc_children(pids, nt, add_child_io, &s);
	for (uint32_t t = 0; t < nt; t++) {
		char hb[4200];
		struct stat st;

		if (pids[t] <= 0)
			continue;
		if (sum[t] != h->io[t]) {
			h->io[t] = sum[t];
			h->node_last = now;
		}
		snprintf(hb, sizeof(hb), "%s/.heartbeat.%u.%d", h->progress_dir, w->step,
			 (int)w->page->rank[t]);
		if (lstat(hb, &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime > h->node_last)
			h->node_last = st.st_mtime > now ? now : st.st_mtime;
	}
}

/* Every node writes its last progress into the job's checkpoint folder and
 * reads the others': the step's last progress is the latest of them. */
static time_t step_progress(struct dlrt_lchang *h, const struct dlrt_lcw *w)
{
	if (h->node_last != h->written_last &&
	    dlrt_lcprogress_write(h->progress_dir, w->step, w->node, h->node_last) == 0)
		h->written_last = h->node_last;
	return dlrt_lcprogress_latest(h->progress_dir, w->step, h->node_last);
}

/* gdb's output read into text (the first STACK_MAX bytes) and copied to fd. */
static size_t copy_stack(int from, int fd, char *text)
{
	size_t len = 0;

	for (;;) {
		char chunk[4096];
		ssize_t n = read(from, chunk, sizeof(chunk));
		size_t k;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (fd >= 0 && write(fd, chunk, (size_t)n) < 0) {
			/* the task's stderr is gone: its position is still wanted */
		}
		k = (size_t)n < STACK_MAX - len ? (size_t)n : STACK_MAX - len;
		memcpy(text + len, chunk, k);
		len += k;
	}
	return len;
}

/* The native stack of pid (gdb, where the node has it) onto fd, and where
 * its main thread is into where[size] ("" when it cannot be told). gdb's
 * output comes through a pipe. Bounded (alarm). */
static void native_stack(pid_t pid, int fd, char *where, size_t size)
{
	static const char *const gdbs[] = { "/usr/bin/gdb", "/usr/local/bin/gdb" };
	static char text[STACK_MAX];
	char p[16];
	pid_t c;
	int status, pfd[2];
	size_t len;

	where[0] = '\0';
	for (size_t i = 0; i < sizeof(gdbs) / sizeof(*gdbs); i++) {
		if (access(gdbs[i], X_OK) < 0 || pipe2(pfd, O_CLOEXEC) < 0)
			continue;
		snprintf(p, sizeof(p), "%d", (int)pid);
		c = fork();
		if (c == 0) {
			char *argv[] = { (char *)gdbs[i], "-nx", "-batch", "-p", p, "-ex",
					 "thread apply all bt 12", NULL };
			char *envp[] = { "PATH=/usr/bin:/bin", "LC_ALL=C", NULL };
			int nul = open("/dev/null", O_RDONLY);

			dup2(nul, 0);
			dup2(pfd[1], 1);
			dup2(pfd[1], 2);
			alarm(20);
			execve(argv[0], argv, envp);
			_exit(127);
		}
		close(pfd[1]);
		len = c > 0 ? copy_stack(pfd[0], fd, text) : 0;
		close(pfd[0]);
		while (c > 0 && waitpid(c, &status, 0) < 0 && errno == EINTR)
			;
		if (dlrt_hw_from_gdb(text, len, (int)pid, where, size) < 0)
			where[0] = '\0';
		return;
	}
}

/* The prefix of this attempt's and step's position files in the checkpoint
 * folder (a requeued job runs its steps again under the same numbers). */
static void where_prefix(const struct dlrt_lcw *w, char *buf, size_t size)
{
	snprintf(buf, size, ".where.%u.%u.", w->attempt, w->step);
}

/* This node's tasks' positions into the job's checkpoint folder, for task
 * 0's node to read. */
static void share_positions(const struct dlrt_lchang *h, const struct dlrt_lcw *w,
			    const struct dlrt_hw_task *t, size_t n)
{
	char prefix[64], name[400];

	where_prefix(w, prefix, sizeof(prefix));
	snprintf(name, sizeof(name), "%s%s", prefix, w->node);
	dlrt_hw_share(h->progress_dir, name, t, n);
}

static void say(int fd, const char *line)
{
	if (fd >= 0 && write(fd, line, strlen(line)) < 0) {
		/* the task's stderr is gone */
	}
}

/* Task 0's node: waits (at most WHERE_WAIT_S) for the positions of all the
 * step's tasks, prints the line that compares them on fd (task 0's stderr),
 * and marks the comparison done for the other nodes, which abort their
 * tasks only then (an aborted rank ends the others' collectives). */
static void compare_positions(const struct dlrt_lchang *h, const struct dlrt_lcw *w, int fd)
{
	static struct dlrt_hw_task t[DLRT_LC_MAX_TASKS];
	char line[1024], path[4400], prefix[64];
	time_t deadline = time(NULL) + WHERE_WAIT_S;
	size_t n, len;
	int m;

	where_prefix(w, prefix, sizeof(prefix));
	for (;;) {
		n = dlrt_hw_read_dir(h->progress_dir, prefix, t, DLRT_LC_MAX_TASKS);
		if (!h->step_tasks || n >= h->step_tasks || time(NULL) >= deadline)
			break;
		usleep(250000);
	}
	len = dlrt_hw_compare(t, n, line, sizeof(line));
	if (len && fd >= 0 && write(fd, line, len) < 0) {
		/* task 0's stderr is gone */
	}
	if (h->step_tasks && n < h->step_tasks) {
		snprintf(line, sizeof(line), "dlrt: hang: the positions of %u of the step's %u tasks "
			 "did not come within %d s (a node without gdb, or a slow one); compared "
			 "those that came\n", h->step_tasks - (uint32_t)n, h->step_tasks,
			 WHERE_WAIT_S);
		say(fd, line);
	}
	snprintf(path, sizeof(path), "%s/%sdone", h->progress_dir, prefix);
	m = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (m >= 0)
		close(m);
}

/* The other nodes: until task 0's node compared the positions (bounded). */
static void wait_compared(const struct dlrt_lchang *h, const struct dlrt_lcw *w)
{
	char path[4400], prefix[64];
	time_t deadline = time(NULL) + WHERE_WAIT_S + 30;
	struct stat st;

	where_prefix(w, prefix, sizeof(prefix));
	snprintf(path, sizeof(path), "%s/%sdone", h->progress_dir, prefix);
	while (lstat(path, &st) < 0 && time(NULL) < deadline)
		usleep(250000);
}

/* Each task's stderr (-1: gone) into fds; whether task 0 is here (its
 * descriptor into *fd0), after the line that says the step hung on it. */
static bool open_stderrs(const struct dlrt_lchang *h, const struct dlrt_lcw *w, long quiet,
			 int *fds, int *fd0)
{
	uint32_t nt = dlrt_lcw_ntasks(w);
	bool has0 = false;
	char line[512];

	*fd0 = -1;
	for (uint32_t t = 0; t < nt; t++) {
		char path[64];

		fds[t] = -1;
		if (w->page->pid[t] <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd/2", (int)w->page->pid[t]);
		fds[t] = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
		has0 |= w->page->rank[t] == 0;
		if (w->page->rank[t] == 0 && fds[t] >= 0) {
			*fd0 = fds[t];
			snprintf(line, sizeof(line), "dlrt: step %u.%u: no task showed progress (output, "
				 "or a touch of DLRT_HEARTBEAT) for %ld s (--dl-hang-timeout=%u): "
				 "ending the step; each task's stacks follow\n", w->job, w->step,
				 quiet, h->timeout);
			say(fds[t], line);
		}
	}
	return has0;
}

/* The step made no progress for --dl-hang-timeout. Task 0's node says so in
 * one line on task 0's stderr first, the other nodes start 2 s later. Then
 * each task's stacks on its own stderr: gdb's native one, from which its
 * position is taken; the nodes share the positions and task 0's node prints
 * the line naming the tasks that are not where the others are. Then each
 * task's Python stack through faulthandler (SIGABRT, with the
 * PYTHONFAULTHANDLER=1 dlrt set); once the first task is aborted Slurm may
 * end the step, and this watcher with it. The record makes --dl-requeue run
 * the job again. */
static void report_hang(struct dlrt_lchang *h, const struct dlrt_lcw *w, time_t last, time_t now)
{
	static struct dlrt_hw_task mine[DLRT_LC_MAX_TASKS];
	static int fds[DLRT_LC_MAX_TASKS];
	uint32_t nt = dlrt_lcw_ntasks(w);
	long quiet = (long)(now - last);
	char line[512];
	size_t k = 0;
	int fd0;
	bool has0; /* task 0 is here: this node compares and ends the step */

	h->hung = true;
	dlrt_lcw_record(w, "attempt=%u warning signal=none reason=hang step=%u node=%s "
			"no-progress=%lds", w->attempt, w->step, w->node, quiet);
	has0 = open_stderrs(h, w, quiet, fds, &fd0);
	if (!has0)
		sleep(2);
	for (uint32_t t = 0; t < nt; t++) {
		pid_t pid = w->page->pid[t];
		struct dlrt_hw_task *ht = &mine[k];

		if (pid <= 0)
			continue;
		snprintf(line, sizeof(line), "dlrt: hang: task %d (%s) on %s, pid %d: no progress in "
			 "the step for %ld s; its stacks follow\n", (int)w->page->rank[t],
			 w->page->role[t], w->node, (int)pid, quiet);
		*ht = (struct dlrt_hw_task){ .rank = w->page->rank[t] };
		snprintf(ht->role, sizeof(ht->role), "%.15s", w->page->role[t]);
		snprintf(ht->node, sizeof(ht->node), "%s", w->node);
		/* A task whose stderr is gone still gets its position taken. */
		say(fds[t], line);
		native_stack(pid, fds[t], ht->where, sizeof(ht->where));
		k++;
	}
	share_positions(h, w, mine, k);
	if (has0)
		compare_positions(h, w, fd0);
	else
		wait_compared(h, w);
	for (uint32_t t = 0; t < nt; t++) {
		if (w->page->pid[t] > 0)
			kill(w->page->pid[t], SIGABRT);
		if (fds[t] >= 0)
			close(fds[t]);
	}
	if (!has0)
		return;
	sleep(3); /* the tracebacks first */
	dlrt_slurm_signal_step(w->job, w->step, SIGKILL);
}

/* Whether the checkpoint folder is the user's own, 0700 as the tasks made it
 * (spank/lifecycle.c, common/privdir.h): in a shared base another user may
 * have taken its name first, and then the tasks are refused; this watcher,
 * started before them, must not write into or read from that folder either. */
static bool progress_dir_ours(const char *dir)
{
	struct stat st;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = fstat(fd, &st) == 0 && st.st_uid == getuid() && !(st.st_mode & 077);
	close(fd);
	return ok;
}

int dlrt_lchang_tick(struct dlrt_lchang *h, const struct dlrt_lcw *w)
{
	time_t now = time(NULL), last;

	if (!h->timeout || !w->page || h->hung || !h->progress_dir)
		return -1;
	if (progress_dir_ours(h->progress_dir)) {
		if (!h->node_last)
			h->node_last = h->written_last = now;
		node_progress(h, w, now);
		last = step_progress(h, w);
		if (dlrt_lc_hung(last, now, h->timeout)) {
			report_hang(h, w, last, now);
			return -1;
		}
	}
	return (int)(h->timeout / 5) < 2 ? 2 : (int)(h->timeout / 5);
}
