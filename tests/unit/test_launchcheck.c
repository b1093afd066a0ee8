/* Unit tests: a trainer's own launcher as the step's command
 * (jobpolicy/launchcheck.h). */
#include <string.h>

#include "jobpolicy/launchcheck.h"
#include "tap.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void expect(size_t argc, const char *const *argv, const char *needle, const char *what)
{
	struct dlrt_err err = { "" };
	int rc = dlrt_launchcheck_argv(argc, argv, &err);

	if (!needle)
		TAP_OK(rc == 0, "%s: accepted", what);
	else
		TAP_OK(rc < 0 && strstr(err.msg, needle) && !strchr(err.msg, '\n'),
		       "%s: refused in one line: %s", what, err.msg);
}

int main(void)
{
	const char *py[] = { "/usr/bin/python3", "train.py", "--deepspeed", "--config", "ds.json" };
	const char *ds[] = { "/opt/venv/bin/deepspeed", "--num_gpus", "4", "train.py" };
	const char *ds2[] = { "ds", "train.py" };
	const char *acc[] = { "accelerate", "launch", "--multi_gpu", "train.py" };
	const char *acc_opt[] = { "/usr/local/bin/accelerate", "--debug", "launch", "train.py" };
	const char *acc_env[] = { "accelerate", "env" };
	const char *fab[] = { "fabric", "run", "--devices", "2", "train.py" };
	const char *lrun[] = { "lightning", "run", "model", "train.py" };
	const char *fab_other[] = { "fabric", "consolidate", "ckpt" };
	const char *lone[] = { "accelerate" };
	const char *torchrun[] = { "torchrun", "train.py" };

	expect(N(py), py, NULL, "python3 train.py --deepspeed");
	expect(N(torchrun), torchrun, NULL, "torchrun train.py");
	expect(N(ds), ds, "deepspeed.init_distributed() takes RANK", "deepspeed train.py");
	expect(N(ds), ds, "srun python3 train.py", "deepspeed: the fix");
	expect(N(ds2), ds2, "ds is DeepSpeed's launcher", "ds train.py");
	expect(N(acc), acc, "accelerate launch would start a torchrun", "accelerate launch");
	expect(N(acc), acc, "ACCELERATE_USE_CPU=1", "accelerate launch: the CPU hint");
	expect(N(acc_opt), acc_opt, "accelerate launch", "accelerate --debug launch");
	expect(N(acc_env), acc_env, NULL, "accelerate env");
	expect(N(fab), fab, "fabric run would start", "fabric run");
	expect(N(lrun), lrun, "lightning run would start", "lightning run model");
	expect(N(fab_other), fab_other, NULL, "fabric consolidate");
	expect(N(lone), lone, NULL, "accelerate alone");
	expect(N(ds), ds, "DLRT_LAUNCHER_CHECK=no", "the way around it is named");
	expect(0, NULL, NULL, "no argv");
	return tap_done();
}
