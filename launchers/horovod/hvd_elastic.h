/* hvd_elastic.h - elastic Horovod's rounds: who reported, what comes next.
 *
 * Horovod's elastic driver (horovod/runner/elastic/registration.py,
 * WorkerStateRegistry) holds every worker's GET /rank_and_size at a barrier
 * until each worker of the round has reported READY (that GET) or FAILURE
 * (its process ended); then it blacklists the host of every failed slot and
 * starts the next round with the remaining hosts (driver.py, resume ->
 * _activate_workers -> _update_host_assignments -> RendezvousServer.init).
 * This is that barrier, pure: the driver feeds it the workers' GETs and the
 * hosts Slurm says are gone, and asks it for the next plan. No I/O.
 */
#ifndef DLRT_HVD_ELASTIC_H
#define DLRT_HVD_ELASTIC_H

#include <stdbool.h>
#include <stddef.h>

#include "common/dlrt_err.h"
#include "hvd_plan.h"

enum dlrt_hvd_slot_state {
	DLRT_HVD_PENDING = 0,
	DLRT_HVD_READY,  /* asked rank_and_size in this round */
	DLRT_HVD_FAILED, /* its host is gone (Slurm), or silent past the barrier's timeout */
};

struct dlrt_hvd_round {
	unsigned number;        /* 1 = the step's first plan */
	size_t nslots;
	unsigned char *state;   /* enum dlrt_hvd_slot_state, by rank */
	size_t nready, nfailed;
};

/* Starts round `number` for a plan of nslots ranks, every slot pending. */
int dlrt_hvd_round_start(struct dlrt_hvd_round *r, unsigned number, size_t nslots,
			 struct dlrt_err *err);
void dlrt_hvd_round_free(struct dlrt_hvd_round *r);

/* A worker of this round asked rank_and_size (READY; a second ask or a
 * failed slot changes nothing). */
void dlrt_hvd_round_ready(struct dlrt_hvd_round *r, int rank);
/* Every slot of host h of `plan` failed (Slurm lost it). Returns how many
 * slots changed. */
size_t dlrt_hvd_round_host_lost(struct dlrt_hvd_round *r, const struct dlrt_hvd_plan *plan,
				size_t h);
/* The barrier's timeout: every slot still pending failed. */
size_t dlrt_hvd_round_expire(struct dlrt_hvd_round *r);
/* Open: some worker waits at the barrier. Complete: it can be released
 * (every slot ready or failed, at least one ready). */
bool dlrt_hvd_round_open(const struct dlrt_hvd_round *r);
bool dlrt_hvd_round_complete(const struct dlrt_hvd_round *r);

/* The next round's plan (WorkerStateRegistry._on_workers_recorded): the hosts
 * of `plan` without any host that has a failed slot, through
 * dlrt_hvd_plan_without (min_np, max_np). -1 and err when the job cannot go
 * on. */
int dlrt_hvd_round_next_plan(const struct dlrt_hvd_round *r, const struct dlrt_hvd_plan *plan,
			     int min_np, int max_np, struct dlrt_hvd_plan *next,
			     struct dlrt_err *err);

#endif
