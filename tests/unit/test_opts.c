/* Unit tests: plugstack.conf keys and option values. */
#include <stdio.h>
#include <string.h>

#include "runtime/opts.h"
#include "runtime/runtime.h"
#include "tap.h"

/* Servers of an mxnet plan of 6 tasks on 3 nodes: what --dl-servers and the
 * site keys, parsed into mxnet's private blocks, come to. */
static int mxnet_servers(const struct dlrt_opts *o, const struct dlrt_config *cfg)
{
	struct dlrt_layout l;
	struct dlrt_plan p;
	struct dlrt_err err;
	int n = -1;

	if (dlrt_layout_init(&l, "n[1-3]", "2,2,2", DLRT_DIST_BLOCK, 0, &err) < 0)
		return -1;
	if (dlrt_plan_build(&p, dlrt_runtimes[dlrt_runtime_index("mxnet")], &l, o, cfg, &err) == 0) {
		n = (int)p.role_count[DLRT_ROLE_SERVER];
		dlrt_plan_free(&p);
	}
	dlrt_layout_free(&l);
	return n;
}

/* NFS_PATH of task 0 of a one-task caffe2 plan ("" without). */
static void caffe2_nfs_path(const struct dlrt_opts *o, const struct dlrt_config *cfg, char *out,
			    size_t len)
{
	struct dlrt_layout l;
	struct dlrt_plan p;
	struct dlrt_step_info step = { .job_id = 1 };
	struct dlrt_env env;
	struct dlrt_err err;

	out[0] = '\0';
	if (dlrt_layout_init(&l, "n1", "1", DLRT_DIST_BLOCK, 0, &err) < 0)
		return;
	if (dlrt_plan_build(&p, dlrt_runtimes[dlrt_runtime_index("caffe2")], &l, o, cfg, &err) == 0) {
		dlrt_env_init(&env);
		if (dlrt_plan_task_env(&p, 0, &step, NULL, &env, &err) == 0 &&
		    dlrt_env_get(&env, "NFS_PATH"))
			snprintf(out, len, "%s", dlrt_env_get(&env, "NFS_PATH"));
		dlrt_env_free(&env);
		dlrt_plan_free(&p);
	}
	dlrt_layout_free(&l);
}

/* The option table: flat ids, names unique, runtime options owned by their runtime. */
static void check_table(void)
{
	struct dlrt_opt_desc d, e;
	int n = dlrt_opt_count(), dups = 0, owned = 0;

	TAP_OK(n > DLRT_OPT_GENERIC_COUNT, "runtimes add options to the flat list (%d)", n);
	for (int i = 0; i < n; i++) {
		TAP_OK(dlrt_opt_describe(i, &d) == 0 && d.name && d.usage &&
		       !strncmp(d.usage, "[dlrt] ", 7), "option %d described", i);
		for (int j = i + 1; j < n; j++)
			dups += dlrt_opt_describe(j, &e) == 0 && !strcmp(d.name, e.name);
		TAP_IS_INT(dlrt_opt_find(d.name), i, "--%s found by name", d.name);
		owned += d.runtime != NULL;
	}
	TAP_IS_INT(dups, 0, "no two options share a name");
	TAP_IS_INT(dlrt_opt_describe(n, &d), -1, "nothing past the last id");
	TAP_IS_INT(owned, n - DLRT_OPT_GENERIC_COUNT, "every non-generic option names its runtime");
	TAP_OK(dlrt_opt_find("dl-servers") >= DLRT_OPT_GENERIC_COUNT &&
	       dlrt_opt_describe(dlrt_opt_find("dl-servers"), &d) == 0 &&
	       !strcmp(d.runtime->name, "mxnet"), "--dl-servers is mxnet's");
	TAP_IS_INT(dlrt_opt_find("dl-no-such"), -1, "an unknown name is not found");
	for (n = 0; dlrt_runtimes[n]; n++) {
		int k = 0;

		while (dlrt_runtimes[n]->options && dlrt_runtimes[n]->options[k].name)
			k++;
		TAP_OK(k <= 32, "%s declares %d options (rt_given holds 32)", dlrt_runtimes[n]->name, k);
	}
	TAP_OK(n <= DLRT_RUNTIME_MAX, "%d runtimes fit the private blocks (%d)", n, DLRT_RUNTIME_MAX);
}

/* The "valid keys" list is generated: every runtime's keys are in it. */
static void check_keys(void)
{
	struct dlrt_config cfg;
	struct dlrt_err err = { "" };
	char keys[512], want[600];
	char *bad[] = { "colour=blue" };

	dlrt_config_keys(keys, sizeof(keys));
	for (int i = 0; dlrt_runtimes[i]; i++)
		for (const struct dlrt_site_key *k = dlrt_runtimes[i]->keys; k && k->name; k++)
			TAP_OK(strstr(keys, k->name) != NULL, "%s's key %s is listed",
			       dlrt_runtimes[i]->name, k->name);
	TAP_OK(!strncmp(keys, "runtimes, verbose, ", 19), "generic keys first: %s", keys);
	TAP_IS_INT(dlrt_config_parse(&cfg, 1, bad, &err), -1, "unknown key");
	snprintf(want, sizeof(want), "plugstack.conf: unknown key 'colour' (valid: %s)", keys);
	TAP_IS_STR(err.msg, want, "the message lists exactly the generated keys");
	TAP_OK(strstr(keys, "default_servers, max_servers, mxnet_sched") &&
	       strstr(keys, "horovod"), "the runtimes' keys: %s", keys);
}

/* A runtime's option given to another runtime (only_this_runtime). */
static void check_foreign(void)
{
	struct dlrt_config cfg;
	struct dlrt_opts o;
	struct dlrt_err err = { "" };

	dlrt_config_parse(&cfg, 0, NULL, &err);
	dlrt_opts_init(&o, &cfg);
	TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-store", "helper", &err), 0, "--dl-store=helper");
	TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-runtime", "caffe2", &err), 0, "caffe2");
	TAP_IS_INT(dlrt_opts_check_runtime(&o, &err), 0, "--dl-store with caffe2 is fine");
	TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-runtime", "torch", &err), 0,
		   "a later --dl-runtime=torch");
	TAP_IS_INT(dlrt_opts_check_runtime(&o, &err), -1, "--dl-store with torch is refused");
	TAP_IS_STR(err.msg, "--dl-store applies to --dl-runtime=caffe2 only; drop it for "
		   "--dl-runtime=torch", "the same line as before");
	dlrt_opts_init(&o, &cfg);
	TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-servers", "2", &err), 0, "--dl-servers=2");
	TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-runtime", "horovod", &err), 0, "horovod");
	TAP_IS_INT(dlrt_opts_check_runtime(&o, &err), 0, "--dl-servers with horovod: ignored, as before");
}

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
	TAP_OK(cfg.verbose, "verbose=yes");
	dlrt_opts_init(&o, &cfg);
	TAP_IS_INT(mxnet_servers(&o, &cfg), 2, "default_servers (mxnet's key) gives the servers");
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
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, dlrt_opt_find("dl-servers"), "9", &err), -1, "servers above max");
	TAP_OK(strstr(err.msg, "from 1 to 8") != NULL, "message names the range: %s", err.msg);
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, dlrt_opt_find("dl-servers"), "-1", &err), -1, "negative servers");
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, dlrt_opt_find("dl-servers"), "3x", &err), -1, "trailing junk");
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, dlrt_opt_find("dl-servers"), "", &err), -1, "empty");
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, dlrt_opt_find("dl-servers"), "4", &err), 0, "servers 4");
	TAP_IS_INT(mxnet_servers(&o, &cfg), 4, "servers stored in mxnet's options");
	TAP_IS_INT(dlrt_opts_set(&o, &cfg, DLRT_OPT_DRY_RUN, NULL, &err), 0, "--dl-dry-run");
	TAP_OK(o.dry_run, "dry run set");

	/* --dl-preflight and preflight=: the job's value over the site's. */
	{
		char *pk[] = { "preflight=quick,shm=128" };
		char *bad[] = { "preflight=always" };

		TAP_IS_INT(dlrt_config_parse(&cfg, 1, pk, &err), 0, "preflight=quick,shm=128");
		dlrt_opts_init(&o, &cfg);
		TAP_OK(o.preflight.mode == DLRT_PF_QUICK && o.preflight.shm_mib == 128 &&
		       !o.preflight_given, "the site's spec is the job's default");
		TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-preflight", "full", &err), 0,
			   "--dl-preflight=full");
		TAP_OK(o.preflight.mode == DLRT_PF_FULL && o.preflight.shm_mib == 128 && o.preflight_given,
		       "over the site's: its shm= stays");
		TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-preflight", "off", &err), 0, "--dl-preflight=off");
		TAP_IS_INT(o.preflight.mode, DLRT_PF_OFF, "a job turns it off");
		TAP_IS_INT(dlrt_opts_set_name(&o, &cfg, "dl-preflight", "quick,timeout=0", &err), -1,
			   "timeout=0 refused");
		TAP_OK(strstr(err.msg, "--dl-preflight=quick,timeout=0: give off, quick or full") &&
		       !strchr(err.msg, '\n'), "one line: %s", err.msg);
		TAP_IS_INT(dlrt_config_parse(&cfg, 1, bad, &err), -1, "preflight=always refused");
		TAP_OK(strstr(err.msg, "plugstack.conf: preflight=always: give off") != NULL,
		       "naming the key: %s", err.msg);
		TAP_IS_INT(dlrt_config_parse(&cfg, 0, NULL, &err), 0, "defaults");
		TAP_IS_INT(cfg.preflight.mode, DLRT_PF_OFF, "preflight defaults to off");
	}

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
	{
		char nfs[1024];
		int store = dlrt_opt_find("dl-store");

		caffe2_nfs_path(&o, &cfg, nfs, sizeof(nfs));
		TAP_IS_STR(nfs, "", "store: no file store by default");
		TAP_IS_INT(dlrt_opts_set(&o, &cfg, store, "file:/tmp", &err), 0, "file store");
		caffe2_nfs_path(&o, &cfg, nfs, sizeof(nfs));
		TAP_IS_STR(nfs, "/tmp", "store folder");
		TAP_IS_INT(dlrt_opts_set(&o, &cfg, store, "helper", &err), 0, "helper store");
		caffe2_nfs_path(&o, &cfg, nfs, sizeof(nfs));
		TAP_IS_STR(nfs, "", "store kind helper: no folder");
		TAP_IS_INT(dlrt_opts_set(&o, &cfg, store, "file:rel/dir", &err), -1,
			   "a relative folder is refused");
		TAP_OK(strstr(err.msg, "absolute path") != NULL, "message: %s", err.msg);
		TAP_IS_INT(dlrt_opts_set(&o, &cfg, store, "redis", &err), -1, "unknown store");
		TAP_OK(strstr(err.msg, "must be helper or file:DIR") != NULL, "message: %s", err.msg);
		TAP_IS_INT(dlrt_opts_set(&o, &cfg, store, NULL, &err), -1, "missing value");
	}
	check_table();
	check_keys();
	check_foreign();
	return tap_done();
}
