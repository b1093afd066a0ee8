/* test_infer_journal.c - the coordinator's journal (inference/state/journal.c):
 * records written and replayed into an equal state, appends, a torn tail
 * (cut mid-record), a flipped bit, a replayed duplicate, a journal of another
 * protocol version, a foreign file, a batch of changes in one write, and an
 * append that fails (a full disk): cut back to the records before it. */
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inference/state/journal.h"
#include "tap.h"

static char dir[] = "/tmp/test_infer_journal.XXXXXX";
static char path[256];

static void add_change(struct dlrt_buf *log, struct dlrt_infer_state *st, uint8_t kind,
		       uint64_t task)
{
	struct dlrt_infer_change ch = { .epoch = 1, .seq = st->seq + 1, .kind = kind, .job = 1 };
	int32_t pred[4] = { 1, 2, 3, 4 };
	float score[4] = { 0.5f, 0.5f, 0.5f, 0.5f };
	uint8_t labels[10] = { 1, 2, 3, 4, 1, 2, 3, 4, 1, 2 };
	struct dlrt_err err;

	if (kind == DLRT_CH_JOB_ADD) {
		ch.sub = (struct dlrt_ip_submit){ .count = 10, .batch = 4, .nlabels = 10,
						  .labels = labels };
		strcpy(ch.sub.model, "lenet5");
		strcpy(ch.sub.inputs, "/data/x");
	} else if (kind == DLRT_CH_TASK_DONE) {
		ch.task = task;
		ch.worker = 2;
		ch.res = (struct dlrt_ip_result){ .job = 1, .task = task, .n = task == 2 ? 2 : 4,
						  .pred = pred, .score = score };
	} else {
		ch.state = DLRT_IP_JOB_DONE;
	}
	if (dlrt_infer_state_apply(st, &ch, &err) < 0 || dlrt_infer_change_put(log, &ch) < 0)
		printf("# building the log failed: %s\n", err.msg);
}

static off_t file_size(void)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? sb.st_size : -1;
}

static int load(struct dlrt_infer_state *st, struct dlrt_journal_scan *scan)
{
	struct dlrt_err err;
	int rc;

	dlrt_infer_state_free(st);
	dlrt_infer_state_init(st);
	rc = dlrt_journal_load(dir, st, NULL, scan, &err);
	if (rc < 0)
		printf("# load: %s\n", err.msg);
	return rc;
}

int main(void)
{
	struct dlrt_infer_state a, b;
	struct dlrt_buf log, log2;
	struct dlrt_journal j;
	struct dlrt_journal_scan scan;
	struct dlrt_err err;
	size_t first;
	off_t full;
	int fd;

	TAP_OK(dlrt_crc32c(0, "123456789", 9) == 0xE3069283u, "CRC32C check value");
	{
		/* RFC 3720 (iSCSI) B.4: 32 bytes of zeros, of ones (8-byte steps). */
		uint8_t z[32] = { 0 }, o[32];

		memset(o, 0xff, sizeof(o));
		TAP_OK(dlrt_crc32c(0, z, sizeof(z)) == 0x8A9136AAu, "CRC32C of 32 zero bytes");
		TAP_OK(dlrt_crc32c(0, o, sizeof(o)) == 0x62A8AB43u, "CRC32C of 32 0xff bytes");
	}
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/journal", dir);
	dlrt_infer_state_init(&a);
	dlrt_infer_state_init(&b);
	dlrt_buf_init(&log, 1 << 24);
	dlrt_buf_init(&log2, 1 << 24);

	TAP_IS_INT(load(&b, &scan), 0, "no journal yet: nothing to load");
	TAP_IS_INT(scan.records, 0, "and no records");
	add_change(&log, &a, DLRT_CH_JOB_ADD, 0);
	add_change(&log, &a, DLRT_CH_TASK_DONE, 0);
	first = log.len;
	TAP_IS_INT(dlrt_journal_open(&j, dir, dlrt_buf_head(&log), log.len, &err), 0,
		   "journal written from a log of 2 changes");
	add_change(&log, &a, DLRT_CH_TASK_DONE, 2);
	add_change(&log, &a, DLRT_CH_TASK_DONE, 1);
	TAP_IS_INT(dlrt_journal_write(&j, dlrt_buf_head(&log) + first, log.len - first, true,
				      &err), 0, "a batch of two changes appended");
	TAP_IS_INT(j.writes, 1, "in one write");
	TAP_IS_INT(j.records, 2, "as two records");
	TAP_OK(j.syncs >= 1, "a forced write syncs");
	TAP_IS_INT(dlrt_journal_write(&j, dlrt_buf_head(&log), 0, true, &err), 0,
		   "an empty batch is nothing to do");
	TAP_IS_INT(j.writes, 1, "and writes nothing");
	dlrt_journal_close(&j);
	{
		struct stat sb;

		stat(path, &sb);
		TAP_IS_INT(sb.st_mode & 0777, 0600, "the journal is private (0600)");
	}

	dlrt_infer_state_init(&b);
	TAP_IS_INT(dlrt_journal_load(dir, &b, &log2, &scan, &err), 0, "the journal loads");
	TAP_IS_INT(scan.records, 4, "4 records");
	TAP_OK(!scan.torn, "nothing torn");
	TAP_IS_INT(b.seq, a.seq, "replayed to the same sequence");
	TAP_IS_INT(b.jobs[0].tasks_done, 3, "3 tasks answered after replay");
	TAP_IS_INT(b.jobs[0].done, a.jobs[0].done, "same answered queries");
	TAP_IS_INT(b.jobs[0].correct, a.jobs[0].correct, "same accuracy counters");
	TAP_OK(log2.len == log.len && !memcmp(dlrt_buf_head(&log2), dlrt_buf_head(&log), log.len),
	       "the loaded log holds the same frames");

	/* Torn: the last record cut in the middle, as a crash during write(2) leaves it. */
	full = file_size();
	TAP_IS_INT(truncate(path, full - 5), 0, "cut 5 bytes off the last record");
	TAP_IS_INT(load(&b, &scan), 0, "a torn journal still loads");
	TAP_OK(scan.torn && strstr(scan.why, "record 4: torn"), "the torn record is reported: %s",
	       scan.why);
	TAP_IS_INT(scan.records, 3, "the 3 whole records replay");
	TAP_IS_INT(b.jobs[0].tasks_done, 2, "the torn answer is not recorded");
	TAP_IS_INT(file_size(), (off_t)scan.good, "the tail was cut from the file");
	TAP_IS_INT(load(&b, &scan), 0, "loads again");
	TAP_OK(!scan.torn && scan.records == 3, "clean after the cut");

	/* Only a part of a record header. */
	fd = open(path, O_WRONLY | O_APPEND);
	TAP_IS_INT(write(fd, "\x10\x00\x00", 3), 3, "3 stray bytes appended");
	close(fd);
	load(&b, &scan);
	TAP_OK(scan.torn && strstr(scan.why, "torn header"), "a torn header: %s", scan.why);

	/* A flipped bit inside a record: its checksum fails, it and the rest go. */
	full = file_size();
	fd = open(path, O_RDWR);
	{
		uint8_t c;

		TAP_OK(pread(fd, &c, 1, full - 3) == 1, "read a byte of the last record");
		c ^= 0x10;
		TAP_OK(pwrite(fd, &c, 1, full - 3) == 1, "and flipped one of its bits");
	}
	close(fd);
	load(&b, &scan);
	TAP_OK(scan.torn && strstr(scan.why, "checksum"), "a flipped bit fails the checksum: %s",
	       scan.why);
	TAP_IS_INT(scan.records, 2, "the records before it replay");

	/* A sound record the state refuses (the same task answered twice). */
	TAP_IS_INT(dlrt_journal_open(&j, dir, dlrt_buf_head(&log), log.len, &err), 0, "rewritten");
	{
		struct dlrt_buf dup;
		struct dlrt_infer_change ch = { .epoch = 1, .seq = a.seq + 1, .kind = DLRT_CH_TASK_DONE,
						.job = 1, .task = 0 };
		int32_t pred[4] = { 0 };
		float score[4] = { 0 };

		ch.res = (struct dlrt_ip_result){ .job = 1, .task = 0, .n = 4, .pred = pred,
						  .score = score };
		dlrt_buf_init(&dup, 1 << 20);
		dlrt_infer_change_put(&dup, &ch);
		dlrt_journal_append(&j, dlrt_buf_head(&dup), dup.len, true, &err);
		dlrt_buf_free(&dup);
	}
	dlrt_journal_close(&j);
	load(&b, &scan);
	TAP_OK(scan.torn && strstr(scan.why, "already answered"),
	       "a replayed duplicate answer is refused: %s", scan.why);
	TAP_IS_INT(scan.records, 4, "everything before it replays");

	/* A sound record of another protocol version (an older dlrt's journal):
	 * refused whole, never cut. */
	{
		struct dlrt_buf old;
		struct dlrt_ip_frame f;
		uint8_t *fr;

		dlrt_buf_init(&old, 1 << 24);
		dlrt_ip_frame_peek(dlrt_buf_head(&log), log.len, &f, &err);
		fr = malloc(f.frame_len);
		memcpy(fr, dlrt_buf_head(&log), f.frame_len);
		fr[4] = DLRT_IP_VERSION - 1;
		dlrt_buf_append(&old, DLRT_JOURNAL_MAGIC, DLRT_JOURNAL_MAGIC_LEN);
		dlrt_journal_put(&old, fr, f.frame_len);
		fd = open(path, O_WRONLY | O_TRUNC);
		TAP_IS_INT(write(fd, dlrt_buf_head(&old), old.len), (long)old.len,
			   "a journal of the previous protocol version");
		close(fd);
		TAP_IS_INT(dlrt_journal_load(dir, &b, NULL, &scan, &err), -1, "is refused whole");
		TAP_OK(strstr(err.msg, "protocol version") && strstr(err.msg, "move the journal away"),
		       "says why and what to do: %s", err.msg);
		TAP_IS_INT(file_size(), (off_t)old.len, "and is not cut");
		free(fr);
		dlrt_buf_free(&old);
	}

	/* An append that fails half-way (a full disk; here the file size limit,
	 * which needs no root): the partial record is cut, the error names the
	 * file and the fix, and the journal loads exactly as before it. */
	{
		struct rlimit keep, rl;
		size_t at;
		off_t before;

		TAP_IS_INT(dlrt_journal_open(&j, dir, dlrt_buf_head(&log), log.len, &err), 0,
			   "rewritten from the log of 4 changes");
		before = file_size();
		at = log.len;
		add_change(&log, &a, DLRT_CH_JOB_END, 0);
		getrlimit(RLIMIT_FSIZE, &keep);
		signal(SIGXFSZ, SIG_IGN);
		rl = keep;
		rl.rlim_cur = (rlim_t)before + 10;
		setrlimit(RLIMIT_FSIZE, &rl);
		TAP_IS_INT(dlrt_journal_append(&j, dlrt_buf_head(&log) + at, log.len - at, true,
					       &err), -1, "an append past the file size limit fails");
		setrlimit(RLIMIT_FSIZE, &keep);
		TAP_OK(strstr(err.msg, path) && strstr(err.msg, "File too large") &&
		       strstr(err.msg, "free space"), "naming the file, the cause, the fix: %s",
		       err.msg);
		TAP_IS_INT(file_size(), before, "the partial record is cut from the file");
		TAP_IS_INT(j.size, before, "and the journal knows where it ends");
		TAP_IS_INT(dlrt_journal_append(&j, dlrt_buf_head(&log) + at, log.len - at, true,
					       &err), 0, "with space again, the same change appends");
		dlrt_journal_close(&j);
		TAP_IS_INT(load(&b, &scan), 0, "and the journal loads");
		TAP_OK(!scan.torn && scan.records == 5, "5 sound records, nothing torn (%s)",
		       scan.why);
		TAP_IS_INT(b.jobs[0].state, DLRT_IP_JOB_DONE, "the job's end replays once");
	}

	/* Not a journal at all. */
	fd = open(path, O_WRONLY | O_TRUNC);
	TAP_IS_INT(write(fd, "hello, world\n", 13), 13, "a foreign file");
	close(fd);
	TAP_IS_INT(dlrt_journal_load(dir, &b, NULL, &scan, &err), -1, "is refused whole");
	TAP_OK(strstr(err.msg, "not a dlrt-infer journal"), "says so: %s", err.msg);
	chmod(path, 0644);
	TAP_IS_INT(dlrt_journal_load(dir, &b, NULL, &scan, &err), -1,
		   "a journal others can read is refused");

	unlink(path);
	rmdir(dir);
	dlrt_infer_state_free(&a);
	dlrt_infer_state_free(&b);
	dlrt_buf_free(&log);
	dlrt_buf_free(&log2);
	return tap_done();
}
