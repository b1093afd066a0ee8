/* dlrt-kv - the PMIx exchange of dlrt for job scripts.
 *
 *   srun bash -c 'dlrt-kv put addr "$(hostname -I)" fence get 0 addr'
 *
 * One call runs a whole sequence of operations in ONE PMIx client session.
 * That is deliberate: with PMIx 4.2.2 (Debian 12) a rank that opens a second
 * session after finalizing a first one breaks the server's data store
 * ("UNPACK-PAST-END" and a failed fence), so "one dlrt-kv call per task per
 * exchange" is the rule. Never use it in a task that later runs an MPI
 * program (see pmix_bridge.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "pmix_bridge.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dlrt-kv [--timeout SECONDS] OPERATION...\n"
		"Runs the operations in order, in one PMIx session of this task:\n"
		"  put KEY VALUE    publish KEY=VALUE for this task\n"
		"  putenv KEY VAR   publish KEY=the value of environment variable VAR\n"
		"                   (keeps a secret out of the command line)\n"
		"  fence            wait until every task of the step reaches its fence\n"
		"  get RANK KEY     print the VALUE task RANK published (after a fence)\n"
		"  getall KEY       print 'RANK VALUE' for every task (after a fence)\n"
		"  await RANK KEY   like get, but without a fence: wait until task RANK\n"
		"                   has put KEY (asks again until --timeout)\n"
		"  awaitall KEY     like getall, waiting for each task in turn\n"
		"  awaitlist KEY R,R,...  like awaitall, for these ranks only\n"
		"  linger RANK KEY SECONDS  wait until task RANK has put KEY, at most\n"
		"                   SECONDS; never an error, prints nothing\n"
		"  barrier          wait for the tasks on this node only\n"
		"  rank | size      print this task's rank / the number of tasks\n"
		"Example: dlrt-kv put host \"$(hostname)\" fence getall host\n"
		"Runs inside srun with PMIx (--mpi=pmix); every wait ends after --timeout\n"
		"(default %d s) with the ranks that did not arrive. Call it once per task\n"
		"and exchange: a second PMIx session of the same task is not reliable.\n",
		DLRT_PMIX_DEFAULT_TIMEOUT_S);
}

/* Arguments each operation takes; -1 for an unknown operation. */
static int op_args(const char *op)
{
	static const struct {
		const char *name;
		int nargs;
	} ops[] = { { "put", 2 }, { "putenv", 2 }, { "get", 2 }, { "getall", 1 }, { "fence", 0 },
		    { "await", 2 }, { "awaitall", 1 }, { "awaitlist", 2 }, { "linger", 3 },
		    { "barrier", 0 }, { "rank", 0 }, { "size", 0 } };

	for (size_t i = 0; i < sizeof(ops) / sizeof(*ops); i++)
		if (!strcmp(op, ops[i].name))
			return ops[i].nargs;
	return -1;
}

static void print_value(uint32_t rank, const char *value, void *arg)
{
	(void)arg;
	printf("%u %s\n", rank, value);
}

static int run_op(struct dlrt_pmix *p, char **a, struct dlrt_err *err)
{
	char value[4096];
	uint32_t rank;

	if (!strcmp(a[0], "put"))
		return dlrt_pmix_put(p, a[1], a[2], err);
	if (!strcmp(a[0], "putenv")) {
		const char *v = getenv(a[2]);

		if (!v)
			return dlrt_err_set(err, "putenv %s %s: %s is not set in the environment",
					    a[1], a[2], a[2]);
		return dlrt_pmix_put(p, a[1], v, err);
	}
	if (!strcmp(a[0], "fence"))
		return dlrt_pmix_fence(p, err);
	if (!strcmp(a[0], "barrier"))
		return dlrt_pmix_local_barrier(p, err);
	if (!strcmp(a[0], "rank") || !strcmp(a[0], "size")) {
		printf("%u\n", a[0][0] == 'r' ? p->rank : p->size);
		return 0;
	}
	if (!strcmp(a[0], "getall")) {
		for (rank = 0; rank < p->size; rank++) {
			if (dlrt_pmix_get(p, rank, a[1], value, sizeof(value), err) < 0)
				return -1;
			printf("%u %s\n", rank, value);
		}
		return 0;
	}
	if (!strcmp(a[0], "awaitall"))
		return dlrt_pmix_await_all(p, a[1], print_value, NULL, err);
	if (!strcmp(a[0], "awaitlist")) {
		/* "R,R,...": checked whole before any wait, then each rank in turn;
		 * the waits share the session's bound. */
		for (int pass = 0; pass < 2; pass++) {
			for (const char *r = a[2]; *r;) {
				char one[16];
				size_t n = strcspn(r, ",");

				if (n == 0 || n >= sizeof(one))
					return dlrt_err_set(err, "awaitlist: '%s' is not a comma list of "
							    "ranks", a[2]);
				memcpy(one, r, n);
				one[n] = '\0';
				if (dlrt_parse_u32(one, 0, UINT32_MAX - 1, &rank) < 0)
					return dlrt_err_set(err, "awaitlist: '%s' is not a rank", one);
				r += n + (r[n] == ',');
				if (!pass)
					continue;
				if (dlrt_pmix_await(p, rank, a[1], value, sizeof(value), err) < 0)
					return -1;
				printf("%u %s\n", rank, value);
			}
		}
		return 0;
	}
	if (!strcmp(a[0], "linger")) {
		uint32_t secs;
		int saved = p->timeout_s;

		if (dlrt_parse_u32(a[1], 0, UINT32_MAX - 1, &rank) < 0 ||
		    dlrt_parse_u32(a[3], 1, 3600, &secs) < 0)
			return dlrt_err_set(err, "linger RANK KEY SECONDS: bad rank '%s' or seconds '%s'",
					    a[1], a[3]);
		/* Bounded by its own, usually shorter, time; whatever happens is fine. */
		/* Ask often: whoever waits for this key may leave right after it
		 * appears (the plugin's root: its node then leaves the step). */
		p->timeout_s = (int)secs;
		p->max_pause_ms = 2;
		dlrt_pmix_await(p, rank, a[2], value, sizeof(value), err);
		p->timeout_s = saved;
		p->max_pause_ms = 0;
		return 0;
	}
	if (dlrt_parse_u32(a[1], 0, UINT32_MAX - 1, &rank) < 0)
		return dlrt_err_set(err, "%s: '%s' is not a rank", a[0], a[1]);
	if ((a[0][0] == 'g' ? dlrt_pmix_get : dlrt_pmix_await)(p, rank, a[2], value,
							       sizeof(value), err) < 0)
		return -1;
	printf("%s\n", value);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct dlrt_pmix p;
	struct dlrt_err err;
	uint32_t timeout = 0;
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "+t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (dlrt_parse_u32(optarg, 1, 86400, &timeout) < 0) {
				fprintf(stderr, "dlrt-kv: --timeout=%s: must be seconds from 1 to 86400\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	/* Check the whole command line before touching PMIx. */
	for (int i = optind; i < argc;) {
		int n = op_args(argv[i]);

		if (n < 0 || i + n > argc - 1) {
			fprintf(stderr, "dlrt-kv: %s '%s' (see dlrt-kv --help)\n",
				n < 0 ? "unknown operation" : "missing arguments for", argv[i]);
			return 2;
		}
		i += 1 + n;
	}
	if (dlrt_pmix_open(&p, (int)timeout, &err) < 0) {
		fprintf(stderr, "dlrt-kv: %s\n", err.msg);
		return 1;
	}
	for (int i = optind; i < argc && rc == 0; i += 1 + op_args(argv[i])) {
		rc = run_op(&p, &argv[i], &err);
		fflush(stdout);
	}
	if (rc < 0)
		fprintf(stderr, "dlrt-kv: %s\n", err.msg);
	dlrt_pmix_close(&p);
	return rc < 0 ? 1 : 0;
}
