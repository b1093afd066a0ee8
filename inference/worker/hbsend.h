/* hbsend.h - a worker's heartbeat: a thread that sends HEARTBEAT on the
 * coordinator connection every interval, also while the worker computes a
 * long task. Writes to the socket from the worker's main thread must hold
 * `wlock` too, so frames never interleave. A stopped process (SIGSTOP) or a
 * cut-off node sends nothing, which is how the coordinator notices it.
 */
#ifndef DLRT_INFER_HBSEND_H
#define DLRT_INFER_HBSEND_H

#include <pthread.h>

struct dlrt_hbsend;

/* interval_ms 0: no thread (*out = NULL), which _stop accepts. */
int dlrt_hbsend_start(struct dlrt_hbsend **out, int fd, int interval_ms, pthread_mutex_t *wlock);
void dlrt_hbsend_stop(struct dlrt_hbsend *h);

#endif
