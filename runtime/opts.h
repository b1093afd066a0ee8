/* opts.h - dlrt's command-line options and its plugstack.conf site settings.
 *
 * Pure parsing and validation, shared by the plugin (every SPANK context) and
 * the unit tests. The generic options and keys are described here; each
 * runtime declares its own in its folder (struct dlrt_runtime: options, keys),
 * and this file walks the runtime table for them, so --help, the parsers and
 * the "valid keys" message all come from the same declarations.
 */
#ifndef DLRT_OPTS_H
#define DLRT_OPTS_H

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dlrt_err.h"
/* Every option and key parser reads numbers and words with these; the
 * runtimes' parsers and the plugin reach them through this header. */
#include "common/parse.h"
#include "preflight/pfspec.h"

struct dlrt_runtime;

/* Runtime-private storage inside the generic structs: each runtime of the
 * table (runtime/runtime.c) owns one block, by its table index, and reaches it
 * only through dlrt_rt_opts()/dlrt_rt_config()/plan->rt_state and its own
 * struct (a _Static_assert in its folder checks that the struct fits). Inline
 * fixed-size blocks rather than pointers: struct dlrt_opts and dlrt_config
 * are copied by value (tests, every SPANK context), slurmstepd's tasks
 * inherit them through fork, and nothing here can fail to allocate. Every
 * runtime has its own block, since option values arrive before --dl-runtime
 * is known and a later --dl-runtime may choose another runtime. */
#define DLRT_RUNTIME_MAX 16      /* table rows; cfg->allowed is a 32-bit mask */
#define DLRT_RT_OPTS_SIZE 1152   /* a runtime's options (room for a path) */
#define DLRT_RT_CONFIG_SIZE 64   /* a runtime's site keys */

struct dlrt_rt_opts {
	_Alignas(max_align_t) unsigned char b[DLRT_RT_OPTS_SIZE];
};

struct dlrt_rt_config {
	_Alignas(max_align_t) unsigned char b[DLRT_RT_CONFIG_SIZE];
};

/* What carries the step's address exchange (--dl-exchange, exchange=). */
enum dlrt_exchange_via {
	DLRT_EXCHANGE_AUTO,  /* PMIx when the step has a PMIx server, else srun's rendezvous */
	DLRT_EXCHANGE_PMIX,  /* Slurm's PMIx server on every node (pmix-bridge, dlrt-kv) */
	DLRT_EXCHANGE_SRUN,  /* the rendezvous srun hosts for the step (exchange/rdvclient.h) */
};

/* "auto", "pmix", "srun". */
const char *dlrt_exchange_via_name(enum dlrt_exchange_via via);

/* How a heterogeneous step's roles follow its components (--dl-het-roles,
 * het_roles=; docs/hetjob.md). */
enum dlrt_het_roles {
	DLRT_HET_SPLIT, /* the runtime's CPU roles (scheduler, servers, ps) in the first
			 * component, its workers in the others */
	DLRT_HET_FLAT,  /* one world in component order, placed as in a plain step */
};

/* "split", "flat". */
const char *dlrt_het_roles_name(enum dlrt_het_roles m);

/* Site settings: plugstack.conf arguments "key=value" after the plugin path. */
struct dlrt_config {
	uint32_t allowed;         /* bit i set = runtime i of the runtime table is allowed */
	bool verbose;             /* behave as if every job passed --dl-verbose */
	uint32_t exchange_timeout; /* seconds any wait of the address exchange may take */
	enum dlrt_exchange_via exchange; /* exchange=: what carries it when a job does not say */
	char gpu_bind[256];       /* gpu_bind=: --dl-gpu-bind when a job gives none */
	char topology_xml[1024];  /* topology_xml=: hwloc XML instead of the live node ("%n" = node) */
	uint32_t service_timeout;  /* seconds a node service may take to listen */
	uint32_t service_max_lifetime; /* seconds after which a node service is killed anyway */
	int warn_sig;             /* signal=: --dl-signal's signal when a job gives none (0: none) */
	uint32_t warn_secs;       /* signal=: its seconds before the time limit */
	char checkpoint_dir[1024]; /* checkpoint_dir=: where DLRT_CHECKPOINT_DIR's folders go */
	struct dlrt_pf_spec preflight; /* preflight=: --dl-preflight of a job that gives none */
	enum dlrt_het_roles het_roles; /* het_roles=: --dl-het-roles when a job gives none */
	struct dlrt_rt_config rt[DLRT_RUNTIME_MAX]; /* each runtime's own keys */
};

/* A plugstack.conf key a runtime declares (struct dlrt_runtime.keys): the
 * parser, the defaults, the "valid keys" message and the check of
 * dlrt.conf.in all walk these. The value is a uint32_t at `offset` in the
 * runtime's config block: a number in [lo, hi], or the index of one of
 * `choices`. */
enum dlrt_key_type {
	DLRT_KEY_U32,
	DLRT_KEY_CHOICE,
};

struct dlrt_site_key {
	const char *name;           /* NULL ends the runtime's array */
	enum dlrt_key_type type;
	size_t offset;              /* of its uint32_t in the runtime's config struct */
	uint32_t def;               /* default (CHOICE: index into choices) */
	uint32_t lo, hi;            /* U32: inclusive limits */
	const char *const *choices; /* CHOICE: the accepted words, NULL-terminated */
	const char *fix;            /* the error after "plugstack.conf: KEY='V' " */
};

/* A --dl-* option a runtime declares (struct dlrt_runtime.options). */
struct dlrt_rt_option {
	const char *name;    /* without "--"; NULL ends the runtime's array */
	const char *arginfo; /* NULL for flags */
	const char *usage;   /* one line for --help, "[dlrt] ..." */
	/* Parses `arg` (may be NULL) into the runtime's own options `opts`,
	 * given its site keys `cfg`; -1 and `err` naming the valid values. */
	int (*set)(void *opts, const void *cfg, const char *arg, struct dlrt_err *err);
	/* Given with another --dl-runtime, srun refuses the job (the option would
	 * silently do nothing for the chosen runtime). */
	bool only_this_runtime;
};

/* The generic options; every runtime's options follow them in the flat
 * option list (ids DLRT_OPT_GENERIC_COUNT .. dlrt_opt_count() - 1). */
enum dlrt_opt_id {
	DLRT_OPT_RUNTIME,
	DLRT_OPT_VERBOSE,
	DLRT_OPT_DRY_RUN,
	DLRT_OPT_IFACE,
	DLRT_OPT_GPU_BIND,
	DLRT_OPT_CPU_BIND,
	DLRT_OPT_TOPOLOGY,
	DLRT_OPT_LOG_DIR,
	DLRT_OPT_RETRIES,
	DLRT_OPT_EXCHANGE,
	DLRT_OPT_SIGNAL,
	DLRT_OPT_REQUEUE,
	DLRT_OPT_CHECKPOINT_DIR,
	DLRT_OPT_HANG_TIMEOUT,
	DLRT_OPT_PREFLIGHT,
	DLRT_OPT_HET_ROLES,
	DLRT_OPT_GENERIC_COUNT
};

struct dlrt_opt_desc {
	const char *name;    /* without the leading "--" */
	const char *arginfo; /* NULL for flags */
	const char *usage;   /* one line for --help */
	const struct dlrt_runtime *runtime; /* the runtime declaring it; NULL: generic */
};

/* Every option, generic then each runtime's in table order: the flat list
 * SPANK registers. Ids are 0 .. dlrt_opt_count() - 1. */
int dlrt_opt_count(void);
int dlrt_opt_describe(int id, struct dlrt_opt_desc *d);
int dlrt_opt_find(const char *name); /* "dl-log-dir" -> id, -1 if none */

struct dlrt_opts {
	const struct dlrt_runtime *runtime; /* NULL: dlrt does nothing for this job */
	bool verbose;
	bool dry_run;
	char iface[32];                     /* --dl-iface: "" = the route to the srun host */
	char gpu_bind[1024];                /* --dl-gpu-bind (checked), else the site's gpu_bind */
	bool gpu_bind_set;                  /* given by the job, not the default */
	bool cpu_bind_gpu;                  /* --dl-cpu-bind=gpu */
	char topology[1024];                /* --dl-topology: "" = topology_xml=, else the node */
	char log_dir[1024];                 /* --dl-log-dir: "" = no log export (spank/logs.c) */
	uint32_t retries;                   /* --dl-retries: requeues allowed (spank/requeue.c) */
	enum dlrt_exchange_via exchange;    /* --dl-exchange, else the site's exchange= */
	int warn_sig;                       /* --dl-signal's signal (0: no warning; spank/lifecycle.c) */
	uint32_t warn_secs;                 /* ... sent this many seconds before the time limit */
	uint32_t requeue;                   /* --dl-requeue: requeues after a warning (spank/requeue.c) */
	char checkpoint_dir[1024];          /* --dl-checkpoint-dir, else checkpoint_dir=, else "" (HOME) */
	bool checkpoint_dir_given;          /* --dl-checkpoint-dir, not the site's checkpoint_dir= */
	uint32_t hang_timeout;              /* --dl-hang-timeout: seconds; 0 = no hang detection */
	struct dlrt_pf_spec preflight;      /* --dl-preflight over the site's preflight= (spank/preflight.c) */
	bool preflight_given;               /* the job gave --dl-preflight */
	enum dlrt_het_roles het_roles;      /* --dl-het-roles, else the site's het_roles= */
	uint32_t rt_given[DLRT_RUNTIME_MAX]; /* bit k: the job gave runtime i's option k */
	struct dlrt_rt_opts rt[DLRT_RUNTIME_MAX]; /* each runtime's own options */
};

/* The runtime-private blocks of runtime `rt` (a row of the table). */
void *dlrt_rt_opts(struct dlrt_opts *o, const struct dlrt_runtime *rt);
const void *dlrt_rt_opts_c(const struct dlrt_opts *o, const struct dlrt_runtime *rt);
const void *dlrt_rt_config(const struct dlrt_config *cfg, const struct dlrt_runtime *rt);

/* Defaults first, then every av[i] as key=value; unknown keys are errors. */
int dlrt_config_parse(struct dlrt_config *cfg, int ac, char **av, struct dlrt_err *err);

void dlrt_opts_init(struct dlrt_opts *o, const struct dlrt_config *cfg);

/* Applies one option. Slurm may call twice with the same value (environment,
 * then command line); a later value replaces an earlier one, so an srun inside
 * an `sbatch --dl-runtime=X` script can still choose another runtime. */
int dlrt_opts_set(struct dlrt_opts *o, const struct dlrt_config *cfg, int id, const char *arg,
		  struct dlrt_err *err);
/* The same, by the option's name ("dl-log-dir"). */
int dlrt_opts_set_name(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *name,
		       const char *arg, struct dlrt_err *err);
/* srun: refuses an option of another runtime that would do nothing for the
 * chosen one (struct dlrt_rt_option.only_this_runtime). */
int dlrt_opts_check_runtime(const struct dlrt_opts *o, struct dlrt_err *err);

/* Writes "key, key, ..." of every plugstack.conf key: the generic ones, then
 * each runtime's. The "unknown key" error and the dlrt.conf.in check use it. */
void dlrt_config_keys(char *buf, size_t len);

#endif
