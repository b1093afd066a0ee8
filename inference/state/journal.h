/* journal.h - the coordinator's append-only journal of state changes.
 *
 * File DIR/journal: an 8-byte magic "DLRTJNL1", then one record per state
 * change (state.h) in the order they were applied:
 *
 *   u32 length    of the frame that follows (little-endian)
 *   u32 crc32c    of that frame (Castagnoli, as iSCSI/ext4 use)
 *   frame         one whole DLRT_IP_CHANGE protocol frame
 *
 * The parser trusts nothing: a record that is short (a torn write), whose
 * checksum or length is wrong, that is not a CHANGE frame, or that the state
 * refuses (out of sequence, a task answered twice) ends the good part of the
 * file; loading reports and cuts everything from there on, so a corrupt tail
 * is never replayed.
 *
 * fsync policy (docs/inference.md): every record is written (write(2)) before
 * the change is acknowledged to anyone, so a killed coordinator process loses
 * nothing; the coordinator writes the records of one batch together, in
 * one write (dlrt_journal_write); fdatasync runs at once for job submissions and job ends, and for
 * answers at most every DLRT_JOURNAL_SYNC_MS (group commit), because an fsync
 * per task on a shared filesystem would cap the dispatch rate at the disk's
 * sync rate. Only a crash of the node holding the file's cache inside that
 * window loses answers, and lost answers are recomputed, never duplicated:
 * results files are rebuilt from the journal on restart.
 */
#ifndef DLRT_INFER_JOURNAL_H
#define DLRT_INFER_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/buf.h"
#include "common/dlrt_err.h"
#include "state.h"

#define DLRT_JOURNAL_MAGIC "DLRTJNL1"
#define DLRT_JOURNAL_MAGIC_LEN 8
#define DLRT_JOURNAL_REC_HDR 8
#define DLRT_JOURNAL_SYNC_MS 100

uint32_t dlrt_crc32c(uint32_t crc, const void *p, size_t n);

/* What parsing a journal found. */
struct dlrt_journal_scan {
	size_t good;         /* bytes of the file that are sound (magic + whole records) */
	uint64_t records;    /* sound records */
	bool torn;           /* something after `good` was refused */
	char why[256];       /* why, when torn */
};

/* Called for each sound record's frame (whole CHANGE frame, header included);
 * returning -1 (with err) refuses the record: the good part ends before it. */
typedef int (*dlrt_journal_rec_fn)(void *arg, const uint8_t *frame, size_t n,
				   struct dlrt_err *err);

/* Parses a journal image held in memory. An empty image is a fresh journal;
 * one without the magic is refused entirely (-1 with err: not a journal). */
int dlrt_journal_parse(const uint8_t *p, size_t n, dlrt_journal_rec_fn fn, void *arg,
		       struct dlrt_journal_scan *scan, struct dlrt_err *err);

/* Appends one record (frame bytes) to a buffer: the same bytes go to the file. */
int dlrt_journal_put(struct dlrt_buf *b, const uint8_t *frame, size_t n);

/* Loads DIR/journal into a fresh state `st` and appends every sound record's
 * frame to `log` (the coordinator's in-memory copy). A torn tail is cut from
 * the file (truncated) and described in scan->why. Returns 0 (also when there
 * is no journal: scan->records == 0), -1 with err. */
int dlrt_journal_load(const char *dir, struct dlrt_infer_state *st, struct dlrt_buf *log,
		      struct dlrt_journal_scan *scan, struct dlrt_err *err);

/* Applies every frame of a log (as _load fills it) to a state, in order. */
int dlrt_journal_apply_log(const uint8_t *log, size_t n, struct dlrt_infer_state *st,
			   struct dlrt_err *err);

/* Disk space the journal holds ahead of its end (fallocate, KEEP_SIZE): when
 * the pool's filesystem fills up, a results file runs out first and its job
 * fails, while the journal can still record that failure and keep serving
 * the pool's other jobs. Refilled when less than half is left. */
#define DLRT_JOURNAL_RESERVE ((off_t)1 << 20)

struct dlrt_journal {
	int fd;
	bool dirty;          /* written since the last fdatasync */
	int64_t synced_ms;
	uint64_t records, syncs;
	uint64_t writes;     /* write(2)s of batches */
	off_t size;          /* bytes of sound records (what a failed append is cut back to) */
	off_t reserved;      /* allocated up to here */
	off_t reserve_next;  /* the size at which a failed refill is tried again */
	int reserve_errno;   /* why the last refill failed (0 = it did not) */
	char path[4200];
	struct dlrt_buf batch; /* the records of the batch being written */
};

/* Writes DIR/journal afresh from `log` (a temporary file, fsync'd, renamed
 * over the old one, so a coordinator that was fenced out keeps writing into
 * an unlinked file) and opens it for appending. */
int dlrt_journal_open(struct dlrt_journal *j, const char *dir, const uint8_t *log, size_t n,
		      struct dlrt_err *err);
/* Appends a batch of CHANGE frames (n bytes of whole frames, one after the
 * other) as records, in one write(2); sync forces fdatasync now. On a failed
 * write the file is cut back to its last sound record (a restart never
 * replays a change that was not acknowledged) and err names the file, the
 * cause and the fix; the caller must not acknowledge any change of the
 * batch. Nothing to do without a journal (fd < 0) or without frames. */
int dlrt_journal_write(struct dlrt_journal *j, const uint8_t *frames, size_t n, bool sync,
		       struct dlrt_err *err);
/* One frame: dlrt_journal_write of a batch of one. */
int dlrt_journal_append(struct dlrt_journal *j, const uint8_t *frame, size_t n, bool sync,
			struct dlrt_err *err);
/* fdatasync if anything was written since the last one. A failure means
 * records written since the last sync may be lost: the caller stops. */
int dlrt_journal_sync(struct dlrt_journal *j, struct dlrt_err *err);
void dlrt_journal_close(struct dlrt_journal *j);

#endif
