/* test_infer_liveness.c - the rules of dlrt-infer's failure handling
 * (inference/liveness.c): which dispatch may answer a task, the heartbeat
 * periods, squeue's time left and the walltime margin; and the messages they
 * add to the protocol (attempt ids, WELCOME's heartbeat, DRAIN). */
#include <stdlib.h>
#include <string.h>

#include "inference/liveness.h"
#include "inference/proto/proto.h"
#include "inference/state/state.h"
#include "tap.h"

static void test_attempts(void)
{
	struct dlrt_attempts a;
	uint64_t first = dlrt_attempt_first(3);

	TAP_OK(first > dlrt_attempt_first(2) + 1000000, "a later epoch's attempts never meet an "
	       "earlier one's");
	TAP_IS_INT(dlrt_attempts_init(&a, 4), 0, "4 tasks");
	TAP_IS_INT(dlrt_attempts_check(&a, 0, first, false), DLRT_ATTEMPT_STALE,
		   "an answer for a task never dispatched is dropped");
	dlrt_attempts_assign(&a, 1, first);
	TAP_IS_INT(dlrt_attempts_check(&a, 1, first, false), DLRT_ATTEMPT_OK,
		   "the current dispatch may answer");
	TAP_IS_INT(dlrt_attempts_check(&a, 1, 0, false), DLRT_ATTEMPT_STALE, "attempt 0 never");
	/* Its worker is declared dead: the task is dispatched again. */
	TAP_OK(dlrt_attempts_release(&a, 1, first), "the lost dispatch is released");
	TAP_OK(!dlrt_attempts_release(&a, 1, first), "only once");
	dlrt_attempts_assign(&a, 2, first + 2);
	dlrt_attempts_answered(&a, 2);
	TAP_OK(dlrt_attempts_is_answered(&a, 2), "an answer kept for the batch marks its task");
	TAP_IS_INT(dlrt_attempts_check(&a, 2, first + 2, false), DLRT_ATTEMPT_DONE,
		   "the task's dispatch is void: a second answer is refused as answered");
	TAP_OK(!dlrt_attempts_release(&a, 2, first + 2), "and cannot unmark it");
	TAP_OK(!dlrt_attempts_is_answered(&a, 3) && !dlrt_attempts_is_answered(&a, 99),
	       "other tasks, and none past the end, are not marked");
	dlrt_attempts_assign(&a, 1, first + 1);
	TAP_IS_INT(dlrt_attempts_check(&a, 1, first, false), DLRT_ATTEMPT_STALE,
		   "the dead worker's late answer is dropped");
	TAP_OK(!dlrt_attempts_release(&a, 1, first), "and cannot release the new dispatch");
	TAP_IS_INT(dlrt_attempts_check(&a, 1, first + 1, false), DLRT_ATTEMPT_OK,
		   "the new dispatch may answer");
	TAP_OK(dlrt_attempts_release(&a, 1, first + 1), "answered: released");
	TAP_IS_INT(dlrt_attempts_check(&a, 1, first + 1, true), DLRT_ATTEMPT_DONE,
		   "a second answer of an answered task is dropped");
	TAP_IS_INT(dlrt_attempts_check(&a, 4, first, false), DLRT_ATTEMPT_NOTASK,
		   "task out of range");
	dlrt_attempts_assign(&a, 99, first); /* ignored */
	TAP_IS_STR(dlrt_attempt_verdict_name(DLRT_ATTEMPT_STALE), "dispatched again since",
		   "verdicts have names");
	dlrt_attempts_free(&a);
}

static void test_heartbeat(void)
{
	struct dlrt_hb hb;
	struct dlrt_err err;

	TAP_IS_INT(dlrt_hb_config(NULL, &hb, &err), 0, "default bound");
	TAP_IS_INT(hb.bound_ms, 2000, "2 s");
	TAP_OK(hb.silence_ms + hb.check_ms <= hb.bound_ms, "detected within the bound "
	       "(%lld + %lld ms)", (long long)hb.silence_ms, (long long)hb.check_ms);
	TAP_OK(hb.interval_ms * 3 < hb.silence_ms, "several heartbeats per silence period");
	TAP_OK(hb.give_up_ms >= 30000, "a lost worker's connection is kept 30 s at least");
	TAP_OK(!dlrt_hb_dead(&hb, 1000, 1000 + hb.silence_ms), "silent exactly the limit: alive");
	TAP_OK(dlrt_hb_dead(&hb, 1000, 1001 + hb.silence_ms), "past it: dead");
	TAP_IS_INT(dlrt_hb_config("0.5", &hb, &err), 0, "0.5 s");
	TAP_IS_INT(hb.bound_ms, 500, "500 ms");
	TAP_IS_INT(dlrt_hb_config("0.1", &hb, &err), -1, "below 0.2 s refused");
	TAP_OK(strstr(err.msg, "heartbeat bound '0.1'") != NULL, "one line: %s", err.msg);
	TAP_IS_INT(dlrt_hb_config("2s", &hb, &err), -1, "junk refused");
	TAP_IS_INT(dlrt_hb_config("nan", &hb, &err), -1, "nan refused");
}

static void test_walltime(void)
{
	int64_t v;
	struct dlrt_err err;

	TAP_IS_INT(dlrt_walltime_parse_left("1-02:03:04", &v), 0, "D-HH:MM:SS");
	TAP_IS_INT(v, 86400 + 2 * 3600 + 3 * 60 + 4, "in seconds");
	TAP_IS_INT(dlrt_walltime_parse_left("59:58\n", &v), 0, "MM:SS");
	TAP_IS_INT(v, 59 * 60 + 58, "in seconds");
	TAP_IS_INT(dlrt_walltime_parse_left("45", &v), 0, "SS");
	TAP_IS_INT(v, 45, "in seconds");
	TAP_IS_INT(dlrt_walltime_parse_left("UNLIMITED\n", &v), 0, "UNLIMITED");
	TAP_IS_INT(v, -1, "no limit");
	TAP_IS_INT(dlrt_walltime_parse_left("", &v), 0, "empty (job not found)");
	TAP_IS_INT(v, -1, "no limit");
	TAP_IS_INT(dlrt_walltime_parse_left("1:2:3:4", &v), -1, "four fields refused");
	TAP_IS_INT(dlrt_walltime_parse_left("12:x", &v), -1, "junk refused");
	TAP_IS_INT(dlrt_walltime_parse_left("-5", &v), -1, "a dash alone refused");
	TAP_IS_INT(dlrt_walltime_margin(NULL, &v, &err), 0, "default margin");
	TAP_IS_INT(v, DLRT_WALLTIME_MARGIN_DEFAULT, "60 s");
	TAP_IS_INT(dlrt_walltime_margin("0", &v, &err), 0, "0 turns it off");
	TAP_IS_INT(dlrt_walltime_margin("-3", &v, &err), -1, "negative refused");
	TAP_OK(dlrt_walltime_near(1000, 950, 60), "50 s left, margin 60: no new task");
	TAP_OK(!dlrt_walltime_near(1000, 930, 60), "70 s left: keep working");
	TAP_OK(!dlrt_walltime_near(0, 930, 60), "no known end: keep working");
}

static void test_messages(void)
{
	struct dlrt_buf b;
	struct dlrt_ip_frame f;
	struct dlrt_err err;
	struct dlrt_ip_welcome w = { .epoch = 4, .id = 2, .heartbeat_ms = 400 }, w2;
	struct dlrt_ip_drain d = { .left_s = 42 }, d2;
	struct dlrt_ip_taskfail tf = { .job = 1, .task = 2, .attempt = 77 }, tf2;
	struct dlrt_infer_change ch = { .epoch = 1, .seq = 2, .kind = DLRT_CH_TASK_DONE, .job = 1,
					.task = 3, .worker = 2 }, ch2;
	int32_t pred[2] = { 4, 5 };
	float score[2] = { 0.5f, 0.75f };

	dlrt_buf_init(&b, 1 << 20);
	dlrt_ip_put_welcome(&b, &w);
	dlrt_ip_frame_peek(dlrt_buf_head(&b), b.len, &f, &err);
	TAP_IS_INT(dlrt_ip_get_welcome(f.payload, f.len, &w2, &err), 0, "WELCOME decodes");
	TAP_IS_INT(w2.heartbeat_ms, 400, "with the heartbeat period");
	dlrt_buf_consume(&b, f.frame_len);
	strcpy(d.why, "Slurm time limit");
	dlrt_ip_put_drain(&b, &d);
	dlrt_ip_frame_peek(dlrt_buf_head(&b), b.len, &f, &err);
	TAP_IS_INT(f.type, DLRT_IP_DRAIN, "DRAIN framed");
	TAP_IS_INT(dlrt_ip_get_drain(f.payload, f.len, &d2, &err), 0, "DRAIN decodes");
	TAP_OK(d2.left_s == 42 && !strcmp(d2.why, "Slurm time limit"), "DRAIN round trip");
	TAP_IS_INT(dlrt_ip_get_drain(f.payload, f.len - 1, &d2, &err), -1, "truncated DRAIN");
	dlrt_buf_consume(&b, f.frame_len);
	strcpy(tf.error, "x");
	dlrt_ip_put_taskfail(&b, &tf);
	dlrt_ip_frame_peek(dlrt_buf_head(&b), b.len, &f, &err);
	TAP_IS_INT(dlrt_ip_get_taskfail(f.payload, f.len, &tf2, &err), 0, "TASKFAIL decodes");
	TAP_IS_INT(tf2.attempt, 77, "with its attempt");
	dlrt_buf_consume(&b, f.frame_len);
	dlrt_ip_put_empty(&b, DLRT_IP_HEARTBEAT);
	TAP_IS_INT(b.len, 8, "HEARTBEAT is 8 bytes");
	dlrt_ip_frame_peek(dlrt_buf_head(&b), b.len, &f, &err);
	TAP_IS_STR(dlrt_ip_type_name(f.type), "HEARTBEAT", "and has a name");
	dlrt_buf_consume(&b, f.frame_len);
	ch.res = (struct dlrt_ip_result){ .job = 1, .task = 3, .attempt = (9ull << 40) + 5,
					  .busy_us = 10, .n = 2, .pred = pred, .score = score };
	dlrt_infer_change_put(&b, &ch);
	dlrt_ip_frame_peek(dlrt_buf_head(&b), b.len, &f, &err);
	TAP_IS_INT(dlrt_infer_change_get(f.payload, f.len, &ch2, &err), 0, "TASK_DONE change decodes");
	TAP_OK(ch2.res.attempt == ch.res.attempt && ch2.res.n == 2 && ch2.res.pred[1] == 5 &&
	       ch2.task == 3, "and keeps the attempt that answered");
	dlrt_infer_change_free(&ch2);
	dlrt_buf_free(&b);
}

int main(void)
{
	test_attempts();
	test_heartbeat();
	test_walltime();
	test_messages();
	return tap_done();
}
