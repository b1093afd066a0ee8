/* standby.h - the hot standby coordinator of a dlrt-infer pool.
 *
 * A standby is a small process (`dlrt-infer standby`) that a worker starts
 * next to itself when the coordinator asks it to (PROMOTE; element 1 is
 * preferred, and a node other than the coordinator's). It connects as role
 * STANDBY, receives the whole change log, then every change as the
 * coordinator makes it, and answers SEQACK for whatever it read (one for a
 * group of changes). Nobody hears of a change (the worker's ACK, the client's
 * reply) before a SEQACK covers it; the coordinator holds those replies
 * meanwhile and goes on serving (group commit, coord_replication.c), so the standby
 * always holds everything that was acknowledged.
 *
 * The coordinator also sends SYNC every DLRT_STANDBY_BEAT_MS. When the
 * connection drops, or nothing arrives for the takeover bound
 * (DLRT_INFER_TAKEOVER_MS, default 1000 ms), the standby checks the access
 * record: gone means the pool stopped (it exits); a newer epoch means
 * someone else took over (it exits); otherwise it returns "take over" with
 * its log, and its caller (dlrt-infer standby) runs the coordinator from that
 * log (inference/coord/coord.h), which writes the access record with a higher epoch.
 *
 * Fencing: a coordinator that loses its standby, or whose standby does not
 * answer within the bound, reads the access record and the epoch claims
 * (claim.h); if its epoch is no longer the newest, it stops at once without
 * acknowledging anything more. A standby taking over claims its epoch first
 * and gives up if a worker (which takes over when both are lost) won it. Workers
 * and clients only talk to the record's epoch; the journal and results files
 * are replaced by rename on takeover, so an old coordinator still writing
 * writes into unlinked files.
 */
#ifndef DLRT_INFER_STANDBY_H
#define DLRT_INFER_STANDBY_H

#include <stdint.h>

#include "common/buf.h"
#include "common/dlrt_err.h"
#include "services/tcpserver.h"

#define DLRT_STANDBY_BEAT_MS 100
#define DLRT_STANDBY_TAKEOVER_MS 1000

/* The takeover bound: $DLRT_INFER_TAKEOVER_MS (100..60000) or the default. */
int dlrt_standby_timeout_ms(void);

/* Coordinator side, before the pool stops: sends what is queued in conn->out
 * and waits (blocking, up to timeout_ms) until the standby acknowledges
 * change `seq`. *acked is raised to every SEQACK seen. 0, or -1 with err (the
 * standby is lost). */
int dlrt_standby_push(struct dlrt_conn *conn, uint64_t seq, int timeout_ms, uint64_t *acked,
		      struct dlrt_err *err);

struct dlrt_standby_opts {
	const char *pool;
	const char *name;
};

/* How a standby's run ended, short of an error (-1). */
enum dlrt_standby_end {
	DLRT_STANDBY_DONE = 0,     /* not needed, the pool stopped, or another took over */
	DLRT_STANDBY_TAKEOVER = 1, /* the coordinator is gone: run one from *log */
};

/* Runs a standby until the pool stops, another standby takes over, or the
 * coordinator is gone. DLRT_STANDBY_TAKEOVER: *log holds every change (CHANGE
 * frames) for dlrt_coord_opts.log; the caller frees it with dlrt_buf_free()
 * once the coordinator ended. Otherwise *log is freed already. */
int dlrt_standby_run(const struct dlrt_standby_opts *o, struct dlrt_buf *log,
		     struct dlrt_err *err);

#endif
