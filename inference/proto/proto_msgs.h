/* proto_msgs.h - one field list per dlrt-infer message (included by proto.h).
 *
 * Each list names a message's fields in wire order; proto.h expands it into
 * the message's struct and proto.c into its encoder, its decoder, its bounds
 * checks and, for the messages that allocate, its _free. So a field is
 * written once, and the encoder and the decoder cannot disagree. The
 * expansion is plain C macros: nothing is generated at build time, and the
 * compiler checks every use. tests/unit/test_infer_wire.c holds the bytes
 * every message had before these lists, and checks that they still do.
 *
 * An entry is F(kind, name, a, b), where kind is
 *   U8, U32, U64, F32, F64  a little-endian number (a, b unused: 0)
 *   STR      u32 length, then at most a bytes, no NUL: char name[a + 1]
 *   RAW      exactly a bytes: uint8_t name[a]
 *   BYTES    m->a bytes, a an earlier field: uint8_t *name, allocated by the
 *            decoder (freed by _free)
 *   ANSWERS  m->b pairs (u32 prediction, f32 score): int32_t *name and
 *            float *a, allocated by the decoder (freed by _free)
 *   LIST     m->a elements of the list b (its struct dlrt_ip_<b>):
 *            allocated by the decoder (freed by _free)
 *   CHECK    the decoder refuses the message with the text a when the
 *            condition `name` holds (m: the message, r: the reader), checked
 *            where it stands unless an earlier field failed
 * A comment after an entry documents the struct member.
 */
#ifndef DLRT_INFER_PROTO_MSGS_H
#define DLRT_INFER_PROTO_MSGS_H

/* ---- the lists ------------------------------------------------------------------- */

/* HELLO: any -> coordinator, who I am */
#define DLRT_IP_HELLO_FIELDS(F) \
	F(U8, role, 0, 0)      /* enum dlrt_ip_role */ \
	F(U64, epoch, 0, 0)    /* from the access record */ \
	F(STR, name, DLRT_IP_NAME_MAX, 0) /* worker: host/array index; client: anything */ \
	F(CHECK, m->role != DLRT_IP_ROLE_WORKER && m->role != DLRT_IP_ROLE_CLIENT && \
		 m->role != DLRT_IP_ROLE_STANDBY, "unknown role", 0)

/* CHALLENGE: coordinator -> any, after HELLO */
#define DLRT_IP_CHALLENGE_FIELDS(F) \
	F(U8, mode, 0, 0)                  /* enum dlrt_auth_mode */ \
	F(RAW, nonce, DLRT_IP_NONCE, 0)    /* fresh for each connection */ \
	F(CHECK, m->mode < 1 || m->mode > 2, "unknown authentication mode", 0)

/* AUTH: any -> coordinator, the proof */
#define DLRT_IP_AUTH_FIELDS(F) \
	F(U8, mode, 0, 0) \
	F(RAW, nonce, DLRT_IP_NONCE, 0)        /* the peer's own */ \
	F(STR, proof, DLRT_IP_PROOF_MAX, 0)    /* MUNGE credential or HMAC in hex */ \
	F(CHECK, m->mode < 1 || m->mode > 2, "unknown authentication mode", 0)

/* WELCOME: coordinator -> any, accepted */
#define DLRT_IP_WELCOME_FIELDS(F) \
	F(U64, epoch, 0, 0) \
	F(U32, id, 0, 0)           /* worker id (1, 2, ...); 0 for clients */ \
	F(U32, heartbeat_ms, 0, 0) /* workers: send HEARTBEAT this often (0 = never) */ \
	F(CHECK, m->heartbeat_ms > 3600000, "heartbeat interval over an hour", 0)

/* JOBINFO: coordinator -> worker, a job's model and inputs */
#define DLRT_IP_JOBINFO_FIELDS(F) \
	F(U32, job, 0, 0) \
	F(STR, model, DLRT_IP_STR_MAX, 0) \
	F(STR, inputs, DLRT_IP_STR_MAX, 0) \
	F(U32, first, 0, 0)    /* input index of query 0 */ \
	F(U32, count, 0, 0) \
	F(CHECK, m->count == 0 || m->count > DLRT_IP_MAX_QUERIES, "query count out of range", 0)

/* TASK: coordinator -> worker. Every dispatch of a task has its own attempt
 * id (never 0, never reused by a coordinator); RESULT and TASKFAIL name it,
 * and the coordinator records an answer only from the dispatch the task is
 * currently assigned to (liveness.h). */
#define DLRT_IP_TASK_FIELDS(F) \
	F(U32, job, 0, 0) \
	F(U64, task, 0, 0) \
	F(U64, attempt, 0, 0) \
	F(U32, first, 0, 0)    /* query index within the job */ \
	F(U32, n, 0, 0) \
	F(CHECK, m->n == 0 || m->n > DLRT_IP_MAX_BATCH, "task size out of range", 0) \
	F(CHECK, m->attempt == 0, "attempt 0 (every dispatch has one)", 0)

/* RESULT (and RESENT): worker -> coordinator, one answer per query. The
 * length is checked before the decoder allocates what the peer claims. */
#define DLRT_IP_RESULT_FIELDS(F) \
	F(U32, job, 0, 0) \
	F(U64, task, 0, 0) \
	F(U64, attempt, 0, 0)  /* of the TASK it answers */ \
	F(U32, busy_us, 0, 0)  /* the worker's compute time for the task */ \
	F(U32, n, 0, 0) \
	F(CHECK, m->n == 0 || m->n > DLRT_IP_MAX_BATCH, "answer count out of range", 0) \
	F(CHECK, (size_t)m->n * 8 != r->len - r->off, "answer count does not match the length", 0) \
	F(ANSWERS, pred, score, n) /* [n] each (the decoder allocates) */

/* TASKFAIL: worker -> coordinator, the task cannot run (why) */
#define DLRT_IP_TASKFAIL_FIELDS(F) \
	F(U32, job, 0, 0) \
	F(U64, task, 0, 0) \
	F(U64, attempt, 0, 0) \
	F(STR, error, DLRT_IP_STR_MAX, 0)

/* SUBMIT: client -> coordinator, a new job */
#define DLRT_IP_SUBMIT_FIELDS(F) \
	F(STR, name, DLRT_IP_NAME_MAX, 0) \
	F(STR, model, DLRT_IP_STR_MAX, 0) \
	F(STR, inputs, DLRT_IP_STR_MAX, 0) \
	F(STR, out, DLRT_IP_STR_MAX, 0)    /* CSV path ("" = the pool's results folder) */ \
	F(U32, first, 0, 0) \
	F(U32, count, 0, 0) \
	F(U32, batch, 0, 0) \
	F(U32, nlabels, 0, 0)              /* 0 or count */ \
	F(CHECK, m->count == 0 || m->count > DLRT_IP_MAX_QUERIES, "query count out of range", 0) \
	F(CHECK, m->batch == 0 || m->batch > DLRT_IP_MAX_BATCH, "batch size out of range", 0) \
	F(CHECK, m->nlabels && m->nlabels != m->count, \
		 "label count differs from the query count", 0) \
	F(CHECK, m->model[0] == '\0' || m->inputs[0] == '\0', "model or inputs missing", 0) \
	F(BYTES, labels, nlabels, 0)       /* [nlabels] (the decoder allocates) */ \
	F(U64, token, 0, 0)                /* the client's random id of this submission: a \
					    * SUBMIT re-sent after a failover gives the same job */

/* An element of STATUS's list of workers. */
#define DLRT_IP_WORKER_INFO_FIELDS(F) \
	F(U32, id, 0, 0) \
	F(STR, name, DLRT_IP_NAME_MAX, 0) \
	F(U32, job, 0, 0)      /* the job of its current (or last) task, 0 = none */ \
	F(U32, inflight, 0, 0) \
	F(U64, tasks, 0, 0)

/* JOBEND (coordinator -> client: how a job ended), and an element of
 * STATUS's list of jobs. */
#define DLRT_IP_JOB_INFO_FIELDS(F) \
	F(U32, id, 0, 0) \
	F(STR, name, DLRT_IP_NAME_MAX, 0) \
	F(STR, model, DLRT_IP_STR_MAX, 0) \
	F(STR, out, DLRT_IP_STR_MAX, 0) \
	F(STR, error, DLRT_IP_STR_MAX, 0) \
	F(U8, state, 0, 0)     /* enum dlrt_ip_job_state */ \
	F(U32, batch, 0, 0) \
	F(U32, total, 0, 0) \
	F(U32, done, 0, 0) \
	F(U32, labelled, 0, 0) /* answered queries with a known label */ \
	F(U32, correct, 0, 0) \
	F(F32, rate, 0, 0)     /* queries/s over the last window */ \
	F(F32, held, 0, 0)     /* workers running its tasks, averaged over the window */ \
	F(F32, share, 0, 0)    /* the scheduler's target, in workers */ \
	F(F64, elapsed, 0, 0)  /* seconds since submission (until the end if ended) */ \
	F(CHECK, m->state < DLRT_IP_JOB_RUNNING || m->state > DLRT_IP_JOB_FAILED, \
		 "unknown job state", 0) \
	F(CHECK, m->done > m->total || m->correct > m->labelled || m->labelled > m->done, \
		 "inconsistent job counters", 0)

/* STATUS: coordinator -> client, jobs and workers */
#define DLRT_IP_STATUS_FIELDS(F) \
	F(U64, epoch, 0, 0) \
	F(F64, uptime, 0, 0) \
	F(F64, window, 0, 0)   /* rate window, seconds */ \
	F(U32, nworkers, 0, 0) \
	F(CHECK, m->nworkers > DLRT_IP_MAX_LIST, "too many workers", 0) \
	F(LIST, workers, nworkers, worker_info) \
	F(U32, njobs, 0, 0) \
	F(CHECK, m->njobs > DLRT_IP_MAX_LIST, "too many jobs", 0) \
	F(LIST, jobs, njobs, job_info)

/* DRAIN: worker -> coordinator, near my time limit */
#define DLRT_IP_DRAIN_FIELDS(F) \
	F(U32, left_s, 0, 0)               /* seconds to the worker's time limit */ \
	F(STR, why, DLRT_IP_NAME_MAX, 0)   /* e.g. "Slurm time limit" */

/* CANCEL, WAIT, DROP, SUBMITTED */
#define DLRT_IP_JOBREF_FIELDS(F) \
	F(U32, job, 0, 0)

/* ACK: coordinator -> worker, that answer is recorded */
#define DLRT_IP_ACK_FIELDS(F) \
	F(U32, job, 0, 0) \
	F(U64, task, 0, 0)

/* ERROR: one line */
#define DLRT_IP_TEXT_FIELDS(F) \
	F(STR, text, DLRT_IP_STR_MAX, 0)

/* SYNC, SEQACK: one change sequence number */
#define DLRT_IP_SEQ_FIELDS(F) \
	F(U64, seq, 0, 0)

/* ---- the structs (proto.h) ------------------------------------------------------- */

#define DLRT_IP_DECL(kind, name, a, b) DLRT_IP_DECL_##kind(name, a, b)
#define DLRT_IP_DECL_U8(name, a, b) uint8_t name;
#define DLRT_IP_DECL_U32(name, a, b) uint32_t name;
#define DLRT_IP_DECL_U64(name, a, b) uint64_t name;
#define DLRT_IP_DECL_F32(name, a, b) float name;
#define DLRT_IP_DECL_F64(name, a, b) double name;
#define DLRT_IP_DECL_STR(name, a, b) char name[(a) + 1];
#define DLRT_IP_DECL_RAW(name, a, b) uint8_t name[a];
#define DLRT_IP_DECL_BYTES(name, a, b) uint8_t *name;
#define DLRT_IP_DECL_ANSWERS(name, a, b) int32_t *name; float *a;
#define DLRT_IP_DECL_LIST(name, a, b) struct dlrt_ip_##b *name;
#define DLRT_IP_DECL_CHECK(name, a, b)

#define DLRT_IP_STRUCT(tag, FIELDS) struct dlrt_ip_##tag { FIELDS(DLRT_IP_DECL) }

#endif
