#include "gate.h"

void dlrt_gate_add(struct dlrt_gate *g, struct dlrt_gate_ent *e, int64_t now_ms)
{
	if (e->queued)
		return;
	e->since_ms = now_ms;
	dlrt_dlist_append(&g->queue, &e->link);
	e->queued = true;
}

void dlrt_gate_remove(struct dlrt_gate *g, struct dlrt_gate_ent *e)
{
	if (!e->queued)
		return;
	dlrt_dlist_unlink(&g->queue, &e->link);
	e->queued = false;
}

struct dlrt_gate_ent *dlrt_gate_due(const struct dlrt_gate *g, int64_t now_ms,
				    int64_t deadline_ms, unsigned max)
{
	struct dlrt_gate_ent *e;

	if (!g->queue.head)
		return NULL;
	e = DLRT_DLIST_ENTRY(g->queue.head, struct dlrt_gate_ent, link);
	if (g->queue.n > max || now_ms - e->since_ms >= deadline_ms)
		return e;
	return NULL;
}

int dlrt_gate_check(const uint8_t *buf, size_t len, struct dlrt_err *err)
{
	uint32_t flen;
	uint16_t type;

	if (len < 4)
		return 0;
	flen = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16 |
	       (uint32_t)buf[3] << 24;
	if ((size_t)flen + 4 > DLRT_GATE_FRAME_MAX)
		return dlrt_err_set(err, "a frame of %u bytes before authentication (at most %u "
				    "until WELCOME): not a dlrt-infer peer, or a corrupt stream",
				    flen, (unsigned)DLRT_GATE_FRAME_MAX - 4);
	if (len < DLRT_IP_HDR)
		return 0;
	type = (uint16_t)(buf[6] | buf[7] << 8);
	if (type != DLRT_IP_HELLO && type != DLRT_IP_AUTH)
		return dlrt_err_set(err, "%s before authentication: only HELLO and AUTH are "
				    "accepted until WELCOME", dlrt_ip_type_name(type));
	return 0;
}
