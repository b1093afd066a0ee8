/* opts.h - dlrt's command-line options and its plugstack.conf site settings.
 *
 * Pure parsing and validation, shared by the plugin (every SPANK context) and
 * the unit tests. The option table here is the single source of the option
 * names and one-line usages that srun/sbatch --help show.
 */
#ifndef DLRT_OPTS_H
#define DLRT_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "dlrt_err.h"

struct dlrt_runtime;

/* Site settings: plugstack.conf arguments "key=value" after the plugin path. */
struct dlrt_config {
	uint32_t default_servers; /* mxnet servers when --dl-servers is absent; 0 = one per node */
	uint32_t max_servers;     /* upper bound for --dl-servers */
	uint32_t allowed;         /* bit i set = runtime i of the runtime table is allowed */
	bool verbose;             /* behave as if every job passed --dl-verbose */
	uint32_t exchange_timeout; /* seconds any PMIx wait of the exchange may take */
	char gpu_bind[256];       /* gpu_bind=: --dl-gpu-bind when a job gives none */
	char topology_xml[1024];  /* topology_xml=: hwloc XML instead of the live node ("%n" = node) */
	uint32_t service_timeout;  /* seconds a node service may take to listen */
	uint32_t service_max_lifetime; /* seconds after which a node service is killed anyway */
	int horovod_mode;          /* default of --dl-horovod (enum dlrt_hvd_mode) */
	int mxnet_scheduler;       /* default of --dl-mxnet-sched (enum dlrt_mxsched) */
};

/* --dl-horovod: who wires up Horovod's workers. */
enum dlrt_hvd_mode {
	DLRT_HVD_GLOO, /* dlrt's rendezvous driver, HOROVOD_CONTROLLER=gloo (TonY's way, no MPI) */
	DLRT_HVD_MPI,  /* MPI_Init under srun --mpi=pmix; dlrt opens no PMIx session in the task */
};

const char *dlrt_hvd_mode_name(int mode);

/* --dl-mxnet-sched: where ps-lite's scheduler runs. */
enum dlrt_mxsched {
	DLRT_MXSCHED_TASK,  /* task 0 is the scheduler: -n counts scheduler + servers + workers */
	DLRT_MXSCHED_EXTRA, /* dlrt starts one more process next to task 0 (dmlc's launcher):
			     * -n counts servers + workers only */
};

const char *dlrt_mxsched_name(int mode);

enum dlrt_opt_id {
	DLRT_OPT_RUNTIME,
	DLRT_OPT_SERVERS,
	DLRT_OPT_VERBOSE,
	DLRT_OPT_DRY_RUN,
	DLRT_OPT_IFACE,
	DLRT_OPT_GPU_BIND,
	DLRT_OPT_CPU_BIND,
	DLRT_OPT_TOPOLOGY,
	DLRT_OPT_STORE,
	DLRT_OPT_LOG_DIR,
	DLRT_OPT_RETRIES,
	DLRT_OPT_HOROVOD,
	DLRT_OPT_MXNET_SCHED,
	DLRT_OPT_ELASTIC,         /* torchrun (launchers/torchrun/torchrun_opts.c) */
	DLRT_OPT_NPROC_PER_NODE,  /* torchrun */
	DLRT_OPT_COUNT
};

struct dlrt_opt_desc {
	const char *name;    /* without the leading "--" */
	const char *arginfo; /* NULL for flags */
	const char *usage;   /* one line for --help */
};

extern const struct dlrt_opt_desc dlrt_opt_descs[DLRT_OPT_COUNT];

/* --dl-store: where caffe2 trainers rendezvous. */
enum dlrt_store_kind {
	DLRT_STORE_AUTO,   /* the helper, unless the user exported REDIS_HOST (their redis) */
	DLRT_STORE_HELPER, /* always the helper; overrides REDIS_HOST/REDIS_PORT */
	DLRT_STORE_FILE,   /* no helper: a folder on a shared filesystem (NFS_PATH) */
};

struct dlrt_opts {
	const struct dlrt_runtime *runtime; /* NULL: dlrt does nothing for this job */
	int32_t servers;                    /* -1 = not given */
	bool verbose;
	bool dry_run;
	char iface[32];                     /* --dl-iface: "" = the route to the srun host */
	char gpu_bind[1024];                /* --dl-gpu-bind (checked), else the site's gpu_bind */
	bool gpu_bind_set;                  /* given by the job, not the default */
	bool cpu_bind_gpu;                  /* --dl-cpu-bind=gpu */
	char topology[1024];                /* --dl-topology: "" = topology_xml=, else the node */
	enum dlrt_store_kind store;         /* --dl-store */
	char store_dir[1024];               /* --dl-store=file:DIR, an absolute path */
	char log_dir[1024];                 /* --dl-log-dir: "" = no log export (spank/logs.c) */
	uint32_t retries;                   /* --dl-retries: requeues allowed (spank/requeue.c) */
	int horovod_mode;                   /* --dl-horovod (enum dlrt_hvd_mode) */
	int mxnet_scheduler;                /* --dl-mxnet-sched (enum dlrt_mxsched) */
	uint32_t elastic_min, elastic_max;  /* --dl-elastic=MIN:MAX (torchrun); 0 = not elastic */
	char nproc_per_node[8];             /* --dl-nproc-per-node (torchrun): "" = 1 */
};

/* Defaults first, then every av[i] as key=value; unknown keys are errors. */
int dlrt_config_parse(struct dlrt_config *cfg, int ac, char **av, struct dlrt_err *err);

void dlrt_opts_init(struct dlrt_opts *o, const struct dlrt_config *cfg);

/* Applies one option. Slurm may call twice with the same value (environment,
 * then command line); a later value replaces an earlier one, so an srun inside
 * an `sbatch --dl-runtime=X` script can still choose another runtime. */
int dlrt_opts_set(struct dlrt_opts *o, const struct dlrt_config *cfg, enum dlrt_opt_id id,
		  const char *arg, struct dlrt_err *err);

/* Parses a whole decimal number in [lo, hi]. */
int dlrt_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out);
/* Parses yes/no/true/false/1/0/y/n. */
int dlrt_parse_bool(const char *s, bool *out);

#endif
