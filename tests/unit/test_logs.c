/* Unit tests: the exported-log line format and the relay (--dl-log-dir). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "logline.h"
#include "logrelay.h"
#include "tap.h"

static char *slurp_fd(int fd)
{
	static char buf[65536];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	return buf;
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
		struct dlrt_logrelay r = { .file = file };
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
		r.in[0] = out[0];
		r.in[1] = err[0];
		r.tee[0] = tee[1];
		r.tee[1] = -1;
		dlrt_logrelay_note(file, "start task %d", 7);
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
		struct dlrt_logrelay r = { .file = file, .tee = { -1, -1 } };
		pid_t pid;

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
	return tap_done();
}
