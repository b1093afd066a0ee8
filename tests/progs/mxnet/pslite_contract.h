/* pslite_contract.h - state shared by the roles of the ps-lite contract test.
 *
 * pslite_contract.c  options, environment, addresses, output, main()
 * pslite_sched.c     the scheduler: registration, node table, barriers
 * pslite_node.c      servers and workers: registration, push/pull rounds
 */
#ifndef PSLITE_CONTRACT_H
#define PSLITE_CONTRACT_H

#include <stdbool.h>
#include <stdint.h>

#include "pslite_net.h"

/* Exit codes (docs/mxnet.md). */
enum {
	PSC_OK = 0,
	PSC_FAIL = 1,     /* bind failed, a peer went away, protocol error */
	PSC_TIMEOUT = 2,  /* a wait ran out (missing registrations, silent peer) */
	PSC_BADSUM = 3,   /* a pulled value is wrong */
	PSC_USAGE = 64,   /* bad option or environment */
};

#define PSC_NONE UINT32_MAX

struct psc_opts {
	uint32_t vlen, rounds, timeout_s, delay_ms;
	int crash_role;          /* -1: none; else the role that kills itself */
	uint32_t crash_rank;     /* PSC_NONE: every process of that role */
	uint32_t crash_after_ms;
};

/* A server's summation buffer for one round; two rounds can be live at once
 * (a fast worker pushes round r+1 before a slow one has pulled round r). */
struct psc_slot {
	uint32_t round;          /* PSC_NONE = free */
	uint32_t pushed, pulled;
	int64_t *sum;
};

struct psc_reg {                 /* scheduler: one registered node */
	struct dlrt_pslite_node node;
	uint32_t rank;
	struct pnet_conn *in, *out;
	uint32_t next_barrier;   /* barriers this node has entered */
};

struct psc {
	struct psc_opts o;
	struct pnet net;
	uint8_t role;
	uint32_t ns, nw;         /* DMLC_NUM_SERVER, DMLC_NUM_WORKER */
	int verbose;
	char host[64];           /* short host name, for the output line */
	char ip[DLRT_PSLITE_IP_MAX];
	uint16_t port;
	const char *ip_source;   /* which variable or interface gave ip */
	char root_ip[DLRT_PSLITE_IP_MAX];
	uint16_t root_port;
	int64_t crash_at_ms;     /* 0: not armed */
	bool bad_sum;

	/* servers and workers */
	int32_t my_id;           /* 0 until the node table arrives */
	uint32_t rank;
	bool have_table;
	uint32_t barriers_done;
	struct dlrt_pslite_node *servers, *workers; /* the table, by rank */
	struct pnet_conn *sched_out, *sched_in;
	struct pnet_conn **peer_out, **peer_in;     /* by rank of the other role */
	uint32_t npeers;
	bool rounds_done;
	int64_t peer_gone_ms;    /* when a peer went away mid-run (0: none) */
	char peer_gone[DLRT_ERR_MAX];
	/* worker */
	uint32_t cur_round, acks, replies;
	bool *got;               /* per server: ack/reply of this phase seen */
	int64_t *vals;
	/* server */
	uint64_t key_lo, key_hi;
	struct psc_slot slot[2];
	uint32_t *next_push, *next_pull, *pending_pull;
	uint64_t served;

	/* scheduler */
	struct psc_reg *regs;
	uint32_t nregs, nreg_role[2];
	bool table_sent;
	uint32_t barrier_count[2];
	bool released[2];
};

/* Prints "pslite_contract: <who>: <msg>" to stderr. */
void psc_fail(const struct psc *p, const char *msg);
/* Kills this process if the --crash fault injection is due. */
void psc_maybe_crash(struct psc *p);
/* Arms --crash for this process if it is the target (after the start barrier). */
void psc_arm_crash(struct psc *p);
/* "server 1 (id 10) at 10.0.0.2:4000" */
void psc_describe(char *out, size_t len, const struct dlrt_pslite_node *n, uint32_t rank);

int psc_run_scheduler(struct psc *p);
int psc_run_node(struct psc *p);

#endif
