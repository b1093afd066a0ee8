/* infer_resend_race.c - a dlrt-infer worker that tests the coordinator's
 * "exactly once" between a re-sent answer and the batch that records it.
 *
 * Usage: infer_resend_race POOL RESENT
 *
 * It joins POOL as a worker. On its first task T it re-sends, as answers an
 * earlier coordinator never acknowledged, the RESENT tasks after T (the very
 * tasks the coordinator dispatches next), then answers T, all in one write:
 * the coordinator takes the re-sent answers and, in the same loop turn, gives
 * this worker its next task. A task whose re-sent answer was taken must not
 * be dispatched again (its answer waits for the next batch, up to a
 * millisecond away; a second dispatch answered in time would be a second row
 * and fail the job). It then answers every task it gets, at once, for 2 s.
 *
 * Prints one line per dispatch it got; exits 1 naming a task dispatched after
 * its re-sent answer, 2 on a usage or connection error, else 0. The job must
 * have tasks of one size past T (its --count a multiple of --batch). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/dlrt_err.h"
#include "inference/pool/pool.h"
#include "inference/proto/proto.h"

#define RUN_MS 2000
#define MAX_RESENT 64

static int32_t pred[DLRT_IP_MAX_BATCH];
static float score[DLRT_IP_MAX_BATCH];

static int put_answer(struct dlrt_ipc *c, uint16_t type, uint32_t job, uint64_t task,
		      uint64_t attempt, uint32_t n)
{
	struct dlrt_ip_result r = { .job = job, .task = task, .attempt = attempt, .n = n,
				    .pred = pred, .score = score };
	size_t at = c->out.len;

	if (dlrt_ip_put_result(&c->out, &r) < 0)
		return -1;
	dlrt_ip_frame_set_type(dlrt_buf_head(&c->out) + at, type);
	return 0;
}

int main(int argc, char **argv)
{
	struct dlrt_ipc c;
	struct dlrt_err err;
	uint64_t resent[MAX_RESENT];
	uint32_t nresent = 0, want;
	unsigned dispatches = 0;
	int64_t end, beat = 0;

	if (argc != 3 || (want = (uint32_t)atoi(argv[2])) == 0 || want > MAX_RESENT) {
		fprintf(stderr, "usage: infer_resend_race POOL RESENT (1..%d)\n", MAX_RESENT);
		return 2;
	}
	if (dlrt_ipc_open(&c, argv[1], DLRT_IP_ROLE_WORKER, "resend-race", 10000, &err) < 0) {
		fprintf(stderr, "infer_resend_race: %s\n", err.msg);
		return 2;
	}
	end = dlrt_now_ms() + 30000; /* until the first task, then RUN_MS */
	while (dlrt_now_ms() < end) {
		struct dlrt_ip_frame f;
		struct dlrt_ip_task t;
		int r;

		/* Silent past its heartbeat bound, it would be declared dead and get
		 * no task (the pool's workers beat from a thread; this one, here). */
		if (dlrt_now_ms() - beat >= (int64_t)c.heartbeat_ms) {
			beat = dlrt_now_ms();
			if (dlrt_ip_put_empty(&c.out, DLRT_IP_HEARTBEAT) < 0 ||
			    dlrt_ipc_flush(&c, 5000, &err) < 0) {
				fprintf(stderr, "infer_resend_race: cannot send a heartbeat\n");
				break;
			}
		}
		r = dlrt_ipc_recv(&c, &f, 100, &err);
		if (r < 0) {
			fprintf(stderr, "infer_resend_race: %s\n", err.msg);
			break;
		}
		if (r == 0 || f.type != DLRT_IP_TASK)
			continue;
		if (dlrt_ip_get_task(f.payload, f.len, &t, &err) < 0) {
			fprintf(stderr, "infer_resend_race: %s\n", err.msg);
			return 2;
		}
		printf("dispatched task %llu of job %u\n", (unsigned long long)t.task, t.job);
		for (uint32_t i = 0; i < nresent; i++)
			if (resent[i] == t.task) {
				printf("task %llu dispatched again after its re-sent answer was taken\n",
				       (unsigned long long)t.task);
				dlrt_ipc_close(&c);
				return 1;
			}
		if (dispatches++ == 0) {
			for (; nresent < want; nresent++) {
				resent[nresent] = t.task + 1 + nresent;
				if (put_answer(&c, DLRT_IP_RESENT, t.job, resent[nresent], 0, t.n) < 0)
					return 2;
			}
			end = dlrt_now_ms() + RUN_MS;
		}
		if (put_answer(&c, DLRT_IP_RESULT, t.job, t.task, t.attempt, t.n) < 0 ||
		    dlrt_ipc_flush(&c, 5000, &err) < 0) {
			fprintf(stderr, "infer_resend_race: cannot answer: %s\n", err.msg);
			break;
		}
	}
	dlrt_ipc_close(&c);
	printf("%u dispatches, %u answers re-sent\n", dispatches, nresent);
	return dispatches ? 0 : 2;
}
