/* test_infer_gate.c - connections before authentication (inference/proto/gate.c):
 * the largest real HELLO and AUTH pass the pre-authentication check, a
 * header announcing more (up to the 16 MiB a stranger may claim) or another
 * message type is refused before it is buffered; the queue closes the oldest
 * when too many wait and each one past the deadline, in accept order. */
#include <string.h>

#include "inference/proto/gate.h"
#include "tap.h"

static int check(const struct dlrt_buf *b, size_t n, struct dlrt_err *err)
{
	return dlrt_gate_check(dlrt_buf_head(b), n, err);
}

int main(void)
{
	struct dlrt_buf b;
	struct dlrt_err err;
	struct dlrt_ip_hello h = { .role = DLRT_IP_ROLE_WORKER, .epoch = 7 };
	struct dlrt_ip_auth a = { .mode = 1 };
	struct dlrt_gate g;
	struct dlrt_gate_ent e[5];
	uint8_t big[8] = { 0, 0, 0, 1, 3, 0, 22, 0 }; /* 16 MiB announced */

	memset(&g, 0, sizeof(g));
	memset(e, 0, sizeof(e));
	dlrt_buf_init(&b, 1 << 20);
	memset(h.name, 'n', DLRT_IP_NAME_MAX);
	TAP_IS_INT(dlrt_ip_put_hello(&b, &h), 0, "the largest HELLO");
	TAP_OK(b.len <= DLRT_GATE_FRAME_MAX, "fits the pre-authentication limit (%zu <= %d)", b.len,
	       DLRT_GATE_FRAME_MAX);
	TAP_IS_INT(check(&b, b.len, &err), 0, "and passes the check");
	dlrt_buf_consume(&b, b.len);
	memset(a.proof, 'p', DLRT_IP_PROOF_MAX);
	TAP_IS_INT(dlrt_ip_put_auth(&b, &a), 0, "the largest AUTH (the longest proof)");
	TAP_IS_INT(b.len, DLRT_GATE_FRAME_MAX, "is the pre-authentication limit exactly");
	TAP_IS_INT(check(&b, b.len, &err), 0, "and passes the check");
	TAP_IS_INT(check(&b, 3, &err), 0, "an incomplete length passes (more may come)");
	TAP_IS_INT(check(&b, 5, &err), 0, "an incomplete header passes");
	TAP_OK(DLRT_GATE_INPUT_MAX >= DLRT_GATE_FRAME_MAX + 4096,
	       "the input limit holds a whole AUTH however the server reads it");
	TAP_OK(DLRT_GATE_INPUT_MAX < 16384, "and stays small (%d bytes)", DLRT_GATE_INPUT_MAX);

	dlrt_buf_consume(&b, b.len);
	dlrt_buf_append(&b, big, 4);
	TAP_IS_INT(check(&b, 4, &err), -1, "a length of 16 MiB is refused from its 4 bytes");
	TAP_OK(strstr(err.msg, "before authentication") != NULL, "saying why: %s", err.msg);
	dlrt_buf_consume(&b, b.len);
	a.proof[0] = 0;
	dlrt_ip_put_auth(&b, &a);
	b.data[b.off] = (uint8_t)(DLRT_GATE_FRAME_MAX - 4 + 1); /* one byte over */
	b.data[b.off + 1] = (uint8_t)((DLRT_GATE_FRAME_MAX - 4 + 1) >> 8);
	TAP_IS_INT(check(&b, 4, &err), -1, "one byte over the limit is refused");
	dlrt_buf_consume(&b, b.len);
	dlrt_ip_put_empty(&b, DLRT_IP_STATUSREQ);
	TAP_IS_INT(check(&b, b.len, &err), -1, "a request before authentication is refused");
	TAP_OK(strstr(err.msg, "only HELLO and AUTH") != NULL, "saying why: %s", err.msg);
	dlrt_buf_free(&b);

	/* The queue: accept order, the oldest first. */
	for (int i = 0; i < 4; i++)
		dlrt_gate_add(&g, &e[i], 1000 + i);
	TAP_IS_INT((int)g.queue.n, 4, "4 connections wait");
	TAP_OK(dlrt_gate_due(&g, 1500, 10000, 4) == NULL, "none due: within the cap and in time");
	dlrt_gate_add(&g, &e[4], 1600);
	TAP_OK(dlrt_gate_due(&g, 1600, 10000, 4) == &e[0], "a fifth over a cap of 4: the oldest");
	dlrt_gate_remove(&g, &e[0]);
	dlrt_gate_remove(&g, &e[0]);
	TAP_IS_INT((int)g.queue.n, 4, "removed once (removing twice is harmless)");
	dlrt_gate_remove(&g, &e[2]); /* authenticated: out of the queue */
	TAP_OK(dlrt_gate_due(&g, 11000, 10000, 4) == NULL, "the next one is not past the deadline");
	TAP_OK(dlrt_gate_due(&g, 11001, 10000, 4) == &e[1], "then it is");
	dlrt_gate_remove(&g, &e[1]);
	TAP_OK(dlrt_gate_due(&g, 11001, 10000, 4) == NULL, "the one that authenticated is not due");
	TAP_OK(dlrt_gate_due(&g, 11003, 10000, 4) == &e[3], "the next in accept order is");
	dlrt_gate_remove(&g, &e[3]);
	dlrt_gate_remove(&g, &e[4]);
	TAP_OK(g.queue.n == 0 && !g.queue.head && !g.queue.tail, "the queue is empty again");
	return tap_done();
}
