/* Unit tests of dlrt-lifecycle's library parts: the nodes' progress files
 * (tools/lcprogress.c), every descriptor closed exactly once; the /proc
 * reader (tools/lcproc.c); the job's times as the first node shares them
 * (tools/lctimes.c).
 *
 * close() is this program's own (a static link binds the library's calls to
 * it): it counts closes of a descriptor that is not open (EBADF), which in a
 * process with threads would close whatever another thread opened under that
 * number meanwhile. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "tools/lcproc.h"
#include "tools/lcprogress.h"
#include "tools/lctimes.h"

static int bad_closes;

int close(int fd)
{
	long rc = syscall(SYS_close, fd);

	if (rc < 0 && errno == EBADF)
		bad_closes++;
	return (int)rc;
}

static void progress(const char *dir)
{
	char path[512];
	time_t last;

	TAP_IS_INT(dlrt_lcprogress_write(dir, 3, "n1", 1000), 0, "node n1's progress written");
	TAP_IS_INT(dlrt_lcprogress_write(dir, 3, "n2", 1200), 0, "node n2's progress written");
	TAP_IS_INT(dlrt_lcprogress_write(dir, 4, "n3", 9999), 0, "another step's written");
	last = dlrt_lcprogress_latest(dir, 3, 900);
	TAP_IS_INT((int)last, 1200, "the step's latest progress is the latest node's");
	TAP_IS_INT((int)dlrt_lcprogress_latest(dir, 3, 1500), 1500, "or this node's, if later");
	TAP_IS_INT(bad_closes, 0, "no descriptor closed twice so far");
	/* A rename that fails: the file's name is taken by a folder. */
	snprintf(path, sizeof(path), "%s/.progress.3.n4", dir);
	TAP_OK(mkdir(path, 0700) == 0, "a folder where node n4's file goes");
	bad_closes = 0;
	TAP_IS_INT(dlrt_lcprogress_write(dir, 3, "n4", 1300), -1, "n4's progress cannot be written");
	TAP_IS_INT(bad_closes, 0, "and its descriptor is closed once, not twice");
	snprintf(path, sizeof(path), "%s/.progress.3.n4.tmp", dir);
	TAP_OK(access(path, F_OK) < 0, "its .tmp is removed");
	TAP_IS_INT((int)dlrt_lcprogress_latest(dir, 3, 0), 1200, "the others' still read");
}

static void proc_reader(void)
{
	struct sigaction sa = { .sa_handler = SIG_IGN }, old;
	char buf[16];

	TAP_IS_INT((int)dlrt_lcproc_parse_ppid("12 (a) b) c) S 77 12 12"), 77,
		   "the parent after the last ')' of a comm with spaces and parentheses");
	TAP_IS_INT((int)dlrt_lcproc_parse_ppid("12 (cut"), -1, "a cut line has none");
	TAP_IS_INT((int)dlrt_lcproc_ppid(getpid()), (int)getppid(), "this process's parent");
	TAP_OK(dlrt_lcproc_read(getpid(), "stat", buf, sizeof(buf)) == sizeof(buf) - 1 &&
	       buf[sizeof(buf) - 1] == '\0', "a read is cut to the buffer and terminated");
	TAP_IS_INT((int)dlrt_lcproc_read(0, "stat", buf, sizeof(buf)), -1, "no process 0");
	sigaction(SIGUSR2, NULL, &old);
	sigaction(SIGUSR2, &sa, NULL);
	TAP_OK(dlrt_lcproc_handles(getpid(), SIGUSR2), "an ignored signal counts as handled");
	sigaction(SIGUSR2, &old, NULL);
	TAP_OK(!dlrt_lcproc_handles(getpid(), SIGUSR2), "a default one does not");
	TAP_OK(dlrt_lcproc_wchar(getpid()) > 0, "this process has written (its TAP lines)");
}

struct seen {
	pid_t want;
	int found;
};

static void note_child(pid_t c, size_t i, void *ctx)
{
	struct seen *s = ctx;

	if (i == 0 && c == s->want)
		s->found++;
}

static void children(void)
{
	pid_t parent = getpid(), child = fork();
	struct seen s;

	if (child == 0) {
		pause();
		_exit(0);
	}
	s = (struct seen){ .want = child };
	dlrt_lcproc_children(&parent, 1, note_child, &s);
	TAP_IS_INT(s.found, 1, "the child is found under its parent");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

static void times(void)
{
	struct dlrt_lc_job j = { .end_time = 1764406800, .preempt_time = 0 }, k = { 0 };
	char out[DLRT_LCTIMES_MAX];
	static const char *const bad[] = {
		"", "end=1 preempt=", "end= preempt=0", "end=01 preempt=0", "end=1  preempt=0",
		"end=1 preempt=0 ", "end=-1 preempt=0", "end=1 preempt=2 x", "preempt=0 end=1",
		"end=99999999999999999999 preempt=0", "end=1099511627777 preempt=0",
	};

	dlrt_lctimes_format(&j, out);
	TAP_IS_STR(out, "end=1764406800 preempt=0", "the times' line");
	TAP_IS_INT(dlrt_lctimes_parse(out, &k), 0, "read back");
	TAP_OK(k.end_time == j.end_time && k.preempt_time == 0, "the same times");
	TAP_IS_INT(dlrt_lctimes_parse("end=0 preempt=1764406500", &k), 0, "a preemption");
	TAP_OK(k.end_time == 0 && k.preempt_time == 1764406500, "read as such");
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		TAP_IS_INT(dlrt_lctimes_parse(bad[i], &k), -1, "refused: \"%s\"", bad[i]);
}

int main(void)
{
	char dir[] = "/tmp/dlrt-test-lcwatch.XXXXXX", cmd[128];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	progress(dir);
	proc_reader();
	children();
	times();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", dir);
	return tap_done();
}
