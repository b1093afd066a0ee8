/* Unit tests: plugstack.conf keys and option values. */
#include "opts.h"
#include "runtime.h"
#include "tap.h"

int main(void)
{
	struct dlrt_config cfg;
	struct dlrt_opts o;
	struct dlrt_err err = { "" };
	char *good[] = { "default_servers=2", "max_servers=8", "runtimes=torch,horovod", "verbose=yes" };
	char *unknown[] = { "default_servers=2", "colour=blue" };
	char *badnum[] = { "max_servers=0" };
	char *badrt[] = { "runtimes=torch,tensorflow" };

	TAP_IS_INT(dlrt_config_parse(&cfg, 4, good, &err), 0, "valid plugstack keys");
	TAP_IS_INT(cfg.default_servers, 2, "default_servers");
	TAP_IS_INT(cfg.max_servers, 8, "max_servers");
	TAP_OK(cfg.verbose, "verbose=yes");
	TAP_IS_INT(dlrt_config_parse(&cfg, 2, unknown, &err), -1, "unknown key rejected");
	TAP_OK(strstr(err.msg, "unknown key 'colour'") != NULL, "error names the key: %s", err.msg);
	TAP_IS_INT(dlrt_config_parse(&cfg, 1, badnum, &err), -1, "max_servers=0 rejected");
	TAP_IS_INT(dlrt_config_parse(&cfg, 1, badrt, &err), -1, "unknown runtime in runtimes= rejected");
	TAP_OK(strstr(err.msg, "tensorflow") && strstr(err.msg, "mxnet, horovod, caffe2, torch"),
	       "error lists the valid runtimes: %s", err.msg);

	TAP_IS_INT(dlrt_config_parse(&cfg, 4, good, &err), 0, "site allows torch and horovod");
	dlrt_opts_init(&o, &cfg);
	TAP_OK(o.verbose, "site verbose becomes the default");
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_RUNTIME, "torch", &err), 0, "--dl-runtime=torch");
	TAP_IS_STR(o.runtime->name, "torch", "runtime set");
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_RUNTIME, "horovod", &err), 0,
		   "a later value replaces an earlier one (sbatch, then srun)");
	TAP_IS_STR(o.runtime->name, "horovod", "runtime replaced");
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_RUNTIME, "mxnet", &err), -1,
		   "a runtime the site did not enable is refused");
	TAP_OK(strstr(err.msg, "not enabled at this site; valid runtimes: horovod, torch") != NULL,
	       "message: %s", err.msg);
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_RUNTIME, "bogus", &err), -1, "bogus refused");
	TAP_OK(strstr(err.msg, "unknown runtime") != NULL, "message: %s", err.msg);
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_SERVERS, "9", &err), -1, "servers above max");
	TAP_OK(strstr(err.msg, "from 1 to 8") != NULL, "message names the range: %s", err.msg);
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_SERVERS, "-1", &err), -1, "negative servers");
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_SERVERS, "3x", &err), -1, "trailing junk");
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_SERVERS, "", &err), -1, "empty");
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_SERVERS, "4", &err), 0, "servers 4");
	TAP_IS_INT(o.servers, 4, "servers stored");
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_DRY_RUN, NULL, &err), 0, "--dl-dry-run");
	TAP_OK(o.dry_run, "dry run set");
	return tap_done();
}
