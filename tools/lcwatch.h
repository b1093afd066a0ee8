/* lcwatch.h - dlrt-lifecycle, the per-node watcher of a dlrt step (docs/checkpoint.md):
 * what its two jobs share. One process per node does both (started by
 * spank/lifecycle.c; tools/dlrt_lifecycle_main.c runs the loop): one fork,
 * one lifetime pipe and one view of the node's task page per node, instead of
 * two programs that would each cost the step's start a process. The jobs:
 *  - the warning and the requeue (lcwarn.h): --dl-signal, --dl-requeue;
 *  - the hang watch (lchang.h): --dl-hang-timeout.
 */
#ifndef DLRT_LCWATCH_H
#define DLRT_LCWATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "jobpolicy/lifecycle.h"

#define DLRT_LCW_PROG "dlrt-lifecycle"

struct dlrt_lcw {
	uint32_t job, step, attempt;
	uint32_t record_job;     /* the record's job: a heterogeneous step's leader; 0: job */
	const char *node;        /* this node's name, for the record and the lines */
	const char *record_base; /* the job's record is <base>/<record job>/dlrt-retries.log */
	bool verbose;
	struct dlrt_lc_page *page; /* the node's tasks (NULL in the batch step) */
	int life_fd;               /* end of file: the step ended */
};

/* The tasks on the page, at most DLRT_LC_MAX_TASKS; 0 without a page. */
uint32_t dlrt_lcw_ntasks(const struct dlrt_lcw *w);

/* One line in the job's record (the --dl-retries record, read back by the
 * batch step's requeue decision); the folder is created and checked as the
 * user (common/privdir.h). Nothing when there is no base; a line on stderr
 * when it cannot be written. */
void dlrt_lcw_record(const struct dlrt_lcw *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
