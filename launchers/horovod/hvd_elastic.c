#include "hvd_elastic.h"

#include <stdlib.h>
#include <string.h>

int dlrt_hvd_round_start(struct dlrt_hvd_round *r, unsigned number, size_t nslots,
			 struct dlrt_err *err)
{
	unsigned char *st = calloc(nslots ? nslots : 1, 1);

	if (!st)
		return dlrt_err_set(err, "out of memory starting elastic round %u", number);
	free(r->state);
	memset(r, 0, sizeof(*r));
	r->number = number;
	r->nslots = nslots;
	r->state = st;
	return 0;
}

void dlrt_hvd_round_free(struct dlrt_hvd_round *r)
{
	free(r->state);
	memset(r, 0, sizeof(*r));
}

void dlrt_hvd_round_ready(struct dlrt_hvd_round *r, int rank)
{
	if (rank < 0 || (size_t)rank >= r->nslots || r->state[rank] != DLRT_HVD_PENDING)
		return;
	r->state[rank] = DLRT_HVD_READY;
	r->nready++;
}

static size_t fail_slot(struct dlrt_hvd_round *r, size_t rank)
{
	if (rank >= r->nslots || r->state[rank] == DLRT_HVD_FAILED)
		return 0;
	/* A worker that reported and then died (Horovod: READY -> FAILURE). */
	if (r->state[rank] == DLRT_HVD_READY)
		r->nready--;
	r->state[rank] = DLRT_HVD_FAILED;
	r->nfailed++;
	return 1;
}

size_t dlrt_hvd_round_host_lost(struct dlrt_hvd_round *r, const struct dlrt_hvd_plan *plan,
				size_t h)
{
	size_t n = 0;

	if (h >= plan->nhosts || plan->nslots != r->nslots)
		return 0;
	for (int lr = 0; lr < plan->slots[h]; lr++)
		n += fail_slot(r, (size_t)(plan->first_rank[h] + lr));
	return n;
}

size_t dlrt_hvd_round_expire(struct dlrt_hvd_round *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->nslots; i++)
		if (r->state[i] == DLRT_HVD_PENDING)
			n += fail_slot(r, i);
	return n;
}

bool dlrt_hvd_round_open(const struct dlrt_hvd_round *r)
{
	return r->nready > 0;
}

bool dlrt_hvd_round_complete(const struct dlrt_hvd_round *r)
{
	return r->nready > 0 && r->nready + r->nfailed == r->nslots;
}

int dlrt_hvd_round_next_plan(const struct dlrt_hvd_round *r, const struct dlrt_hvd_plan *plan,
			     int min_np, int max_np, struct dlrt_hvd_plan *next,
			     struct dlrt_err *err)
{
	unsigned char *drop = calloc(plan->nhosts + 1, 1);
	int rv;

	if (!drop)
		return dlrt_err_set(err, "out of memory computing the next elastic round");
	/* Horovod blacklists the whole host of a failed slot. */
	for (size_t h = 0; h < plan->nhosts; h++)
		for (int lr = 0; lr < plan->slots[h]; lr++)
			if ((size_t)(plan->first_rank[h] + lr) < r->nslots &&
			    r->state[plan->first_rank[h] + lr] == DLRT_HVD_FAILED)
				drop[h] = 1;
	rv = dlrt_hvd_plan_without(next, plan, drop, min_np, max_np, err);
	free(drop);
	return rv;
}
