/* proto_ha.c - the hot standby's messages of the dlrt-infer protocol (proto.h). */
#include "proto.h"

int dlrt_ip_put_ack(struct dlrt_buf *b, uint32_t job, uint64_t task)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, DLRT_IP_ACK);
	dlrt_ip_wr_u32(&w, job);
	dlrt_ip_wr_u64(&w, task);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_ack(const uint8_t *p, size_t n, struct dlrt_ip_ack *m, struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	m->job = dlrt_ip_rd_u32(&r);
	m->task = dlrt_ip_rd_u64(&r);
	return dlrt_ip_rd_end(&r, "ACK", err);
}

int dlrt_ip_put_seq(struct dlrt_buf *b, uint16_t type, uint64_t seq)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, type);
	dlrt_ip_wr_u64(&w, seq);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_seq(const uint8_t *p, size_t n, uint64_t *seq, struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	*seq = dlrt_ip_rd_u64(&r);
	return dlrt_ip_rd_end(&r, "SYNC/SEQACK", err);
}

void dlrt_ip_frame_set_type(uint8_t *frame, uint16_t type)
{
	frame[6] = (uint8_t)type;
	frame[7] = (uint8_t)(type >> 8);
}
