/* test_models_extproto.c - the external-model protocol: formatters and
 * parsers, the worker-side reader's exactly-once bookkeeping and its
 * protocol-error detection, and (when python3-torch is installed) a real
 * run of inference/models/examples/torch_model.py through the reader. */
#include <errno.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inference/models/extproto.h"
#include "inference/models/idx.h"
#include "inference/models/model.h"
#include "tap.h"

#define FMNIST "/usr/share/datasets/fashion-mnist"

static void test_format_parse(void)
{
	struct dlrt_extproto_batch b = { 18446744073709551615ULL, 10, 784 }, c;
	struct dlrt_extproto_msg m;
	struct dlrt_err err = { "" };
	char buf[128];
	int n;

	n = dlrt_extproto_format_batch(buf, sizeof(buf), &b, &err);
	TAP_IS_STR(buf, "BATCH 18446744073709551615 10 784\n", "format BATCH");
	TAP_OK(n == (int)strlen(buf) &&
	       dlrt_extproto_parse_batch(buf, (size_t)n, &c, &err) == 0 &&
	       c.task_id == b.task_id && c.n == 10 && c.bytes_per_query == 784,
	       "BATCH round trip");
	b.n = 0;
	TAP_OK(dlrt_extproto_format_batch(buf, sizeof(buf), &b, &err) < 0,
	       "an empty batch is refused: %s", err.msg);
	TAP_OK(dlrt_extproto_parse_batch("BATCH 1 0 784\n", 14, &c, &err) < 0,
	       "BATCH with n 0 is malformed");
	TAP_OK(dlrt_extproto_parse_batch("BATCH 1 65537 784", 17, &c, &err) < 0,
	       "BATCH with more than 65536 queries is refused");
	TAP_OK(dlrt_extproto_parse_batch("BATCH 1 65536 16777216", 22, &c, &err) < 0,
	       "BATCH larger than 256 MiB is refused: %s", err.msg);
	TAP_OK(dlrt_extproto_parse_batch("BATCH +1 2 3", 12, &c, &err) < 0 &&
	       dlrt_extproto_parse_batch("BATCH 1  2 3", 12, &c, &err) < 0 &&
	       dlrt_extproto_parse_batch("BATCH 1 2 3 ", 12, &c, &err) < 0 &&
	       dlrt_extproto_parse_batch("BATCH 99999999999999999999 2 3", 30,
					 &c, &err) < 0,
	       "signs, double blanks, trailing blanks, overflow are refused");
	n = dlrt_extproto_format_result(buf, sizeof(buf), 3, 7, 0.25f);
	TAP_IS_STR(buf, "3 7 0.25\n", "format a result line");
	TAP_OK(dlrt_extproto_parse_line(buf, (size_t)n, &m, &err) == 0 &&
	       m.kind == DLRT_EXTPROTO_RESULT && m.index == 3 && m.pred == 7 &&
	       m.score == 0.25f, "parse it back");
	TAP_OK(dlrt_extproto_parse_line("0 -2 1e-3", 9, &m, &err) == 0 &&
	       m.pred == -2 && m.score == 1e-3f, "negative prediction, exponent");
	TAP_OK(dlrt_extproto_parse_line("0 1 nan", 7, &m, &err) < 0 &&
	       dlrt_extproto_parse_line("0 1 inf", 7, &m, &err) < 0 &&
	       dlrt_extproto_parse_line("0 1 0x1p3", 9, &m, &err) < 0 &&
	       dlrt_extproto_parse_line("0 1 1e99", 8, &m, &err) < 0 &&
	       dlrt_extproto_parse_line("0 2147483648 1", 14, &m, &err) < 0 &&
	       dlrt_extproto_parse_line("0 1", 3, &m, &err) < 0,
	       "nan, inf, hex, overflowing scores and predictions are refused");
	TAP_OK(dlrt_extproto_parse_line("0 -2147483648 1", 15, &m, &err) == 0 &&
	       m.pred == INT32_MIN, "INT32_MIN prediction is accepted");
	TAP_OK(dlrt_extproto_parse_line("READY torch\x01lenet\n", 18, &m, &err) == 0 &&
	       m.kind == DLRT_EXTPROTO_READY && !strcmp(m.text, "torch?lenet"),
	       "READY with a name, control bytes sanitized");
	TAP_OK(dlrt_extproto_parse_line("ERROR out of memory", 19, &m, &err) == 0 &&
	       m.kind == DLRT_EXTPROTO_ERROR && !strcmp(m.text, "out of memory"),
	       "ERROR line");
	n = dlrt_extproto_format_end(buf, sizeof(buf), 42);
	TAP_OK(dlrt_extproto_parse_line(buf, (size_t)n, &m, &err) == 0 &&
	       m.kind == DLRT_EXTPROTO_END && m.task_id == 42, "END round trip");
}

static int feed_str(struct dlrt_extproto_reader *r, const char *s,
		    struct dlrt_err *err)
{
	return dlrt_extproto_reader_feed(r, s, strlen(s), err);
}

static void test_reader(void)
{
	const char *out = "READY m\n2 5 0.5\n0 3 0.25\n1 4 1\nEND 9\n";
	struct dlrt_extproto_reader r;
	struct dlrt_err err = { "" };
	size_t i;
	int rv, events = 0;

	dlrt_extproto_reader_init(&r);
	TAP_OK(dlrt_extproto_reader_begin(&r, 9, 3, &err) < 0,
	       "no batch before READY: %s", err.msg);
	/* One byte at a time: the reader must reassemble lines. */
	for (i = 0; out[i]; i++) {
		rv = dlrt_extproto_reader_feed(&r, out + i, 1, &err);
		if (rv == DLRT_EXTPROTO_GOT_READY) {
			events++;
			TAP_OK(dlrt_extproto_reader_begin(&r, 9, 3, &err) == 0,
			       "begin a batch of 3 after READY");
		} else if (rv == DLRT_EXTPROTO_GOT_BATCH) {
			events++;
		} else if (rv < 0) {
			TAP_OK(0, "protocol error: %s", err.msg);
		}
	}
	TAP_IS_INT(events, 2, "READY and the batch's END were seen");
	TAP_IS_STR(r.name, "m", "the model's name");
	TAP_OK(r.pred[0] == 3 && r.pred[1] == 4 && r.pred[2] == 5 &&
	       r.score[0] == 0.25f && r.score[2] == 0.5f,
	       "answers out of order land at their query index");

	/* Two lines in one read: READY is reported, the rest stays buffered. */
	dlrt_extproto_reader_free(&r);
	dlrt_extproto_reader_init(&r);
	TAP_IS_INT(feed_str(&r, "READY\n0 1 1\n", &err), DLRT_EXTPROTO_GOT_READY,
		   "READY from a read holding more");
	TAP_OK(dlrt_extproto_reader_feed(&r, NULL, 0, &err) < 0 &&
	       strstr(err.msg, "outside a batch"),
	       "a result before any BATCH is an error: %s", err.msg);

#define EXPECT_ERR(setup, bad, want, what)                                     \
	do {                                                                   \
		dlrt_extproto_reader_free(&r);                                 \
		dlrt_extproto_reader_init(&r);                                 \
		feed_str(&r, "READY\n", &err);                                 \
		dlrt_extproto_reader_begin(&r, 5, 2, &err);                    \
		feed_str(&r, setup, &err);                                     \
		rv = feed_str(&r, bad, &err);                                  \
		TAP_OK(rv < 0 && strstr(err.msg, want), what ": %s", err.msg); \
	} while (0)

	EXPECT_ERR("0 1 1\n", "0 2 1\n", "twice", "a query answered twice");
	EXPECT_ERR("", "2 1 1\n", "query 2 of a batch of 2", "index out of range");
	EXPECT_ERR("0 1 1\n", "END 5\n", "1 of 2 answers", "END too early");
	EXPECT_ERR("0 1 1\n1 1 1\n", "END 6\n", "ended task 6", "END of another task");
	EXPECT_ERR("", "ERROR cuda not found\n", "cuda not found", "model ERROR");
	EXPECT_ERR("", "READY\n", "twice", "a second READY");
	EXPECT_ERR("", "hello world\n", "malformed", "garbage on stdout");
	{
		char *longline = malloc(DLRT_EXTPROTO_LINE_MAX + 10);

		memset(longline, '1', DLRT_EXTPROTO_LINE_MAX + 9);
		longline[DLRT_EXTPROTO_LINE_MAX + 9] = 0;
		EXPECT_ERR("", longline, "longer than", "an endless line");
		free(longline);
	}
	dlrt_extproto_reader_free(&r);
}

/* ---- the PyTorch example, for real ------------------------------------------------- */

static int write_all(int fd, const void *p, size_t n)
{
	const char *s = p;

	while (n) {
		ssize_t w = write(fd, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads from fd into the reader until it reports an event, with a deadline. */
static int wait_event(int fd, struct dlrt_extproto_reader *r, int timeout_ms,
		      struct dlrt_err *err)
{
	struct timespec t0, t1;
	char buf[65536];
	int rv;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	rv = dlrt_extproto_reader_feed(r, NULL, 0, err);
	while (rv == DLRT_EXTPROTO_MORE) {
		struct pollfd p = { fd, POLLIN, 0 };
		int left;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = timeout_ms - (int)((t1.tv_sec - t0.tv_sec) * 1000 +
					  (t1.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || poll(&p, 1, left) <= 0)
			return dlrt_err_set(err, "no answer within %d ms", timeout_ms);
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			return dlrt_err_set(err, "model closed its stdout");
		rv = dlrt_extproto_reader_feed(r, buf, (size_t)n, err);
	}
	return rv;
}

static char model_dir_buf[4096];

/* $DLRT_MODEL_DIR, else the models folder of this test's build
 * ($(BUILD)/tests/.. or $(BUILD)/asan/tests/../..), as make models fills it. */
static const char *model_dir(void)
{
	return model_dir_buf[0] ? model_dir_buf : NULL;
}

static void find_model_dir(const char *argv0)
{
	const char *env = getenv("DLRT_MODEL_DIR");
	char tmp[4096], probe[4200], *d;
	int up;

	if (env && *env) {
		snprintf(model_dir_buf, sizeof(model_dir_buf), "%s", env);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s", argv0);
	d = dirname(tmp);
	for (up = 1; up <= 2; up++) {
		snprintf(probe, sizeof(probe), "%s/%s/models/lenet5.dlrtw", d,
			 up == 1 ? ".." : "../..");
		if (access(probe, R_OK) == 0) {
			snprintf(model_dir_buf, sizeof(model_dir_buf), "%s/%s/models",
				 d, up == 1 ? ".." : "../..");
			return;
		}
	}
}

static void test_torch_example(void)
{
	enum { N = 200, BATCH = 50 };
	const char *srcdir = getenv("DLRT_SRCDIR");
	char script[4096], weights[4224];
	struct dlrt_extproto_reader r;
	struct dlrt_err err = { "" };
	struct dlrt_idx img, lab;
	struct dlrt_model *m = NULL;
	int in[2], out[2], status, agree = 0, right = 0, done = 0, t;
	int cpred[N];
	pid_t pid;

	snprintf(script, sizeof(script), "%s/inference/models/examples/torch_model.py",
		 srcdir ? srcdir : ".");
	if (access("/usr/bin/python3", X_OK) != 0 || access(script, R_OK) != 0 ||
	    system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0 ||
	    access(FMNIST "/t10k-images-idx3-ubyte.gz", R_OK) != 0) {
		printf("ok %d # SKIP python3-torch, the example or the dataset is "
		       "missing\n", ++tap_count);
		return;
	}
	weights[0] = 0;
	if (model_dir())
		snprintf(weights, sizeof(weights), "%s/lenet5.dlrtw", model_dir());
	if (weights[0] && access(weights, R_OK) != 0)
		weights[0] = 0;
	dlrt_idx_load(&img, FMNIST "/t10k-images-idx3-ubyte.gz", &err);
	dlrt_idx_load(&lab, FMNIST "/t10k-labels-idx1-ubyte.gz", &err);
	if (weights[0] && dlrt_model_load(&m, weights, &err) == 0) {
		float *x = malloc(N * 784 * sizeof(float));

		dlrt_model_normalize_u8(img.data, N * 784, x);
		dlrt_model_infer(m, x, N, cpred, NULL, &err);
		free(x);
	}
	if (pipe(in) < 0 || pipe(out) < 0) {
		TAP_OK(0, "pipe");
		return;
	}
	signal(SIGPIPE, SIG_IGN);
	pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		if (weights[0] && m)
			execl("/usr/bin/python3", "python3", script, "--weights",
			      weights, (char *)NULL);
		else
			execl("/usr/bin/python3", "python3", script, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	dlrt_extproto_reader_init(&r);
	TAP_IS_INT(wait_event(out[0], &r, 60000, &err), DLRT_EXTPROTO_GOT_READY,
		   "torch_model.py says READY (%s) %s", r.name, err.msg);
	for (t = 0; t < N / BATCH; t++) {
		struct dlrt_extproto_batch b = { 1000 + (uint64_t)t, BATCH, 784 };
		char hdr[128];
		int n = dlrt_extproto_format_batch(hdr, sizeof(hdr), &b, &err), i;

		if (dlrt_extproto_reader_begin(&r, b.task_id, BATCH, &err) < 0 ||
		    write_all(in[1], hdr, (size_t)n) < 0 ||
		    write_all(in[1], img.data + (size_t)t * BATCH * 784,
			      BATCH * 784) < 0 ||
		    wait_event(out[0], &r, 30000, &err) != DLRT_EXTPROTO_GOT_BATCH)
			break;
		for (i = 0; i < BATCH; i++) {
			right += r.pred[i] == lab.data[t * BATCH + i];
			if (m)
				agree += r.pred[i] == cpred[t * BATCH + i];
		}
		done += BATCH;
	}
	TAP_IS_INT(done, N, "%d queries answered exactly once in %d batches %s",
		   N, N / BATCH, err.msg);
	close(in[1]); /* end of job: the model must exit 0 */
	waitpid(pid, &status, 0);
	TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "torch_model.py exits 0 when stdin closes");
	if (m) {
		TAP_OK(agree >= N - 2, "PyTorch with the same weights agrees with "
		       "the C lenet5 on %d of %d images", agree, N);
		TAP_OK(right >= N * 8 / 10, "and is accurate: %d of %d right",
		       right, N);
	} else {
		printf("ok %d # SKIP no cached lenet5 weights: agreement with the "
		       "C model not checked\n", ++tap_count);
	}
	close(out[0]);
	dlrt_model_free(m);
	dlrt_extproto_reader_free(&r);
	dlrt_idx_free(&img);
	dlrt_idx_free(&lab);
}

int main(int argc, char **argv)
{
	(void)argc;
	find_model_dir(argv[0]);
	test_format_parse();
	test_reader();
	test_torch_example();
	return tap_done();
}
