/* Fuzz target: elastic Horovod's rounds in dlrt-hvd-driver (hvd_elastic.h,
 * rendezvous.h), driven by what workers and Slurm may do in any order. Each
 * input byte is one event: a slot asks GET /rank_and_size (held at the
 * barrier), a host is reported lost, the barrier times out, or a worker PUTs
 * a key. When the round completes, the next plan is built and published as
 * the driver does, and every held slot is answered. Checks: no crash, no
 * leak; the counts stay within the round; an answer is -1,... or a rank of
 * the new plan. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launchers/horovod/hvd_elastic.h"
#include "launchers/horovod/rendezvous.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void answer_all(struct dlrt_hvd_store *st, const char (*held)[64], size_t nheld,
		       size_t nslots)
{
	for (size_t i = 0; i < nheld; i++) {
		struct dlrt_hvd_reply r;
		char text[64];
		long rank;

		dlrt_hvd_store_rank_and_size(st, held[i], strlen(held[i]), &r);
		if (r.status != 200 || r.len >= sizeof(text))
			abort();
		memcpy(text, r.body, r.len);
		text[r.len] = '\0';
		rank = strtol(text, NULL, 10);
		if (rank < -1 || (rank >= 0 && (size_t)rank >= nslots))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlrt_hvd_plan plan;
	struct dlrt_hvd_store *st = NULL;
	struct dlrt_hvd_round round = { 0 };
	struct dlrt_err err;
	char held[64][64];
	size_t nheld = 0;
	int min_np = size ? data[0] % 8 : 0, max_np = size > 1 ? data[1] % 9 : 0;

	if (dlrt_hvd_plan_parse(&plan, "hA:3,hB:1,hC:2,hD:1", &err) < 0 ||
	    dlrt_hvd_store_create(&st, &plan, 1 << 16, &err) < 0 ||
	    dlrt_hvd_round_start(&round, 1, plan.nslots, &err) < 0)
		abort();
	dlrt_hvd_plan_free(&plan);
	dlrt_hvd_store_set_barrier(st, 1);
	for (size_t i = 2; i < size; i++) {
		const struct dlrt_hvd_plan *cur = dlrt_hvd_store_plan(st);
		unsigned op = data[i] & 3, arg = data[i] >> 2;
		struct dlrt_hvd_reply r;
		char path[96];

		switch (op) {
		case 0: /* a worker asks for its slot */
			snprintf(path, sizeof(path), "/rank_and_size/h%c:%d", 'A' + arg % 5,
				 (int)(arg / 5) % 4 - 1);
			dlrt_hvd_store_handle(st, DLRT_HTTP_GET, path, strlen(path), NULL, 0, &r);
			if (r.park) {
				if (r.park_rank < 0 || (size_t)r.park_rank >= cur->nslots)
					abort();
				dlrt_hvd_round_ready(&round, r.park_rank);
				if (nheld < 64)
					snprintf(held[nheld++], sizeof(held[0]), "%s", path + 15);
			} else if (r.status != 200 && r.status != 400) {
				abort();
			}
			break;
		case 1: /* Slurm: a host is gone */
			dlrt_hvd_round_host_lost(&round, cur, arg % (cur->nhosts + 1));
			break;
		case 2: /* the barrier's timeout */
			if (dlrt_hvd_round_open(&round))
				dlrt_hvd_round_expire(&round);
			break;
		default: /* a worker stores a key */
			snprintf(path, sizeof(path), "/global/%u", arg);
			dlrt_hvd_store_handle(st, DLRT_HTTP_PUT, path, strlen(path),
					      (const uint8_t *)"x", 1, &r);
			break;
		}
		if (round.nready + round.nfailed > round.nslots)
			abort();
		if (dlrt_hvd_round_complete(&round)) {
			struct dlrt_hvd_plan next;

			if (dlrt_hvd_round_next_plan(&round, cur, min_np, max_np, &next, &err) < 0) {
				if (!err.msg[0])
					abort();
				break; /* the job ends */
			}
			if ((max_np && next.nslots > (size_t)max_np) || next.nslots < (size_t)min_np ||
			    dlrt_hvd_store_reinit(st, &next, &err) < 0 ||
			    dlrt_hvd_store_nkeys(st, "global") != 0 ||
			    dlrt_hvd_round_start(&round, round.number + 1, next.nslots, &err) < 0)
				abort();
			answer_all(st, (const char (*)[64])held, nheld, next.nslots);
			nheld = 0;
			dlrt_hvd_plan_free(&next);
		}
	}
	dlrt_hvd_round_free(&round);
	dlrt_hvd_store_destroy(st);
	return 0;
}
