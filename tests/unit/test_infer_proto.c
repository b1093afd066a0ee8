/* test_infer_proto.c - dlrt-infer's binary protocol and state change log:
 * round trips of every message, framing, and refusal of malformed input. */
#include <stdlib.h>
#include <string.h>

#include "inference/proto/proto.h"
#include "inference/state/state.h"
#include "tap.h"

static struct dlrt_buf b;

static int frame(struct dlrt_ip_frame *f)
{
	struct dlrt_err err;

	return dlrt_ip_frame_peek(dlrt_buf_head(&b), b.len, f, &err);
}

static void test_framing(void)
{
	struct dlrt_ip_frame f;
	struct dlrt_err err;
	uint8_t bad[8] = { 4, 0, 0, 0, 9, 0, 1, 0 };

	dlrt_buf_init(&b, 1 << 26);
	dlrt_ip_put_empty(&b, DLRT_IP_STATUSREQ);
	TAP_IS_INT(b.len, 8, "an empty message is 8 bytes");
	TAP_IS_INT(dlrt_ip_frame_peek(dlrt_buf_head(&b), 3, &f, &err), 0, "3 bytes: need more");
	TAP_IS_INT(dlrt_ip_frame_peek(dlrt_buf_head(&b), 7, &f, &err), 0, "7 bytes: need more");
	TAP_IS_INT(frame(&f), 1, "a whole frame");
	TAP_IS_INT(f.type, DLRT_IP_STATUSREQ, "its type");
	TAP_IS_INT(f.len, 0, "empty payload");
	TAP_IS_INT(dlrt_ip_frame_peek(bad, 8, &f, &err), -1, "version 9 refused");
	TAP_OK(strstr(err.msg, "version 9"), "error names the version: %s", err.msg);
	TAP_IS_INT(DLRT_IP_VERSION, 3, "protocol version 3 (standby and journal messages)");
	bad[4] = DLRT_IP_VERSION - 1;
	TAP_IS_INT(dlrt_ip_frame_peek(bad, 8, &f, &err), -1, "the previous version is refused");
	TAP_OK(strstr(err.msg, "protocol version 2, this dlrt-infer speaks 3") &&
	       strstr(err.msg, "same dlrt version everywhere") && !strchr(err.msg, '\n'),
	       "in one line naming both versions and the fix: %s", err.msg);
	bad[4] = DLRT_IP_VERSION;
	bad[6] = 99;
	TAP_IS_INT(dlrt_ip_frame_peek(bad, 8, &f, &err), -1, "unknown type refused");
	bad[6] = 1;
	bad[0] = 3;
	TAP_IS_INT(dlrt_ip_frame_peek(bad, 8, &f, &err), -1, "length below 4 refused");
	bad[0] = 0;
	bad[3] = 0x10; /* 256 MiB */
	TAP_IS_INT(dlrt_ip_frame_peek(bad, 4, &f, &err), -1, "huge length refused from 4 bytes");
	dlrt_buf_free(&b);
}

static void test_messages(void)
{
	struct dlrt_ip_frame f;
	struct dlrt_err err;
	struct dlrt_ip_hello h = { .role = DLRT_IP_ROLE_WORKER, .epoch = 7 }, h2;
	struct dlrt_ip_task t = { .job = 3, .task = 1ull << 40, .attempt = (5ull << 40) + 3,
				   .first = 20, .n = 10 }, t2;
	int32_t pred[3] = { 1, -2, 9 };
	float score[3] = { 0.5f, 0.25f, 1.0f };
	struct dlrt_ip_result r = { .job = 3, .task = 5, .attempt = 12, .busy_us = 77, .n = 3, .pred = pred,
				    .score = score }, r2;
	struct dlrt_ip_submit s = { .first = 1, .count = 4, .batch = 2, .nlabels = 4 }, s2;
	uint8_t labels[4] = { 1, 2, 3, 4 };
	struct dlrt_ip_job_info ji = { .id = 2, .state = DLRT_IP_JOB_RUNNING, .total = 10,
				       .done = 5, .labelled = 5, .correct = 4, .rate = 1.5f };
	struct dlrt_ip_worker_info wi = { .id = 1, .job = 2, .tasks = 9 };
	struct dlrt_ip_status st = { .epoch = 1, .nworkers = 1, .workers = &wi, .njobs = 1,
				     .jobs = &ji }, st2;

	dlrt_buf_init(&b, 1 << 26);
	strcpy(h.name, "n1/element-1");
	dlrt_ip_put_hello(&b, &h);
	TAP_IS_INT(frame(&f), 1, "HELLO framed");
	TAP_IS_INT(dlrt_ip_get_hello(f.payload, f.len, &h2, &err), 0, "HELLO decodes");
	TAP_OK(h2.epoch == 7 && !strcmp(h2.name, "n1/element-1"),
	       "HELLO round trip");
	TAP_IS_INT(dlrt_ip_get_hello(f.payload, f.len - 1, &h2, &err), -1, "truncated HELLO");
	dlrt_buf_consume(&b, f.frame_len);

	dlrt_ip_put_task(&b, &t);
	frame(&f);
	TAP_IS_INT(dlrt_ip_get_task(f.payload, f.len, &t2, &err), 0, "TASK decodes");
	TAP_OK(!memcmp(&t, &t2, sizeof(t)), "TASK round trip");
	dlrt_buf_consume(&b, f.frame_len);
	t.n = 0;
	dlrt_ip_put_task(&b, &t);
	frame(&f);
	TAP_IS_INT(dlrt_ip_get_task(f.payload, f.len, &t2, &err), -1, "TASK of 0 queries refused");
	dlrt_buf_consume(&b, f.frame_len);
	t.n = 10;
	t.attempt = 0;
	dlrt_ip_put_task(&b, &t);
	frame(&f);
	TAP_IS_INT(dlrt_ip_get_task(f.payload, f.len, &t2, &err), -1, "TASK of attempt 0 refused");
	dlrt_buf_consume(&b, f.frame_len);

	dlrt_ip_put_result(&b, &r);
	frame(&f);
	TAP_IS_INT(dlrt_ip_get_result(f.payload, f.len, &r2, &err), 0, "RESULT decodes");
	TAP_OK(r2.n == 3 && r2.pred[1] == -2 && r2.score[2] == 1.0f && r2.busy_us == 77 &&
	       r2.attempt == 12,
	       "RESULT round trip");
	dlrt_ip_result_free(&r2);
	{
		/* Claim 4 answers with the bytes of 3. */
		uint8_t *p = malloc(f.len);

		memcpy(p, f.payload, f.len);
		p[24] = 4; /* job 4, task 8, attempt 8, busy 4, then n */
		TAP_IS_INT(dlrt_ip_get_result(p, f.len, &r2, &err), -1, "RESULT count mismatch");
		TAP_OK(strstr(err.msg, "does not match"), "says why: %s", err.msg);
		dlrt_ip_result_free(&r2);
		free(p);
	}
	dlrt_buf_consume(&b, f.frame_len);

	strcpy(s.model, "lenet5");
	strcpy(s.inputs, "/x/t10k-images-idx3-ubyte.gz");
	s.labels = labels;
	dlrt_ip_put_submit(&b, &s);
	frame(&f);
	TAP_IS_INT(dlrt_ip_get_submit(f.payload, f.len, &s2, &err), 0, "SUBMIT decodes");
	TAP_OK(s2.count == 4 && s2.labels && s2.labels[3] == 4 && !strcmp(s2.model, "lenet5"),
	       "SUBMIT round trip");
	dlrt_ip_submit_free(&s2);
	dlrt_buf_consume(&b, f.frame_len);
	s.nlabels = 3;
	dlrt_ip_put_submit(&b, &s);
	frame(&f);
	TAP_IS_INT(dlrt_ip_get_submit(f.payload, f.len, &s2, &err), -1,
		   "SUBMIT with 3 labels for 4 queries refused");
	dlrt_ip_submit_free(&s2);
	dlrt_buf_consume(&b, f.frame_len);

	dlrt_ip_put_status(&b, &st);
	frame(&f);
	TAP_IS_INT(dlrt_ip_get_status(f.payload, f.len, &st2, &err), 0, "STATUS decodes");
	TAP_OK(st2.njobs == 1 && st2.jobs[0].done == 5 && st2.jobs[0].rate == 1.5f &&
	       st2.nworkers == 1 && st2.workers[0].tasks == 9, "STATUS round trip");
	dlrt_ip_status_free(&st2);
	dlrt_buf_consume(&b, f.frame_len);
	ji.done = 11;
	dlrt_ip_put_jobend(&b, &ji);
	frame(&f);
	TAP_IS_INT(dlrt_ip_get_jobend(f.payload, f.len, &ji, &err), -1,
		   "JOBEND with done > total refused");
	dlrt_buf_consume(&b, f.frame_len);

	dlrt_ip_put_error(&b, "no such job");
	frame(&f);
	{
		struct dlrt_ip_text tx;

		TAP_IS_INT(dlrt_ip_get_error(f.payload, f.len, &tx, &err), 0, "ERROR decodes");
		TAP_IS_STR(tx.text, "no such job", "ERROR text");
	}
	dlrt_buf_free(&b);
}

/* A log of changes, encoded and replayed into a second state, gives the same state. */
static void test_state(void)
{
	struct dlrt_infer_state a, c;
	struct dlrt_infer_change ch = { .epoch = 1, .seq = 1, .kind = DLRT_CH_JOB_ADD, .job = 1 };
	uint8_t labels[5] = { 0, 1, 2, 3, 4 };
	int32_t pred[2] = { 0, 9 };
	float score[2] = { 1, 1 };
	struct dlrt_buf log;
	struct dlrt_err err;
	struct dlrt_ip_frame f;
	int n = 0, ok = 1;

	dlrt_infer_state_init(&a);
	dlrt_infer_state_init(&c);
	dlrt_buf_init(&log, 1 << 20);
	strcpy(ch.sub.model, "lenet5");
	strcpy(ch.sub.inputs, "/in");
	ch.sub.count = 5;
	ch.sub.batch = 2;
	ch.sub.nlabels = 5;
	ch.sub.labels = labels;
	TAP_IS_INT(dlrt_infer_state_apply(&a, &ch, &err), 0, "JOB_ADD applies");
	dlrt_infer_change_put(&log, &ch);
	TAP_IS_INT(a.jobs[0].ntasks, 3, "5 queries in tasks of 2 = 3 tasks");
	TAP_IS_INT(dlrt_infer_task_size(&a.jobs[0], 2), 1, "the last task has 1 query");
	ch = (struct dlrt_infer_change){ .epoch = 1, .seq = 2, .kind = DLRT_CH_TASK_DONE, .job = 1,
					 .task = 0, .worker = 4,
					 .res = { .job = 1, .task = 0, .n = 2, .pred = pred,
						  .score = score } };
	TAP_IS_INT(dlrt_infer_state_apply(&a, &ch, &err), 0, "TASK_DONE applies");
	dlrt_infer_change_put(&log, &ch);
	TAP_IS_INT(a.jobs[0].correct, 1, "one of two answers right");
	ch.seq = 3;
	TAP_IS_INT(dlrt_infer_state_apply(&a, &ch, &err), -1, "the same task twice is refused");
	TAP_OK(strstr(err.msg, "already answered"), "because: %s", err.msg);
	ch.seq = 5;
	ch.task = 1;
	TAP_IS_INT(dlrt_infer_state_apply(&a, &ch, &err), -1, "a gap in the sequence is refused");
	ch = (struct dlrt_infer_change){ .epoch = 2, .seq = 3, .kind = DLRT_CH_JOB_END, .job = 1,
					 .state = DLRT_IP_JOB_DONE };
	TAP_IS_INT(dlrt_infer_state_apply(&a, &ch, &err), -1, "DONE with tasks missing is refused");
	ch.state = DLRT_IP_JOB_CANCELLED;
	strcpy(ch.error, "cancelled by the user");
	TAP_IS_INT(dlrt_infer_state_apply(&a, &ch, &err), 0, "CANCELLED applies");
	dlrt_infer_change_put(&log, &ch);

	while (dlrt_ip_frame_peek(dlrt_buf_head(&log), log.len, &f, &err) == 1) {
		struct dlrt_infer_change r;

		if (dlrt_infer_change_get(f.payload, f.len, &r, &err) < 0 ||
		    dlrt_infer_state_apply(&c, &r, &err) < 0)
			ok = 0;
		dlrt_infer_change_free(&r);
		dlrt_buf_consume(&log, f.frame_len);
		n++;
	}
	TAP_IS_INT(n, 3, "three changes replayed");
	TAP_OK(ok, "the replay applies cleanly");
	TAP_OK(c.seq == a.seq && c.epoch == 2 && c.njobs == 1 && c.jobs[0].done == 2 &&
	       c.jobs[0].correct == 1 && c.jobs[0].state == DLRT_IP_JOB_CANCELLED &&
	       c.jobs[0].task_done[0] && !c.jobs[0].task_done[1] &&
	       !strcmp(c.jobs[0].error, "cancelled by the user"), "the replayed state is equal");
	dlrt_buf_free(&log);
	dlrt_infer_state_free(&a);
	dlrt_infer_state_free(&c);
}

/* The hot standby's messages and the SUBMIT token that makes a resent SUBMIT safe. */
static void test_ha(void)
{
	struct dlrt_ip_frame f;
	struct dlrt_err err;
	struct dlrt_ip_ack a;
	uint64_t seq = 0;
	struct dlrt_ip_submit s = { .count = 2, .batch = 1, .token = 0xfeedbeefcafeull }, s2;
	int32_t pred[1] = { 4 };
	float score[1] = { 0.75f };
	struct dlrt_ip_result r = { .job = 2, .task = 9, .n = 1, .pred = pred, .score = score }, r2;

	dlrt_buf_init(&b, 1 << 26);
	dlrt_ip_put_ack(&b, 5, 1ull << 33);
	TAP_IS_INT(frame(&f), 1, "ACK framed");
	TAP_OK(f.type == DLRT_IP_ACK && dlrt_ip_get_ack(f.payload, f.len, &a, &err) == 0 &&
	       a.job == 5 && a.task == 1ull << 33, "ACK round trip");
	TAP_IS_INT(dlrt_ip_get_ack(f.payload, f.len - 1, &a, &err), -1, "a short ACK is refused");
	dlrt_buf_consume(&b, b.len);
	dlrt_ip_put_seq(&b, DLRT_IP_SEQACK, 123456789012ull);
	TAP_OK(frame(&f) == 1 && f.type == DLRT_IP_SEQACK &&
	       dlrt_ip_get_seq(f.payload, f.len, &seq, &err) == 0 && seq == 123456789012ull,
	       "SEQACK round trip");
	dlrt_buf_consume(&b, b.len);
	strcpy(s.model, "noop");
	strcpy(s.inputs, "/x");
	dlrt_ip_put_submit(&b, &s);
	TAP_OK(frame(&f) == 1 && dlrt_ip_get_submit(f.payload, f.len, &s2, &err) == 0 &&
	       s2.token == s.token, "SUBMIT carries its token");
	dlrt_ip_submit_free(&s2);
	dlrt_buf_consume(&b, b.len);
	dlrt_ip_put_result(&b, &r);
	dlrt_ip_frame_set_type(dlrt_buf_head(&b), DLRT_IP_RESENT);
	TAP_OK(frame(&f) == 1 && f.type == DLRT_IP_RESENT &&
	       dlrt_ip_get_result(f.payload, f.len, &r2, &err) == 0 && r2.task == 9 &&
	       r2.pred[0] == 4, "a RESULT frame re-sent as RESENT decodes as the same answer");
	dlrt_ip_result_free(&r2);
	TAP_IS_STR(dlrt_ip_type_name(DLRT_IP_PROMOTE), "PROMOTE", "PROMOTE has a name");
	dlrt_buf_free(&b);
}

int main(void)
{
	test_framing();
	test_messages();
	test_state();
	test_ha();
	return tap_done();
}
