/* proto_codec.h - expands the field lists of proto_msgs.h into codecs, for
 * proto.c and proto_ha.c only.
 *
 * DLRT_IPC_CODEC(tag, FIELDS) defines, for struct dlrt_ip_<tag>:
 *   static void wr_<tag>(struct dlrt_ip_wr *w, const struct dlrt_ip_<tag> *m)
 *   static void rd_<tag>(struct dlrt_ip_rd *r, struct dlrt_ip_<tag> *m)
 * wr_ appends the fields, rd_ reads and checks them (the reader goes bad on
 * the first problem, see proto.h), after setting the pointers it allocates
 * to NULL so that _free may run after any failure. DLRT_IPC_FREE(tag, FIELDS)
 * defines dlrt_ip_<tag>_free(). A file that expands BYTES, ANSWERS, LIST or
 * CHECK entries provides rd_fail(), rd_bytes_copy() and rd_answers().
 */
#ifndef DLRT_INFER_PROTO_CODEC_H
#define DLRT_INFER_PROTO_CODEC_H

#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define DLRT_IPC_WR(kind, name, a, b) DLRT_IPC_WR_##kind(name, a, b)
#define DLRT_IPC_WR_U8(name, a, b) dlrt_ip_wr_u8(w, m->name);
#define DLRT_IPC_WR_U32(name, a, b) dlrt_ip_wr_u32(w, m->name);
#define DLRT_IPC_WR_U64(name, a, b) dlrt_ip_wr_u64(w, m->name);
#define DLRT_IPC_WR_F32(name, a, b) dlrt_ip_wr_f32(w, m->name);
#define DLRT_IPC_WR_F64(name, a, b) dlrt_ip_wr_f64(w, m->name);
#define DLRT_IPC_WR_STR(name, a, b) dlrt_ip_wr_str(w, m->name);
#define DLRT_IPC_WR_RAW(name, a, b) dlrt_ip_wr_bytes(w, m->name, a);
#define DLRT_IPC_WR_BYTES(name, a, b) dlrt_ip_wr_bytes(w, m->name, m->a);
#define DLRT_IPC_WR_ANSWERS(name, a, b)                                 \
	for (uint32_t i_ = 0; i_ < m->b; i_++) {                         \
		dlrt_ip_wr_u32(w, (uint32_t)m->name[i_]);                \
		dlrt_ip_wr_f32(w, m->a[i_]);                             \
	}
#define DLRT_IPC_WR_LIST(name, a, b)                                    \
	for (uint32_t i_ = 0; i_ < m->a; i_++)                           \
		wr_##b(w, &m->name[i_]);
#define DLRT_IPC_WR_CHECK(cond, why, b)

#define DLRT_IPC_RD(kind, name, a, b) DLRT_IPC_RD_##kind(name, a, b)
#define DLRT_IPC_RD_U8(name, a, b) m->name = dlrt_ip_rd_u8(r);
#define DLRT_IPC_RD_U32(name, a, b) m->name = dlrt_ip_rd_u32(r);
#define DLRT_IPC_RD_U64(name, a, b) m->name = dlrt_ip_rd_u64(r);
#define DLRT_IPC_RD_F32(name, a, b) m->name = dlrt_ip_rd_f32(r);
#define DLRT_IPC_RD_F64(name, a, b) m->name = dlrt_ip_rd_f64(r);
#define DLRT_IPC_RD_STR(name, a, b) dlrt_ip_rd_str(r, m->name, a);
#define DLRT_IPC_RD_RAW(name, a, b)                                     \
	{                                                                \
		const uint8_t *q_ = dlrt_ip_rd_bytes(r, a);              \
									 \
		if (q_)                                                  \
			memcpy(m->name, q_, a);                          \
	}
#define DLRT_IPC_RD_BYTES(name, a, b) rd_bytes_copy(r, &m->name, m->a);
#define DLRT_IPC_RD_ANSWERS(name, a, b) rd_answers(r, &m->name, &m->a, m->b);
/* The count was checked against its limit before: the allocation is bounded. */
#define DLRT_IPC_RD_LIST(name, a, b)                                    \
	if (!r->bad && m->a) {                                           \
		m->name = calloc(m->a, sizeof(*m->name));                \
		if (!m->name)                                            \
			rd_fail(r, "out of memory");                     \
	}                                                                \
	for (uint32_t i_ = 0; !r->bad && i_ < m->a; i_++)                \
		rd_##b(r, &m->name[i_]);
#define DLRT_IPC_RD_CHECK(cond, why, b)                                 \
	if (!r->bad && (cond))                                           \
		rd_fail(r, why);

#define DLRT_IPC_INIT(kind, name, a, b) DLRT_IPC_INIT_##kind(name, a, b)
#define DLRT_IPC_INIT_U8(name, a, b)
#define DLRT_IPC_INIT_U32(name, a, b)
#define DLRT_IPC_INIT_U64(name, a, b)
#define DLRT_IPC_INIT_F32(name, a, b)
#define DLRT_IPC_INIT_F64(name, a, b)
#define DLRT_IPC_INIT_STR(name, a, b)
#define DLRT_IPC_INIT_RAW(name, a, b)
#define DLRT_IPC_INIT_BYTES(name, a, b) m->name = NULL;
#define DLRT_IPC_INIT_ANSWERS(name, a, b) m->name = NULL; m->a = NULL;
#define DLRT_IPC_INIT_LIST(name, a, b) m->name = NULL;
#define DLRT_IPC_INIT_CHECK(cond, why, b)

#define DLRT_IPC_FREEP(kind, name, a, b) DLRT_IPC_FREEP_##kind(name, a, b)
#define DLRT_IPC_FREEP_U8(name, a, b)
#define DLRT_IPC_FREEP_U32(name, a, b)
#define DLRT_IPC_FREEP_U64(name, a, b)
#define DLRT_IPC_FREEP_F32(name, a, b)
#define DLRT_IPC_FREEP_F64(name, a, b)
#define DLRT_IPC_FREEP_STR(name, a, b)
#define DLRT_IPC_FREEP_RAW(name, a, b)
#define DLRT_IPC_FREEP_BYTES(name, a, b) free(m->name);
#define DLRT_IPC_FREEP_ANSWERS(name, a, b) free(m->name); free(m->a);
#define DLRT_IPC_FREEP_LIST(name, a, b) free(m->name);
#define DLRT_IPC_FREEP_CHECK(cond, why, b)

#define DLRT_IPC_CODEC(tag, FIELDS)                                     \
	static void wr_##tag(struct dlrt_ip_wr *w, const struct dlrt_ip_##tag *m) \
	{                                                                \
		FIELDS(DLRT_IPC_WR)                                      \
	}                                                                \
	static void rd_##tag(struct dlrt_ip_rd *r, struct dlrt_ip_##tag *m) \
	{                                                                \
		FIELDS(DLRT_IPC_INIT)                                    \
		FIELDS(DLRT_IPC_RD)                                      \
	}

/* Frees what the decoder allocated, and forgets it. */
#define DLRT_IPC_FREE(tag, FIELDS)                                      \
	void dlrt_ip_##tag##_free(struct dlrt_ip_##tag *m)               \
	{                                                                \
		FIELDS(DLRT_IPC_FREEP)                                   \
		FIELDS(DLRT_IPC_INIT)                                    \
	}

/* The public pair of a message with a type of its own and a struct:
 * dlrt_ip_put_<tag>() and dlrt_ip_get_<tag>() (proto.h). */
#define DLRT_IPC_PUT_GET(tag, TYPE, what)                               \
	int dlrt_ip_put_##tag(struct dlrt_buf *b, const struct dlrt_ip_##tag *m) \
	{                                                                \
		struct dlrt_ip_wr w;                                     \
									 \
		dlrt_ip_wr_begin(&w, b, TYPE);                           \
		wr_##tag(&w, m);                                         \
		return dlrt_ip_wr_end(&w);                               \
	}                                                                \
	int dlrt_ip_get_##tag(const uint8_t *p, size_t n, struct dlrt_ip_##tag *m, \
			      struct dlrt_err *err)                      \
	{                                                                \
		struct dlrt_ip_rd r;                                     \
									 \
		dlrt_ip_rd_init(&r, p, n);                               \
		rd_##tag(&r, m);                                         \
		return dlrt_ip_rd_end(&r, what, err);                    \
	}

#endif
