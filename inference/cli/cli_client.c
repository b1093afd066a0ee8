/* cli_client.c - the commands a pool's user runs against its coordinator:
 * submit (a job's description, its inputs made absolute and unpacked once
 * for the workers), status (one table, or redrawn with --watch), wait and
 * cancel. Each is one request and its answer (cli_connect.c).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "inference/models/idx.h"
#include "common/parse.h"
#include "cli.h"
#include "inference/worker/inputs.h"

/* ---- submit ---------------------------------------------------------------------- */

static void submit_usage(void)
{
	printf("usage: dlrt-infer submit --model M --inputs FILE --batch B [--name N]\n"
	       "         [--labels FILE | --no-labels] [--first I] [--count N]\n"
	       "         [--out CSV] [--wait] [--pool DIR]\n"
	       "  --model    lenet5, deepcnn, noop, a .dlrtw weights file, or\n"
	       "             ext:COMMAND (a command each worker starts for the job;\n"
	       "             protocol in docs/inference-models.md)\n"
	       "  --inputs   an IDX image file (plain or .gz), e.g. Debian's\n"
	       "             /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz,\n"
	       "             or a text file listing one image file per line (28x28\n"
	       "             binary PGM or 784 raw bytes)\n"
	       "  --batch    queries per task\n"
	       "  --labels   IDX labels for accuracy (default: the matching\n"
	       "             *-labels-idx1-ubyte file next to the inputs, if any)\n"
	       "  --first/--count  a slice of the inputs (default: all)\n"
	       "  --out      the results CSV (default: POOL/job-ID.csv)\n"
	       "  --wait     wait for the job to end (as dlrt-infer wait)\n"
	       "Prints the job id.\n");
}

/* Loads the job's inputs (an IDX file, or a text file listing one image file
 * per line) into img, checks the slice --first/--count (all of it without
 * --count) and loads the labels (given, else guessed next to the inputs,
 * unless --no-labels) into lab for s->labels. 0, or the exit code 1 once the
 * reason is printed (img and lab freed). */
static int submit_load_inputs(struct dlrt_ip_submit *s, const char *abs_in, bool have_count,
			      const char *labels, bool no_labels, struct dlrt_idx *img,
			      struct dlrt_idx *lab, bool *is_idx)
{
	char guessed[PATH_MAX];
	struct dlrt_err err;

	*is_idx = dlrt_inputs_is_idx(abs_in) == 1;
	if ((*is_idx ? dlrt_idx_load(img, abs_in, &err) :
		       dlrt_inputs_load_list(img, abs_in, &err)) < 0)
		return die("%s", err.msg);
	if (img->ndims != 3 || img->item_size != 784) {
		dlrt_idx_free(img);
		return die("--inputs %s: expected 28x28 images (N x 28 x 28), not a %u-dimensional "
			   "file of %zu bytes per item", abs_in, img->ndims, img->item_size);
	}
	if (!have_count) {
		if (s->first >= img->count) {
			dlrt_idx_free(img);
			return die("--first %u: %s has only %zu inputs", s->first, abs_in,
				   img->count);
		}
		s->count = (uint32_t)(img->count - s->first);
	}
	if ((uint64_t)s->first + s->count > img->count) {
		dlrt_idx_free(img);
		return die("--first %u --count %u: %s has only %zu inputs", s->first, s->count,
			   abs_in, img->count);
	}
	if (!labels && !no_labels && guess_labels(abs_in, guessed, sizeof(guessed)) == 0)
		labels = guessed;
	if (labels && !no_labels) {
		if (dlrt_idx_load(lab, labels, &err) < 0 ||
		    dlrt_idx_check_labels(img, lab, 10, &err) < 0) {
			dlrt_idx_free(img);
			dlrt_idx_free(lab);
			return die("%s", err.msg);
		}
		s->nlabels = s->count;
		s->labels = (uint8_t *)lab->data + s->first;
	}
	return 0;
}

/* Sends the job and prints its id; with --wait, waits for its end. The exit
 * code: 0, or 1 (the job failed, or the coordinator did not answer). */
static int submit_send(struct dlrt_ipc *c, const struct dlrt_ip_submit *s, bool wait_end)
{
	struct dlrt_ip_frame f;
	struct dlrt_ip_jobref r;
	struct dlrt_ip_job_info info;
	struct dlrt_err err;

	if (dlrt_ip_put_submit(&c->out, s) < 0)
		return die("the job description is too large");
	if (client_call(c, &f, CLIENT_TIMEOUT_MS) < 0)
		return 1;
	if (f.type != DLRT_IP_SUBMITTED || dlrt_ip_get_jobref(f.payload, f.len, &r, &err) < 0)
		return die("unexpected answer %s to SUBMIT", dlrt_ip_type_name(f.type));
	printf("%u\n", r.job);
	fflush(stdout);
	if (!wait_end)
		return 0;
	dlrt_ip_put_jobref(&c->out, DLRT_IP_WAIT, r.job);
	if (client_call(c, &f, 24 * 3600 * 1000) < 0 ||
	    dlrt_ip_get_jobend(f.payload, f.len, &info, &err) < 0)
		return 1;
	return info.state == DLRT_IP_JOB_DONE ? 0 : 1;
}

int cmd_submit(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "model", required_argument, NULL, 'm' }, { "inputs", required_argument, NULL, 'i' },
		{ "batch", required_argument, NULL, 'b' }, { "name", required_argument, NULL, 'n' },
		{ "labels", required_argument, NULL, 'l' }, { "no-labels", no_argument, NULL, 'L' },
		{ "first", required_argument, NULL, 'f' }, { "count", required_argument, NULL, 'c' },
		{ "out", required_argument, NULL, 'o' }, { "wait", no_argument, NULL, 'w' },
		{ "pool", required_argument, NULL, 'p' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct dlrt_ip_submit s = { .batch = 0 };
	const char *model = NULL, *inputs = NULL, *labels = NULL, *out = NULL, *name = "";
	bool no_labels = false, wait_end = false, have_count = false, is_idx;
	struct dlrt_idx img = { 0 }, lab = { 0 };
	struct dlrt_err err;
	struct dlrt_ipc c;
	char dir[4096], abs_in[PATH_MAX], abs_out[PATH_MAX];
	int opt, rc = 1;

	while ((opt = getopt_long(argc, argv, "m:i:b:n:l:Lf:c:o:wp:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'm': model = optarg; break;
		case 'i': inputs = optarg; break;
		case 'b': if (parse_u32_opt("batch", optarg, 1, DLRT_IP_MAX_BATCH, &s.batch)) return 2; break;
		case 'n': name = optarg; break;
		case 'l': labels = optarg; break;
		case 'L': no_labels = true; break;
		case 'f': if (parse_u32_opt("first", optarg, 0, DLRT_IP_MAX_QUERIES, &s.first)) return 2; break;
		case 'c': if (parse_u32_opt("count", optarg, 1, DLRT_IP_MAX_QUERIES, &s.count)) return 2;
			  have_count = true; break;
		case 'o': out = optarg; break;
		case 'w': wait_end = true; break;
		case 'p': pool_opt = optarg; break;
		case 'h':
			submit_usage();
			return 0;
		default:
			return 2;
		}
	}
	if (!model || !inputs || !s.batch)
		return die("submit needs --model, --inputs and --batch (see dlrt-infer submit "
			   "--help)") + 1;
	if (optind < argc)
		return die("submit: unexpected argument '%s'", argv[optind]) + 1;
	if (strlen(name) > DLRT_IP_NAME_MAX)
		return die("--name is longer than %d characters", DLRT_IP_NAME_MAX) + 1;
	if (!realpath(inputs, abs_in))
		return die("--inputs %s: %s", inputs, strerror(errno));
	if (submit_load_inputs(&s, abs_in, have_count, labels, no_labels, &img, &lab, &is_idx))
		return 1;
	snprintf(s.name, sizeof(s.name), "%s", name);
	snprintf(s.model, sizeof(s.model), "%s", model);
	if (getrandom(&s.token, sizeof(s.token), 0) != (ssize_t)sizeof(s.token) || !s.token)
		s.token = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
	/* Workers run on other nodes: paths must be absolute. */
	if (strchr(model, '/') && realpath(model, abs_out))
		snprintf(s.model, sizeof(s.model), "%s", abs_out);
	snprintf(s.inputs, sizeof(s.inputs), "%s", abs_in);
	if (out) {
		if (out[0] == '/')
			snprintf(s.out, sizeof(s.out), "%s", out);
		else if (getcwd(abs_out, sizeof(abs_out)))
			snprintf(s.out, sizeof(s.out), "%.2000s/%.2000s", abs_out, out);
	}
	if (client_open(&c, dir, sizeof(dir)) < 0)
		goto out;
	{
		/* Workers map a plain copy instead of each decompressing the file. */
		char plain[PATH_MAX];

		if (dlrt_inputs_unpack(&img, abs_in, dir, plain, sizeof(plain), &err) == 0) {
			snprintf(s.inputs, sizeof(s.inputs), "%s", plain);
		} else if (!is_idx) {
			die("%s (a list of images needs it)", err.msg);
			goto out_close;
		} else {
			fprintf(stderr, "%s: warning: %s; workers read %s itself\n", prog, err.msg,
				abs_in);
		}
	}
	dlrt_idx_free(&img);
	rc = submit_send(&c, &s, wait_end);
out_close:
	dlrt_ipc_close(&c);
out:
	dlrt_idx_free(&img);
	dlrt_idx_free(&lab);
	return rc;
}

/* ---- status ------------------------------------------------------------------- */

static void fmt_eta(char *b, size_t n, const struct dlrt_ip_job_info *j)
{
	double left = (double)(j->total - j->done);

	if (j->state != DLRT_IP_JOB_RUNNING)
		snprintf(b, n, "-");
	else if (j->rate <= 0)
		snprintf(b, n, "?");
	else if (left / j->rate < 120)
		snprintf(b, n, "%.1fs", left / j->rate);
	else
		snprintf(b, n, "%.0fm", left / j->rate / 60);
}

static void print_status(const char *dir, const struct dlrt_ip_status *st)
{
	printf("pool %s: epoch %llu, up %.1f s, %u workers, rates over %.2f s\n", dir,
	       (unsigned long long)st->epoch, st->uptime, st->nworkers, st->window);
	printf("%-4s %-12s %-8s %-9s %-13s %-24s %9s %7s %7s %6s %s\n", "JOB", "NAME", "MODEL",
	       "STATE", "DONE/TOTAL", "PROGRESS", "Q/S", "WORKERS", "ETA", "ACC", "RESULTS");
	for (uint32_t i = 0; i < st->njobs; i++) {
		const struct dlrt_ip_job_info *j = &st->jobs[i];
		char bar[32], eta[16], acc[16], dt[32];
		int filled = j->total ? (int)((uint64_t)j->done * 20 / j->total) : 0;

		bar[0] = '[';
		for (int k = 0; k < 20; k++)
			bar[1 + k] = k < filled ? '#' : '.';
		snprintf(bar + 21, sizeof(bar) - 21, "] %3u%%",
			 j->total ? (unsigned)((uint64_t)j->done * 100 / j->total) : 0);
		fmt_eta(eta, sizeof(eta), j);
		if (j->labelled)
			snprintf(acc, sizeof(acc), "%.2f%%", 100.0 * j->correct / j->labelled);
		else
			snprintf(acc, sizeof(acc), "-");
		snprintf(dt, sizeof(dt), "%u/%u", j->done, j->total);
		printf("%-4u %-12.12s %-8.8s %-9s %-13s %-24s %9.1f %7.1f %7s %6s %s%s%s\n", j->id,
		       j->name, j->model, dlrt_ip_job_state_name(j->state), dt, bar, j->rate, j->held,
		       eta, acc, j->out, j->error[0] ? "  error: " : "", j->error);
	}
	printf("%-4s %-24s %-6s %-9s %s\n", "WKR", "NAME", "JOB", "IN-FLIGHT", "TASKS");
	for (uint32_t i = 0; i < st->nworkers; i++) {
		const struct dlrt_ip_worker_info *w = &st->workers[i];
		char job[16];

		snprintf(job, sizeof(job), w->job ? "%u" : "-", w->job);
		printf("%-4u %-24.24s %-6s %-9u %llu\n", w->id, w->name, job, w->inflight,
		       (unsigned long long)w->tasks);
	}
}

int cmd_status(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "watch", no_argument, NULL, 'w' }, { "interval", required_argument, NULL, 'i' },
		{ "pool", required_argument, NULL, 'p' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool watch = false;
	double interval = 1.0;
	struct dlrt_ipc c;
	char dir[4096];
	int opt, rc = 1;

	while ((opt = getopt_long(argc, argv, "wi:p:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'w': watch = true; break;
		case 'i': if (parse_seconds_opt("interval", optarg, 0.05, 3600, &interval)) return 2; break;
		case 'p': pool_opt = optarg; break;
		case 'h':
			printf("usage: dlrt-infer status [--watch [--interval S]] [--pool DIR]\n"
			       "Per job: queries done/total with a progress bar, queries/s over the\n"
			       "rate window, workers held (averaged over the window), ETA, accuracy\n"
			       "so far, the results file; then the pool's workers. --watch redraws\n"
			       "every S seconds (default 1) until no job is running.\n"
			       "Right after pool start, before Slurm starts the coordinator, prints\n"
			       "the array's state (e.g. pending, and why); --watch waits for the\n"
			       "coordinator ($DLRT_INFER_START_TIMEOUT, default %d s).\n",
			       START_TIMEOUT_S);
			return 0;
		default: return 2;
		}
	}
	if (!watch) {
		/* Right after pool start: say where the pool is instead of waiting. */
		struct dlrt_pool_array arr;
		char why[DLRT_ERR_MAX];

		if (pool_dir(dir, sizeof(dir)) < 0)
			return 1;
		switch (pool_starting(dir, &arr)) {
		case -1:
			return 1;
		case 1:
			if (array_state(&arr, why, sizeof(why)) == 1 && pool_starting(dir, &arr) == 1)
				return die("no coordinator serves %s: the pool's array job %u is %s "
					   "(element 0's log: %s/element-%u_0.log)", dir, arr.job, why,
					   dir, arr.job);
			if (pool_starting(dir, &arr) == 1) {
				printf("pool %s: starting: array job %u is %s; no coordinator yet\n",
				       dir, arr.job, why);
				return 0;
			}
		}
	}
	if (client_open(&c, dir, sizeof(dir)) < 0)
		return 1;
	for (;;) {
		struct dlrt_ip_frame f;
		struct dlrt_ip_status st;
		struct dlrt_err err;
		bool running = false;

		dlrt_ip_put_empty(&c.out, DLRT_IP_STATUSREQ);
		if (client_call(&c, &f, CLIENT_TIMEOUT_MS) < 0)
			break;
		if (f.type != DLRT_IP_STATUS || dlrt_ip_get_status(f.payload, f.len, &st, &err) < 0) {
			die("bad answer to STATUS");
			dlrt_ip_status_free(&st);
			break;
		}
		if (watch && isatty(STDOUT_FILENO))
			printf("\033[H\033[J");
		print_status(dir, &st);
		for (uint32_t i = 0; i < st.njobs; i++)
			running |= st.jobs[i].state == DLRT_IP_JOB_RUNNING;
		dlrt_ip_status_free(&st);
		fflush(stdout);
		if (!watch || !running) {
			rc = 0;
			break;
		}
		usleep((useconds_t)(interval * 1e6));
		if (!isatty(STDOUT_FILENO))
			printf("\n");
	}
	dlrt_ipc_close(&c);
	return rc;
}

/* ---- wait, cancel ---------------------------------------------------------------- */

/* wait and cancel: `JOB [--pool DIR]`; sends `type` about JOB to the
 * coordinator and receives its answer. -1 with the answer in *f and *c open
 * (close it), else the exit status. */
static int one_job_call(int argc, char **argv, const char *what, const char *help,
			uint16_t type, int timeout_ms, struct dlrt_ipc *c, struct dlrt_ip_frame *f,
			uint32_t *job)
{
	char dir[4096];
	int rc = pool_only_opts(argc, argv, help);

	if (rc >= 0)
		return rc;
	if (optind + 1 != argc || dlrt_parse_u32(argv[optind], 1, UINT32_MAX, job) < 0)
		return die("usage: dlrt-infer %s JOB (a job id from dlrt-infer submit)", what) + 1;
	if (client_open(c, dir, sizeof(dir)) < 0)
		return 1;
	dlrt_ip_put_jobref(&c->out, type, *job);
	if (client_call(c, f, timeout_ms) < 0) {
		dlrt_ipc_close(c);
		return 1;
	}
	return -1;
}

int cmd_wait(int argc, char **argv)
{
	struct dlrt_ipc c;
	struct dlrt_ip_frame f;
	struct dlrt_ip_job_info info;
	struct dlrt_err err;
	uint32_t job;
	int rc = one_job_call(argc, argv, "wait",
			      "usage: dlrt-infer wait JOB [--pool DIR]\n"
			      "Waits until the job ends; prints how. Exit 0 if every query was\n"
			      "answered, 1 if it was cancelled or failed.\n",
			      DLRT_IP_WAIT, 24 * 3600 * 1000, &c, &f, &job);

	if (rc >= 0)
		return rc;
	rc = 1;
	if (f.type != DLRT_IP_JOBEND || dlrt_ip_get_jobend(f.payload, f.len, &info, &err) < 0) {
		die("bad answer to WAIT");
	} else {
		printf("job %u %s: %u/%u queries", info.id, dlrt_ip_job_state_name(info.state),
		       info.done, info.total);
		if (info.labelled)
			printf(", accuracy %.2f%% (%u/%u)", 100.0 * info.correct / info.labelled,
			       info.correct, info.labelled);
		printf(", %.2f s", info.elapsed);
		/* The rate users compare pools and models by: elapsed runs from the
		 * coordinator taking the job to its last answer, model loading included. */
		if (info.elapsed > 0)
			printf(" (%.0f queries/s)", info.done / info.elapsed);
		printf(", results in %s%s%s\n", info.out, info.error[0] ? ": " : "", info.error);
		rc = info.state == DLRT_IP_JOB_DONE ? 0 : 1;
	}
	dlrt_ipc_close(&c);
	return rc;
}

int cmd_cancel(int argc, char **argv)
{
	struct dlrt_ipc c;
	struct dlrt_ip_frame f;
	uint32_t job;
	int rc = one_job_call(argc, argv, "cancel",
			      "usage: dlrt-infer cancel JOB [--pool DIR]\n"
			      "Stops handing out the job's tasks; answers already recorded stay\n"
			      "in its CSV, answers still in flight are discarded.\n",
			      DLRT_IP_CANCEL, CLIENT_TIMEOUT_MS, &c, &f, &job);

	if (rc >= 0)
		return rc;
	rc = f.type == DLRT_IP_OK ? 0 : 1;
	if (rc == 0)
		printf("job %u cancelled\n", job);
	dlrt_ipc_close(&c);
	return rc;
}
