/* proto.h - the binary protocol of dlrt-infer (coordinator, workers, clients).
 *
 * Every message is one frame, all integers little-endian:
 *
 *   u32 length    bytes after this field (version + type + payload), 4..16 MiB
 *   u16 version   DLRT_IP_VERSION; any other value closes the connection
 *   u16 type      enum dlrt_ip_type
 *   payload       the message's fields, in the order of its field list
 *                 (proto_msgs.h); strings are u32 length + bytes (no
 *                 NUL), at most a per-field limit; a payload must be
 *                 consumed exactly
 *
 * Each message has an encoder (appends a whole frame to a dlrt_buf) and a
 * decoder (from the payload of one frame into a struct). Decoders validate
 * everything (limits, exact length, enum ranges) and fail with a one-line
 * error; a peer that sends a malformed frame is disconnected, nobody else is
 * affected. docs/inference.md has the table of messages.
 *
 * Coordinator state changes (state.h) use the same framing (DLRT_IP_CHANGE),
 * so the standby and the journal of the next step read the same bytes.
 */
#ifndef DLRT_INFER_PROTO_H
#define DLRT_INFER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/dlrt_err.h"

/* Peers of different versions refuse each other (dlrt_ip_frame_peek); the
 * coordinator answers such a peer with one ERROR frame before closing, which
 * an older peer reports as "protocol version N, this dlrt-infer speaks M".
 *   2: dispatch attempts, HEARTBEAT, DRAIN, CHALLENGE/AUTH.
 *   3: the hot standby and the journal: ACK, RESENT, SYNC, SEQACK, PROMOTE,
 *      HELLO role 3 (standby), SUBMIT's token; CHANGE frames are journal
 *      records (a journal of another version is refused, never cut). */
#define DLRT_IP_VERSION 3
#define DLRT_IP_HDR 8                   /* length + version + type */
#define DLRT_IP_MAX_FRAME (16u << 20)   /* of the length field's value */
#define DLRT_IP_STR_MAX 4096            /* paths, model specs, errors */
#define DLRT_IP_NAME_MAX 128            /* job and worker names, secrets */
#define DLRT_IP_MAX_BATCH 65536u        /* queries per task */
#define DLRT_IP_MAX_QUERIES (1u << 24)  /* queries per job */
#define DLRT_IP_MAX_LIST 4096u          /* workers or jobs in a status reply */

enum dlrt_ip_type {
	DLRT_IP_HELLO = 1,   /* any -> coordinator: who I am */
	DLRT_IP_WELCOME,     /* coordinator -> any: accepted, epoch, my id */
	DLRT_IP_JOBINFO,     /* coordinator -> worker: a job's model and inputs */
	DLRT_IP_TASK,        /* coordinator -> worker: run queries [first, first+n) */
	DLRT_IP_RESULT,      /* worker -> coordinator: one answer per query */
	DLRT_IP_TASKFAIL,    /* worker -> coordinator: the task cannot run (why) */
	DLRT_IP_DROP,        /* coordinator -> worker: the job ended, free its model */
	DLRT_IP_SUBMIT,      /* client -> coordinator: a new job */
	DLRT_IP_SUBMITTED,   /* coordinator -> client: its id */
	DLRT_IP_STATUSREQ,   /* client -> coordinator */
	DLRT_IP_STATUS,      /* coordinator -> client: jobs and workers */
	DLRT_IP_CANCEL,      /* client -> coordinator: cancel a job */
	DLRT_IP_WAIT,        /* client -> coordinator: answer when the job ends */
	DLRT_IP_JOBEND,      /* coordinator -> client: how a job ended */
	DLRT_IP_ERROR,       /* coordinator -> client: one-line error */
	DLRT_IP_OK,          /* coordinator -> client: done */
	DLRT_IP_STOP,        /* client -> coordinator: stop the pool */
	DLRT_IP_CHANGE,      /* a coordinator state change (state.h) */
	DLRT_IP_HEARTBEAT,   /* worker -> coordinator: still alive (no payload) */
	DLRT_IP_DRAIN,       /* worker -> coordinator: near my time limit, no new tasks */
	DLRT_IP_CHALLENGE,   /* coordinator -> any, after HELLO: auth mode and nonce (auth.h) */
	DLRT_IP_AUTH,        /* any -> coordinator: the proof; then WELCOME or ERROR */
	/* hot standby (standby.h) */
	DLRT_IP_ACK,         /* coordinator -> worker: that answer is recorded, forget it */
	DLRT_IP_RESENT,      /* worker -> coordinator: an answer no coordinator acknowledged */
	DLRT_IP_SYNC,        /* coordinator -> standby: heartbeat, "I am at change N" */
	DLRT_IP_SEQACK,      /* standby -> coordinator: "I hold every change up to N" */
	DLRT_IP_PROMOTE,     /* coordinator -> worker: start a standby next to you */
	DLRT_IP_TYPE_MAX
};

const char *dlrt_ip_type_name(unsigned type);

enum dlrt_ip_role { DLRT_IP_ROLE_WORKER = 1, DLRT_IP_ROLE_CLIENT = 2, DLRT_IP_ROLE_STANDBY = 3 };

enum dlrt_ip_job_state {
	DLRT_IP_JOB_RUNNING = 1,
	DLRT_IP_JOB_DONE,
	DLRT_IP_JOB_CANCELLED,
	DLRT_IP_JOB_FAILED,
};

const char *dlrt_ip_job_state_name(unsigned state);

struct dlrt_ip_frame {
	uint16_t type;
	const uint8_t *payload;
	size_t len;
	size_t frame_len; /* whole frame, header included */
};

/* Looks at the front of `buf`: 1 with a whole frame in *f, 0 if more bytes
 * are needed, -1 (with err) for a frame that can never be valid (bad length,
 * version or type). */
int dlrt_ip_frame_peek(const uint8_t *buf, size_t len, struct dlrt_ip_frame *f,
		       struct dlrt_err *err);

/* ---- messages -------------------------------------------------------------------- */

#define DLRT_IP_NONCE 32
#define DLRT_IP_PROOF_MAX 4096

/* Each struct is expanded from its message's field list in proto_msgs.h,
 * which documents the fields. */
#include "proto_msgs.h"

DLRT_IP_STRUCT(hello, DLRT_IP_HELLO_FIELDS);
DLRT_IP_STRUCT(challenge, DLRT_IP_CHALLENGE_FIELDS);
DLRT_IP_STRUCT(auth, DLRT_IP_AUTH_FIELDS);
DLRT_IP_STRUCT(welcome, DLRT_IP_WELCOME_FIELDS);
DLRT_IP_STRUCT(jobinfo, DLRT_IP_JOBINFO_FIELDS);
DLRT_IP_STRUCT(task, DLRT_IP_TASK_FIELDS);
DLRT_IP_STRUCT(result, DLRT_IP_RESULT_FIELDS);
DLRT_IP_STRUCT(taskfail, DLRT_IP_TASKFAIL_FIELDS);
DLRT_IP_STRUCT(submit, DLRT_IP_SUBMIT_FIELDS);
DLRT_IP_STRUCT(worker_info, DLRT_IP_WORKER_INFO_FIELDS);
DLRT_IP_STRUCT(job_info, DLRT_IP_JOB_INFO_FIELDS);
DLRT_IP_STRUCT(status, DLRT_IP_STATUS_FIELDS);
DLRT_IP_STRUCT(drain, DLRT_IP_DRAIN_FIELDS);
DLRT_IP_STRUCT(jobref, DLRT_IP_JOBREF_FIELDS);
DLRT_IP_STRUCT(ack, DLRT_IP_ACK_FIELDS);
DLRT_IP_STRUCT(text, DLRT_IP_TEXT_FIELDS);
DLRT_IP_STRUCT(seq, DLRT_IP_SEQ_FIELDS);

/* Encoders append one whole frame; -1 only if `b` hits its limit. */
int dlrt_ip_put_hello(struct dlrt_buf *b, const struct dlrt_ip_hello *m);
int dlrt_ip_put_welcome(struct dlrt_buf *b, const struct dlrt_ip_welcome *m);
int dlrt_ip_put_jobinfo(struct dlrt_buf *b, const struct dlrt_ip_jobinfo *m);
int dlrt_ip_put_task(struct dlrt_buf *b, const struct dlrt_ip_task *m);
int dlrt_ip_put_result(struct dlrt_buf *b, const struct dlrt_ip_result *m);
int dlrt_ip_put_taskfail(struct dlrt_buf *b, const struct dlrt_ip_taskfail *m);
int dlrt_ip_put_submit(struct dlrt_buf *b, const struct dlrt_ip_submit *m);
int dlrt_ip_put_status(struct dlrt_buf *b, const struct dlrt_ip_status *m);
/* DROP, SUBMITTED, CANCEL, WAIT */
int dlrt_ip_put_jobref(struct dlrt_buf *b, uint16_t type, uint32_t job);
int dlrt_ip_put_jobend(struct dlrt_buf *b, const struct dlrt_ip_job_info *m);
int dlrt_ip_put_error(struct dlrt_buf *b, const char *text);
int dlrt_ip_put_drain(struct dlrt_buf *b, const struct dlrt_ip_drain *m);
int dlrt_ip_put_challenge(struct dlrt_buf *b, const struct dlrt_ip_challenge *m);
int dlrt_ip_put_auth(struct dlrt_buf *b, const struct dlrt_ip_auth *m);
/* STATUSREQ, OK, STOP, HEARTBEAT */
int dlrt_ip_put_empty(struct dlrt_buf *b, uint16_t type);

/* Decoders: the payload of a frame of the right type. The ones that allocate
 * (result, submit, status) are released with the matching _free, also after a
 * failure. */
int dlrt_ip_get_hello(const uint8_t *p, size_t n, struct dlrt_ip_hello *m, struct dlrt_err *err);
int dlrt_ip_get_welcome(const uint8_t *p, size_t n, struct dlrt_ip_welcome *m, struct dlrt_err *err);
int dlrt_ip_get_jobinfo(const uint8_t *p, size_t n, struct dlrt_ip_jobinfo *m, struct dlrt_err *err);
int dlrt_ip_get_task(const uint8_t *p, size_t n, struct dlrt_ip_task *m, struct dlrt_err *err);
int dlrt_ip_get_result(const uint8_t *p, size_t n, struct dlrt_ip_result *m, struct dlrt_err *err);
void dlrt_ip_result_free(struct dlrt_ip_result *m);
int dlrt_ip_get_taskfail(const uint8_t *p, size_t n, struct dlrt_ip_taskfail *m, struct dlrt_err *err);
int dlrt_ip_get_submit(const uint8_t *p, size_t n, struct dlrt_ip_submit *m, struct dlrt_err *err);
void dlrt_ip_submit_free(struct dlrt_ip_submit *m);
int dlrt_ip_get_status(const uint8_t *p, size_t n, struct dlrt_ip_status *m, struct dlrt_err *err);
void dlrt_ip_status_free(struct dlrt_ip_status *m);
int dlrt_ip_get_jobref(const uint8_t *p, size_t n, struct dlrt_ip_jobref *m, struct dlrt_err *err);
int dlrt_ip_get_jobend(const uint8_t *p, size_t n, struct dlrt_ip_job_info *m, struct dlrt_err *err);
int dlrt_ip_get_error(const uint8_t *p, size_t n, struct dlrt_ip_text *m, struct dlrt_err *err);
int dlrt_ip_get_empty(const uint8_t *p, size_t n, struct dlrt_err *err);
int dlrt_ip_get_drain(const uint8_t *p, size_t n, struct dlrt_ip_drain *m, struct dlrt_err *err);
int dlrt_ip_get_challenge(const uint8_t *p, size_t n, struct dlrt_ip_challenge *m,
			  struct dlrt_err *err);
int dlrt_ip_get_auth(const uint8_t *p, size_t n, struct dlrt_ip_auth *m, struct dlrt_err *err);

/* Hot standby messages (proto_ha.c). RESENT has RESULT's payload: a worker
 * re-sends the RESULT frame it kept, with the type changed. */
int dlrt_ip_put_ack(struct dlrt_buf *b, uint32_t job, uint64_t task);
int dlrt_ip_get_ack(const uint8_t *p, size_t n, struct dlrt_ip_ack *m, struct dlrt_err *err);
/* SYNC, SEQACK: one u64 change sequence number. */
int dlrt_ip_put_seq(struct dlrt_buf *b, uint16_t type, uint64_t seq);
int dlrt_ip_get_seq(const uint8_t *p, size_t n, uint64_t *seq, struct dlrt_err *err);
/* Rewrites the type of a whole frame held in memory. */
void dlrt_ip_frame_set_type(uint8_t *frame, uint16_t type);

/* ---- the little-endian reader and writer the codecs (and state.c) share ---------- */

struct dlrt_ip_rd {
	const uint8_t *p;
	size_t len, off;
	bool bad;
	const char *why; /* first problem */
};

void dlrt_ip_rd_init(struct dlrt_ip_rd *r, const uint8_t *p, size_t len);
uint8_t dlrt_ip_rd_u8(struct dlrt_ip_rd *r);
uint16_t dlrt_ip_rd_u16(struct dlrt_ip_rd *r);
uint32_t dlrt_ip_rd_u32(struct dlrt_ip_rd *r);
uint64_t dlrt_ip_rd_u64(struct dlrt_ip_rd *r);
float dlrt_ip_rd_f32(struct dlrt_ip_rd *r);
double dlrt_ip_rd_f64(struct dlrt_ip_rd *r);
/* A string of at most `max` bytes into dst[max + 1]; no NUL bytes allowed. */
void dlrt_ip_rd_str(struct dlrt_ip_rd *r, char *dst, size_t max);
/* Pointer to `n` raw bytes, or NULL (marks the reader bad). */
const uint8_t *dlrt_ip_rd_bytes(struct dlrt_ip_rd *r, size_t n);
/* 0 if everything was read and nothing is left over, else -1 with err. */
int dlrt_ip_rd_end(struct dlrt_ip_rd *r, const char *what, struct dlrt_err *err);

struct dlrt_ip_wr {
	struct dlrt_buf *b;
	size_t start; /* offset of the frame's length field in b's held bytes */
	bool failed;
};

void dlrt_ip_wr_begin(struct dlrt_ip_wr *w, struct dlrt_buf *b, uint16_t type);
void dlrt_ip_wr_u8(struct dlrt_ip_wr *w, uint8_t v);
void dlrt_ip_wr_u16(struct dlrt_ip_wr *w, uint16_t v);
void dlrt_ip_wr_u32(struct dlrt_ip_wr *w, uint32_t v);
void dlrt_ip_wr_u64(struct dlrt_ip_wr *w, uint64_t v);
void dlrt_ip_wr_f32(struct dlrt_ip_wr *w, float v);
void dlrt_ip_wr_f64(struct dlrt_ip_wr *w, double v);
void dlrt_ip_wr_str(struct dlrt_ip_wr *w, const char *s);
void dlrt_ip_wr_bytes(struct dlrt_ip_wr *w, const void *p, size_t n);
/* Patches the length; 0, or -1 if anything failed (the partial frame is removed). */
int dlrt_ip_wr_end(struct dlrt_ip_wr *w);

#endif
