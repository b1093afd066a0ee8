/*
 * pmix-stranger: a PMIx client that connects to another user's step, for the
 * cluster tests of what Slurm's PMIx server admits (t/90-pmix-stranger.t).
 * Never installed.
 *
 * It is the real libpmix client, told by its environment which namespace,
 * server and rank to be, exactly what slurmstepd gives a task. Everything it
 * needs is public on the node: the namespace is slurm.pmix.JOBID.STEPID
 * (squeue), the server listens on a TCP port of 127.0.0.1 (/proc/net/tcp).
 * Run under stated_id.so with STATED_UID/STATED_GID set to the job owner's,
 * its `native` credential states the owner's ids; without the shim it states
 * the caller's own.
 *
 *   pmix-stranger [-t SECONDS] [-a RANK] NSPACE URI get RANK [KEY...]
 *   pmix-stranger [-t SECONDS] NSPACE URI hold RANK SECONDS
 *   pmix-stranger [-t SECONDS] [-a RANK] NSPACE URI put KEY VALUE
 *
 * Exit status: 0 done; 1 the server refused or a key was not found; 2 usage
 * or a wait that ran out. Every wait is bounded by one alarm.
 */
#include <errno.h>
#include <getopt.h>
#include <pmix.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *volatile phase = "starting";
static char alarm_msg[512];

/* The one line a run that ran out of time prints. Only write() here: it runs
 * in a signal handler while libpmix's threads may hold any lock. */
static void on_alarm(int sig)
{
	const char *p = phase;
	size_t n = strlen(alarm_msg);

	(void)sig;
	if (write(2, alarm_msg, n) < 0 || write(2, p, strlen(p)) < 0 || write(2, "\n", 1) < 0)
		_exit(2);
	_exit(2);
}

static void usage(FILE *f)
{
	fputs("usage: pmix-stranger [-t SECONDS] [-a RANK] NSPACE URI OPERATION\n"
	      "  get RANK [KEY...]   print KEY=VALUE for each KEY rank RANK published\n"
	      "                      (KEY or dlrt.KEY, the name dlrt-kv gives it);\n"
	      "                      with no KEY, every value the server gives for RANK\n"
	      "  hold RANK SECONDS   connect as RANK and stay connected for SECONDS\n"
	      "  put KEY VALUE       publish KEY=VALUE (Put and Commit) as the rank claimed\n"
	      "  -a RANK             the rank to claim for get and put (default 0)\n"
	      "  -t SECONDS          give up after SECONDS, plus a hold's (default 20)\n"
	      "NSPACE: slurm.pmix.JOBID.STEPID; URI: the server's, e.g.\n"
	      "'slurm.pmix.12.0;tcp4://127.0.0.1:40123'. Under LD_PRELOAD=stated_id.so\n"
	      "with STATED_UID and STATED_GID, the client states those ids.\n", f);
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return (!*s || *end || errno || *out > max || *s == '-') ? -1 : 0;
}

/* Who we say we are, the way slurmstepd tells a task (PMIx 4.2 clients read
 * the newest URI variable they know; set them all). native unless the
 * caller chose: the server takes the client's choice among its own modules.
 * The hash store: the shared-memory one is the job owner's files. */
static void claim(const char *nspace, const char *uri, unsigned long rank)
{
	static const char *const uri_vars[] = { "PMIX_SERVER_URI41", "PMIX_SERVER_URI4",
						"PMIX_SERVER_URI3", "PMIX_SERVER_URI21",
						"PMIX_SERVER_URI2" };
	char r[24];
	size_t i;

	snprintf(r, sizeof(r), "%lu", rank);
	setenv("PMIX_NAMESPACE", nspace, 1);
	setenv("PMIX_RANK", r, 1);
	for (i = 0; i < sizeof(uri_vars) / sizeof(uri_vars[0]); i++)
		setenv(uri_vars[i], uri, 1);
	setenv("PMIX_SECURITY_MODE", "native", 0);
	setenv("PMIX_MCA_gds", "hash", 0);
}

static int connect_as(unsigned long rank, pmix_proc_t *me)
{
	pmix_status_t rc;

	phase = "connecting to the server";
	rc = PMIx_Init(me, NULL, 0);
	if (rc != PMIX_SUCCESS) {
		fprintf(stderr, "pmix-stranger: the server refused rank %lu: %s\n", rank,
			PMIx_Error_string(rc));
		return -1;
	}
	fprintf(stderr, "pmix-stranger: admitted as %s rank %u (security %s)\n", me->nspace,
		me->rank, getenv("PMIX_SECURITY_MODE"));
	return 0;
}

static void print_value(const char *key, const pmix_value_t *v)
{
	char *s;

	if (v->type == PMIX_STRING) {
		printf("%s=%s\n", key, v->data.string ? v->data.string : "");
		return;
	}
	if (v->type == PMIX_DATA_ARRAY && v->data.darray &&
	    v->data.darray->type == PMIX_INFO) {
		/* All of a rank's values: one line each. */
		const pmix_info_t *in = v->data.darray->array;
		size_t i;

		for (i = 0; i < v->data.darray->size; i++)
			print_value(in[i].key, &in[i].value);
		return;
	}
	s = PMIx_Value_string(v);
	printf("%s=%s\n", key, s ? s : PMIx_Data_type_string(v->type));
	free(s);
}

static int get_one(const pmix_proc_t *proc, const char *key)
{
	pmix_value_t *v = NULL;
	pmix_status_t rc;
	char alt[PMIX_MAX_KEYLEN + 1];

	phase = "waiting for a value";
	rc = PMIx_Get(proc, key, NULL, 0, &v);
	if (rc != PMIX_SUCCESS && key && strncmp(key, "dlrt.", 5) &&
	    snprintf(alt, sizeof(alt), "dlrt.%s", key) < (int)sizeof(alt)) {
		rc = PMIx_Get(proc, alt, NULL, 0, &v);
		if (rc == PMIX_SUCCESS)
			key = alt;
	}
	if (rc != PMIX_SUCCESS || !v) {
		fprintf(stderr, "pmix-stranger: rank %u has no %s: %s\n", proc->rank,
			key ? key : "values", PMIx_Error_string(rc));
		return -1;
	}
	print_value(key ? key : "*", v);
	fflush(stdout);
	PMIX_VALUE_RELEASE(v);
	return 0;
}

static int do_put(const char *key, const char *value)
{
	pmix_value_t v;
	pmix_status_t rc;

	phase = "publishing";
	PMIX_VALUE_CONSTRUCT(&v);
	v.type = PMIX_STRING;
	v.data.string = (char *)value;
	rc = PMIx_Put(PMIX_GLOBAL, key, &v);
	if (rc == PMIX_SUCCESS)
		rc = PMIx_Commit();
	if (rc != PMIX_SUCCESS) {
		fprintf(stderr, "pmix-stranger: put %s failed: %s\n", key, PMIx_Error_string(rc));
		return -1;
	}
	printf("put %s=%s\n", key, value);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long timeout = 20, as = 0, rank = 0, hold = 0;
	const char *nspace, *uri, *op;
	pmix_proc_t me, proc;
	int c, rv = 0, i;

	while ((c = getopt(argc, argv, "+t:a:h")) != -1) {
		switch (c) {
		case 't':
			if (parse_uint(optarg, 3600, &timeout) < 0 || !timeout)
				goto bad;
			break;
		case 'a':
			if (parse_uint(optarg, PMIX_RANK_VALID, &as) < 0)
				goto bad;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (argc - optind < 3)
		goto bad;
	nspace = argv[optind];
	uri = argv[optind + 1];
	op = argv[optind + 2];
	argv += optind + 3;
	argc -= optind + 3;
	if (strlen(nspace) > PMIX_MAX_NSLEN)
		goto bad;
	if (!strcmp(op, "get")) {
		if (argc < 1 || parse_uint(argv[0], PMIX_RANK_VALID, &rank) < 0)
			goto bad;
	} else if (!strcmp(op, "hold")) {
		if (argc != 2 || parse_uint(argv[0], PMIX_RANK_VALID, &as) < 0 ||
		    parse_uint(argv[1], 3600, &hold) < 0)
			goto bad;
	} else if (!strcmp(op, "put")) {
		if (argc != 2 || strlen(argv[0]) > PMIX_MAX_KEYLEN)
			goto bad;
	} else {
		goto bad;
	}

	snprintf(alarm_msg, sizeof(alarm_msg), "pmix-stranger: no answer within %lu s while ",
		 timeout);
	signal(SIGALRM, on_alarm);
	alarm((unsigned)(timeout + hold));
	claim(nspace, uri, as);
	if (connect_as(as, &me) < 0)
		return 1;

	if (!strcmp(op, "get")) {
		PMIX_LOAD_PROCID(&proc, nspace, (pmix_rank_t)rank);
		if (argc == 1)
			rv |= get_one(&proc, NULL);
		for (i = 1; i < argc; i++)
			rv |= get_one(&proc, argv[i]);
	} else if (!strcmp(op, "hold")) {
		phase = "holding the connection";
		printf("holding rank %lu for %lu s\n", as, hold);
		fflush(stdout);
		sleep((unsigned)hold);
	} else {
		rv = do_put(argv[0], argv[1]);
	}
	/* Finalize asks the server; the alarm still bounds it. */
	phase = "disconnecting";
	PMIx_Finalize(NULL, 0);
	return rv ? 1 : 0;
bad:
	usage(stderr);
	return 2;
}
