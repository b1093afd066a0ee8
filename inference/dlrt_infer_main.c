/* dlrt-infer - fair-share batch inference on a Slurm job array (docs/inference.md).
 *
 *   dlrt-infer pool start --workers N [--pool DIR] [--prefetch K] [--window S] [-- SBATCH-ARGS]
 *   dlrt-infer pool run | pool stop
 *   dlrt-infer submit --model M --inputs FILE --batch B [--name N] [...]
 *   dlrt-infer status [--watch] | wait JOB | cancel JOB | plot JOB... | local ...
 *   dlrt-infer coordinator | worker      (what `pool run` becomes in each element)
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "services/evloop.h"
#include "inference/models/idx.h"
#include "claim.h"
#include "infer.h"
#include "liveness.h"
#include "inputs.h"
#include "inference/models/model.h"
#include "runtime/opts.h"
#include "pool.h"
#include "poolarray.h"
#include "common/proc.h"
#include "proto.h"
#include "standby.h"

#define CLIENT_TIMEOUT_MS 10000
#define RECONNECT_MS 30000 /* how long a client looks for a new coordinator */
/* How long a client (and pool start --wait) waits for the coordinator of a
 * pool whose array Slurm has not started yet: a job script's submit right
 * after pool start must outlast a short queue, not hang on a long one. */
#define START_TIMEOUT_S 600
#define SQUEUE_EVERY_MS 2000
#define SLURM_CMD_MS 30000 /* sbatch, squeue, scancel */

extern char **environ;

static const char *prog = "dlrt-infer";
static const char *pool_opt;
static char client_dir[4096];

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: dlrt-infer COMMAND [OPTIONS]   (every command takes --pool DIR and --help)\n"
"\n"
"Fair-share batch inference on a pool of workers that runs as a Slurm job array.\n"
"\n"
"  pool start --workers N [--wait]  submit the pool: sbatch --array=0-N\n"
"                           --dl-runtime=infer; --wait: until its coordinator serves\n"
"  pool add --workers N     more workers for a running pool (another array)\n"
"  pool restart             a new coordinator resumes the pool from its journal\n"
"  pool stop                stop the pool (its array elements end)\n"
"  submit --model M --inputs FILE --batch B [--name N]   a job; prints its id\n"
"                           (right after pool start: waits for the coordinator)\n"
"  status [--watch]         jobs (progress, queries/s, workers, ETA) and workers\n"
"  wait JOB                 until the job ends; exit 0 if it completed\n"
"  cancel JOB               stop a job (its finished answers stay in its CSV)\n"
"  plot JOB... [--out PNG]  query rate and workers per job over time (gnuplot)\n"
"  local --model M --inputs FILE   the same answers in one process (reference)\n"
"  pool run | coordinator | worker | standby  what runs inside the array elements\n"
"\n"
"The pool directory (--pool, else $DLRT_INFER_POOL, else ~/.dlrt-infer) is on a\n"
"shared filesystem; it holds the coordinator's access record and the results.\n"
"See dlrt-infer(1) and docs/inference.md.\n");
}

static int parse_u32_opt(const char *name, const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
	if (dlrt_parse_u32(v, lo, hi, out) < 0) {
		die("--%s=%s: expected a whole number from %u to %u", name, v, lo, hi);
		return -1;
	}
	return 0;
}

/* The options given in (fractional) seconds: --interval, --window. */
static int parse_seconds_opt(const char *name, const char *v, double lo, double hi, double *out)
{
	double d = atof(v);

	if (d < lo || d > hi) {
		die("--%s=%s: expected seconds from %g to %g", name, v, lo, hi);
		return -1;
	}
	*out = d;
	return 0;
}

/* The commands whose only options are --pool and --help (wait, cancel, pool
 * stop): -1 to go on with the arguments from optind, else the exit status
 * (0 once `help` is printed). */
static int pool_only_opts(int argc, char **argv, const char *help)
{
	static const struct option lo[] = {
		{ "pool", required_argument, NULL, 'p' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "p:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'p': pool_opt = optarg; break;
		case 'h': fputs(help, stdout); return 0;
		default: return 2;
		}
	}
	return -1;
}

static int pool_dir(char *out, size_t len)
{
	struct dlrt_err err;

	if (dlrt_pool_dir(pool_opt, out, len, &err) < 0)
		return die("%s", err.msg) ? -1 : -1;
	return 0;
}

/* ---- a pool whose coordinator has not started yet ---------------------------- */

/* 1 when `dir` holds a pool submitted by pool start whose coordinator has not
 * served yet (its array record is newer than the access record), with *arr;
 * 0 when the access record is the one to use; -1 after printing why the
 * array record cannot be used. */
static int pool_starting(const char *dir, struct dlrt_pool_array *arr)
{
	struct dlrt_pool_access a;
	struct dlrt_err err;
	int rc = dlrt_pool_array_read(dir, arr, &err);

	if (rc < 0)
		return die("%s", err.msg) ? -1 : -1;
	if (rc > 0)
		return 0;
	rc = dlrt_pool_read_access(dir, &a, &err);
	/* A broken access record is reported by whoever reads it next. */
	return rc == 0 && a.epoch > arr->after_epoch ? 0 : rc < 0 ? 0 : 1;
}

/* squeue's word on element 0 of the array, for the lines below: 0 while it
 * may still start (pending, configuring, running), 1 once it has ended. */
static int array_state(const struct dlrt_pool_array *arr, char *why, size_t len)
{
	struct dlrt_pool_array_state st;
	struct dlrt_err err;
	int rc = dlrt_pool_array_query(arr, SLURM_CMD_MS, &st, &err);

	if (rc < 0) {
		snprintf(why, len, "in an unknown state (%.200s)", err.msg);
		return 0;
	}
	if (rc > 0 || (strcmp(st.state, "PENDING") && strcmp(st.state, "CONFIGURING") &&
		       strcmp(st.state, "RUNNING") && strcmp(st.state, "REQUEUED") &&
		       strcmp(st.state, "RESIZING") && strcmp(st.state, "SUSPENDED"))) {
		snprintf(why, len, "%s", rc > 0 ? "no longer in the queue" : st.state);
		return 1;
	}
	if (!strcmp(st.state, "PENDING"))
		snprintf(why, len, "still pending (Slurm's reason: %s)", st.reason);
	else
		snprintf(why, len, "%s; its coordinator is starting", st.state);
	return 0;
}

/* The seconds to wait for a coordinator: $DLRT_INFER_START_TIMEOUT or the
 * default; -1 after printing why the variable is wrong. */
static int start_timeout(void)
{
	const char *v = getenv("DLRT_INFER_START_TIMEOUT");
	uint32_t s = START_TIMEOUT_S;

	if (v && *v && dlrt_parse_u32(v, 1, 7 * 86400, &s) < 0)
		return die("DLRT_INFER_START_TIMEOUT=%s: expected seconds from 1 to %u", v,
			   7 * 86400) ? -1 : -1;
	return (int)s;
}

/* Waits, up to timeout_s, until the coordinator of the pool that pool start
 * submitted has written its access record; one progress line on stderr if
 * it has to wait at all. 0, or -1 after one line naming the cause (the array
 * still pending and Slurm's reason, or ended) and `fix`. */
static int wait_coordinator(const char *dir, int timeout_s, const char *fix)
{
	int64_t give_up = dlrt_now_ms() + (int64_t)timeout_s * 1000, next_query = 0;
	struct dlrt_pool_array arr;
	char why[DLRT_ERR_MAX] = "";
	bool told = false;

	for (;;) {
		int rc = pool_starting(dir, &arr);

		if (rc <= 0)
			return rc;
		if (dlrt_now_ms() >= next_query) {
			if (array_state(&arr, why, sizeof(why)) == 1 && pool_starting(dir, &arr) == 1)
				return die("no coordinator serves %s: the pool's array job %u is %s "
					   "(element 0's log: %s/element-%u_0.log); start a pool with "
					   "dlrt-infer pool start", dir, arr.job, why, dir,
					   arr.job) ? -1 : -1;
			next_query = dlrt_now_ms() + SQUEUE_EVERY_MS;
			if (!told) {
				fprintf(stderr, "%s: waiting up to %d s for the coordinator of %s: "
					"array job %u is %s\n", prog, timeout_s, dir, arr.job, why);
				told = true;
			}
		}
		if (dlrt_now_ms() >= give_up)
			return die("no coordinator served %s within %d s: the pool's array job %u is "
				   "%s (squeue -j %u); %s", dir, timeout_s, arr.job, why, arr.job,
				   fix) ? -1 : -1;
		usleep(200000);
	}
}

/* Opens a client connection to the pool's coordinator. */
static int client_open(struct dlrt_ipc *c, char *dir, size_t len)
{
	struct dlrt_err err;
	char name[64];
	int tmo;

	if (pool_dir(dir, len) < 0)
		return -1;
	snprintf(client_dir, sizeof(client_dir), "%s", dir);
	snprintf(name, sizeof(name), "client-%d", (int)getpid());
	/* Right after pool start the array may still be queued: its coordinator
	 * takes the jobs once it serves, so wait for it (bounded). */
	switch (pool_starting(dir, &(struct dlrt_pool_array){ 0 })) {
	case -1:
		return -1;
	case 1:
		tmo = start_timeout();
		if (tmo < 0 || wait_coordinator(dir, tmo, "wait longer with "
						"DLRT_INFER_START_TIMEOUT=SECONDS") < 0)
			return -1;
	}
	/* A coordinator that does not answer (killed, stopped, its node lost) may
	 * be replaced by its standby within seconds: read the record again and
	 * retry for RECONNECT_MS. A refusal, or no record at all, is final. */
	for (int64_t give_up = dlrt_now_ms() + RECONNECT_MS;;) {
		if (dlrt_ipc_open(c, dir, DLRT_IP_ROLE_CLIENT, name, 2000, &err) == 0)
			return 0;
		if ((!strstr(err.msg, "the coordinator at ") && !strstr(err.msg, "did not answer") &&
		     !strstr(err.msg, "closed the connection") &&
		     !strstr(err.msg, "lost the connection")) || dlrt_now_ms() > give_up)
			break;
		usleep(100000);
	}
	die("%s", err.msg);
	return -1;
}

/* Sends c->out and waits for one frame (-1 after printing the error; an
 * ERROR frame is printed too). When the coordinator is lost on the way (its
 * standby takes over), reconnects through the access record and sends the
 * request again, for up to RECONNECT_MS: every request is safe to repeat
 * (a SUBMIT carries its token). */
static int client_call(struct dlrt_ipc *c, struct dlrt_ip_frame *f, int timeout_ms)
{
	struct dlrt_err err;
	struct dlrt_buf req;
	int64_t give_up = 0;
	char name[64];
	int rc = -1;

	dlrt_buf_init(&req, (size_t)-1);
	if (dlrt_buf_append(&req, dlrt_buf_head(&c->out), c->out.len) < 0)
		return die("out of memory") ? -1 : -1;
	snprintf(name, sizeof(name), "client-%d", (int)getpid());
	for (;;) {
		struct dlrt_err e2;

		if (c->fd >= 0 && dlrt_ipc_flush(c, CLIENT_TIMEOUT_MS, &err) == 0) {
			rc = dlrt_ipc_recv(c, f, timeout_ms, &err);
			if (rc == 0) {
				dlrt_buf_free(&req);
				return die("the coordinator did not answer within %d s",
					   timeout_ms / 1000) ? -1 : -1;
			}
			if (rc == 1)
				break;
		}
		if (!give_up)
			give_up = dlrt_now_ms() + RECONNECT_MS;
		dlrt_ipc_close(c);
		while (c->fd < 0 && dlrt_now_ms() < give_up) {
			usleep(100000);
			if (dlrt_ipc_open(c, client_dir, DLRT_IP_ROLE_CLIENT, name, 2000, &e2) < 0)
				c->fd = -1;
		}
		if (c->fd < 0 || dlrt_buf_append(&c->out, dlrt_buf_head(&req), req.len) < 0) {
			dlrt_buf_free(&req);
			return die("%s; no coordinator answered for %d s", err.msg,
				   RECONNECT_MS / 1000) ? -1 : -1;
		}
	}
	dlrt_buf_free(&req);
	if (f->type == DLRT_IP_ERROR) {
		struct dlrt_ip_text t;

		if (dlrt_ip_get_error(f->payload, f->len, &t, &err) < 0)
			return die("%s", err.msg) ? -1 : -1;
		return die("%s", t.text) ? -1 : -1;
	}
	return 0;
}

/* ---- submit ---------------------------------------------------------------------- */

/* Debian's names: X-images-idx3-ubyte[.gz] has its labels in X-labels-idx1-ubyte[.gz]. */
static int guess_labels(const char *inputs, char *out, size_t len)
{
	const char *p = strstr(inputs, "-images-idx3-ubyte");

	if (!p || (size_t)(p - inputs) + 40 + strlen(p) >= len)
		return -1;
	snprintf(out, len, "%.*s-labels-idx1-ubyte%s", (int)(p - inputs), inputs,
		 p + strlen("-images-idx3-ubyte"));
	return access(out, R_OK) == 0 ? 0 : -1;
}

static int cmd_submit(int argc, char **argv)
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
	struct dlrt_ip_frame f;
	char dir[4096], abs_in[PATH_MAX], abs_out[PATH_MAX], guessed[PATH_MAX];
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
	/* An IDX file, or a text file listing one image file per line. */
	is_idx = dlrt_inputs_is_idx(abs_in) == 1;
	if ((is_idx ? dlrt_idx_load(&img, abs_in, &err) : dlrt_inputs_load_list(&img, abs_in, &err)) < 0)
		return die("%s", err.msg);
	if (img.ndims != 3 || img.item_size != 784) {
		dlrt_idx_free(&img);
		return die("--inputs %s: expected 28x28 images (N x 28 x 28), not a %u-dimensional "
			   "file of %zu bytes per item", abs_in, img.ndims, img.item_size);
	}
	if (!have_count) {
		if (s.first >= img.count) {
			dlrt_idx_free(&img);
			return die("--first %u: %s has only %zu inputs", s.first, abs_in, img.count);
		}
		s.count = (uint32_t)(img.count - s.first);
	}
	if ((uint64_t)s.first + s.count > img.count) {
		dlrt_idx_free(&img);
		return die("--first %u --count %u: %s has only %zu inputs", s.first, s.count, abs_in,
			   img.count);
	}
	if (!labels && !no_labels && guess_labels(abs_in, guessed, sizeof(guessed)) == 0)
		labels = guessed;
	if (labels && !no_labels) {
		if (dlrt_idx_load(&lab, labels, &err) < 0 ||
		    dlrt_idx_check_labels(&img, &lab, 10, &err) < 0) {
			dlrt_idx_free(&img);
			dlrt_idx_free(&lab);
			return die("%s", err.msg);
		}
		s.nlabels = s.count;
		s.labels = (uint8_t *)lab.data + s.first;
	}
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
	if (dlrt_ip_put_submit(&c.out, &s) < 0) {
		die("the job description is too large");
		goto out_close;
	}
	if (client_call(&c, &f, CLIENT_TIMEOUT_MS) < 0)
		goto out_close;
	{
		struct dlrt_ip_jobref r;

		if (f.type != DLRT_IP_SUBMITTED || dlrt_ip_get_jobref(f.payload, f.len, &r, &err) < 0) {
			die("unexpected answer %s to SUBMIT", dlrt_ip_type_name(f.type));
			goto out_close;
		}
		printf("%u\n", r.job);
		fflush(stdout);
		rc = 0;
		if (wait_end) {
			struct dlrt_ip_job_info info;

			dlrt_ip_put_jobref(&c.out, DLRT_IP_WAIT, r.job);
			if (client_call(&c, &f, 24 * 3600 * 1000) < 0 ||
			    dlrt_ip_get_jobend(f.payload, f.len, &info, &err) < 0)
				rc = 1;
			else
				rc = info.state == DLRT_IP_JOB_DONE ? 0 : 1;
		}
	}
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

static int cmd_status(int argc, char **argv)
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

/* ---- wait, cancel, stop ------------------------------------------------------------ */

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

static int cmd_wait(int argc, char **argv)
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
		printf(", %.2f s, results in %s%s%s\n", info.elapsed, info.out,
		       info.error[0] ? ": " : "", info.error);
		rc = info.state == DLRT_IP_JOB_DONE ? 0 : 1;
	}
	dlrt_ipc_close(&c);
	return rc;
}

static int cmd_cancel(int argc, char **argv)
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

/* pool stop before the coordinator started: scancel the array. */
static int cancel_array(const char *dir, const struct dlrt_pool_array *arr)
{
	char job[16], text[64], path[4200];
	char *argv[] = { "scancel", job, NULL };
	struct dlrt_proc_spec spec = { .argv = argv, .envp = environ, .timeout_ms = SLURM_CMD_MS };
	struct dlrt_proc_result res;
	struct dlrt_err err;

	snprintf(job, sizeof(job), "%u", arr->job);
	if (dlrt_proc_run(&spec, "scancel", NULL, &res, &err) < 0)
		return die("%s", err.msg);
	if (!WIFEXITED(res.status) || WEXITSTATUS(res.status))
		return die("scancel %u failed (%s): cancel the pool's array yourself", arr->job,
			   dlrt_proc_status_text(res.status, text, sizeof(text)));
	snprintf(path, sizeof(path), "%s/array", dir);
	unlink(path);
	printf("pool %s stopping: array job %u cancelled before its coordinator started\n", dir,
	       arr->job);
	return 0;
}

static int cmd_pool_stop(void)
{
	struct dlrt_ipc c;
	struct dlrt_ip_frame f;
	char dir[4096];
	int rc;

	struct dlrt_pool_array arr;
	char path[4200];

	if (pool_dir(dir, sizeof(dir)) < 0)
		return 1;
	rc = pool_starting(dir, &arr);
	if (rc < 0)
		return 1;
	if (rc == 1)
		/* No coordinator to ask yet: the pool is its queued array. */
		return cancel_array(dir, &arr);
	if (client_open(&c, dir, sizeof(dir)) < 0)
		return 1;
	dlrt_ip_put_empty(&c.out, DLRT_IP_STOP);
	rc = client_call(&c, &f, CLIENT_TIMEOUT_MS) == 0 && f.type == DLRT_IP_OK ? 0 : 1;
	if (rc == 0)
		printf("pool %s stopping\n", dir);
	/* The array record has served its purpose. */
	snprintf(path, sizeof(path), "%s/array", dir);
	if (rc == 0)
		unlink(path);
	dlrt_ipc_close(&c);
	return rc;
}

/* ---- coordinator, worker, pool -------------------------------------------------- */

static int run_coordinator(uint32_t prefetch, double window, const char *address,
			   const char *heartbeat, const char *auth)
{
	struct dlrt_coord_opts o = { .prefetch = prefetch, .window = window, .address = address,
				     .heartbeat = heartbeat, .auth = auth };
	struct dlrt_err err;
	char dir[4096];

	if (pool_dir(dir, sizeof(dir)) < 0)
		return 1;
	o.pool = dir;
	if (dlrt_coord_run(&o, &err) < 0)
		return die("%s", err.msg);
	return 0;
}

static int run_worker(const char *name, const char *model_dir, int wait_s, const char *margin,
		      uint32_t prefetch, double window, const char *auth)
{
	uint64_t min_epoch = 0;
	struct dlrt_worker_opts o = { .model_dir = model_dir, .wait_s = wait_s,
				      .walltime_margin = margin };
	struct dlrt_err err;
	char dir[4096], nm[DLRT_IP_NAME_MAX + 1], host[64] = "";

	if (pool_dir(dir, sizeof(dir)) < 0)
		return 1;
	o.pool = dir;
	if (!name) {
		const char *aj = getenv("SLURM_ARRAY_JOB_ID"), *at = getenv("SLURM_ARRAY_TASK_ID");
		const char *job = getenv("SLURM_JOB_ID");

		/* host/arrayjob_index: unique even when more arrays join the pool. */
		gethostname(host, sizeof(host) - 1);
		if (aj && at)
			snprintf(nm, sizeof(nm), "%s/%s_%s", host, aj, at);
		else if (job)
			snprintf(nm, sizeof(nm), "%s/%s", host, job);
		else
			snprintf(nm, sizeof(nm), "%s/pid-%d", host, (int)getpid());
		name = nm;
	}
	o.name = name;
	/* The element's index staggers takeover attempts (infer.h). */
	if (getenv("DLRT_INFER_INDEX"))
		o.index = atoi(getenv("DLRT_INFER_INDEX"));
	else if (getenv("SLURM_ARRAY_TASK_ID"))
		o.index = atoi(getenv("SLURM_ARRAY_TASK_ID"));
	for (;;) {
		struct dlrt_coord_opts co = { .pool = dir, .prefetch = prefetch, .window = window,
					      .heartbeat = getenv("DLRT_INFER_HEARTBEAT"),
					      .auth = auth, .yield = true, .min_epoch = min_epoch };
		uint64_t high = 0;
		int rc = dlrt_worker_run(&o, &err);

		if (rc < 0)
			return die("%s", err.msg);
		if (rc != DLRT_WORKER_TAKEOVER)
			return 0;
		/* The coordinator and its standby are both lost: this element runs
		 * the coordinator from the journal, unless another claimed it first. */
		rc = dlrt_coord_run(&co, &err);
		if (rc < 0)
			return die("%s", err.msg);
		if (rc != DLRT_COORD_YIELDED)
			return 0;
		fprintf(stderr, "dlrt-infer worker: another coordinator serves the pool: working on\n");
		/* If that one died before it served, a later attempt goes past
		 * its claim, once the claim is a minute old. */
		if (dlrt_claim_highest(dir, &high, &err) == 0 && high &&
		    dlrt_claim_stale(dir, high, 60))
			min_epoch = high + 1;
	}
}

static int run_standby(uint32_t prefetch, double window, const char *name)
{
	struct dlrt_standby_opts o = { 0 };
	struct dlrt_err err;
	struct dlrt_buf log;
	char dir[4096], nm[DLRT_IP_NAME_MAX + 1], host[64] = "";
	int rc;

	if (pool_dir(dir, sizeof(dir)) < 0)
		return 1;
	o.pool = dir;
	if (!name) {
		gethostname(host, sizeof(host) - 1);
		snprintf(nm, sizeof(nm), "%s/pid-%d", host, (int)getpid());
		name = nm;
	}
	o.name = name;
	rc = dlrt_standby_run(&o, &log, &err);
	if (rc < 0)
		return die("%s", err.msg);
	if (rc == DLRT_STANDBY_TAKEOVER) {
		/* The coordinator is gone: this process becomes the next one,
		 * from the changes the standby holds. */
		struct dlrt_coord_opts co = { .pool = dir, .prefetch = prefetch, .window = window,
					      .log = dlrt_buf_head(&log), .loglen = log.len,
					      .takeover = true,
					      .heartbeat = getenv("DLRT_INFER_HEARTBEAT") };

		rc = dlrt_coord_run(&co, &err);
		dlrt_buf_free(&log);
		if (rc < 0)
			return die("%s", err.msg);
	}
	return 0;
}

static double env_double(const char *name, double def)
{
	const char *v = getenv(name);

	return v && *v ? atof(v) : def;
}

static int cmd_service(int argc, char **argv, const char *what)
{
	static const struct option lo[] = {
		{ "pool", required_argument, NULL, 'p' }, { "prefetch", required_argument, NULL, 'k' },
		{ "window", required_argument, NULL, 'W' }, { "address", required_argument, NULL, 'a' },
		{ "name", required_argument, NULL, 'n' }, { "model-dir", required_argument, NULL, 'd' },
		{ "wait", required_argument, NULL, 'w' }, { "help", no_argument, NULL, 'h' },
		{ "heartbeat", required_argument, NULL, 'B' },
		{ "walltime-margin", required_argument, NULL, 'M' },
		{ "auth", required_argument, NULL, 'A' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t prefetch = (uint32_t)env_double("DLRT_INFER_PREFETCH", 1), wait_s = 300;
	const char *auth = NULL;
	const char *heartbeat = getenv("DLRT_INFER_HEARTBEAT");
	const char *margin = getenv("DLRT_INFER_WALLTIME_MARGIN");
	struct dlrt_err verr;
	struct dlrt_hb hbc;
	int64_t mg;
	double window = env_double("DLRT_INFER_WINDOW", 0.5);
	const char *address = NULL, *name = NULL, *model_dir = NULL, *role = what;
	int opt;

	while ((opt = getopt_long(argc, argv, "p:k:W:a:n:d:w:B:M:A:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'p': pool_opt = optarg; break;
		case 'k': if (parse_u32_opt("prefetch", optarg, 1, 64, &prefetch)) return 2; break;
		case 'W': if (parse_seconds_opt("window", optarg, 0.1, 60, &window)) return 2; break;
		case 'a': address = optarg; break;
		case 'n': name = optarg; break;
		case 'd': model_dir = optarg; break;
		case 'w': if (parse_u32_opt("wait", optarg, 1, 86400, &wait_s)) return 2; break;
		case 'B': heartbeat = optarg; break;
		case 'M': margin = optarg; break;
		case 'A': auth = optarg; break;
		case 'h':
			printf("usage: dlrt-infer pool run     (inside sbatch --dl-runtime=infer)\n"
			       "       dlrt-infer coordinator [--pool DIR] [--prefetch K] [--window S]\n"
			       "                              [--address IP] [--heartbeat S]\n"
			       "                              [--auth munge|secret|auto]\n"
			       "       dlrt-infer worker [--pool DIR] [--name N] [--model-dir DIR] [--wait S]\n"
			       "                         [--walltime-margin S]\n"
			       "       dlrt-infer standby [--pool DIR] [--name N]\n"
			       "pool run becomes the coordinator in array element 0 and a worker in\n"
			       "the others ($DLRT_INFER_ROLE, set by the infer runtime). A worker asked\n"
			       "by the coordinator starts `standby`: the hot standby coordinator, which\n"
			       "takes over when the coordinator dies (docs/inference.md).\n"
			       "  --prefetch K  tasks in flight per worker (default 1)\n"
			       "  --window S    rate window in seconds (default 0.5)\n"
			       "  --heartbeat S a silent worker is declared dead within S seconds and\n"
			       "                its tasks run elsewhere (default 2; $DLRT_INFER_HEARTBEAT)\n"
			       "  --auth M      how connections prove they are the pool owner: munge,\n"
			       "                secret (challenge-response with the access record's\n"
			       "                secret) or auto (munge if munged answers; default;\n"
			       "                $DLRT_INFER_AUTH)\n"
			       "  --wait S      how long a worker waits for a coordinator (300)\n"
			       "  --walltime-margin S  a worker this close to its Slurm time limit gets\n"
			       "                no new task (default 60, 0 = off;\n"
			       "                $DLRT_INFER_WALLTIME_MARGIN)\n");
			return 0;
		default: return 2;
		}
	}
	if (optind < argc)
		return die("%s: unexpected argument '%s'", what, argv[optind]) + 1;
	if (prefetch < 1 || prefetch > 64)
		return die("DLRT_INFER_PREFETCH must be 1..64") + 1;
	if (dlrt_hb_config(heartbeat, &hbc, &verr) < 0 ||
	    dlrt_walltime_margin(margin, &mg, &verr) < 0)
		return die("%s", verr.msg) + 1;
	if (!strcmp(what, "run")) {
		const char *rt = getenv("DLRT_RUNTIME");

		role = getenv("DLRT_INFER_ROLE");
		if (!rt || strcmp(rt, "infer") || !role)
			return die("pool run must run inside a step of sbatch --dl-runtime=infer (it "
				   "reads DLRT_INFER_ROLE); use dlrt-infer pool start") + 1;
		fprintf(stderr, "dlrt-infer: array element %s: %s\n",
			getenv("DLRT_INFER_INDEX") ? getenv("DLRT_INFER_INDEX") : "?", role);
	}
	if (!strcmp(role, "coordinator"))
		return run_coordinator(prefetch, window, address, heartbeat, auth);
	if (!strcmp(role, "worker"))
		return run_worker(name, model_dir, (int)wait_s, margin, prefetch, window, auth);
	if (!strcmp(role, "standby"))
		return run_standby(prefetch, window, name);
	return die("unknown role '%s'", role) + 1;
}

enum pool_mode { POOL_START, POOL_ADD, POOL_RESTART };

/* pool start begins a new history: a journal left by an earlier pool is kept
 * as journal.prev (so its jobs are not resumed), unless that pool still runs. */
static int pool_new_history(const char *dir)
{
	struct dlrt_pool_access a;
	struct dlrt_err err;
	struct dlrt_ipc c;
	char path[4200], prev[4300];

	if (dlrt_pool_read_access(dir, &a, &err) == 0 &&
	    dlrt_ipc_open(&c, dir, DLRT_IP_ROLE_CLIENT, "pool-start", 2000, &err) == 0) {
		dlrt_ipc_close(&c);
		return die("a pool is already running in %s (epoch %llu): stop it first (dlrt-infer "
			   "pool stop), add workers (pool add), or give another --pool", dir,
			   (unsigned long long)a.epoch);
	}
	snprintf(path, sizeof(path), "%s/journal", dir);
	snprintf(prev, sizeof(prev), "%s/journal.prev", dir);
	if (rename(path, prev) < 0 && errno != ENOENT)
		return die("cannot move the old journal %s aside: %s", path, strerror(errno));
	/* The old history's epoch claims (claim.h) go with its journal. */
	if (dlrt_claim_clear(dir, &err) < 0)
		return die("%s", err.msg);
	return 0;
}

/* Runs sbatch (argv av) and prints the array job id. For an array whose
 * element 0 is a coordinator, leaves the array record (poolarray.h) so that
 * clients started at once wait for that coordinator instead of failing; with
 * wait_s, waits as long for it to serve. The exit status. */
static int submit_array(const char *dir, const char **av, bool coordinator, uint32_t wait_s)
{
	struct dlrt_proc_spec spec = { .argv = (char *const *)av, .envp = environ,
				       .timeout_ms = SLURM_CMD_MS, .out_max = 65536,
				       .with_stderr = true };
	struct dlrt_pool_array arr = { 0 };
	struct dlrt_pool_access acc;
	struct dlrt_proc_result res;
	struct dlrt_buf out;
	struct dlrt_err err;
	char text[64];
	int rc;

	/* The epoch now: the coordinator to come writes a higher one. */
	if (dlrt_pool_read_access(dir, &acc, &err) == 0)
		arr.after_epoch = acc.epoch;
	dlrt_buf_init(&out, 65536 + 1);
	rc = dlrt_proc_run(&spec, "sbatch", &out, &res, &err);
	if (rc == 0 && dlrt_buf_append(&out, "", 1) < 0)
		out.len--; /* full: the cap holds the terminator's place */
	if (rc < 0 || !WIFEXITED(res.status) || WEXITSTATUS(res.status) ||
	    dlrt_pool_sbatch_parse((const char *)dlrt_buf_head(&out), out.len, &arr.job,
				   &err) < 0) {
		fwrite(dlrt_buf_head(&out), 1, out.len ? strlen((const char *)dlrt_buf_head(&out)) : 0,
		       stderr);
		dlrt_buf_free(&out);
		if (rc < 0)
			return die("%s (is Slurm's client installed?)", err.msg);
		return die("sbatch did not submit the pool (%s): see its message above",
			   dlrt_proc_status_text(res.status, text, sizeof(text)));
	}
	/* sbatch's warnings stay on stderr; stdout is the id alone. */
	for (char *l = (char *)dlrt_buf_head(&out), *nl; l && *l; l = nl ? nl + 1 : NULL) {
		nl = strchr(l, '\n');
		if (nl)
			*nl = '\0';
		if ((unsigned long)strtoul(l, NULL, 10) != arr.job)
			fprintf(stderr, "%s\n", l);
	}
	dlrt_buf_free(&out);
	printf("%u\n", arr.job);
	fflush(stdout);
	if (!coordinator)
		return 0;
	if (dlrt_pool_array_write(dir, &arr, &err) < 0) {
		/* The array is queued all the same: not a failure of pool start. */
		fprintf(stderr, "%s: warning: %s: a submit before the coordinator serves fails "
			"instead of waiting for it\n", prog, err.msg);
		return wait_s ? 1 : 0;
	}
	if (wait_s) {
		struct dlrt_ipc c;
		char d2[4096], fix[160];

		snprintf(fix, sizeof(fix), "give --timeout SECONDS to wait longer; the array stays "
			 "queued (scancel %u drops it)", arr.job);
		if (wait_coordinator(dir, (int)wait_s, fix) < 0)
			return 1;
		/* Serving means answering: connect and say HELLO. */
		if (client_open(&c, d2, sizeof(d2)) < 0)
			return 1;
		dlrt_ipc_close(&c);
	}
	return 0;
}

static int cmd_pool_start(int argc, char **argv, enum pool_mode mode)
{
	bool add = mode == POOL_ADD;
	static const struct option lo[] = {
		{ "workers", required_argument, NULL, 'N' }, { "pool", required_argument, NULL, 'p' },
		{ "prefetch", required_argument, NULL, 'k' }, { "window", required_argument, NULL, 'W' },
		{ "dry-run", no_argument, NULL, 'D' }, { "help", no_argument, NULL, 'h' },
		{ "heartbeat", required_argument, NULL, 'B' },
		{ "walltime-margin", required_argument, NULL, 'M' },
		{ "wait", no_argument, NULL, 'w' }, { "timeout", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t workers = 0, prefetch = 1, wait_s = 0, timeout_s = START_TIMEOUT_S;
	const char *heartbeat = NULL, *margin = NULL;
	struct dlrt_hb hbc;
	int64_t mg;
	double window = 0.5;
	bool dry = false;
	char dir[4096], exe[PATH_MAX], arr[32], logs[4200], wrap[PATH_MAX + 64], env[4400];
	const char *av[64];
	int ac = 0, opt;
	ssize_t n;
	struct dlrt_err err;

	while ((opt = getopt_long(argc, argv, "+N:p:k:W:B:M:DwT:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'N':
			if (parse_u32_opt("workers", optarg, mode == POOL_RESTART ? 0 : 1, 10000,
					  &workers))
				return 2;
			break;
		case 'p': pool_opt = optarg; break;
		case 'k': if (parse_u32_opt("prefetch", optarg, 1, 64, &prefetch)) return 2; break;
		case 'W': if (parse_seconds_opt("window", optarg, 0.1, 60, &window)) return 2; break;
		case 'D': dry = true; break;
		case 'w': wait_s = 1; break;
		case 'T':
			if (parse_u32_opt("timeout", optarg, 1, 7 * 86400, &timeout_s))
				return 2;
			break;
		case 'B':
			heartbeat = optarg;
			if (dlrt_hb_config(heartbeat, &hbc, &err) < 0)
				return die("--heartbeat: %s", err.msg) + 1;
			break;
		case 'M':
			margin = optarg;
			if (dlrt_walltime_margin(margin, &mg, &err) < 0)
				return die("--walltime-margin: %s", err.msg) + 1;
			break;
		case 'h':
			if (mode == POOL_RESTART) {
				printf("usage: dlrt-infer pool restart [--workers N] [--pool DIR] [--prefetch K]\n"
				       "                               [--window S] [--dry-run] [--wait [--timeout S]]\n"
				       "                               [-- SBATCH-ARGS...]\n"
				       "After both coordinators were lost: submits a new coordinator (and N\n"
				       "new workers, default 0) as sbatch --array=0-N --dl-runtime=infer.\n"
				       "It replays the pool's journal (cutting a torn tail), rebuilds the\n"
				       "results files and resumes every unfinished job: no recorded answer\n"
				       "is recomputed or lost. Workers still running reconnect on their own.\n"
				       "Prints the array job id; --wait as for pool start.\n");
				return 0;
			}
			if (add) {
				printf("usage: dlrt-infer pool add --workers N [--pool DIR] [-- SBATCH-ARGS...]\n"
				       "Submits N more workers for a running pool, as another job array\n"
				       "(sbatch --array=1-N --dl-runtime=infer --wrap 'srun dlrt-infer worker').\n"
				       "They join as Slurm starts them. Prints the array job id.\n");
				return 0;
			}
			printf("usage: dlrt-infer pool start --workers N [--pool DIR] [--prefetch K]\n"
			       "                             [--window S] [--heartbeat S]\n"
			       "                             [--walltime-margin S] [--dry-run]\n"
			       "                             [--wait [--timeout S]] [-- SBATCH-ARGS...]\n"
			       "Submits the pool as one job array of N+1 elements:\n"
			       "  sbatch --array=0-N --dl-runtime=infer ... --wrap 'srun dlrt-infer pool run'\n"
			       "Element 0 is the coordinator, elements 1..N are workers; more workers\n"
			       "can join later (dlrt-infer worker, or another array). Arguments after\n"
			       "-- go to sbatch (e.g. -c 4 --time 1:00:00). Prints the array job id.\n"
			       "submit, wait and cancel may follow at once: until Slurm starts the\n"
			       "coordinator they wait for it, with one line saying why (up to\n"
			       "$DLRT_INFER_START_TIMEOUT seconds, default %d).\n"
			       "  --wait       return only once the coordinator serves\n"
			       "  --timeout S  how long --wait waits (default %d); the array stays\n"
			       "               queued when it gives up\n", START_TIMEOUT_S, START_TIMEOUT_S);
			return 0;
		default: return 2;
		}
	}
	if (wait_s && add)
		return die("pool add --wait: workers join a running pool as Slurm starts them; "
			   "there is nothing to wait for") + 1;
	if (wait_s)
		wait_s = timeout_s;
	if (!workers && mode != POOL_RESTART)
		return die("pool %s needs --workers N (see dlrt-infer pool %s --help)",
			   add ? "add" : "start", add ? "add" : "start") + 1;
	if (pool_dir(dir, sizeof(dir)) < 0)
		return 1;
	if (dlrt_pool_prepare(dir, &err) < 0)
		return die("%s", err.msg);
	if (mode == POOL_RESTART) {
		struct stat sb;
		char jpath[4200];

		snprintf(jpath, sizeof(jpath), "%s/journal", dir);
		struct dlrt_pool_access acc;
		struct dlrt_ipc ic;

		if (stat(jpath, &sb) < 0)
			return die("%s has no journal: nothing to restart (dlrt-infer pool start "
				   "starts a new pool)", dir);
		if (!dry && dlrt_pool_read_access(dir, &acc, &err) == 0 &&
		    dlrt_ipc_open(&ic, dir, DLRT_IP_ROLE_CLIENT, "pool-restart", 2000, &err) == 0) {
			dlrt_ipc_close(&ic);
			return die("the coordinator of %s (epoch %llu) still runs: nothing to restart",
				   dir, (unsigned long long)acc.epoch);
		}
	} else if (!add && !dry && pool_new_history(dir) != 0) {
		return 1;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return die("cannot find this program's path: %s", strerror(errno));
	exe[n] = '\0';
	snprintf(logs, sizeof(logs), "%s/element-%%A_%%a.log", dir);
	snprintf(arr, sizeof(arr), "--array=%u-%u", add ? 1 : 0, workers);
	snprintf(wrap, sizeof(wrap), "exec srun --ntasks=1 %s %s", exe, add ? "worker" : "pool run");
	snprintf(env, sizeof(env), "ALL,DLRT_INFER_POOL=%s,DLRT_INFER_PREFETCH=%u,"
		 "DLRT_INFER_WINDOW=%g%s%.40s%s%.40s", dir, prefetch, window,
		 heartbeat ? ",DLRT_INFER_HEARTBEAT=" : "", heartbeat ? heartbeat : "",
		 margin ? ",DLRT_INFER_WALLTIME_MARGIN=" : "", margin ? margin : "");
	av[ac++] = "sbatch";
	av[ac++] = "--parsable";
	av[ac++] = arr;
	av[ac++] = "--dl-runtime=infer";
	av[ac++] = "--job-name=dlrt-infer";
	av[ac++] = "--ntasks=1";
	av[ac++] = "-o";
	av[ac++] = logs;
	av[ac++] = "--export";
	av[ac++] = env;
	for (int i = optind; i < argc && ac < 60; i++)
		av[ac++] = argv[i];
	av[ac++] = "--wrap";
	av[ac++] = wrap;
	av[ac] = NULL;
	if (dry) {
		for (int i = 0; i < ac; i++)
			printf("%s%s", i ? " " : "", av[i]);
		printf("\n");
		return 0;
	}
	return submit_array(dir, av, mode != POOL_ADD, wait_s);
}

static int cmd_pool(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		printf("usage: dlrt-infer pool start --workers N [...] | pool add --workers N [...]\n"
		       "       dlrt-infer pool restart [--workers N] [...] | pool stop | pool run\n"
		       "(dlrt-infer pool start --help for details)\n");
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "start"))
		return cmd_pool_start(argc - 1, argv + 1, POOL_START);
	if (!strcmp(argv[1], "add"))
		return cmd_pool_start(argc - 1, argv + 1, POOL_ADD);
	if (!strcmp(argv[1], "restart"))
		return cmd_pool_start(argc - 1, argv + 1, POOL_RESTART);
	if (!strcmp(argv[1], "run"))
		return cmd_service(argc - 1, argv + 1, "run");
	if (!strcmp(argv[1], "stop")) {
		int rc = pool_only_opts(argc - 1, argv + 1,
					"usage: dlrt-infer pool stop [--pool DIR]\nThe coordinator "
					"removes its access record and exits; workers see that and exit, "
					"so the array's elements end.\n");

		return rc >= 0 ? rc : cmd_pool_stop();
	}
	return die("unknown pool command '%s': start, add, restart, stop or run", argv[1]) + 1;
}

/* ---- local: the single-process reference ---------------------------------------- */

static int cmd_local(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "model", required_argument, NULL, 'm' }, { "inputs", required_argument, NULL, 'i' },
		{ "batch", required_argument, NULL, 'b' }, { "first", required_argument, NULL, 'f' },
		{ "count", required_argument, NULL, 'c' }, { "labels", required_argument, NULL, 'l' },
		{ "out", required_argument, NULL, 'o' }, { "model-dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	const char *model = NULL, *inputs = NULL, *labels = NULL, *out = NULL, *mdir = NULL;
	uint32_t batch = 16, first = 0, count = 0;
	struct dlrt_idx img = { 0 }, lab = { 0 };
	struct dlrt_model *m = NULL;
	struct dlrt_err err;
	char guessed[PATH_MAX];
	int opt, rc = 1;
	int *pred = NULL;
	float *score = NULL;
	uint32_t correct = 0;
	FILE *f = stdout;

	while ((opt = getopt_long(argc, argv, "m:i:b:f:c:l:o:d:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'm': model = optarg; break;
		case 'i': inputs = optarg; break;
		case 'b': if (parse_u32_opt("batch", optarg, 1, DLRT_IP_MAX_BATCH, &batch)) return 2; break;
		case 'f': if (parse_u32_opt("first", optarg, 0, DLRT_IP_MAX_QUERIES, &first)) return 2; break;
		case 'c': if (parse_u32_opt("count", optarg, 1, DLRT_IP_MAX_QUERIES, &count)) return 2; break;
		case 'l': labels = optarg; break;
		case 'o': out = optarg; break;
		case 'd': mdir = optarg; break;
		case 'h':
			printf("usage: dlrt-infer local --model M --inputs FILE [--batch B] [--first I]\n"
			       "         [--count N] [--labels FILE] [--out CSV] [--model-dir DIR]\n"
			       "Answers the queries in this process, one batch at a time, and writes\n"
			       "input_index,prediction,score (to --out or stdout) and the accuracy (to\n"
			       "stderr): the reference a pool's answers must equal.\n");
			return 0;
		default: return 2;
		}
	}
	if (!model || !inputs)
		return die("local needs --model and --inputs") + 1;
	if (dlrt_model_open(&m, model, mdir, &err) < 0 || dlrt_idx_load(&img, inputs, &err) < 0) {
		die("%s", err.msg);
		goto out;
	}
	if (img.item_size != dlrt_model_input_size(m) || first >= img.count) {
		die("%s does not hold 28x28 images from index %u", inputs, first);
		goto out;
	}
	if (!count || (uint64_t)first + count > img.count)
		count = (uint32_t)(img.count - first);
	if (!labels && guess_labels(inputs, guessed, sizeof(guessed)) == 0)
		labels = guessed;
	if (labels && (dlrt_idx_load(&lab, labels, &err) < 0 ||
		       dlrt_idx_check_labels(&img, &lab, 10, &err) < 0)) {
		die("%s", err.msg);
		goto out;
	}
	if (out && !(f = fopen(out, "w"))) {
		die("cannot write %s: %s", out, strerror(errno));
		goto out;
	}
	pred = malloc(batch * sizeof(*pred));
	score = malloc(batch * sizeof(*score));
	if (!pred || !score)
		goto out;
	fprintf(f, "input_index,prediction,score\n");
	for (uint32_t q = 0; q < count; q += batch) {
		uint32_t n = count - q < batch ? count - q : batch;

		if (dlrt_model_infer_u8(m, img.data + (size_t)(first + q) * img.item_size, n, pred,
					score, &err) < 0) {
			die("%s", err.msg);
			goto out;
		}
		for (uint32_t i = 0; i < n; i++) {
			fprintf(f, "%u,%d,%.6f\n", first + q + i, pred[i], (double)score[i]);
			if (lab.data && pred[i] == lab.data[first + q + i])
				correct++;
		}
	}
	if (lab.data)
		fprintf(stderr, "accuracy %.2f%% (%u/%u)\n", 100.0 * correct / count, correct, count);
	rc = 0;
out:
	if (f && f != stdout)
		fclose(f);
	free(pred);
	free(score);
	dlrt_model_free(m);
	dlrt_idx_free(&img);
	dlrt_idx_free(&lab);
	return rc;
}

int dlrt_infer_plot(int argc, char **argv, const char *pool);

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version")) {
		printf("dlrt-infer %s\n", DLRT_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "submit"))
		return cmd_submit(argc - 1, argv + 1);
	if (!strcmp(cmd, "status"))
		return cmd_status(argc - 1, argv + 1);
	if (!strcmp(cmd, "wait"))
		return cmd_wait(argc - 1, argv + 1);
	if (!strcmp(cmd, "cancel"))
		return cmd_cancel(argc - 1, argv + 1);
	if (!strcmp(cmd, "pool"))
		return cmd_pool(argc - 1, argv + 1);
	if (!strcmp(cmd, "coordinator") || !strcmp(cmd, "worker") || !strcmp(cmd, "standby"))
		return cmd_service(argc - 1, argv + 1, cmd);
	if (!strcmp(cmd, "local"))
		return cmd_local(argc - 1, argv + 1);
	if (!strcmp(cmd, "plot"))
		return dlrt_infer_plot(argc - 1, argv + 1, NULL);
	usage(stderr);
	return die("unknown command '%s'", cmd) + 1;
}
