/* Unit tests: plugstack.conf keys and option values. */
#include <string.h>

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
	char *badrt[] = { "runtimes=torch,theano" };

	TAP_IS_INT(dlrt_config_parse(&cfg, 4, good, &err), 0, "valid plugstack keys");
	TAP_IS_INT(cfg.default_servers, 2, "default_servers");
	TAP_IS_INT(cfg.max_servers, 8, "max_servers");
	TAP_OK(cfg.verbose, "verbose=yes");
	TAP_IS_INT(dlrt_config_parse(&cfg, 2, unknown, &err), -1, "unknown key rejected");
	TAP_OK(strstr(err.msg, "unknown key 'colour'") != NULL, "error names the key: %s", err.msg);
	TAP_IS_INT(dlrt_config_parse(&cfg, 1, badnum, &err), -1, "max_servers=0 rejected");
	TAP_IS_INT(dlrt_config_parse(&cfg, 1, badrt, &err), -1, "unknown runtime in runtimes= rejected");
	TAP_OK(strstr(err.msg, "theano") && strstr(err.msg, "mxnet, horovod, caffe2, torch"),
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

	/* GPU binding: options and site keys. */
	{
		char *gk[] = { "gpu_bind=map:1,0", "topology_xml=/etc/dlrt/%n.xml" };
		char *bad1[] = { "gpu_bind=nearest" };
		char *bad2[] = { "topology_xml=" };

		TAP_IS_INT(dlrt_config_parse(&cfg, 2, gk, &err), 0, "gpu_bind= and topology_xml=");
		TAP_IS_STR(cfg.gpu_bind, "map:1,0", "site gpu_bind");
		TAP_IS_STR(cfg.topology_xml, "/etc/dlrt/%n.xml", "site topology_xml");
		dlrt_opts_init(&o, &cfg);
		TAP_IS_STR(o.gpu_bind, "map:1,0", "the site's gpu_bind is the default");
		TAP_IS_INT(dlrt_config_parse(&cfg, 1, bad1, &err), -1, "gpu_bind=nearest rejected");
		TAP_OK(strstr(err.msg, "plugstack.conf: gpu_bind: --dl-gpu-bind=nearest is unknown") &&
		       !strchr(err.msg, '\n'), "message: %s", err.msg);
		TAP_IS_INT(dlrt_config_parse(&cfg, 1, bad2, &err), -1, "empty topology_xml rejected");
		TAP_IS_INT(dlrt_config_parse(&cfg, 0, NULL, &err), 0, "defaults");
		TAP_IS_STR(cfg.gpu_bind, "closest", "gpu_bind defaults to closest");
		dlrt_opts_init(&o, &cfg);
		TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_GPU_BIND, "map:0*2,1+2", &err), 0,
			   "--dl-gpu-bind=map:0*2,1+2");
		TAP_IS_STR(o.gpu_bind, "map:0*2,1+2", "stored");
		TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_GPU_BIND, "map:", &err), -1, "map: rejected");
		TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_GPU_BIND, "none", &err), 0, "none");
		TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_CPU_BIND, "gpu", &err), 0, "--dl-cpu-bind=gpu");
		TAP_OK(o.cpu_bind_gpu, "cpu bind set");
		TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_CPU_BIND, "none", &err), 0,
			   "--dl-cpu-bind=none undoes it");
		TAP_OK(!o.cpu_bind_gpu, "cpu bind cleared");
		TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_CPU_BIND, "cores", &err), -1, "cores rejected");
		TAP_OK(strstr(err.msg, "--dl-cpu-bind=cores is unknown") != NULL, "message: %s", err.msg);
		TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_TOPOLOGY, "/x/%n.xml", &err), 0,
			   "--dl-topology");
		TAP_IS_STR(o.topology, "/x/%n.xml", "topology stored");
		TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_TOPOLOGY, "", &err), -1, "empty topology");
		TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_TOPOLOGY, "a\nb", &err), -1,
			   "control characters in the path");
	}
	TAP_IS_INT(o.store, DLRT_STORE_AUTO, "store: auto by default");
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_STORE, "file:/shared/c2", &err), 0, "file store");
	TAP_IS_INT(o.store, DLRT_STORE_FILE, "store kind file");
	TAP_IS_STR(o.store_dir, "/shared/c2", "store folder");
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_STORE, "helper", &err), 0, "helper store");
	TAP_IS_INT(o.store, DLRT_STORE_HELPER, "store kind helper");
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_STORE, "file:rel/dir", &err), -1,
		   "a relative folder is refused");
	TAP_OK(strstr(err.msg, "absolute path") != NULL, "message: %s", err.msg);
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_STORE, "redis", &err), -1, "unknown store");
	TAP_OK(strstr(err.msg, "must be helper or file:DIR") != NULL, "message: %s", err.msg);
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_STORE, NULL, &err), -1, "missing value");
	return tap_done();
}
