/* lchang.h - dlrt-lifecycle's second job: the hang watch (--dl-hang-timeout;
 * docs/checkpoint.md). It follows its node's tasks' progress (bytes they and
 * their children wrote: lcproc.h; a touch of DLRT_HEARTBEAT), shares it with
 * the other nodes through the job's checkpoint folder (lcprogress.h), and
 * ends a step that made none for that long, with each task's stacks and the
 * line that names the tasks that are not where the others are
 * (jobpolicy/hangwhere.h).
 */
#ifndef DLRT_LCHANG_H
#define DLRT_LCHANG_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "lcwatch.h"

struct dlrt_lchang {
	uint32_t timeout;         /* --hang-timeout; 0: no hang watch */
	const char *progress_dir; /* the job's checkpoint folder: heartbeats, nodes' progress */
	uint32_t step_tasks;      /* the step's tasks on all nodes: the positions to wait for */
	uint64_t io[DLRT_LC_MAX_TASKS]; /* each task's (and its children's) bytes written */
	time_t node_last, written_last; /* this node's last progress; what its file says */
	bool hung;
};

/* One look at the step's progress; ends the step when it hung. The seconds
 * until the next look (a fifth of the timeout, at least 2), or -1 when there
 * is nothing to watch. */
int dlrt_lchang_tick(struct dlrt_lchang *h, const struct dlrt_lcw *w);

#endif
