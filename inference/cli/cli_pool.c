/* cli_pool.c - dlrt-infer pool: start, add and restart submit the pool's job
 * array with sbatch (a new pool moves the old journal aside; restart
 * resumes from it) and leave the array record that lets clients wait for a
 * coordinator Slurm has not started yet; stop asks the coordinator to end
 * the pool, or cancels the array while it is still queued; run is what each
 * array element executes (cli_service.c).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/proc.h"
#include "inference/pool/claim.h"
#include "cli.h"
#include "inference/coord/coord.h"
#include "inference/liveness.h"

extern char **environ;

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

/* pool start, add and restart --help. */
static void pool_start_usage(enum pool_mode mode)
{
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
			return;
		}
		if (mode == POOL_ADD) {
			printf("usage: dlrt-infer pool add --workers N [--pool DIR] [-- SBATCH-ARGS...]\n"
			       "Submits N more workers for a running pool, as another job array\n"
			       "(sbatch --array=1-N --dl-runtime=infer --wrap 'srun dlrt-infer worker').\n"
			       "They join as Slurm starts them. Prints the array job id.\n");
			return;
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
}

/* The pool's history before sbatch: restart needs a journal and no coordinator
 * still serving; start begins a new history (pool_new_history); add changes
 * nothing. A dry run only checks that a restart has a journal. 0, or 1 once
 * the reason is printed. */
static int pool_prepare_history(const char *dir, enum pool_mode mode, bool dry)
{
	struct dlrt_err err;

	if (mode == POOL_RESTART) {
		struct stat sb;
		char jpath[4200];
		struct dlrt_pool_access acc;
		struct dlrt_ipc ic;

		snprintf(jpath, sizeof(jpath), "%s/journal", dir);
		if (stat(jpath, &sb) < 0)
			return die("%s has no journal: nothing to restart (dlrt-infer pool start "
				   "starts a new pool)", dir);
		if (!dry && dlrt_pool_read_access(dir, &acc, &err) == 0 &&
		    dlrt_ipc_open(&ic, dir, DLRT_IP_ROLE_CLIENT, "pool-restart", 2000, &err) == 0) {
			dlrt_ipc_close(&ic);
			return die("the coordinator of %s (epoch %llu) still runs: nothing to restart",
				   dir, (unsigned long long)acc.epoch);
		}
		return 0;
	}
	if (mode == POOL_START && !dry && pool_new_history(dir) != 0)
		return 1;
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
		case 'k':
			if (dlrt_infer_prefetch_parse("--prefetch", optarg, &prefetch, &err) < 0)
				return die("%s", err.msg) + 1;
			break;
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
			pool_start_usage(mode);
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
	if (pool_prepare_history(dir, mode, dry) != 0)
		return 1;
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

/* ---- pool stop ------------------------------------------------------------------ */

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

int cmd_pool(int argc, char **argv)
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
		return cmd_service(argc - 1, argv + 1);
	if (!strcmp(argv[1], "stop")) {
		int rc = pool_only_opts(argc - 1, argv + 1,
					"usage: dlrt-infer pool stop [--pool DIR]\nThe coordinator "
					"removes its access record and exits; workers see that and exit, "
					"so the array's elements end.\n");

		return rc >= 0 ? rc : cmd_pool_stop();
	}
	return die("unknown pool command '%s': start, add, restart, stop or run", argv[1]) + 1;
}
