/* Unit tests: the exported-log line format and the relay (--dl-log-dir). */
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <errno.h>
#include <unistd.h>

#include "logs/logline.h"
#include "logs/logrelay.h"
#include "tap.h"

static char *slurp_fd(int fd)
{
	static char buf[65536];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* Runs the relay in a child whose file size limit is `limit` bytes (EFBIG
 * stands for a full disk: the same failed write, and a cut frees room the same
 * way), with a writer printing `lines` lines of 99 characters. The log and the
 * warnings (tee[1]) land in files; returns the relay process' exit code. */
static int relay_limited(int file, int warn, long limit, int lines)
{
	pid_t relay = fork();
	int status;

	if (relay == 0) {
		static struct dlrt_logrelay r;
		struct rlimit rl = { (rlim_t)limit, (rlim_t)limit };
		int out[2], st;
		pid_t pid;

		signal(SIGXFSZ, SIG_IGN);
		if (pipe(out) || setrlimit(RLIMIT_FSIZE, &rl))
			_exit(100);
		pid = fork();
		if (pid == 0) {
			for (int i = 0; i < lines; i++)
				dprintf(out[1], "line %05d %088d\n", i, 0);
			_exit(5);
		}
		close(out[1]);
		dlrt_logrelay_init(&r, file, "/x/worker-0.log");
		r.in[0] = out[0];
		r.in[1] = -1;
		r.tee[0] = open("/dev/null", O_WRONLY);
		r.tee[1] = warn;
		dlrt_logrelay_note(&r, "start task 0");
		if (dlrt_logrelay_run(&r, pid, 2000, &st) < 0)
			_exit(101);
		dlrt_logrelay_note(&r, "end task 0: exit %d", WEXITSTATUS(st));
		dlrt_logrelay_close(&r);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 102);
	}
	if (relay < 0 || waitpid(relay, &status, 0) != relay)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char *slurp_path(const char *path)
{
	static char buf[1 << 20];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* Every line complete and stamped: what dlrt-logs reads. */
static int all_lines_parse(const char *log)
{
	struct dlrt_logline l;

	for (const char *p = log; *p;) {
		const char *nl = strchr(p, '\n');

		if (!nl || dlrt_logline_parse(p, (size_t)(nl - p), &l) < 0)
			return 0;
		p = nl + 1;
	}
	return 1;
}

static void test_cut_full(void)
{
	char log[] = "/tmp/dlrt-test-cut-XXXXXX", wpath[] = "/tmp/dlrt-test-warn-XXXXXX";
	int file = mkostemp(log, O_APPEND), warn = mkstemp(wpath);
	const char *text, *last;
	struct stat st;

	TAP_IS_INT(relay_limited(file, warn, 20000, 2000), 5,
		   "a failing log write keeps the program's exit status");
	fstat(file, &st);
	TAP_OK(st.st_size <= 20000, "the log stays within the limit (%ld bytes)", (long)st.st_size);
	text = slurp_path(log);
	TAP_OK(all_lines_parse(text), "the cut log has whole, stamped lines only");
	last = strrchr(text, '\n');
	while (last && last > text && last[-1] != '\n')
		last--;
	TAP_OK(last && strstr(last, "Z dlrt " DLRT_LOGRELAY_CUT "File too large; the rest of "
			      "this task's output went only to srun"), "its last line is the marker");
	TAP_OK(strstr(text, "Z dlrt start task 0\n") && !strstr(text, "end task"),
	       "nothing after the marker, not even the end note");
	text = slurp_path(wpath);
	TAP_IS_STR(text, "dlrt: --dl-log-dir: writing /x/worker-0.log failed: File too large; the "
		   "log ends with a \"" DLRT_LOGRELAY_CUT "\" line, the rest of this task's output "
		   "goes only here\n", "one warning line on the task's stderr");
	close(file);
	close(warn);
	unlink(log);
	unlink(wpath);
}

/* Notes one line at a time: the failing write leaves too little room for the
 * marker at the last line end, so it falls back to an earlier one. */
static void test_cut_fallback(void)
{
	char log[] = "/tmp/dlrt-test-cut-XXXXXX";
	int file = mkstemp(log), devnull = open("/dev/null", O_WRONLY);
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		static struct dlrt_logrelay r = { .tee = { -1, -1 } };
		struct rlimit rl = { 5010, 5010 };

		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
		r.tee[1] = devnull;
		dlrt_logrelay_init(&r, file, "f");
		/* 100-byte lines: 27 + " dlrt " + 66 + "\n" */
		for (int i = 0; i < 60; i++)
			dlrt_logrelay_note(&r, "note %03d %057d", i, 0);
		_exit(r.cut == EFBIG ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the notes hit the limit");
	{
		const char *text = slurp_path(log), *m = strstr(text, DLRT_LOGRELAY_CUT);

		TAP_OK(all_lines_parse(text), "whole lines after falling back");
		TAP_OK(m && !strchr(m, '\n')[1], "the marker is the last line");
		TAP_OK(strstr(text, "note 041 ") && !strstr(text, "note 049 "),
		       "it replaced the last lines before the limit (kept up to an earlier line end)");
	}
	close(file);
	close(devnull);
	unlink(log);
}

/* A log that cannot be cut back (/dev/full): a warning, and the output still flows. */
static void test_cut_unmarkable(void)
{
	char wpath[] = "/tmp/dlrt-test-warn-XXXXXX";
	int file = open("/dev/full", O_WRONLY), warn = mkstemp(wpath);

	TAP_IS_INT(relay_limited(file, warn, 1 << 30, 3000), 5, "relay on /dev/full ends normally");
	TAP_OK(strstr(slurp_path(wpath), "writing /x/worker-0.log failed: No space left on device; "
		      "the log could not be marked") != NULL, "and warns once: %s", slurp_path(wpath));
	close(file);
	close(warn);
	unlink(wpath);
}

static size_t record_line(char *line, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static size_t record_line(char *line, size_t len, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	n = dlrt_logline_vformat(line, len, fmt, ap);
	va_end(ap);
	return n;
}

int main(void)
{
	struct timespec ts = { .tv_sec = 1795355101, .tv_nsec = 123456789 };
	char stamp[DLRT_LOGSTAMP_LEN + 1], role[32], path[] = "/tmp/dlrt-test-logs-XXXXXX";
	struct dlrt_logline l;
	uint32_t idx;
	const char *ok1 = "2026-11-22T13:45:01.123456Z err boom: x";

	dlrt_logline_stamp(stamp, &ts);
	TAP_IS_STR(stamp, "2026-11-22T13:45:01.123456Z", "stamp is UTC, microseconds, fixed width");
	TAP_IS_INT(dlrt_logline_parse(ok1, strlen(ok1), &l), 0, "a line parses");
	TAP_IS_STR(l.stream, "err", "stream");
	TAP_OK(l.text_len == 7 && !memcmp(l.text, "boom: x", 7), "text");
	TAP_IS_INT(dlrt_logline_parse("2026-11-22T13:45:01.123456Z out", 31, &l), 0, "empty line");
	TAP_IS_INT(l.text_len, 0, "empty text");
	TAP_IS_INT(dlrt_logline_parse("2026-11-22 13:45:01.123456Z out x", 33, &l), -1, "bad stamp");
	TAP_IS_INT(dlrt_logline_parse("2026-11-22T13:45:01.123456Z outx y", 34, &l), -1, "bad stream");
	TAP_IS_INT(dlrt_logline_parse("short", 5, &l), -1, "too short");
	TAP_IS_INT(dlrt_logname_parse("worker-12.log", role, sizeof(role), &idx), 0, "file name");
	TAP_OK(!strcmp(role, "worker") && idx == 12, "role worker, index 12");
	TAP_IS_INT(dlrt_logname_parse("worker-.log", role, sizeof(role), &idx), -1, "no index");
	TAP_IS_INT(dlrt_logname_parse("-3.log", role, sizeof(role), &idx), -1, "no role");
	TAP_IS_INT(dlrt_logname_parse("worker-3.txt", role, sizeof(role), &idx), -1, "not .log");
	TAP_IS_INT(dlrt_logname_parse("../x-3.log", role, sizeof(role), &idx), -1, "no paths");

	/* The relay: a child writes to both pipes (a partial last line, a long
	 * line) and dies of a signal; the tee gets the raw bytes. */
	{
		int out[2], err[2], tee[2], file = mkstemp(path), status;
		static struct dlrt_logrelay r;
		char *log, long_line[DLRT_LOGRELAY_LINE + 100];
		pid_t pid;

		unlink(path);
		if (pipe(out) || pipe(err) || pipe(tee))
			return 1;
		memset(long_line, 'x', sizeof(long_line) - 1);
		long_line[sizeof(long_line) - 1] = '\0';
		pid = fork();
		if (pid == 0) {
			dprintf(out[1], "one\ntwo\n");
			dprintf(err[1], "oops\n");
			dprintf(out[1], "%s\n", long_line);
			dprintf(out[1], "partial");
			close(out[1]);
			close(err[1]);
			raise(SIGKILL);
		}
		close(out[1]);
		close(err[1]);
		dlrt_logrelay_init(&r, file, path);
		r.in[0] = out[0];
		r.in[1] = err[0];
		r.tee[0] = tee[1];
		r.tee[1] = -1;
		dlrt_logrelay_note(&r, "start task %d", 7);
		TAP_IS_INT(dlrt_logrelay_run(&r, pid, 500, &status), 0, "relay ran");
		TAP_OK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child's signal is reported");
		log = slurp_fd(file);
		TAP_OK(strstr(log, "Z dlrt start task 7\n") != NULL, "dlrt note");
		TAP_OK(strstr(log, "Z out one\n") && strstr(log, "Z out two\n"), "stdout lines stamped");
		TAP_OK(strstr(log, "Z err oops\n") != NULL, "stderr line stamped");
		TAP_OK(strstr(log, "Z out partial\n") != NULL, "the unfinished last line is kept");
		TAP_OK(strstr(log, "Z out xxxxxxxx") != NULL, "a long line is cut, not lost");
		{
			char tbuf[16384];
			ssize_t n;

			close(tee[1]);
			n = read(tee[0], tbuf, sizeof(tbuf) - 1);
			tbuf[n > 0 ? n : 0] = '\0';
			TAP_OK(!strncmp(tbuf, "one\ntwo\n", 8), "the tee got the raw output");
		}
		close(file);
	}
	/* A grandchild that keeps the pipe open cannot hold the relay. */
	{
		int out[2], file = open("/dev/null", O_WRONLY), status;
		static struct dlrt_logrelay r = { .tee = { -1, -1 } };
		pid_t pid;

		dlrt_logrelay_init(&r, file, "/dev/null");

		if (pipe(out))
			return 1;
		pid = fork();
		if (pid == 0) {
			if (fork() == 0) {
				sleep(3);
				_exit(0);
			}
			_exit(3);
		}
		close(out[1]);
		r.in[0] = out[0];
		r.in[1] = -1;
		TAP_IS_INT(dlrt_logrelay_run(&r, pid, 300, &status), 0, "relay with a lingering grandchild");
		TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == 3, "exit status 3 reported");
		close(file);
	}
	test_cut_full();
	test_cut_fallback();
	test_cut_unmarkable();
	{
		char rec[64], big[200];
		size_t n = record_line(rec, sizeof(rec), "attempt=%u warning", 2u);

		TAP_OK(n == DLRT_LOGSTAMP_LEN + 1 + 17 + 1 && rec[DLRT_LOGSTAMP_LEN] == ' ' &&
		       !memcmp(rec + DLRT_LOGSTAMP_LEN + 1, "attempt=2 warning\n", 18),
		       "a record line: stamp, text, newline");
		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		n = record_line(rec, sizeof(rec), "%s", big);
		TAP_OK(n == sizeof(rec) - 1 && rec[n - 1] == '\n', "a long one is cut and keeps its newline");
	}
	return tap_done();
}
