/* coord_int.h - the coordinator's shared state, for its files only.
 *
 * Calls go one way, downwards:
 *
 *   coord_run.c    dlrt_coord_run() (coord.h), the way in: the start (epoch
 *                  claim, state, journal, listener, timers), the shutdown,
 *                  and the list of parts below
 *   coord_*.c      the concerns, each a part: coord_requests.c (a peer
 *                  joining, the clients' requests), coord_dispatch.c (tasks
 *                  out), coord_results.c (answers in), coord_replication.c
 *                  (commit, journal, standby, fencing), coord_jobs.c (a
 *                  job's start, end and resume), coord_liveness.c (lost
 *                  workers), coord_timeline.c (rates, shares, timeline files)
 *   coord.c        the core: the log, the clocks, the wake-up (kick) and the
 *                  deferred writes, the connections and their admission
 *                  (gate, authentication), and the frame reader
 *
 * The core calls no concern by name: it reaches them only through the
 * struct dlrt_coord_part each concern file exports (its frame handlers and
 * the hooks below), in the order of coord_run.c's list. The concerns call
 * the core and each other (a result ends a job, a job's end is committed):
 * they are peers over the state in this header. Functions named dlrt_coord_*
 * here are for these files only.
 */
#ifndef DLRT_INFER_COORD_INT_H
#define DLRT_INFER_COORD_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "inference/pool/auth.h"
#include "common/buf.h"
#include "common/dlrt_err.h"
#include "services/evloop.h"
#include "inference/proto/gate.h"
#include "coord.h"
#include "inference/state/journal.h"
#include "inference/liveness.h"
#include "inference/pool/pool.h"
#include "inference/proto/proto.h"
#include "inference/sched.h"
#include "inference/state/state.h"
#include "services/tcpserver.h"

#define NB 20               /* buckets per rate window */
/* The input limit of an authenticated peer: one whole frame. */
#define MAX_REQUEST (DLRT_IP_MAX_FRAME + 64)
/* A worker with this many answers whose ACK waits for the standby gets no
 * new task: it keeps every unacknowledged answer to send again after a
 * failover, and keeps at most 2048 (worker.c). At 20,000 answers a second
 * per worker this is 50 ms of headroom for the standby's round trip, which
 * on loaded shared cores takes several milliseconds (128 stalled the
 * workers often). */
#define MAX_HELD_ACKS 1024
/* How often the coordinator looks at the claims directory, at most (fencing,
 * coord_replication.c), and how long a coordinator that starts from the
 * journal waits after its claim before it reads it: long enough for an
 * older coordinator to look, see the claim and stop (docs/inference.md). */
#define DLRT_COORD_FENCE_MS 10
#define DLRT_COORD_FENCE_WAIT_MS 200
/* Group commit (coord_replication.c): a batch of answers is written (rows,
 * journal) at most once per this time, and the standby gets at most one
 * group of changes per this time. A batch closes sooner when it holds a
 * change that is not an answer, DLRT_COORD_GROUP_ANSWERS answers or
 * DLRT_COORD_GROUP_BYTES of changes. */
#define DLRT_COORD_GROUP_US 1000
/* The standby's groups: each wakes it up and costs a send and a SEQACK; on
 * two shared cores 3 ms groups kept the default pool within a few percent
 * of one without a standby where 1 ms groups cost about a tenth
 * (bench/RESULTS.md). Replies wait up to this long plus a round trip;
 * MAX_HELD_ACKS keeps the workers busy meanwhile. */
#define DLRT_COORD_SB_GROUP_US 3000
#define DLRT_COORD_GROUP_ANSWERS 1024
#define DLRT_COORD_GROUP_BYTES ((size_t)64 << 10)

struct inflight {
	uint32_t job;
	uint64_t task;
	uint64_t attempt;  /* this dispatch's id (liveness.h) */
	int64_t sent_us;
	bool warmup; /* the worker's first task of the job: it loads the model first */
};

struct wk {
	uint32_t id;
	char name[DLRT_IP_NAME_MAX + 1];
	struct dlrt_conn *conn; /* NULL once gone */
	int cur;                /* job index it is held by, -1 = none */
	uint32_t n;             /* tasks in flight */
	struct inflight fl[DLRT_INFER_PREFETCH_MAX];
	uint64_t tasks;
	int64_t last_done_us;
	uint32_t *known;        /* jobs it got JOBINFO for */
	uint32_t nknown, capknown;
	int64_t last_seen_ms;   /* last frame from it */
	bool lost;              /* silent past the heartbeat bound: no tasks until it speaks */
	bool draining;          /* near its time limit: no new tasks */
};

struct jrt {
	uint64_t next_task;     /* tasks below were handed out at least once */
	uint64_t *requeue;      /* handed out, then their worker left */
	uint32_t nrequeue, caprequeue;
	uint32_t inflight;
	int64_t bucket[NB];     /* bucket number each slot holds */
	uint32_t bq[NB];        /* queries answered */
	uint32_t bqc[NB];       /* of which count for the cost (not warm-up tasks) */
	double bocc[NB];        /* worker-seconds spent on those */
	double bhold[NB];       /* worker-seconds the job held workers (see dlrt_coord_accrue) */
	double bheld[NB];       /* sum of held samples */
	uint32_t bsamples[NB];
	double rate, held_avg;
	int64_t first_dispatch_us, first_result_us;
	bool answered_before;   /* resumed with answers: its first_task/first_result are logged */
	FILE *csv;              /* rows are flushed before their answer is recorded */
	off_t csv_len;          /* bytes written to it (where the next rows start) */
	bool in_batch;          /* its rows of this batch are written (dlrt_coord_store_answers) */
	bool batch_rows;        /* and stored from batch_at on, until the journal has them */
	off_t batch_at;
	char out[DLRT_IP_STR_MAX + 1];
	char csv_err[DLRT_IP_STR_MAX + 1]; /* why its results cannot be stored ("" = they can) */
	struct dlrt_conn **waiters;
	uint32_t nwaiters, capwaiters;
	struct dlrt_attempts att; /* the dispatch each task is assigned to */
	bool nrequeue_popped;     /* pop_task returned a requeued task */
};

/* An answer checked and kept for the batch being gathered (coord_results.c). */
struct dlrt_coord_answer {
	/* What its TASK_DONE change will say (a whole struct dlrt_infer_change
	 * is 16 KiB: copied per answer, it cost more than the answer). */
	struct {
		uint32_t job, worker, latency_us;
		uint64_t task;
		struct dlrt_ip_result res; /* owns its arrays */
	} ch;
	double occ;             /* worker-seconds it took */
	bool warm;              /* the worker's first task of the job */
	bool resent;            /* RESENT after a failover */
	bool ok;                /* still to be recorded */
};

/* A peer's held replies, cut where a batch was written: the part before a
 * mark tells of changes up to its seq and goes out as soon as they are
 * durable, while the replies after it wait for a later batch. One mark for
 * all would hold a busy worker's ACKs until the standby caught up with the
 * newest batch, which under load it rarely does. A peer with more marks
 * than this merges the newest two (its replies wait a little longer). */
#define HELD_MARKS 8
struct held_mark {
	size_t end;    /* bytes of the held buffer up to here */
	uint64_t seq;  /* the newest change they tell of */
	uint32_t acks; /* worker ACKs among them */
};

struct peer {
	uint8_t role;           /* 0 until authenticated */
	bool challenged;        /* HELLO seen, CHALLENGE sent: AUTH next */
	uint8_t nonce[DLRT_AUTH_NONCE];
	struct dlrt_ip_hello hello;
	struct wk *w;
	bool dirty;
	struct dlrt_gate_ent gate; /* queued until authenticated (gate.h) */
	/* Group commit: replies that tell of changes the standby has not
	 * acknowledged yet wait here, then go out behind conn->out. */
	struct dlrt_buf held;
	struct held_mark marks[HELD_MARKS];
	uint8_t nmarks;
	bool held_open;         /* replies after the last mark: of the batch not written yet */
	uint32_t open_acks;     /* worker ACKs among them */
	uint32_t held_acks;     /* worker ACKs held in all (dispatch stops at MAX_HELD_ACKS) */
	bool in_held;           /* on the coordinator's held list */
};

struct coord {
	const struct dlrt_coord_opts *o;
	/* The concerns, as the core reaches them (dlrt_coord_set_parts). */
	const struct dlrt_coord_part *const *parts;
	uint32_t nparts;
	const struct dlrt_coord_frame *frame_of[DLRT_IP_TYPE_MAX]; /* by type; NULL: none */
	struct dlrt_evloop *loop;
	struct dlrt_tcpserver *srv;
	struct dlrt_infer_state st;
	uint64_t epoch;
	char secret[DLRT_POOL_SECRET_LEN + 1];
	char pool[4096];
	struct wk **workers;    /* by id - 1, never freed while running */
	uint32_t nworkers, capworkers, alive;
	struct jrt *jr;         /* parallel to st.jobs */
	struct dlrt_sched_job *sj;
	uint32_t capjobs;
	struct dlrt_conn **dirty;
	uint32_t ndirty, capdirty;
	bool kick_pending;
	bool in_kick;           /* the deferred writes are being made (kick_timer) */
	int64_t start_us, last_accrue_us, bucket_ms;
	int64_t t0_us;          /* pool time 0 of the timeline files (tsvlog.h), on our clock */
	int64_t tl_fence_ms;    /* the timeline's last fence check */
	int64_t regime_us;      /* when the set of jobs last changed */
	FILE *timeline, *events;
	bool stopping;
	int sfd;
	struct dlrt_buf log;    /* every change so far, as CHANGE frames (for a new standby) */
	/* The batch: answers kept since the last one was written, stored and
	 * recorded together before the deferred writes (dlrt_coord_write_batch),
	 * and the changes committed but not written to the journal and the
	 * standby yet. */
	struct dlrt_coord_answer *pend;
	uint32_t npend, cappend;
	struct dlrt_buf rows;   /* a job's rows of the batch, written in one go */
	size_t log_written;     /* bytes of the log in the journal and queued for the standby */
	uint64_t written_seq;   /* the newest change written so (held replies up to it may go) */
	bool batch_sync;        /* the batch holds a change the journal syncs at once */
	int64_t batch_us;       /* when the last batch was written */
	bool batch_timer;       /* a timer closes the batch being gathered */
	int64_t fence_ms;       /* the last look at the claims (dlrt_coord_fence_due) */
	struct dlrt_hb hb;      /* heartbeat bound and periods */
	int64_t hb_last_check_ms;
	uint64_t next_attempt;  /* id of the next dispatch */
	uint64_t late_dropped;  /* answers not recorded: late or from a void dispatch */
	uint8_t auth_mode;      /* enum dlrt_auth_mode */
	struct dlrt_journal jn;
	/* hot standby (standby.h) */
	struct dlrt_conn *sb;   /* the attached standby, NULL = none */
	bool sb_ready;          /* it holds the whole log: every commit waits for it */
	uint64_t sb_acked, sb_ready_seq;
	uint64_t sb_sent;       /* the newest change queued for it */
	uint64_t sb_wrote;      /* the newest change of the group last written to it */
	struct dlrt_buf sbq;    /* changes for it whose group has not gone yet */
	int64_t sb_group_us;    /* when the last group went */
	bool sb_group_timer;    /* a timer sends the next group */
	struct dlrt_conn **held; /* connections with replies held for the standby */
	uint32_t nheld;
	int64_t sb_ack_ms;      /* its last SEQACK */
	int64_t promote_ms;     /* when to ask a worker for a standby (0 = not now) */
	uint32_t promoted;      /* the worker asked last */
	int sb_tmo;
	bool fenced;            /* a newer epoch took over: acknowledge nothing more */
	struct dlrt_pool_access acc; /* our access record, rewritten if an older one replaced it */
	struct stat claims_seen; /* the claims directory when last looked at (claim.h) */
	uint32_t beats, resent;
	bool first_answer;      /* logged the first answer since a takeover */
	char host[64];
	struct dlrt_gate gate;  /* connections not authenticated yet */
	uint32_t gate_evicted;  /* closed since the last gate_tick because too many waited */
	bool broken;            /* the journal failed: nothing more is acknowledged */
	bool reserve_warned;    /* logged that the journal's space ahead ran out */
	char broken_msg[DLRT_ERR_MAX];
};

/* ---- coord.c: the core ---------------------------------------------------------- */

double dlrt_coord_wall_now(void);
void dlrt_coord_log(struct coord *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
double dlrt_coord_tsec(struct coord *c, int64_t us);
void dlrt_coord_kick(struct coord *c);
void dlrt_coord_mark_dirty(struct coord *c, struct dlrt_conn *conn);
void dlrt_coord_flush_dirty(struct coord *c);
void dlrt_coord_reply_error(struct dlrt_conn *conn, const char *msg);
void dlrt_coord_set_parts(struct coord *c, const struct dlrt_coord_part *const *parts,
			  uint32_t nparts);
int64_t dlrt_coord_gate_tick(struct dlrt_evloop *loop, void *arg);
void dlrt_coord_on_signal(struct dlrt_evloop *loop, int fd, unsigned events, void *arg);
extern const struct dlrt_proto dlrt_coord_proto;

/* ---- the parts: how the core reaches the concerns ------------------------------------ */

/* A handler of one frame type an authenticated peer sends. -1 with err: the
 * connection closes with that line logged. */
typedef int (*dlrt_coord_handler)(struct coord *c, struct dlrt_conn *conn,
				  const struct dlrt_ip_frame *f, struct dlrt_err *err);

struct dlrt_coord_frame {
	uint16_t type;
	uint8_t role;           /* the one role that may send it */
	dlrt_coord_handler fn;
};

/* What one concern file gives the core. Every member may be left out; each
 * frame type has one handler in all the parts, and join and reply_buf are
 * given by one part each. */
struct dlrt_coord_part {
	const struct dlrt_coord_frame *frames;
	uint32_t nframes;
	/* An authenticated peer introduces itself (its HELLO): -1 refuses it. */
	int (*join)(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_hello *h);
	/* Any frame of an authenticated peer, before its handler. */
	void (*seen)(struct coord *c, struct dlrt_conn *conn);
	/* Before the deferred writes go out: true if they must not (fenced out). */
	bool (*before_flush)(struct coord *c);
	/* Where the replies a client's frames added go (conn->out, or held). */
	struct dlrt_buf *(*reply_buf)(struct coord *c, struct dlrt_conn *conn);
	/* The connection closes: forget it. */
	void (*closed)(struct coord *c, struct dlrt_conn *conn);
};

extern const struct dlrt_coord_part dlrt_coord_replication_part;
extern const struct dlrt_coord_part dlrt_coord_requests_part;
extern const struct dlrt_coord_part dlrt_coord_liveness_part;
extern const struct dlrt_coord_part dlrt_coord_dispatch_part;
extern const struct dlrt_coord_part dlrt_coord_results_part;

/* ---- what the concerns give each other (and coord_run.c) ----------------------------- */

/* coord_timeline.c */
bool dlrt_coord_job_runnable(struct coord *c, uint32_t ji);
void dlrt_coord_retarget(struct coord *c);
void dlrt_coord_regime_change(struct coord *c);
void dlrt_coord_tl_flush(struct coord *c, FILE **fp);
void dlrt_coord_tl_row(struct coord *c, uint32_t ji, int64_t t);
void dlrt_coord_event(struct coord *c, uint32_t job, const char *what);
void dlrt_coord_accrue(struct coord *c);
void dlrt_coord_bucket_add(struct coord *c, struct jrt *r, uint32_t q, double occ,
			   bool cost);
int64_t dlrt_coord_tick(struct dlrt_evloop *loop, void *arg);

/* coord_replication.c */
struct dlrt_buf *dlrt_coord_reply_buf(struct coord *c, struct dlrt_conn *conn);
void dlrt_coord_put_ack(struct coord *c, struct dlrt_conn *conn, uint32_t job, uint64_t task);
bool dlrt_coord_fence_check(struct coord *c);
void dlrt_coord_sb_drain(struct coord *c);
int64_t dlrt_coord_ha_tick(struct dlrt_evloop *loop, void *arg);
void dlrt_coord_break(struct coord *c, const char *msg);
int dlrt_coord_commit(struct coord *c, struct dlrt_infer_change *ch);
int dlrt_coord_write_batch(struct coord *c);
void dlrt_coord_release_held(struct coord *c);
int dlrt_coord_standby_attach(struct coord *c, struct dlrt_conn *conn,
			      const struct dlrt_ip_hello *h);

/* coord_jobs.c */
int dlrt_coord_grow_jobs(struct coord *c);
void dlrt_coord_fill_job_info(struct coord *c, uint32_t ji, struct dlrt_ip_job_info *o);
void dlrt_coord_end_job(struct coord *c, uint32_t ji, uint8_t state, const char *error);
int dlrt_coord_job_open(struct coord *c, uint32_t ji, bool open_csv, bool rebuild);
int dlrt_coord_resume_jobs(struct coord *c);
void dlrt_coord_fail_unstorable(struct coord *c);

/* coord_results.c */
void dlrt_coord_csv_fail(struct coord *c, uint32_t ji, const char *what, int e);
void dlrt_coord_job_complete(struct coord *c, uint32_t ji);
int dlrt_coord_csv_rows(struct coord *c, uint32_t ji, const struct dlrt_infer_change *ch);
void dlrt_coord_store_answers(struct coord *c);
void dlrt_coord_answers_written(struct coord *c, bool written);

/* coord_dispatch.c */
void dlrt_coord_requeue(struct coord *c, uint32_t ji, uint64_t task);
bool dlrt_coord_wants_tasks(const struct coord *c, const struct wk *w);
void dlrt_coord_fill_worker(struct coord *c, struct wk *w);

/* coord_liveness.c */
int64_t dlrt_coord_heartbeat_check(struct dlrt_evloop *loop, void *arg);

#endif
