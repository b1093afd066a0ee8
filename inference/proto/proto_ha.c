/* proto_ha.c - the hot standby's messages of the dlrt-infer protocol (proto.h),
 * expanded from their field lists (proto_msgs.h). */
#include "proto.h"

#include "proto_codec.h"

DLRT_IPC_CODEC(ack, DLRT_IP_ACK_FIELDS)
DLRT_IPC_CODEC(seq, DLRT_IP_SEQ_FIELDS)

int dlrt_ip_put_ack(struct dlrt_buf *b, uint32_t job, uint64_t task)
{
	struct dlrt_ip_ack m = { .job = job, .task = task };
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, DLRT_IP_ACK);
	wr_ack(&w, &m);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_ack(const uint8_t *p, size_t n, struct dlrt_ip_ack *m, struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	rd_ack(&r, m);
	return dlrt_ip_rd_end(&r, "ACK", err);
}

int dlrt_ip_put_seq(struct dlrt_buf *b, uint16_t type, uint64_t seq)
{
	struct dlrt_ip_seq m = { .seq = seq };
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, type);
	wr_seq(&w, &m);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_seq(const uint8_t *p, size_t n, uint64_t *seq, struct dlrt_err *err)
{
	struct dlrt_ip_seq m;
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	rd_seq(&r, &m);
	*seq = m.seq;
	return dlrt_ip_rd_end(&r, "SYNC/SEQACK", err);
}

void dlrt_ip_frame_set_type(uint8_t *frame, uint16_t type)
{
	frame[6] = (uint8_t)type;
	frame[7] = (uint8_t)(type >> 8);
}
