/* tsvlog.h - the pool's timeline files (DIR/timeline.tsv, DIR/events.tsv)
 * and their time origin, which outlives any one coordinator.
 *
 * Both files are tab-separated, one header line, then rows whose first column
 * is t, seconds of *pool time*. events.tsv holds a `clock:W` event, W = wall
 * time minus pool time, so tools can relate t to other clocks.
 *
 * A coordinator that starts a new pool (`pool start`, no journal) truncates
 * both files: t starts at 0. One that continues a pool (a standby taking
 * over, or `pool restart` replaying the journal) appends to them and keeps
 * the pool's time: t = wall time - W of the first clock line, but never less
 * than the largest t either file already holds (another node's clock may be
 * a little behind), so the t column never goes backwards across coordinators.
 */
#ifndef DLRT_INFER_TSVLOG_H
#define DLRT_INFER_TSVLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/dlrt_err.h"

/* What an existing file says about the pool's time. */
struct dlrt_tsv_scan {
	bool has_origin;   /* a clock: event was seen */
	double origin;     /* W of the first one */
	bool has_t;        /* at least one row */
	double last_t;     /* the largest t of the rows looked at */
	bool torn;         /* the text does not end with a newline */
};

/* Parses a file's text (or a slice of it; `partial_head` skips everything up
 * to the first newline, as for a slice taken from the middle) into *s,
 * merging with what *s already holds: the first origin wins, the largest t
 * wins. A last line without its newline is not trusted. Pure: fuzzed. */
void dlrt_tsv_scan_text(const char *p, size_t n, bool partial_head, struct dlrt_tsv_scan *s);

/* Opens DIR/NAME for appending: O_NOFOLLOW, mode 0600; an existing file must
 * be a regular file of this user, not readable by others. fresh truncates it.
 * The header is written when the file is empty; a torn last line is ended
 * first. A kept file's head and tail are scanned into *s (merged as above).
 * NULL with err on failure. */
FILE *dlrt_tsv_open(const char *dir, const char *name, const char *header, bool fresh,
		    struct dlrt_tsv_scan *s, struct dlrt_err *err);

/* The pool time a continuing coordinator starts at, given what the files
 * said and the wall time now. 0 when they hold nothing. */
double dlrt_tsv_resume_t(const struct dlrt_tsv_scan *s, double wall_now);

#endif
