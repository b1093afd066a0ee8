/* dlrt-infer - fair-share batch inference on a Slurm job array (docs/inference.md).
 *
 *   dlrt-infer pool start --workers N [--pool DIR] [--prefetch K] [--window S] [-- SBATCH-ARGS]
 *   dlrt-infer pool run | pool stop
 *   dlrt-infer submit --model M --inputs FILE --batch B [--name N] [...]
 *   dlrt-infer status [--watch] | wait JOB | cancel JOB | plot JOB... | local ...
 *   dlrt-infer coordinator | worker      (what `pool run` becomes in each element)
 *
 * This file is the usage and the table from each command's word to its
 * entry; the commands live in the cli_*.c files by family (cli.h).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

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

/* Each command word and its entry, which gets the arguments from that word on. */
static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "submit", cmd_submit },
	{ "status", cmd_status },
	{ "wait", cmd_wait },
	{ "cancel", cmd_cancel },
	{ "pool", cmd_pool },
	{ "coordinator", cmd_service },
	{ "worker", cmd_service },
	{ "standby", cmd_service },
	{ "local", cmd_local },
	{ "plot", cmd_plot },
};

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
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(cmd, commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	usage(stderr);
	return die("unknown command '%s'", cmd) + 1;
}
