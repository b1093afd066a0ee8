/* plugin.h - state of the dlrt SPANK plugin, shared by its per-context files.
 *
 * Each SPANK context (srun, sbatch/salloc, slurmstepd) is its own process, so
 * there is exactly one `struct dlrt_plugin` per process: the site config,
 * the options, and in slurmstepd the step's layout and role table, computed
 * once per node in user_init and inherited by every task through fork.
 */
#ifndef DLRT_PLUGIN_H
#define DLRT_PLUGIN_H

#include <slurm/spank.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/layout.h"
#include "runtime/opts.h"
#include "runtime/runtime.h"
#include "services/svcauth.h"

struct dlrt_node_share;
struct dlrt_lc_page;

/* "JOB.STEP" of a step srun refused after Slurm created it: its tasks end in
 * task_init, so that Slurm frees the step (client.c, refuse_step). */
#define DLRT_REFUSED_ENV "SLURM_DLRT_REFUSED"
/* The port of srun's rendezvous, where the step's --dl-signal watchers share
 * the job's times (tools/lcshare.h), in every step srun keeps it for: also a
 * step whose exchange Slurm's PMIx carries (client.c). */
#define DLRT_TIMES_ENV "SLURM_DLRT_TIMES"

/* A pipe made in slurmstepd's own process (init_post_opt) for a program that
 * user_init starts: with SlurmdParameters=contain_spank (Slurm 24.05+) user_init
 * runs in a child process of slurmstepd (clone with CLONE_VM: the same memory, a
 * copy of the descriptors, gone when user_init returns), so an end slurmstepd or
 * its tasks use later must be in slurmstepd's own table (service.c). -1: not
 * made, or no longer slurmstepd's to close. */
struct dlrt_stepd_pipe {
	int fd[2];
};

/* A node service started by this slurmstepd (service.c). */
struct dlrt_svc {
	pid_t pid;         /* 0 = none */
	int life_fd;       /* write end of the lifetime pipe; closing it ends the service */
	uint16_t port;     /* from its readiness line */
	char ip[16];       /* the address it listens on */
	char log[256];     /* its --dl-verbose log (a random name in /tmp), "" without */
	const char *what;
};

struct dlrt_plugin {
	struct dlrt_config cfg;
	struct dlrt_opts opts;
	bool config_ok;
	bool opt_failed;           /* an option value was invalid: reported in init_post_opt */
	struct dlrt_err opt_err;
	/* slurmstepd only */
	bool active;               /* an srun step with --dl-runtime */
	bool refused;              /* srun refused this step: its tasks only exit */
	struct dlrt_step_info step;
	uint32_t node_id;
	struct dlrt_layout layout;
	struct dlrt_plan plan;
	bool has_service;          /* the runtime needs a node service in this step */
	const char *service_what;  /* its description, for messages */
	struct dlrt_svc svc;       /* started here if this node hosts task 0 */
	bool svc_failed;           /* it was to start here and did not (deferred_err) */
	/* The step secret srun made (SLURM_DLRT_RENDEZVOUS), read in user_init
	 * on every node of a step that exchanges, and the node service's key
	 * derived from it (exchange.h). */
	bool has_step_secret;
	uint8_t step_secret[32];
	uint8_t secret[32];
	struct dlrt_svc relay;     /* this node's dlrt-relay, in every step with a service */
	struct dlrt_svc watcher;   /* dlrt-lifecycle (--dl-signal, --dl-requeue), or pid 0 */
	struct dlrt_lc_page *lc_page; /* the node's task pids for it (lifecycle.c) */
	struct dlrt_svc rendezvous; /* srun only: the step's rendezvous (rdvclient.h) */
	int relay_config_fd;       /* its config pipe (close-on-exec); -1: none */
	uint32_t tasks_ended;      /* this node's tasks that have ended (task_exit) */
	long svc_start_us;         /* how long starting it took (--dl-verbose) */
	/* The address exchange, one connection to srun per node (exchange.h): the
	 * answer of the node's first task, shared with its other tasks, and the
	 * first task of every other node. */
	struct dlrt_node_share *share;
	size_t share_len;          /* its mapped length (share_size() at the map) */
	char *reps;
	/* Errors found in user_init are raised in task_init: on Slurm 22.05 a
	 * user_init failure does not fail srun (NVIDIA/pyxis does the same). */
	int deferred_rc;
	struct dlrt_err deferred_err;
	double plan_ms;            /* --dl-verbose: time user_init took to build the table */
	/* slurmstepd's own pid (init_post_opt): user_init and task_exit run in a child
	 * of it with contain_spank (dlrt_stepd_apart), and the pipes made for them. */
	pid_t stepd_pid;
	struct dlrt_stepd_pipe pipe_svc, pipe_relay, pipe_relay_config, pipe_watcher;
};

extern struct dlrt_plugin dlrt_plugin;

/* service.c: a runtime's node service, on the root task's node */
int dlrt_service_start(spank_t sp, const struct dlrt_service_spec *spec, struct dlrt_svc *svc,
		       struct dlrt_err *err);
/* Ends it: closes its lifetime pipe and waits for it to exit (1 s), then
 * kills what is left of it. */
void dlrt_service_stop(struct dlrt_svc *svc);
/* The same, waiting up to `ms`: a step's service lingers until the step's
 * other nodes are done (services/svchold.h). */
void dlrt_service_stop_within(struct dlrt_svc *svc, int64_t ms);
/* From a child of slurmstepd (contain_spank), which is not the program's
 * parent and whose lifetime pipe it cannot close: sends `sig` and waits up to
 * `ms` for it to end, then kills its process group; slurm_spank_exit reaps it. */
void dlrt_service_signal_within(struct dlrt_svc *svc, int sig, int64_t ms);
/* In init_post_opt (slurmstepd's own process): records its pid and, if `want`,
 * makes the pipes of the programs user_init may start (struct dlrt_stepd_pipe);
 * at exit, closes what is left of them. */
void dlrt_stepd_pipes_make(bool want);
void dlrt_stepd_pipes_close(void);
/* Whether this is a child process slurmstepd runs a SPANK callback in
 * (SlurmdParameters=contain_spank), not slurmstepd itself. */
bool dlrt_stepd_apart(void);
/* Starts this node's relay (as the job user, like a service) and returns the
 * write end of its config pipe in *config_w. */
int dlrt_relay_start_node(spank_t sp, struct dlrt_svc *relay, int *config_w,
			  struct dlrt_err *err);

/* service.c: a watcher program next to the step (dlrt-lifecycle), started and
 * stopped like a service, but never waited for: `args` are its options
 * (common/argv.h), to which this adds its path, --lifetime-fd, and with a
 * `secret` (the step secret, 32 bytes; NULL: none) --secret-fd, a pipe that
 * holds it; `extra_fd` (or -1) stays open in it. dlrt_watcher_stop ends it
 * (end of file on its lifetime pipe, bounded) and logs one line on `node` if
 * it had ended early with an error (it could not start, or bad arguments). */
struct dlrt_argv;
int dlrt_watcher_start(spank_t sp, const char *program, const char *what, struct dlrt_argv *args,
		       int extra_fd, const uint8_t *secret, struct dlrt_svc *svc,
		       struct dlrt_err *err);
void dlrt_watcher_stop(struct dlrt_svc *svc, const char *node);

/* service.c: srun's rendezvous for the step (local context, exchange/rdvclient.h);
 * stopped with dlrt_service_stop. */
int dlrt_rendezvous_start(struct dlrt_svc *rdv, const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
			  struct dlrt_err *err);

/* service.c: the path of an installed dlrt program (libexec), checked as the
 * services' are. */
int dlrt_service_program_path(const char *program, char *out, size_t len, struct dlrt_err *err);

/* preflight.c: --dl-preflight in srun's init_post_opt, before the step
 * exists; returns when the step may start as asked, execs srun again with
 * --exclude when a node failed, exits on an error. */
void dlrt_preflight_srun(void);
/* The step exists (local_user_init); srun exits: a second run that never
 * made its step records the nodes it left out for --dl-retries. */
void dlrt_preflight_step_made(void);
void dlrt_preflight_exit(void);
/* requeue.c: one line into the job's retry record from srun (the user's own
 * process), as the nodes' records are written. */
void dlrt_requeue_note_client(uint32_t job_id, const char *line);

/* taskfacts.c: what Slurm says about this task and its job. A variable of the
 * step's or task's environment (spank_getenv, the plugin's one call of it)
 * into buf: 0, or -1 and "" when it is not set (or does not fit). */
int dlrt_task_getenv(spank_t sp, const char *name, char *buf, size_t len);
/* Whether the variable is set and not empty, however long. */
bool dlrt_task_env_nonempty(spank_t sp, const char *name);
/* The variable read whole, up to 1 MiB, into a new string (the caller frees
 * it): 1 and *value, or 1 and NULL when it is longer or memory ran out, or 0
 * when it is not set. */
int dlrt_task_getenv_whole(spank_t sp, const char *name, char **value);
/* The task's whole environment as Slurm holds it (S_JOB_ENV; in slurmstepd,
 * what the program will exec with, Slurm's PMIx coordinates included), or
 * NULL. */
char **dlrt_task_environ(spank_t sp);
/* The program this task will exec, found as execvp would (the job's PATH). */
bool dlrt_task_program_path(spank_t sp, char *out, size_t len);
/* The job's attempt (Slurm's restart count, as every step sees it). */
uint32_t dlrt_restart_count(spank_t sp);

/* options.c */
int dlrt_options_register(spank_t sp);

/* client.c: srun (local) and sbatch/salloc (allocator) */
int dlrt_client_post_opt(spank_t sp);
int dlrt_client_local_user_init(spank_t sp);
void dlrt_client_exit(void);

/* stepd.c: slurmstepd (remote) */
int dlrt_stepd_post_opt(spank_t sp);
int dlrt_stepd_user_init(spank_t sp);
int dlrt_stepd_task_init(spank_t sp);
/* After each task of this node has ended: the last one ends the step's services
 * here (the node relay; task 0's node waits for its service, svchold.h). */
void dlrt_stepd_task_exit(spank_t sp);
void dlrt_stepd_exit(void);

/* progcheck.c: whether the step's program links MPI, looked at once in
 * user_init by a child as the job's user with a deadline (root never opens
 * the user's path); the tasks inherit the answer. -1 + err: the look failed
 * or took too long. */
int dlrt_stepd_program_check(spank_t sp, struct dlrt_err *err);
/* The answer (checked now if not yet); *path: the program found, or "". */
bool dlrt_stepd_program_links_mpi(spank_t sp, const char **path);

/* gpu.c: slurmstepd GPU/NIC binding (--dl-gpu-bind, --dl-cpu-bind, --dl-topology) */
int dlrt_stepd_gpu_user_init(spank_t sp, struct dlrt_err *err);
/* The GPU plan's variables of local task `local`, added to env (env.h). */
int dlrt_stepd_gpu_task_env(spank_t sp, int local, struct dlrt_env *env, struct dlrt_err *err);
/* Whether this node has a GPU plan (its variables are in the tasks' env). */
bool dlrt_stepd_gpu_planned(void);
/* --dl-cpu-bind=gpu and --dl-verbose's lines, in the task. */
int dlrt_stepd_gpu_task_init(spank_t sp, int local, struct dlrt_err *err);
int dlrt_stepd_gpu_count(int local);
void dlrt_stepd_gpu_print(spank_t sp, FILE *f);
void dlrt_stepd_gpu_free(void);

/* verbose.c: --dl-verbose lines "dlrt: NODE task R: ..." on the task's stderr */
double dlrt_verbose_now_ms(void);
void dlrt_verbose(uint32_t rank, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* logs.c: --dl-log-dir, at the end of task_init (as the user) */
int dlrt_logs_task_start(spank_t sp, uint32_t rank, struct dlrt_err *err);

/* failfast.c: the first failing task of a ps-lite step ends the step; its pipe
 * is made in init_post_opt, in slurmstepd's own process */
void dlrt_failfast_post_opt(void);
void dlrt_failfast_prexec_failed(void);
void dlrt_failfast_task_exit(spank_t sp);
/* Ends this step now (scancel as the job's user `cred`, SIGTERM then
 * SIGKILL); returns once the SIGTERM is asked for (bounded). job_env gives
 * SLURM_CONF and PATH. */
struct dlrt_proc_cred;
void dlrt_failfast_end_step(char **job_env, const struct dlrt_proc_cred *cred);

/* companion.c: a runtime's companion process next to a task (struct
 * dlrt_companion), at the end of that task's task_init */
int dlrt_companion_task_start(spank_t sp, uint32_t rank, struct dlrt_err *err);

/* container.c: in a step with srun --container, the task's environment
 * becomes its process environment (Slurm 22.05's RunTimeRun gets no other) */
int dlrt_stepd_container_env(spank_t sp, struct dlrt_err *err);
/* container.c: whether the step runs its tasks in Slurm's OCI container */
bool dlrt_stepd_in_container(spank_t sp);

/* lifecycle.c: --dl-signal, --dl-requeue, DLRT_CHECKPOINT_DIR (slurmstepd) */
/* slurmstepd, as root: the user's folder in the site's checkpoint_dir=. */
void dlrt_lifecycle_post_opt(spank_t sp);
void dlrt_lifecycle_user_init(spank_t sp);
/* In the task (as the user), at the very end of task_init: its pid for the
 * watcher, DLRT_CHECKPOINT_DIR. -1 + err fails the task. */
int dlrt_lifecycle_task_init(spank_t sp, int local, struct dlrt_err *err);
/* The batch script's task_init (not a dlrt step): DLRT_CHECKPOINT_DIR. */
int dlrt_lifecycle_batch_task_init(spank_t sp, struct dlrt_err *err);
void dlrt_lifecycle_exit(void);
/* The folder DLRT_CHECKPOINT_DIR names for this job (created by the task). */
int dlrt_lifecycle_ckpt_path(spank_t sp, char *base, size_t blen, char *out, size_t len);
/* Where the job's record goes (requeue.c's retry log): its base folder. */
int dlrt_lifecycle_record_base(spank_t sp, char *out, size_t len);

/* requeue.c: --dl-retries, from slurm_spank_task_exit (slurmstepd, as root) */
void dlrt_requeue_task_exit(spank_t sp);

#endif
