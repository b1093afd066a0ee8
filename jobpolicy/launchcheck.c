#include "launchcheck.h"

#include <string.h>

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* The first argument after argv[0] that is not an option: the subcommand. A
 * launcher's own options before it take no separate value in the cases read
 * here (`accelerate --help`, `fabric --version`). */
static const char *subcommand(size_t argc, const char *const *argv)
{
	for (size_t i = 1; i < argc; i++)
		if (argv[i][0] != '-')
			return argv[i];
	return "";
}

int dlrt_launchcheck_argv(size_t argc, const char *const *argv, struct dlrt_err *err)
{
	const char *b, *sub;

	if (argc < 1 || !argv || !argv[0])
		return 0;
	b = base(argv[0]);
	sub = subcommand(argc, argv);
	if (!strcmp(b, "deepspeed") || !strcmp(b, "ds"))
		return dlrt_err_set(err, "%s is DeepSpeed's launcher: in every task it would start "
				    "a world of its own (a hostfile and ssh, or --no_ssh with a "
				    "node rank per node, port 29500), not the step's: run the "
				    "script itself, one task per GPU (srun python3 train.py "
				    "--deepspeed ...): deepspeed.init_distributed() takes RANK, "
				    "WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT from dlrt "
				    "(docs/trainers.md; DLRT_LAUNCHER_CHECK=no skips this check)", b);
	if (!strcmp(b, "accelerate") && !strcmp(sub, "launch"))
		return dlrt_err_set(err, "accelerate launch would start a torchrun of its own in "
				    "every task, with its own rendezvous (--main_process_ip, "
				    "--main_process_port), not the step's: run the script itself, "
				    "one task per GPU (srun python3 train.py): Accelerator() takes "
				    "RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT from "
				    "dlrt; on nodes without GPUs export ACCELERATE_USE_CPU=1 "
				    "(docs/trainers.md; DLRT_LAUNCHER_CHECK=no skips this check)");
	if ((!strcmp(b, "fabric") || !strcmp(b, "lightning")) && !strcmp(sub, "run"))
		return dlrt_err_set(err, "%s run would start a torchrun of its own in every task, "
				    "with its own rendezvous (--main-address, --main-port), not the "
				    "step's: run the script itself, one task per device (srun "
				    "python3 train.py, --ntasks-per-node equal to Fabric's or the "
				    "Trainer's devices): Lightning takes SLURM_PROCID, SLURM_NTASKS "
				    "and dlrt's MASTER_ADDR and MASTER_PORT (docs/trainers.md; "
				    "DLRT_LAUNCHER_CHECK=no skips this check)", b);
	return 0;
}
