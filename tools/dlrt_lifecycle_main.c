/* dlrt-lifecycle - the per-node watcher of a job's time limit and preemption
 * (--dl-signal, --dl-requeue; docs/checkpoint.md).
 *
 * Started by the plugin in slurmstepd (spank/lifecycle.c), as the job user,
 * like a node service: on every node of a dlrt step, and in the batch step of
 * a job with --dl-requeue. It asks slurmctld for the job (slurm_load_job)
 * every 10 s, and at the moments that matter, so a limit changed with
 * scontrol update and a preemption (preempt_time) are seen. Once the warning
 * is due it signals the node's tasks once (their pids are on --pids-fd's
 * page, written by each task at the end of task_init), records it in the
 * job's record (the --dl-retries record, read back by the batch step's
 * requeue decision), and with --verbose prints a line on each task's stderr.
 * The batch node's watcher (--requeue N) requeues a job still running a few
 * seconds before its time limit (a job that reaches it is TIMEOUT, which
 * Slurm never requeues). With --hang-timeout it follows its tasks' progress
 * (bytes written, DLRT_HEARTBEAT), shares it with the other nodes through
 * the job's checkpoint folder, and ends a step that made none for that long,
 * with each task's stacks. It exits when --lifetime-fd reaches end of file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <slurm/slurm.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/parse.h"
#include "common/privdir.h"
#include "common/slurm_compat.h"
#include "jobpolicy/hangwhere.h"
#include "jobpolicy/lifecycle.h"
#include "jobpolicy/warnsig.h"
#include "logs/logline.h"

#define PROG "dlrt-lifecycle"
#define RECORD "dlrt-retries.log"
#define WARN_SETTLE_S 30 /* a task without a handler gets the warning this late */

struct watch {
	uint32_t job, step, attempt;
	int sig;
	struct dlrt_lc_policy pol;
	const char *node, *record_base;
	bool children, verbose, batch;
	struct dlrt_lc_page *page;
	int life_fd;
	char hostname[256];
	bool warned, requeue_done, load_failed;
	bool pending;                    /* due, and a task has not got it yet */
	time_t first_due;                /* when the warning was first due */
	time_t settle_from;              /* the latest start of a task still waited for */
	bool sent[DLRT_LC_MAX_TASKS];    /* the tasks that got the warning */
	int32_t seen_pid[DLRT_LC_MAX_TASKS]; /* each task's pid when first seen on the page */
	time_t seen[DLRT_LC_MAX_TASKS];  /* and when: a task's 30 s start then, or at first_due */
	bool attempt_known; /* --attempt given, else the first answer's restart count */
	/* --dl-hang-timeout */
	uint32_t hang;
	const char *progress_dir; /* the job's checkpoint folder: heartbeats, nodes' progress */
	uint64_t io[DLRT_LC_MAX_TASKS]; /* each task's (and its children's) bytes written */
	time_t node_last, written_last; /* this node's last progress; what its file says */
	bool hung;
	uint32_t step_tasks; /* the step's tasks on all nodes: the positions to wait for */
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " --lifetime-fd FD --ready-fd FD --job J --step S [--attempt A]\n"
"                      --signal SIG@SECS [options]\n"
"Warns a job's tasks on this node before its time limit or when it is preempted.\n"
"\n"
"  --attempt A          the job's restart count of this run (default: slurmctld's\n"
"                       answer, read once)\n"
"  --pids-fd FD         the node's task page (the tasks to signal)\n"
"  --children           signal each task's children (an agent's workers), not the task\n"
"  --requeue N          batch step: requeue a job still running just before its limit,\n"
"                       while its restart count is below N\n"
"  --node NAME          this node, for the record\n"
"  --record-base DIR    the job's record is DIR/<job>/" RECORD "\n"
"  --verbose            one line on each task's stderr when the warning is sent\n"
"  --hang-timeout SECS  end the step when no task of it made progress for SECS\n"
"                       (output, files, DLRT_HEARTBEAT), with each task's stacks\n"
"  --progress-dir DIR   the job's checkpoint folder: heartbeats and each node's progress\n"
"  --step-tasks N       the step's tasks on all nodes (the hang report compares where\n"
"                       they are)\n"
"Started by dlrt's plugin; see dlrt(7), --dl-signal and --dl-requeue.\n");
}

/* One line in the job's record (the folder is created and checked as the
 * user, common/privdir.h). Nothing when there is no base. */
static void record(const struct watch *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void record(const struct watch *w, const char *fmt, ...)
{
	char line[1024], name[16], shown[2400];
	struct dlrt_privdir_jobdir jd;
	struct dlrt_err err = { "" };
	va_list ap;
	int base, dir, fd, n;

	if (!w->record_base || !w->record_base[0])
		return;
	va_start(ap, fmt);
	n = (int)dlrt_logline_vformat(line, sizeof(line), fmt, ap);
	va_end(ap);
	snprintf(name, sizeof(name), "%u", w->job);
	base = dlrt_privdir_base(w->record_base, "--dl-signal", &err);
	dir = base < 0 ? -1 : dlrt_privdir_job(base, w->record_base, name, "--dl-signal", &jd,
					      &err);
	snprintf(shown, sizeof(shown), "%s/%s/" RECORD, w->record_base, name);
	fd = dir < 0 ? -1 : dlrt_privdir_append(dir, RECORD, shown, "--dl-signal", &err);
	if (fd < 0 || write(fd, line, (size_t)n) != n)
		fprintf(stderr, PROG ": cannot record \"%.*s\": %s\n", n - 1, line,
			err.msg[0] ? err.msg : strerror(errno));
	if (fd >= 0)
		close(fd);
	if (dir >= 0)
		close(dir);
	if (base >= 0)
		close(base);
}

/* The job as slurmctld sees it now; -1 if it cannot tell. */
static int load_job(struct watch *w, struct dlrt_lc_job *j)
{
	job_info_msg_t *msg = NULL;
	int rc = -1, e;

	j->now = time(NULL);
	/* libslurm's error is in errno (Slurm 24.11 has no slurm_get_errno). */
	errno = 0;
	if (dlrt_slurm_load_job(&msg, w->job, SHOW_ALL) == SLURM_SUCCESS && msg &&
	    msg->record_count >= 1) {
		const job_info_t *ji = &msg->job_array[0];

		j->end_time = ji->end_time;
		j->preempt_time = ji->preempt_time;
		j->running = (ji->job_state & JOB_STATE_BASE) == JOB_RUNNING;
		j->restart_cnt = ji->restart_cnt;
		rc = 0;
	}
	e = errno;
	if (msg)
		slurm_free_job_info_msg(msg);
	if (rc < 0 && !w->load_failed)
		fprintf(stderr, PROG ": job %u: slurmctld does not answer (%s); asking again\n",
			w->job, slurm_strerror(e));
	w->load_failed = rc < 0;
	return rc;
}

/* With --verbose, the line goes to the task's own stderr (a process of the
 * job's user, like this one). */
static void tell_task(pid_t pid, const char *line)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/fd/2", (int)pid);
	fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, line, strlen(line)) < 0) {
		/* a task that closed its stderr does not get the line */
	}
	close(fd);
}

/* Whether pid catches or ignores sig (SigCgt, SigIgn in /proc/PID/status):
 * a program still starting (exec, imports) has no handler yet, and the
 * signal's default action would end it. */
static bool handles(pid_t pid, int sig)
{
	char path[64], buf[4096], *p;
	unsigned long long cgt = 0, ign = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if ((p = strstr(buf, "SigIgn:")))
		sscanf(p + 7, "%llx", &ign);
	if ((p = strstr(buf, "SigCgt:")))
		sscanf(p + 7, "%llx", &cgt);
	return ((cgt | ign) >> (sig - 1)) & 1;
}

/* Signals the children of `parent` (an agent's workers); their number. */
static int signal_children(pid_t parent, int sig)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char path[64], buf[512], *rp;
		uint32_t pid;
		long ppid;
		ssize_t len;
		int fd;

		if (dlrt_parse_u32(e->d_name, 1, 1u << 30, &pid) < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%u/stat", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		/* "pid (comm) state ppid ...": comm may hold spaces and ')' */
		rp = strrchr(buf, ')');
		if (rp && sscanf(rp + 1, " %*c %ld", &ppid) == 1 && ppid == parent &&
		    handles((pid_t)pid, sig) && kill((pid_t)pid, sig) == 0)
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

/* Once the warning is due: every task of the node gets it once, those that
 * registered since the last look too (a step started after the warning was
 * due; a torchrun agent whose workers came later). */
static void send_warning(struct watch *w, const struct dlrt_lc_job *j, const char *why)
{
	char name[16], line[512];
	const char *sn = dlrt_warnsig_name(w->sig, name, sizeof(name));
	long left = j->end_time > 0 ? (long)(j->end_time - j->now) : -1;
	uint32_t nt = w->page ? (w->page->ntasks < DLRT_LC_MAX_TASKS ? w->page->ntasks :
				 DLRT_LC_MAX_TASKS) : 0;
	bool first = !w->warned;
	int ntasks = 0, nsent = 0;

	if (first)
		w->first_due = w->settle_from = j->now;
	w->warned = true;
	w->pending = false;
	for (uint32_t t = 0; t < nt; t++) {
		pid_t pid = w->page->pid[t];
		time_t since;
		int n = 0;

		if (w->sent[t])
			continue;
		/* A task that registers later (a slow address exchange, a step whose
		 * nodes start apart) has its 30 s from when it was first seen. */
		if (pid > 0 && w->seen_pid[t] != pid) {
			w->seen_pid[t] = pid;
			w->seen[t] = j->now;
		}
		since = pid > 0 && w->seen[t] > w->first_due ? w->seen[t] : w->first_due;
		/* A task that does not handle the signal yet (still starting) gets it
		 * once it does. One that still does not WARN_SETTLE_S after the
		 * warning was due, or after it started if that was later, never gets
		 * it: the signal's default action would end it minutes early, with
		 * nothing saved (a program that finishes just before its limit, or
		 * one that has no checkpoint yet). */
		if (pid > 0 && w->children)
			n = signal_children(pid, w->sig);
		else if (pid > 0 && handles(pid, w->sig))
			n = kill(pid, w->sig) == 0;
		if (n <= 0 && pid > 0 && j->now - since >= WARN_SETTLE_S) {
			w->sent[t] = true;
			record(w, "attempt=%u warning signal=%s not sent to task %u node=%s step=%u: "
			       "it does not handle SIG%s, which would end it", w->attempt, sn,
			       (unsigned)w->page->rank[t], w->node, w->step, sn);
			continue;
		}
		if (n <= 0) {
			w->pending = true;
			if (since > w->settle_from)
				w->settle_from = since;
			continue;
		}
		w->sent[t] = true;
		ntasks++;
		nsent += n;
	}
	if (w->batch) {
		if (first)
			record(w, "attempt=%u warning signal=%s reason=%s left=%lds batch node=%s",
			       w->attempt, sn, why, left, w->node);
		return;
	}
	if (!nsent)
		return;
	record(w, "attempt=%u warning signal=%s reason=%s left=%lds node=%s step=%u "
	       "processes=%d", w->attempt, sn, why, left, w->node, w->step, nsent);
	snprintf(line, sizeof(line), "dlrt: %s: SIG%s to %d process%s of %d task%s of step %u: "
		 "%s (the time limit is in %ld s; --dl-signal=%s@%u)\n", w->node, sn, nsent,
		 nsent == 1 ? "" : "es", ntasks, ntasks == 1 ? "" : "s", w->step, why, left, sn,
		 w->pol.before);
	for (uint32_t t = 0; w->verbose && t < nt; t++)
		if (w->sent[t] && w->page->pid[t] > 0)
			tell_task(w->page->pid[t], line);
}

static void requeue_now(struct watch *w, const struct dlrt_lc_job *j)
{
	enum dlrt_lc_requeue r = dlrt_lc_requeue_due(j, &w->pol);

	if (r == DLRT_LC_WAIT || w->requeue_done)
		return;
	w->requeue_done = true;
	if (r == DLRT_LC_NO_MORE) {
		record(w, "attempt=%u still running %ld s before its time limit: no requeue left "
		       "(--dl-requeue=%u)", w->attempt, (long)(j->end_time - j->now), w->pol.requeue);
		return;
	}
	if (dlrt_slurm_requeue(w->job, 0) != SLURM_SUCCESS) {
		record(w, "attempt=%u requeue refused: %s (was the job submitted with "
		       "--no-requeue?)", w->attempt, slurm_strerror(errno));
		return;
	}
	record(w, "attempt=%u requeued reason=time-limit left=%lds next-attempt=%u", w->attempt,
	       (long)(j->end_time - j->now), w->attempt + 1);
}

/* Bytes a process wrote (write(2) to its output, files, sockets): its
 * "wchar" in /proc/PID/io, readable for a process of the same user. */
static uint64_t proc_wchar(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	p = strstr(buf, "wchar: ");
	if (p)
		sscanf(p + 7, "%llu", &v);
	return v;
}

/* The parent of pid, from /proc/PID/stat; -1 if gone. */
static long proc_ppid(const char *pid)
{
	char path[300], buf[512], *rp;
	long ppid = -1;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = '\0';
	rp = strrchr(buf, ')');
	if (!rp || sscanf(rp + 1, " %*c %ld", &ppid) != 1)
		return -1;
	return ppid;
}

/* This node's progress: a task (or a child of it: a shell's program, an
 * agent's workers) wrote something, or touched its DLRT_HEARTBEAT file. */
static void node_progress(struct watch *w, time_t now)
{
	uint64_t sum[DLRT_LC_MAX_TASKS] = { 0 };
	uint32_t nt = w->page->ntasks < DLRT_LC_MAX_TASKS ? w->page->ntasks : DLRT_LC_MAX_TASKS;
	DIR *d = opendir("/proc");
	struct dirent *e;

	for (uint32_t t = 0; t < nt; t++)
		if (w->page->pid[t] > 0)
			sum[t] = proc_wchar(w->page->pid[t]);
	while (d && (e = readdir(d))) {
		long ppid;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		ppid = proc_ppid(e->d_name);
		for (uint32_t t = 0; ppid > 0 && t < nt; t++)
			if (w->page->pid[t] == ppid)
				sum[t] += proc_wchar((pid_t)atoi(e->d_name));
	}
	if (d)
		closedir(d);
	for (uint32_t t = 0; t < nt; t++) {
		char hb[4200];
		struct stat st;

		if (w->page->pid[t] <= 0)
			continue;
		if (sum[t] != w->io[t]) {
			w->io[t] = sum[t];
			w->node_last = now;
		}
		snprintf(hb, sizeof(hb), "%s/.heartbeat.%u.%d", w->progress_dir, w->step,
			 (int)w->page->rank[t]);
		if (lstat(hb, &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime > w->node_last)
			w->node_last = st.st_mtime > now ? now : st.st_mtime;
	}
}

/* Every node of the step writes its last progress into the job's checkpoint
 * folder (the user's, 0700, on a filesystem the nodes share) and reads the
 * others': the step's last progress is the latest of them. */
static time_t step_progress(struct watch *w)
{
	char name[512], tmp[4500], path[4400], buf[32], prefix[64];
	time_t last = w->node_last;
	DIR *d;
	struct dirent *e;
	int fd;

	snprintf(prefix, sizeof(prefix), ".progress.%u.", w->step);
	if (w->node_last != w->written_last) {
		snprintf(name, sizeof(name), "%s%s", prefix, w->node);
		snprintf(path, sizeof(path), "%s/%s", w->progress_dir, name);
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			int n = snprintf(buf, sizeof(buf), "%lld\n", (long long)w->node_last);

			if (write(fd, buf, (size_t)n) == n && close(fd) == 0 && rename(tmp, path) == 0)
				w->written_last = w->node_last;
			else
				close(fd);
		}
	}
	d = opendir(w->progress_dir);
	while (d && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		long long v = 0;
		ssize_t n;

		if (strncmp(e->d_name, prefix, strlen(prefix)) || (len > 4 &&
		    !strcmp(e->d_name + len - 4, ".tmp")))
			continue;
		fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		if (sscanf(buf, "%lld", &v) == 1 && v > (long long)last)
			last = (time_t)v;
	}
	if (d)
		closedir(d);
	return last;
}

#define STACK_MAX 65536 /* of a task's gdb output, kept to find where it is */

/* The native stack of pid (gdb, where the node has it) onto fd, and where
 * its main thread is into where[size] ("" when it cannot be told). gdb's
 * output comes through a pipe: the first STACK_MAX bytes are read for the
 * position, all of it goes on to fd. Bounded (alarm). */
static void native_stack(pid_t pid, int fd, char *where, size_t size)
{
	static const char *const gdbs[] = { "/usr/bin/gdb", "/usr/local/bin/gdb" };
	static char text[STACK_MAX];
	size_t len = 0;
	char p[16];
	pid_t c;
	int status, pfd[2];
	ssize_t n;

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
		while (c > 0) {
			char chunk[4096];
			size_t k;

			n = read(pfd[0], chunk, sizeof(chunk));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			if (write(fd, chunk, (size_t)n) < 0) {
				/* the task's stderr is gone: its position is still wanted */
			}
			k = (size_t)n < STACK_MAX - len ? (size_t)n : STACK_MAX - len;
			memcpy(text + len, chunk, k);
			len += k;
		}
		close(pfd[0]);
		while (c > 0 && waitpid(c, &status, 0) < 0 && errno == EINTR)
			;
		if (dlrt_hw_from_gdb(text, len, (int)pid, where, size) < 0)
			where[0] = '\0';
		return;
	}
}

#define WHERE_WAIT_S 60      /* task 0's node waits this long for the others' positions */

/* The prefix of this attempt's and step's position files in the checkpoint
 * folder (a requeued job runs its steps again under the same numbers). */
static void where_prefix(const struct watch *w, char *buf, size_t size)
{
	snprintf(buf, size, ".where.%u.%u.", w->attempt, w->step);
}

/* This node's tasks' positions into the job's checkpoint folder, for task
 * 0's node to read. */
static void share_positions(const struct watch *w, const struct dlrt_hw_task *t, size_t n)
{
	char prefix[64], name[400];

	where_prefix(w, prefix, sizeof(prefix));
	snprintf(name, sizeof(name), "%s%s", prefix, w->node);
	dlrt_hw_share(w->progress_dir, name, t, n);
}

/* Task 0's node: waits (at most WHERE_WAIT_S) for the positions of all the
 * step's tasks, prints the line that compares them on fd (task 0's stderr),
 * and marks the comparison done for the other nodes, which abort their
 * tasks only then (an aborted rank ends the others' collectives). */
static void compare_positions(const struct watch *w, int fd)
{
	static struct dlrt_hw_task t[DLRT_LC_MAX_TASKS];
	char line[1024], path[4400], prefix[64];
	time_t deadline = time(NULL) + WHERE_WAIT_S;
	size_t n, len;
	int m;

	where_prefix(w, prefix, sizeof(prefix));
	for (;;) {
		n = dlrt_hw_read_dir(w->progress_dir, prefix, t, DLRT_LC_MAX_TASKS);
		if (!w->step_tasks || n >= w->step_tasks || time(NULL) >= deadline)
			break;
		usleep(250000);
	}
	len = dlrt_hw_compare(t, n, line, sizeof(line));
	if (len && fd >= 0 && write(fd, line, len) < 0) {
		/* task 0's stderr is gone */
	}
	if (w->step_tasks && n < w->step_tasks && fd >= 0) {
		snprintf(line, sizeof(line), "dlrt: hang: the positions of %u of the step's %u tasks "
			 "did not come within %d s (a node without gdb, or a slow one); compared "
			 "those that came\n", w->step_tasks - (uint32_t)n, w->step_tasks, WHERE_WAIT_S);
		if (write(fd, line, strlen(line)) < 0) {
			/* as above */
		}
	}
	snprintf(path, sizeof(path), "%s/%sdone", w->progress_dir, prefix);
	m = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (m >= 0)
		close(m);
}

/* The other nodes: until task 0's node compared the positions (bounded). */
static void wait_compared(const struct watch *w)
{
	char path[4400], prefix[64];
	time_t deadline = time(NULL) + WHERE_WAIT_S + 30;
	struct stat st;

	where_prefix(w, prefix, sizeof(prefix));
	snprintf(path, sizeof(path), "%s/%sdone", w->progress_dir, prefix);
	while (lstat(path, &st) < 0 && time(NULL) < deadline)
		usleep(250000);
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
static void report_hang(struct watch *w, time_t last, time_t now)
{
	static struct dlrt_hw_task mine[DLRT_LC_MAX_TASKS];
	uint32_t nt = w->page->ntasks < DLRT_LC_MAX_TASKS ? w->page->ntasks : DLRT_LC_MAX_TASKS;
	int fds[DLRT_LC_MAX_TASKS], fd0 = -1;
	bool has0 = false; /* task 0 is here: this node compares and ends the step */
	char line[512];
	size_t k = 0;

	w->hung = true;
	record(w, "attempt=%u warning signal=none reason=hang step=%u node=%s no-progress=%llds",
	       w->attempt, w->step, w->node, (long long)(now - last));
	for (uint32_t t = 0; t < nt; t++) {
		char path[64];

		fds[t] = -1;
		if (w->page->pid[t] <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd/2", (int)w->page->pid[t]);
		fds[t] = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
		has0 |= w->page->rank[t] == 0;
		if (w->page->rank[t] == 0 && fds[t] >= 0) {
			fd0 = fds[t];
			snprintf(line, sizeof(line), "dlrt: step %u.%u: no task showed progress (output, "
				 "or a touch of DLRT_HEARTBEAT) for %lld s (--dl-hang-timeout=%u): "
				 "ending the step; each task's stacks follow\n", w->job, w->step,
				 (long long)(now - last), w->hang);
			if (write(fds[t], line, strlen(line)) < 0) {
				/* nothing more to do */
			}
		}
	}
	if (!has0)
		sleep(2);
	for (uint32_t t = 0; t < nt; t++) {
		pid_t pid = w->page->pid[t];
		struct dlrt_hw_task *h = &mine[k];

		if (pid <= 0)
			continue;
		snprintf(line, sizeof(line), "dlrt: hang: task %d (%s) on %s, pid %d: no progress in "
			 "the step for %lld s; its stacks follow\n", (int)w->page->rank[t],
			 w->page->role[t], w->node, (int)pid, (long long)(now - last));
		*h = (struct dlrt_hw_task){ .rank = w->page->rank[t] };
		snprintf(h->role, sizeof(h->role), "%.15s", w->page->role[t]);
		snprintf(h->node, sizeof(h->node), "%s", w->node);
		/* A task whose stderr is gone still gets its position taken. */
		if (fds[t] >= 0 && write(fds[t], line, strlen(line)) < 0) {
			/* as above */
		}
		native_stack(pid, fds[t], h->where, sizeof(h->where));
		k++;
	}
	share_positions(w, mine, k);
	if (has0)
		compare_positions(w, fd0);
	else
		wait_compared(w);
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
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = fstat(fd, &st) == 0 && st.st_uid == getuid() && !(st.st_mode & 077);
	close(fd);
	return ok;
}

static void watch_hang(struct watch *w)
{
	time_t now = time(NULL), last;

	if (!w->hang || !w->page || w->hung || !w->progress_dir ||
	    !progress_dir_ours(w->progress_dir))
		return;
	if (!w->node_last)
		w->node_last = w->written_last = now;
	node_progress(w, now);
	last = step_progress(w);
	if (dlrt_lc_hung(last, now, w->hang))
		report_hang(w, last, now);
}

/* Sleeps `s` seconds or until the lifetime pipe closes; false then. */
static bool wait_life(int fd, int s)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int rc;

	do
		rc = poll(&p, 1, s * 1000);
	while (rc < 0 && errno == EINTR);
	if (rc > 0) {
		char c;

		if (read(fd, &c, 1) <= 0)
			return false;
	}
	return true;
}

static void watch_loop(struct watch *w)
{
	for (;;) {
		struct dlrt_lc_job j = { 0 };
		const char *why = "";
		int sleep_s = 10;

		watch_hang(w);
		if ((w->sig || w->batch) && load_job(w, &j) == 0) {
			/* The batch step cannot tell its attempt in user_init (Slurm sets
			 * SLURM_RESTART_COUNT only when the script starts): while its
			 * step runs, the job's restart count is this run's. */
			if (!w->attempt_known) {
				w->attempt = w->pol.attempt = j.restart_cnt;
				w->attempt_known = true;
			}
			if (w->sig && (!w->warned || w->pending) && dlrt_lc_warn_due(&j, &w->pol, &why))
				send_warning(w, &j, why);
			if (w->batch && w->warned)
				requeue_now(w, &j);
			sleep_s = dlrt_lc_next_poll(&j, &w->pol, w->warned);
			/* Tasks still starting: look again soon, for 30 s from the
			 * latest one's start (one slurmctld RPC each); then at the
			 * usual pace. */
			if (w->pending && j.now - w->settle_from < WARN_SETTLE_S + 5)
				sleep_s = 1;
		}
		if (w->hang && !w->hung) {
			int h = (int)(w->hang / 5) < 2 ? 2 : (int)(w->hang / 5);

			sleep_s = sleep_s < h ? sleep_s : h;
		}
		if (!wait_life(w->life_fd, sleep_s))
			return;
	}
}

static int parse_fd(const char *v, int *fd)
{
	uint32_t n;

	if (dlrt_parse_u32(v, 0, 1u << 20, &n) < 0)
		return -1;
	*fd = (int)n;
	return 0;
}

/* The options into w; the ready and pids descriptors into *ready, *pids. */
static int parse_args(int argc, char **argv, struct watch *w, int *ready, int *pids)
{
	static const struct option lo[] = {
		{ "lifetime-fd", 1, NULL, 'l' }, { "ready-fd", 1, NULL, 'r' },
		{ "job", 1, NULL, 'j' },         { "step", 1, NULL, 's' },
		{ "attempt", 1, NULL, 'a' },     { "signal", 1, NULL, 'g' },
		{ "pids-fd", 1, NULL, 'p' },     { "children", 0, NULL, 'c' },
		{ "requeue", 1, NULL, 'q' },     { "node", 1, NULL, 'n' },
		{ "record-base", 1, NULL, 'b' }, { "verbose", 0, NULL, 'v' },
		{ "batch", 0, NULL, 'B' },       { "help", 0, NULL, 'h' },
		{ "hang-timeout", 1, NULL, 'H' }, { "progress-dir", 1, NULL, 'P' },
		{ "step-tasks", 1, NULL, 'T' },
		{ NULL, 0, NULL, 0 }
	};
	struct dlrt_err err;
	int c, bad = 0;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'l': bad |= parse_fd(optarg, &w->life_fd); break;
		case 'r': bad |= parse_fd(optarg, ready); break;
		case 'p': bad |= parse_fd(optarg, pids); break;
		case 'j': bad |= dlrt_parse_u32(optarg, 1, UINT32_MAX - 1, &w->job); break;
		case 's': bad |= dlrt_parse_u32(optarg, 0, UINT32_MAX, &w->step); break;
		case 'a':
			bad |= dlrt_parse_u32(optarg, 0, 1u << 30, &w->attempt);
			w->attempt_known = true;
			break;
		case 'q': bad |= dlrt_parse_u32(optarg, 0, 100, &w->pol.requeue); break;
		case 'g':
			if (dlrt_warnsig_parse(optarg, &w->sig, &w->pol.before, &err) < 0) {
				fprintf(stderr, PROG ": %s\n", err.msg);
				bad = -1;
			}
			break;
		case 'c': w->children = true; break;
		case 'v': w->verbose = true; break;
		case 'B': w->batch = true; break;
		case 'n': w->node = optarg; break;
		case 'b': w->record_base = optarg; break;
		case 'H': bad |= dlrt_parse_u32(optarg, 1, 1u << 30, &w->hang); break;
		case 'P': w->progress_dir = optarg; break;
		case 'T': bad |= dlrt_parse_u32(optarg, 1, 1u << 24, &w->step_tasks); break;
		case 'h': usage(stdout); exit(0);
		default: bad = -1;
		}
	}
	return bad || optind != argc || w->life_fd < 0 || !w->job ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct watch w = { .life_fd = -1, .node = "?" };
	int ready = -1, pids = -1;

	if (parse_args(argc, argv, &w, &ready, &pids) < 0) {
		usage(stderr);
		return 2;
	}
	w.pol.attempt = w.attempt;
	/* Slurm signals every process of the step when it ends or preempts it;
	 * this one lives exactly as long as the step (lifetime pipe, PDEATHSIG). */
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	signal(SIGUSR2, SIG_IGN);
	if (!strcmp(w.node, "?") && gethostname(w.hostname, sizeof(w.hostname) - 1) == 0)
		w.node = w.hostname;
	signal(SIGPIPE, SIG_IGN);
	if (pids >= 0) {
		w.page = mmap(NULL, sizeof(*w.page), PROT_READ, MAP_SHARED, pids, 0);
		if (w.page == MAP_FAILED || w.page->magic != DLRT_LC_MAGIC) {
			fprintf(stderr, PROG ": --pids-fd %d is not the node's task page\n", pids);
			return 2;
		}
		close(pids);
	}
	/* The plugin waits for this line (its service start): the watcher runs. */
	if (ready >= 0) {
		if (write(ready, "1\n", 2) != 2)
			return 4;
		close(ready);
	}
	if (w.sig == 0 && !w.batch && !w.hang)
		return 0;
	/* libslurm's plugins (auth, hash) and slurm.conf ($SLURM_CONF, passed by
	 * the plugin): Slurm 24.11 no longer loads them on the first call, and
	 * its first RPC without them dies in the auth plugin (no warning, no
	 * requeue, nothing logged). After the ready line: a node whose slurm.conf
	 * cannot be read ends this watcher only, never the step's start. */
	slurm_init(NULL);
	watch_loop(&w);
	slurm_fini();
	return 0;
}
