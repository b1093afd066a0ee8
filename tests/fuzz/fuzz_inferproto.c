/* fuzz_inferproto.c - libFuzzer target for every decoder of dlrt-infer's
 * protocol (inference/proto/proto.c) and of its state changes (inference/state/state.c).
 *
 * The input is cut into frames exactly as the coordinator and the workers cut
 * their streams; each whole frame goes to the decoder of its type (and, for
 * robustness, to every other decoder too, since a peer may lie about the
 * type). Decoded messages are re-encoded and decoded again, which must give
 * the same bytes; a CHANGE is applied to a state to reach apply's checks.
 * The hot standby's messages (ACK, SYNC, SEQACK; RESENT has RESULT's payload)
 * round-trip too. The coordinator's check before authentication (gate.c)
 * sees the start of every frame: what it lets through is a HELLO or an AUTH
 * within the pre-authentication limit, never more.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inference/proto/gate.h"
#include "inference/proto/proto.h"
#include "inference/state/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void all_decoders(const uint8_t *p, size_t n, struct dlrt_infer_state *st)
{
	struct dlrt_err err;
	struct dlrt_ip_hello h;
	struct dlrt_ip_welcome w;
	struct dlrt_ip_jobinfo ji;
	struct dlrt_ip_task t;
	struct dlrt_ip_result r;
	struct dlrt_ip_taskfail tf;
	struct dlrt_ip_submit s;
	struct dlrt_ip_status stt;
	struct dlrt_ip_jobref jr;
	struct dlrt_ip_job_info je;
	struct dlrt_ip_text tx;
	struct dlrt_infer_change ch;
	struct dlrt_ip_drain dr;
	struct dlrt_ip_challenge chl;
	static struct dlrt_ip_auth au;

	dlrt_ip_get_hello(p, n, &h, &err);
	dlrt_ip_get_welcome(p, n, &w, &err);
	dlrt_ip_get_jobinfo(p, n, &ji, &err);
	dlrt_ip_get_task(p, n, &t, &err);
	if (dlrt_ip_get_result(p, n, &r, &err) == 0) {
		struct dlrt_buf b;
		struct dlrt_ip_frame f;
		struct dlrt_ip_result r2;

		dlrt_buf_init(&b, 1 << 26);
		if (dlrt_ip_put_result(&b, &r) == 0 &&
		    dlrt_ip_frame_peek(dlrt_buf_head(&b), b.len, &f, &err) == 1) {
			if (f.len != n || memcmp(f.payload, p, n) != 0)
				abort(); /* re-encoding must give the same bytes */
			if (dlrt_ip_get_result(f.payload, f.len, &r2, &err) != 0)
				abort();
			dlrt_ip_result_free(&r2);
		}
		dlrt_buf_free(&b);
	}
	dlrt_ip_result_free(&r);
	dlrt_ip_get_taskfail(p, n, &tf, &err);
	if (dlrt_ip_get_submit(p, n, &s, &err) == 0) {
		struct dlrt_buf b;
		struct dlrt_ip_frame f;

		dlrt_buf_init(&b, 1 << 26);
		if (dlrt_ip_put_submit(&b, &s) == 0 &&
		    dlrt_ip_frame_peek(dlrt_buf_head(&b), b.len, &f, &err) == 1 &&
		    (f.len != n || memcmp(f.payload, p, n) != 0))
			abort();
		dlrt_buf_free(&b);
	}
	dlrt_ip_submit_free(&s);
	dlrt_ip_get_status(p, n, &stt, &err);
	dlrt_ip_status_free(&stt);
	dlrt_ip_get_jobref(p, n, &jr, &err);
	dlrt_ip_get_jobend(p, n, &je, &err);
	dlrt_ip_get_error(p, n, &tx, &err);
	dlrt_ip_get_empty(p, n, &err);
	dlrt_ip_get_drain(p, n, &dr, &err);
	dlrt_ip_get_challenge(p, n, &chl, &err);
	dlrt_ip_get_auth(p, n, &au, &err);
	/* The hot standby's messages: ACK, SYNC/SEQACK (RESENT is a RESULT). */
	{
		struct dlrt_ip_ack a, a2;
		uint64_t seq, seq2;
		struct dlrt_buf b;
		struct dlrt_ip_frame f;

		dlrt_buf_init(&b, 1 << 20);
		if (dlrt_ip_get_ack(p, n, &a, &err) == 0 &&
		    (dlrt_ip_put_ack(&b, a.job, a.task) < 0 ||
		     dlrt_ip_frame_peek(dlrt_buf_head(&b), b.len, &f, &err) != 1 ||
		     dlrt_ip_get_ack(f.payload, f.len, &a2, &err) != 0 || a2.job != a.job ||
		     a2.task != a.task))
			abort();
		dlrt_buf_consume(&b, b.len);
		if (dlrt_ip_get_seq(p, n, &seq, &err) == 0 &&
		    (dlrt_ip_put_seq(&b, DLRT_IP_SEQACK, seq) < 0 ||
		     dlrt_ip_frame_peek(dlrt_buf_head(&b), b.len, &f, &err) != 1 ||
		     dlrt_ip_get_seq(f.payload, f.len, &seq2, &err) != 0 || seq2 != seq))
			abort();
		dlrt_buf_free(&b);
	}
	if (dlrt_infer_change_get(p, n, &ch, &err) == 0) {
		/* Follow the state's sequence so apply's own checks are reached. */
		ch.seq = st->seq + 1;
		if (ch.sub.count > 4096)
			ch.sub.count = 0; /* keep the fuzzer's memory small */
		dlrt_infer_state_apply(st, &ch, &err);
	}
	dlrt_infer_change_free(&ch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlrt_infer_state st;
	size_t off = 0;

	dlrt_infer_state_init(&st);
	while (off < size) {
		struct dlrt_ip_frame f;
		struct dlrt_err err;
		bool gate_ok = dlrt_gate_check(data + off, size - off, &err) == 0;

		if (dlrt_ip_frame_peek(data + off, size - off, &f, &err) != 1)
			break;
		if (gate_ok && (f.frame_len > DLRT_GATE_FRAME_MAX ||
				(f.type != DLRT_IP_HELLO && f.type != DLRT_IP_AUTH)))
			abort(); /* an unauthenticated peer got past the gate */
		all_decoders(f.payload, f.len, &st);
		off += f.frame_len;
	}
	/* And the raw input as one payload. */
	all_decoders(data, size, &st);
	dlrt_infer_state_free(&st);
	return 0;
}
