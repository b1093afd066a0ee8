/* cli_service.c - what runs inside the pool's array elements: pool run (the
 * role the infer runtime gave the element), coordinator, worker and standby.
 * Each is a loop of the library (inference/coord/coord.h, inference/worker/worker.h, standby.h); this file only reads
 * the options and chains them: a worker whose coordinator and standby are
 * both lost runs the coordinator from the journal, and a standby whose
 * coordinator dies becomes the next coordinator from the log it holds.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inference/pool/claim.h"
#include "cli.h"
#include "inference/coord/coord.h"
#include "inference/worker/worker.h"
#include "inference/liveness.h"
#include "inference/state/standby.h"

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
	/* The element's index staggers takeover attempts (worker.h). */
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

/* argv[0] names the role: coordinator, worker, standby, or run (pool run),
 * which reads it from the element's environment. */
int cmd_service(int argc, char **argv)
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
	uint32_t prefetch = 1, wait_s = 300;
	/* --prefetch, else the element's environment (pool start sets it). */
	const char *prefetch_text = getenv("DLRT_INFER_PREFETCH");
	const char *prefetch_from = "DLRT_INFER_PREFETCH";
	const char *auth = NULL;
	const char *heartbeat = getenv("DLRT_INFER_HEARTBEAT");
	const char *margin = getenv("DLRT_INFER_WALLTIME_MARGIN");
	struct dlrt_err verr;
	struct dlrt_hb hbc;
	int64_t mg;
	double window = env_double("DLRT_INFER_WINDOW", 0.5);
	const char *what = argv[0];
	const char *address = NULL, *name = NULL, *model_dir = NULL, *role = what;
	int opt;

	while ((opt = getopt_long(argc, argv, "p:k:W:a:n:d:w:B:M:A:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'p': pool_opt = optarg; break;
		case 'k': prefetch_text = optarg; prefetch_from = "--prefetch"; break;
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
	if (prefetch_text && *prefetch_text &&
	    dlrt_infer_prefetch_parse(prefetch_from, prefetch_text, &prefetch, &verr) < 0)
		return die("%s", verr.msg) + 1;
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
