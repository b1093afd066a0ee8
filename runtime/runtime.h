/* runtime.h - one interface per distributed DL runtime, and the role model.
 *
 * A runtime is one folder (launchers/<name>/, or inference/ for dlrt-infer)
 * that fills a `struct dlrt_runtime`: its options, site keys, checks, start
 * hooks and plan state are declared there. The table dlrt_runtimes[]
 * (runtime.c) is the only list of runtimes: the SPANK layer, option help,
 * parsers, "valid" messages and the dry-run table all reach the runtimes
 * through it, so adding a runtime touches one folder and one table row.
 *
 * The role model is pure: from the step layout (nodes, tasks per node,
 * distribution) it gives every task a role, a role index and the
 * local/cross ranks every runtime needs. No SPANK symbol is used here.
 */
#ifndef DLRT_RUNTIME_H
#define DLRT_RUNTIME_H

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dlrt_err.h"
#include "common/env.h"
#include "common/layout.h"
#include "opts.h"
#include "services/service.h"

enum dlrt_role {
	DLRT_ROLE_WORKER,
	DLRT_ROLE_SERVER,
	DLRT_ROLE_SCHEDULER,
	DLRT_ROLE_MASTER,
	DLRT_ROLE_COUNT
};

const char *dlrt_role_name(enum dlrt_role role);

struct dlrt_task_role {
	enum dlrt_role role;
	uint32_t role_index; /* position among the tasks of this role, by task id */
	uint32_t cross_rank; /* Horovod's: index of this node among nodes with this local rank */
	uint32_t cross_size; /* Horovod's: number of nodes with a task of this local rank */
};

#define DLRT_RT_STATE_SIZE 64

/* The role table of one step. */
struct dlrt_plan {
	const struct dlrt_runtime *runtime;
	const struct dlrt_layout *layout;
	const struct dlrt_opts *opts;
	struct dlrt_task_role *task;          /* [layout->ntasks] */
	uint32_t role_count[DLRT_ROLE_COUNT];
	/* The runtime's own plan state, filled by its assign() (e.g. mxnet's
	 * resolved server count); a block inline for the same reasons as the
	 * option blocks (opts.h), cast by the runtime to its own struct. */
	struct {
		_Alignas(max_align_t) unsigned char b[DLRT_RT_STATE_SIZE];
	} rt_state;
	bool user_service;                    /* the user exported runtime->user_service_var */
	/* The tasks learn no address before exec (their program links MPI, or
	 * DLRT_EXCHANGE=none): a runtime whose service is optional starts none. */
	bool no_exchange;
	/* slurmstepd, while the service's arguments are made: the step's ids and
	 * its job environment (e.g. HOROVOD_ELASTIC); NULL otherwise. */
	const struct dlrt_step_info *step;
	const struct dlrt_step_ctx *step_ctx;
};

/* One task's own address (runtimes with needs_task_ports): its node's
 * numeric IPv4 and a port checked free on that node for that task. */
struct dlrt_task_addr {
	char ip[16];
	uint16_t port;
};

/* Addresses learned through the address exchange (pmix-bridge), per task. */
struct dlrt_addrs {
	bool valid;
	char root_ip[16];   /* numeric IPv4 of the root task's node (scheduler, rank 0) */
	uint16_t root_port; /* checked free on that node just before the exchange */
	char node_ip[16];   /* this task's node, as the other nodes reach it */
	char iface[32];     /* --dl-iface, if given */
	/* A node service's step secret, published with its address (svcauth.h);
	 * only the node's first task reads it, to hand it to its node relay. */
	bool has_secret;
	uint8_t secret[32];
	/* needs_task_ports: every task's address, by task id [layout->ntasks]. */
	const struct dlrt_task_addr *tasks;
};

/* Facts about the step that are not part of the layout. */
struct dlrt_step_info {
	uint32_t job_id;
	uint32_t step_id;
	uint32_t restart_count; /* Slurm's requeue counter: the attempt number */
	bool in_array;          /* the job is an element of a job array */
	uint32_t array_job_id;  /* SLURM_ARRAY_JOB_ID (if in_array) */
	uint32_t array_task_id; /* SLURM_ARRAY_TASK_ID (if in_array) */
};

/* What a runtime's check_step may ask of the step, without knowing SPANK. */
struct dlrt_step_ctx {
	/* Copies the job's variable `name` into buf; 0, or -1 when it is unset. */
	int (*getenv)(void *sp, const char *name, char *buf, size_t len);
	void *sp;
	/* The tasks' program takes dlrt's address exchange before exec (it does not
	 * link MPI, and no DLRT_EXCHANGE=none). */
	bool program_takes_exchange;
};

/* One more process dlrt starts next to a task (spank/companion.c): the
 * step's own program with the task's environment, `env` replacing the task's
 * variables of those names and without the task's PMIx identity. The task's
 * process becomes the supervisor of both, which ends when both ended and ends
 * the step when the first fails. */
struct dlrt_companion {
	const char *what;           /* "the extra mxnet scheduler", for messages */
	enum dlrt_role role;        /* its role, for the dry run's role line */
	const char *proc_name;      /* the supervisor's name (prctl, 15 bytes) */
	const char *const *env;     /* "NAME=value", NULL-terminated */
	const char *as_task;        /* the option that makes a task take its role */
};

struct dlrt_runtime {
	const char *name;
	const char *summary; /* one line for man pages and --dl-dry-run */
	/* The program of this runtime's tasks does its own PMIx/MPI wire-up, so dlrt
	 * must never open a PMIx session in those tasks (see docs/ARCHITECTURE.md). */
	bool program_uses_pmix;
	/* Its tasks need the root task's address and a free port on its node
	 * (DMLC_PS_ROOT_URI/PORT, MASTER_ADDR/PORT): dlrt exchanges them. */
	bool needs_root_addr;
	/* Every task listens on a port of its own that every other task must
	 * know (TensorFlow's gRPC servers): the exchange checks one free port per
	 * task on each node and gives every task the list (addrs->tasks). */
	bool needs_task_ports;
	/* Its roles wait forever for a peer that died (ps-lite): the first task
	 * that fails ends the whole step, naming its role (spank/failfast.c). */
	bool end_step_on_failure;
	/* Its tasks run torch.distributed: dlrt's sitecustomize (launchers/torch/
	 * python/, installed in pkglibexecdir/python) goes first on their
	 * PYTHONPATH, so that a torch 2.x built without libuv still connects to
	 * the TCPStores no USE_LIBUV reaches (docs/torch.md). */
	bool python_shim;
	/* Its tasks are agents that start the real workers (torchrun): the
	 * warning of --dl-signal goes to each task's children, the workers, and
	 * not to the agent, which a signal it does not handle would end
	 * (spank/lifecycle.c). */
	bool warn_children;
	/* Its --dl-* options, ended by { NULL } (at most 32), parsed into the
	 * runtime's own options block (opts.h: dlrt_rt_opts); opts_init sets that
	 * block's defaults from the runtime's site keys (its config block).
	 * Both may be NULL. */
	const struct dlrt_rt_option *options;
	void (*opts_init)(void *opts, const void *cfg);
	/* Its plugstack.conf keys, ended by { NULL }, with defaults and limits
	 * (opts.h: struct dlrt_site_key). May be NULL. */
	const struct dlrt_site_key *keys;
	/* Rejects options that cannot work for this many tasks: srun runs it
	 * before launch and slurmstepd again with the full layout. May be NULL. */
	int (*validate)(const struct dlrt_opts *o, const struct dlrt_config *cfg, uint32_t ntasks,
			uint32_t nnodes, struct dlrt_err *err);
	/* A step over several components of a heterogeneous job, with
	 * --dl-het-roles=split (dlrt_plan_het_split): refuses components that
	 * cannot hold the runtime's roles, given each component's task count,
	 * in one line that says what fits; assign() then places the roles by
	 * component. NULL: the runtime's roles do not follow components (one
	 * world in component order, as with flat). srun runs it before launch
	 * where it can count the components, slurmstepd again. */
	int (*validate_comps)(const struct dlrt_opts *o, const struct dlrt_config *cfg,
			      uint32_t ncomps, const uint32_t *comp_ntasks, struct dlrt_err *err);
	/* Fills plan->task[].role and plan->rt_state; role indices are numbered after. */
	void (*assign)(struct dlrt_plan *plan, const struct dlrt_config *cfg);
	/* slurmstepd, every node, once the plan is built and before any service
	 * starts: refuses a step that cannot work (e.g. an environment variable
	 * the runtime cannot serve), one line naming the fix. May be NULL. */
	int (*check_step)(const struct dlrt_plan *plan, const struct dlrt_step_ctx *ctx,
			  struct dlrt_err *err);
	/* Per-task start hook: true and `c` filled when task `rank` gets a
	 * companion process (struct dlrt_companion), started at the very end of
	 * its task_init, as the user. Pure: also asked by the dry run and the
	 * failure reports. May be NULL. */
	bool (*companion)(const struct dlrt_plan *plan, uint32_t rank, struct dlrt_companion *c);
	/* The option that runs an MPI program of this runtime without dlrt's
	 * exchange (horovod: "--dl-horovod=mpi"), named in that error. May be NULL. */
	const char *mpi_option;
	/* A node service this step needs (see services/service.h), or NULL. Called on
	 * every node, since every node must know whether the exchange carries the
	 * service's port: returns true and fills `spec` (program and the runtime's
	 * own arguments) when the step needs one. The plugin starts it on the
	 * root task's node before any task, as the user, for the step's lifetime;
	 * the tasks get its address in addrs->root_ip/root_port. */
	bool (*service)(const struct dlrt_plan *plan, struct dlrt_service_spec *spec);
	/* Variables (separated by spaces) whose presence in the user's
	 * environment means "I run this service myself" (caffe2: REDIS_HOST):
	 * the plugin sets plan->user_service before calling service(). May be NULL. */
	const char *user_service_var;
	/* Adds the variables of the runtime's launch contract for task `rank`. */
	void (*task_env)(const struct dlrt_plan *plan, uint32_t rank,
			 const struct dlrt_step_info *step, const struct dlrt_addrs *addrs,
			 struct dlrt_env *env);
	/* Variables that follow the task's GPUs, after the GPU plan gave task
	 * `rank` its `ngpus` GPUs (its CUDA_VISIBLE_DEVICES). Called only when
	 * dlrt planned the GPUs. May be NULL. */
	void (*gpu_env)(const struct dlrt_plan *plan, uint32_t rank, int ngpus,
			struct dlrt_env *env);
};

/* NULL-terminated table, in the order runtimes are listed to users. */
extern const struct dlrt_runtime *const dlrt_runtimes[];

int dlrt_runtime_index(const char *name);
/* Writes "mxnet, horovod, ..." for the runtimes whose bit is set in `mask`. */
void dlrt_runtime_list(char *buf, size_t len, uint32_t mask);

/* The runtime's checks of a step of `ncomps` components (0 or 1: a plain
 * step) with these task counts: validate() over the whole step, or
 * validate_comps() where the roles follow the components. */
int dlrt_plan_validate(const struct dlrt_runtime *rt, const struct dlrt_opts *opts,
		       const struct dlrt_config *cfg, uint32_t ncomps, const uint32_t *comp_ntasks,
		       uint32_t ntasks, uint32_t nnodes, struct dlrt_err *err);
/* Whether the plan places the runtime's roles by component (assign()). */
bool dlrt_plan_het_split(const struct dlrt_plan *plan);

int dlrt_plan_build(struct dlrt_plan *plan, const struct dlrt_runtime *rt,
		    const struct dlrt_layout *layout, const struct dlrt_opts *opts,
		    const struct dlrt_config *cfg, struct dlrt_err *err);
void dlrt_plan_free(struct dlrt_plan *plan);

/* The whole environment of task `rank`: DLRT_* plus the runtime's contract. */
int dlrt_plan_task_env(const struct dlrt_plan *plan, uint32_t rank,
		       const struct dlrt_step_info *step, const struct dlrt_addrs *addrs,
		       struct dlrt_env *env, struct dlrt_err *err);

/* Whether task `rank` of the plan has a companion (runtime->companion). */
bool dlrt_plan_companion(const struct dlrt_plan *plan, uint32_t rank, struct dlrt_companion *c);

#endif
