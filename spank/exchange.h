/* exchange.h - the address exchange of each task, just before exec, carried by
 * srun's rendezvous for the step (exchange/rdvclient.h) or by Slurm's PMIx
 * (exchange_pmix.c), as the step chose (--dl-exchange). */
#ifndef DLRT_EXCHANGE_H
#define DLRT_EXCHANGE_H

#include <slurm/spank.h>
#include <stdbool.h>

#include "runtime/runtime.h"
#include "services/svcauth.h"

/* srun's rendezvous for this step (exchange/rdvclient.h); port 0: none. */
struct dlrt_rdv_coords {
	char ip[16];      /* srun's address, SLURM_LAUNCH_NODE_IPADDR */
	uint16_t port;
	uint8_t secret[32];
};

struct dlrt_exchange_req {
	enum dlrt_exchange_via via; /* what carries it: DLRT_EXCHANGE_PMIX or _SRUN */
	const struct dlrt_rdv_coords *rdv; /* srun's rendezvous (via srun) */
	char **env;         /* the task's environment with Slurm's PMIx coordinates (via pmix):
			     * what dlrt-kv runs with */
	uint32_t step_id;   /* the rendezvous' keys are per step */
	uint32_t rank;      /* this task */
	uint32_t ntasks;    /* tasks in the step */
	uint32_t root;      /* the task whose node hosts the root (scheduler, rank 0) */
	/* Only read in the root task. 0: it picks a port free on its node now
	 * (a scheduler, a store). Non-zero: the port of a service the plugin
	 * already started on the root's node (struct dlrt_runtime.service),
	 * which every task then gets as root_port. */
	uint16_t root_port;
	const char *iface;  /* --dl-iface or NULL */
	int timeout_s;      /* bound of every wait */
	/* Per node, one connection to the rendezvous instead of one per task:
	 * the node's first task (local rank 0) runs the exchange for all of them and leaves the
	 * answer in `share` (mapped in user_init, before the tasks forked); the
	 * others wait for it there. NULL: every task runs the full exchange
	 * (--dl-dry-run, which prints every task's address). */
	struct dlrt_node_share *share;
	uint32_t local;     /* this task's local rank */
	const char *reps;   /* "R,R,...": the first task of every other node ("" for one node) */
	/* Root task only, per-node exchange only: publish "!<fail>" instead of
	 * an address, so every node's tasks fail at once with that line. */
	const char *fail;
	/* Runtimes with needs_task_ports, per-node exchange only: this node's
	 * task ids by local rank. Its first task checks one free port for each
	 * and publishes "IP:T=P,..." next to the root's address; every node's
	 * first task reads all of them into share->tasks. nlocal 0: none. */
	const uint32_t *local_tasks;
	uint32_t nlocal;
};

/* The answer of a node's first task for the others (shared memory). */
struct dlrt_node_share {
	int state;          /* 0 pending, 1 done (root), 2 failed (err) */
	char root[64];      /* "ip:port" */
	char err[512];
	/* [ntasks] with task ports (the page is mapped that much larger) */
	struct dlrt_task_addr tasks[];
};

/* The step has a PMIx server this task can be a client of (srun --mpi=pmix,
 * or MpiDefault=pmix): slurmstepd put its coordinates into the task's
 * environment before task_init. */
bool dlrt_exchange_pmix_possible(spank_t sp);

/* Reads srun's coordinates (its rendezvous' port, 0 when Slurm's PMIx
 * carries the exchange, and the step secret) from the task's environment into
 * c and removes them from there. 1: found, 0: absent, -1: malformed. */
int dlrt_exchange_rdv_take(spank_t sp, struct dlrt_rdv_coords *c);

/* Fills `mine` (and, if not NULL, `all[ntasks]` with every task's node address).
 * Fails at once, with the fix, when the step has no rendezvous; never waits
 * longer than about req->timeout_s. */
int dlrt_exchange_root(spank_t sp, const struct dlrt_exchange_req *req, struct dlrt_addrs *mine,
		       struct dlrt_addrs *all, struct dlrt_err *err);

/* ---- Who decides (exchange.c) ---- */

/* srun, once Slurm made the step (client.c): what carries its exchange, for
 * all its nodes at once. PMIx when forced, or with auto in a --mpi=pmix step
 * on nodes no other user can be on (--exclusive, --exclusive=user, an
 * exclusive partition): Slurm's PMIx server admits anyone on a node who
 * states the job owner's uid, so on shared nodes a stranger could fail the
 * exchange (nothing secret travels there, and values are signed). `why` gets
 * the reason for --dl-verbose and the dry run; *risky: PMIx was forced on
 * nodes the job may share. */
enum dlrt_exchange_via dlrt_exchange_choose(spank_t sp, enum dlrt_exchange_via option, char *why,
					    size_t len, bool *risky);

/* A node service's key, derived from the step secret on every node, so that
 * it never travels (the service on the root's node, the relays elsewhere). */
void dlrt_exchange_service_key(const uint8_t step_secret[DLRT_SVCAUTH_SECRET_LEN],
			       uint8_t key[DLRT_SVCAUTH_SECRET_LEN]);

/* Whether the task's program takes the exchange: not an MPI program (its MPI
 * does the wire-up; the guess only sees programs that link libmpi/libpmix
 * directly), unless DLRT_EXCHANGE=yes|none in the job's environment says
 * otherwise ("pmix" is the old name of "yes"). say: print why it is skipped. */
bool dlrt_exchange_program_takes(spank_t sp, bool say);

/* A task's part in the step's exchange. */
enum dlrt_exchange_part {
	DLRT_XPART_UNDECIDED,
	DLRT_XPART_NONE,       /* neither the runtime nor a node service needs the root's address */
	DLRT_XPART_SKIPPED,    /* the program does its own wire-up (MPI, DLRT_EXCHANGE=none) */
	DLRT_XPART_TAKES,      /* learns it before exec, through `via` */
	DLRT_XPART_NO_CARRIER, /* would, but srun gave it no carrier (err says why) */
};

struct dlrt_exchange_plan {
	enum dlrt_exchange_part part;
	enum dlrt_exchange_via via;          /* part TAKES: what srun chose */
	const struct dlrt_rdv_coords *rdv;   /* srun's coordinates and the step secret */
	struct dlrt_err err;
};

/* First thing in task_init: takes srun's coordinates out of the task's
 * environment (the program never sees the step secret). */
void dlrt_exchange_task_start(spank_t sp);

/* This task's part, decided on the first call and the same on every later
 * one (the dry run, the failure publication, the checks and the exchange all
 * ask; it may cost a read of the program's ELF file). needed: the runtime or
 * a node service needs the root's address. say: print why a program is
 * skipped. -1 with one line naming the fix when the task takes part and srun
 * gave it no carrier. */
int dlrt_exchange_task_plan(spank_t sp, bool needed, bool say,
			    const struct dlrt_exchange_plan **plan, struct dlrt_err *err);

#endif
