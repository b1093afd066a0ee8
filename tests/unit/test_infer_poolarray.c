/* test_infer_poolarray.c - the array record of a pool still to start
 * (inference/pool/poolarray.c): it round-trips, private and 0600; a record that is
 * a link, open to others, too large, incomplete, repeated or unknown is
 * refused; squeue's lines give element 0's state (pending arrays list it
 * inside a range) and sbatch --parsable's its job id. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inference/pool/poolarray.h"
#include "tap.h"

static int parse(const char *text, struct dlrt_pool_array *a)
{
	struct dlrt_err err;

	return dlrt_pool_array_parse(text, strlen(text), a, &err);
}

static int squeue(const char *text, struct dlrt_pool_array_state *st)
{
	struct dlrt_err err;

	return dlrt_pool_squeue_parse(text, strlen(text), st, &err);
}

static void put(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

int main(void)
{
	struct dlrt_pool_array a, b = { .job = 4242, .after_epoch = 7 };
	struct dlrt_pool_array_state st;
	struct dlrt_err err;
	char dir[] = "/tmp/test_poolarray.XXXXXX", path[256], big[DLRT_POOL_ARRAY_MAX + 10];
	struct stat sb;
	uint32_t job;

	TAP_IS_INT(parse("job=12\nafter_epoch=3\n", &a), 0, "a record parses");
	TAP_IS_INT(a.job, 12, "its job");
	TAP_IS_INT((int)a.after_epoch, 3, "its epoch");
	TAP_IS_INT(parse("after_epoch=0\n\njob=4294967295", &a), 0,
		   "any order, blank lines, no final newline");
	TAP_IS_INT(parse("job=12\n", &a), -1, "no after_epoch: refused");
	TAP_IS_INT(parse("job=12\njob=13\nafter_epoch=1\n", &a), -1, "a field twice: refused");
	TAP_IS_INT(parse("job=0\nafter_epoch=1\n", &a), -1, "job 0: refused");
	TAP_IS_INT(parse("job=4294967296\nafter_epoch=1\n", &a), -1, "a job id past 32 bits: refused");
	TAP_IS_INT(parse("job=12x\nafter_epoch=1\n", &a), -1, "trailing junk: refused");
	TAP_IS_INT(parse("job=12\nafter_epoch=1\nhost=x\n", &a), -1, "an unknown field: refused");
	TAP_IS_INT(parse("job=12\nafter_epoch=99999999999999999999\n", &a), -1,
		   "a number too long: refused");

	TAP_OK(mkdtemp(dir) != NULL, "a pool directory");
	chmod(dir, 0700);
	TAP_IS_INT(dlrt_pool_array_read(dir, &a, &err), 1, "no record: 1");
	TAP_IS_INT(dlrt_pool_array_write(dir, &b, &err), 0, "written");
	snprintf(path, sizeof(path), "%s/array", dir);
	TAP_OK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600, "mode 0600");
	TAP_IS_INT(dlrt_pool_array_read(dir, &a, &err), 0, "read back");
	TAP_OK(a.job == 4242 && a.after_epoch == 7, "the same record");
	chmod(path, 0644);
	TAP_IS_INT(dlrt_pool_array_read(dir, &a, &err), -1, "open to others: refused");
	TAP_OK(strstr(err.msg, "chmod go=") != NULL, "with the fix: %s", err.msg);
	put(path, "job=1\n", 0600);
	TAP_IS_INT(dlrt_pool_array_read(dir, &a, &err), -1, "incomplete: refused");
	TAP_OK(strstr(err.msg, "remove it") != NULL, "with the fix: %s", err.msg);
	memset(big, '\n', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	put(path, big, 0600);
	TAP_IS_INT(dlrt_pool_array_read(dir, &a, &err), -1, "too large: refused");
	unlink(path);
	put("/tmp/test_poolarray.target", "job=5\nafter_epoch=0\n", 0600);
	TAP_IS_INT(symlink("/tmp/test_poolarray.target", path), 0, "a link in its place");
	TAP_IS_INT(dlrt_pool_array_read(dir, &a, &err), -1, "is not followed: %s", err.msg);
	unlink("/tmp/test_poolarray.target");
	unlink(path);
	rmdir(dir);

	TAP_IS_INT(squeue("0|PENDING|JobHeldUser\n1|PENDING|JobHeldUser\n", &st), 0,
		   "squeue: element 0");
	TAP_IS_STR(st.state, "PENDING", "its state");
	TAP_IS_STR(st.reason, "JobHeldUser", "its reason");
	TAP_IS_INT(squeue("2|RUNNING|None\n0|RUNNING|None\n", &st), 0, "in any line");
	TAP_IS_STR(st.state, "RUNNING", "its state");
	TAP_IS_INT(squeue("0-3|PENDING|Resources\n", &st), 0, "inside a pending range");
	TAP_IS_STR(st.reason, "Resources", "its reason");
	TAP_IS_INT(squeue("1-3|PENDING|Resources\n10|RUNNING|None\n", &st), 1, "not listed: ended");
	TAP_IS_INT(squeue("", &st), 1, "nothing listed: ended");
	TAP_IS_INT(squeue("squeue: warning: x\n0|PENDING|Priority\n", &st), 0,
		   "a warning line is skipped");
	TAP_IS_INT(squeue("0|PEN\033DING|x\n", &st), -1, "a control character: refused");
	TAP_IS_INT(squeue("0||x\n", &st), -1, "no state: refused");

	TAP_IS_INT(dlrt_pool_sbatch_parse("123\n", 4, &job, &err), 0, "sbatch: the id");
	TAP_IS_INT(job, 123, "is 123");
	TAP_IS_INT(dlrt_pool_sbatch_parse("sbatch: warning: x\n77;c1\n", 25, &job, &err), 0,
		   "after a warning, with a cluster");
	TAP_IS_INT(job, 77, "is 77");
	TAP_IS_INT(dlrt_pool_sbatch_parse("sbatch: error: x\n", 17, &job, &err), -1, "no id: refused");
	return tap_done();
}
