#include "opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpuplan.h"
#include "runtime.h"
#include "../launchers/torchrun/torchrun.h"

const struct dlrt_opt_desc dlrt_opt_descs[DLRT_OPT_COUNT] = {
	[DLRT_OPT_RUNTIME] = { "dl-runtime", "NAME",
			       "[dlrt] DL runtime of the step's tasks (man dlrt)" },
	[DLRT_OPT_SERVERS] = { "dl-servers", "N",
			       "[dlrt] mxnet: parameter servers (default 1/node)" },
	[DLRT_OPT_VERBOSE] = { "dl-verbose", NULL,
			       "[dlrt] log exchanges and services with timings" },
	[DLRT_OPT_DRY_RUN] = { "dl-dry-run", NULL,
			       "[dlrt] print each task's plan, run nothing" },
	[DLRT_OPT_IFACE] = { "dl-iface", "IF",
			     "[dlrt] network interface the frameworks use" },
	[DLRT_OPT_GPU_BIND] = { "dl-gpu-bind", "MODE",
				"[dlrt] GPUs per task: closest, none, map:LIST" },
	[DLRT_OPT_CPU_BIND] = { "dl-cpu-bind", "gpu",
				"[dlrt] gpu: bind each task next to its GPUs" },
	[DLRT_OPT_TOPOLOGY] = { "dl-topology", "FILE",
				"[dlrt] plan GPUs on this hwloc XML file" },
	[DLRT_OPT_STORE] = { "dl-store", "KIND",
			     "[dlrt] caffe2 store: helper (default), file:DIR" },
	[DLRT_OPT_LOG_DIR] = { "dl-log-dir", "DIR",
			       "[dlrt] task output to DIR/job/step/role-N.log" },
	[DLRT_OPT_RETRIES] = { "dl-retries", "N",
			       "[dlrt] requeue up to N times if a node fails" },
	[DLRT_OPT_HOROVOD] = { "dl-horovod", "MODE",
			       "[dlrt] horovod: gloo (default) or mpi" },
	[DLRT_OPT_MXNET_SCHED] = { "dl-mxnet-sched", "WHERE",
				   "[dlrt] mxnet: task (task 0, default) or extra" },
	[DLRT_OPT_ELASTIC] = { "dl-elastic", "MIN:MAX",
			       "[dlrt] torchrun: go on with MIN to MAX nodes" },
	[DLRT_OPT_NPROC_PER_NODE] = { "dl-nproc-per-node", "N",
				      "[dlrt] torchrun: workers per node (N or gpu)" },
};

const char *dlrt_hvd_mode_name(int mode)
{
	return mode == DLRT_HVD_MPI ? "mpi" : "gloo";
}

static int parse_hvd_mode(const char *s, int *mode)
{
	if (s && !strcmp(s, "gloo"))
		*mode = DLRT_HVD_GLOO;
	else if (s && !strcmp(s, "mpi"))
		*mode = DLRT_HVD_MPI;
	else
		return -1;
	return 0;
}

const char *dlrt_mxsched_name(int mode)
{
	return mode == DLRT_MXSCHED_EXTRA ? "extra" : "task";
}

static int parse_mxsched(const char *s, int *mode)
{
	if (s && !strcmp(s, "task"))
		*mode = DLRT_MXSCHED_TASK;
	else if (s && !strcmp(s, "extra"))
		*mode = DLRT_MXSCHED_EXTRA;
	else
		return -1;
	return 0;
}

int dlrt_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int dlrt_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "yes", "y", "true", "on" };
	static const char *const no[] = { "0", "no", "n", "false", "off" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

/* --dl-gpu-bind and gpu_bind=: closest, none or a well-formed map:LIST. */
static int check_gpu_bind(const char *v, char *out, size_t len, struct dlrt_err *err)
{
	struct dlrt_gpuplan_bind *b = malloc(sizeof(*b));
	int rv;

	if (!b)
		return dlrt_err_set(err, "out of memory checking --dl-gpu-bind");
	rv = dlrt_gpuplan_bind_parse(b, v ? v : "", err);
	free(b);
	if (rv < 0)
		return -1;
	if (strlen(v) >= len)
		return dlrt_err_set(err, "--dl-gpu-bind value is longer than %zu characters: use "
				    "map:G*N to repeat entries", len - 1);
	snprintf(out, len, "%s", v);
	return 0;
}

/* A topology path: non-empty, fits, no control characters (it goes into error lines). */
static int check_path(const char *what, const char *v, char *out, size_t len,
		      struct dlrt_err *err)
{
	if (!v || !*v || strlen(v) >= len)
		return dlrt_err_set(err, "%s: give the path of an hwloc XML file (lstopo --of xml)",
				    what);
	for (const char *c = v; *c; c++)
		if ((unsigned char)*c < 0x20)
			return dlrt_err_set(err, "%s: the path has control characters", what);
	snprintf(out, len, "%s", v);
	return 0;
}

/* "mxnet,torch" -> bitmask of runtime table indices. */
static int parse_runtime_set(const char *list, uint32_t *mask, struct dlrt_err *err)
{
	char names[256];
	const char *s = list;

	*mask = 0;
	while (*s) {
		size_t n = strcspn(s, ",");
		char one[64];
		int idx;

		if (n == 0 || n >= sizeof(one))
			return dlrt_err_set(err, "plugstack.conf: runtimes='%s' is not a comma list", list);
		memcpy(one, s, n);
		one[n] = '\0';
		idx = dlrt_runtime_index(one);
		if (idx < 0) {
			dlrt_runtime_list(names, sizeof(names), ~0u);
			return dlrt_err_set(err, "plugstack.conf: runtimes= names unknown runtime '%s' "
					    "(valid: %s)", one, names);
		}
		*mask |= 1u << idx;
		s += n + (s[n] == ',');
	}
	return 0;
}

int dlrt_config_parse(struct dlrt_config *cfg, int ac, char **av, struct dlrt_err *err)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_servers = 1024;
	cfg->exchange_timeout = 30;
	cfg->service_timeout = 10;
	cfg->service_max_lifetime = 7 * 24 * 3600;
	cfg->horovod_mode = DLRT_HVD_GLOO;
	cfg->allowed = ~0u;
	snprintf(cfg->gpu_bind, sizeof(cfg->gpu_bind), "closest");
	for (int i = 0; i < ac; i++) {
		const char *kv = av[i], *eq = strchr(kv, '=');
		const char *v = eq ? eq + 1 : "";
		size_t klen = eq ? (size_t)(eq - kv) : strlen(kv);

#define KEY(k) (klen == sizeof(k) - 1 && !strncmp(kv, k, klen))
		if (KEY("default_servers")) {
			if (dlrt_parse_u32(v, 0, 1u << 20, &cfg->default_servers) < 0)
				return dlrt_err_set(err, "plugstack.conf: default_servers='%s' is not a "
						    "number (0 = one per node)", v);
		} else if (KEY("max_servers")) {
			if (dlrt_parse_u32(v, 1, 1u << 20, &cfg->max_servers) < 0)
				return dlrt_err_set(err, "plugstack.conf: max_servers='%s' is not a "
						    "number >= 1", v);
		} else if (KEY("runtimes")) {
			if (parse_runtime_set(v, &cfg->allowed, err) < 0)
				return -1;
		} else if (KEY("exchange_timeout")) {
			if (dlrt_parse_u32(v, 1, 3600, &cfg->exchange_timeout) < 0)
				return dlrt_err_set(err, "plugstack.conf: exchange_timeout='%s' is not "
						    "seconds from 1 to 3600", v);
		} else if (KEY("service_timeout")) {
			if (dlrt_parse_u32(v, 1, 600, &cfg->service_timeout) < 0)
				return dlrt_err_set(err, "plugstack.conf: service_timeout='%s' is not "
						    "seconds from 1 to 600", v);
		} else if (KEY("service_max_lifetime")) {
			if (dlrt_parse_u32(v, 60, 1u << 30, &cfg->service_max_lifetime) < 0)
				return dlrt_err_set(err, "plugstack.conf: service_max_lifetime='%s' is "
						    "not seconds, at least 60", v);
		} else if (KEY("horovod")) {
			if (parse_hvd_mode(v, &cfg->horovod_mode) < 0)
				return dlrt_err_set(err, "plugstack.conf: horovod='%s' is not gloo or mpi", v);
		} else if (KEY("mxnet_sched")) {
			if (parse_mxsched(v, &cfg->mxnet_scheduler) < 0)
				return dlrt_err_set(err, "plugstack.conf: mxnet_sched='%s' is not task "
						    "or extra", v);
		} else if (KEY("verbose")) {
			if (dlrt_parse_bool(v, &cfg->verbose) < 0)
				return dlrt_err_set(err, "plugstack.conf: verbose='%s' is not yes or no", v);
		} else if (KEY("gpu_bind")) {
			if (check_gpu_bind(v, cfg->gpu_bind, sizeof(cfg->gpu_bind), err) < 0) {
				char why[sizeof(err->msg)];

				snprintf(why, sizeof(why), "%s", err->msg);
				return dlrt_err_set(err, "plugstack.conf: gpu_bind: %s", why);
			}
		} else if (KEY("topology_xml")) {
			if (check_path("plugstack.conf: topology_xml=", v, cfg->topology_xml,
				       sizeof(cfg->topology_xml), err) < 0)
				return -1;
		} else {
			return dlrt_err_set(err, "plugstack.conf: unknown key '%.*s' (valid: "
					    "default_servers, max_servers, runtimes, verbose, exchange_timeout, "
					    "gpu_bind, topology_xml, service_timeout, service_max_lifetime, "
					    "horovod, mxnet_sched)", (int)klen, kv);
		}
#undef KEY
	}
	return 0;
}

void dlrt_opts_init(struct dlrt_opts *o, const struct dlrt_config *cfg)
{
	memset(o, 0, sizeof(*o));
	o->servers = -1;
	o->verbose = cfg->verbose;
	snprintf(o->gpu_bind, sizeof(o->gpu_bind), "%s", cfg->gpu_bind);
	o->horovod_mode = cfg->horovod_mode;
	o->mxnet_scheduler = cfg->mxnet_scheduler;
}

/* helper | file:DIR. DIR must be absolute: the tasks of a step may start in
 * another folder than srun, and every node must name the same place. */
static int set_store(struct dlrt_opts *o, const char *arg, struct dlrt_err *err)
{
	if (arg && !strcmp(arg, "helper")) {
		o->store = DLRT_STORE_HELPER;
		o->store_dir[0] = '\0';
		return 0;
	}
	if (!arg || strncmp(arg, "file:", 5))
		return dlrt_err_set(err, "--dl-store=%s: must be helper or file:DIR", arg ? arg : "");
	if (arg[5] != '/' || strlen(arg + 5) >= sizeof(o->store_dir) || strpbrk(arg + 5, "\n\r"))
		return dlrt_err_set(err, "--dl-store=%s: DIR must be an absolute path on a filesystem "
				    "every node shares (e.g. file:$HOME/c2store)", arg);
	o->store = DLRT_STORE_FILE;
	snprintf(o->store_dir, sizeof(o->store_dir), "%s", arg + 5);
	return 0;
}

int dlrt_opts_set(struct dlrt_opts *o, const struct dlrt_config *cfg, enum dlrt_opt_id id,
		  const char *arg, struct dlrt_err *err)
{
	char names[256];
	uint32_t v;
	int idx;

	switch (id) {
	case DLRT_OPT_RUNTIME:
		idx = arg ? dlrt_runtime_index(arg) : -1;
		if (idx < 0 || !(cfg->allowed & (1u << idx))) {
			dlrt_runtime_list(names, sizeof(names), cfg->allowed);
			return dlrt_err_set(err, "--dl-runtime=%s: %s; valid runtimes: %s",
					    arg ? arg : "", idx < 0 ? "unknown runtime" :
					    "not enabled at this site", names);
		}
		o->runtime = dlrt_runtimes[idx];
		return 0;
	case DLRT_OPT_SERVERS:
		if (dlrt_parse_u32(arg, 1, cfg->max_servers, &v) < 0)
			return dlrt_err_set(err, "--dl-servers=%s: must be a number from 1 to %u",
					    arg ? arg : "", cfg->max_servers);
		o->servers = (int32_t)v;
		return 0;
	case DLRT_OPT_VERBOSE:
		o->verbose = true;
		return 0;
	case DLRT_OPT_DRY_RUN:
		o->dry_run = true;
		return 0;
	case DLRT_OPT_IFACE:
		/* Interface names: at most 15 bytes, no '/', no spaces (net/core/dev.c). */
		if (!arg || !*arg || strlen(arg) > 15 || strpbrk(arg, "/ \t:"))
			return dlrt_err_set(err, "--dl-iface=%s: not an interface name (see ip link)",
					    arg ? arg : "");
		snprintf(o->iface, sizeof(o->iface), "%s", arg);
		return 0;
	case DLRT_OPT_GPU_BIND:
		if (check_gpu_bind(arg, o->gpu_bind, sizeof(o->gpu_bind), err) < 0)
			return -1;
		o->gpu_bind_set = true;
		return 0;
	case DLRT_OPT_CPU_BIND:
		/* One value today; "none" undoes an inherited sbatch --dl-cpu-bind=gpu. */
		if (arg && !strcmp(arg, "gpu"))
			o->cpu_bind_gpu = true;
		else if (arg && !strcmp(arg, "none"))
			o->cpu_bind_gpu = false;
		else
			return dlrt_err_set(err, "--dl-cpu-bind=%.64s is unknown: use gpu (cores next "
					    "to the task's GPU) or none", arg ? arg : "");
		return 0;
	case DLRT_OPT_TOPOLOGY:
		return check_path("--dl-topology", arg, o->topology, sizeof(o->topology), err);
	case DLRT_OPT_STORE:
		return set_store(o, arg, err);
	case DLRT_OPT_LOG_DIR:
		/* Created later as the user, in each task (spank/logs.c); here only
		 * what can never work: nothing, a newline, or no room for the ids. */
		if (!arg || !*arg || strchr(arg, '\n') || strlen(arg) > sizeof(o->log_dir) - 64)
			return dlrt_err_set(err, "--dl-log-dir=%s: give a folder path of at most %zu "
					    "bytes, e.g. --dl-log-dir=$HOME/dl-logs", arg ? arg : "",
					    sizeof(o->log_dir) - 64);
		snprintf(o->log_dir, sizeof(o->log_dir), "%s", arg);
		return 0;
	case DLRT_OPT_RETRIES:
		if (dlrt_parse_u32(arg, 0, 100, &v) < 0)
			return dlrt_err_set(err, "--dl-retries=%s: must be a number from 0 to 100",
					    arg ? arg : "");
		o->retries = v;
		return 0;
	case DLRT_OPT_HOROVOD:
		if (parse_hvd_mode(arg, &o->horovod_mode) < 0)
			return dlrt_err_set(err, "--dl-horovod=%.64s: must be gloo (dlrt's rendezvous "
					    "driver) or mpi (MPI_Init under srun --mpi=pmix)",
					    arg ? arg : "");
		return 0;
	case DLRT_OPT_MXNET_SCHED:
		if (parse_mxsched(arg, &o->mxnet_scheduler) < 0)
			return dlrt_err_set(err, "--dl-mxnet-sched=%.64s: must be task (task 0 is "
					    "the scheduler) or extra (dlrt starts one more process, -n "
					    "counts servers and workers only)", arg ? arg : "");
		return 0;
	case DLRT_OPT_ELASTIC:
	case DLRT_OPT_NPROC_PER_NODE:
		return dlrt_torchrun_opt_set(o, id, arg, err);
	case DLRT_OPT_COUNT:
		break;
	}
	return dlrt_err_set(err, "internal error: unknown option id %d", (int)id);
}
