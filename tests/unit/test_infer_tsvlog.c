/* test_infer_tsvlog.c - the pool's timeline files (inference/state/tsvlog.c): a new
 * pool starts them afresh, a continued one appends and keeps the pool's time
 * (from the clock: line, never below the last row), torn lines, and refusal
 * of a file that is not private. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inference/state/tsvlog.h"
#include "tap.h"

static char dir[] = "/tmp/test_infer_tsvlog.XXXXXX";

static char *slurp(const char *name)
{
	static char buf[1 << 20];
	char path[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return strcpy(buf, "");
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void test_scan(void)
{
	struct dlrt_tsv_scan s = { 0 };
	const char *ev = "t\tjob\tevent\n0.000010\t0\tclock:1000.5\n"
			 "2.5\t1\tsubmitted\n7.25\t0\tclock:999.0\n3.0\t1\tdone\n9.9\t1\tha";

	dlrt_tsv_scan_text(ev, strlen(ev), false, &s);
	TAP_OK(s.has_origin && s.origin == 1000.5, "the first clock line gives the origin");
	TAP_OK(s.has_t && s.last_t == 7.25, "the largest t of the whole lines (%g)", s.last_t);
	TAP_OK(s.torn, "a last line without its newline is torn, not trusted");
	TAP_OK(dlrt_tsv_resume_t(&s, 1010.5) == 10.0, "resume at wall - origin");
	TAP_OK(dlrt_tsv_resume_t(&s, 1001.5) == 7.25, "never below the last row (a clock behind)");
	memset(&s, 0, sizeof(s));
	{
		const char *sl = "12.0\t1\tx\n13.5\t2\ty\n";

		dlrt_tsv_scan_text(sl, strlen(sl), true, &s);
	}
	TAP_OK(s.has_t && s.last_t == 13.5 && !s.torn, "a slice skips its partial first line");
	memset(&s, 0, sizeof(s));
	{
		const char *bad = "t\tjob\n-4\t1\n1e400\t1\nnan\t2\n\t\t\n";

		dlrt_tsv_scan_text(bad, strlen(bad), false, &s);
	}
	TAP_OK(!s.has_t && !s.has_origin, "headers, negative, huge and non-numbers are no rows");
	TAP_OK(dlrt_tsv_resume_t(&s, 5.0) == 0, "nothing known: t starts at 0");
}

static void test_files(void)
{
	struct dlrt_tsv_scan s = { 0 };
	struct dlrt_err err;
	char path[256];
	struct stat sb;
	FILE *f;

	f = dlrt_tsv_open(dir, "events.tsv", "t\tjob\tevent\n", true, &s, &err);
	TAP_OK(f != NULL, "a new file");
	fprintf(f, "0.000001\t0\tclock:500.0\n4.5\t1\tsubmitted\n");
	fclose(f);
	snprintf(path, sizeof(path), "%s/events.tsv", dir);
	stat(path, &sb);
	TAP_IS_INT(sb.st_mode & 0777, 0600, "mode 0600");

	/* A continuing coordinator keeps the rows, writes no second header. */
	f = dlrt_tsv_open(dir, "events.tsv", "t\tjob\tevent\n", false, &s, &err);
	TAP_OK(f && s.has_origin && s.origin == 500.0 && s.last_t == 4.5,
	       "reopened to append: origin and last t read back");
	fprintf(f, "6.0\t0\ttakeover:2\n");
	fclose(f);
	TAP_IS_STR(slurp("events.tsv"),
		   "t\tjob\tevent\n0.000001\t0\tclock:500.0\n4.5\t1\tsubmitted\n6.0\t0\ttakeover:2\n",
		   "rows from both coordinators, one header");

	/* A coordinator killed mid-line: the next row starts on its own line. */
	f = fopen(path, "a");
	fputs("7.1\t1\tfirst_res", f);
	fclose(f);
	memset(&s, 0, sizeof(s));
	f = dlrt_tsv_open(dir, "events.tsv", "t\tjob\tevent\n", false, &s, &err);
	TAP_OK(f && s.torn && s.last_t == 6.0, "a torn last line is seen and not trusted");
	fprintf(f, "8.0\t1\tdone\n");
	fclose(f);
	TAP_OK(strstr(slurp("events.tsv"), "first_res\n8.0\t1\tdone\n") != NULL,
	       "the torn line is ended before the next row");

	/* A new pool starts afresh. */
	memset(&s, 0, sizeof(s));
	f = dlrt_tsv_open(dir, "events.tsv", "t\tjob\tevent\n", true, &s, &err);
	TAP_OK(f && !s.has_t && !s.has_origin, "fresh: nothing read");
	fclose(f);
	TAP_IS_STR(slurp("events.tsv"), "t\tjob\tevent\n", "fresh: only the header");

	/* A long file: only its head and tail are read. */
	f = fopen(path, "a");
	fputs("0.000001\t0\tclock:42.0\n", f);
	for (int i = 1; i <= 20000; i++)
		fprintf(f, "%d.000\t1\t100.0\t1.00\t1.00\t%d\n", i, i);
	fclose(f);
	memset(&s, 0, sizeof(s));
	f = dlrt_tsv_open(dir, "events.tsv", "t\tjob\tevent\n", false, &s, &err);
	TAP_OK(f && s.origin == 42.0 && s.last_t == 20000.0 && !s.torn,
	       "a 500 KB file: origin from its head, last t from its tail (%g)", s.last_t);
	if (f)
		fclose(f);

	/* Not private, or a symbolic link: refused. */
	chmod(path, 0644);
	f = dlrt_tsv_open(dir, "events.tsv", "t\tjob\tevent\n", false, &s, &err);
	TAP_OK(!f && strstr(err.msg, "chmod go="), "a file others can read is refused: %s",
	       err.msg);
	unlink(path);
	TAP_IS_INT(symlink("/etc/passwd", path), 0, "a symbolic link in its place");
	f = dlrt_tsv_open(dir, "events.tsv", "t\tjob\tevent\n", true, &s, &err);
	TAP_OK(!f, "is not followed: %s", err.msg);
	unlink(path);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	test_scan();
	test_files();
	rmdir(dir);
	return tap_done();
}
