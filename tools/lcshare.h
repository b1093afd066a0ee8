/* lcshare.h - where dlrt-lifecycle learns the job's times (its end, its
 * preemption): one process per step asks slurmctld, the step's other nodes
 * learn them from it, so the controller's load does not grow with the nodes.
 *
 *  - PUBLISH, the watcher of the step's first node (of each component of a
 *    heterogeneous step: each is a job with its own times): asks slurmctld
 *    (slurm_load_job) when the policy wants a fresh answer (every 10 s, and at
 *    the moments that matter: jobpolicy/lifecycle.h), and when the end or the
 *    preemption time changed it sets the next key "dlrt-lc/<job>/<n>" (n = 1, 2, ...)
 *    at srun's rendezvous for the step (exchange/rdvclient.h), in the format
 *    of lctimes.h, and reads it back: the rendezvous has it then.
 *  - FOLLOW, every other node's watcher: one connection to the rendezvous with
 *    one WAIT parked for the next key (no traffic while nothing changes); it
 *    takes each value as it comes and tells the warning's moment from the end
 *    time on its own clock, so each node still warns its own tasks on time.
 *    A node that cannot reach the rendezvous (3 tries), or that has no value
 *    FOLLOW_FIRST_S after its start (the first node's watcher did not start),
 *    asks slurmctld itself, as ASK, with one line on stderr.
 *  - ASK: slurmctld only: the batch step's watcher (one per job), and a
 *    watcher started without --times (srun keeps its rendezvous for every
 *    step with --dl-signal, also one whose exchange Slurm's PMIx carries:
 *    docs/checkpoint.md).
 * Only a process that holds the step secret can connect to the rendezvous or
 * sign a value there (docs/SECURITY.md). Every wait is bounded.
 */
#ifndef DLRT_LCSHARE_H
#define DLRT_LCSHARE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "exchange/rdvclient.h"
#include "lctimes.h"
#include "jobpolicy/lifecycle.h"

enum dlrt_lcshare_role { DLRT_LCSHARE_ASK, DLRT_LCSHARE_PUBLISH, DLRT_LCSHARE_FOLLOW };

struct dlrt_lcshare {
	enum dlrt_lcshare_role role;
	uint32_t job;
	/* srun's rendezvous (PUBLISH, FOLLOW) */
	char ip[16];
	uint16_t port;
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN];
	struct dlrt_rdv rdv;   /* fd -1: not connected */
	bool waiting;          /* FOLLOW: a WAIT for key seq + 1 is parked there */
	uint32_t seq;          /* the last key set or read */
	char published[DLRT_LCTIMES_MAX];
	unsigned failures;     /* connections that failed in a row */
	time_t retry_at;       /* connect again from then on */
	time_t started;
	/* the times */
	bool known;
	struct dlrt_lc_job times; /* the last answer, or the last value read */
	time_t fresh_by;          /* ASK, PUBLISH: ask slurmctld again from then on */
	bool slurm_up, load_failed;
};

/* ASK for job: what every source starts as. */
void dlrt_lcshare_init(struct dlrt_lcshare *s, uint32_t job);

/* "IP:PORT" of srun's rendezvous and the step secret from secret_fd (32
 * bytes; the descriptor is closed) for PUBLISH or FOLLOW. -1 with a line on
 * stderr if either is unusable: the source stays ASK. */
int dlrt_lcshare_rendezvous(struct dlrt_lcshare *s, enum dlrt_lcshare_role role,
			    const char *addr, int secret_fd);

/* The job as of now: 0 with *j (j->now = now), or -1 while it is not known. */
int dlrt_lcshare_job(struct dlrt_lcshare *s, struct dlrt_lc_job *j);

/* The policy's next moment: ASK and PUBLISH ask slurmctld again then, if that
 * is sooner than 10 s after the last answer (until then a look reuses it). */
void dlrt_lcshare_fresh_by(struct dlrt_lcshare *s, time_t t);

/* FOLLOW with a WAIT parked: the descriptor its answer comes on; else -1. */
int dlrt_lcshare_fd(const struct dlrt_lcshare *s);

/* That descriptor is readable: take the value (or the end of the connection). */
void dlrt_lcshare_take(struct dlrt_lcshare *s);

void dlrt_lcshare_end(struct dlrt_lcshare *s);

#endif
